/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "fs-util.h"
#include "path-util.h"
#include "spare-proto.h"
#include "spawn-util.h"
#include "util.h"

Test(spare_proto, round_trip) {
        char *argv[] = { (char *) "git", (char *) "", (char *) "a b", NULL }, **got = NULL;
        _cleanup_free_ char *buf = NULL;
        const char *program;
        size_t len;

        cr_assert_eq(spare_command_format("/usr/bin/git", argv, &buf, &len), 0);
        cr_assert_eq(len, strlen("/usr/bin/git") + 1 + 4 + 1 + 4);
        cr_assert_eq(spare_command_parse(buf, len, &program, &got), 0);
        cr_assert_str_eq(program, "/usr/bin/git");
        cr_assert_str_eq(got[0], "git");
        cr_assert_str_eq(got[1], "");
        cr_assert_str_eq(got[2], "a b");
        cr_assert_null(got[3]);
        free(got);
}

Test(spare_proto, format_limits) {
        char *none[] = { NULL }, *one[] = { (char *) "x", NULL }, **many = calloc(SPARE_ARGC_MAX + 2, sizeof(char *));
        _cleanup_free_ char *buf = NULL, *big = malloc(SPARE_ARG_MAX + 2);
        size_t len;

        cr_assert_eq(spare_command_format("relative", one, &buf, &len), -EINVAL);
        cr_assert_eq(spare_command_format("/bin/x", none, &buf, &len), -EINVAL);
        cr_assert_eq(spare_command_format(NULL, one, &buf, &len), -EINVAL);
        for (size_t i = 0; i <= SPARE_ARGC_MAX; i++)
                many[i] = (char *) "a";
        cr_assert_eq(spare_command_format("/bin/x", many, &buf, &len), -EINVAL);
        many[SPARE_ARGC_MAX] = NULL;
        cr_assert_eq(spare_command_format("/bin/x", many, &buf, &len), 0);
        buf = mfree(buf);
        memset(big, 'a', SPARE_ARG_MAX + 1);
        big[SPARE_ARG_MAX + 1] = 0;
        many[0] = big;
        cr_assert_eq(spare_command_format("/bin/x", many, &buf, &len), -EINVAL);
        big[SPARE_ARG_MAX] = 0;
        cr_assert_eq(spare_command_format("/bin/x", many, &buf, &len), 0);
        free(many);
}

Test(spare_proto, parse_refuses) {
        const char *program;
        char **argv;

        cr_assert_eq(spare_command_parse("", 0, &program, &argv), -EBADMSG);
        cr_assert_eq(spare_command_parse("/bin/x", 6, &program, &argv), -EBADMSG);              /* no NUL at the end */
        cr_assert_eq(spare_command_parse("/bin/x\0", 7, &program, &argv), -EBADMSG);            /* no argv */
        cr_assert_eq(spare_command_parse("bin/x\0x\0", 8, &program, &argv), -EBADMSG);          /* relative */
        cr_assert_eq(spare_command_parse("/bin/x\0x\0", 9, &program, &argv), 0);
        free(argv);
}

static void make_command(int fds[SPARE_FD_COUNT], const char *script, int out_w, int err_w) {
        char *argv[] = { (char *) "sh", (char *) "-c", (char *) script, NULL };
        _cleanup_free_ char *buf = NULL;
        size_t len;

        cr_assert_eq(spare_command_format("/bin/sh", argv, &buf, &len), 0);
        fds[SPARE_FD_COMMAND] = memfd_create("test", MFD_CLOEXEC);
        cr_assert_geq(fds[SPARE_FD_COMMAND], 0);
        cr_assert_eq(write_all(fds[SPARE_FD_COMMAND], buf, len), 0);
        fds[SPARE_FD_CWD] = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(fds[SPARE_FD_CWD], 0);
        fds[SPARE_FD_STDOUT] = out_w;
        fds[SPARE_FD_STDERR] = err_w;
}

