/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-supervisor: the Runtime Supervisor of one Domain.
 *
 * Started by the coordinator as root of a caller-configured user namespace
 * (0 -> the user, 1..65536 -> subordinate IDs), inside the Domain's sandbox
 * scope. In slirp4netns' order it
 *   1. acquires its resources: its own mount namespace, the set-ID seccomp
 *      filter (inherited by runsc and gVisor), the network (enforcement
 *      namespace, slirp4netns, links, the derived policy read back, the
 *      canaries and the deny link's witness: supervisor-net.c), the host-edit
 *      relay's source (the workspace view, or lazaret-watch without it;
 *      its pipe is the init's stdin), the runsc
 *      container (`runsc run --detach`) and an attached `runsc wait`; then
 *      judges the network probe the container's init reported and removes
 *      the canaries;
 *   2. enters its own sandbox: all capabilities dropped (bounding set too),
 *      NO_NEW_PRIVS;
 *   3. loads a libseccomp allowlist;
 *   4. reports MAILBOX (with the Escalation Mailbox's root directory, when
 *      the plan has one), NETWORK, then READY, on its control socket.
 * It then only waits: for the container to end (reported as EXITED), for
 * any supervised helper to end (FAILED, one line naming it; for
 * slirp4netns: network readiness withdrawn) or for the coordinator to close
 * the control socket (then it exits; the coordinator stops the scope, which
 * ends runsc and the sandbox). Whenever it exits, it kills and reaps the
 * helpers still running (helper.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>
#include <seccomp.h>

#include "cleanup.h"
#include "fs-util.h"
#include "harden.h"
#include "helper.h"
#include "macro.h"
#include "parse-util.h"
#include "resource-limits.h"
#include "path-util.h"
#include "runsc-output.h"
#include "setid-filter.h"
#include "setid-responder.h"
#include "spawn-util.h"
#include "supervisor-mounts.h"
#include "strv.h"
#include "supervisor-net.h"
#include "supervisor-overlay.h"
#include "supervisor-proto.h"
#include "util.h"

static int arg_control_fd = -EBADF;
static const char *arg_runsc, *arg_root, *arg_bundle, *arg_container, *arg_overlay;
static const char *arg_netns, *arg_slirp, *arg_slirp_api, *arg_policy, *arg_policy_digest, *arg_view;
/* lazaret-egress, in slirp4netns' place when the policy has host rules (spec 4.5, "Egress by name"). */
static const char *arg_egress;
static int arg_canary_port;
#if ENABLE_TEST_HOOKS
static bool arg_fault_deny_on_lo, arg_fault_no_name_canary;
#endif
static bool arg_directfs = true;
/* runsc --host-fifo=open: the Escalation Mailbox's doorbells are host FIFOs (spec section 5.6). */
static bool arg_host_fifo;
static uint64_t arg_overlay_size;
static char dcache_arg[64];

static void send_msg(const SupervisorMsg *msg) {
        (void) supervisor_msg_send(arg_control_fd, msg, -EBADF);
}

static void report_failed(const char *fmt, ...) _printf_(1, 2);
static void report_failed(const char *fmt, ...) {
        SupervisorMsg msg = { .type = SUPERVISOR_FAILED };
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(msg.reason, sizeof(msg.reason), fmt, ap);
        va_end(ap);
        send_msg(&msg);
}

/*
 * A step of the start failed with WHY: when a supervised helper died in
 * the meantime, its death is what failed (killing slirp4netns makes the
 * next route or the attestation fail), and it is named first.
 */
static void report_start_failed(Helpers *hs, const char *why) {
        _cleanup_free_ char *death = NULL;

        if (helpers_died_in_start(hs, 200, &death) > 0)
                report_failed("%s (then: %s)", death, why);
        else
                report_failed("%s", why);
}

/* The first line of a file holding needle, else its last non-empty line, if any. */
static void telling_line(const char *path, const char *needle, char *buf, size_t size) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[1024];
        size_t n;

        while (f && fgets(line, sizeof(line), f)) {
                if (needle && strstr(line, needle)) {
                        snprintf(buf, size, "%s", line);
                        break;
                }
                if (line[0] && line[0] != '\n')
                        snprintf(buf, size, "%s", line);
        }
        n = strlen(buf);
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = 0;
}

/*
 * Runs runsc with the common flags. Its stdin is in_fd (or /dev/null), its stdout
 * out_fd (or /dev/null) and its stderr a file: runsc hands them to the
 * sandbox's first process, and chowns them (to an ID other than 0 that
 * chown does nothing: the set-ID filter, spec C24). Only the init's stdout is a
 * pipe, which it lets go of after its report (lazaret-init.c), and the
 * init's stdin the host-edit relay's channel, which it keeps. Its messages go
 * to a log file in the bundle; the last line of the log, or of stderr for
 * errors before the log is open, is reported on failure. With wait_for_it
 * false it returns at once with the child's pid and pidfd.
 */
static int runsc(const char *verb, char *const *args, bool wait_for_it, int in_fd, int out_fd, pid_t *ret_pid, int *ret_pidfd,
                 char *err, size_t errlen) {
        _cleanup_free_ char *logpath = NULL, *errpath = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_close_ int errfd = -EBADF;
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        int status, r;
        pid_t pid;

        /* Grown as needed and checked at each step: no argument is dropped
         * or cut short, whatever the lengths of the paths. */
        if (asprintf(&logpath, "%s/runsc-%s.log", arg_bundle, verb) < 0 ||
            asprintf(&errpath, "%s/runsc-%s.stderr", arg_bundle, verb) < 0)
                return -ENOMEM;
        (void) unlink(logpath);

        if (strv_extend_strv(&argv, (char *[]) { (char *) arg_runsc, (char *) "--root", (char *) arg_root, NULL }) < 0 ||
            strv_extendf(&argv, "--log=%s", logpath) < 0 ||
            strv_extend_strv(&argv, (char *[]) { (char *) "--platform=systrap", (char *) "--network=sandbox",
                                                 (char *) "--ignore-cgroups", (char *) "--file-access-mounts=shared",
                                                 /* A socket bound in /workspace or a volume exists on the
                                                  * host too (without it gVisor keeps it in memory only). */
                                                 (char *) "--host-uds=create",
                                                 NULL }) < 0 ||
            strv_extendf(&argv, "--overlay2=%s", arg_overlay) < 0 ||
            strv_extendf(&argv, "--directfs=%s", arg_directfs ? "true" : "false") < 0 ||
            (arg_host_fifo && strv_extend(&argv, "--host-fifo=open") < 0) ||
            (dcache_arg[0] && strv_extend(&argv, dcache_arg) < 0) ||
            strv_extend(&argv, verb) < 0 ||
            strv_extend_strv(&argv, args) < 0)
                return -ENOMEM;

        /* A file, not a pipe: the sandbox keeps what runsc hands it. */
        errfd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        o.argv = argv;
        o.stdio[0] = in_fd;
        o.stdio[1] = out_fd;
        o.stdio[2] = errfd;
        o.die_with_parent = true;
        r = spawn(&o, &pid, wait_for_it ? NULL : ret_pidfd);
        if (r < 0)
                return r;
        if (!wait_for_it) {
                *ret_pid = pid;
                return 0;
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;

        /* The last non-empty line of the log says why; an error from
         * before runsc opened its log (an unknown flag) is on its stderr. */
        err[0] = 0;
        telling_line(errpath, "flag provided but not defined", err, errlen);
        if (!strstr(err, "flag provided but not defined")) {
                err[0] = 0;
                telling_line(logpath, NULL, err, errlen);
                if (!err[0])
                        telling_line(errpath, NULL, err, errlen);
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * What an older runsc says when it lacks a flag Lazaret relies on, turned
 * into one line that names the missing capability and the fix.
 */
static void explain_runsc_failure(const char *verb, const char *err) {
        const char *flag = strstr(err, "flag provided but not defined: -");

        if (flag) {
                char name[64];
                size_t n;

                flag += strlen("flag provided but not defined: -");
                n = strcspn(flag, " \t\n=");
                snprintf(name, sizeof(name), "%.*s", (int) (n < 40 ? n : 40), flag);
                report_failed("%s does not support --%s: Lazaret needs gVisor runsc 0.0~20240729 or newer "
                              "(see README.md, \"Supported runtimes\")", arg_runsc, name);
                return;
        }
        report_failed("runsc %s: %s", verb, *err ? err : "failed");
}

/*
 * The host side of the host-edit relay (spec section 4.6): lazaret-watch,
 * a supervised helper, watching the staged workspace and writing into
 * channel_w. Its stderr is ours, for the one line it writes when the
 * workspace has more directories than it may watch.
 */
static int start_watcher(Helpers *helpers, int channel_w, char **ret_error) {
        _cleanup_free_ char *exe = path_join(LIBEXECDIR, "lazaret-watch");
        _cleanup_close_ int ws = -EBADF;
        int r;

        if (!exe)
                return -ENOMEM;
        r = supmounts_open_workspace(arg_bundle, &ws, ret_error);
        if (r < 0)
                return r;
        return helper_start(helpers, &(HelperSpec) {
                                    .name = "lazaret-watch",
                                    .role = "the host-edit watcher",
                                    .death_means = "host edits no longer reach file watchers inside; the sandbox is stopped",
                                    .argv = (char *[]) { exe, NULL },
                                    .pass_fds = (int[]) { ws, channel_w },
                                    .n_pass_fds = 2,
                                    .ready_timeout_ms = 30000,
                                    .keep_stderr = true,
                            }, NULL, ret_error);
}

/*
 * The set-ID filter's responder (setid-responder.h), started before the
 * filter is loaded (its own chown and chmod on a State Anchor would
 * otherwise come back to it), with the file systems of the State Anchor's
 * overlays staged so far; it gets the listener over sock.
 */
static int start_setid_responder(Helpers *helpers, int sock, char **ret_error) {
        _cleanup_free_ char *exe = path_join(LIBEXECDIR, "lazaret-setid-responder");
        _cleanup_strv_free_ char **argv = NULL;
        const AnchorId *ids;
        size_t n = supoverlay_anchor_ids(&ids);

        if (!exe || strv_extend(&argv, exe) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char id[ANCHOR_ID_STRING_MAX];

                anchor_id_format(&ids[i], id);
                if (strv_extendf(&argv, "--anchor=%s", id) < 0)
                        return -ENOMEM;
        }
        return helper_start(helpers, &(HelperSpec) {
                                    .name = "lazaret-setid-responder",
                                    .role = "the set-ID filter's responder",
                                    .death_means = "chmod, chown and extended attributes of host files would wait for ever; "
                                                   "the sandbox is stopped",
                                    .argv = argv,
                                    .pass_fds = (int[]) { sock },
                                    .n_pass_fds = 1,
                                    .ready_timeout_ms = 10000,
                                    .keep_stderr = true,
                            }, NULL, ret_error);
}

/* SR-2: the set-ID filter, with its responder served from before runsc starts. */
static int load_setid_filter(Helpers *helpers, char **ret_error) {
        _cleanup_close_ int notify_fd = -EBADF;
        _cleanup_close_ int sock0 = -EBADF, sock1 = -EBADF;
        int sock[2], r;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0)
                return errorf(ret_error, -errno, "cannot create a socket pair: %m");
        sock0 = sock[0];
        sock1 = sock[1];
        r = start_setid_responder(helpers, sock1, ret_error);
        if (r < 0)
                return r;
        /* Before runsc, so that runsc, its gofer and the gVisor kernel are
         * all bound by it (filters are inherited and survive exec). */
        r = setid_filter_load(&notify_fd);
        if (r < 0)
                return errorf(ret_error, r, "cannot load the set-ID seccomp filter: %s", strerror(-r));
        /* Only the responder holds the listener: its death is seen (ENOSYS), not waited on. */
        r = setid_listener_send(sock0, notify_fd);
        if (r < 0)
                return errorf(ret_error, r, "cannot hand the set-ID filter's listener to its responder: %s", strerror(-r));
        return 0;
}

/*
 * SR-1: no other local user may reach the sandbox's control endpoint. It
 * must be a socket file inside our 0700 runsc root, and there must be no
 * abstract socket of this container, which every user of the network
 * namespace could connect to.
 */
static int check_control_socket(void) {
        _cleanup_(closedirp) DIR *d = opendir(arg_root);
        _cleanup_fclose_ FILE *f = NULL;
        char line[512];
        bool found = false;
        struct dirent *de;
        struct stat st;

        if (!d) {
                report_failed("cannot read the runsc root %s: %s", arg_root, strerror(errno));
                return -errno;
        }
        if (fstat(dirfd(d), &st) < 0 || (st.st_mode & 0077) != 0 || st.st_uid != getuid()) {
                report_failed("the runsc root %s is not private to its owner", arg_root);
                return -EPERM;
        }
        while ((de = readdir(d)))
                if (strstr(de->d_name, arg_container) && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                    S_ISSOCK(st.st_mode))
                        found = true;

        f = fopen("/proc/net/unix", "re");
        while (f && fgets(line, sizeof(line), f))
                if (strstr(line, " @") && strstr(line, arg_container)) {
                        report_failed("%s listens on an abstract control socket that every local user can reach: "
                                      "Lazaret needs gVisor runsc 0.0~20240729 or newer (see README.md, \"Supported runtimes\")",
                                      arg_runsc);
                        return -EPERM;
                }
        if (!found) {
                report_failed("%s created no control socket file in its root directory %s: Lazaret needs gVisor runsc "
                              "0.0~20240729 or newer (see README.md, \"Supported runtimes\")", arg_runsc, arg_root);
                return -EPERM;
        }
        return 0;
}

/*
 * runsc keeps host fds open for cached dentries: as many as the hard
 * RLIMIT_NOFILE allows (soft raised to it), a third of it for the cache.
 */
static void setup_files_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        rl.rlim_cur = rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max >= 3000)
                snprintf(dcache_arg, sizeof(dcache_arg), "--dcache=%llu",
                         (unsigned long long) (rl.rlim_max / 3 < 100000 ? rl.rlim_max / 3 : 100000));
}

/* Step 3: what waiting, reporting and exiting need, and nothing else
 * (exiting kills and reaps the helpers: pidfd_send_signal, waitid). */
#define SUPERVISOR_SYSCALLS(X) \
        X(read) X(write) X(close) X(poll) X(ppoll) X(recvfrom) X(sendto) X(recvmsg) X(sendmsg) \
        X(wait4) X(waitid) X(rt_sigaction) X(rt_sigprocmask) X(rt_sigreturn) X(restart_syscall) \
        X(kill) X(exit) X(exit_group) X(brk) X(mmap) X(munmap) X(mremap) X(madvise) X(futex) \
        X(clock_gettime) X(clock_nanosleep) X(nanosleep) X(getpid) X(getppid) X(fstat) X(newfstatat) \
        X(lseek) X(fcntl) X(getrandom) X(pidfd_send_signal)

static int load_seccomp(void) {
#define NR(name) SCMP_SYS(name),
        static const int allowed[] = { SUPERVISOR_SYSCALLS(NR) };
#undef NR

        return harden_load_allowlist(allowed, ELEMENTSOF(allowed));
}

/*
 * The root overlay's upper layer lives in one file that runsc creates in
 * the --overlay2 directory and unlinks at once: this runsc (20240729) has
 * no size= for it, and the file grows with every write to the root file
 * system. A tmpfs of the profile's root_size over that directory, in this
 * private mount namespace, bounds it: past it the sandbox's writes fail
 * with ENOSPC (gVisor turns the host's ENOSPC into the application's) and
 * the sandbox goes on. The directory on the host stays empty.
 */
static int bound_overlay(char **ret_error) {
        _cleanup_free_ char *data = NULL;
        const char *dir = arg_overlay + strlen("root:dir=");
        char size[LIMIT_STRING_MAX];

        if (arg_overlay_size == 0)
                return 0;
        if (asprintf(&data, "mode=0700,size=%" PRIu64, arg_overlay_size) < 0)
                return -ENOMEM;
        if (mount("lazaret-root-overlay", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, data) < 0)
                return errorf(ret_error, -errno, "cannot bound the root overlay at %s (tmpfs of %s): %s", dir,
                              limit_format_size(arg_overlay_size, size), strerror(errno));
        return 0;
}

/* Every option the coordinator always passes is there, the paths absolute. */
static int check_args(void) {
        if (!arg_netns || !arg_slirp || !arg_slirp_api || !arg_policy || !arg_policy_digest || arg_canary_port == 0 || arg_netns[0] != '/' ||
            arg_slirp[0] != '/')
                return -EINVAL;
        if (arg_control_fd < 3 || !arg_runsc || !arg_root || !arg_bundle || !arg_container ||
            !arg_overlay || arg_runsc[0] != '/' || !startswith(arg_overlay, "root:dir=/"))
                return -EINVAL;
        return 0;
}

static const struct option supervisor_options[] = {
        { "control-fd", required_argument, NULL, 'f' },
        { "runsc",      required_argument, NULL, 'r' },
        { "root",       required_argument, NULL, 'R' },
        { "bundle",     required_argument, NULL, 'b' },
        { "container",  required_argument, NULL, 'c' },
        { "overlay",    required_argument, NULL, 'o' },
        { "overlay-size", required_argument, NULL, 'O' },
        { "directfs",   required_argument, NULL, 'd' },
        { "host-fifo",  no_argument,       NULL, 'H' },
        { "netns",      required_argument, NULL, 'n' },
        { "slirp4netns", required_argument, NULL, 's' },
        { "slirp-api-socket", required_argument, NULL, 'a' },
        { "policy",     required_argument, NULL, 'p' },
        { "policy-digest", required_argument, NULL, 'g' },
        { "canary-port", required_argument, NULL, 'P' },
        { "view",       required_argument, NULL, 'v' },
        { "egress",     required_argument, NULL, 'e' },
#if ENABLE_TEST_HOOKS
        { "test-fault", required_argument, NULL, 'F' },
#endif
        {}
};

/* One option of the command line, which the coordinator wrote (sandbox.c): -EINVAL when it does not hold. */
static int parse_option(int c, char *value) {
        switch (c) {
        case 'f':
                if (parse_int(value, 0, 1024, &arg_control_fd) < 0)
                        return -EINVAL;
                break;
        case 'r':
                arg_runsc = value;
                break;
        case 'R':
                arg_root = value;
                break;
        case 'b':
                arg_bundle = value;
                break;
        case 'c':
                arg_container = value;
                break;
        case 'o':
                arg_overlay = value;
                break;
        case 'O':
                if (limit_parse_size(value, &arg_overlay_size) < 0 || arg_overlay_size == LIMIT_INFINITY ||
                    arg_overlay_size == 0)
                        return -EINVAL;
                break;
        case 'd':
                if (streq(value, "true"))
                        arg_directfs = true;
                else if (streq(value, "false"))
                        arg_directfs = false;
                else
                        return -EINVAL;
                break;
        case 'H':
                arg_host_fifo = true;
                break;
        case 'n':
                arg_netns = value;
                break;
        case 's':
                arg_slirp = value;
                break;
        case 'a':
                /* sockaddr_un's sun_path holds 108 bytes with the NUL. */
                if (value[0] != '/' || strlen(value) >= 108)
                        return -EINVAL;
                arg_slirp_api = value;
                break;
        case 'p':
                arg_policy = value;
                break;
        case 'g':
                arg_policy_digest = value;
                break;
        case 'v':
                if (value[0] != '/')
                        return -EINVAL;
                arg_view = value;
                break;
        case 'e':
                if (value[0] != '/')
                        return -EINVAL;
                arg_egress = value;
                break;
        case 'P':
                if (parse_int(value, 1024, 65535, &arg_canary_port) < 0)
                        return -EINVAL;
                break;
#if ENABLE_TEST_HOOKS
        case 'F':
                /* Only the coordinator's environment reaches this (see sandbox.c). */
                if (streq(value, "deny-on-lo"))
                        arg_fault_deny_on_lo = true;
                else if (streq(value, "no-name-canary"))
                        arg_fault_no_name_canary = true;
                else
                        return -EINVAL;
                break;
#endif
        default:
                return -EINVAL;
        }
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        int c, r;

        while ((c = getopt_long(argc, argv, "", supervisor_options, NULL)) >= 0) {
                r = parse_option(c, optarg);
                if (r < 0)
                        return r;
        }
        if (optind != argc)
                return -EINVAL;
        return check_args();
}

/*
 * The init's report: complete once a line "end" arrived, within 10 s, at
 * most 64 KiB (a route table of a few dozen lines fits many times over).
 * Not to EOF: whether and when the sandbox lets go of its end of the pipe
 * is gVisor's business.
 */
static int read_report(int fd, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, size = 64 * 1024;
        uint64_t deadline = now_msec() + 10000;

        buf = malloc(size + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                uint64_t now = now_msec();
                ssize_t k;
                int r;

                if (now >= deadline)
                        return -ETIMEDOUT;
                r = poll(&(struct pollfd) { .fd = fd, .events = POLLIN }, 1, (int) (deadline - now));
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r <= 0)
                        continue;
                if (n == size)
                        return -EFBIG;
                k = read(fd, buf + n, size - n);
                if (k < 0 && errno != EINTR)
                        return -errno;
                if (k == 0)
                        return -EPIPE;
                if (k > 0)
                        n += (size_t) k;
                buf[n] = 0;
                /* Up to the first line "end", with whatever came after it
                 * in the same read: supnet_judge() refuses that. */
                if (supnet_report_complete(buf, n)) {
                        *ret = TAKE_PTR(buf);
                        return 0;
                }
        }
}

