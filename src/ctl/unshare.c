/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl unshare -- CMD [ARG...]: runs CMD in a new user namespace mapped
 * exactly like every Domain's (ns 0 -> the user, ns 1..65536 -> the user's
 * subordinate range), as root of that namespace, in the current directory.
 * There, files the sandbox chowned to subordinate IDs can be changed and
 * removed. Only the user namespace is new: CMD sees the host's files,
 * network and processes, with no more authority than the user has over
 * their own subordinate IDs.
 *
 * The maps are written by the setuid newuidmap/newgidmap, run as children
 * while the new child waits, and read back from the kernel before CMD runs
 * (SR-12). lazaretctl blocks here: it is a client, not an event loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctl.h"
#include "fs-util.h"
#include "macro.h"
#include "path-util.h"
#include "spawn-util.h"
#include "strv.h"
#include "subid.h"
#include "unshare.h"

/* Where the child finds its ends of the synchronisation pipes. */
#define CHILD_SYNC_FD 3
#define CHILD_GO_FD 4

static volatile sig_atomic_t child_pid = 0;

static void forward_signal(int sig) {
        if (child_pid > 0)
                (void) kill((pid_t) child_pid, sig);
}

/* CMD as an absolute path: as given when it has a '/', else the first match on $PATH. */
static int resolve_command(const char *cmd, char **ret) {
        const char *path;

        if (strchr(cmd, '/')) {
                char *p;
                if (path_is_absolute(cmd))
                        p = strdup(cmd);
                else if (arg_host.cwd)
                        p = path_join(arg_host.cwd, cmd);
                else
                        return -arg_host.cwd_errno;
                if (!p)
                        return -ENOMEM;
                if (access(p, X_OK) < 0) {
                        int r = -errno;
                        free(p);
                        return r;
                }
                *ret = p;
                return 0;
        }
        path = getenv("PATH");
        if (isempty(path))
                path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *d = path; *d;) {
                const char *end = strchrnul(d, ':');
                _cleanup_free_ char *dir = strndup(d, end - d), *p = NULL;

                if (!dir)
                        return -ENOMEM;
                /* Only absolute entries: an empty or relative one would depend on where we are. */
                if (path_is_absolute(dir)) {
                        p = path_join(dir, cmd);
                        if (!p)
                                return -ENOMEM;
                        if (access(p, X_OK) == 0) {
                                *ret = TAKE_PTR(p);
                                return 0;
                        }
                }
                d = *end ? end + 1 : end;
        }
        return -ENOENT;
}

/* newuidmap/newgidmap PID 0 ID 1 1 START 65536, waited for. Its messages and ours go to stderr, unless quiet. */
static int run_mapper(const char *tool, pid_t pid, uint32_t id, const SubidRange *range, bool quiet) {
        _cleanup_strv_free_ char **argv = NULL;
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        siginfo_t si = {};
        pid_t mapper;
        int r;

        r = subid_mapper_argv(tool, pid, id, range, &argv);
        if (r == -ENOENT && !quiet)
                fprintf(stderr, "lazaretctl unshare: %s is not installed; install the uidmap package.\n", tool);
        if (r < 0)
                return r;
        o.argv = argv;
        o.stdio[2] = quiet ? -EBADF : STDERR_FILENO;
        r = spawn(&o, &mapper, NULL);
        if (r < 0) {
                if (!quiet)
                        fprintf(stderr, "lazaretctl unshare: cannot start %s: %s\n", argv[0], strerror(-r));
                return r;
        }
        while (waitid(P_PID, mapper, &si, WEXITED) < 0)
                if (errno != EINTR)
                        return -errno;
        if (si.si_code != CLD_EXITED || si.si_status != 0) {
                if (!quiet)
                        fprintf(stderr, "lazaretctl unshare: %s failed (status %d); cannot map the user namespace "
                                "(under NoNewPrivileges=yes the setuid %s cannot work).\n",
                                tool, spawn_status_from_siginfo(si.si_code, si.si_status), tool);
                return -EPERM;
        }
        return 0;
}

/* The standard stream n, or -EBADF (then spawn() gives /dev/null) when it is closed. */
static int stdio_fd(int n) {
        return fcntl(n, F_GETFD) < 0 ? -EBADF : n;
}

