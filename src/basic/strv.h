/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"
#include "macro.h"

size_t strv_length(char *const *l);
bool strv_contains(const char *const *l, const char *s);
/* Takes ownership of value on success. */
int strv_push(char ***l, char *value);
/* strv_push() that frees value when it cannot take it. */
int strv_consume(char ***l, char *value);
int strv_extend(char ***l, const char *value);
/* Appends a formatted string: never a truncated one. */
int strv_extendf(char ***l, const char *fmt, ...) _printf_(2, 3);
/* Appends copies of every string of other. */
int strv_extend_strv(char ***l, char *const *other);
char **strv_copy(char *const *l);
/* The strings joined with sep between them; "" for an empty list. */
char *strv_join(char *const *l, const char *sep);

#define STRV_FOREACH(s, l) for (char **s = (l); s && *s; s++)

/* Sorts l in place by strcmp(); NULL is fine. */
void strv_sort(char **l);