/*
 * What the steps of the start share, from the staged mounts to the wait:
 * the supervised helpers, the network, the pipes to the container's init
 * and to runsc wait, and the Escalation Mailbox's descriptor until it is
 * handed on. Each step reports its own failure (FAILED, one line) and
 * returns < 0; exiting then kills and reaps the helpers (supervisor_done()).
 */
typedef struct Supervisor {
        Helpers helpers;
        SupNet net;
        /* Host edits for the file watchers inside (spec section 4.6): the
         * workspace view, or without it lazaret-watch, writes into [1]; the
         * container's init reads [0] as its standard input. */
        int relay_pipe[2];
        bool view_relays;               /* the workspace view is the relay's source */
        /* The container's init reports its network probe on its standard output: [1]. */
        int probe_pipe[2];
        /* runsc wait prints the container's exit status on [1]. */
        int wait_pipe[2];
        pid_t waiter;                   /* runsc wait, and its pidfd */
        int waiter_pidfd;
        int mailbox_fd;                 /* the Escalation Mailbox's own file system, for the coordinator */
        int responder_pidfd;            /* the canary responder deleting the canary link after READY */
} Supervisor;

#define SUPERVISOR_INIT                                                                                         \
        {                                                                                                       \
                .helpers = HELPERS_INIT, .net = SUPNET_INIT, .relay_pipe = { -EBADF, -EBADF },                  \
                .probe_pipe = { -EBADF, -EBADF }, .wait_pipe = { -EBADF, -EBADF }, .waiter_pidfd = -EBADF,      \
                .mailbox_fd = -EBADF, .responder_pidfd = -EBADF,                                                \
        }

