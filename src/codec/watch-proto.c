/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse-util.h"
#include "watch-proto.h"

bool watch_path_valid(const char *p, size_t len) {
        size_t start = 0;

        if (len == 0 || len > WATCH_PATH_MAX)
                return false;
        if (len == 1 && p[0] == '.')
                return true;
        for (size_t i = 0; i <= len; i++) {
                size_t n;

                if (i < len && (unsigned char) p[i] < 0x20)
                        return false;
                if (i < len && p[i] == 0x7f)
                        return false;
                if (i < len && p[i] != '/')
                        continue;
                n = i - start;
                /* Covers a leading '/', "//" and a trailing '/'. */
                if (n == 0 || (n == 1 && p[start] == '.') || (n == 2 && p[start] == '.' && p[start + 1] == '.'))
                        return false;
                start = i + 1;
        }
        return true;
}

char *watch_path_join(const char *dir, const char *name) {
        size_t a = strlen(dir), b = strlen(name);
        char *s;

        if (a == 1 && dir[0] == '.')
                return strdup(name);
        s = malloc(a + 1 + b + 1);
        if (!s)
                return NULL;
        memcpy(s, dir, a);
        s[a] = '/';
        memcpy(s + a + 1, name, b + 1);
        return s;
}

bool watch_path_skipped(const char *p) {
        static const char needle[] = ".git/objects";
        const size_t k = sizeof(needle) - 1;

        for (const char *s = p; (s = strstr(s, needle)); s++)
                if ((s == p || s[-1] == '/') && (s[k] == 0 || s[k] == '/'))
                        return true;
        return false;
}

int watch_dirs_set(WatchDirs *d, int wd, const char *rel) {
        char *copy;

        if (wd < 0)
                return -EINVAL;
        if ((size_t) wd >= d->size) {
                size_t n = (size_t) wd * 2 + 16;
                char **p = realloc(d->path, n * sizeof(char *));

                if (!p)
                        return -ENOMEM;
                memset(p + d->size, 0, (n - d->size) * sizeof(char *));
                d->path = p;
                d->size = n;
        }
        copy = strdup(rel);
        watch_dirs_drop(d, wd);
        if (!copy)
                return -ENOMEM;
        d->path[wd] = copy;
        d->n++;
        return 0;
}

const char *watch_dirs_get(const WatchDirs *d, int wd) {
        return wd >= 0 && (size_t) wd < d->size ? d->path[wd] : NULL;
}

void watch_dirs_drop(WatchDirs *d, int wd) {
        if (wd < 0 || (size_t) wd >= d->size || !d->path[wd])
                return;
        free(d->path[wd]);
        d->path[wd] = NULL;
        d->n--;
}

void watch_dirs_done(WatchDirs *d) {
        for (size_t i = 0; i < d->size; i++)
                free(d->path[i]);
        free(d->path);
        *d = (WatchDirs) {};
}

size_t watch_line_feed(WatchLineReader *r, const char *data, size_t len,
                       void (*line)(const char *path, void *userdata), void *userdata) {
        size_t dropped = 0;

        for (size_t i = 0; i < len; i++) {
                char c = data[i];

                if (c != '\n') {
                        if (r->discarding)
                                continue;
                        if (r->n == WATCH_PATH_MAX) {
                                r->discarding = true;
                                r->n = 0;
                                dropped++;
                                continue;
                        }
                        r->buf[r->n++] = c;
                        continue;
                }
                if (r->discarding) {
                        r->discarding = false;
                        continue;
                }
                /* A NUL inside a line is a control character: invalid. */
                if (watch_path_valid(r->buf, r->n)) {
                        r->buf[r->n] = 0;
                        line(r->buf, userdata);
                } else
                        dropped++;
                r->n = 0;
        }
        return dropped;
}

/* FNV-1a, 64 bits; 0 is kept for "empty". */
static uint64_t path_hash(const char *path) {
        uint64_t h = 0xcbf29ce484222325ULL;

        for (const unsigned char *s = (const unsigned char *) path; *s; s++)
                h = (h ^ *s) * 0x100000001b3ULL;
        return h ?: 1;
}

