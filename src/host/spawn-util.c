/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "macro.h"
#include "spawn-util.h"

/* Above anything we will place: 3 + n_pass_fds stays well below this. */
#define SPAWN_HIGH_FD 512

static const char *const sd_daemon_vars[] = {
        "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_PID", "WATCHDOG_USEC",
};

/* Tells the parent why over the CLOEXEC pipe (spawn_read_error()), then ends. */
static __attribute__((__noreturn__)) void child_fail(int errfd, int error, int status) {
        int e = error > 0 ? error : EIO;

        (void) !write(errfd, &e, sizeof(e));
        _exit(status);
}

static __attribute__((__noreturn__)) void child(const SpawnOptions *o, pid_t parent, int errfd) {
        int high[3 + 64];
        size_t n = 3 + o->n_pass_fds;
        sigset_t none;
        int null, r;

        sigemptyset(&none);
        (void) sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) signal(sig, SIG_DFL);
        for (size_t i = 0; i < ELEMENTSOF(sd_daemon_vars); i++)
                (void) unsetenv(sd_daemon_vars[i]);

        if (o->die_with_parent) {
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                        child_fail(errfd, errno, 126);
                /* The parent may have died before the line above. */
                if (getppid() != parent)
                        child_fail(errfd, ESRCH, 126);
        }
        if (o->new_session && setsid() < 0)
                child_fail(errfd, errno, 126);

        /* The error pipe goes above the fds we keep and stays CLOEXEC. Move
         * every fd we keep out of the way first, then into place: a source
         * may sit where another one's target is. */
        r = fcntl(errfd, F_DUPFD_CLOEXEC, SPAWN_HIGH_FD + 3 + 64);
        if (r < 0)
                child_fail(errfd, errno, 126);
        errfd = r;
        null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0)
                child_fail(errfd, errno, 126);
        for (size_t i = 0; i < n; i++) {
                int src = i < 3 ? (o->stdio[i] >= 0 ? o->stdio[i] : null) : o->pass_fds[i - 3];
                high[i] = fcntl(src, F_DUPFD_CLOEXEC, SPAWN_HIGH_FD);
                if (high[i] < 0)
                        child_fail(errfd, errno, 126);
        }
        for (size_t i = 0; i < n; i++)
                if (dup2(high[i], (int) i) < 0)     /* dup2() clears O_CLOEXEC on the target */
                        child_fail(errfd, errno, 126);
        if (close_range((unsigned) n, (unsigned) errfd - 1, 0) < 0 ||
            close_range((unsigned) errfd + 1, ~0U, 0) < 0)
                child_fail(errfd, errno, 126);

        if (o->controlling_tty && ioctl(0, TIOCSCTTY, 0) < 0)
                child_fail(errfd, errno, 126);
        if (o->cwd && chdir(o->cwd) < 0)
                child_fail(errfd, errno, 126);
        if (o->child_hook && (r = o->child_hook(o->hook_userdata)) != 0)
                child_fail(errfd, r < 0 ? -r : EIO, 126);
        if (o->envp) {
                /* An explicit environment gets the same filtering. */
                if (clearenv() != 0)
                        child_fail(errfd, ENOMEM, 126);
                for (char *const *e = o->envp; *e; e++) {
                        bool drop = false;
                        for (size_t i = 0; i < ELEMENTSOF(sd_daemon_vars); i++) {
                                size_t l = strlen(sd_daemon_vars[i]);
                                if (strncmp(*e, sd_daemon_vars[i], l) == 0 && (*e)[l] == '=')
                                        drop = true;
                        }
                        if (!drop && putenv(*e) < 0)
                                child_fail(errfd, errno, 126);
                }
        }
        execv(o->argv[0], o->argv);
        child_fail(errfd, errno, 127);
}

int spawn_read_error(int fd) {
        int e;
        ssize_t k;

        do
                k = read(fd, &e, sizeof(e));
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;          /* -EAGAIN: still setting up */
        if (k == 0)
                return 0;               /* closed by a successful exec */
        if (k != sizeof(e) || e <= 0)
                return -EIO;
        return -e;
}

int spawn_async(const SpawnOptions *o, pid_t *ret_pid, int *ret_pidfd, int *ret_error_fd) {
        _cleanup_close_ int err_r = -EBADF, err_w = -EBADF;
        pid_t parent = getpid(), pid;
        int pidfd = -EBADF, p[2];

        if (!o->argv || !o->argv[0] || o->argv[0][0] != '/' || o->n_pass_fds > 64)
                return -EINVAL;
        if (o->controlling_tty && !o->new_session)
                return -EINVAL;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        err_r = p[0];
        err_w = p[1];
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                child(o, parent, err_w);
        err_w = safe_close(err_w);
        if (ret_pidfd) {
                /* Not reaped yet (nobody waits for it before we return), so
                 * the PID cannot have been reused. */
                pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
                if (pidfd < 0) {
                        int r = -errno;
                        (void) kill(pid, SIGKILL);
                        (void) waitpid(pid, NULL, 0);
                        return r;
                }
                *ret_pidfd = pidfd;
        }
        if (ret_pid)
                *ret_pid = pid;
        if (ret_error_fd)
                *ret_error_fd = TAKE_FD(err_r);
        return 0;
}

int spawn(const SpawnOptions *o, pid_t *ret_pid, int *ret_pidfd) {
        _cleanup_close_ int err_fd = -EBADF, pidfd = -EBADF;
        pid_t pid;
        int r;

        r = spawn_async(o, &pid, ret_pidfd ? &pidfd : NULL, &err_fd);
        if (r < 0)
                return r;
        /* Blocks only until the child's exec (or its failure before it). */
        r = spawn_read_error(err_fd);
        if (r < 0) {
                /* It has written its errno and is ending: reap it, so that
                 * no caller has to. Nothing else waits for it yet. */
                if (r == -EIO)
                        (void) kill(pid, SIGKILL);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                return r;
        }
        if (ret_pidfd)
                *ret_pidfd = TAKE_FD(pidfd);
        if (ret_pid)
                *ret_pid = pid;
        return 0;
}

int spawn_status_from_siginfo(int code, int status) {
        return code == CLD_EXITED ? status : 128 + status;
}

int spawn_output(char *const *argv, char *const *envp, const char *cwd, size_t max, char **ret) {
        return spawn_output_len(argv, envp, cwd, max, ret, NULL);
}

int spawn_output_len(char *const *argv, char *const *envp, const char *cwd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int rfd = -EBADF, wfd = -EBADF;
        _cleanup_free_ char *out = NULL;
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        int p[2], status, r;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        rfd = p[0];
        wfd = p[1];
        o.argv = argv;
        o.envp = envp;
        o.cwd = cwd;
        o.stdio[1] = wfd;
        r = spawn(&o, &pid, NULL);
        if (r < 0)
                return r;
        wfd = safe_close(wfd);
        r = read_full_fd(rfd, max, &out, ret_len);
        rfd = safe_close(rfd);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(out);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
