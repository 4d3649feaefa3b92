/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-watch: the host side of the host-edit relay (spec section 4.6), a
 * supervised helper of the Runtime Supervisor (helper.h).
 *
 * gVisor's inotify sees only the sandbox's own changes. This helper watches
 * the workspace on the host with one inotify watch per directory (at most
 * --max-watches, one line on stderr when that or the kernel's
 * fs.inotify.max_user_watches is reached), skips git object stores,
 * coalesces what changed during WATCH_BATCH_MS and writes the
 * workspace-relative paths, one per line (watch-proto.h), into the pipe
 * that is the sandbox init's standard input; the relay there turns each
 * into an inotify event inside.
 *
 * Echoes: the relay's trigger (a chmod to the same mode) reaches the host
 * as IN_ATTRIB on a path just sent; such an event, and IN_ATTRIB on any
 * directory, is not relayed. The sandbox's own writes do reach this
 * watcher; the relay drops them (it saw them inside first).
 *
 * fds: 3 readiness (one byte once every directory present is watched),
 * 4 the workspace directory (the supervisor's staged copy of the checked
 * mount), 5 the channel's write end. After the first walk it drops every
 * capability, sets NO_NEW_PRIVS and loads a seccomp allowlist. If the
 * channel's reader goes (the sandbox stopped) it stays quiet until the
 * supervisor ends it: only the supervisor decides what a death means.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seccomp.h>

#include "cleanup.h"
#include "fs-util.h"
#include "harden.h"
#include "macro.h"
#include "parse-util.h"
#include "util.h"
#include "watch-proto.h"

#define WATCH_READY_FD 3
#define WATCH_ROOT_FD 4
#define WATCH_CHANNEL_FD 5
#define WATCH_BATCH_MS 10
#define WATCH_PENDING_MAX 1024u
#define WATCH_OUT_MAX (256u * 1024u)
#define WATCH_DEPTH_MAX 64
#define WATCH_MASK (IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB | \
                    IN_ONLYDIR | IN_EXCL_UNLINK)

static unsigned arg_max_watches = 8192;

typedef struct Watcher {
        int inotify_fd;
        int root_fd;
        WatchOut out;                   /* the channel; its fd -1 once its reader is gone */
        WatchDirs dirs;
        bool told_full;
        char *pending[WATCH_PENDING_MAX];
        size_t n_pending;
        uint64_t generation;            /* of the batch being gathered */
        uint64_t batch_deadline;        /* 0: no batch open */
        WatchRecent queued;             /* in this batch (generation as the time) */
        WatchRecent sent;               /* for the trigger's IN_ATTRIB echo */
} Watcher;

static void queue(Watcher *w, const char *rel) {
        if (watch_recent_seen(&w->queued, rel, w->generation, 0))
                return;
        if (w->batch_deadline == 0)
                w->batch_deadline = now_msec() + WATCH_BATCH_MS;
        /* A full batch: the root stands for all of it. */
        if (w->n_pending == WATCH_PENDING_MAX) {
                if (watch_recent_seen(&w->queued, ".", w->generation, 0))
                        return;
                free(w->pending[WATCH_PENDING_MAX - 1]);
                w->pending[WATCH_PENDING_MAX - 1] = strdup(".");
                watch_recent_note(&w->queued, ".", w->generation);
                return;
        }
        w->pending[w->n_pending] = strdup(rel);
        if (w->pending[w->n_pending]) {
                w->n_pending++;
                watch_recent_note(&w->queued, rel, w->generation);
        }
}

static void tell_full(Watcher *w, const char *rel, int r) {
        if (w->told_full)
                return;
        w->told_full = true;
        if (r == -ENOSPC)
                fprintf(stderr, "lazaret-watch: the kernel's limit on inotify watches (fs.inotify.max_user_watches) is "
                        "reached at %zu directories: host edits in %s and in directories not watched yet do not reach "
                        "file watchers inside the sandbox (README.md, \"Troubleshooting\")\n", w->dirs.n, rel);
        else
                fprintf(stderr, "lazaret-watch: the workspace has more than %u directories: host edits in %s and in "
                        "directories not watched yet do not reach file watchers inside the sandbox (README.md, "
                        "\"Troubleshooting\")\n", arg_max_watches, rel);
}

