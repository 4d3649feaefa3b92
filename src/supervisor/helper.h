/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * Supervised helpers: the one way the Runtime Supervisor starts a helper
 * process (slirp4netns, the workspace view, lazaret-watch, the set-ID
 * responder, fuse-overlayfs: each one more HelperSpec and one more
 * helper_start()).
 *
 * helper_start() runs argv through spawn() (signals reset, no
 * NOTIFY_SOCKET, only the fds named, SIGKILL when the supervisor dies),
 * with the write end of a readiness pipe as fd HELPER_READY_FD and
 * pass_fds as fd HELPER_FIRST_PASS_FD and on. The helper writes one byte
 * (any byte) there when it is ready. helper_start() returns once that byte
 * came. If the pipe reaches EOF first (the helper died, or let go of the
 * fd), or the timeout passes, it kills and reaps the helper, and err says
 * which, with the helper's exit status. A helper that became ready stays
 * in the set with its pidfd.
 *
 * The supervisor's wait loop polls helpers_pollfds(). helpers_reap_dead()
 * reaps a helper that ended and puts its death in one line for FAILED.
 * helpers_kill() kills and reaps every helper left (like crun's
 * cleanup_pid). It is the set's _cleanup_ on every exit path; a supervisor
 * killed outright takes its helpers along through PR_SET_PDEATHSIG.
 *
 * After the supervisor's seccomp allowlist is loaded, only poll, waitid,
 * pidfd_send_signal and close are used (helpers_pollfds(),
 * helpers_reap_dead(), helpers_kill()).
 */

#define HELPER_READY_FD 3
#define HELPER_FIRST_PASS_FD 4
#define HELPERS_MAX 40        /* up to 32 fuse-overlayfs (persistent_dirs), the responder, slirp4netns, the view or lazaret-watch */
#define HELPER_PASS_FDS_MAX 16
#define HELPER_READY_TIMEOUT_MAX_MS 60000u

typedef struct HelperSpec {
        const char *name;               /* "slirp4netns": names it in every message */
        const char *role;               /* "the network helper": what it is to the Domain */
        const char *death_means;        /* what its death after readiness does to the Domain */
        const char *not_ready_hint;     /* optional: the likely cause when it ends before readiness */
        char *const *argv;              /* argv[0]: absolute path */
        const int *pass_fds;            /* fd HELPER_FIRST_PASS_FD + i in the helper; still the caller's */
        size_t n_pass_fds;
        unsigned ready_timeout_ms;      /* 1 to HELPER_READY_TIMEOUT_MAX_MS */
        bool keep_stderr;               /* its stderr is the supervisor's (the Domain's log), not /dev/null */
        bool ready_at_exec;             /* ready once it has exec'd, no byte awaited (ready_timeout_ms unused):
                                         * fuse-overlayfs on a FUSE mount the supervisor made, whose
                                         * requests wait for it meanwhile */
} HelperSpec;

typedef struct Helper {
        pid_t pid;
        int pidfd;
        char name[64];
        char role[64];
        char death_means[256];
} Helper;

typedef struct Helpers {
        Helper helper[HELPERS_MAX];
        size_t n;
} Helpers;

#define HELPERS_INIT {}

/* 0 once the helper is ready (*ret_pid, optional, its PID); < 0 with one line in *ret_error. */
int helper_start(Helpers *hs, const HelperSpec *spec, pid_t *ret_pid, char **ret_error);

/* One POLLIN entry per helper's pidfd in p (room for n); returns how many. */
size_t helpers_pollfds(const Helpers *hs, struct pollfd *p, size_t n);

/* 1 if a helper has ended: reaped, dropped from the set, its death in *ret_line;
 * 0 if every helper runs; < 0 if one could not be asked. Never blocks. */
int helpers_reap_dead(Helpers *hs, char **ret_line);

/*
 * For a step of the start that failed: 1 if a helper has ended (waiting up
 * to wait_ms for one to), reaped and dropped, with "NAME died while the
 * Domain started: ROLE NAME (pid N) was killed by signal 9 (SIGKILL)" in
 * *ret_line, so that the failure is reported as the death that caused it;
 * 0 if every helper still runs; < 0 if one could not be asked.
 */
int helpers_died_in_start(Helpers *hs, unsigned wait_ms, char **ret_line);

/* Kills and reaps every helper in the set; the set is empty afterwards. */
void helpers_kill(Helpers *hs);
