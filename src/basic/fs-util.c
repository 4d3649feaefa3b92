/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "cleanup.h"
#include "fs-util.h"
#include "macro.h"
#include "path-util.h"
#include "util.h"

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, cap = 0;

        for (;;) {
                ssize_t k;

                if (n + 1 >= cap) {
                        size_t c = cap ? cap * 2 : 4096;
                        char *b;
                        if (c > max + 2)
                                c = max + 2;
                        if (c <= n + 1)
                                return -EFBIG;
                        b = realloc(buf, c);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        cap = c;
                }
                k = read(fd, buf + n, cap - 1 - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > max)
                        return -EFBIG;
        }
        if (!buf) {
                buf = malloc(1);
                if (!buf)
                        return -ENOMEM;
        }
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = n;
        return 0;
}

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max, ret, ret_len);
}

/* The first error wins; the walk goes on, removing what it can. */
static void keep_first(int *first, int r) {
        if (r < 0 && *first == 0)
                *first = r;
}

static int rm_rf_depth(int parent, const char *name, unsigned depth) {
        _cleanup_close_ int fd = -EBADF;
        struct dirent *de;
        int r = 0;
        DIR *d;

        if (unlinkat(parent, name, 0) >= 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        if (depth >= RM_RF_MAX_DEPTH)
                return -ELOOP;
        fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -EBADF;  /* owned by d now */
        for (;;) {
                errno = 0;
                de = readdir(d);
                if (!de) {
                        keep_first(&r, -errno);
                        break;
                }
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        keep_first(&r, rm_rf_depth(dirfd(d), de->d_name, depth + 1));
        }
        closedir(d);
        if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                keep_first(&r, -errno);
        return r;
}

int rm_rf(const char *path) {
        _cleanup_free_ char *parent = strdup(path);
        _cleanup_close_ int fd = -EBADF;
        char *slash;

        if (!parent)
                return -ENOMEM;
        slash = strrchr(parent, '/');
        if (!slash || slash == parent || isempty(slash + 1))
                return -EINVAL;
        *slash = 0;
        fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        return rm_rf_at(fd, slash + 1);
}

int rm_rf_at(int dirfd, const char *name) {
        return rm_rf_depth(dirfd, name, 0);
}

int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1;; s++) {
                char c = *s;

                if (c != '/' && c != 0)
                        continue;
                *s = 0;
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                *s = c;
                if (!c)
                        return 0;
        }
}

int mkdir_open_at(int dirfd, const char *name, mode_t mode) {
        int fd;

        if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int mkdir_mode(const char *path, mode_t mode) {
        _cleanup_close_ int fd = -EBADF;

        if (mkdir(path, mode) < 0 && errno != EEXIST)
                return -errno;
        /* The directory itself, never what a symlink in its place points
         * to; and the umask does not decide who may read it. */
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fchmod(fd, mode) < 0 ? -errno : 0;
}

int write_file_bytes(const char *path, const void *data, size_t len, mode_t mode) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);

        if (fd < 0)
                return -errno;
        return write_all(fd, data, len);
}

int write_file(const char *path, const char *content, mode_t mode) {
        return write_file_bytes(path, content, strlen(content), mode);
}

int write_line_file_replace_at(int dirfd, const char *name, const char *content, mode_t mode) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (asprintf(&tmp, "%s.new", name) < 0)
                return -ENOMEM;
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        r = write_all(fd, content, strlen(content));
        if (r >= 0)
                r = write_all(fd, "\n", 1);
        if (r < 0)
                return r;
        if (renameat(dirfd, tmp, dirfd, name) < 0)
                return -errno;
        return 0;
}

int copy_file(const char *from, const char *to, mode_t mode) {
        _cleanup_close_ int in = open(from, O_RDONLY | O_CLOEXEC), out = -EBADF;

        if (in < 0)
                return -errno;
        out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
        if (out < 0)
                return -errno;
        if (fchmod(out, mode) < 0)
                return -errno;
        return copy_fd(in, out);
}

int copy_fd(int from, int to) {
        char buf[65536];

        /* In the kernel where it can (a reflink, or no trip through this
         * process); else, from the start, by reads and writes. */
        for (bool first = true;; first = false) {
                ssize_t k = copy_file_range(from, NULL, to, NULL, (size_t) 1 << 30, 0);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k == 0)
                        return 0;
                if (k > 0)
                        continue;
                if (!first || !(errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
                                errno == EPERM || errno == EBADF || errno == ETXTBSY))
                        return -errno;
                break;
        }
        for (;;) {
                ssize_t k = read(from, buf, sizeof(buf));
                int r;

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : 0;
                r = write_all(to, buf, (size_t) k);
                if (r < 0)
                        return r;       /* -ENOSPC, -EDQUOT, ...: not a bare -EIO */
        }
}

