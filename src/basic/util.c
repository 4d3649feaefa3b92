/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

int errorf(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;

        if (!ret_error || *ret_error)
                return r;
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return r;
}

char *escape_control(const char *s) {
        size_t n = 0;
        char *r, *o;

        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                n += *c < 0x20 || *c == 0x7f ? 4 : 1;
        r = o = malloc(n + 1);
        if (!r)
                return NULL;
        for (const unsigned char *c = (const unsigned char *) s; *c; c++)
                if (*c < 0x20 || *c == 0x7f)
                        o += sprintf(o, "\\x%02x", *c);
                else
                        *o++ = (char) *c;
        *o = 0;
        return r;
}

int write_all(int fd, const void *buf, size_t n) {
        const char *p = buf;

        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

uint64_t now_msec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}
