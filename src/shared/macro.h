/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define _public_ __attribute__((__visibility__("default")))
#define _pure_ __attribute__((__pure__))
#define _const_ __attribute__((__const__))
#define _unused_ __attribute__((__unused__))
#define _printf_(a, b) __attribute__((__format__(printf, a, b)))
#define _sentinel_ __attribute__((__sentinel__))
#define _warn_unused_result_ __attribute__((__warn_unused_result__))
#define _noreturn_ __attribute__((__noreturn__))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define STR_IN_SET(s, ...) strv_contains((const char *const[]) { __VA_ARGS__, NULL }, (s))

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

#define streq(a, b) (strcmp((a), (b)) == 0)

static inline const char *strempty(const char *s) {
        return s ?: "";
}

static inline const char *strna(const char *s) {
        return s ?: "n/a";
}

static inline bool isempty(const char *s) {
        return !s || !*s;
}

/* Returns the part of s after prefix, or NULL when s does not start with it. */
static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

bool strv_contains(const char *const *l, const char *s) _pure_;