static int copy_tree_depth(int from, const char *fname, int to, const char *tname, unsigned depth,
                           unsigned max_depth, CopyTreeFlags flags, bool (*skip)(int dirfd, const char *name)) {
        struct stat st;

        if (depth >= max_depth)
                return -ELOOP;
        if (fstatat(from, fname, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISREG(st.st_mode)) {
                _cleanup_close_ int in = -EBADF, out = -EBADF;
                int r;

                in = openat(from, fname, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
                if (in < 0)
                        return -errno;
                out = openat(to, tname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
                if (out < 0)
                        return -errno;
                r = copy_fd(in, out);
                if (r >= 0 && fchmod(out, st.st_mode & 0755) < 0)
                        r = -errno;
                if (r >= 0 && (flags & COPY_TREE_SYNC) && fsync(out) < 0)
                        r = -errno;
                return r;
        }
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t k = readlinkat(from, fname, target, sizeof(target) - 1);

                if (k < 0)
                        return -errno;
                target[k] = 0;
                return symlinkat(target, to, tname) < 0 ? -errno : 0;
        }
        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int sub = -EBADF, tsub = -EBADF;
                _cleanup_(closedirp) DIR *d = NULL;
                struct dirent *de;
                int r;

                if (mkdirat(to, tname, 0700) < 0)
                        return -errno;
                sub = openat(from, fname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return -errno;
                tsub = openat(to, tname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (tsub < 0)
                        return -errno;
                r = opendir_at(sub, &d);
                if (r < 0)
                        return r;
                while ((de = readdir(d))) {
                        if (dot_or_dot_dot(de->d_name) || (skip && skip(dirfd(d), de->d_name)))
                                continue;
                        r = copy_tree_depth(dirfd(d), de->d_name, tsub, de->d_name, depth + 1, max_depth, flags, skip);
                        if (r < 0)
                                return r;
                }
                if (fchmod(tsub, st.st_mode & 0755) < 0 || ((flags & COPY_TREE_SYNC) && fsync(tsub) < 0))
                        return -errno;
                return 0;
        }
        return -EOPNOTSUPP;
}

int copy_tree_at(int from, const char *fname, int to, const char *tname, unsigned max_depth, CopyTreeFlags flags,
                 bool (*skip)(int dirfd, const char *name)) {
        return copy_tree_depth(from, fname, to, tname, 0, max_depth, flags, skip);
}

int find_program(const char *name, char **ret) {
        static const char *const dirs[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", NULL };

        for (size_t i = 0; dirs[i]; i++) {
                _cleanup_free_ char *p = path_join(dirs[i], name);
                if (!p)
                        return -ENOMEM;
                if (access(p, X_OK) == 0) {
                        *ret = TAKE_PTR(p);
                        return 0;
                }
        }
        return -ENOENT;
}

int openat_beneath(int dirfd, const char *path, int flags, mode_t mode, bool same_mount) {
        struct open_how how = {
                .flags = (uint64_t) flags | O_CLOEXEC | O_NOFOLLOW,
                .mode = (flags & O_CREAT) ? mode : 0,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                           (same_mount ? RESOLVE_NO_XDEV : 0),
        };
        long fd = syscall(SYS_openat2, dirfd, path && *path ? path : ".", &how, sizeof(how));

        return fd < 0 ? -errno : (int) fd;
}

int opendir_at(int dirfd, DIR **ret) {
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                safe_close(fd);
                return r;
        }
        *ret = d;
        return 0;
}

int stat_birth_at(int dirfd, const char *name, int flags, struct stat *ret, FileBirth *ret_birth) {
        struct statx sx;

        if (statx(dirfd, name, flags, STATX_BASIC_STATS | STATX_BTIME, &sx) < 0)
                return -errno;
        *ret = (struct stat) {
                .st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
                .st_ino = sx.stx_ino,
                .st_mode = sx.stx_mode,
                .st_nlink = sx.stx_nlink,
                .st_uid = sx.stx_uid,
                .st_gid = sx.stx_gid,
                .st_rdev = makedev(sx.stx_rdev_major, sx.stx_rdev_minor),
                .st_size = (off_t) sx.stx_size,
                .st_blksize = (blksize_t) sx.stx_blksize,
                .st_blocks = (blkcnt_t) sx.stx_blocks,
                .st_atim = { .tv_sec = sx.stx_atime.tv_sec, .tv_nsec = sx.stx_atime.tv_nsec },
                .st_mtim = { .tv_sec = sx.stx_mtime.tv_sec, .tv_nsec = sx.stx_mtime.tv_nsec },
                .st_ctim = { .tv_sec = sx.stx_ctime.tv_sec, .tv_nsec = sx.stx_ctime.tv_nsec },
        };
        if (ret_birth)
                *ret_birth = (sx.stx_mask & STATX_BTIME)
                                     ? (FileBirth) { .sec = sx.stx_btime.tv_sec, .nsec = sx.stx_btime.tv_nsec, .known = true }
                                     : (FileBirth) {};
        return 0;
}

bool file_birth_same(const FileBirth *a, const FileBirth *b) {
        return !a->known || !b->known || (a->sec == b->sec && a->nsec == b->nsec);
}