void watch_recent_note(WatchRecent *t, const char *path, uint64_t now_ms) {
        uint64_t h = path_hash(path);
        size_t slot = (size_t) (h % WATCH_RECENT_SLOTS);

        t->hash[slot] = h;
        t->at_ms[slot] = now_ms;
}

bool watch_recent_seen(const WatchRecent *t, const char *path, uint64_t now_ms, uint64_t window_ms) {
        uint64_t h = path_hash(path);
        size_t slot = (size_t) (h % WATCH_RECENT_SLOTS);

        return t->hash[slot] == h && t->at_ms[slot] <= now_ms && now_ms - t->at_ms[slot] <= window_ms;
}

bool watch_out_add(WatchOut *o, const char *path) {
        size_t k = strlen(path);

        if (o->fd < 0 || o->n + k + 1 > o->size) {
                o->left_out = o->fd >= 0;
                return false;
        }
        memcpy(o->buf + o->n, path, k);
        o->buf[o->n + k] = '\n';
        o->n += k + 1;
        return true;
}

bool watch_out_flush(WatchOut *o) {
        bool root = false;

        if (o->left_out && o->fd >= 0 && o->n + 2 <= o->size) {
                memcpy(o->buf + o->n, ".\n", 2);
                o->n += 2;
                o->left_out = false;
                root = true;
        }
        while (o->fd >= 0 && o->n > 0) {
                ssize_t k = write(o->fd, o->buf, o->n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        break;
                if (k <= 0) {
                        /* The reader let go of its end: the sandbox is stopping. */
                        close(o->fd);
                        o->fd = -1;
                        o->n = 0;
                        o->left_out = false;
                        break;
                }
                memmove(o->buf, o->buf + k, o->n - (size_t) k);
                o->n -= (size_t) k;
        }
        return root;
}

/* Linux: "anon_inode:inotify"; gVisor 0.0~20240729: "anon_inode:[inotifyfd:N]". */
static bool link_is_inotify(const char *target) {
        static const char prefix[] = "anon_inode:";

        if (strncmp(target, prefix, sizeof(prefix) - 1) != 0)
                return false;
        target += sizeof(prefix) - 1;
        return strcmp(target, "inotify") == 0 || strncmp(target, "[inotify", 8) == 0;
}

int watch_inotify_held(const char *proc_root, int self) {
        size_t looked = 0;
        struct dirent *de;
        int found = 0;
        DIR *procs;

        procs = opendir(proc_root);
        if (!procs)
                return -errno;
        while (!found && (de = readdir(procs))) {
                char path[sizeof(de->d_name) + 4], target[64];
                struct dirent *fe;
                DIR *fds;
                int pid;
                int dfd;

                /* Names that are not a process's ("self", "net", ...) are no number. */
                if (parse_int(de->d_name, 1, INT_MAX, &pid) < 0 || pid == self)
                        continue;
                /* Processes count towards the bound too: the sandbox decides how many there are. */
                if (++looked > WATCH_SCAN_MAX) {
                        found = 1;
                        break;
                }
                snprintf(path, sizeof(path), "%s/fd", de->d_name);
                dfd = openat(dirfd(procs), path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0) {
                        /* Gone is nothing; not ours to look at might be a watcher. */
                        if (errno == EACCES || errno == EPERM)
                                found = 1;
                        continue;
                }
                fds = fdopendir(dfd);
                if (!fds) {
                        close(dfd);
                        continue;
                }
                while (!found && (fe = readdir(fds))) {
                        ssize_t k;

                        if (fe->d_name[0] == '.')
                                continue;
                        if (++looked > WATCH_SCAN_MAX) {
                                found = 1;
                                break;
                        }
                        k = readlinkat(dirfd(fds), fe->d_name, target, sizeof(target) - 1);
                        if (k < 0 && (errno == EACCES || errno == EPERM))
                                found = 1;
                        if (k <= 0)
                                continue;
                        target[k] = 0;
                        if (link_is_inotify(target))
                                found = 1;
                }
                closedir(fds);
        }
        closedir(procs);
        return found;
}
