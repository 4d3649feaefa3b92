/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuse-ref: the smallest FUSE file system that serves a host directory as
 * it is, for bench/workspace's "fuse" row: what any FUSE hop between gVisor
 * and the workspace costs, with none of lazaret-view's rules, watches or
 * locks. It answers the kernel as the view does (no OPEN with
 * FUSE_CAP_NO_OPEN_SUPPORT, no atomic O_TRUNC, no write-back cache, the
 * same long timeouts, the same fixed pool of workers), so that view/fuse
 * is the view's own cost and fuse/bare the price of the mechanism; one
 * difference is left: its INIT reply is libfuse 3.14's, without the
 * PARALLEL_DIROPS and HANDLE_KILLPRIV that the view adds (fuse-init.h), so
 * the kernel may ask it for a file's mode before a write or chown where
 * it would not ask the view.
 *
 * Never a product part: it runs only in the benchmark's bare sandbox, as
 * the user namespace's root, on the benchmark's own directory.
 *
 * Usage: bench-fuse-ref SOURCE MOUNTPOINT   (stays in the foreground)
 */
#define FUSE_USE_VERSION 35

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "fuse-pool.h"

#define TIMEOUT 3600.0
#define WORKERS 4
#define HASH 65536u

/*
 * A directory holds an O_PATH fd; anything else is reached by its last
 * name in its parent (as the view does), so that a 20,000-file git status
 * holds no descriptor per file.
 */
typedef struct Ino {
        int fd;                 /* directories: O_PATH; else -1 */
        struct Ino *parent;     /* others: where name was last seen */
        char *name;
        dev_t dev;
        ino_t ino;
        uint64_t nlookup;
        struct Ino *next;
} Ino;

static struct {
        pthread_mutex_t lock;
        Ino root;
        Ino *hash[HASH];
        bool no_open;
} r = { .lock = PTHREAD_MUTEX_INITIALIZER };

static Ino *ino_of(fuse_ino_t i) {
        return i == FUSE_ROOT_ID ? &r.root : (Ino *) (uintptr_t) i;
}

static fuse_ino_t id_of(Ino *n) {
        return n == &r.root ? FUSE_ROOT_ID : (fuse_ino_t) (uintptr_t) n;
}

static unsigned slot(dev_t d, ino_t i) {
        return (unsigned) (((uint64_t) i * 0x9E3779B97F4A7C15ull ^ (uint64_t) d) >> 20) % HASH;
}

