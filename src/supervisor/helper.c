/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "helper.h"
#include "macro.h"
#include "spawn-util.h"
#include "util.h"

/* "exited with status 1", "was killed by signal 9 (SIGKILL)". */
static void describe_end(const siginfo_t *si, char *buf, size_t size) {
        const char *abbrev;

        if (si->si_code == CLD_EXITED) {
                snprintf(buf, size, "exited with status %d", si->si_status);
                return;
        }
        abbrev = sigabbrev_np(si->si_status);
        if (abbrev)
                snprintf(buf, size, "was killed by signal %d (SIG%s)", si->si_status, abbrev);
        else
                snprintf(buf, size, "was killed by signal %d", si->si_status);
}

/* SIGKILL through the pidfd, then reaped; a helper we may not signal is left to PR_SET_PDEATHSIG. */
static void kill_and_reap(Helper *h) {
        siginfo_t si;

        if (h->pidfd < 0)
                return;
        if (syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0) >= 0 || errno == ESRCH)
                while (waitid(P_PIDFD, (id_t) h->pidfd, &si, WEXITED) < 0 && errno == EINTR)
                        ;
        h->pidfd = safe_close(h->pidfd);
}

/* 1 and *si if h has ended (reaped), 0 if it runs, < 0 if it cannot be asked. */
static int try_reap(Helper *h, siginfo_t *si) {
        *si = (siginfo_t) {};
        while (waitid(P_PIDFD, (id_t) h->pidfd, si, WEXITED | WNOHANG) < 0)
                if (errno != EINTR)
                        return -errno;
        return si->si_pid != 0;
}

static void format_timeout(unsigned ms, char *buf, size_t size) {
        if (ms % 1000 == 0)
                snprintf(buf, size, "%u s", ms / 1000);
        else
                snprintf(buf, size, "%u ms", ms);
}

/*
 * Until a byte arrives on ready_fd (0), the helper ends or lets go of the fd
 * first (-EPIPE), or the deadline passes (-ETIMEDOUT). Both fds are polled:
 * a helper whose child inherited the readiness fd still counts as ended.
 * The byte is looked for first: one written just before exiting counts.
 */
static int wait_ready(Helper *h, int ready_fd, uint64_t deadline) {
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = ready_fd, .events = POLLIN },
                        { .fd = h->pidfd, .events = POLLIN },
                };
                uint64_t now = now_msec();
                ssize_t k;
                char c;
                int r;

                if (now >= deadline)
                        return -ETIMEDOUT;
                r = poll(p, ELEMENTSOF(p), (int) (deadline - now));
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r <= 0)
                        continue;
                if (p[0].revents) {
                        k = read(ready_fd, &c, 1);
                        if (k == 1)
                                return 0;
                        if (k == 0)
                                return -EPIPE;
                        if (errno != EINTR && errno != EAGAIN)
                                return -errno;
                        continue;
                }
                if (p[1].revents)
                        return -EPIPE;
        }
}

/*
 * After EOF on the readiness fd: the helper's end (1, *si), looked for up to
 * a second (its fds close just before it becomes a zombie), whatever was
 * left of the readiness timeout; 0 if it still runs then.
 */
static int wait_end(Helper *h, uint64_t deadline, siginfo_t *si) {
        for (;;) {
                uint64_t now = now_msec();
                int r;

                r = try_reap(h, si);
                if (r != 0)
                        return r;
                if (now >= deadline)
                        return 0;
                r = poll(&(struct pollfd) { .fd = h->pidfd, .events = POLLIN }, 1, (int) (deadline - now));
                if (r < 0 && errno != EINTR)
                        return -errno;
        }
}

