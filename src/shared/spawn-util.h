/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * The one way Lazaret starts a program. The child gets:
 *   - an empty signal mask and every signal at its default disposition
 *     (the coordinator blocks SIGCHLD/SIGTERM/SIGINT and ignores SIGPIPE);
 *   - no NOTIFY_SOCKET, LISTEN_* or WATCHDOG_* variables: only the service's
 *     main process talks to the service manager;
 *   - stdio[0..2] as fds 0..2 (-EBADF: /dev/null), pass_fds[i] as fd 3+i,
 *     and no other fd;
 *   - optionally its own environment and working directory;
 *   - optionally its own session, a controlling terminal (stdin), and
 *     SIGKILL when its parent dies;
 *   - optionally a hook that runs last before exec; a hook returning
 *     non-zero ends the child with status 126.
 * A child that cannot set itself up exits 126, one whose exec fails 127.
 */
typedef struct SpawnOptions {
        char *const *argv;      /* argv[0]: absolute path */
        char *const *envp;      /* NULL: ours (less the variables above) */
        const char *cwd;        /* NULL: ours */
        int stdio[3];
        const int *pass_fds;
        size_t n_pass_fds;
        bool new_session;
        bool controlling_tty;
        bool die_with_parent;
        int (*child_hook)(void *userdata);
        void *hook_userdata;
} SpawnOptions;

#define SPAWN_OPTIONS_INIT { .stdio = { -EBADF, -EBADF, -EBADF } }

/* Starts the program; *ret_pidfd (optional) is a pidfd for it (O_CLOEXEC). */
int spawn(const SpawnOptions *o, pid_t *ret_pid, int *ret_pidfd);

/* Exit status as a shell reports it: the code, or 128+N for signal N. */
int spawn_status_from_siginfo(int code, int status);
