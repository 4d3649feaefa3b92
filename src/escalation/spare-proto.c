/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "spare-proto.h"

int spare_command_format(const char *program, char *const *argv, char **ret, size_t *ret_len) {
        size_t argc = 0, len, n;
        char *buf, *p;

        if (!program || program[0] != '/' || strlen(program) > SPARE_PROGRAM_MAX || !argv || !argv[0])
                return -EINVAL;
        len = strlen(program) + 1;
        for (; argv[argc]; argc++) {
                n = strlen(argv[argc]);
                if (argc >= SPARE_ARGC_MAX || n > SPARE_ARG_MAX)
                        return -EINVAL;
                len += n + 1;
        }
        buf = malloc(len);
        if (!buf)
                return -ENOMEM;
        p = stpcpy(buf, program) + 1;
        for (size_t i = 0; i < argc; i++)
                p = stpcpy(p, argv[i]) + 1;
        *ret = buf;
        *ret_len = len;
        return 0;
}

int spare_command_parse(const char *buf, size_t len, const char **ret_program, char ***ret_argv) {
        _cleanup_free_ char **argv = NULL;
        const char *p, *end = buf + len;
        size_t argc = 0;

        if (len == 0 || len > SPARE_COMMAND_MAX || buf[len - 1] != 0)
                return -EBADMSG;
        if (buf[0] != '/' || strlen(buf) > SPARE_PROGRAM_MAX)
                return -EBADMSG;
        for (p = buf + strlen(buf) + 1; p < end; p += strlen(p) + 1) {
                if (argc >= SPARE_ARGC_MAX || strlen(p) > SPARE_ARG_MAX)
                        return -EBADMSG;
                argc++;
        }
        if (argc == 0)
                return -EBADMSG;
        argv = calloc(argc + 1, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        argc = 0;
        for (p = buf + strlen(buf) + 1; p < end; p += strlen(p) + 1)
                argv[argc++] = (char *) p;
        *ret_program = buf;
        *ret_argv = TAKE_PTR(argv);
        return 0;
}

int spare_send(int sock, const int fds[SPARE_FD_COUNT]) {
        union {
                struct cmsghdr h;
                char raw[CMSG_SPACE(sizeof(int) * SPARE_FD_COUNT)];
        } control = {};
        char byte = 'c';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = {
                .msg_iov = &iov,
                .msg_iovlen = 1,
                .msg_control = &control,
                .msg_controllen = sizeof(control),
        };
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * SPARE_FD_COUNT);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * SPARE_FD_COUNT);
        for (;;) {
                ssize_t k = sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k == 1)
                        return 0;
                if (k >= 0)
                        return -EIO;
                if (errno != EINTR)
                        return -errno;
        }
}

static void close_received(struct msghdr *mh) {
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        int fd;
                        for (size_t i = 0; i < n; i++) {
                                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                                (void) close(fd);
                        }
                }
}

int spare_receive(int sock, int ret_fds[SPARE_FD_COUNT]) {
        union {
                struct cmsghdr h;
                /* Room for more than we take: extra descriptors are seen and closed, not lost in the kernel. */
                char raw[CMSG_SPACE(sizeof(int) * (SPARE_FD_COUNT + 8))];
        } control;
        char byte;
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh;
        struct cmsghdr *c;
        ssize_t k;

        do {
                mh = (struct msghdr) {
                        .msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = &control,
                        .msg_controllen = sizeof(control),
                };
                k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        } while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        if (k == 0 && mh.msg_controllen == 0)
                return 0;
        c = CMSG_FIRSTHDR(&mh);
        if (k != 1 || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || !c || c->cmsg_level != SOL_SOCKET ||
            c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int) * SPARE_FD_COUNT) ||
            CMSG_NXTHDR(&mh, c)) {
                close_received(&mh);
                return -EBADMSG;
        }
        memcpy(ret_fds, CMSG_DATA(c), sizeof(int) * SPARE_FD_COUNT);
        return 1;
}