Test(spare_proto, send_receive) {
        int sv[2], fds[SPARE_FD_COUNT], got[SPARE_FD_COUNT], p[2];
        union {
                struct cmsghdr h;
                char raw[CMSG_SPACE(sizeof(int))];
        } control = {};
        char byte = 'x';
        struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof(control) };
        struct cmsghdr *c;

        cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        make_command(fds, "true", p[1], dup(p[1]));
        cr_assert_eq(spare_send(sv[0], fds), 0);
        cr_assert_eq(spare_receive(sv[1], got), 1);
        for (size_t i = 0; i < SPARE_FD_COUNT; i++) {
                struct stat a, b;
                cr_assert(fcntl(got[i], F_GETFD) & FD_CLOEXEC);
                cr_assert_eq(fstat(fds[i], &a), 0);
                cr_assert_eq(fstat(got[i], &b), 0);
                cr_assert_eq(a.st_ino, b.st_ino);
                close(got[i]);
        }
        /* One descriptor instead of four: refused, and what came is closed. */
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &p[0], sizeof(int));
        cr_assert_eq(sendmsg(sv[0], &mh, 0), 1);
        cr_assert_eq(spare_receive(sv[1], got), -EBADMSG);
        /* A byte without descriptors: refused too. */
        cr_assert_eq(send(sv[0], "x", 1, 0), 1);
        cr_assert_eq(spare_receive(sv[1], got), -EBADMSG);
        /* The coordinator's end goes: nothing to run. */
        close(sv[0]);
        cr_assert_eq(spare_receive(sv[1], got), 0);
        for (size_t i = 0; i < SPARE_FD_COUNT; i++)
                close(fds[i]);
        close(sv[1]);
        close(p[0]);
}

/* The real lazaret-spare, started the way the coordinator starts it. */
static pid_t start_spare(int *ret_sock) {
        const char *builddir = getenv("LAZARET_TEST_BUILDDIR");
        _cleanup_free_ char *exe = NULL;
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        int sv[2];
        pid_t pid;

        cr_assert_not_null(builddir);
        exe = path_join(builddir, "../../src/spare/lazaret-spare");
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        o.argv = (char *const[]) { exe, NULL };
        o.envp = (char *const[]) { (char *) "PATH=/usr/bin:/bin", (char *) "SPARE_TEST=env", NULL };
        o.pass_fds = &sv[1];
        o.n_pass_fds = 1;
        o.new_session = true;
        cr_assert_eq(spawn(&o, &pid, NULL), 0);
        close(sv[1]);
        *ret_sock = sv[0];
        return pid;
}

static int wait_status(pid_t pid) {
        int status;

        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status));
        return WEXITSTATUS(status);
}

Test(spare_proto, spare_runs_what_it_is_given) {
        int sock, out[2], err[2], fds[SPARE_FD_COUNT];
        _cleanup_free_ char *o = NULL, *e = NULL;
        pid_t pid = start_spare(&sock);

        cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
        /* Its directory, environment, streams and fds are what was handed over, and it is the spare's process. */
        make_command(fds, "echo $PWD $SPARE_TEST $$; ls /proc/self/fd | tr '\\n' ' ' >&2; exit 3", out[1], err[1]);
        cr_assert_eq(spare_send(sock, fds), 0);
        for (size_t i = 0; i < SPARE_FD_COUNT; i++)
                close(fds[i]);
        close(sock);
        cr_assert_eq(wait_status(pid), 3);
        cr_assert_geq(read_full_fd(out[0], 4096, &o, NULL), 0);
        cr_assert_geq(read_full_fd(err[0], 4096, &e, NULL), 0);
        {
                char want[64];
                snprintf(want, sizeof(want), "/tmp env %d\n", (int) pid);
                cr_assert_str_eq(o, want);
        }
        /* Only 0, 1, 2 and the one ls opens: nothing of the hand-over leaks into the command. */
        cr_assert_str_eq(e, "0 1 2 3 ");
        close(out[0]);
        close(err[0]);
}

Test(spare_proto, spare_without_command_runs_nothing) {
        int sock;
        pid_t pid = start_spare(&sock);

        close(sock);
        cr_assert_eq(wait_status(pid), 0);
}

Test(spare_proto, spare_refuses_a_bad_hand_over) {
        int sock;
        pid_t pid = start_spare(&sock);

        cr_assert_eq(send(sock, "x", 1, 0), 1);
        cr_assert_eq(wait_status(pid), 126);
        close(sock);
}
