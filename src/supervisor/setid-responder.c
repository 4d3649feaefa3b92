/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <linux/seccomp.h>

#include "cleanup.h"
#include "setid-mode.h"
#include "setid-responder.h"

#ifndef PIDFD_THREAD
#  define PIDFD_THREAD O_EXCL
#endif
/* Linux 6.6; the headers of older distributions lack them. */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#  define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#  define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

typedef struct Responder {
        int notify_fd;
        const AnchorId *anchors;
        size_t n_anchors;
} Responder;

/* A copy of the caller's fd, or < 0. The notification carries the thread's ID. */
static int caller_fd(const Responder *rs, const struct seccomp_notif *req, int fd) {
        _cleanup_close_ int pidfd = -EBADF;
        int copy;

        if (fd < 0)
                return -EBADF;
        pidfd = (int) syscall(SYS_pidfd_open, (pid_t) req->pid, PIDFD_THREAD);
        if (pidfd < 0)
                return -errno;
        copy = (int) syscall(SYS_pidfd_getfd, pidfd, fd, 0);
        if (copy < 0)
                return -errno;
        /* The thread ID still names the thread that asked: the copy is its fd. */
        if (ioctl(rs->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
                safe_close(copy);
                return -ESRCH;
        }
        return copy;
}

/* Is fd on one of the Domain's State Anchor overlays? */
static bool on_anchor(const Responder *rs, int fd) {
        AnchorId id;

        return rs->n_anchors > 0 && anchor_id_of_fd(fd, &id) >= 0 && anchor_id_in(&id, rs->anchors, rs->n_anchors);
}

static void answer_fchmod(const Responder *rs, const struct seccomp_notif *req, struct seccomp_notif_resp *resp) {
        _cleanup_close_ int fd = caller_fd(rs, req, (int) req->data.args[0]);
        mode_t asked = (mode_t) req->data.args[1] & 07777;
        struct stat st;
        mode_t mode;

        if (fd == -EBADF) {
                resp->error = -EBADF;
                return;
        }
        if (fd < 0 || fstat(fd, &st) < 0) {
                resp->error = -EPERM;
                return;
        }
        if (on_anchor(rs, fd))
                mode = asked;
        else if (asked & (S_IWGRP | S_IWOTH)) {
                resp->error = -EPERM;
                return;
        } else
                mode = setid_permitted_mode(asked, st.st_mode);
        if (mode != (st.st_mode & 07777) && fchmod(fd, mode) < 0)
                resp->error = -errno;
}

/* Is the path of fchownat() empty (its first byte NUL)? false if it cannot be read. */
static bool path_empty(const struct seccomp_notif *req, uint64_t addr) {
        char c = 1;
        struct iovec local = { .iov_base = &c, .iov_len = 1 }, remote = { .iov_base = (void *) (uintptr_t) addr, .iov_len = 1 };

        return syscall(SYS_process_vm_readv, (pid_t) req->pid, &local, 1UL, &remote, 1UL, 0UL) == 1 && c == 0;
}

static void answer_chown(const Responder *rs, const struct seccomp_notif *req, struct seccomp_notif_resp *resp, bool at) {
        _cleanup_close_ int fd = -EBADF;
        uid_t uid = (uid_t) req->data.args[at ? 2 : 1];
        gid_t gid = (gid_t) req->data.args[at ? 3 : 2];
        int flags = AT_EMPTY_PATH;

        /* Elsewhere, and whatever cannot be judged: 0, nothing changed (C24). */
        resp->val = 0;
        if (rs->n_anchors == 0 || (at && !path_empty(req, req->data.args[1])))
                return;
        fd = caller_fd(rs, req, (int) req->data.args[0]);
        if (fd < 0 || !on_anchor(rs, fd))
                return;
        if (at)
                flags |= (int) req->data.args[4] & AT_SYMLINK_NOFOLLOW;
        if (fchownat(fd, "", uid, gid, flags) < 0)
                resp->error = -errno;
}

static void answer_xattr(const Responder *rs, const struct seccomp_notif *req, struct seccomp_notif_resp *resp, bool list) {
        _cleanup_close_ int fd = caller_fd(rs, req, (int) req->data.args[0]);
        int flags = fd >= 0 ? fcntl(fd, F_GETFL) : -1;

        if (flags < 0 || !(flags & O_PATH)) {
                resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                return;
        }
        if (list)
                resp->val = 0;          /* no attributes */
        else
                resp->error = -ENODATA;
}

int setid_responder_serve(int notify_fd, const AnchorId *anchors, size_t n_anchors) {
        const Responder rs = { .notify_fd = notify_fd, .anchors = anchors, .n_anchors = n_anchors };

        /* The caller waits while we answer, and we wait while it runs: with
         * this flag the kernel hands the CPU over directly in both
         * directions instead of waking the other side wherever the
         * scheduler puts it. gVisor chowns every file it creates on a host
         * mount, so in a State Anchor that is one round trip per file, and
         * dpkg chowns each one again (dpkg -i of 300 files: 636 chowns, 645
         * notifications in all); measured inside, a file created in a
         * persistent /opt cost about 105 us more than with the chown
         * answered by the filter, and about 40 us more with this flag
         * (spec 6.3). Older kernels (EINVAL, ENOTTY) keep the plain wake-up. */
        (void) ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);

        for (;;) {
                struct seccomp_notif req;
                struct seccomp_notif_resp resp;

                memset(&req, 0, sizeof(req));
                if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
                        /* EINTR: a signal; ENOENT: the caller went away before we got it. */
                        if (errno == EINTR || errno == ENOENT)
                                continue;
                        return -errno;
                }
                resp = (struct seccomp_notif_resp) { .id = req.id };
                if (req.data.nr == SYS_fchmod)
                        answer_fchmod(&rs, &req, &resp);
                else if (req.data.nr == SYS_fchown)
                        answer_chown(&rs, &req, &resp, false);
                else if (req.data.nr == SYS_fchownat)
                        answer_chown(&rs, &req, &resp, true);
                else if (req.data.nr == SYS_fgetxattr)
                        answer_xattr(&rs, &req, &resp, false);
                else if (req.data.nr == SYS_flistxattr)
                        answer_xattr(&rs, &req, &resp, true);
                else
                        resp.error = -ENOSYS;
                /* ENOENT: the caller was interrupted or died meanwhile; nothing to answer. */
                if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT && errno != EINTR)
                        return -errno;
        }
}

int setid_listener_send(int sock, int fd) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { .iov_base = (char[]) { 'L' }, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof(control) };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
        if (sendmsg(sock, &mh, MSG_NOSIGNAL) != 1)
                return -errno;
        return 0;
}

int setid_listener_receive(int sock, int *ret_fd) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof(control) };
        struct cmsghdr *c;
        ssize_t k;
        int fd;

        do
                k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        c = CMSG_FIRSTHDR(&mh);
        if (k != 1 || !c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
            c->cmsg_len != CMSG_LEN(sizeof(int)))
                return -EBADMSG;
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        *ret_fd = fd;
        return 0;
}
