/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * liblazaret-statx-compat.so: preloaded into glibc programs in the sandbox.
 *
 * The gVisor release this project is built against (Debian's runsc
 * 20221219) rejects statx(2) with AT_NO_AUTOMOUNT with EINVAL. GNU coreutils
 * passes that flag on every statx call, so `ls -l` and `stat` fail on every
 * file. There are no automount points inside gVisor, so the flag means
 * nothing there: this wrapper drops it and makes the system call itself.
 *
 * Built without the C library: the only symbol it needs at run time is
 * __errno_location, from the program's own glibc.
 */
#include <stddef.h>

#define SYS_STATX 332
#define FLAG_AT_NO_AUTOMOUNT 0x800

struct statx;

extern int *__errno_location(void);
int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf);

__attribute__((visibility("default")))
int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf) {
        long r;
        register long r10 __asm__("r10") = (long) mask;
        register long r8 __asm__("r8") = (long) buf;

        __asm__ volatile ("syscall"
                          : "=a" (r)
                          : "0" ((long) SYS_STATX), "D" ((long) dirfd), "S" (path),
                            "d" ((long) (flags & ~FLAG_AT_NO_AUTOMOUNT)), "r" (r10), "r" (r8)
                          : "rcx", "r11", "memory");
        if (r < 0 && r > -4096) {
                *__errno_location() = (int) -r;
                return -1;
        }
        return (int) r;
}
