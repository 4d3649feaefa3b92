/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-init: PID 1 of every Lazaret sandbox. Sessions are started next to
 * it with `runsc exec`; their orphans are re-parented here and reaped, so no
 * zombie outlives its session. It exits on SIGTERM, SIGINT or SIGHUP, which
 * stops the container. Statically linked: it must not depend on the image.
 *
 * With --attest ALLOWED DENIED PORT (the coordinator always passes it) its
 * first act is the network attestation's probe: the report goes to its
 * standard output, a pipe the Runtime Supervisor reads, and then standard
 * input, output and error are pointed at /dev/null, so that the sandbox
 * holds no end of the supervisor's pipe afterwards. Running the probe here
 * rather than through `runsc exec` spares a whole runsc start on every
 * cold start, and the probe runs while runsc run is still returning.
 *
 * Not as PID 1 but through `runsc exec`, --kill-session SID ends a Client
 * Session inside: SIGKILL to every process of session SID (the session
 * command's inner PID), for a session whose `runsc exec` died on the host
 * or that is being closed. Exit status 0 when none is left, 1 otherwise.
 *
 *
 * Through `runsc exec` too, --exec COMMAND [ARG...] starts every Client
 * Session's command: it refuses FIFOs for the session's processes
 * (fifo-filter.h) and executes COMMAND, looked up in PATH, in its place, so
 * the session's inner PID is the command's. A command that cannot be
 * executed is reported as a shell would, with status 127 (not found) or 126.
 *
 * When its standard input is a pipe, that pipe is the host-edit relay's
 * channel (spec section 4.6): init keeps it across the attestation's
 * redirection and hands it to a child that runs the relay
 * (watch-relay.h) for as long as the pipe stays open. A relay that dies
 * (a `kill -9 -1` inside ends it too) is started again, up to
 * RELAY_RESTARTS_MAX times.
 *
 * A workspace that git names by its host path (a linked worktree's
 * registration, a submodule's core.worktree) gets that path as a symbolic
 * link to /workspace, before anything else: the control directory's
 * workspace-path holds it (bundle.c), and the git dir view is already
 * mounted at its own host path.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fifo-filter.h"
#include "netprobe.h"
#include "parse-util.h"
#include "session-kill.h"
#include "config.h"
#include "view-policy.h"
#include "watch-relay.h"

#define WORKSPACE_PATH_FILE "/run/lazaret/" LAZARET_WORKSPACE_PATH_FILE

/* The workspace's host path, as a symbolic link to /workspace: its parents made (0755), nothing replaced. */
static void link_host_path(void) {
        char path[4097], target[sizeof(SANDBOX_WORKSPACE)];
        ssize_t n;
        int fd;

        fd = open(WORKSPACE_PATH_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        n = read(fd, path, sizeof(path) - 1);
        close(fd);
        if (n <= 1 || path[0] != '/' || path[n - 1] != '\n' || memchr(path, 0, (size_t) n) || strstr(path, "/../") ||
            strstr(path, "/./")) {
                fprintf(stderr, "lazaret-init: %s is malformed; git inside cannot find the workspace by its host path\n",
                        WORKSPACE_PATH_FILE);
                return;
        }
        path[n - 1] = 0;
        for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                (void) mkdir(path, 0755);
                *s = '/';
        }
        if (symlink(SANDBOX_WORKSPACE, path) == 0)
                return;
        int e = errno;
        n = readlink(path, target, sizeof(target));
        if (n == (ssize_t) strlen(SANDBOX_WORKSPACE) && memcmp(target, SANDBOX_WORKSPACE, (size_t) n) == 0)
                return;         /* from an earlier start, in a persistent directory */
        fprintf(stderr, "lazaret-init: cannot link %s to %s (%s); git inside cannot find the workspace by its host path\n",
                path, SANDBOX_WORKSPACE, strerror(e));
}

static int attest(char *argv[]) {
        int port, fd, r;

        if (parse_int(argv[2], 1, 65535, &port) < 0)
                return -EINVAL;
        r = netprobe_report(stdout, argv[0], argv[1], port);
        fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (int i = 0; i < 3; i++)
                if (dup2(fd, i) < 0)
                        r = -errno;
        close(fd);
        return r;
}

static int exec_session(char *argv[]) {
        int r;

        /* Fail closed: no session runs without the filter. */
        r = fifo_filter_install();
        if (r < 0) {
                fprintf(stderr, "%s could not be started in the sandbox (cannot install its seccomp filter: %s)\n", argv[0],
                        strerror(-r));
                return 126;
        }
        execvp(argv[0], argv);
        r = errno;
        fprintf(stderr, "%s could not be started in the sandbox (%s)\n", argv[0], strerror(r));
        return r == ENOENT ? 127 : 126;
}

/* The relay's channel, taken from standard input before it goes to /dev/null; -EBADF without one. */
static int take_channel(void) {
        struct stat st;

        if (fstat(STDIN_FILENO, &st) < 0 || !S_ISFIFO(st.st_mode))
                return -EBADF;
        return fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
}

#define RELAY_RESTARTS_MAX 64

/* The relay runs in a child of its own, with the signals init blocked back
 * to normal; its PID, or 0. Init keeps its copy of the channel for a restart. */
static pid_t start_relay(int channel) {
        sigset_t none;
        pid_t pid;

        if (channel < 0)
                return 0;
        pid = fork();
        if (pid == 0) {
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                (void) prctl(PR_SET_NAME, "lazaret-relay");
                _exit(watch_relay_run(SANDBOX_WORKSPACE, channel) < 0);
        }
        return pid > 0 ? pid : 0;
}

int main(int argc, char *argv[]) {
        sigset_t set;
        unsigned restarts = 0;
        pid_t relay, pid;
        int sig, channel, status;

        if (argc == 3 && strcmp(argv[1], "--kill-session") == 0) {
                int sid;

                /* Session 1 is init's own. */
                if (parse_int(argv[2], 2, INT32_MAX, &sid) < 0)
                        return 2;
                return session_kill("/proc", sid) < 0;
        }
        if (argc >= 3 && strcmp(argv[1], "--exec") == 0)
                return exec_session(argv + 2);
        if (getpid() != 1)
                return 1;

        sigfillset(&set);
        sigprocmask(SIG_BLOCK, &set, NULL);
        channel = take_channel();
        link_host_path();

        /* A probe that cannot report is seen by the supervisor, which then
         * never publishes this sandbox: nothing more to do about it here.
         * Bad arguments end the container at once (status 2). */
        if (argc == 5 && strcmp(argv[1], "--attest") == 0) {
                if (attest(argv + 2) == -EINVAL)
                        return 2;
        } else if (argc != 1)
                return 2;
        relay = start_relay(channel);

        for (;;) {
                if (sigwait(&set, &sig) != 0)
                        continue;
                if (sig == SIGCHLD) {
                        while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
                                /* Exit status 0: the channel reached EOF, the host watcher is gone. */
                                if (pid == relay && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
                                    restarts++ < RELAY_RESTARTS_MAX)
                                        relay = start_relay(channel);
                        continue;
                }
                if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
                        return 0;
        }
}
