/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsmonitor-proto.h"

void fsmon_header_format(uint64_t instance, char buf[static FSMON_HEADER_SIZE]) {
        char text[FSMON_HEADER_SIZE + 1];
        int k = snprintf(text, sizeof(text), FSMON_MAGIC "%016" PRIx64, instance);

        memset(buf, '\n', FSMON_HEADER_SIZE);
        memcpy(buf, text, (size_t) k);
}

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

static int parse_hex16(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        for (size_t i = 0; i < 16; i++) {
                int d = hex_digit(s[i]);
                if (d < 0)
                        return -EINVAL;
                v = v << 4 | (uint64_t) d;
        }
        *ret = v;
        return 0;
}

int fsmon_header_parse(const char *buf, size_t len, uint64_t *ret_instance) {
        size_t m = strlen(FSMON_MAGIC);

        if (len < FSMON_HEADER_SIZE || memcmp(buf, FSMON_MAGIC, m) != 0 || buf[m + 16] != '\n' ||
            parse_hex16(buf + m, ret_instance) < 0)
                return -EBADMSG;
        return 0;
}

void fsmon_token_format(uint64_t instance, uint64_t offset, uint64_t unwatched_from, char *buf, size_t size) {
        snprintf(buf, size, "lazaret:%016" PRIx64 ":%" PRIu64 ":%" PRIu64, instance, offset, unwatched_from);
}

/* A decimal number up to the next ':' or the end; *p moves past it. */
static int parse_dec(const char **p, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        for (; *s >= '0' && *s <= '9'; s++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -EINVAL;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        *p = s;
        *ret = v;
        return 0;
}

int fsmon_token_parse(const char *token, uint64_t *ret_instance, uint64_t *ret_offset, uint64_t *ret_unwatched_from) {
        uint64_t instance, offset, from;
        const char *p;

        if (strncmp(token, "lazaret:", 8) != 0 || strlen(token) < 8 + 16 + 1 || parse_hex16(token + 8, &instance) < 0 ||
            token[8 + 16] != ':')
                return -EINVAL;
        p = token + 8 + 16 + 1;
        if (parse_dec(&p, &offset) < 0 || *p++ != ':' || parse_dec(&p, &from) < 0 || *p != 0)
                return -EINVAL;
        if (offset < FSMON_HEADER_SIZE || from < FSMON_HEADER_SIZE || from > offset)
                return -EINVAL;
        *ret_instance = instance;
        *ret_offset = offset;
        *ret_unwatched_from = from;
        return 0;
}

typedef struct Unwatched {
        const char *path;
        size_t len;
        uint64_t offset;
} Unwatched;

typedef struct Scanner {
        const char *prefix;
        size_t prefix_len;
        fsmon_emit_t emit;
        void *userdata;
        FsmonScan *s;
} Scanner;

/* One path of the answer: relative to the worktree, or the whole worktree (trivial), or nothing. */
static void answer(Scanner *sc, const char *p, size_t len, bool dir) {
        size_t pl = sc->prefix_len;

        if (sc->s->trivial)
                return;
        if (pl == 0) {
                if (len == 0) {
                        sc->s->trivial = dir;
                        return;
                }
                sc->emit(p, len, dir, sc->userdata);
                return;
        }
        if (len >= pl && memcmp(p, sc->prefix, pl) == 0) {
                sc->emit(p + pl, len - pl, dir, sc->userdata);
                return;
        }
        /* The worktree itself ("a/b" of "a/b/") or a directory above it: all of it. */
        if (len < pl && (len == 0 || sc->prefix[len] == '/') && memcmp(p, sc->prefix, len) == 0)
                sc->s->trivial = sc->s->trivial || dir;
}

int fsmon_scan(const char *data, size_t size, uint64_t base, uint64_t from, const char *prefix, fsmon_emit_t emit,
               void *userdata, FsmonScan *ret) {
        FsmonScan s = {};
        Scanner sc = { .prefix = prefix, .prefix_len = strlen(prefix), .emit = emit, .userdata = userdata, .s = &s };
        Unwatched *u = NULL;
        size_t n = 0, i = 0;

        if (base < FSMON_HEADER_SIZE || base > from || (sc.prefix_len > 0 && prefix[sc.prefix_len - 1] != '/'))
                return -EINVAL;
        while (i < size) {
                const char *rec = data + i, *nul = memchr(rec, 0, size - i);
                uint64_t at = base + i;
                size_t len;
                char t;

                if (!nul)
                        break;          /* not whole yet: the next answer reads it */
                i += (size_t) (nul - rec) + 1;
                if (nul == rec) {
                        s.trivial = true;       /* not a record: what else is wrong cannot be known */
                        continue;
                }
                t = rec[0];
                len = (size_t) (nul - rec) - 1;
                switch (t) {
                case 'D': {
                        bool known = false;

                        for (size_t k = 0; k < n && !known; k++)
                                known = u[k].len == len && memcmp(u[k].path, rec + 1, len) == 0;
                        if (known)
                                break;
                        if (!u && !(u = malloc(FSMON_UNWATCHED_MAX * sizeof(*u))))
                                return -ENOMEM;
                        if (n == FSMON_UNWATCHED_MAX) {
                                s.trivial = true;
                                break;
                        }
                        u[n++] = (Unwatched) { .path = rec + 1, .len = len, .offset = at };
                        break;
                }
                case 'W':
                        for (size_t k = 0; k < n; k++)
                                if (u[k].len == len && memcmp(u[k].path, rec + 1, len) == 0) {
                                        u[k] = u[--n];
                                        break;
                                }
                        __attribute__((fallthrough));
                case 'f':
                case 'd':
                        if (at >= from)
                                answer(&sc, rec + 1, len, t != 'f');
                        break;
                default:
                        s.trivial = true;
                }
        }
        s.end = base + i;
        s.unwatched_from = s.end;
        for (size_t k = 0; k < n; k++) {
                answer(&sc, u[k].path, u[k].len, true);
                if (u[k].offset < s.unwatched_from)
                        s.unwatched_from = u[k].offset;
        }
        s.n_unwatched = n;
        free(u);
        *ret = s;
        return 0;
}
