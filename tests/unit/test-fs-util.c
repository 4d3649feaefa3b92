/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "path-util.h"

static char *tmpdir(void) {
        char *d = strdup("/tmp/lazaret-test-fs-XXXXXX");

        cr_assert_not_null(d);
        cr_assert_not_null(mkdtemp(d));
        return d;
}

/* Makes levels nested directories "d" below dir; returns an fd of the deepest. */
static void nest(int dir, unsigned levels) {
        int fd = dup(dir);

        cr_assert_geq(fd, 0);
        for (unsigned i = 0; i < levels; i++) {
                int next;

                cr_assert_eq(mkdirat(fd, "d", 0700), 0);
                next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                cr_assert_geq(next, 0);
                close(fd);
                fd = next;
        }
        cr_assert_eq(close(fd), 0);
}

Test(fs_util, rm_rf_removes_trees_and_symlinks_not_their_targets) {
        _cleanup_free_ char *base = tmpdir(), *tree = path_join(base, "tree"), *keep = path_join(base, "keep");
        _cleanup_free_ char *link = path_join(tree, "link"), *kept_file = path_join(keep, "file");
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        cr_assert_eq(mkdir(tree, 0700), 0);
        cr_assert_eq(mkdir(keep, 0700), 0);
        cr_assert_eq(write_file(kept_file, "x", 0600), 0);
        cr_assert_eq(symlink(keep, link), 0);
        fd = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        nest(fd, 20);
        cr_assert_eq(rm_rf(tree), 0);
        cr_assert_eq(lstat(tree, &st), -1);
        cr_assert_eq(stat(kept_file, &st), 0);
        cr_assert_eq(rm_rf(tree), 0);           /* gone already */
        cr_assert_eq(rm_rf(keep), 0);
        cr_assert_eq(rmdir(base), 0);
}

