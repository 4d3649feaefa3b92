/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: ignore rule files (git-ignore.c); any .gitignore of the
 * workspace is the sandbox's. The input is a rule file; accepted means it
 * parsed. Its lines are also the paths it is matched against, and every
 * single line without a class or trailing blanks is checked against a
 * plain reference matcher: git's glob rules read straight from
 * gitignore(5) and wildmatch, memoised so that it stays polynomial.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "git-ignore.h"
#include "macro.h"

bool fuzz_accepted = false;

#define REF_MAX 64

/* ------------------------------------------------------- reference matcher */

typedef struct Ref {
        const char *p, *t;
        size_t plen, tlen;
        size_t start;   /* where the glob part of p starts ("**" counts as first there) */
        int8_t memo[REF_MAX + 1][2 * REF_MAX + 2];
} Ref;

static bool ref_match(Ref *r, size_t pi, size_t ti) {
        int8_t *m = &r->memo[pi][ti];
        bool res = false;

        if (*m)
                return *m > 0;
        if (pi == r->plen)
                res = ti == r->tlen;
        else if (r->p[pi] == '*') {
                size_t pj = pi;
                while (pj < r->plen && r->p[pj] == '*')
                        pj++;
                bool special = pj - pi >= 2 && (pi == r->start || r->p[pi - 1] == '/') &&
                               (pj == r->plen || r->p[pj] == '/' ||
                                (r->p[pj] == '\\' && pj + 1 < r->plen && r->p[pj + 1] == '/'));
                if (special && pj < r->plen && r->p[pj] == '/' && ref_match(r, pj + 1, ti))
                        res = true;
                for (size_t k = ti; !res && k <= r->tlen; k++) {
                        if (k > ti && !special && r->t[k - 1] == '/')
                                break;
                        res = ref_match(r, pj, k);
                }
        } else if (ti < r->tlen) {
                if (r->p[pi] == '\\')
                        res = pi + 1 < r->plen && r->p[pi + 1] == r->t[ti] && ref_match(r, pi + 2, ti + 1);
                else if (r->p[pi] == '?')
                        res = r->t[ti] != '/' && ref_match(r, pi + 1, ti + 1);
                else
                        res = r->p[pi] == r->t[ti] && ref_match(r, pi + 1, ti + 1);
        }
        *m = res ? 1 : -1;
        return res;
}

static bool ref_glob(const char *p, size_t plen, size_t start, const char *t, size_t tlen) {
        static Ref r;
        memset(r.memo, 0, sizeof(r.memo));
        r = (Ref) { .p = p, .t = t, .plen = plen, .tlen = tlen, .start = start };
        return ref_match(&r, 0, 0);
}

/* One rule line (no class, no trailing blanks) against a path, as git's dir.c decides. */
static int ref_verdict(const char *line, size_t n, const char *path, bool is_dir) {
        bool neg = false, dir_only = false;
        const char *p = line;
        size_t len = n, plen = strlen(path);

        if (n == 0 || line[0] == '#')
                return IGNORE_NO_MATCH;
        if (p[0] == '!') {
                neg = true;
                p++;
                len--;
        }
        if (len > 0 && p[len - 1] == '/') {
                dir_only = true;
                len--;
        }
        if (dir_only && !is_dir)
                return IGNORE_NO_MATCH;
        bool matched;
        if (!memchr(p, '/', len)) {
                const char *base = strrchr(path, '/');
                base = base ? base + 1 : path;
                matched = len > 0 && ref_glob(p, len, 0, base, strlen(base));
        } else {
                if (p[0] == '/') {
                        p++;
                        len--;
                }
                /* git compares the literal head itself; the glob starts after it. */
                size_t head = 0;
                while (head < len && !strchr("*?[\\", p[head]))
                        head++;
                matched = plen >= head && memcmp(p, path, head) == 0 &&
                          ref_glob(p, len, head, path, plen);
        }
        if (!matched)
                return IGNORE_NO_MATCH;
        return neg ? IGNORE_INCLUDED : IGNORE_EXCLUDED;
}

