/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"
#include "tokens.h"
#include "util.h"

static const struct {
        const char *name;
        TokenFlags flag;
        size_t offset;
} token_table[] = {
        { "profile_name",  TOKEN_PROFILE_NAME,  offsetof(TokenContext, profile_name)  },
        { "profile_dir",   TOKEN_PROFILE_DIR,   offsetof(TokenContext, profile_dir)   },
        { "domain_hash",   TOKEN_DOMAIN_HASH,   offsetof(TokenContext, domain_hash)   },
        { "domain_dir",    TOKEN_DOMAIN_DIR,    offsetof(TokenContext, domain_dir)    },
        { "workspace_dir", TOKEN_WORKSPACE_DIR, offsetof(TokenContext, workspace_dir) },
};


/* Appends n bytes to a growing buffer. */
static int buf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
        if (*len + n + 1 > *cap) {
                size_t c = (*len + n + 1) * 2;
                char *b = realloc(*buf, c);
                if (!b)
                        return -ENOMEM;
                *buf = b;
                *cap = c;
        }
        memcpy(*buf + *len, s, n);
        *len += n;
        (*buf)[*len] = 0;
        return 0;
}

int tokens_expand(const char *in, TokenFlags flags, const TokenContext *ctx, char **ret, char **ret_error) {
        _cleanup_free_ char *out = NULL;
        size_t len = 0, cap = 0;
        const char *p = in;
        int r;

        if (ret_error)
                *ret_error = NULL;

        r = buf_append(&out, &len, &cap, "", 0);
        if (r < 0)
                return r;

        if (p[0] == '~') {
                if (p[1] != 0 && p[1] != '/')
                        return errorf(ret_error, -EINVAL, "\"~user\" is not supported; only a leading \"~\" or \"~/\" is expanded");
                if (!(flags & TOKEN_TILDE))
                        return errorf(ret_error, -EINVAL, "\"~\" is not expanded here");
                if (ctx) {
                        if (!ctx->home)
                                return errorf(ret_error, -ENXIO, "\"~\" used but the home directory is unknown");
                        r = buf_append(&out, &len, &cap, ctx->home, strlen(ctx->home));
                        if (r < 0)
                                return r;
                }
                p++;
        }

        while (*p) {
                const char *open = strpbrk(p, "{}");

                if (!open) {
                        r = buf_append(&out, &len, &cap, p, strlen(p));
                        if (r < 0)
                                return r;
                        break;
                }
                r = buf_append(&out, &len, &cap, p, open - p);
                if (r < 0)
                        return r;

                if (*open == '}')
                        return errorf(ret_error, -EINVAL, "stray \"}\" at offset %zu", (size_t) (open - in));

                const char *close = strchr(open + 1, '}');
                const char *nested = strchr(open + 1, '{');
                if (!close || (nested && nested < close))
                        return errorf(ret_error, -EINVAL, "unterminated \"{\" at offset %zu", (size_t) (open - in));

                size_t n = close - open - 1;
                size_t i;
                for (i = 0; i < ELEMENTSOF(token_table); i++)
                        if (strlen(token_table[i].name) == n && strncmp(token_table[i].name, open + 1, n) == 0)
                                break;
                if (i >= ELEMENTSOF(token_table))
                        return errorf(ret_error, -EINVAL,
                                    "unknown token \"{%.*s}\" (known: {profile_name}, {profile_dir}, {domain_hash}, {domain_dir}, {workspace_dir})",
                                    (int) (n > 64 ? 64 : n), open + 1);
                if (!(flags & token_table[i].flag))
                        return errorf(ret_error, -EINVAL, "token \"{%s}\" is not allowed here", token_table[i].name);

                if (ctx) {
                        const char *v = *(const char *const *) ((const char *) ctx + token_table[i].offset);
                        if (!v)
                                return errorf(ret_error, -ENXIO, "token \"{%s}\" has no value here", token_table[i].name);
                        r = buf_append(&out, &len, &cap, v, strlen(v));
                        if (r < 0)
                                return r;
                }
                p = close + 1;
        }

        if (ret)
                *ret = TAKE_PTR(out);
        return 0;
}
