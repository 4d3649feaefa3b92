/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Ending a session inside the sandbox (lazaret-init --kill-session). */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session-kill.h"

Test(session_kill, reads_the_session_after_the_last_parenthesis) {
        char state = 0;
        pid_t sid = 0;

        cr_assert_eq(proc_stat_session("42 (sh) S 1 42 42 34816 42 4194560 0\n", &state, &sid), 0);
        cr_assert_eq(state, 'S');
        cr_assert_eq(sid, 42);
        /* A command name with spaces and parentheses of its own. */
        cr_assert_eq(proc_stat_session("77 (a) b (c) d) R 42 77 42 0 -1 0\n", &state, &sid), 0);
        cr_assert_eq(state, 'R');
        cr_assert_eq(sid, 42);
        cr_assert_eq(proc_stat_session("9 (z) Z 42 9 42", &state, &sid), 0);
        cr_assert_eq(state, 'Z');
        cr_assert_eq(sid, 42);
}

Test(session_kill, refuses_what_is_not_a_stat_line) {
        static const char *const bad[] = {
                "",
                "42 sh S 1 42 42 0",            /* no parentheses */
                "42 (sh)S 1 42 42 0",
                "42 (sh) SS1 42 42 0",          /* a state of two letters */
                "42 (sh) S 1 42",               /* no session field */
                "42 (sh) S 1 42 -42 0",         /* a sign */
                "42 (sh) S 1 42 4x2 0",
                "42 (sh) S 1 42 99999999999 0", /* out of range */
                "42 (sh) S  1 42 42 0",         /* an empty field */
        };
        char state;
        pid_t sid;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_assert_eq(proc_stat_session(bad[i], &state, &sid), -EINVAL, "accepted \"%s\"", bad[i]);
}

/* A fake /proc: real children of ours listed under the session IDs we choose. */
static char dir[] = "/tmp/test-session-kill-XXXXXX";

static void fake_proc(pid_t pid, const char *comm, char state, pid_t sid) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%d", dir, (int) pid);
        cr_assert_eq(mkdir(path, 0700), 0);
        snprintf(path, sizeof(path), "%s/%d/stat", dir, (int) pid);
        f = fopen(path, "we");
        cr_assert_not_null(f);
        fprintf(f, "%d (%s) %c 1 %d %d 0 -1 0\n", (int) pid, comm, state, (int) pid, (int) sid);
        cr_assert_eq(fclose(f), 0);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        return remove(path);
}

static pid_t child(void) {
        pid_t pid = fork();

        cr_assert_geq(pid, 0);
        if (pid == 0) {
                pause();
                _exit(0);
        }
        return pid;
}

static bool killed(pid_t pid) {
        int status;

        cr_assert_eq(waitpid(pid, &status, 0), pid);
        return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

Test(session_kill, kills_the_session_and_nothing_else) {
        pid_t a = child(), b = child(), other = child();

        cr_assert_not_null(mkdtemp(dir));
        fake_proc(a, "sh", 'S', 4242);
        fake_proc(b, "sleep (x) 1", 'S', 4242);
        fake_proc(other, "keeper", 'S', 77);
        /* Not numbers, ourselves, a zombie of the session: left alone. */
        cr_assert_eq(mkdir(strcat(strcpy((char[256]) {}, dir), "/self"), 0700), 0);
        fake_proc(getpid(), "us", 'S', 4242);

        cr_assert_eq(session_kill(dir, 4242), 2);
        cr_assert(killed(a));
        cr_assert(killed(b));
        cr_assert_eq(kill(other, 0), 0, "a process of another session was killed");
        kill(other, SIGKILL);
        cr_assert(killed(other));
        cr_assert_eq(session_kill(dir, 999), 0);
        cr_assert_eq(session_kill("/nonexistent-proc", 4242), -ENOENT);
        cr_assert_eq(nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}
