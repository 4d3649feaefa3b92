/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/*
 * Sets *ret_error to a formatted message, unless ret_error is NULL or
 * already holds one (the first error is the one worth reading). Returns r,
 * so that callers can write: return errorf(ret_error, -EINVAL, "...").
 */
int errorf(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);

/*
 * s with every control byte (below 0x20, and 0x7f) written as \xNN, so that
 * text from elsewhere (a workspace path, a message a coordinator relays)
 * cannot start a line of its own on a terminal. NULL on OOM.
 */
char *escape_control(const char *s);

/* Writes all n bytes, retrying on EINTR and short writes. */
int write_all(int fd, const void *buf, size_t n);

/* CLOCK_MONOTONIC in milliseconds, for deadlines of poll() loops. */
uint64_t now_msec(void);

/* CLOCK_MONOTONIC in microseconds, for timing steps. */
uint64_t now_usec(void);