static void supervisor_done(Supervisor *s) {
        s->mailbox_fd = safe_close(s->mailbox_fd);
        helpers_kill(&s->helpers);
        for (size_t i = 0; i < 2; i++) {
                s->relay_pipe[i] = safe_close(s->relay_pipe[i]);
                s->probe_pipe[i] = safe_close(s->probe_pipe[i]);
                s->wait_pipe[i] = safe_close(s->wait_pipe[i]);
        }
        s->waiter_pidfd = safe_close(s->waiter_pidfd);
        s->responder_pidfd = safe_close(s->responder_pidfd);
}

static int private_mount_namespace(void) {
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                int r = -errno;

                report_failed("cannot set up a private mount namespace: %s", strerror(-r));
                return r;
        }
        return 0;
}

/* Every mount source, staged from what was checked (spec C19), the mailbox's file system and the root overlay's bound. */
static int stage_mounts(Supervisor *s) {
        _cleanup_free_ char *why = NULL;
        int r;

        if (pipe2(s->relay_pipe, O_CLOEXEC) < 0) {
                r = -errno;
                report_failed("cannot create a pipe: %s", strerror(-r));
                return r;
        }
        r = supmounts_stage(arg_bundle, arg_view, s->relay_pipe[1], &s->helpers, &s->view_relays, &why);
        if (r >= 0)
                /* The Escalation Mailbox's own file system, for the coordinator (SR-10). */
                r = supmounts_open_mailbox(arg_bundle, &s->mailbox_fd, &why);
        if (r >= 0)
                r = bound_overlay(&why);
        if (r < 0) {
                report_failed("%s", strna(why));
                return r;
        }
        return 0;
}