/* --------------------------------------------------------------- the target */

static bool path_ok(const char *p) {
        size_t n = strlen(p);
        if (n == 0 || n > 2 * REF_MAX || p[0] == '/' || p[n - 1] == '/' || strstr(p, "//"))
                return false;
        for (const char *s = p; s; s = strchr(s, '/')) {
                if (*s == '/')
                        s++;
                if ((s[0] == '.' && (s[1] == '/' || !s[1])) || (s[0] == '.' && s[1] == '.' && (s[2] == '/' || !s[2])))
                        return false;
        }
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const fixed[] = { "a", "a/b", "a/b/c", "x.o", "d/x.o", "node_modules", "a b", "#a" };
        _cleanup_ignore_list_ IgnoreList *l = NULL;
        _cleanup_free_ char *err = NULL;
        char *lines[32];
        size_t n_lines = 0;
        int r;

        if (size > IGNORE_FILE_MAX + 16)
                return 0;
        r = ignore_list_parse((const char *) data, size, "", "fuzz", &l, &err);
        if (r < 0) {
                if ((r != -E2BIG && r != -EFBIG) || !err || l)
                        abort();
                return 0;
        }
        if (err || !l || ignore_list_size(l) > IGNORE_PATTERNS_MAX)
                abort();
        fuzz_accepted = true;

        /* The input's first lines, NULs and all cut at the first NUL. */
        for (size_t i = 0; i < size && n_lines < ELEMENTSOF(lines);) {
                const uint8_t *nl = memchr(data + i, '\n', size - i);
                size_t n = nl ? (size_t) (nl - data) - i : size - i;
                lines[n_lines] = strndup((const char *) data + i, n);
                if (!lines[n_lines])
                        break;
                n_lines++;
                i += n + 1;
        }

        const IgnoreList *lists[] = { l };
        for (size_t k = 0; k < n_lines + ELEMENTSOF(fixed); k++) {
                const char *path = k < n_lines ? lines[k] : fixed[k - n_lines];
                if (!path_ok(path))
                        continue;
                for (int d = 0; d < 2; d++) {
                        IgnoreMatch m;
                        r = ignore_lists_match(lists, 1, path, d, &m);
                        if (r < 0 || r > IGNORE_INCLUDED)
                                abort();
                        if (r != IGNORE_NO_MATCH && (m.list != l || m.line == 0 || !m.pattern))
                                abort();
                }
        }

        /* Each simple line alone: the library and the reference agree. */
        for (size_t j = 0; j < n_lines; j++) {
                const char *line = lines[j];
                size_t n = strlen(line);
                _cleanup_ignore_list_ IgnoreList *one = NULL;
                if (n == 0 || n > REF_MAX || strchr(line, '[') || strchr(line, '\r') || line[n - 1] == ' ' ||
                    line[n - 1] == '\\' || (n >= 3 && memcmp(line, "\xef\xbb\xbf", 3) == 0))
                        continue;
                if (ignore_list_parse(line, n, "", "one", &one, NULL) < 0)
                        abort();
                const IgnoreList *ones[] = { one };
                for (size_t k = 0; k < n_lines + ELEMENTSOF(fixed); k++) {
                        const char *path = k < n_lines ? lines[k] : fixed[k - n_lines];
                        if (!path_ok(path))
                                continue;
                        for (int d = 0; d < 2; d++)
                                if (ignore_lists_match(ones, 1, path, d, NULL) != ref_verdict(line, n, path, d)) {
                                        if (getenv("FUZZ_DEBUG"))
                                                fprintf(stderr, "'%s' vs '%s' (dir %d): %d, reference %d\n", line,
                                                        path, d, ignore_lists_match(ones, 1, path, d, NULL),
                                                        ref_verdict(line, n, path, d));
                                        abort();
                                }
                }
        }
        for (size_t j = 0; j < n_lines; j++)
                free(lines[j]);
        return 0;
}
