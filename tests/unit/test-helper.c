/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor's helper runner against real processes (/bin/sh scripts):
 * one that becomes ready, one that ends before, one that never reports,
 * one that dies after readiness; the fds it hands on; and the kill on exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "helper.h"
#include "util.h"
#include "line-buffer.h"

static char err[1024];

/* Starts /bin/sh -c SCRIPT as a helper named NAME. */
static int start_sh(Helpers *hs, const char *name, const char *script, unsigned timeout_ms, const int *pass_fds,
                    size_t n_pass_fds, pid_t *ret_pid) {
        char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) script, NULL };

        err[0] = 0;
        return WITH_LINE(err, helper_start(hs, &(HelperSpec) {
                                    .name = name,
                                    .role = "the test helper",
                                    .death_means = "the Domain fails",
                                    .not_ready_hint = "a hint",
                                    .argv = argv,
                                    .pass_fds = pass_fds,
                                    .n_pass_fds = n_pass_fds,
                                    .ready_timeout_ms = timeout_ms,
                            }, ret_pid, &line_));
}

/* The PID is gone: reaped (not our child any more) and not signallable. */
static void assert_reaped(pid_t pid) {
        cr_assert_eq(waitpid(pid, NULL, WNOHANG), -1, "pid %d is still our child", (int) pid);
        cr_assert_eq(errno, ECHILD);
        cr_assert_eq(kill(pid, 0), -1, "pid %d still exists", (int) pid);
}

/* Waits up to 5 s for a helper's pidfd to become readable. */
static void wait_for_a_death(const Helpers *hs) {
        struct pollfd p[HELPERS_MAX];
        size_t n = helpers_pollfds(hs, p, HELPERS_MAX);

        cr_assert_eq(n, hs->n);
        cr_assert_gt(poll(p, n, 5000), 0, "no helper ended within 5 s");
}

Test(helper, ready_helper_runs_until_killed) {
        Helpers hs = HELPERS_INIT;
        char line[512] = "";
        pid_t pid = 0;

        cr_assert_eq(start_sh(&hs, "sh-ready", "printf 1 >&3; exec sleep 30", 5000, NULL, 0, &pid), 0, "%s", err);
        cr_assert_gt(pid, 0);
        cr_assert_eq(hs.n, 1);
        cr_assert_eq(hs.helper[0].pid, pid);
        cr_assert_geq(hs.helper[0].pidfd, 0);
        cr_assert(fcntl(hs.helper[0].pidfd, F_GETFD) & FD_CLOEXEC);
        cr_assert_eq(kill(pid, 0), 0);
        /* Alive: nothing to report, and asking does not block. */
        cr_assert_eq(WITH_LINE(line, helpers_reap_dead(&hs, &line_)), 0);
        cr_assert_eq(hs.n, 1);
        helpers_kill(&hs);
        cr_assert_eq(hs.n, 0);
        assert_reaped(pid);
}

Test(helper, any_byte_is_readiness) {
        Helpers hs = HELPERS_INIT;

        cr_assert_eq(start_sh(&hs, "sh-x", "printf x >&3; exec sleep 30", 5000, NULL, 0, NULL), 0, "%s", err);
        helpers_kill(&hs);
}

Test(helper, fds_are_handed_on_after_the_readiness_fd) {
        Helpers hs = HELPERS_INIT;
        int a[2], b[2];

        cr_assert_eq(pipe2(a, O_CLOEXEC), 0);
        cr_assert_eq(pipe2(b, O_CLOEXEC), 0);
        cr_assert_eq(write(a[1], "four\n", 5), 5);
        cr_assert_eq(write(b[1], "five\n", 5), 5);
        close(a[1]);
        close(b[1]);
        /* Ready only if fd 4 and fd 5 carry what they should and no fd
         * above 5 is open. */
        cr_assert_eq(start_sh(&hs, "sh-fds",
                              "read x <&4; read y <&5; "
                              "[ \"$x $y\" = 'four five' ] && ! [ -e /proc/self/fd/6 ] && printf 1 >&3; exec sleep 30",
                              5000, (int[]) { a[0], b[0] }, 2, NULL),
                     0, "%s", err);
        helpers_kill(&hs);
        close(a[0]);
        close(b[0]);
}

Test(helper, exit_before_ready_is_reported_with_status) {
        Helpers hs = HELPERS_INIT;
        char want[256];
        pid_t pid = 0;
        int r;

        r = start_sh(&hs, "sh-exit", "exit 3", 5000, NULL, 0, &pid);
        cr_assert_eq(r, -EPIPE, "%d %s", r, err);
        cr_assert_eq(pid, 0, "ret_pid written on failure");
        cr_assert_eq(hs.n, 0);
        cr_assert_eq(sscanf(err, "the test helper sh-exit (pid %d)", &pid), 1, "%s", err);
        snprintf(want, sizeof(want), "the test helper sh-exit (pid %d) exited with status 3 before it was ready (a hint)",
                 (int) pid);
        cr_assert_str_eq(err, want);
        assert_reaped(pid);
}