/*
 * SR-2: before runsc, so that runsc, its gofer and the gVisor kernel are
 * all bound by it (filters are inherited and survive exec); its responder
 * a supervised helper.
 */
static int start_setid_filter(Supervisor *s) {
        _cleanup_free_ char *why = NULL;
        int r;

        r = load_setid_filter(&s->helpers, &why);
        if (r < 0) {
                report_failed("%s", strna(why));
                return r;
        }
        return 0;
}

/* The network: namespace, helper, links, policy read back in Linux. */
static int prepare_network(Supervisor *s) {
        _cleanup_free_ char *why = NULL;
        int r;

        r = supnet_prepare(&s->net, &(SupNetParams) {
                                   .netns_path = arg_netns,
                                   .slirp4netns = arg_slirp,
                                   .api_socket = arg_slirp_api,
                                   .egress = arg_egress,
                                   .policy_path = arg_policy,
                                   .policy_digest = arg_policy_digest,
                                   .generation = arg_container,
                                   .canary_port = arg_canary_port,
#if ENABLE_TEST_HOOKS
                                   .fault_deny_on_lo = arg_fault_deny_on_lo,
                                   .fault_no_name_canary = arg_fault_no_name_canary,
#endif
                           }, &s->helpers, &why);
        if (r < 0) {
                report_start_failed(&s->helpers, strna(why));
                return r;
        }
        return 0;
}

