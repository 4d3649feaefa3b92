/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stddef.h>

#include <asm/unistd.h>
#include <linux/audit.h>
#include <linux/errno.h>
#include <linux/seccomp.h>
#include <linux/stat.h>

#include "fifo-filter.h"

#if defined(__x86_64__)
#  define FILTER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#  define FILTER_ARCH AUDIT_ARCH_AARCH64
#else
#  error "fifo-filter: unknown architecture"
#endif

/* linux/stat.h leaves these to the C library when it sees glibc's headers. */
#ifndef S_IFMT
#  define S_IFMT 00170000
#endif
#ifndef S_IFIFO
#  define S_IFIFO 0010000
#endif

/* The low 32 bits of argument N (the mode fits in them, little endian). */
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + (n) * sizeof(__u64))

static const struct sock_filter code[] = {
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

/* The kernel only reads the program; sock_fprog's pointer is not const. */
const struct sock_fprog fifo_filter = {
        .len = sizeof(code) / sizeof(code[0]),
        .filter = (struct sock_filter *) code,
};
