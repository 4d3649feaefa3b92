/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define _pure_ __attribute__((__pure__))
#define _printf_(a, b) __attribute__((__format__(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

#define streq(a, b) (strcmp((a), (b)) == 0)

/* A switch over an enum that covers every value: reaching the default is a bug. */
#define assert_not_reached() abort()

/* free(), for p = mfree(p). */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

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