static void add_watch(Watcher *w, int fd, const char *rel) {
        char proc[64];
        int wd;

        if (w->dirs.n >= arg_max_watches) {
                tell_full(w, rel, -EMFILE);
                return;
        }
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        wd = inotify_add_watch(w->inotify_fd, proc, WATCH_MASK);
        if (wd < 0) {
                if (errno == ENOSPC)
                        tell_full(w, rel, -ENOSPC);
                return;
        }
        (void) watch_dirs_set(&w->dirs, wd, rel);
}

/* Watches directory fd (rel) and every directory below it, never through a link;
 * with announce, every entry found is queued too (a directory that came from the host). */
static void watch_tree(Watcher *w, int fd, const char *rel, bool announce, int depth) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;

        if (watch_path_skipped(rel) || depth > WATCH_DEPTH_MAX)
                return;
        add_watch(w, fd, rel);
        if (opendir_at(fd, &d) < 0)
                return;
        while ((de = readdir(d))) {
                _cleanup_free_ char *sub = NULL;
                _cleanup_close_ int cfd = -EBADF;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                sub = watch_path_join(rel, de->d_name);
                if (!sub || !watch_path_valid(sub, strlen(sub)))
                        continue;
                if (announce && !watch_path_skipped(sub))
                        queue(w, sub);
                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                cfd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd >= 0)
                        watch_tree(w, cfd, sub, announce, depth + 1);
        }
}

/* A directory made or moved in on the host, found by its parent's fd path. */
static void watch_new_dir(Watcher *w, const char *rel) {
        _cleanup_close_ int fd = -EBADF;
        char buf[WATCH_PATH_MAX + 1], *save = NULL;

        fd = openat(w->root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        snprintf(buf, sizeof(buf), "%s", rel);
        for (char *c = strtok_r(buf, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
                int nfd = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                safe_close(fd);
                fd = nfd;
        }
        if (fd >= 0)
                watch_tree(w, fd, rel, true, 0);
}

static void on_event(Watcher *w, const struct inotify_event *e) {
        _cleanup_free_ char *rel = NULL;
        const char *dir;

        if (e->mask & IN_Q_OVERFLOW) {
                queue(w, ".");
                return;
        }
        dir = watch_dirs_get(&w->dirs, e->wd);
        if (!dir)
                return;
        if (e->mask & IN_IGNORED) {
                watch_dirs_drop(&w->dirs, e->wd);
                return;
        }
        rel = e->len ? watch_path_join(dir, e->name) : strdup(dir);
        if (!rel || !watch_path_valid(rel, strlen(rel)) || watch_path_skipped(rel))
                return;
        /* The relay's own trigger, or a directory's metadata: not relayed. */
        if (!(e->mask & ~(IN_ATTRIB | IN_ISDIR)) &&
            ((e->mask & IN_ISDIR) || watch_recent_seen(&w->sent, rel, now_msec(), WATCH_ECHO_WINDOW_MS)))
                return;
        if ((e->mask & IN_ISDIR) && (e->mask & (IN_CREATE | IN_MOVED_TO)))
                watch_new_dir(w, rel);
        queue(w, rel);
}

/* The batch into the output buffer, as much of the buffer as the pipe takes now. */
static void flush(Watcher *w) {
        if (w->batch_deadline != 0 && now_msec() >= w->batch_deadline) {
                for (size_t i = 0; i < w->n_pending; i++) {
                        if (watch_out_add(&w->out, w->pending[i]))
                                watch_recent_note(&w->sent, w->pending[i], now_msec());
                        w->pending[i] = mfree(w->pending[i]);
                }
                w->n_pending = 0;
                w->batch_deadline = 0;
                w->generation++;
        }
        /* The sandbox read slower than the host changed: the root stands for what did not fit. */
        if (watch_out_flush(&w->out))
                watch_recent_note(&w->sent, ".", now_msec());
}

/* Watching, walking new directories, writing the channel, and nothing else. */
#define WATCH_SYSCALLS(X) \
        X(read) X(write) X(close) X(poll) X(ppoll) X(openat) X(getdents64) X(fstat) X(newfstatat) X(fcntl) \
        X(inotify_add_watch) X(inotify_rm_watch) X(clock_gettime) X(brk) X(mmap) X(munmap) X(mremap) X(madvise) \
        X(futex) X(rt_sigreturn) X(rt_sigprocmask) X(restart_syscall) X(exit) X(exit_group) X(lseek) X(getrandom)

static int load_seccomp(void) {
#define NR(name) SCMP_SYS(name),
        static const int allowed[] = { WATCH_SYSCALLS(NR) };
#undef NR

        return harden_load_allowlist(allowed, ELEMENTSOF(allowed));
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "max-watches", required_argument, NULL, 'm' },
                {}
        };
        int c, v;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'm':
                        if (parse_int(optarg, 1, 1 << 24, &v) < 0)
                                return -EINVAL;
                        arg_max_watches = (unsigned) v;
                        break;
                default:
                        return -EINVAL;
                }
        return optind == argc ? 0 : -EINVAL;
}

