/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>

#include "cleanup.h"
#include "egress-confine.h"
#include "fs-util.h"
#include "harden.h"
#include "macro.h"
#include "util.h"

/*
 * What the helper calls once it serves traffic, and nothing else: the
 * frame loop (poll, the tap's read and write), libslirp's sockets to the
 * outside and its Unix connections to our listeners, our own listeners
 * made when a name is bound (socket, bind, listen, unlink of a stale
 * path), dials, DNS to the resolver over UDP and TCP, the API socket,
 * memory, time and the exit. Taken from strace -f of test-egress-helper
 * after the readiness byte (every call seen there is here), with the
 * C library's own (malloc's madvise and mremap, stdio's fstat, a futex),
 * dup3, with which libslirp is given a checked connection's upstream
 * socket (conn_hand_over() in egress.c), and epoll_ctl and epoll_wait (or
 * epoll_pwait) for the set of the names' listeners; no open, exec, mount,
 * ioctl, ptrace, namespace or ID call is among them.
 * socket() is allowed below for AF_INET and AF_UNIX only.
 */
#define EGRESS_SYSCALLS(X)                                                                                      \
        X(poll) X(ppoll) X(read) X(write) X(close) X(shutdown) X(connect) X(bind) X(listen) X(accept4) X(accept) \
        X(unlink) X(recvfrom) X(sendto) X(getsockname) X(getpeername) X(getsockopt) X(setsockopt) X(fcntl)     \
        X(dup3) X(epoll_ctl) X(epoll_wait) X(epoll_pwait) X(getrandom) X(clock_gettime) X(brk) X(mmap)         \
        X(munmap) X(mremap) X(madvise) X(futex) X(fstat) X(newfstatat) X(rt_sigreturn) X(rt_sigprocmask)          \
        X(restart_syscall) X(exit) X(exit_group)

static void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

/*
 * Any call not listed kills the process (SCMP_ACT_KILL_PROCESS, as
 * harden_load_allowlist() does for the supervisor's helpers): after setup
 * the only way to make one is a bug or a compromise, and either must end
 * the helper, never let it probe. The supervisor reports the death ("was
 * killed by signal 31 (SIGSYS)") and withdraws the network, and the
 * kernel's audit log records the call (SECCOMP, with its number).
 */
static int load_seccomp(void) {
#define NR(name) SCMP_SYS(name),
        static const int allowed[] = { EGRESS_SYSCALLS(NR) };
#undef NR
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
        int r;

        if (!ctx)
                return -ENOMEM;
        /* A binary tree of the calls, not a list: every packet the helper relays passes the filter a few times. */
        (void) seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
                if (r < 0 && r != -EDOM && r != -EFAULT)
                        return r;
        }
        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_INET));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
        if (r < 0)
                return r;
        return seccomp_load(ctx);
}

/*
 * A mount namespace of our own. It needs CAP_SYS_ADMIN over our user
 * namespace, which the helper has already needed to join the tap's
 * network namespace (setns(2) asks for it in the caller's own user
 * namespace too): a plain user cannot start the helper at all, so there
 * is no unprivileged path to fall back to.
 */
static int private_mount_namespace(char **ret_error) {
        if (unshare(CLONE_NEWNS) < 0)
                return errorf(ret_error, -errno, "cannot make a mount namespace: %m");
        return 0;
}

