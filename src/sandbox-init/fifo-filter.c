/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "fifo-filter.h"

#if defined(__x86_64__)
#  define FILTER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#  define FILTER_ARCH AUDIT_ARCH_AARCH64
#else
#  error "fifo-filter: unknown architecture"
#endif

/* The low 32 bits of argument N (the mode fits in them, little endian). */
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + (n) * sizeof(__u64))

int fifo_filter_install(void) {
        struct sock_filter code[] = {
                /* Another architecture's calls are not ours to judge. */
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FILTER_ARCH, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __NR_mknod
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mknod, 2, 0),
#else
                BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0),
#endif
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mknodat, 3, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                /* mknod(path, mode, dev) */
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)),
                BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0),
                /* mknodat(dirfd, path, mode, dev) */
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(2)),
                BPF_STMT(BPF_ALU | BPF_AND | BPF_K, S_IFMT),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, S_IFIFO, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
                return -errno;
        return 0;
}
