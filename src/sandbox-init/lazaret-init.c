/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-init: PID 1 of every Lazaret sandbox. Sessions are started next to
 * it with `runsc exec`; their orphans are re-parented here and reaped, so no
 * zombie outlives its session. It exits on SIGTERM, SIGINT or SIGHUP, which
 * stops the container. Statically linked: it must not depend on the image.
 *
 * With --attest ALLOWED DENIED PORT (the coordinator always passes it),
 * followed for a profile with host rules by RESOLVER NAME-ALLOWED
 * NAME-DENIED UNBOUND BOUND (the name canaries, which replace the allowed
 * address canary: netprobe.h), its
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
 * Through `runsc exec` too, --forget-mailbox SESSION-ID... looks up, and so
 * makes gVisor drop, the mailbox names the coordinator removed on the host
 * when those sessions ended (their bell, result and credential): gVisor
 * keeps a name the host removed, and the tmpfs inode behind it, until a
 * lookup inside finds it gone. Exit status 0; an ID that is not 32
 * lowercase hex digits is refused (2) before anything is looked up.
 *
 * When its standard input is a pipe, that pipe is the host-edit relay's
 * channel (spec section 4.6): init keeps it across the attestation's
 * redirection and hands it to a child that runs the relay
 * (watch-relay.h) for as long as the pipe stays open. A relay that dies
 * (a `kill -9 -1` inside ends it too) is started again, up to
 * RELAY_RESTARTS_MAX times. A last argument --judged-relay says that the
 * channel's source is the workspace view, which leaves out the echoes of
 * the sandbox's own changes itself: the relay then watches nothing inside.
 *
 * Run as FSMON_HOOK_FILE (a symbolic link to it in the control directory),
 * it is git's fsmonitor hook (fsmonitor-hook.h): git inside runs it for
 * repositories in /workspace, and it answers from the workspace view's
 * journal.
 *
 * A workspace that git names by its host path (a linked worktree's
 * registration, a submodule's core.worktree) gets that path as a symbolic
 * link to /workspace, before anything else: the control directory's
 * workspace-path holds it (bundle.c), and the git dir view is already
 * mounted at its own host path. Where that cannot be made, init ends at
 * once with one line on standard error (link_host_path()), which the
 * supervisor reports as the launch's failure.
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

#include "escalation-proto.h"
#include "fsmonitor-hook.h"
#include "fsmonitor-proto.h"
#include "netprobe.h"
#include "parse-util.h"
#include "session-kill.h"
#include "config.h"
#include "view-policy.h"
#include "watch-relay.h"

#define WORKSPACE_PATH_FILE "/run/lazaret/" LAZARET_WORKSPACE_PATH_FILE

/*
 * The workspace's host path, as a symbolic link to /workspace: its parents
 * made (0755). Already there: the link of an earlier start (a persistent
 * directory), or an empty directory, which gives way; anything else (a
 * file, a directory with entries, another link: from the image, a
 * persistent directory or a volume) is refused, and so is a path inside
 * /workspace: git inside would then resolve the registration's gitdir and
 * a submodule's core.worktree elsewhere, and a `git worktree prune` could
 * drop the workspace's own registration on the host. 0, or -1 after one
 * line on standard error, which the supervisor reports as the launch's
 * failure (it begins with "lazaret-init: ").
 */
static int link_host_path(void) {
        static const char *const what_to_do =
                "git inside needs it as a symbolic link to " SANDBOX_WORKSPACE "; remove it from the image (or reset "
                "the persistent directory that holds it: lazaretctl state reset), or launch from a checkout at "
                "another path";
        char path[4097], target[sizeof(SANDBOX_WORKSPACE)];
        struct stat st;
        ssize_t n;
        int fd, e;

        fd = open(WORKSPACE_PATH_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return 0;       /* not a linked workspace */
        n = read(fd, path, sizeof(path) - 1);
        close(fd);
        if (n <= 1 || path[0] != '/' || path[n - 1] != '\n' || memchr(path, 0, (size_t) n) || strstr(path, "/../") ||
            strstr(path, "/./")) {
                fprintf(stderr, "lazaret-init: %s is malformed; git inside cannot find the workspace by its host path\n",
                        WORKSPACE_PATH_FILE);
                return -1;
        }
        path[n - 1] = 0;
        if (strcmp(path, SANDBOX_WORKSPACE) == 0)
                return 0;       /* the host path is /workspace itself */
        if (strncmp(path, SANDBOX_WORKSPACE "/", strlen(SANDBOX_WORKSPACE) + 1) == 0) {
                fprintf(stderr, "lazaret-init: the workspace's host path %s lies inside %s, where the sandbox sees the "
                        "workspace itself; launch from a checkout at another path\n", path, SANDBOX_WORKSPACE);
                return -1;
        }
        for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                (void) mkdir(path, 0755);
                *s = '/';
        }
        if (symlink(SANDBOX_WORKSPACE, path) == 0)
                return 0;
        e = errno;
        if (e == EEXIST && lstat(path, &st) == 0) {
                if (S_ISLNK(st.st_mode)) {
                        n = readlink(path, target, sizeof(target));
                        if (n == (ssize_t) strlen(SANDBOX_WORKSPACE) && memcmp(target, SANDBOX_WORKSPACE, (size_t) n) == 0)
                                return 0;       /* from an earlier start, in a persistent directory */
                }
                if (S_ISDIR(st.st_mode) && rmdir(path) == 0 && symlink(SANDBOX_WORKSPACE, path) == 0)
                        return 0;       /* an empty directory gave way */
                fprintf(stderr, "lazaret-init: the sandbox already has %s at %s, the workspace's host path; %s\n",
                        S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory with entries" :
                        "a file", path, what_to_do);
                return -1;
        }
        fprintf(stderr, "lazaret-init: cannot make %s, the workspace's host path, in the sandbox (%s); %s\n", path,
                strerror(e), what_to_do);
        return -1;
}

/* argv: ALLOWED DENIED PORT, and with n == 8 RESOLVER NAME-ALLOWED NAME-DENIED UNBOUND BOUND. */
static int attest(char *argv[], int n) {
        NetprobeNames names = {};
        int port, fd, r;

        if (parse_int(argv[2], 1, 65535, &port) < 0)
                return -EINVAL;
        if (n == 8)
                names = (NetprobeNames) { .resolver = argv[3], .allowed = argv[4], .denied = argv[5], .unbound = argv[6],
                                          .bound = argv[7] };
        r = netprobe_report(stdout, argv[0], argv[1], port, n == 8 ? &names : NULL);
        fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (int i = 0; i < 3; i++)
                if (dup2(fd, i) < 0)
                        r = -errno;
        close(fd);
        return r;
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
static pid_t start_relay(int channel, bool judged) {
        sigset_t none;
        pid_t pid;

        if (channel < 0)
                return 0;
        pid = fork();
        if (pid == 0) {
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                (void) prctl(PR_SET_NAME, "lazaret-relay");
                _exit(watch_relay_run(SANDBOX_WORKSPACE, channel, judged) < 0);
        }
        return pid > 0 ? pid : 0;
}

static bool is_session_id(const char *s) {
        size_t n = 0;

        for (; s[n]; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == ESC_ID_LEN;
}

static int forget_mailbox(char *const *ids) {
        static const char *const names[][2] = {
                { ESC_RESULTS_DIR, ESC_BELL_SUFFIX },
                { ESC_RESULTS_DIR, ESC_RESULT_SUFFIX },
                { ESC_TRUST_DIR, ESC_CRED_SUFFIX },
        };
        char path[256];
        struct stat st;

        for (char *const *id = ids; *id; id++)
                if (!is_session_id(*id))
                        return 2;
        for (char *const *id = ids; *id; id++)
                for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                        snprintf(path, sizeof(path), ESC_MAILBOX_SANDBOX "/%s/%s%s", names[i][0], *id, names[i][1]);
                        (void) lstat(path, &st);        /* ENOENT is the point */
                }
        return 0;
}

int main(int argc, char *argv[]) {
        sigset_t set;
        unsigned restarts = 0;
        pid_t relay, pid;
        int sig, channel, status;
        bool judged = false;
        const char *self = argc > 0 ? strrchr(argv[0], '/') : NULL;

        /* git's fsmonitor hook (fsmonitor-hook.h): init under that name, which git runs without a shell. */
        if (argc > 0 && strcmp(self ? self + 1 : argv[0], FSMON_HOOK_FILE) == 0)
                return fsmonitor_hook(argc, argv);
        if (argc == 3 && strcmp(argv[1], "--kill-session") == 0) {
                int sid;

                /* Session 1 is init's own. */
                if (parse_int(argv[2], 2, INT32_MAX, &sid) < 0)
                        return 2;
                return session_kill("/proc", sid) < 0;
        }
        if (argc >= 3 && strcmp(argv[1], "--forget-mailbox") == 0)
                return forget_mailbox(argv + 2);
        if (getpid() != 1)
                return 1;

        sigfillset(&set);
        sigprocmask(SIG_BLOCK, &set, NULL);
        channel = take_channel();
        /* Before the attestation: a sandbox whose workspace git cannot find is never published. */
        if (link_host_path() < 0)
                return 1;

        /* A probe that cannot report is seen by the supervisor, which then
         * never publishes this sandbox: nothing more to do about it here.
         * Bad arguments end the container at once (status 2). */
        if (argc > 1 && strcmp(argv[argc - 1], "--judged-relay") == 0) {
                judged = true;
                argc--;
        }
        if ((argc == 5 || argc == 10) && strcmp(argv[1], "--attest") == 0) {
                if (attest(argv + 2, argc - 2) == -EINVAL)
                        return 2;
        } else if (argc != 1)
                return 2;
        relay = start_relay(channel, judged);

        for (;;) {
                if (sigwait(&set, &sig) != 0)
                        continue;
                if (sig == SIGCHLD) {
                        while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
                                /* Exit status 0: the channel reached EOF, the host watcher is gone. */
                                if (pid == relay && !(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
                                    restarts++ < RELAY_RESTARTS_MAX)
                                        relay = start_relay(channel, judged);
                        continue;
                }
                if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
                        return 0;
        }
}
