/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "supervisor-proto.h"

static int decode(const char *s, SupervisorMsg *m) {
        return supervisor_msg_decode(s, strlen(s), m);
}

Test(supervisor_proto, round_trip) {
        char buf[SUPERVISOR_MSG_MAX];
        SupervisorMsg in = { .type = SUPERVISOR_FAILED }, out;
        int n;

        strcpy(in.reason, "runsc create: no such file");
        n = supervisor_msg_encode(&in, buf);
        cr_assert_gt(n, 0);
        cr_assert_eq(supervisor_msg_decode(buf, (size_t) n, &out), 0);
        cr_assert_eq(out.type, SUPERVISOR_FAILED);
        cr_assert_str_eq(out.reason, in.reason);

        in = (SupervisorMsg) { .type = SUPERVISOR_EXITED, .status = 137 };
        n = supervisor_msg_encode(&in, buf);
        cr_assert_eq(supervisor_msg_decode(buf, (size_t) n, &out), 0);
        cr_assert_eq(out.type, SUPERVISOR_EXITED);
        cr_assert_eq(out.status, 137);

        in = (SupervisorMsg) { .type = SUPERVISOR_READY };
        n = supervisor_msg_encode(&in, buf);
        cr_assert_eq(supervisor_msg_decode(buf, (size_t) n, &out), 0);
        cr_assert_eq(out.type, SUPERVISOR_READY);

        in = (SupervisorMsg) { .type = SUPERVISOR_STARTED };
        strcpy(in.reason, "sandbox started in 212 ms: mounts 40.1, runsc run 90.3");
        n = supervisor_msg_encode(&in, buf);
        cr_assert_eq(supervisor_msg_decode(buf, (size_t) n, &out), 0);
        cr_assert_eq(out.type, SUPERVISOR_STARTED);
        cr_assert_str_eq(out.reason, in.reason);

        /* A STARTED with nothing to say is not a report. */
        in.reason[0] = 0;
        cr_assert_eq(supervisor_msg_encode(&in, buf), -EINVAL);
}

Test(supervisor_proto, encode_sanitizes_and_bounds) {
        char buf[SUPERVISOR_MSG_MAX];
        SupervisorMsg in = { .type = SUPERVISOR_FAILED }, out;
        int n;

        strcpy(in.reason, "line one\nline\ttwo\x7f");
        n = supervisor_msg_encode(&in, buf);
        cr_assert_eq(supervisor_msg_decode(buf, (size_t) n, &out), 0);
        cr_assert_str_eq(out.reason, "line one?line?two?");

        memset(in.reason, 'x', SUPERVISOR_REASON_MAX);
        in.reason[SUPERVISOR_REASON_MAX] = 0;
        n = supervisor_msg_encode(&in, buf);
        cr_assert_gt(n, 0);
        cr_assert_lt(n, SUPERVISOR_MSG_MAX);
        cr_assert_eq(supervisor_msg_decode(buf, (size_t) n, &out), 0);

        in = (SupervisorMsg) { .type = SUPERVISOR_EXITED, .status = 256 };
        cr_assert_eq(supervisor_msg_encode(&in, buf), -EINVAL);
}

Test(supervisor_proto, refuses_what_is_not_in_the_grammar) {
        static const char *const bad[] = {
                "", "READY ", "ready", "READYX", "FAILED", "FAILED ", "EXITED", "EXITED ", "EXITED -1",
                "EXITED 256", "EXITED 01", "EXITED 1 2", "EXITED 0x10", "EXITED  1", "EXITED 99999999999",
                "NETWORK up", "FAILED a\nb", "STARTED", "STARTED ", "STARTED a\tb",
        };
        SupervisorMsg m;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_expect_eq(decode(bad[i], &m), -EBADMSG, "accepted \"%s\"", bad[i]);
        cr_assert_eq(supervisor_msg_decode("READY\0junk", 10, &m), -EBADMSG);
        {
                char big[SUPERVISOR_MSG_MAX + 1];
                memset(big, 'A', sizeof(big));
                memcpy(big, "FAILED ", 7);
                cr_assert_eq(supervisor_msg_decode(big, sizeof(big), &m), -EBADMSG);
        }
}

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

Test(supervisor_proto, network_round_trip) {
        char buf[SUPERVISOR_MSG_MAX];
        SupervisorMsg in = { .type = SUPERVISOR_NETWORK, .digest = D64, .helper_pid = 4194304, .netns = 4026532281ULL }, out;
        int n;

        n = supervisor_msg_encode(&in, buf);
        cr_assert_gt(n, 0);
        buf[n] = 0;
        cr_assert_str_eq(buf, "NETWORK " D64 " 4194304 4026532281");
        cr_assert_eq(supervisor_msg_decode(buf, (size_t) n, &out), 0);
        cr_assert_eq(out.type, SUPERVISOR_NETWORK);
        cr_assert_str_eq(out.digest, D64);
        cr_assert_eq(out.helper_pid, 4194304);
        cr_assert_eq(out.netns, 4026532281ULL);

        cr_assert_eq(decode("NETWORK " D64 " 1 18446744073709551615", &out), 0);
        cr_assert_eq(out.netns, 18446744073709551615ULL);

        /* Nothing invalid is encoded. */
        in.helper_pid = 0;
        cr_assert_eq(supervisor_msg_encode(&in, buf), -EINVAL);
        in.helper_pid = 7;
        in.netns = 0;
        cr_assert_eq(supervisor_msg_encode(&in, buf), -EINVAL);
        in.netns = 9;
        in.digest[3] = 'A';
        cr_assert_eq(supervisor_msg_encode(&in, buf), -EINVAL);
        in.digest[3] = 0;
        cr_assert_eq(supervisor_msg_encode(&in, buf), -EINVAL);
}