/* The view judges host changes itself; the plain bind needs lazaret-watch. Then only they hold the relay's write end. */
static int start_relay_source(Supervisor *s) {
        _cleanup_free_ char *why = NULL;
        int r;

        r = s->view_relays ? 0 : start_watcher(&s->helpers, s->relay_pipe[1], &why);
        s->relay_pipe[1] = safe_close(s->relay_pipe[1]);
        if (r < 0) {
                report_failed("%s", strna(why));
                return r;
        }
        return 0;
}

/*
 * One runsc process creates and starts the container (as `runsc create` +
 * `runsc start` would, one Go start-up less); returning is the readiness
 * point. The container's init probes the network as its first act and
 * reports on its standard output: the probe pipe. Then the control socket
 * is checked (SR-1).
 */
static int run_container(Supervisor *s) {
        _cleanup_free_ char *why = NULL;
        char err[2048];
        int r;

        if (pipe2(s->probe_pipe, O_CLOEXEC) < 0) {
                r = -errno;
                report_failed("cannot create a pipe: %s", strerror(-r));
                return r;
        }
        /* A helper that died since it was ready (the workspace view: runsc would
         * bind a dead mount) fails the start here, not after READY (spec §7.1,
         * SandboxOnlyBehindView). */
        r = helpers_died_in_start(&s->helpers, 0, &why);
        if (r != 0) {
                report_failed("%s", r > 0 ? strna(why) : "cannot watch the supervised helpers");
                return r > 0 ? -ECHILD : r;
        }
        r = runsc("run", (char *[]) { (char *) "--detach", (char *) "--bundle", (char *) arg_bundle,
                                      (char *) arg_container, NULL },
                  true, s->relay_pipe[0], s->probe_pipe[1], NULL, NULL, err, sizeof(err));
        s->probe_pipe[1] = safe_close(s->probe_pipe[1]);
        s->relay_pipe[0] = safe_close(s->relay_pipe[0]);
        if (r != 0) {
                explain_runsc_failure("run", err);
                return r < 0 ? r : -EIO;
        }
        return check_control_socket();
}

