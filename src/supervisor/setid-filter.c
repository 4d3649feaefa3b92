/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SR-2: the sandbox's root is the developer's UID on the host, so a set-ID
 * bit kept on a workspace or volume file would let any local user run a
 * program as the developer. This filter refuses those bits where the host
 * would keep them; mode bits it does not keep are left alone (see
 * spec/lazaret.md, C18, C22).
 *
 * Issue 15, attack 4: a workspace file or directory made writable by group
 * or others lets another local user replace .git/config, and a file chowned
 * to a subordinate ID is lost to the developer. So the filter also refuses
 * a chmod that adds group or other write, pins the host umask at 022 (the
 * mode of what runsc creates on the host never has those bits), and turns
 * every chown into a call that succeeds and does nothing.
 * Success, not EPERM: `tar x` and `cp -a` as root fail on a chown error
 * that reaches them, and gVisor 0.0~20240729 hiding it (it does, as for
 * chmod) is not something to depend on (spec C24).
 *
 * Issue 33: a State Anchor overlay is the Domain's own state, not a host
 * file host tools use, and there owners and modes are kept as written. A
 * rule sees numbers, not the file, so the calls gVisor makes for a chown
 * or chmod inside (fchownat(fd, "", ..., AT_EMPTY_PATH) and fchmod(fd, ...),
 * seen on runsc 0.0~20240729 with and without directfs) go to the
 * responder, which judges the file's file system by the fd and applies the
 * call there, and answers as these rules did anywhere else
 * (setid-responder.h).
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

/* The host umask that runsc keeps: what it creates never lets others write. */
#define HOST_UMASK (S_IWGRP | S_IWOTH)

/* The bits a chmod may not add: the set-ID bits, and write for group and others. */
static const mode_t chmod_bits[] = { S_ISUID, S_ISGID, S_IWGRP, S_IWOTH };
/* The bits a call that creates a file may not ask for (the umask takes the rest). */
static const mode_t create_bits[] = { S_ISUID, S_ISGID };

/* One rule per bit: a masked comparison tests (arg & mask) == value. */
static int refuse_bits(scmp_filter_ctx ctx, int nr, unsigned mode_arg, const mode_t *bits, size_t n_bits) {
        for (size_t i = 0; i < n_bits; i++) {
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

static int refuse_mode_bits(scmp_filter_ctx ctx, int nr, unsigned mode_arg) {
        return refuse_bits(ctx, nr, mode_arg, create_bits, ELEMENTSOF(create_bits));
}

static int refuse_chmod_bits(scmp_filter_ctx ctx, int nr, unsigned mode_arg) {
        return refuse_bits(ctx, nr, mode_arg, chmod_bits, ELEMENTSOF(chmod_bits));
}

/*
 * fchmod, the call gVisor makes for every chmod inside: a mode with a
 * set-ID bit or write for group or others goes to the responder, which
 * applies it on a State Anchor overlay and elsewhere refuses the write
 * bits and strips a new set-ID bit (setid-responder.h). One rule per bit,
 * all with the same action, so any of them matches.
 */
static int filter_fchmod(scmp_filter_ctx ctx) {
        for (size_t i = 0; i < ELEMENTSOF(chmod_bits); i++) {
                int r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(fchmod), 1,
                                         SCMP_CMP(1, SCMP_CMP_MASKED_EQ, chmod_bits[i], chmod_bits[i]));
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * A chown on an fd (fchown, and fchownat with AT_EMPTY_PATH, the form
 * gVisor uses) goes to the responder, which applies it on a State Anchor
 * overlay and elsewhere answers 0 and does nothing. Every chown by a path
 * returns 0 and changes nothing: the rule cannot tell where the path leads.
 * Anywhere but a State Anchor, one to an owner or group other than 0 (the
 * developer, as root of the namespace) would give the file to a
 * subordinate ID; one to 0:0 can change nothing but the group, from
 * another group of the developer's (a set-group-ID project directory's) to
 * the primary one, which is not what the host's own rule for new files in
 * such a directory gives either. gVisor chowns every file it creates to the
 * creating task's IDs (getCreatedChild() of its directfs): on the
 * workspace view that is one answer of the responder, not a FUSE round
 * trip (the view accepts UID/GID and keeps them, spec C24).
 */
static int filter_chown(scmp_filter_ctx ctx) {
        int r;

        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(0), SCMP_SYS(chown), 0);
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(0), SCMP_SYS(lchown), 0);
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(fchown), 0);
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(fchownat), 1,
                                     SCMP_A4(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(0), SCMP_SYS(fchownat), 1,
                                     SCMP_A4(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, 0));
        return r;
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

/* Changing the mode of an existing file or directory. gVisor 0.0~20240729
 * drops the EPERM of the path-based calls (the chmod returns 0 inside). */
static int filter_chmod(scmp_filter_ctx ctx) {
        int r, nr;

        r = refuse_chmod_bits(ctx, SCMP_SYS(chmod), 1);
        if (r < 0)
                return r;
        r = filter_fchmod(ctx);
        if (r < 0)
                return r;
        r = refuse_chmod_bits(ctx, SCMP_SYS(fchmodat), 2);
        if (r < 0)
                return r;
        nr = fchmodat2_nr();
        if (nr < 0)
                return nr;
        return refuse_chmod_bits(ctx, nr, 2);
}

/* Creating a file with a set-ID bit: the kernel keeps it. */
static int filter_create(scmp_filter_ctx ctx) {
        int r;

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
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mkdirat), 1,
                                SCMP_A2(SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID));
}

/* Calls whose mode seccomp cannot see: openat2(2) keeps it in a struct,
 * io_uring's open requests bypass seccomp. runsc, its gofer and the gVisor
 * kernel use neither (checked with strace on runsc 0.0~20240729), and every
 * caller must expect ENOSYS from both on older kernels. */
static int filter_unseen_modes(scmp_filter_ctx ctx) {
        int r;

        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
        if (r < 0)
                return r;
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_uring_setup), 0);
}

/* An empty filter that allows by default, for the native architecture only.
 * A call made through another ABI (i386's int 0x80, x32) is refused: none
 * of runsc's code uses one, and its chmod would otherwise pass unchecked. */
static int filter_new(scmp_filter_ctx *ret) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        int r;

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
        *ret = TAKE_PTR(ctx);
        return 0;
}

int setid_filter_load(int *ret_notify_fd) {
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        int r, fd;

        r = filter_new(&ctx);
        if (r >= 0)
                r = filter_chmod(ctx);
        if (r >= 0)
                r = filter_chown(ctx);
        /* The umask stays HOST_UMASK: runsc sets 0 for itself, and gVisor
         * creates host files with the mode the sandbox asked for, which the
         * host kernel then masks. umask(2) cannot fail; it returns 0 here. */
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(0), SCMP_SYS(umask), 0);
        if (r >= 0)
                r = filter_create(ctx);
        if (r >= 0)
                r = filter_unseen_modes(ctx);
        /* gVisor asks for a symbolic link's attributes on an O_PATH fd, which
         * the host refuses with EBADF: the responder answers those. */
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(fgetxattr), 0);
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(flistxattr), 0);
        if (r < 0)
                return r;

        /* Before the load: from then on umask(2) does nothing. */
        (void) umask(HOST_UMASK);
        r = seccomp_load(ctx);
        if (r < 0)
                return r;
        /* The kernel's listener fd (O_CLOEXEC); seccomp_release() leaves it open. */
        fd = seccomp_notify_fd(ctx);
        if (fd < 0)
                return fd;
        *ret_notify_fd = fd;
        return 0;
}