int main(int argc, char *argv[]) {
        static Watcher w = { .inotify_fd = -EBADF };
        int r;

        if (parse_argv(argc, argv) < 0) {
                fprintf(stderr, "lazaret-watch is started by lazaret-supervisor only.\n");
                return 2;
        }
        if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
                return 1;
        w.root_fd = WATCH_ROOT_FD;
        w.out = (WatchOut) { .fd = WATCH_CHANNEL_FD, .buf = malloc(WATCH_OUT_MAX), .size = WATCH_OUT_MAX };
        w.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (!w.out.buf || w.inotify_fd < 0 || fcntl(w.out.fd, F_SETFL, O_NONBLOCK) < 0 ||
            fcntl(w.root_fd, F_SETFD, FD_CLOEXEC) < 0 || fcntl(w.out.fd, F_SETFD, FD_CLOEXEC) < 0) {
                fprintf(stderr, "lazaret-watch: cannot set up: %m\n");
                return 1;
        }
        watch_tree(&w, w.root_fd, ".", false, 0);
        if (w.dirs.n == 0) {
                fprintf(stderr, "lazaret-watch: cannot watch the workspace: %m\n");
                return 1;
        }
        r = harden_drop_privileges();
        if (r >= 0)
                r = load_seccomp();
        if (r < 0) {
                fprintf(stderr, "lazaret-watch: cannot enter its sandbox: %s\n", strerror(-r));
                return 1;
        }
        if (write(WATCH_READY_FD, "R", 1) != 1)
                return 1;
        (void) close(WATCH_READY_FD);

        for (;;) {
                char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
                struct pollfd p[2] = {
                        { .fd = w.inotify_fd, .events = POLLIN },
                        { .fd = w.out.n > 0 ? w.out.fd : -1, .events = POLLOUT },
                };
                int timeout = -1;
                ssize_t n;

                if (w.batch_deadline != 0) {
                        uint64_t now = now_msec();
                        timeout = now >= w.batch_deadline ? 0 : (int) (w.batch_deadline - now);
                }
                if (poll(p, 2, timeout) < 0 && errno != EINTR)
                        return 1;
                while ((n = read(w.inotify_fd, buf, sizeof(buf))) > 0)
                        for (char *q = buf; q < buf + n;) {
                                const struct inotify_event *e = (const struct inotify_event *) q;

                                q += sizeof(*e) + e->len;
                                on_event(&w, e);
                        }
                flush(&w);
        }
}