/* dir/path for an absolute path; an empty file there (a mount point for a socket) when file. */
static int make_target(const char *dir, const char *path, bool file, char **ret, char **ret_error) {
        _cleanup_free_ char *t = NULL;
        int r;

        if (asprintf(&t, "%s%s", dir, path) < 0)
                return -ENOMEM;
        if (!file)
                r = mkdir_parents(t, 0755);
        else {
                char *slash = strrchr(t, '/');

                *slash = 0;
                r = mkdir_parents(t, 0755);
                *slash = '/';
                if (r >= 0) {
                        int fd = open(t, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                        r = fd < 0 ? -errno : 0;
                        safe_close(fd);
                }
        }
        if (r < 0)
                return errorf(ret_error, r, "cannot make %s in the helper's root: %s", path, strerror(-r));
        *ret = TAKE_PTR(t);
        return 0;
}

static int bind_fd(int fd, const char *target, char **ret_error) {
        char src[64];

        snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
        if (mount(src, target, NULL, MS_BIND, NULL) < 0)
                return errorf(ret_error, -errno, "cannot bind %s into the helper's root: %m", target);
        return 0;
}

/* Whether path lies inside dir (both absolute, as given: the helper never resolves them again). */
static bool path_inside(const char *path, const char *dir) {
        size_t n = strlen(dir);

        return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/*
 * The root: an empty tmpfs mounted over run_dir (which is ours; what it
 * covers stays reachable through run_fd), run_dir bound inside it at its
 * own path, then pivoted into and the old root detached. The tmpfs is
 * read-only once the binds are in.
 */
static int enter_empty_root(const char *run_dir, const char *canary_socket, char **ret_error) {
        _cleanup_close_ int run_fd = -EBADF, canary_fd = -EBADF;
        _cleanup_free_ char *run_target = NULL, *canary_target = NULL;
        int r;

        if (run_dir[0] != '/' || (canary_socket && canary_socket[0] != '/'))
                return errorf(ret_error, -EINVAL, "--run-dir and --canary-socket must be absolute paths");
        r = private_mount_namespace(ret_error);
        if (r < 0)
                return r;
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return errorf(ret_error, -errno, "cannot make the mounts private: %m");
        /* Opened in the new namespace: a bind's source must be one of its own mounts. */
        run_fd = open(run_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (run_fd < 0)
                return errorf(ret_error, -errno, "cannot open %s: %m", run_dir);
        if (canary_socket && !path_inside(canary_socket, run_dir)) {
                /* Outside run_dir it must exist now: we bind that one socket, not its directory. */
                canary_fd = open(canary_socket, O_PATH | O_CLOEXEC);
                if (canary_fd < 0)
                        return errorf(ret_error, -errno, "cannot open the canary socket %s (outside --run-dir, it "
                                      "must exist when the helper starts): %m", canary_socket);
        }
        if (mount("lazaret-egress", run_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k") < 0)
                return errorf(ret_error, -errno, "cannot mount a tmpfs for the helper's root: %m");
        r = make_target(run_dir, run_dir, false, &run_target, ret_error);
        if (r >= 0)
                r = bind_fd(run_fd, run_target, ret_error);
        if (r >= 0 && canary_fd >= 0) {
                r = make_target(run_dir, canary_socket, true, &canary_target, ret_error);
                if (r >= 0)
                        r = bind_fd(canary_fd, canary_target, ret_error);
        }
        if (r < 0)
                return r;
        /* pivot_root(".", "."): the old root ends up on top of the new one, and is detached at once. */
        if (chdir(run_dir) < 0 || syscall(SYS_pivot_root, ".", ".") < 0)
                return errorf(ret_error, -errno, "cannot pivot into the helper's root: %m");
        if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                return errorf(ret_error, -errno, "cannot detach the old root: %m");
        if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return errorf(ret_error, -errno, "cannot make the helper's root read-only: %m");
        return 0;
}

int egress_confine(const char *run_dir, const char *canary_socket, char **ret_error) {
        int r;

        r = enter_empty_root(run_dir, canary_socket, ret_error);
        if (r < 0)
                return r;
        r = harden_drop_privileges();
        if (r < 0)
                return errorf(ret_error, r, "cannot drop privileges: %s", strerror(-r));
        r = load_seccomp();
        if (r < 0)
                return errorf(ret_error, r, "cannot load the seccomp allowlist: %s", strerror(-r));
        return 0;
}