static void proc_path(int fd, char buf[static 32]) {
        snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

/* An O_PATH fd of n: a directory's own, else one opened by its name and checked (closed by ino_put()). */
static int ino_get(Ino *n) {
        struct stat st;
        int fd;

        if (n->fd >= 0)
                return n->fd;
        pthread_mutex_lock(&r.lock);
        if (n->parent && n->name)
                fd = openat(n->parent->fd, n->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        else {
                fd = -1;
                errno = ESTALE;
        }
        pthread_mutex_unlock(&r.lock);
        if (fd < 0)
                return -1;
        if (fstat(fd, &st) < 0 || st.st_dev != n->dev || st.st_ino != n->ino) {
                close(fd);
                errno = ESTALE;
                return -1;
        }
        return fd;
}

static void ino_put(Ino *n, int fd) {
        if (fd >= 0 && fd != n->fd)
                close(fd);
}

/* Under r.lock: n was last seen as name in dir. */
static void ino_seen(Ino *n, Ino *dir, const char *name) {
        char *copy;

        if (n->fd >= 0 || (n->parent == dir && n->name && !strcmp(n->name, name)))
                return;
        copy = strdup(name);
        if (!copy)
                return;
        free(n->name);
        n->name = copy;
        n->parent = dir;
}

static int do_lookup(Ino *dir, const char *name, struct fuse_entry_param *e) {
        Ino *n;
        int fd;

        memset(e, 0, sizeof(*e));
        if (fstatat(dir->fd, name, &e->attr, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        fd = -1;
        if (S_ISDIR(e->attr.st_mode)) {
                struct stat st;
                fd = openat(dir->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                if (fstat(fd, &st) < 0 || st.st_dev != e->attr.st_dev || st.st_ino != e->attr.st_ino) {
                        close(fd);
                        return -ESTALE;
                }
        }
        pthread_mutex_lock(&r.lock);
        for (n = r.hash[slot(e->attr.st_dev, e->attr.st_ino)]; n; n = n->next)
                if (n->dev == e->attr.st_dev && n->ino == e->attr.st_ino)
                        break;
        if (n) {
                n->nlookup++;
                ino_seen(n, dir, name);
                if (fd >= 0)
                        close(fd);
        } else {
                unsigned h = slot(e->attr.st_dev, e->attr.st_ino);
                n = calloc(1, sizeof(*n));
                if (!n) {
                        pthread_mutex_unlock(&r.lock);
                        close(fd);
                        return -ENOMEM;
                }
                *n = (Ino) { .fd = fd, .dev = e->attr.st_dev, .ino = e->attr.st_ino, .nlookup = 1, .next = r.hash[h] };
                ino_seen(n, dir, name);
                r.hash[h] = n;
        }
        pthread_mutex_unlock(&r.lock);
        e->ino = id_of(n);
        e->attr_timeout = e->entry_timeout = TIMEOUT;
        return 0;
}

static void forget_one(fuse_ino_t i, uint64_t k) {
        Ino *n = ino_of(i), **p;

        if (n == &r.root)
                return;
        pthread_mutex_lock(&r.lock);
        n->nlookup -= k < n->nlookup ? k : n->nlookup;
        if (n->nlookup == 0) {
                for (p = &r.hash[slot(n->dev, n->ino)]; *p; p = &(*p)->next)
                        if (*p == n) {
                                *p = n->next;
                                break;
                        }
                if (n->fd >= 0)
                        close(n->fd);
                free(n->name);
                free(n);
        }
        pthread_mutex_unlock(&r.lock);
}

static void op_init(void *u, struct fuse_conn_info *c) {
        (void) u;
        if (c->capable & FUSE_CAP_SPLICE_WRITE)
                c->want |= FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
        if (c->capable & FUSE_CAP_READDIRPLUS)
                c->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
        if (c->capable & FUSE_CAP_NO_OPEN_SUPPORT) {
                c->want |= FUSE_CAP_NO_OPEN_SUPPORT;
                r.no_open = true;
        }
        if (c->capable & FUSE_CAP_DONT_MASK)
                c->want |= FUSE_CAP_DONT_MASK;
        c->want &= ~(unsigned) (FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_WRITEBACK_CACHE | FUSE_CAP_POSIX_LOCKS |
                                FUSE_CAP_FLOCK_LOCKS);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
        struct fuse_entry_param e;
        int k = do_lookup(ino_of(parent), name, &e);

        if (k == -ENOENT) {
                memset(&e, 0, sizeof(e));
                e.entry_timeout = TIMEOUT;
                k = 0;
        }
        if (k < 0)
                fuse_reply_err(req, -k);
        else
                fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t i, uint64_t k) {
        forget_one(i, k);
        fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f) {
        for (size_t j = 0; j < count; j++)
                forget_one(f[j].ino, f[j].nlookup);
        fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t i, struct fuse_file_info *fi) {
        Ino *n = ino_of(i);
        struct stat st;
        int fd = fi && fi->fh ? (int) fi->fh : ino_get(n), k;

        k = fd < 0 ? -1 : fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
        if (!(fi && fi->fh))
                ino_put(n, fd);
        if (k < 0)
                fuse_reply_err(req, errno);
        else
                fuse_reply_attr(req, &st, TIMEOUT);
}

static void op_setattr(fuse_req_t req, fuse_ino_t i, struct stat *a, int set, struct fuse_file_info *fi) {
        Ino *n = ino_of(i);
        char pp[32];
        struct stat st;
        int fd = fi && fi->fh ? (int) fi->fh : -1, pfd = ino_get(n);

        if (pfd < 0)
                goto fail;
        proc_path(pfd, pp);
        if ((set & FUSE_SET_ATTR_MODE) && (fd >= 0 ? fchmod(fd, a->st_mode) : chmod(pp, a->st_mode)) < 0)
                goto fail;
        if (set & FUSE_SET_ATTR_SIZE) {
                int k;
                if (fd >= 0)
                        k = ftruncate(fd, a->st_size);
                else {
                        int w = open(pp, O_WRONLY | O_CLOEXEC);
                        k = w < 0 ? -1 : ftruncate(w, a->st_size);
                        if (w >= 0) {
                                int e = errno;
                                close(w);
                                errno = e;
                        }
                }
                if (k < 0)
                        goto fail;
        }
        if (set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
                struct timespec tv[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };
                if (set & FUSE_SET_ATTR_ATIME_NOW)
                        tv[0].tv_nsec = UTIME_NOW;
                else if (set & FUSE_SET_ATTR_ATIME)
                        tv[0] = a->st_atim;
                if (set & FUSE_SET_ATTR_MTIME_NOW)
                        tv[1].tv_nsec = UTIME_NOW;
                else if (set & FUSE_SET_ATTR_MTIME)
                        tv[1] = a->st_mtim;
                if ((fd >= 0 ? futimens(fd, tv) : utimensat(AT_FDCWD, pp, tv, 0)) < 0)
                        goto fail;
        }
        /* Owners: as the view, a chown changes nothing. */
        if ((fd >= 0 ? fstat(fd, &st) : fstatat(pfd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)) < 0)
                goto fail;
        ino_put(n, pfd);
        fuse_reply_attr(req, &st, TIMEOUT);
        return;
fail: {
        int e = errno;
        ino_put(n, pfd);
        fuse_reply_err(req, e);
}
}

static void op_readlink(fuse_req_t req, fuse_ino_t i) {
        char buf[PATH_MAX + 1];
        Ino *n = ino_of(i);
        int fd = ino_get(n), e;
        ssize_t k = fd < 0 ? -1 : readlinkat(fd, "", buf, sizeof(buf) - 1);

        e = errno;
        ino_put(n, fd);
        if (k < 0)
                fuse_reply_err(req, e);
        else {
                buf[k] = 0;
                fuse_reply_readlink(req, buf);
        }
}

static void made(fuse_req_t req, fuse_ino_t parent, const char *name, int k) {
        struct fuse_entry_param e;

        if (k < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        k = do_lookup(ino_of(parent), name, &e);
        if (k < 0)
                fuse_reply_err(req, -k);
        else
                fuse_reply_entry(req, &e);
}

static void op_mknod(fuse_req_t req, fuse_ino_t p, const char *name, mode_t mode, dev_t rdev) {
        made(req, p, name, mknodat(ino_of(p)->fd, name, mode, rdev));
}

static void op_mkdir(fuse_req_t req, fuse_ino_t p, const char *name, mode_t mode) {
        made(req, p, name, mkdirat(ino_of(p)->fd, name, mode));
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t p, const char *name) {
        made(req, p, name, symlinkat(target, ino_of(p)->fd, name));
}

static void op_link(fuse_req_t req, fuse_ino_t i, fuse_ino_t p, const char *name) {
        char pp[32];
        Ino *n = ino_of(i);
        int fd = ino_get(n), k, e;

        proc_path(fd, pp);
        k = fd < 0 ? -1 : linkat(AT_FDCWD, pp, ino_of(p)->fd, name, AT_SYMLINK_FOLLOW);
        e = errno;
        ino_put(n, fd);
        errno = e;
        made(req, p, name, k);
}

static void op_unlink(fuse_req_t req, fuse_ino_t p, const char *name) {
        fuse_reply_err(req, unlinkat(ino_of(p)->fd, name, 0) < 0 ? errno : 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t p, const char *name) {
        fuse_reply_err(req, unlinkat(ino_of(p)->fd, name, AT_REMOVEDIR) < 0 ? errno : 0);
}

static void op_rename(fuse_req_t req, fuse_ino_t p, const char *name, fuse_ino_t np, const char *nname,
                      unsigned flags) {
        struct stat st;

        if (renameat2(ino_of(p)->fd, name, ino_of(np)->fd, nname, flags) < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        if (fstatat(ino_of(np)->fd, nname, &st, AT_SYMLINK_NOFOLLOW) >= 0) {
                pthread_mutex_lock(&r.lock);
                for (Ino *n = r.hash[slot(st.st_dev, st.st_ino)]; n; n = n->next)
                        if (n->dev == st.st_dev && n->ino == st.st_ino)
                                ino_seen(n, ino_of(np), nname);
                pthread_mutex_unlock(&r.lock);
        }
        fuse_reply_err(req, 0);
}

static int open_again(Ino *n, int flags) {
        char pp[32];
        int pfd = ino_get(n), fd, e;

        if (pfd < 0)
                return -1;
        proc_path(pfd, pp);
        fd = open(pp, (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC);
        e = errno;
        ino_put(n, pfd);
        errno = e;
        return fd;
}

static void op_open(fuse_req_t req, fuse_ino_t i, struct fuse_file_info *fi) {
        int fd;

        if (r.no_open) {
                fuse_reply_err(req, ENOSYS);
                return;
        }
        fd = open_again(ino_of(i), fi->flags);
        if (fd < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        fi->fh = (uint64_t) fd;
        if (fuse_reply_open(req, fi) == -ENOENT)
                close(fd);
}

static void op_create(fuse_req_t req, fuse_ino_t p, const char *name, mode_t mode, struct fuse_file_info *fi) {
        struct fuse_entry_param e;
        int fd = openat(ino_of(p)->fd, name, (fi->flags & ~O_NOFOLLOW) | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode);
        int k;

        if (fd < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        k = do_lookup(ino_of(p), name, &e);
        if (k < 0) {
                close(fd);
                fuse_reply_err(req, -k);
                return;
        }
        if (r.no_open) {
                close(fd);
                fi->fh = 0;
        } else
                fi->fh = (uint64_t) fd;
        if (fuse_reply_create(req, &e, fi) == -ENOENT && fi->fh)
                close(fd);
}

static int request_fd(fuse_ino_t i, struct fuse_file_info *fi, int flags, bool *owned) {
        *owned = false;
        if (fi && fi->fh)
                return (int) fi->fh;
        *owned = true;
        return open_again(ino_of(i), flags);
}

static void op_read(fuse_req_t req, fuse_ino_t i, size_t size, off_t off, struct fuse_file_info *fi) {
        bool owned;
        int fd = request_fd(i, fi, O_RDONLY, &owned);

        if (fd < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        fuse_pool_reply_read(req, fd, size, off);
        if (owned)
                close(fd);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t i, struct fuse_bufvec *in, off_t off, struct fuse_file_info *fi) {
        bool owned;
        int fd = request_fd(i, fi, O_WRONLY, &owned);
        ssize_t k;

        if (fd < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        k = fuse_pool_write(in, fd, off);
        if (owned)
                close(fd);
        if (k < 0)
                fuse_reply_err(req, (int) -k);
        else
                fuse_reply_write(req, (size_t) k);
}

static void op_fsync(fuse_req_t req, fuse_ino_t i, int datasync, struct fuse_file_info *fi) {
        bool owned;
        int fd = request_fd(i, fi, O_RDONLY, &owned), k;

        if (fd < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        k = datasync ? fdatasync(fd) : fsync(fd);
        k = k < 0 ? errno : 0;
        if (owned)
                close(fd);
        fuse_reply_err(req, k);
}

typedef struct Dir {
        DIR *d;
        off_t off;
        struct dirent *e;
} Dir;

static void op_opendir(fuse_req_t req, fuse_ino_t i, struct fuse_file_info *fi) {
        Dir *d = calloc(1, sizeof(*d));
        int fd = openat(ino_of(i)->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (!d || fd < 0 || !(d->d = fdopendir(fd))) {
                int k = d ? errno : ENOMEM;
                if (fd >= 0)
                        close(fd);
                free(d);
                fuse_reply_err(req, k);
                return;
        }
        fi->fh = (uint64_t) (uintptr_t) d;
        fi->cache_readdir = 1;
        fi->keep_cache = 1;
        fuse_reply_open(req, fi);
}

static void readdir_common(fuse_req_t req, fuse_ino_t i, size_t size, off_t off, struct fuse_file_info *fi, bool plus) {
        Dir *d = (Dir *) (uintptr_t) fi->fh;
        char *buf = malloc(size), *p = buf;
        size_t left = size;

        if (!buf) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        if (off != d->off) {
                seekdir(d->d, off);
                d->e = NULL;
                d->off = off;
        }
        for (;;) {
                struct fuse_entry_param e = {};
                size_t k;

                if (!d->e) {
                        errno = 0;
                        d->e = readdir(d->d);
                        if (!d->e)
                                break;
                }
                if (plus && strcmp(d->e->d_name, ".") && strcmp(d->e->d_name, "..")) {
                        if (do_lookup(ino_of(i), d->e->d_name, &e) < 0) {
                                d->off = d->e->d_off;
                                d->e = NULL;
                                continue;
                        }
                } else {
                        e.attr.st_ino = d->e->d_ino;
                        e.attr.st_mode = (mode_t) d->e->d_type << 12;
                }
                k = plus ? fuse_add_direntry_plus(req, p, left, d->e->d_name, &e, d->e->d_off)
                         : fuse_add_direntry(req, p, left, d->e->d_name, &e.attr, d->e->d_off);
                if (k > left) {
                        if (plus && e.ino)
                                forget_one(e.ino, 1);
                        break;
                }
                p += k;
                left -= k;
                d->off = d->e->d_off;
                d->e = NULL;
        }
        fuse_reply_buf(req, buf, size - left);
        free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t i, size_t size, off_t off, struct fuse_file_info *fi) {
        readdir_common(req, i, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t i, size_t size, off_t off, struct fuse_file_info *fi) {
        readdir_common(req, i, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t i, struct fuse_file_info *fi) {
        Dir *d = (Dir *) (uintptr_t) fi->fh;

        (void) i;
        closedir(d->d);
        free(d);
        fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t i) {
        struct statvfs s;

        if (fstatvfs(ino_of(i)->fd, &s) < 0)
                fuse_reply_err(req, errno);
        else
                fuse_reply_statfs(req, &s);
}

static const struct fuse_lowlevel_ops ops = {
        .init = op_init,
        .lookup = op_lookup,
        .forget = op_forget,
        .forget_multi = op_forget_multi,
        .getattr = op_getattr,
        .setattr = op_setattr,
        .readlink = op_readlink,
        .mknod = op_mknod,
        .mkdir = op_mkdir,
        .symlink = op_symlink,
        .link = op_link,
        .unlink = op_unlink,
        .rmdir = op_rmdir,
        .rename = op_rename,
        .open = op_open,
        .create = op_create,
        .read = op_read,
        .write_buf = op_write_buf,
        .flush = fuse_pool_op_flush,
        .release = fuse_pool_op_release,
        .fsync = op_fsync,
        .opendir = op_opendir,
        .readdir = op_readdir,
        .readdirplus = op_readdirplus,
        .releasedir = op_releasedir,
        .statfs = op_statfs,
};


int main(int argc, char *argv[]) {
        /* Mounted as the view is: no default_permissions (the kernel would
         * then ask for stale attributes before its permission checks),
         * other users allowed (the sandbox's IDs are not only the mounter's). */
        char *fargv[] = { argv[0], (char *) "-o", (char *) "allow_other", NULL };
        struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
        struct fuse_session *se;
        struct stat st;

        if (argc != 3) {
                fprintf(stderr, "usage: %s SOURCE MOUNTPOINT\n", argv[0]);
                return 2;
        }
        r.root.fd = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (r.root.fd < 0 || fstat(r.root.fd, &st) < 0) {
                fprintf(stderr, "fuse-ref: cannot open %s: %m\n", argv[1]);
                return 1;
        }
        r.root.dev = st.st_dev;
        r.root.ino = st.st_ino;
        r.root.nlookup = 2;
        umask(0);
        se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
        if (!se || fuse_session_mount(se, argv[2]) < 0) {
                fprintf(stderr, "fuse-ref: cannot mount %s\n", argv[2]);
                return 1;
        }
        (void) fuse_pool_run(se, WORKERS);
        fuse_session_unmount(se);
        fuse_session_destroy(se);
        return 0;
}