/* runsc wait, attached: it prints the container's exit status as JSON; without it, runsc wait failed: the sandbox's kernel went away. */
static int attach_wait(Supervisor *s) {
        char err[2048];
        int r;

        if (pipe2(s->wait_pipe, O_CLOEXEC) < 0) {
                r = -errno;
                report_failed("cannot create a pipe: %s", strerror(-r));
                return r;
        }
        r = runsc("wait", (char *[]) { (char *) arg_container, NULL }, false, -EBADF, s->wait_pipe[1], &s->waiter,
                  &s->waiter_pidfd, err, sizeof(err));
        s->wait_pipe[1] = safe_close(s->wait_pipe[1]);
        if (r < 0) {
                report_failed("runsc wait: %s", strerror(-r));
                return r;
        }
        return 0;
}

/*
 * The attestation, from inside gVisor's own network stack: the init's
 * report judged against the policy, then the deny link's witness. The
 * canaries are removed after `runsc wait` is attached (remove_canaries()).
 */
static int attest_network(Supervisor *s) {
        _cleanup_free_ char *why = NULL, *report = NULL;
        int r;

        r = read_report(s->probe_pipe[0], &report);
        s->probe_pipe[0] = safe_close(s->probe_pipe[0]);
        if (r < 0 && r != -ETIMEDOUT && r != -EFBIG) {
                /* The container's init ends before its probe when it cannot set the sandbox up: its own line says why. */
                _cleanup_free_ char *errpath = NULL;
                char line[SUPERVISOR_REASON_MAX] = "";

                if (asprintf(&errpath, "%s/runsc-run.stderr", arg_bundle) < 0)
                        return -ENOMEM;
                telling_line(errpath, "lazaret-init: ", line, sizeof(line));
                if (startswith(line, "lazaret-init: ")) {
                        report_failed("%s", line);
                        return r;
                }
        }
        if (r < 0) {
                report_start_failed(&s->helpers, r == -ETIMEDOUT ? "network attestation failed: the sandbox's probe did not report within 10 s"
                                    : r == -EFBIG ? "network attestation failed: the sandbox's probe reported more than 64 KiB"
                                    : "network attestation failed: the sandbox's probe stopped before the end of its report");
                return r;
        }
        r = supnet_judge(&s->net, report, &why);
        report = mfree(report);
        if (r >= 0)
                r = supnet_witness_denied(&s->net, 1000, &why);
        if (r < 0) {
                report_start_failed(&s->helpers, strna(why));
                return r;
        }
        return 0;
}

