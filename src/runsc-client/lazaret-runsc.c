/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-runsc: the two calls of runsc's client that a Domain's sessions
 * make, `runsc exec` and `runsc kill --pid`, spoken to the sandbox's control
 * socket directly (spec section 4.4, "Sessions without runsc's start-up").
 * runsc is one Go program of 30 MB that carries the whole gVisor kernel: its
 * start alone takes 14 to 16 ms on the machines Lazaret is measured on,
 * about half of a `runsc exec`. This program takes the same arguments as
 * the part of runsc it stands in for, after --runsc PATH (the runsc the
 * Domain runs) and --root DIR:
 *
 *   lazaret-runsc --runsc RUNSC --root ROOT exec [--process FILE]
 *           [--internal-pid-file FILE] [--pass-fd HOST:GUEST]... ID [COMMAND...]
 *   lazaret-runsc --runsc RUNSC --root ROOT kill --pid PID ID SIGNAL
 *
 * and behaves as runsc does: it reads the container's state (under runsc's
 * lock of it), starts the process with ExecuteAsync, writes its PID inside
 * to the internal PID file, forwards the signals it gets to the foreground
 * process group inside when the process has a terminal, waits with
 * WaitPID, and exits with the process's status (128 + N for a signal N);
 * 128 when it fails itself. When the control server refuses a call as one
 * it does not understand (an unknown method, an argument its types do not
 * take: a runsc whose protocol changed), or the state file is not one it
 * can read, nothing has started yet, and it becomes `RUNSC --root ROOT`
 * with the same arguments. A reply it cannot read ends it (128): the
 * process may have started, and is never started twice.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "json-util.h"
#include "macro.h"
#include "parse-util.h"
#include "runsc-control.h"
#include "strv.h"
#include "util.h"

#define EXIT_RUNSC_FAILED 128

static const char *arg_runsc;
static const char *arg_root;
static char **arg_tail;         /* the subcommand and its arguments, for runsc */

static _Noreturn void become_runsc(const char *why) {
        _cleanup_strv_free_ char **argv = NULL;
        sigset_t none;

        /* runsc starts as the coordinator started this client: no signal blocked. */
        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);

        fprintf(stderr, "lazaret-runsc: %s; running %s instead\n", why, arg_runsc);
        if (strv_extend(&argv, arg_runsc) < 0 || strv_extend(&argv, "--root") < 0 || strv_extend(&argv, arg_root) < 0 ||
            strv_extend_strv(&argv, arg_tail) < 0)
                _exit(EXIT_RUNSC_FAILED);
        execv(arg_runsc, argv);
        fprintf(stderr, "lazaret-runsc: cannot execute %s: %m\n", arg_runsc);
        _exit(EXIT_RUNSC_FAILED);
}