/*
 * CMD, prog with argv[2..] as its arguments (its own argv[0] kept through a
 * copy: spawn() wants argv[0] absolute), started with the standard streams
 * we have; its hook unshares the user namespace, says so on sync_w and
 * waits on go_r for the maps we write (CHILD_SYNC_FD, CHILD_GO_FD).
 * Prints why spawning failed.
 */
static int start_child(const char *prog, int argc, char *argv[], int sync_w, int go_r, pid_t *ret_pid, int *ret_err_fd) {
        _cleanup_free_ char **v = calloc(argc, sizeof(char *));
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        int pass[2], r;

        if (!v)
                return -ENOMEM;
        pass[0] = sync_w;       /* fd 3 = CHILD_SYNC_FD */
        pass[1] = go_r;         /* fd 4 = CHILD_GO_FD */
        for (int i = 0; i < 3; i++)
                o.stdio[i] = stdio_fd(i);
        o.pass_fds = pass;
        o.n_pass_fds = 2;
        o.die_with_parent = true;
        o.child_hook = userns_child_hook;
        o.hook_userdata = &(UsernsHook) { .sync_fd = CHILD_SYNC_FD, .go_fd = CHILD_GO_FD };
        v[0] = (char *) prog;
        for (int i = 2; i < argc; i++)
                v[i - 1] = argv[i];
        o.argv = v;
        /* Not spawn(): the hook waits for the maps we write. */
        r = spawn_async(&o, ret_pid, NULL, ret_err_fd);
        if (r < 0)
                fprintf(stderr, "lazaretctl unshare: cannot start %s: %s\n", prog, strerror(-r));
        return r;
}

/*
 * The child's user namespace, once it says it has one on sync_r, mapped
 * like a sandbox's (0 the user, 1.. the subordinate ranges) and the maps
 * read back. Prints why it failed (the mappers say it themselves), unless
 * quiet.
 */
static int map_child(pid_t pid, int sync_r, const SubidRange *uids, const SubidRange *gids, bool quiet) {
        ssize_t k;
        char c;
        int r;

        do
                k = read(sync_r, &c, 1);
        while (k < 0 && errno == EINTR);
        if (k != 1 || c != 'u') {
                if (!quiet)
                        fprintf(stderr, "lazaretctl unshare: cannot create a user namespace (are unprivileged user "
                                "namespaces enabled?)\n");
                return -EPERM;
        }
        r = run_mapper("newuidmap", pid, getuid(), uids, quiet);
        if (r >= 0)
                r = run_mapper("newgidmap", pid, getgid(), gids, quiet);
        if (r < 0)
                return r;
        if (subid_map_check_pid(pid, "uid_map", getuid(), uids) < 0 ||
            subid_map_check_pid(pid, "gid_map", getgid(), gids) < 0) {
                if (quiet)
                        return -EPERM;
                fprintf(stderr, "lazaretctl unshare: the user namespace does not hold the expected mapping "
                        "(0 %u 1, 1 %u %u)\n", getuid(), uids->start, SUBID_COUNT);
                return -EPERM;
        }
        return 0;
}

/* The user's subordinate ranges, as the sandbox's map takes them; why says what is missing. */
static int pick_ranges(SubidRange *ret_uids, SubidRange *ret_gids, char **ret_why) {
        _cleanup_free_ char *user = NULL;
        int r;

        r = subid_user_name(getuid(), &user);
        if (r < 0 && r != -ESRCH)
                return r;
        return subid_pick_for_user(user, getuid(), ret_uids, ret_gids, ret_why);
}