/*
 * The canaries removed (spec 4.5 step 6): the name canary's socket, then
 * the canary link set down, which carries nothing from then on, and handed
 * to the responder, which deletes it (15 to 20 ms of the kernel's RCU
 * grace periods) and exits while the Domain is published; wait_for_end()
 * reaps it.
 */
static int remove_canaries(Supervisor *s) {
        _cleanup_free_ char *why = NULL;
        int r;

        r = supnet_teardown_canary(&s->net, &s->responder_pidfd, &why);
        if (r < 0) {
                report_start_failed(&s->helpers, strna(why));
                return r;
        }
        return 0;
}

/*
 * Steps 2 and 3: the namespaces' fds go, then every capability, network
 * administration included, for good (SR-5), then the seccomp allowlist.
 * The helpers' pidfds and slirp4netns' exit pipe stay: they are how their
 * ends are seen and caused.
 */
static int enter_own_sandbox(Supervisor *s) {
        int r;

        supnet_done(&s->net);
        /* Step 2: nothing left to gain, in this namespace or through exec. */
        r = harden_drop_privileges();
        if (r < 0) {
                report_failed("cannot drop privileges: %s", strerror(-r));
                return r;
        }
        r = load_seccomp();
        if (r < 0) {
                report_failed("cannot load the seccomp filter: %s", strerror(-r));
                return r;
        }
        return 0;
}

/* Step 4: the mailbox's file system (the coordinator reaches it only through this descriptor), the network, then readiness. */
static int report_ready(Supervisor *s) {
        SupervisorMsg m = { .type = SUPERVISOR_NETWORK, .helper_pid = (int) s->net.slirp_pid, .netns = s->net.netns_ino };
        int r;

        if (s->mailbox_fd >= 0) {
                r = supervisor_msg_send(arg_control_fd, &(SupervisorMsg) { .type = SUPERVISOR_MAILBOX }, s->mailbox_fd);
                if (r < 0) {
                        report_failed("cannot hand the Escalation Mailbox to the coordinator: %s", strerror(-r));
                        return r;
                }
                s->mailbox_fd = safe_close(s->mailbox_fd);
        }
        memcpy(m.digest, s->net.digest_hex, sizeof(m.digest));
        send_msg(&m);
        send_msg(&(SupervisorMsg) { .type = SUPERVISOR_READY });
        supnet_close_witness(&s->net);
        return 0;
}

/* The container has ended: runsc wait's answer, as a shell reports it (the code, or 128+N), becomes EXITED. */
static void report_exited(Supervisor *s) {
        _cleanup_free_ char *unread = NULL;
        char out[512];
        size_t n = 0;
        ssize_t k;
        int code, status;

        /* The writer has exited: read() ends at EOF. */
        while (n < sizeof(out) - 1 && (k = read(s->wait_pipe[0], out + n, sizeof(out) - 1 - n)) > 0)
                n += (size_t) k;
        out[n] = 0;
        (void) waitpid(s->waiter, &status, 0);
        if (runsc_wait_status(out, n, &code, &unread) >= 0)
                send_msg(&(SupervisorMsg) { .type = SUPERVISOR_EXITED, .status = code });
        else
                report_failed("the sandbox's kernel (runsc-sandbox) stopped unexpectedly");
}

/*
 * The wait, under the seccomp allowlist: for the container to end, for a
 * supervised helper to end, or for the coordinator to close the control
 * socket. Returns the supervisor's exit status.
 */