Test(fs_util, rm_rf_is_bounded_and_reports_what_it_left) {
        _cleanup_free_ char *base = tmpdir(), *tree = path_join(base, "tree"), *deep = path_join(tree, "deep");
        _cleanup_free_ char *shallow = path_join(tree, "shallow"), *z = path_join(tree, "z");
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        cr_assert_eq(mkdir(tree, 0700), 0);
        cr_assert_eq(mkdir(deep, 0700), 0);
        cr_assert_eq(mkdir(shallow, 0700), 0);
        cr_assert_eq(write_file(z, "z", 0600), 0);
        fd = open(deep, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        nest(fd, RM_RF_MAX_DEPTH);              /* one level more than it descends */
        fd = safe_close(fd);
        fd = open(shallow, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        nest(fd, 3);

        cr_assert_eq(rm_rf(tree), -ELOOP);
        /* It kept going: everything but the over-deep branch is gone. */
        cr_assert_eq(lstat(shallow, &st), -1);
        cr_assert_eq(lstat(z, &st), -1);
        cr_assert_eq(lstat(deep, &st), 0);

        /* What it left can be removed from further down. */
        {
                _cleanup_free_ char *p = strdup(deep);
                for (unsigned i = 0; i < RM_RF_MAX_DEPTH / 2; i++) {
                        char *q = path_join(p, "d");
                        free(p);
                        p = q;
                }
                cr_assert_eq(rm_rf(p), 0);
        }
        cr_assert_eq(rm_rf(tree), 0);
        cr_assert_eq(rmdir(base), 0);
}

Test(fs_util, mkdir_mode_sets_the_mode_by_fd) {
        _cleanup_free_ char *base = tmpdir(), *dir = path_join(base, "dir"), *target = path_join(base, "target");
        _cleanup_free_ char *link = path_join(base, "link"), *file = path_join(base, "file");
        mode_t old = umask(0077);
        struct stat st;

        cr_assert_eq(mkdir_mode(dir, 0755), 0);
        cr_assert_eq(stat(dir, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0755, "umask applied: %o", st.st_mode & 07777);
        cr_assert_eq(chmod(dir, 0700), 0);
        cr_assert_eq(mkdir_mode(dir, 0750), 0);
        cr_assert_eq(stat(dir, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0750);

        /* A symlink in its place: refused, and its target keeps its mode. */
        cr_assert_eq(mkdir(target, 0700), 0);
        cr_assert_eq(symlink(target, link), 0);
        cr_assert_eq(mkdir_mode(link, 0777), -ENOTDIR);
        cr_assert_eq(stat(target, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0700);

        cr_assert_eq(write_file(file, "", 0600), 0);
        cr_assert_eq(mkdir_mode(file, 0777), -ENOTDIR);
        cr_assert_eq(stat(file, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0600);

        umask(old);
        cr_assert_eq(rm_rf(base), 0);
}

Test(fs_util, find_program_says_why) {
        _cleanup_free_ char *p = NULL;
        char *untouched = (char *) "x";

        cr_assert_eq(find_program("sh", &p), 0);
        cr_assert_eq(p[0], '/');
        cr_assert_eq(access(p, X_OK), 0);
        cr_assert_eq(find_program("lazaret-no-such-program", &untouched), -ENOENT);
        cr_assert_str_eq(untouched, "x");
}

/* copy_fd(): in the kernel between files, by reads and writes from a pipe; the whole content either way, from where each fd stands. */
Test(fs_util, copy_fd_copies_files_and_pipes) {
        _cleanup_free_ char *d = tmpdir();
        _cleanup_close_ int dfd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC), a = -EBADF, b = -EBADF, c = -EBADF;
        char buf[300000], back[sizeof(buf) + 1];
        int p[2];

        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (char) ('a' + i % 23);
        a = openat(dfd, "a", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        b = openat(dfd, "b", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        cr_assert(a >= 0 && b >= 0);
        cr_assert_eq(write(a, buf, sizeof(buf)), (ssize_t) sizeof(buf));
        cr_assert_eq(lseek(a, 0, SEEK_SET), 0);
        cr_assert_eq(copy_fd(a, b), 0);
        cr_assert_eq(pread(b, back, sizeof(back), 0), (ssize_t) sizeof(buf));
        cr_assert_eq(memcmp(back, buf, sizeof(buf)), 0);

        /* From a pipe, which copy_file_range(2) refuses. */
        cr_assert_eq(pipe(p), 0);
        cr_assert_eq(write(p[1], "piped", 5), 5);
        close(p[1]);
        c = openat(dfd, "c", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        cr_assert_geq(c, 0);
        cr_assert_eq(copy_fd(p[0], c), 0);
        close(p[0]);
        cr_assert_eq(pread(c, back, sizeof(back), 0), 5);
        cr_assert_eq(memcmp(back, "piped", 5), 0);

        /* An empty file, and a source read to its end already: nothing more. */
        cr_assert_eq(copy_fd(a, c), 0);
        cr_assert_eq(lseek(c, 0, SEEK_END), 5);
        /* A write error is an error, not a silent short copy. */
        cr_assert_eq(lseek(a, 0, SEEK_SET), 0);
        {
                _cleanup_close_ int ro = openat(dfd, "b", O_RDONLY | O_CLOEXEC);
                cr_assert_lt(copy_fd(a, ro), 0);
        }
        cr_assert_eq(rm_rf(d), 0);
}

/* stat_birth_at(): what fstatat() gives, by name and by fd, and the birth time where the file system keeps one. */
Test(fs_util, stat_birth_at_is_fstatat_with_birth) {
        _cleanup_free_ char *d = tmpdir();
        _cleanup_close_ int dfd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC), fd = -EBADF;
        struct stat st, want;
        FileBirth b, b2;

        cr_assert_geq(dfd, 0);
        fd = openat(dfd, "f", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
        cr_assert_geq(fd, 0);
        cr_assert_eq(write(fd, "12345", 5), 5);
        cr_assert_eq(symlinkat("f", dfd, "l"), 0);

        cr_assert_eq(stat_birth_at(dfd, "f", AT_SYMLINK_NOFOLLOW, &st, &b), 0);
        cr_assert_eq(fstatat(dfd, "f", &want, AT_SYMLINK_NOFOLLOW), 0);
        cr_assert(st.st_dev == want.st_dev && st.st_ino == want.st_ino && st.st_mode == want.st_mode &&
                  st.st_nlink == want.st_nlink && st.st_uid == want.st_uid && st.st_gid == want.st_gid &&
                  st.st_size == 5 && st.st_blocks == want.st_blocks && st.st_blksize == want.st_blksize &&
                  st.st_mtim.tv_sec == want.st_mtim.tv_sec && st.st_mtim.tv_nsec == want.st_mtim.tv_nsec &&
                  st.st_ctim.tv_sec == want.st_ctim.tv_sec && st.st_ctim.tv_nsec == want.st_ctim.tv_nsec);
        /* By fd (an O_PATH one will do), the same object and birth. */
        cr_assert_eq(stat_birth_at(fd, "", AT_EMPTY_PATH, &st, &b2), 0);
        cr_assert(st.st_ino == want.st_ino && file_birth_same(&b, &b2));
        cr_assert(b.known == b2.known && b.sec == b2.sec && b.nsec == b2.nsec);
        /* A symbolic link itself, not followed. */
        cr_assert_eq(stat_birth_at(dfd, "l", AT_SYMLINK_NOFOLLOW, &st, NULL), 0);
        cr_assert(S_ISLNK(st.st_mode));
        cr_assert_eq(stat_birth_at(dfd, "missing", AT_SYMLINK_NOFOLLOW, &st, &b2), -ENOENT);
        if (!b.known)
                cr_log_warn("%s keeps no birth times: only the unknown case is checked", d);

        /* Unknown on either side tells nothing; two known ones differ by either part. */
        b2 = (FileBirth) { .sec = 7, .nsec = 1, .known = true };
        cr_assert(file_birth_same(&(FileBirth) {}, &b2) && file_birth_same(&b2, &(FileBirth) {}));
        cr_assert(file_birth_same(&b2, &(FileBirth) { .sec = 7, .nsec = 1, .known = true }));
        cr_assert(!file_birth_same(&b2, &(FileBirth) { .sec = 7, .nsec = 2, .known = true }));
        cr_assert(!file_birth_same(&b2, &(FileBirth) { .sec = 8, .nsec = 1, .known = true }));
        cr_assert_eq(rm_rf(d), 0);
}

Test(fs_util, mkdir_open_at_makes_or_opens_a_directory_only) {
        _cleanup_free_ char *base = tmpdir(), *target = path_join(base, "target");
        _cleanup_close_ int dfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd;

        cr_assert_geq(dfd, 0);
        fd = mkdir_open_at(dfd, "d", 0700);
        cr_assert_geq(fd, 0);
        cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        close(fd);
        fd = mkdir_open_at(dfd, "d", 0700);     /* there already: opened */
        cr_assert_geq(fd, 0);
        close(fd);
        /* A symlink or a file in its place: refused, nothing made through it. */
        cr_assert_eq(mkdir(target, 0700), 0);
        cr_assert_eq(symlinkat(target, dfd, "link"), 0);
        fd = mkdir_open_at(dfd, "link", 0700);
        cr_assert(fd == -ELOOP || fd == -ENOTDIR, "a symlink gave %d", fd);
        cr_assert_eq(close(openat(dfd, "file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)), 0);
        cr_assert_eq(mkdir_open_at(dfd, "file", 0700), -ENOTDIR);
        cr_assert_eq(rm_rf(base), 0);
}
