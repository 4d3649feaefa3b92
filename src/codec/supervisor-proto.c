/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"
#include "parse-util.h"
#include "supervisor-proto.h"

static bool digest_valid(const char *s) {
        size_t n = 0;

        for (; s[n]; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == SUPERVISOR_DIGEST_HEX_LEN;
}

#define PID_MAX_LIMIT 4194304

static void sanitize_copy(char *dst, size_t dstsize, const char *src) {
        size_t i = 0;

        for (; src && src[i] && i < dstsize - 1; i++)
                dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
        dst[i] = 0;
}

int supervisor_msg_encode(const SupervisorMsg *msg, char buf[static SUPERVISOR_MSG_MAX]) {
        char reason[SUPERVISOR_REASON_MAX + 1];
        int n;

        switch (msg->type) {
        case SUPERVISOR_READY:
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "READY");
                break;
        case SUPERVISOR_MAILBOX:
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "MAILBOX");
                break;
        case SUPERVISOR_FAILED:
                sanitize_copy(reason, sizeof(reason), msg->reason);
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "FAILED %s", reason[0] ? reason : "unknown error");
                break;
        case SUPERVISOR_STARTED:
                sanitize_copy(reason, sizeof(reason), msg->reason);
                if (!reason[0])
                        return -EINVAL;
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "STARTED %s", reason);
                break;
        case SUPERVISOR_EXITED:
                if (msg->status < 0 || msg->status > 255)
                        return -EINVAL;
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "EXITED %d", msg->status);
                break;
        case SUPERVISOR_NETWORK:
                if (!digest_valid(msg->digest) || msg->helper_pid < 1 || msg->helper_pid > PID_MAX_LIMIT || msg->netns == 0)
                        return -EINVAL;
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "NETWORK %s %d %llu", msg->digest, msg->helper_pid, msg->netns);
                break;
        default:
                return -EINVAL;
        }
        return n < 0 || n >= SUPERVISOR_MSG_MAX ? -EINVAL : n;
}

int supervisor_msg_decode(const char *buf, size_t n, SupervisorMsg *ret) {
        char s[SUPERVISOR_MSG_MAX + 1];
        const char *arg;
        SupervisorMsg m = {};
        uint64_t netns;

        if (n == 0 || n > SUPERVISOR_MSG_MAX)
                return -EBADMSG;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) buf[i] < 0x20 || (unsigned char) buf[i] >= 0x7f)
                        return -EBADMSG;
        memcpy(s, buf, n);
        s[n] = 0;

        if (streq(s, "READY"))
                m.type = SUPERVISOR_READY;
        else if (streq(s, "MAILBOX"))
                m.type = SUPERVISOR_MAILBOX;
        else if ((arg = startswith(s, "FAILED "))) {
                if (!*arg || strlen(arg) > SUPERVISOR_REASON_MAX)
                        return -EBADMSG;
                m.type = SUPERVISOR_FAILED;
                memcpy(m.reason, arg, strlen(arg) + 1);
        } else if ((arg = startswith(s, "STARTED "))) {
                if (!*arg || strlen(arg) > SUPERVISOR_REASON_MAX)
                        return -EBADMSG;
                m.type = SUPERVISOR_STARTED;
                memcpy(m.reason, arg, strlen(arg) + 1);
        } else if ((arg = startswith(s, "EXITED "))) {
                m.type = SUPERVISOR_EXITED;
                if (parse_int(arg, 0, 255, &m.status) < 0)
                        return -EBADMSG;
        } else if ((arg = startswith(s, "NETWORK "))) {
                const char *sp1 = strchr(arg, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
                uint64_t pid;

                if (!sp1 || !sp2 || (size_t) (sp1 - arg) != SUPERVISOR_DIGEST_HEX_LEN)
                        return -EBADMSG;
                memcpy(m.digest, arg, SUPERVISOR_DIGEST_HEX_LEN);
                m.digest[SUPERVISOR_DIGEST_HEX_LEN] = 0;
                if (!digest_valid(m.digest) ||
                    parse_unsigned_n(sp1 + 1, (size_t) (sp2 - sp1 - 1), 0, 1, PID_MAX_LIMIT, &pid) < 0 ||
                    parse_uint64(sp2 + 1, 1, UINT64_MAX, &netns) < 0)
                        return -EBADMSG;
                m.helper_pid = (int) pid;
                m.netns = netns;
                m.type = SUPERVISOR_NETWORK;
        } else
                return -EBADMSG;
        *ret = m;
        return 0;
}

int supervisor_msg_send(int sock, const SupervisorMsg *msg, int fd) {
        char buf[SUPERVISOR_MSG_MAX];
        union {
                struct cmsghdr h;
                char space[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        int n = supervisor_msg_encode(msg, buf);

        if (n < 0)
                return n;
        if ((msg->type == SUPERVISOR_MAILBOX) != (fd >= 0))
                return -EINVAL;
        iov = (struct iovec) { .iov_base = buf, .iov_len = (size_t) n };
        if (fd >= 0) {
                struct cmsghdr *c;

                mh.msg_control = &control;
                mh.msg_controllen = sizeof(control.space);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* Every descriptor the datagram carried: the first to *ret_first, the count returned; the rest closed. */
static size_t take_fds(struct msghdr *mh, int *ret_first) {
        size_t n = 0;

        *ret_first = -EBADF;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
                        continue;
                for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
                        int fd;

                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (n++ == 0)
                                *ret_first = fd;
                        else
                                safe_close(fd);
                }
        }
        return n;
}

int supervisor_msg_recv(int sock, SupervisorMsg *ret, int *ret_fd) {
        char buf[SUPERVISOR_MSG_MAX + 1];
        /* Room for more than one: a datagram with two is refused, not cut (MSG_CTRUNC would lose them unseen). */
        union {
                struct cmsghdr h;
                char space[CMSG_SPACE(4 * sizeof(int))];
        } control;
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof(control) };
        _cleanup_close_ int fd = -EBADF;
        SupervisorMsg m;
        size_t n_fds;
        ssize_t k;

        k = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (k < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        n_fds = take_fds(&mh, &fd);
        if (k == 0 && n_fds == 0)
                return 0;
        if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t) k > SUPERVISOR_MSG_MAX ||
            supervisor_msg_decode(buf, (size_t) k, &m) < 0)
                return -EBADMSG;
        if ((m.type == SUPERVISOR_MAILBOX) ? n_fds != 1 : n_fds != 0)
                return -EBADMSG;
        *ret = m;
        *ret_fd = TAKE_FD(fd);
        return 1;
}
