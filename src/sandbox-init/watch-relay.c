/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "watch-proto.h"
#include "watch-relay.h"

/* Directories watched inside for the sandbox's own changes, as many as the host
 * watcher may watch: each pins a gVisor dentry, which holds host fds. */
#define RELAY_WATCHES_MAX 8192u
#define RELAY_DEPTH_MAX 64
#define RELAY_GATHER_MS 3
#define RELAY_NOBODY_GATHER_MS 50
#define RELAY_MASK (IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB | \
                    IN_ONLYDIR | IN_DONT_FOLLOW)

/* A watcher seen inside is believed there this long before /proc is looked at again. */
#define RELAY_WATCHERS_KEEP_MS 1000
/* The relay's counts, for lazaret-init(8) and the tests: rewritten once the channel is quiet this long. */
#define RELAY_STATS_PATH "/run/lazaret-relay"
#define RELAY_STATS_MS 200

typedef struct Relay {
        bool judged;                    /* the source told echoes from host changes: nothing to watch inside */
        bool deliver;                   /* the paths being read are to be triggered */
        bool stats_dirty;
        bool nobody;                    /* the last look through /proc found no inotify descriptor */
        uint64_t watching_at;           /* when an inotify descriptor was last seen inside, or 0 */
        uint64_t delivered, unwatched, reads, scans;
        int inotify_fd;
        int root_fd;                    /* O_PATH of the workspace */
        WatchDirs dirs;
        WatchRecent sandbox;            /* changes gVisor saw made inside */
        WatchRecent triggered;          /* our own triggers, whose IN_ATTRIB is no change */
        WatchLineReader reader;
} Relay;

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/*
 * The trigger: a chmod to the mode the inode already has. gVisor fires
 * IN_ATTRIB for it on the inode's watches and, naming it, on its parent's;
 * on the host only the ctime moves (a workspace view can drop it). Through
 * /proc/self/fd of an O_PATH fd, so that it applies to the inode that was
 * opened without following a symbolic link, never to a link's target.
 * One small function: the one place to change the trigger.
 */
static int watch_trigger(int fd) {
        char proc[64];
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISLNK(st.st_mode))
                return -ELOOP;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        if (chmod(proc, st.st_mode & 07777) < 0)
                return -errno;
        return 0;
}

static void add_watch(Relay *r, int fd, const char *rel) {
        char proc[64];
        int wd;

        if (r->dirs.n >= RELAY_WATCHES_MAX)
                return;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        wd = inotify_add_watch(r->inotify_fd, proc, RELAY_MASK & ~IN_DONT_FOLLOW);
        if (wd >= 0)
                (void) watch_dirs_set(&r->dirs, wd, rel);
}

/* Watches the directory fd (relative path rel) and every directory below it, never through a link. */
static void watch_tree(Relay *r, int fd, const char *rel, int depth) {
        struct dirent *de;
        DIR *d;
        int dfd;

        if (watch_path_skipped(rel) || depth > RELAY_DEPTH_MAX)
                return;
        add_watch(r, fd, rel);
        dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return;
        d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return;
        }
        while ((de = readdir(d)) && r->dirs.n < RELAY_WATCHES_MAX) {
                char *sub;
                int cfd;

                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                cfd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cfd < 0)
                        continue;
                sub = watch_path_join(rel, de->d_name);
                if (sub && watch_path_valid(sub, strlen(sub)))
                        watch_tree(r, cfd, sub, depth + 1);
                free(sub);
                close(cfd);
        }
        closedir(d);
}

/*
 * Opens what rel names beneath the workspace, one component at a time,
 * never following a link: the deepest directory that exists when a
 * component is missing (a path deleted or renamed away on the host: its
 * directory gets the event), the containing directory when rel names a
 * symbolic link. *ret_depth: how many components the result is deep.
 */
