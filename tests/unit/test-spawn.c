/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "fs-util.h"
#include "spawn-util.h"

/* Runs /bin/sh -c SCRIPT with o's settings; returns what it printed on stdout. */
static char *run_sh(SpawnOptions *o, const char *script, int *ret_status) {
        int out[2], status;
        char *buf = NULL;
        size_t n;
        pid_t pid;
        int pidfd = -EBADF;

        cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
        o->argv = (char *[]) { (char *) "/bin/sh", (char *) "-c", (char *) script, NULL };
        o->stdio[1] = out[1];
        cr_assert_eq(spawn(o, &pid, &pidfd), 0);
        cr_assert_geq(pidfd, 0);
        cr_assert(fcntl(pidfd, F_GETFD) & FD_CLOEXEC);
        close(out[1]);
        cr_assert_geq(read_full_fd(out[0], 65536, &buf, &n), 0);
        close(out[0]);
        close(pidfd);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        *ret_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return buf;
}

Test(spawn, clean_child) {
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        _cleanup_free_ char *out = NULL;
        sigset_t block, old;
        int status, keep;

        /* What the coordinator does to itself must not reach the child. */
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGCHLD);
        sigprocmask(SIG_BLOCK, &block, &old);
        signal(SIGPIPE, SIG_IGN);
        setenv("NOTIFY_SOCKET", "/run/x", 1);
        setenv("LISTEN_FDS", "1", 1);
        setenv("LAZARET_SPAWN_TEST", "kept", 1);
        keep = open("/dev/null", O_RDONLY);             /* without O_CLOEXEC: must not leak */
        cr_assert_geq(keep, 3);

        out = run_sh(&o, "grep -E '^(SigBlk|SigIgn):' /proc/self/status | tr -s '\\t ' ' '; "
                         "echo N=${NOTIFY_SOCKET:-unset} L=${LISTEN_FDS:-unset} K=$LAZARET_SPAWN_TEST; "
                         "ls /proc/self/fd | sort -n | tr '\\n' ' '", &status);
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(keep);
        cr_assert_eq(status, 0);
        cr_assert(strstr(out, "SigBlk: 0000000000000000"), "%s", out);
        cr_assert(strstr(out, "SigIgn: 0000000000000000"), "%s", out);
        cr_assert(strstr(out, "N=unset L=unset K=kept"), "%s", out);
        /* 0, 1, 2, and ls's own directory fd, nothing else. */
        cr_assert(strstr(out, "\n0 1 2 3 ") && !strstr(out, " 4 "), "%s", out);
}

Test(spawn, fds_env_cwd) {
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        _cleanup_free_ char *out = NULL;
        int p[2], status;

        cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
        cr_assert_eq(write(p[1], "via-fd3", 7), 7);
        close(p[1]);
        o.pass_fds = (int[]) { p[0] };
        o.n_pass_fds = 1;
        o.envp = (char *[]) { (char *) "A=1", (char *) "NOTIFY_SOCKET=/x", NULL };
        o.cwd = "/proc";
        out = run_sh(&o, "cat <&3; echo; echo A=$A N=${NOTIFY_SOCKET:-unset} PWD=$(pwd)", &status);
        close(p[0]);
        cr_assert_eq(status, 0);
        cr_assert(strstr(out, "via-fd3\nA=1 N=unset PWD=/proc"), "%s", out);
}

Test(spawn, refusals_and_status) {
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        _cleanup_free_ char *out = NULL;
        int status;

        o.argv = (char *[]) { (char *) "sh", NULL };
        cr_assert_eq(spawn(&o, NULL, NULL), -EINVAL);          /* not absolute */
        o.argv = (char *[]) { (char *) "/bin/sh", NULL };
        o.controlling_tty = true;
        cr_assert_eq(spawn(&o, NULL, NULL), -EINVAL);          /* a tty needs a session */
        o.controlling_tty = false;
        out = run_sh(&o, "kill -TERM $$", &status);
        cr_assert_eq(status, 128 + SIGTERM);
        cr_assert_eq(spawn_status_from_siginfo(CLD_EXITED, 3), 3);
        cr_assert_eq(spawn_status_from_siginfo(CLD_KILLED, 9), 137);
}

/* A hook that fails as a child may: with an errno. */
static int failing_hook(void *userdata) {
        return -*(int *) userdata;
}

Test(spawn, setup_errors_reach_the_caller) {
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        int e = EXDEV, pidfd = 1234, fd, before;
        pid_t pid = 1234;

        /* The lowest free fd before and after: nothing leaks. */
        before = fcntl(0, F_DUPFD_CLOEXEC, 0);
        cr_assert_geq(before, 0);
        close(before);

        o.argv = (char *[]) { (char *) "/nonexistent/program", NULL };
        cr_assert_eq(spawn(&o, &pid, &pidfd), -ENOENT);
        cr_assert_eq(pid, 1234, "*ret_pid written on failure");
        cr_assert_eq(pidfd, 1234, "*ret_pidfd written on failure");
        /* Reaped already: no child of ours is left. */
        cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1);
        cr_assert_eq(errno, ECHILD);

        o.argv = (char *[]) { (char *) "/proc/self/status", NULL };    /* not executable */
        cr_assert_eq(spawn(&o, NULL, NULL), -EACCES);

        o.argv = (char *[]) { (char *) "/bin/true", NULL };
        o.cwd = "/nonexistent";
        cr_assert_eq(spawn(&o, NULL, NULL), -ENOENT);
        o.cwd = NULL;
        o.child_hook = failing_hook;
        o.hook_userdata = &e;
        cr_assert_eq(spawn(&o, NULL, NULL), -EXDEV);

        fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
        cr_assert_eq(fd, before, "an fd leaked");
        close(fd);
}

Test(spawn, async_error_fd) {
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        int status, fd = -EBADF;
        pid_t pid;

        o.argv = (char *[]) { (char *) "/nonexistent/program", NULL };
        cr_assert_eq(spawn_async(&o, &pid, NULL, &fd), 0);
        cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert_eq(WEXITSTATUS(status), 127);
        cr_assert_eq(spawn_read_error(fd), -ENOENT);
        close(fd);

        /* A successful exec closes the pipe with nothing in it. */
        o.argv = (char *[]) { (char *) "/bin/true", NULL };
        cr_assert_eq(spawn_async(&o, &pid, NULL, &fd), 0);
        cr_assert_eq(spawn_read_error(fd), 0);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert_eq(WEXITSTATUS(status), 0);
        close(fd);
}
