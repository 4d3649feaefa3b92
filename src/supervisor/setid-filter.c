/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SR-2: the sandbox's root is the developer's UID on the host, so a set-ID
 * bit kept on a workspace or volume file would let any local user run a
 * program as the developer. This filter refuses those bits where the host
 * would keep them; mode bits it does not keep are left alone (see
 * spec/lazaret.md, C18).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <seccomp.h>

#include "cleanup.h"
#include "macro.h"
#include "setid-filter.h"

/* fchmodat2(2) (Linux 6.6) has the same number on every architecture that
 * uses the common table; x86-64 is the one this fallback is checked for. */
#define FCHMODAT2_X86_64 452

#ifndef __O_TMPFILE
#  define __O_TMPFILE 020000000
#endif

static void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

/* One rule per bit: a masked comparison tests (arg & mask) == value. */
static int refuse_mode_bits(scmp_filter_ctx ctx, int nr, unsigned mode_arg) {
        static const mode_t bits[] = { S_ISUID, S_ISGID };

        for (size_t i = 0; i < ELEMENTSOF(bits); i++) {
                int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1,
                                         SCMP_CMP(mode_arg, SCMP_CMP_MASKED_EQ, bits[i], bits[i]));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* open and openat use their mode only with O_CREAT or O_TMPFILE. */
static int refuse_create_mode_bits(scmp_filter_ctx ctx, int nr, unsigned flags_arg, unsigned mode_arg) {
        static const mode_t bits[] = { S_ISUID, S_ISGID };
        static const unsigned long flags[] = { O_CREAT, __O_TMPFILE };

        for (size_t i = 0; i < ELEMENTSOF(bits); i++)
                for (size_t j = 0; j < ELEMENTSOF(flags); j++) {
                        int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2,
                                                 SCMP_CMP(flags_arg, SCMP_CMP_MASKED_EQ, flags[j], flags[j]),
                                                 SCMP_CMP(mode_arg, SCMP_CMP_MASKED_EQ, bits[i], bits[i]));
                        if (r < 0)
                                return r;
                }
        return 0;
}

static int fchmodat2_nr(void) {
        int nr = seccomp_syscall_resolve_name("fchmodat2");

        if (nr != __NR_SCMP_ERROR)
                return nr;
        /* An older libseccomp: add it by number where that number is known. */
        if (seccomp_arch_native() == SCMP_ARCH_X86_64)
                return FCHMODAT2_X86_64;
        return -EOPNOTSUPP;
}

int setid_filter_load(void) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        int r, nr;

        /* Native architecture only. A call made through another ABI (i386's
         * int 0x80, x32) is refused: none of runsc's code uses one, and its
         * chmod would otherwise pass unchecked. */
        ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM));
        if (r < 0)
                return r;
        /* The caller is root of its user namespace (CAP_SYS_ADMIN there), so
         * the filter needs no NO_NEW_PRIVS, which runsc is not started with. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (r < 0)
                return r;
        /* Every system call of gVisor's kernel and of the sandbox's stubs
         * passes this filter: a binary search on the syscall number keeps
         * the common case (no rule) to a few comparisons. */
        (void) seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

        /* Changing the mode of an existing file or directory. */
        r = refuse_mode_bits(ctx, SCMP_SYS(chmod), 1);
        if (r < 0)
                return r;
        r = refuse_mode_bits(ctx, SCMP_SYS(fchmod), 1);
        if (r < 0)
                return r;
        r = refuse_mode_bits(ctx, SCMP_SYS(fchmodat), 2);
        if (r < 0)
                return r;
        nr = fchmodat2_nr();
        if (nr < 0)
                return nr;
        r = refuse_mode_bits(ctx, nr, 2);
        if (r < 0)
                return r;

        /* Creating a file with the bits: the kernel keeps them. */
        r = refuse_mode_bits(ctx, SCMP_SYS(creat), 1);
        if (r < 0)
                return r;
        r = refuse_create_mode_bits(ctx, SCMP_SYS(open), 1, 2);
        if (r < 0)
                return r;
        r = refuse_create_mode_bits(ctx, SCMP_SYS(openat), 2, 3);
        if (r < 0)
                return r;
        r = refuse_mode_bits(ctx, SCMP_SYS(mknod), 1);
        if (r < 0)
                return r;
        r = refuse_mode_bits(ctx, SCMP_SYS(mknodat), 2);
        if (r < 0)
                return r;

        /* mkdir: Linux keeps neither bit from the mode (a new directory has
         * S_ISGID only by inheriting it from a set-group-ID parent, and
         * gVisor passes S_ISGID to mkdirat exactly then), so only S_ISUID,
         * which nothing legitimate asks for, is refused. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mkdir), 1,
                             SCMP_A1(SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID));
        if (r < 0)
                return r;
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mkdirat), 1,
                             SCMP_A2(SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID));
        if (r < 0)
                return r;

        /* Calls whose mode seccomp cannot see: openat2(2) keeps it in a
         * struct, io_uring's open requests bypass seccomp. runsc, its gofer
         * and the gVisor kernel use neither (checked with strace on runsc
         * 0.0~20240729), and every caller must expect ENOSYS from both on
         * older kernels. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
        if (r < 0)
                return r;
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_uring_setup), 0);
        if (r < 0)
                return r;

        return seccomp_load(ctx);
}
