/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/seccomp.h>

#include "cleanup.h"
#include "setid-mode.h"
#include "setid-responder.h"

#ifndef PIDFD_THREAD
#  define PIDFD_THREAD O_EXCL
#endif

/* A copy of the caller's fd, or < 0. The notification carries the thread's ID. */
static int caller_fd(int notify_fd, const struct seccomp_notif *req, int fd) {
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
        if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
                safe_close(copy);
                return -ESRCH;
        }
        return copy;
}

static void answer_fchmod(int notify_fd, const struct seccomp_notif *req, struct seccomp_notif_resp *resp) {
        _cleanup_close_ int fd = caller_fd(notify_fd, req, (int) req->data.args[0]);
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
        mode = setid_permitted_mode((mode_t) req->data.args[1], st.st_mode);
        if (mode == (st.st_mode & 07777))
                return;
        /* A set-ID bit kept with other changes would come back here through the
         * filter: the old answer. */
        if (mode & (S_ISUID | S_ISGID)) {
                resp->error = -EPERM;
                return;
        }
        if (fchmod(fd, mode) < 0)
                resp->error = -errno;
}

static void answer_xattr(int notify_fd, const struct seccomp_notif *req, struct seccomp_notif_resp *resp, bool list) {
        _cleanup_close_ int fd = caller_fd(notify_fd, req, (int) req->data.args[0]);
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

int setid_responder_serve(int notify_fd) {
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
                        answer_fchmod(notify_fd, &req, &resp);
                else if (req.data.nr == SYS_fgetxattr)
                        answer_xattr(notify_fd, &req, &resp, false);
                else if (req.data.nr == SYS_flistxattr)
                        answer_xattr(notify_fd, &req, &resp, true);
                else
                        resp.error = -ENOSYS;
                /* ENOENT: the caller was interrupted or died meanwhile; nothing to answer. */
                if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT && errno != EINTR)
                        return -errno;
        }
}