static int open_beneath(Relay *r, const char *rel, size_t *ret_depth) {
        char buf[WATCH_PATH_MAX + 1], *save = NULL, *c;
        size_t depth = 0;
        int fd;

        fd = openat(r->root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (strcmp(rel, ".") != 0) {
                snprintf(buf, sizeof(buf), "%s", rel);
                for (c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                        int nfd = openat(fd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                        struct stat st;

                        if (nfd < 0)
                                break;
                        if (fstat(nfd, &st) < 0 || S_ISLNK(st.st_mode)) {
                                close(nfd);
                                break;
                        }
                        close(fd);
                        fd = nfd;
                        depth++;
                        if (!S_ISDIR(st.st_mode))
                                break;
                }
        }
        *ret_depth = depth;
        return fd;
}

/*
 * Whether a process inside holds an inotify descriptor. A trigger nobody
 * can see still costs gVisor the lookups of its path and a chmod through
 * the view, and a host branch switch or `tar x` brings thousands of paths.
 * A watcher once seen is believed there for RELAY_WATCHERS_KEEP_MS; while
 * none is, /proc is looked at again for every read of the channel, so a
 * watcher that was there when a change reached the relay gets it. One
 * that comes later reads the tree itself when it starts, as it must. When
 * /proc cannot be read, everything is delivered.
 */
static bool anyone_watching(Relay *r) {
        uint64_t now = now_ms();

        if (r->watching_at != 0 && now - r->watching_at < RELAY_WATCHERS_KEEP_MS)
                return true;
        r->scans++;
        r->nobody = watch_inotify_held("/proc", (int) getpid()) == 0;
        if (r->nobody)
                return false;
        r->watching_at = now;
        return true;
}

static void stats_write(Relay *r) {
        char buf[160];
        int fd, n;

        r->stats_dirty = false;
        n = snprintf(buf, sizeof(buf), "delivered %llu\nunwatched %llu\nreads %llu\nscans %llu\n",
                     (unsigned long long) r->delivered, (unsigned long long) r->unwatched,
                     (unsigned long long) r->reads, (unsigned long long) r->scans);
        fd = open(RELAY_STATS_PATH ".new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return;
        if (write(fd, buf, (size_t) n) == n && close(fd) == 0)
                (void) rename(RELAY_STATS_PATH ".new", RELAY_STATS_PATH);
        else
                (void) close(fd);
}

static void on_host_path(const char *rel, void *userdata) {
        Relay *r = userdata;
        char what[WATCH_PATH_MAX + 1];
        size_t depth, k = 0;
        struct stat st;
        int fd;

        if (watch_path_skipped(rel) ||
            (!r->judged && watch_recent_seen(&r->sandbox, rel, now_ms(), WATCH_ECHO_WINDOW_MS)))
                return;
        r->stats_dirty = true;
        if (!r->deliver) {
                r->unwatched++;
                return;
        }
        r->delivered++;
        fd = open_beneath(r, rel, &depth);
        if (fd < 0)
                return;
        /* The path of what was opened: the first depth components of rel. */
        if (depth == 0)
                snprintf(what, sizeof(what), ".");
        else {
                const char *s = rel;

                for (size_t i = 0; i < depth; i++) {
                        s = strchr(s, '/');
                        if (!s)
                                break;
                        s++;
                }
                k = s ? (size_t) (s - rel - 1) : strlen(rel);
                snprintf(what, sizeof(what), "%.*s", (int) k, rel);
        }
        if (watch_trigger(fd) >= 0 && !r->judged)
                watch_recent_note(&r->triggered, what, now_ms());
        /* A directory made on the host: the sandbox's changes in it are to be known too. */
        if (!r->judged && depth > 0 && fstat(fd, &st) >= 0 && S_ISDIR(st.st_mode))
                add_watch(r, fd, what);
        close(fd);
}

/* The sandbox's own changes, as gVisor reports them: noted, so that their host echo is not relayed. */
static void drain_inotify(Relay *r) {
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n;

        if (r->inotify_fd < 0)
                return;
        while ((n = read(r->inotify_fd, buf, sizeof(buf))) > 0) {
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *e = (const struct inotify_event *) p;
                        const char *dir;
                        char *rel;

                        p += sizeof(*e) + e->len;
                        dir = watch_dirs_get(&r->dirs, e->wd);
                        if (!dir)
                                continue;
                        if (e->mask & IN_IGNORED) {
                                watch_dirs_drop(&r->dirs, e->wd);
                                continue;
                        }
                        rel = e->len ? watch_path_join(dir, e->name) : strdup(dir);
                        if (!rel)
                                continue;
                        if (!(e->mask & ~(IN_ATTRIB | IN_ISDIR)) &&
                            watch_recent_seen(&r->triggered, rel, now_ms(), WATCH_ECHO_WINDOW_MS)) {
                                free(rel);
                                continue;
                        }
                        watch_recent_note(&r->sandbox, rel, now_ms());
                        if ((e->mask & IN_ISDIR) && (e->mask & (IN_CREATE | IN_MOVED_TO)) && e->len &&
                            watch_path_valid(rel, strlen(rel))) {
                                int parent = -EBADF, fd = -EBADF;
                                size_t depth;

                                parent = open_beneath(r, dir, &depth);
                                if (parent >= 0)
                                        fd = openat(parent, e->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                if (fd >= 0)
                                        watch_tree(r, fd, rel, 0);
                                if (fd >= 0)
                                        close(fd);
                                if (parent >= 0)
                                        close(parent);
                        }
                        free(rel);
                }
        }
}

int watch_relay_run(const char *workspace, int channel_fd, bool judged) {
        Relay *r = calloc(1, sizeof(Relay));
        int ret = 0;

        if (!r)
                return -ENOMEM;
        r->judged = judged;
        r->inotify_fd = judged ? -EBADF : inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        r->root_fd = open(workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if ((!judged && r->inotify_fd < 0) || r->root_fd < 0) {
                ret = -errno;
                goto finish;
        }
        if (!judged)
                watch_tree(r, r->root_fd, ".", 0);
        stats_write(r);

        for (;;) {
                struct pollfd p[2] = {
                        { .fd = r->inotify_fd, .events = POLLIN },
                        { .fd = channel_fd, .events = POLLIN },
                };
                char buf[65536];
                ssize_t n;
                int k;

                k = poll(p, 2, r->stats_dirty ? RELAY_STATS_MS : -1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        ret = -errno;
                        break;
                }
                if (k == 0) {
                        stats_write(r);
                        continue;
                }
                /* How long what came gathers before it is read:
                 *   - the sandbox's own changes come several events to a file, so a
                 *     burst of writes wakes the relay once, not once per event (their
                 *     host echoes are at least the host watcher's coalescing later);
                 *   - a judged source writes a path once its notifier confirmed the
                 *     kernel's invalidation of it, or after waiting 100 ms for that
                 *     while a request holds the directory; a trigger ahead of the
                 *     invalidation would find the entry still cached (a file deleted
                 *     on the host opened, instead of its directory): RELAY_GATHER_MS
                 *     is the margin for that case;
                 *   - while nobody watches, a judged source's batches (a few ms apart)
                 *     during a host `tar x` would wake the relay, and make it look
                 *     through /proc (some thirty syscalls in gVisor), a thousand times:
                 *     RELAY_NOBODY_GATHER_MS. A watcher that has just started still
                 *     hears of a change within the 200 ms of spec 4.6. */
                {
                        long ms = 0;

                        if (r->judged && (p[1].revents & POLLIN))
                                ms = r->nobody ? RELAY_NOBODY_GATHER_MS : RELAY_GATHER_MS;
                        else if ((p[0].revents & POLLIN) && !p[1].revents)
                                ms = RELAY_GATHER_MS;
                        if (ms > 0) {
                                struct timespec gather = { .tv_nsec = ms * 1000000L };
                                (void) nanosleep(&gather, NULL);
                        }
                }
                /* Inside first: a write made inside is queued there before its host echo reaches the channel. */
                drain_inotify(r);
                if (!p[1].revents)
                        continue;
                n = read(channel_fd, buf, sizeof(buf));
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n <= 0)
                        break;
                drain_inotify(r);
                r->reads++;
                /* Without the judged source, the relay's own watches need every path (a directory
                 * made on the host is watched too): only a judged relay leaves them out. */
                r->deliver = !r->judged || anyone_watching(r);
                (void) watch_line_feed(&r->reader, buf, (size_t) n, on_host_path, r);
        }
finish:
        watch_dirs_done(&r->dirs);
        if (r->inotify_fd >= 0)
                close(r->inotify_fd);
        if (r->root_fd >= 0)
                close(r->root_fd);
        free(r);
        return ret;
}
