/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Reads everything from fd (at most max bytes) into a NUL-terminated buffer.
 * More than max bytes is -EFBIG: files of peers and users have hard limits.
 */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* open(path, O_RDONLY|O_CLOEXEC|O_NOCTTY) and read_full_fd(). */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len);

/*
 * Removes a tree below its parent directory, never following a symlink.
 * It removes all it can: on an error it goes on with the rest of the tree
 * and returns the first error met (0 when the tree is gone, or never
 * existed). A directory nested deeper than RM_RF_MAX_DEPTH below path is
 * left in place, as -ELOOP: the walk holds one fd per level, and trees
 * that untrusted code writes can be nested arbitrarily deep.
 */
#define RM_RF_MAX_DEPTH 256U
int rm_rf(const char *path);
/* The same for name beneath dirfd (nothing followed). */
int rm_rf_at(int dirfd, const char *name);

/*
 * openat2() of path below dirfd that never leaves it and follows no
 * symbolic link ("/proc" magic links included): RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, and RESOLVE_NO_XDEV with
 * same_mount. O_CLOEXEC and O_NOFOLLOW are added to flags; mode counts only
 * with O_CREAT; "" or NULL is dirfd itself ("."). A new fd, or -errno.
 */
int openat_beneath(int dirfd, const char *path, int flags, mode_t mode, bool same_mount);

/* A listing of the directory dirfd (an O_PATH fd will do), at its start, with a new fd of its own. */
int opendir_at(int dirfd, DIR **ret);

/* mkdir -p: missing components are created with mode. */
int mkdir_parents(const char *path, mode_t mode);

/*
 * mkdir: creates path with mode, tolerating an existing directory; sets the
 * mode either way (not the umask), through an fd of the directory itself:
 * a symlink or a file at path is -ENOTDIR, and nothing is changed.
 */
int mkdir_mode(const char *path, mode_t mode);

/*
 * dirfd/name as a directory, made with mode when missing, opened without
 * following a symlink (O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC): the fd,
 * or -errno (-ENOTDIR/-ELOOP for anything but a directory there).
 */
int mkdir_open_at(int dirfd, const char *name, mode_t mode);

/* Writes to a new or truncated file, never through a symlink; mode as open(2) gets it. */
int write_file_bytes(const char *path, const void *data, size_t len, mode_t mode);
/* write_file_bytes() of a string. */
int write_file(const char *path, const char *content, mode_t mode);
/*
 * Replaces name in dirfd with content and a final newline: written whole
 * under name.new (never through a symlink), then renamed over name, so a
 * reader sees the old file or the new one.
 */
int write_line_file_replace_at(int dirfd, const char *name, const char *content, mode_t mode);

/* Copies what is left to read of from into to, to its end; -errno of the read or write that failed. */
int copy_fd(int from, int to);

/* A directory entry's name that stands for the directory itself or its parent. */
static inline bool dot_or_dot_dot(const char *name) {
        return name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0));
}

/*
 * Copies the entry fname below dirfd from to tname below dirfd to, neither
 * followed: a regular file, a symbolic link or a whole directory, nested at
 * most max_depth deep (-ELOOP). What is made gets the source's mode less
 * set-ID bits and group/other write (st_mode & 0755), a directory only once
 * its entries are in. skip (may be NULL) leaves out entries of a directory
 * being copied. With COPY_TREE_SYNC each file and directory is fsync'ed.
 * Anything else (a FIFO, a device, a socket) is -EOPNOTSUPP. Whatever was
 * made stays on failure: the caller copies to a temporary name.
 */
typedef enum CopyTreeFlags {
        COPY_TREE_SYNC = 1 << 0,
} CopyTreeFlags;
int copy_tree_at(int from, const char *fname, int to, const char *tname, unsigned max_depth, CopyTreeFlags flags,
                 bool (*skip)(int dirfd, const char *name));

/* Copies a file (never writing through a symlink); the copy gets exactly mode. */
int copy_file(const char *from, const char *to, mode_t mode);

/*
 * An executable in the fixed system search path (the one systemd uses for
 * ExecStart=, not $PATH: the coordinator's environment is not the user's).
 * -ENOENT when there is none, -ENOMEM: a NULL would not say which.
 */
int find_program(const char *name, char **ret);

/* A file's birth time (statx(2)'s STATX_BTIME), where its file system keeps one. */
typedef struct FileBirth {
        int64_t sec;
        uint32_t nsec;
        bool known;
} FileBirth;

/*
 * fstatat(dirfd, name, ret, flags) by one statx(2), which also gives the
 * birth time where the file system keeps one (ext4, xfs, btrfs, tmpfs):
 * ret_birth (may be NULL) unknown otherwise. With AT_EMPTY_PATH and "",
 * fstat() of dirfd. 0, or -errno.
 */
int stat_birth_at(int dirfd, const char *name, int flags, struct stat *ret, FileBirth *ret_birth);

/*
 * Whether a and b may be the births of one object: false only where both
 * are known and differ (an inode number given again is a new birth).
 */
bool file_birth_same(const FileBirth *a, const FileBirth *b);
