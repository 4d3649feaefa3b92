/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor's own seccomp allowlist (load_seccomp(), the table in
 * supervisor.c, read from that file itself) covers what its wait loop does
 * with the supervised helpers: watch their pidfds, reap one that died, say
 * so on the control socket, and kill and reap the rest on the way out.
 * A child process does it all under the filter; SIGSYS would fail it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

/* The supervisor's file, its main() renamed: load_seccomp(), its
 * wait_for_end() and report_exited() are what is under test. */
int supervisor_main(int argc, char *argv[]);
#define main supervisor_main
#include "supervisor.c"
#include "line-buffer.h"
#undef main

enum {
        STEP_OK,
        STEP_START = 10,
        STEP_SECCOMP,
        STEP_REAP,
};

static int loop_under_filter(int control_fd) {
        _cleanup_(supervisor_done) Supervisor s = SUPERVISOR_INIT;
        char err_line[1024];
        int trigger[2], r;

        if (pipe2(trigger, O_CLOEXEC) < 0)
                return STEP_START;
        r = WITH_LINE(err_line, helper_start(&s.helpers, &(HelperSpec) { .name = "stays", .role = "the test helper", .death_means = "x",
                                              .argv = (char *[]) { (char *) "/bin/sh", (char *) "-c",
                                                                   (char *) "printf 1 >&3; exec sleep 30", NULL },
                                              .ready_timeout_ms = 5000 },
                         NULL, &line_));
        if (r >= 0)
                r = WITH_LINE(err_line, helper_start(&s.helpers, &(HelperSpec) { .name = "dies", .role = "the test helper",
                                                      .death_means = "the Domain fails",
                                                      .argv = (char *[]) { (char *) "/bin/sh", (char *) "-c",
                                                                           (char *) "printf 1 >&3; read x <&4; exit 7",
                                                                           NULL },
                                                      .pass_fds = &trigger[0], .n_pass_fds = 1,
                                                      .ready_timeout_ms = 5000 },
                                 NULL, &line_));
        close(trigger[0]);
        if (r < 0)
                return STEP_START;

        arg_control_fd = control_fd;
        if (load_seccomp() < 0)
                return STEP_SECCOMP;

        /* From here on only what the supervisor does after READY: its own
         * wait (no runsc wait here: a pidfd of -EBADF is not polled), which
         * reports the helper's death; then supervisor_done() on the way out. */
        close(trigger[1]);
        return wait_for_end(&s) == 1 ? STEP_OK : STEP_REAP;
}

/* body(control_fd) in a child; its one message on the control socket, after it exited with STEP_OK. */
static void run_under_filter(int (*body)(int control_fd), SupervisorMsg *ret) {
        char buf[SUPERVISOR_MSG_MAX];
        int sv[2], status;
        ssize_t k;
        pid_t pid;

        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0)
                _exit(body(sv[1]));
        close(sv[1]);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(!WIFSIGNALED(status), "the child was killed by signal %d (SIGSYS: a call missing from the allowlist)",
                  WTERMSIG(status));
        cr_assert_eq(WEXITSTATUS(status), STEP_OK);
        k = recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT);
        cr_assert_gt(k, 0);
        cr_assert_eq(supervisor_msg_decode(buf, (size_t) k, ret), 0);
        close(sv[0]);
}

Test(supervisor_seccomp, the_wait_loop_and_the_helpers_kill_pass_the_filter) {
        SupervisorMsg m;

        run_under_filter(loop_under_filter, &m);
        cr_assert_eq(m.type, SUPERVISOR_FAILED);
        cr_assert(strstr(m.reason, "the test helper dies (pid ") && strstr(m.reason, ") exited with status 7: the Domain fails"),
                  "%s", m.reason);
}

/* runsc wait's answer is read after the filter is loaded: the JSON reader allocates, and json-c seeds its hash. */
static int wait_answer_under_filter(int control_fd) {
        static const char answer[] = "{\"id\":\"lazaret-0123456789ab-1\",\"exitStatus\":137}\n";
        _cleanup_(supervisor_done) Supervisor s = SUPERVISOR_INIT;

        /* runsc wait, ended after its answer: report_exited() reads it to EOF and reaps the writer. */
        if (pipe2(s.wait_pipe, O_CLOEXEC) < 0 || write(s.wait_pipe[1], answer, sizeof(answer) - 1) != sizeof(answer) - 1)
                return STEP_START;
        s.wait_pipe[1] = safe_close(s.wait_pipe[1]);
        s.waiter = fork();
        if (s.waiter < 0)
                return STEP_START;
        if (s.waiter == 0)
                _exit(0);
        arg_control_fd = control_fd;
        if (load_seccomp() < 0)
                return STEP_SECCOMP;
        report_exited(&s);
        return STEP_OK;
}

Test(supervisor_seccomp, runsc_waits_answer_is_read_under_the_filter) {
        SupervisorMsg m;

        run_under_filter(wait_answer_under_filter, &m);
        cr_assert_eq(m.type, SUPERVISOR_EXITED);
        cr_assert_eq(m.status, 137);
}