int helper_start(Helpers *hs, const HelperSpec *spec, pid_t *ret_pid, char **ret_error) {
        _cleanup_close_ int ready_r = -EBADF, ready_w = -EBADF;
        int pass[1 + HELPER_PASS_FDS_MAX], p[2];
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        Helper h = { .pidfd = -EBADF };
        char how[96], limit[32];
        uint64_t deadline;
        siginfo_t si;
        int r;

        if (!spec->name || !spec->role || !spec->death_means || !spec->argv || !spec->argv[0] ||
            spec->n_pass_fds > HELPER_PASS_FDS_MAX || (spec->n_pass_fds > 0 && !spec->pass_fds) ||
            (!spec->ready_at_exec && (spec->ready_timeout_ms == 0 || spec->ready_timeout_ms > HELPER_READY_TIMEOUT_MAX_MS))) {
                (void) errorf(ret_error, 0, "cannot start helper %s: invalid helper specification", strna(spec->name));
                return -EINVAL;
        }
        if (hs->n >= HELPERS_MAX) {
                (void) errorf(ret_error, 0, "cannot start %s %s: the supervisor already runs %d helpers", spec->role,
                         spec->name, HELPERS_MAX);
                return -ENOSPC;
        }
        if (pipe2(p, O_CLOEXEC) < 0) {
                r = -errno;
                (void) errorf(ret_error, 0, "cannot create a readiness pipe for %s: %s", spec->name, strerror(-r));
                return r;
        }
        ready_r = p[0];
        ready_w = p[1];
        pass[0] = ready_w;
        for (size_t i = 0; i < spec->n_pass_fds; i++)
                pass[1 + i] = spec->pass_fds[i];
        o.argv = spec->argv;
        o.pass_fds = pass;
        o.n_pass_fds = 1 + spec->n_pass_fds;
        o.die_with_parent = true;
        if (spec->keep_stderr)
                o.stdio[2] = STDERR_FILENO;
        deadline = now_msec() + spec->ready_timeout_ms;
        r = spawn(&o, &h.pid, &h.pidfd);
        /* Ours closed: EOF then means every copy the helper had is gone. */
        ready_w = safe_close(ready_w);
        if (r < 0) {
                (void) errorf(ret_error, 0, "cannot start %s %s: %s", spec->role, spec->name, strerror(-r));
                return r;
        }

        r = spec->ready_at_exec ? 0 : wait_ready(&h, ready_r, deadline);
        if (r == -EPIPE) {
                int q = wait_end(&h, now_msec() + 1000, &si);
                if (q > 0) {
                        describe_end(&si, how, sizeof(how));
                        h.pidfd = safe_close(h.pidfd);
                } else
                        snprintf(how, sizeof(how), "closed its readiness fd");
                (void) errorf(ret_error, 0, "%s %s (pid %d) %s before it was ready%s%s%s", spec->role, spec->name, (int) h.pid,
                         how, spec->not_ready_hint ? " (" : "", strempty(spec->not_ready_hint),
                         spec->not_ready_hint ? ")" : "");
        } else if (r == -ETIMEDOUT) {
                format_timeout(spec->ready_timeout_ms, limit, sizeof(limit));
                (void) errorf(ret_error, 0, "%s %s (pid %d) did not become ready within %s", spec->role, spec->name,
                         (int) h.pid, limit);
        } else if (r < 0)
                (void) errorf(ret_error, 0, "cannot wait for %s %s (pid %d) to become ready: %s", spec->role, spec->name,
                         (int) h.pid, strerror(-r));
        if (r < 0) {
                kill_and_reap(&h);
                return r;
        }

        snprintf(h.name, sizeof(h.name), "%s", spec->name);
        snprintf(h.role, sizeof(h.role), "%s", spec->role);
        snprintf(h.death_means, sizeof(h.death_means), "%s", spec->death_means);
        hs->helper[hs->n++] = h;
        if (ret_pid)
                *ret_pid = h.pid;
        return 0;
}

size_t helpers_pollfds(const Helpers *hs, struct pollfd *p, size_t n) {
        size_t i;

        for (i = 0; i < hs->n && i < n; i++)
                p[i] = (struct pollfd) { .fd = hs->helper[i].pidfd, .events = POLLIN };
        return i;
}

/* Reaps the first helper that ended, drops it from the set and says so in
 * *ret_line, as a death during the start or after readiness: 1; 0 if none ended. */
static int reap_first_dead(Helpers *hs, bool starting, char **ret_line) {
        for (size_t i = 0; i < hs->n; i++) {
                Helper *h = &hs->helper[i];
                char how[96];
                siginfo_t si;
                int r;

                r = try_reap(h, &si);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                describe_end(&si, how, sizeof(how));
                if (starting)
                        (void) errorf(ret_line, 1, "%s died while the Domain started: %s %s (pid %d) %s", h->name, h->role,
                                      h->name, (int) h->pid, how);
                else
                        (void) errorf(ret_line, 1, "%s %s (pid %d) %s: %s", h->role, h->name, (int) h->pid, how,
                                      h->death_means);
                safe_close(h->pidfd);
                memmove(h, h + 1, (hs->n - i - 1) * sizeof(*h));
                hs->n--;
                return 1;
        }
        return 0;
}

int helpers_died_in_start(Helpers *hs, unsigned wait_ms, char **ret_line) {
        struct pollfd p[HELPERS_MAX];
        size_t n = helpers_pollfds(hs, p, HELPERS_MAX);

        if (n == 0)
                return 0;
        /* A helper's fds close (its tap device goes) just before it can be reaped. */
        while (poll(p, n, (int) wait_ms) < 0)
                if (errno != EINTR)
                        return -errno;
        return reap_first_dead(hs, true, ret_line);
}

int helpers_reap_dead(Helpers *hs, char **ret_line) {
        return reap_first_dead(hs, false, ret_line);
}

void helpers_kill(Helpers *hs) {
        /* The last started first, as a teardown undoes a start. */
        while (hs->n > 0)
                kill_and_reap(&hs->helper[--hs->n]);
}
