/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"
#include "path-util.h"

bool path_is_absolute(const char *p) {
        return p && p[0] == '/';
}

bool path_has_dotdot(const char *p) {
        const char *s = p;

        while (s && *s) {
                const char *e = strchrnul(s, '/');
                if (e - s == 2 && s[0] == '.' && s[1] == '.')
                        return true;
                s = *e ? e + 1 : e;
        }
        return false;
}

int path_normalize(const char *p, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0;

        if (!path_is_absolute(p))
                return -EINVAL;
        if (strlen(p) > LAZARET_PATH_MAX)
                return -ENAMETOOLONG;
        if (path_has_dotdot(p))
                return -EINVAL;

        out = malloc(strlen(p) + 2);
        if (!out)
                return -ENOMEM;

        for (const char *s = p; *s;) {
                const char *e;

                while (*s == '/')
                        s++;
                if (!*s)
                        break;
                e = strchrnul(s, '/');
                if (!(e - s == 1 && s[0] == '.')) {
                        out[n++] = '/';
                        memcpy(out + n, s, e - s);
                        n += e - s;
                }
                s = e;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = 0;

        *ret = TAKE_PTR(out);
        return 0;
}

bool path_is_at_or_below(const char *path, const char *dir) {
        size_t l;

        if (streq(dir, "/"))
                return path_is_absolute(path);
        l = strlen(dir);
        return strncmp(path, dir, l) == 0 && (path[l] == 0 || path[l] == '/');
}

char *path_join(const char *a, const char *b) {
        char *j;
        size_t la = strlen(a);

        while (la > 0 && a[la - 1] == '/')
                la--;
        while (*b == '/')
                b++;
        if (asprintf(&j, "%.*s/%s", (int) la, a, b) < 0)
                return NULL;
        return j;
}

int path_canonicalize(const char *p, char **ret) {
        _cleanup_free_ char *norm = NULL, *prefix = NULL, *resolved = NULL;
        char *cut;

        int r;

        r = path_normalize(p, &norm);
        if (r < 0)
                return r;

        prefix = strdup(norm);
        if (!prefix)
                return -ENOMEM;

        /* Walk up until some prefix exists; realpath() only that part. */
        for (;;) {
                resolved = realpath(prefix, NULL);
                if (resolved)
                        break;
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                cut = strrchr(prefix, '/');
                if (!cut || cut == prefix) {
                        /* Even "/" did not resolve; should not happen. */
                        if (streq(prefix, "/"))
                                return -ENOENT;
                        prefix[1] = 0;
                } else
                        *cut = 0;
        }

        if (streq(prefix, norm)) {
                *ret = TAKE_PTR(resolved);
                return 0;
        }

        /* norm continues after prefix with a '/' (prefix "/" is special). */
        _cleanup_free_ char *joined = path_join(resolved, norm + (streq(prefix, "/") ? 0 : strlen(prefix)));
        if (!joined)
                return -ENOMEM;
        if (strlen(joined) > LAZARET_PATH_MAX)
                return -ENAMETOOLONG;
        *ret = TAKE_PTR(joined);
        return 0;
}