Test(helper, killed_before_ready_names_the_signal) {
        Helpers hs = HELPERS_INIT;
        int r;

        r = start_sh(&hs, "sh-kill", "kill -9 $$", 5000, NULL, 0, NULL);
        cr_assert_eq(r, -EPIPE, "%d %s", r, err);
        cr_assert(strstr(err, ") was killed by signal 9 (SIGKILL) before it was ready (a hint)"), "%s", err);
}

/* spawn() reports the exec's errno: no waiting for a readiness that cannot come. */
Test(helper, exec_failure_is_the_errno) {
        Helpers hs = HELPERS_INIT;
        char *argv[] = { (char *) "/nonexistent/helper", NULL };
        int r;

        r = WITH_LINE(err, helper_start(&hs, &(HelperSpec) { .name = "missing", .role = "the test helper", .death_means = "x",
                                              .argv = argv, .ready_timeout_ms = 5000 },
                         NULL, &line_));
        cr_assert_eq(r, -ENOENT, "%d %s", r, err);
        cr_assert_str_eq(err, "cannot start the test helper missing: No such file or directory");
        cr_assert_eq(hs.n, 0);
}

Test(helper, never_ready_times_out_and_is_killed) {
        Helpers hs = HELPERS_INIT;
        uint64_t t0 = now_msec(), dt;
        pid_t pid;
        int r;

        r = start_sh(&hs, "sh-silent", "exec sleep 30", 300, NULL, 0, NULL);
        dt = now_msec() - t0;
        cr_assert_eq(r, -ETIMEDOUT, "%d %s", r, err);
        cr_assert_geq(dt, 300);
        cr_assert_lt(dt, 3000, "took %llu ms", (unsigned long long) dt);
        cr_assert_eq(sscanf(err, "the test helper sh-silent (pid %d) did not become ready within 300 ms", &pid), 1, "%s",
                     err);
        cr_assert(strstr(err, "did not become ready within 300 ms"), "%s", err);
        cr_assert_eq(hs.n, 0);
        assert_reaped(pid);
}

Test(helper, timeout_in_whole_seconds_reads_as_seconds) {
        Helpers hs = HELPERS_INIT;

        cr_assert_eq(start_sh(&hs, "sh-silent", "exec sleep 30", 1000, NULL, 0, NULL), -ETIMEDOUT);
        cr_assert(strstr(err, "did not become ready within 1 s"), "%s", err);
}

Test(helper, closing_the_readiness_fd_alive_is_not_ready) {
        Helpers hs = HELPERS_INIT;
        pid_t pid;
        int r;

        r = start_sh(&hs, "sh-close", "exec 3>&-; exec sleep 30", 5000, NULL, 0, NULL);
        cr_assert_eq(r, -EPIPE, "%d %s", r, err);
        cr_assert_eq(sscanf(err, "the test helper sh-close (pid %d) closed its readiness fd before it was ready", &pid), 1,
                     "%s", err);
        cr_assert(strstr(err, "closed its readiness fd before it was ready (a hint)"), "%s", err);
        assert_reaped(pid);
}

Test(helper, exit_while_a_child_holds_the_readiness_fd) {
        Helpers hs = HELPERS_INIT;
        uint64_t t0 = now_msec();
        int r;

        /* Its child keeps fd 3 open: only the pidfd shows the end. */
        r = start_sh(&hs, "sh-orphan", "sleep 3 & exit 4", 10000, NULL, 0, NULL);
        cr_assert_eq(r, -EPIPE, "%d %s", r, err);
        cr_assert(strstr(err, ") exited with status 4 before it was ready"), "%s", err);
        cr_assert_lt(now_msec() - t0, 2000);
}

Test(helper, death_after_ready_is_one_line) {
        Helpers hs = HELPERS_INIT;
        char line[512], want[512];
        pid_t pid;

        /* The byte, then the exit at once: readiness counts. */
        cr_assert_eq(start_sh(&hs, "sh-late", "printf 1 >&3; exit 5", 5000, NULL, 0, &pid), 0, "%s", err);
        wait_for_a_death(&hs);
        cr_assert_eq(WITH_LINE(line, helpers_reap_dead(&hs, &line_)), 1);
        snprintf(want, sizeof(want), "the test helper sh-late (pid %d) exited with status 5: the Domain fails", (int) pid);
        cr_assert_str_eq(line, want);
        cr_assert_eq(hs.n, 0);
        assert_reaped(pid);
        cr_assert_eq(WITH_LINE(line, helpers_reap_dead(&hs, &line_)), 0);
}

/*
 * The byte and the end both there when the runner looks: readiness counts,
 * the death comes after. The helper stops its parent (this test) before
 * the byte, exits, and has it continued 300 ms later.
 */