Test(supervisor_proto, network_refuses_what_is_not_in_the_grammar) {
        static const char *const bad[] = {
                "NETWORK", "NETWORK ", "NETWORK " D64, "NETWORK " D64 " 1", "NETWORK " D64 " 1 ",
                "NETWORK " D64 " 1 2 3", "NETWORK " D64 "  1 2", "NETWORK " D64 " 0 2", "NETWORK " D64 " 1 0",
                "NETWORK " D64 " 01 2", "NETWORK " D64 " 1 02", "NETWORK " D64 " -1 2", "NETWORK " D64 " 1 -2",
                "NETWORK " D64 " 4194305 2", "NETWORK " D64 " 1 18446744073709551616", "NETWORK " D64 " 1 0x2",
                "NETWORK " D64 "0 1 2", "NETWORK 0123 1 2",
                "NETWORK 0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef 1 2",
                "NETWORK 0123456789abcdeg0123456789abcdef0123456789abcdef0123456789abcdef 1 2",
                "network " D64 " 1 2",
        };
        SupervisorMsg m;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_expect_eq(decode(bad[i], &m), -EBADMSG, "accepted \"%s\"", bad[i]);
}

/* The transport: MAILBOX carries exactly one descriptor, nothing else carries one. */
Test(supervisor_proto, mailbox_passes_one_descriptor) {
        SupervisorMsg m;
        int sv[2], fd = -1, pipefd[2];
        struct stat a, b;

        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
        cr_assert_eq(supervisor_msg_recv(sv[1], &m, &fd), -EAGAIN);

        cr_assert_eq(supervisor_msg_send(sv[0], &(SupervisorMsg) { .type = SUPERVISOR_MAILBOX }, pipefd[0]), 0);
        cr_assert_eq(supervisor_msg_recv(sv[1], &m, &fd), 1);
        cr_assert_eq(m.type, SUPERVISOR_MAILBOX);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fstat(fd, &a), 0);
        cr_assert_eq(fstat(pipefd[0], &b), 0);
        cr_assert_eq(a.st_ino, b.st_ino);
        cr_assert_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
        close(fd);

        /* The sender refuses a descriptor with another message, and a MAILBOX without one. */
        cr_assert_eq(supervisor_msg_send(sv[0], &(SupervisorMsg) { .type = SUPERVISOR_READY }, pipefd[0]), -EINVAL);
        cr_assert_eq(supervisor_msg_send(sv[0], &(SupervisorMsg) { .type = SUPERVISOR_MAILBOX }, -EBADF), -EINVAL);
        cr_assert_eq(supervisor_msg_send(sv[0], &(SupervisorMsg) { .type = SUPERVISOR_READY }, -EBADF), 0);
        fd = 12345;
        cr_assert_eq(supervisor_msg_recv(sv[1], &m, &fd), 1);
        cr_assert_eq(m.type, SUPERVISOR_READY);
        cr_assert_eq(fd, -EBADF);

        /* A receiver refuses what a peer outside the grammar sends: a descriptor on READY, MAILBOX bare, two. */
        {
                union {
                        struct cmsghdr h;
                        char space[CMSG_SPACE(2 * sizeof(int))];
                } control = {};
                struct iovec iov = { .iov_base = (char *) "READY", .iov_len = 5 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                     .msg_controllen = CMSG_SPACE(sizeof(int)) };
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                int two[2] = { pipefd[0], pipefd[1] };

                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), two, sizeof(int));
                cr_assert_eq(sendmsg(sv[0], &mh, 0), 5);
                cr_assert_eq(supervisor_msg_recv(sv[1], &m, &fd), -EBADMSG);

                iov = (struct iovec) { .iov_base = (char *) "MAILBOX", .iov_len = 7 };
                mh.msg_controllen = CMSG_SPACE(2 * sizeof(int));
                c->cmsg_len = CMSG_LEN(2 * sizeof(int));
                memcpy(CMSG_DATA(c), two, sizeof(two));
                cr_assert_eq(sendmsg(sv[0], &mh, 0), 7);
                cr_assert_eq(supervisor_msg_recv(sv[1], &m, &fd), -EBADMSG);

                cr_assert_eq(send(sv[0], "MAILBOX", 7, 0), 7);
                cr_assert_eq(supervisor_msg_recv(sv[1], &m, &fd), -EBADMSG);
        }
        close(sv[0]);
        cr_assert_eq(supervisor_msg_recv(sv[1], &m, &fd), 0);
        close(sv[1]);
        close(pipefd[0]);
        close(pipefd[1]);
}