_printf_(1, 2) static _Noreturn void die(const char *fmt, ...) {
        va_list ap;

        fputs("lazaret-runsc: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(EXIT_RUNSC_FAILED);
}

/* The container's state file, `ID_sandbox:SANDBOX.state`, read under runsc's own lock of it. */
static int load_state(const char *id, RunscState *ret, char **ret_error) {
        _cleanup_(closedirp) DIR *d = opendir(arg_root);
        _cleanup_free_ char *name = NULL, *text = NULL, *lock = NULL;
        _cleanup_close_ int lfd = -EBADF;
        size_t len;
        int r;

        if (!d)
                return errorf(ret_error, -errno, "cannot read runsc's root %s: %m", arg_root);
        for (struct dirent *de; (de = readdir(d));) {
                const char *rest = startswith(de->d_name, id);
                size_t l = rest ? strlen(rest) : 0;
                if (rest && startswith(rest, "_sandbox:") && l > 6 && streq(rest + l - 6, ".state")) {
                        name = strdup(de->d_name);
                        break;
                }
        }
        if (!name)
                return errorf(ret_error, -ENOENT, "container %s does not exist in %s", id, arg_root);
        if (asprintf(&lock, "%.*s.lock", (int) (strlen(name) - strlen(".state")), name) < 0)
                return -ENOMEM;
        lfd = openat(dirfd(d), lock, O_RDONLY | O_CLOEXEC);
        if (lfd >= 0)
                while (flock(lfd, LOCK_SH) < 0)
                        if (errno != EINTR)
                                return errorf(ret_error, -errno, "cannot lock %s: %m", lock);
        {
                _cleanup_close_ int fd = openat(dirfd(d), name, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return errorf(ret_error, -errno, "cannot open %s: %m", name);
                r = read_full_fd(fd, RUNSC_STATE_MAX, &text, &len);
                if (r < 0)
                        return errorf(ret_error, r, "cannot read %s: %s", name, strerror(-r));
        }
        return runsc_state_parse(text, len, ret, ret_error);
}

static int call_once(const char *sock, const char *call, const int *fds, size_t n, RunscReply *ret, char **ret_error) {
        _cleanup_close_ int fd = runsc_connect(sock);

        if (fd < 0)
                return errorf(ret_error, fd, "cannot connect to the sandbox's control socket: %s", strerror(-fd));
        return runsc_call(fd, call, fds, n, ret, ret_error);
}

/* ------------------------------------------------------------------ kill */

static int run_kill(int argc, char **argv) {
        _cleanup_(runsc_state_done) RunscState st = {};
        _cleanup_(runsc_reply_done) RunscReply reply = {};
        _cleanup_free_ char *call = NULL, *error = NULL;
        int pid = 0, sig, r;

        if (argc != 5 || !streq(argv[1], "--pid") || parse_int(argv[2], 1, INT32_MAX, &pid) < 0 ||
            parse_int(argv[4], 1, 64, &sig) < 0)
                die("usage: kill --pid PID ID SIGNAL (PID and SIGNAL numbers)");
        r = load_state(argv[3], &st, &error);
        if (r < 0)
                die("%s", error ?: strerror(-r));
        r = runsc_signal_call(argv[3], pid, sig, RUNSC_SIGNAL_TO_PROCESS, &call);
        if (r < 0)
                die("cannot build the call: %s", strerror(-r));
        /* A reply that is not one may follow a signal sent: not again through runsc. */
        r = call_once(st.control_socket, call, NULL, 0, &reply, &error);
        if (r < 0)
                die("signalling pid %d in the sandbox: %s", pid, error ?: strerror(-r));
        if (!reply.success) {
                if (runsc_err_is_protocol(reply.err))
                        become_runsc(reply.err);
                die("signalling pid %d in the sandbox: %s", pid, strna(reply.err));
        }
        return EXIT_SUCCESS;
}

/* ------------------------------------------------------------------ exec */

typedef struct PassFd {
        int host, guest;
} PassFd;

static int pass_fd_cmp(const void *a, const void *b) {
        int x = ((const PassFd *) a)->guest, y = ((const PassFd *) b)->guest;

        return (x > y) - (x < y);
}

/* The signals runsc exec forwards: every standard one it can catch but those its own work causes. */
static void forwarded_signals(sigset_t *set) {
        sigemptyset(set);
        for (int sig = 1; sig < 32; sig++)
                if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD && sig != SIGPIPE && sig != SIGURG)
                        sigaddset(set, sig);
}

static void forward(const char *sock, const char *id, int32_t pid, int sig) {
        _cleanup_(runsc_reply_done) RunscReply reply = {};
        _cleanup_free_ char *call = NULL, *error = NULL;
        int r;

        r = runsc_signal_call(id, pid, sig, RUNSC_SIGNAL_TO_FOREGROUND_GROUP, &call);
        if (r >= 0)
                r = call_once(sock, call, NULL, 0, &reply, &error);
        if (r < 0 || !reply.success)
                fprintf(stderr, "lazaret-runsc: forwarding signal %d to the foreground of pid %d: %s\n", sig, (int) pid,
                        r < 0 ? (error ?: strerror(-r)) : strna(reply.err));
}

/* WaitPID, forwarding signals meanwhile when sigfd >= 0. Returns the wait status or a negative errno. */
static int64_t wait_pid(const char *sock, const char *id, int32_t pid, int sigfd, char **ret_error) {
        _cleanup_(runsc_reply_done) RunscReply reply = {};
        _cleanup_free_ char *call = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = runsc_wait_call(id, pid, &call);
        if (r < 0)
                return r;
        fd = runsc_connect(sock);
        if (fd < 0)
                return errorf(ret_error, fd, "cannot connect to the sandbox's control socket: %s", strerror(-fd));
        r = runsc_send(fd, call, NULL, 0);
        if (r < 0)
                return errorf(ret_error, r, "%s", strerror(-r));
        while (sigfd >= 0) {
                struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = sigfd, .events = POLLIN } };
                struct signalfd_siginfo si;

                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[0].revents)
                        break;
                if (read(sigfd, &si, sizeof(si)) == sizeof(si))
                        forward(sock, id, pid, (int) si.ssi_signo);
        }
        r = runsc_receive(fd, &reply, ret_error);
        if (r == -ECONNRESET)
                return errorf(ret_error, r, "the sandbox's control socket closed (the sandbox is gone)");
        if (r < 0)
                return r;
        if (!reply.success)
                return errorf(ret_error, -EIO, "%s", strna(reply.err));
        if (!reply.has_result || reply.result < 0 || reply.result > UINT32_MAX)
                return errorf(ret_error, -EBADMSG, "the reply carries no wait status");
        return reply.result;
}