static int wait_for_end(Supervisor *s) {
        for (;;) {
                _cleanup_free_ char *why = NULL;
                struct pollfd p[3 + HELPERS_MAX] = {
                        { .fd = arg_control_fd, .events = POLLIN },
                        { .fd = s->waiter_pidfd, .events = POLLIN },
                        { .fd = s->responder_pidfd, .events = POLLIN },
                };
                nfds_t n_fds = 3 + helpers_pollfds(&s->helpers, p + 3, HELPERS_MAX);
                char buf[64];
                int r;

                r = poll(p, n_fds, -1);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return 1;
                }
                /* A helper's end fails the Domain, whatever else happened. */
                r = helpers_reap_dead(&s->helpers, &why);
                if (r < 0)
                        report_failed("cannot watch the supervised helpers: %s", strna(strerrorname_np(-r)));
                else if (r > 0)
                        report_failed("%s", strna(why));
                if (r != 0)
                        return 1;
                if (p[2].revents) {
                        /* The responder is done with the canary link: reaped; a link it
                         * could not delete stays down, which is said, not fatal. */
                        siginfo_t si = {};

                        if (waitid(P_PIDFD, (id_t) s->responder_pidfd, &si, WEXITED | WNOHANG) >= 0 && si.si_pid > 0 &&
                            (si.si_code != CLD_EXITED || si.si_status != 0))
                                fprintf(stderr, "lazaret-supervisor: the canary link was not deleted (it stays down)\n");
                        s->responder_pidfd = safe_close(s->responder_pidfd);
                }
                if (p[1].revents) {
                        report_exited(s);
                        return 0;
                }
                if (p[0].revents) {
                        ssize_t k = recv(arg_control_fd, buf, sizeof(buf), MSG_DONTWAIT);
                        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
                                /* The coordinator let go: the scope is being stopped. */
                                return 0;
                }
        }
}

static int start_mount_namespace(Supervisor *s) {
        if (private_mount_namespace() < 0 || stage_mounts(s) < 0)
                return -1;
        setup_files_limit();
        return 0;
}

/*
 * The start, step by step. Each step's time goes into one line of the
 * Domain's log once the sandbox is attested, so that a slow start says
 * where it spent its time (issue 34 item 4; bench/launch prints the
 * medians).
 */
static const struct {
        const char *name;
        int (*run)(Supervisor *s);
} start_steps[] = {
        { "mounts",        start_mount_namespace },
        { "set-ID filter", start_setid_filter    },
        { "network",       prepare_network       },
        { "relay",         start_relay_source    },
        { "runsc run",     run_container         },
        { "attestation",   attest_network        },
        { "runsc wait",    attach_wait           },
        { "canaries",      remove_canaries       },
        { "hardening",     enter_own_sandbox     },
};

static int run_start_steps(Supervisor *s) {
        uint64_t spent[ELEMENTSOF(start_steps)], start = now_usec(), last = start;
        SupervisorMsg msg = { .type = SUPERVISOR_STARTED };
        size_t n;

        for (size_t i = 0; i < ELEMENTSOF(start_steps); i++) {
                if (start_steps[i].run(s) < 0)
                        return -1;
                uint64_t t = now_usec();
                spent[i] = t - last;
                last = t;
        }
        n = (size_t) snprintf(msg.reason, sizeof(msg.reason), "sandbox started in %" PRIu64 " ms:", (last - start) / 1000);
        for (size_t i = 0; i < ELEMENTSOF(start_steps) && n < sizeof(msg.reason); i++)
                n += (size_t) snprintf(msg.reason + n, sizeof(msg.reason) - n, "%s %s %" PRIu64 ".%" PRIu64, i ? "," : "",
                                       start_steps[i].name, spent[i] / 1000, spent[i] % 1000 / 100);
        /* The network's own steps (supnet_prepare()): its namespace, its helper until ready, ... */
        for (SupNetStep i = 0; i < _SUPNET_STEP_MAX && n < sizeof(msg.reason); i++)
                n += (size_t) snprintf(msg.reason + n, sizeof(msg.reason) - n, "%s %s %" PRIu64 ".%" PRIu64,
                                       i ? "," : "; in network:", supnet_step_name(i), s->net.step_usec[i] / 1000,
                                       s->net.step_usec[i] % 1000 / 100);
        send_msg(&msg);
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(supervisor_done) Supervisor s = SUPERVISOR_INIT;

        if (parse_argv(argc, argv) < 0) {
                fprintf(stderr, "lazaret-supervisor is started by lazaret-coordinator only.\n");
                return 2;
        }
        if (fcntl(arg_control_fd, F_SETFD, FD_CLOEXEC) < 0)
                return 2;
        /* It must die with the coordinator, and must not outlive a dead one. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                return 2;
        if (getuid() != 0) {
                report_failed("the supervisor is not root of its user namespace");
                return 1;
        }

        /* 1. Resources, in this order; 2. and 3. the supervisor's own hardening. */
        if (run_start_steps(&s) < 0)
                return 1;
        /* 4. */
        if (report_ready(&s) < 0)
                return 1;
        return wait_for_end(&s);
}
