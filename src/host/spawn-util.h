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
 *   - optionally a hook that runs last before exec; it returns 0 or a
 *     negative errno, which fails the child as below.
 * A child that cannot set itself up, or whose exec fails, tells its parent
 * why: it writes its errno to a pipe that is O_CLOEXEC (so a successful
 * exec closes it with nothing written), then exits 126 (setup) or 127
 * (exec), as bubblewrap and systemd report a child's setup failure.
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

/*
 * Starts the program and waits until it has exec'd: the child's setup
 * errno is returned (-ENOENT for a missing program, -EACCES, ...), the
 * child already reaped. *ret_pidfd (optional) is a pidfd for it (O_CLOEXEC).
 * Not for a child_hook that waits for its parent (userns_child_hook()):
 * that one needs spawn_async().
 */
int spawn(const SpawnOptions *o, pid_t *ret_pid, int *ret_pidfd);

/*
 * Starts the program and returns at once. *ret_error_fd (optional,
 * O_CLOEXEC) is the read end of the child's error pipe, for
 * spawn_read_error() once the caller has done its part of the hook's
 * handshake, or once the child has ended.
 */
int spawn_async(const SpawnOptions *o, pid_t *ret_pid, int *ret_pidfd, int *ret_error_fd);

/*
 * Reads a child's error pipe: 0 when its exec succeeded (nothing written,
 * closed), its setup errno negated when it failed, -EAGAIN on a
 * non-blocking fd while it is still setting up, -EIO for anything else.
 */
int spawn_read_error(int fd);

/*
 * Runs argv (argv[0] absolute) with envp (NULL: ours) in cwd (NULL: ours),
 * stdin and stderr on /dev/null, and collects its stdout (at most max bytes,
 * else -EFBIG) into *ret. Returns its exit status as
 * spawn_status_from_siginfo() does, or a negative errno.
 */
int spawn_output(char *const *argv, char *const *envp, const char *cwd, size_t max, char **ret);
/* The same, for output that may hold NUL bytes: its length in *ret_len (optional). */
int spawn_output_len(char *const *argv, char *const *envp, const char *cwd, size_t max, char **ret, size_t *ret_len);

/* Exit status as a shell reports it: the code, or 128+N for signal N. */
int spawn_status_from_siginfo(int code, int status);