int verb_unshare(int argc, char *argv[], const Config *config) {
        _cleanup_close_ int sync_r = -EBADF, sync_w = -EBADF, go_r = -EBADF, go_w = -EBADF, err_fd = -EBADF;
        _cleanup_free_ char *prog = NULL, *why = NULL;
        struct sigaction sa = { .sa_handler = forward_signal }, ign = { .sa_handler = SIG_IGN };
        SubidRange uids, gids;
        siginfo_t si = {};
        pid_t pid;
        int p[2], r;

        /* The verb table guarantees argv[1], the command. */
        r = resolve_command(argv[1], &prog);
        if (r < 0) {
                fprintf(stderr, "lazaretctl unshare: %s: %s\n", argv[1],
                        r == -ENOENT ? "command not found" : strerror(-r));
                return 127;
        }

        r = pick_ranges(&uids, &gids, &why);
        if (r < 0) {
                fprintf(stderr, "lazaretctl unshare: %s\n", why ?: strerror(-r));
                return r;
        }

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        sync_r = p[0];
        sync_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        go_r = p[0];
        go_w = p[1];

        /* Terminal signals reach CMD directly (same process group); others
         * sent to us are passed on. spawn() resets them all in the child. */
        (void) sigaction(SIGINT, &ign, NULL);
        (void) sigaction(SIGQUIT, &ign, NULL);
        (void) sigaction(SIGTERM, &sa, NULL);
        (void) sigaction(SIGHUP, &sa, NULL);

        r = start_child(prog, argc, argv, sync_w, go_r, &pid, &err_fd);
        if (r < 0)
                return r;
        child_pid = pid;
        sync_w = safe_close(sync_w);
        go_r = safe_close(go_r);

        r = map_child(pid, sync_r, &uids, &gids, false);
        if (r < 0)
                goto kill_child;
        if (write(go_w, "g", 1) != 1) {
                r = -errno;
                goto kill_child;
        }
        go_w = safe_close(go_w);
        /* Until CMD's exec: the child says why it could not get there
         * (and exits 126 or 127, which we return as a shell would). */
        r = spawn_read_error(err_fd);
        if (r < 0)
                fprintf(stderr, "lazaretctl unshare: cannot start %s: %s\n", prog, strerror(-r));

        while (waitid(P_PID, pid, &si, WEXITED) < 0)
                if (errno != EINTR)
                        return -errno;
        child_pid = 0;
        return spawn_status_from_siginfo(si.si_code, si.si_status);

kill_child:
        child_pid = 0;
        (void) kill(pid, SIGKILL);
        while (waitid(P_PID, pid, &si, WEXITED) < 0 && errno == EINTR)
                ;
        return r;
}

/* The user's subordinate ranges, as verb_unshare() picks them; quiet. */
/* The child of unshare_call(): root of the mapped namespace once its parent wrote the maps, then fn. */
static __attribute__((noreturn)) void call_child(UnshareFn fn, void *userdata, int sync_w, int go_r, int out_w) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

        /* Quiet: a failure here is the caller's to tell, once, when it falls back. */
        if (null < 0 || dup2(null, STDERR_FILENO) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(EXIT_FAILURE);
        if (userns_child_hook(&(UsernsHook) { .sync_fd = sync_w, .go_fd = go_r }) != 0)
                _exit(EXIT_FAILURE);
        _exit(fn(out_w, userdata) < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
}

int unshare_call(UnshareFn fn, void *userdata, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int sync_r = -EBADF, sync_w = -EBADF, go_r = -EBADF, go_w = -EBADF, out_r = -EBADF,
                            out_w = -EBADF;
        _cleanup_free_ char *buf = NULL;
        SubidRange uids, gids;
        siginfo_t si = {};
        size_t len = 0;
        pid_t pid;
        int p[2], r;

        r = pick_ranges(&uids, &gids, NULL);
        if (r < 0)
                return r;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        sync_r = p[0];
        sync_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        go_r = p[0];
        go_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        out_r = p[0];
        out_w = p[1];
        /* What we have buffered is ours to print, not the child's (it leaves with _exit()). */
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                sync_r = safe_close(sync_r);
                go_w = safe_close(go_w);
                out_r = safe_close(out_r);
                call_child(fn, userdata, sync_w, go_r, out_w);
        }
        sync_w = safe_close(sync_w);
        go_r = safe_close(go_r);
        out_w = safe_close(out_w);

        r = map_child(pid, sync_r, &uids, &gids, true);
        if (r >= 0 && write(go_w, "g", 1) != 1)
                r = -errno;
        go_w = safe_close(go_w);
        /* The child writes as long as it likes and ends; a child that never got its maps ends at go_w's close. */
        if (r >= 0)
                r = read_full_fd(out_r, max, &buf, &len);
        if (r < 0)
                (void) kill(pid, SIGKILL);
        while (waitid(P_PID, pid, &si, WEXITED) < 0)
                if (errno != EINTR)
                        return -errno;
        if (r < 0)
                return r;
        if (si.si_code != CLD_EXITED || si.si_status != EXIT_SUCCESS)
                return -EIO;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = len;
        return 0;
}