Test(helper, a_byte_before_the_end_counts_even_when_both_are_seen) {
        Helpers hs = HELPERS_INIT;
        char line[512];

        cr_assert_eq(start_sh(&hs, "sh-both", "kill -STOP $PPID; printf 1 >&3; (sleep 0.3; kill -CONT $PPID) & exit 6",
                              5000, NULL, 0, NULL),
                     0, "%s", err);
        wait_for_a_death(&hs);
        cr_assert_eq(WITH_LINE(line, helpers_reap_dead(&hs, &line_)), 1);
        cr_assert(strstr(line, ") exited with status 6: the Domain fails"), "%s", line);
}

Test(helper, the_dead_one_of_several_is_named) {
        Helpers hs = HELPERS_INIT;
        char line[512], want[512];
        pid_t a, b, c;

        cr_assert_eq(start_sh(&hs, "one", "printf 1 >&3; exec sleep 30", 5000, NULL, 0, &a), 0, "%s", err);
        cr_assert_eq(start_sh(&hs, "two", "printf 1 >&3; exec sleep 30", 5000, NULL, 0, &b), 0, "%s", err);
        cr_assert_eq(start_sh(&hs, "three", "printf 1 >&3; exec sleep 30", 5000, NULL, 0, &c), 0, "%s", err);
        cr_assert_eq(kill(b, SIGKILL), 0);
        wait_for_a_death(&hs);
        cr_assert_eq(WITH_LINE(line, helpers_reap_dead(&hs, &line_)), 1);
        snprintf(want, sizeof(want), "the test helper two (pid %d) was killed by signal 9 (SIGKILL): the Domain fails",
                 (int) b);
        cr_assert_str_eq(line, want);
        cr_assert_eq(hs.n, 2);
        cr_assert_eq(hs.helper[0].pid, a);
        cr_assert_eq(hs.helper[1].pid, c);
        cr_assert_eq(WITH_LINE(line, helpers_reap_dead(&hs, &line_)), 0);
        helpers_kill(&hs);
        assert_reaped(a);
        assert_reaped(c);
}

Test(helper, the_set_is_bounded) {
        Helpers hs = HELPERS_INIT;

        for (int i = 0; i < HELPERS_MAX; i++)
                cr_assert_eq(start_sh(&hs, "many", "printf 1 >&3; exec sleep 30", 5000, NULL, 0, NULL), 0, "%s", err);
        cr_assert_eq(start_sh(&hs, "many", "printf 1 >&3; exec sleep 30", 5000, NULL, 0, NULL), -ENOSPC);
        cr_assert_eq(hs.n, HELPERS_MAX);
        helpers_kill(&hs);
}

Test(helper, timeouts_are_bounded) {
        Helpers hs = HELPERS_INIT;

        cr_assert_eq(start_sh(&hs, "t", "printf 1 >&3", 0, NULL, 0, NULL), -EINVAL);
        cr_assert_eq(start_sh(&hs, "t", "printf 1 >&3", HELPER_READY_TIMEOUT_MAX_MS + 1, NULL, 0, NULL), -EINVAL);
        cr_assert_eq(start_sh(&hs, "t", "printf 1 >&3", 5000, NULL, HELPER_PASS_FDS_MAX + 1, NULL), -EINVAL);
        cr_assert_eq(hs.n, 0);
}

/* The supervisor's own exit path: the set as a _cleanup_ variable. */
Test(helper, cleanup_kills_on_scope_exit) {
        pid_t pid;

        {
                _cleanup_(helpers_kill) Helpers hs = HELPERS_INIT;
                cr_assert_eq(start_sh(&hs, "scoped", "printf 1 >&3; exec sleep 30", 5000, NULL, 0, &pid), 0, "%s", err);
                cr_assert_eq(kill(pid, 0), 0);
        }
        assert_reaped(pid);
}

/* A failed step of the start is reported as the helper death that caused it (issue 18 item 4). */
Test(helper, death_during_the_start_is_named) {
        Helpers hs = HELPERS_INIT;
        char line[512] = "";
        pid_t pid = 0;

        cr_assert_eq(start_sh(&hs, "sh-net", "printf 1 >&3; exec sleep 30", 5000, NULL, 0, &pid), 0, "%s", err);
        /* Alive: 0 after the wait, and the helper stays. */
        cr_assert_eq(WITH_LINE(line, helpers_died_in_start(&hs, 10, &line_)), 0);
        cr_assert_eq(hs.n, 1);
        cr_assert_eq(kill(pid, SIGKILL), 0);
        cr_assert_eq(WITH_LINE(line, helpers_died_in_start(&hs, 5000, &line_)), 1);
        char want[256];
        snprintf(want, sizeof(want), "sh-net died while the Domain started: the test helper sh-net (pid %d) was killed by signal 9 (SIGKILL)",
                 (int) pid);
        cr_assert_str_eq(line, want);
        cr_assert_eq(hs.n, 0);
        assert_reaped(pid);
}