static int run_exec(int argc, char **argv) {
        _cleanup_(runsc_state_done) RunscState st = {};
        _cleanup_(runsc_reply_done) RunscReply reply = {};
        _cleanup_json_ json_object *process = NULL;
        _cleanup_free_ char *call = NULL, *error = NULL;
        const char *process_path = NULL, *pid_file = NULL, *id;
        PassFd fds[RUNSC_FILES_MAX];
        int host[RUNSC_FILES_MAX], guest[RUNSC_FILES_MAX];
        size_t n = 0;
        _cleanup_close_ int sigfd = -EBADF;
        bool terminal;
        int64_t status;
        int32_t pid;
        int i, r;

        for (i = 1; i < argc && startswith(argv[i], "--"); i++) {
                if (streq(argv[i], "--process") && i + 1 < argc)
                        process_path = argv[++i];
                else if (streq(argv[i], "--internal-pid-file") && i + 1 < argc)
                        pid_file = argv[++i];
                else if (streq(argv[i], "--pass-fd") && i + 1 < argc) {
                        const char *colon = strchr(argv[++i], ':');
                        _cleanup_free_ char *h = colon ? strndup(argv[i], colon - argv[i]) : NULL;
                        PassFd p;
                        if (!colon || !h || parse_int(h, 0, INT32_MAX, &p.host) < 0 ||
                            parse_int(colon + 1, 0, INT32_MAX, &p.guest) < 0)
                                die("--pass-fd takes HOST:GUEST, not %s", argv[i]);
                        /* A later mapping of the same guest descriptor replaces an earlier one, as in runsc. */
                        size_t k = 0;
                        while (k < n && fds[k].guest != p.guest)
                                k++;
                        if (k == n && n == RUNSC_FILES_MAX - 3)
                                die("too many --pass-fd");
                        fds[k] = p;
                        if (k == n)
                                n++;
                } else
                        die("unknown option %s (only --process, --internal-pid-file and --pass-fd)", argv[i]);
        }
        if (i >= argc)
                die("usage: exec [OPTIONS] ID [COMMAND...]");
        id = argv[i++];
        if (process_path ? i != argc : i == argc)
                die(process_path ? "a command with --process" : "no command and no --process");

        /* Standard streams unless --pass-fd gave those guest descriptors another file. */
        for (int g = 0; g < 3; g++) {
                size_t k = 0;
                while (k < n && fds[k].guest != g)
                        k++;
                if (k == n)
                        fds[n++] = (PassFd) { .host = g, .guest = g };
        }
        qsort(fds, n, sizeof(PassFd), pass_fd_cmp);
        for (size_t k = 0; k < n; k++) {
                host[k] = fds[k].host;
                guest[k] = fds[k].guest;
                if (fcntl(host[k], F_GETFD) < 0)
                        die("descriptor %d is not open", host[k]);
        }

        if (process_path) {
                _cleanup_free_ char *text = NULL;
                size_t len;
                r = read_full_file(process_path, JSON_DOC_MAX_BYTES, &text, &len);
                if (r < 0)
                        die("cannot read %s: %s", process_path, strerror(-r));
                r = json_parse_strict(text, len, &process, &error);
                if (r < 0)
                        die("%s: %s", process_path, error ?: strerror(-r));
        } else {
                process = json_object_new_object();
                if (!process || json_add_strv(process, "args", (const char *const *) argv + i) < 0 ||
                    json_add_bool(process, "terminal", isatty(STDIN_FILENO)) < 0)
                        die("cannot build the process: %s", strerror(ENOMEM));
        }
        r = load_state(id, &st, &error);
        if (r == -EBADMSG)
                become_runsc(error ?: "the container's state cannot be read");
        if (r < 0)
                die("%s", error ?: strerror(-r));
        if (!streq(st.status, "running") && !streq(st.status, "created"))
                die("cannot execute in container %s: it is %s", id, st.status);
        r = runsc_exec_call(process, st.process, id, guest, n, &call, &error);
        if (r < 0)
                die("cannot build the call: %s", error ?: strerror(-r));
        /* A boolean, runsc_exec_call() checked. */
        {
                json_object *t;
                terminal = json_object_object_get_ex(process, "terminal", &t) && json_object_get_boolean(t);
        }

        /* From here on, a signal for the command waits until it can be forwarded. */
        if (terminal) {
                sigset_t set;
                forwarded_signals(&set);
                if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
                        die("cannot block signals: %m");
                sigfd = signalfd(-1, &set, SFD_CLOEXEC);
                if (sigfd < 0)
                        die("cannot make a signalfd: %m");
        }

        /* A reply that is not one may follow a process started: never a second start through runsc. */
        r = call_once(st.control_socket, call, host, n, &reply, &error);
        if (r < 0)
                die("executing %s in the sandbox: %s", id, error ?: strerror(-r));
        if (!reply.success) {
                if (runsc_err_is_protocol(reply.err))
                        become_runsc(reply.err);
                die("executing in the sandbox: %s", strna(reply.err));
        }
        if (!reply.has_result || reply.result < 1 || reply.result > INT32_MAX)
                die("the control server started a process but named no PID");
        pid = (int32_t) reply.result;
        /* The command has its own now; runsc keeps none of them either. */
        for (size_t k = 0; k < n; k++)
                if (host[k] > STDERR_FILENO)
                        (void) close(host[k]);

        if (pid_file) {
                char buf[16];
                snprintf(buf, sizeof(buf), "%d", (int) pid);
                r = write_file(pid_file, buf, 0644);
                if (r < 0)
                        die("writing %s: %s", pid_file, strerror(-r));
        }

        free(error);
        error = NULL;
        status = wait_pid(st.control_socket, id, pid, sigfd, &error);
        if (status < 0)
                die("waiting for pid %d in the sandbox: %s", (int) pid, error ?: strerror((int) -status));
        if (WIFSIGNALED((int) status))
                return 128 + WTERMSIG((int) status);
        return WEXITSTATUS((int) status);
}

int main(int argc, char **argv) {
        int i = 1;

        for (; i + 1 < argc && startswith(argv[i], "--"); i += 2) {
                if (streq(argv[i], "--runsc"))
                        arg_runsc = argv[i + 1];
                else if (streq(argv[i], "--root"))
                        arg_root = argv[i + 1];
                else
                        break;
        }
        if (!arg_runsc || !arg_root || i >= argc)
                die("usage: lazaret-runsc --runsc RUNSC --root ROOT exec|kill ...");
        arg_tail = argv + i;
        if (streq(argv[i], "exec"))
                return run_exec(argc - i, argv + i);
        if (streq(argv[i], "kill"))
                return run_kill(argc - i, argv + i);
        die("unknown command %s (exec or kill)", argv[i]);
}
