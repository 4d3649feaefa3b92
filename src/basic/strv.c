/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"
#include "strv.h"

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

bool strv_contains(const char *const *l, const char *s) {
        if (!l || !s)
                return false;
        for (; *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

int strv_push(char ***l, char *value) {
        size_t n = strv_length(*l);
        char **c;

        if (!value)
                return 0;
        c = reallocarray(*l, n + 2, sizeof(char *));
        if (!c)
                return -ENOMEM;
        c[n] = value;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

/* strv_push() that frees value when it cannot take it. */
int strv_consume(char ***l, char *value) {
        int r = strv_push(l, value);

        if (r < 0)
                free(value);
        return r;
}

int strv_extend(char ***l, const char *value) {
        char *v = strdup(value);

        if (!v)
                return -ENOMEM;
        return strv_consume(l, v);
}

int strv_extendf(char ***l, const char *fmt, ...) {
        char *v;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&v, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return strv_consume(l, v);
}

int strv_extend_strv(char ***l, char *const *other) {
        for (char *const *s = other; s && *s; s++) {
                int r = strv_extend(l, *s);
                if (r < 0)
                        return r;
        }
        return 0;
}

char **strv_copy(char *const *l) {
        _cleanup_strv_free_ char **c = NULL;
        size_t n = strv_length(l);

        c = calloc(n + 1, sizeof(char *));
        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return NULL;
        }
        return TAKE_PTR(c);
}

char *strv_join(char *const *l, const char *sep) {
        size_t n = 1, k = strlen(sep);
        char *r, *p;

        for (char *const *s = l; s && *s; s++)
                n += strlen(*s) + k;
        r = malloc(n);
        if (!r)
                return NULL;
        p = r;
        for (char *const *s = l; s && *s; s++) {
                if (s != l) {
                        memcpy(p, sep, k);
                        p += k;
                }
                p = stpcpy(p, *s);
        }
        *p = 0;
        return r;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

void strv_sort(char **l) {
        if (l)
                qsort(l, strv_length(l), sizeof(char *), cmp_str);
}
