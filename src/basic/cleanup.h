/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Ownership helpers. A variable declared with one of the _cleanup_*_ attributes
 * is released when it leaves scope; TAKE_PTR()/TAKE_FD() hand ownership on and
 * leave NULL/-EBADF behind, so the cleanup becomes a no-op. Every destructor
 * here accepts NULL (or a negative fd).
 */

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((__cleanup__(f)))

#define TAKE_GENERIC(var, type, nullvalue)                \
        ({                                                \
                type *_pvar_ = &(var);                    \
                type _var_ = *_pvar_;                     \
                type _nullvalue_ = nullvalue;             \
                *_pvar_ = _nullvalue_;                    \
                _var_;                                    \
        })
#define TAKE_PTR_TYPE(ptr, type) TAKE_GENERIC(ptr, type, NULL)
#define TAKE_PTR(ptr) TAKE_PTR_TYPE(ptr, typeof(ptr))
#define TAKE_FD(fd) TAKE_GENERIC(fd, int, -EBADF)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)           \
        static inline void func##p(type *p) {             \
                if (*p)                                   \
                        func(*p);                         \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Frees a NULL-terminated string vector. Returns NULL. */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* json-c objects */
struct json_object;
int json_object_put(struct json_object *obj);
static inline void json_object_putp(struct json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_object_putp)
