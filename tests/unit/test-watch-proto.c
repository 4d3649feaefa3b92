/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "watch-proto.h"

static bool valid(const char *s) {
        return watch_path_valid(s, strlen(s));
}

Test(watch_proto, valid_paths) {
        cr_assert(valid("."));
        cr_assert(valid("a"));
        cr_assert(valid("src/main.c"));
        cr_assert(valid(".git/HEAD"));
        cr_assert(valid("..a/b..")); /* names that merely start or end with dots */
        cr_assert(valid("a/.b/c"));
}

Test(watch_proto, invalid_paths) {
        static const char *const bad[] = {
                "", "/", "/etc/passwd", "a/", "a//b", "..", "../x", "a/../b", "a/..", "./a", "a/./b", "a/.",
                "a\nb", "a\tb", "a\x7f", "a\x01",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_assert(!valid(bad[i]), "\"%s\" accepted", bad[i]);
        /* A NUL inside counts: the length is what was read. */
        cr_assert(!watch_path_valid("a\0b", 3));
}

Test(watch_proto, length_bound) {
        char buf[WATCH_PATH_MAX + 2];

        memset(buf, 'x', sizeof(buf));
        cr_assert(watch_path_valid(buf, WATCH_PATH_MAX));
        cr_assert(!watch_path_valid(buf, WATCH_PATH_MAX + 1));
}

Test(watch_proto, skipped) {
        cr_assert(watch_path_skipped(".git/objects"));
        cr_assert(watch_path_skipped(".git/objects/ab/cdef"));
        cr_assert(watch_path_skipped("sub/.git/objects/pack"));
        cr_assert(!watch_path_skipped(".git/objectsX"));
        cr_assert(!watch_path_skipped("x.git/objects"));
        cr_assert(!watch_path_skipped(".git/HEAD"));
        cr_assert(!watch_path_skipped("src/objects"));
}

Test(watch_proto, join) {
        char *s = watch_path_join(".", "a");
        cr_assert_str_eq(s, "a");
        free(s);
        s = watch_path_join("a/b", "c");
        cr_assert_str_eq(s, "a/b/c");
        free(s);
}

typedef struct Lines {
        char got[8][WATCH_PATH_MAX + 1];
        size_t n;
} Lines;

static void on_line(const char *path, void *userdata) {
        Lines *l = userdata;

        cr_assert_lt(l->n, 8);
        strcpy(l->got[l->n++], path);
}

Test(watch_proto, lines_split_across_reads) {
        WatchLineReader r = {};
        Lines l = {};

        cr_assert_eq(watch_line_feed(&r, "a/b\nc", 5, on_line, &l), 0);
        cr_assert_eq(l.n, 1);
        cr_assert_str_eq(l.got[0], "a/b");
        cr_assert_eq(watch_line_feed(&r, "d\n.\n", 4, on_line, &l), 0);
        cr_assert_eq(l.n, 3);
        cr_assert_str_eq(l.got[1], "cd");
        cr_assert_str_eq(l.got[2], ".");
}

Test(watch_proto, bad_lines_dropped) {
        WatchLineReader r = {};
        Lines l = {};
        static const char in[] = "../etc/shadow\n/abs\n\nok\na\0b\nfine\n";

        cr_assert_eq(watch_line_feed(&r, in, sizeof(in) - 1, on_line, &l), 4);
        cr_assert_eq(l.n, 2);
        cr_assert_str_eq(l.got[0], "ok");
        cr_assert_str_eq(l.got[1], "fine");
}

Test(watch_proto, overlong_line_dropped_up_to_newline) {
        WatchLineReader r = {};
        Lines l = {};
        char big[WATCH_PATH_MAX + 10];

        memset(big, 'y', sizeof(big));
        /* In two reads, so that the drop carries over. */
        cr_assert_eq(watch_line_feed(&r, big, sizeof(big), on_line, &l), 1);
        cr_assert_eq(watch_line_feed(&r, "yyy\nnext\n", 9, on_line, &l), 0);
        cr_assert_eq(l.n, 1);
        cr_assert_str_eq(l.got[0], "next");
}

Test(watch_proto, recent_window) {
        static WatchRecent t;

        cr_assert(!watch_recent_seen(&t, "a", 1000, 500));
        watch_recent_note(&t, "a", 1000);
        cr_assert(watch_recent_seen(&t, "a", 1000, 500));
        cr_assert(watch_recent_seen(&t, "a", 1500, 500));
        cr_assert(!watch_recent_seen(&t, "a", 1501, 500));
        cr_assert(!watch_recent_seen(&t, "b", 1000, 500));
        /* A clock that went back is not "recent". */
        cr_assert(!watch_recent_seen(&t, "a", 999, 500));
        /* Window 0: the same instant only (the batch generation's use). */
        watch_recent_note(&t, "g", 7);
        cr_assert(watch_recent_seen(&t, "g", 7, 0));
        cr_assert(!watch_recent_seen(&t, "g", 8, 0));
}

Test(watch_proto, line_of_exactly_the_bound) {
        WatchLineReader r = {};
        Lines l = {};
        char line[WATCH_PATH_MAX + 2];

        memset(line, 'z', sizeof(line));
        line[WATCH_PATH_MAX] = '\n';
        cr_assert_eq(watch_line_feed(&r, line, WATCH_PATH_MAX + 1, on_line, &l), 0);
        cr_assert_eq(l.n, 1);
        cr_assert_eq(strlen(l.got[0]), WATCH_PATH_MAX);
        /* One byte more is dropped. */
        line[WATCH_PATH_MAX] = 'z';
        line[WATCH_PATH_MAX + 1] = '\n';
        cr_assert_eq(watch_line_feed(&r, line, WATCH_PATH_MAX + 2, on_line, &l), 1);
        cr_assert_eq(l.n, 1);
}

Test(watch_proto, dirs_by_descriptor) {
        WatchDirs d = {};

        cr_assert_null(watch_dirs_get(&d, 1));
        cr_assert_eq(watch_dirs_set(&d, -1, "x"), -EINVAL);
        cr_assert_eq(watch_dirs_set(&d, 1, "."), 0);
        cr_assert_eq(watch_dirs_set(&d, 300, "a/b"), 0);
        cr_assert_eq(d.n, 2);
        cr_assert_str_eq(watch_dirs_get(&d, 1), ".");
        cr_assert_str_eq(watch_dirs_get(&d, 300), "a/b");
        cr_assert_null(watch_dirs_get(&d, 2));
        cr_assert_null(watch_dirs_get(&d, -1));
        /* The same wd again (a directory renamed and watched again): replaced, not counted twice. */
        cr_assert_eq(watch_dirs_set(&d, 300, "c/b"), 0);
        cr_assert_eq(d.n, 2);
        cr_assert_str_eq(watch_dirs_get(&d, 300), "c/b");
        watch_dirs_drop(&d, 300);
        watch_dirs_drop(&d, 300);
        watch_dirs_drop(&d, 100000);
        cr_assert_eq(d.n, 1);
        cr_assert_null(watch_dirs_get(&d, 300));
        watch_dirs_done(&d);
        cr_assert_eq(d.n, 0);
        cr_assert_null(watch_dirs_get(&d, 1));
}

Test(watch_proto, out_queues_flushes_and_stands_for_what_did_not_fit) {
        char buf[16], got[64];
        int p[2];
        WatchOut o = { .buf = buf, .size = sizeof(buf) };
        ssize_t k;

        cr_assert(signal(SIGPIPE, SIG_IGN) != SIG_ERR);
        cr_assert_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
        o.fd = p[1];
        cr_assert(watch_out_add(&o, "a/b"));
        cr_assert(watch_out_add(&o, "src/x.c"));
        cr_assert_not(watch_out_add(&o, "too/long/now"));       /* 4 + 8 + 13 > 16 */
        cr_assert(o.left_out);
        cr_assert(watch_out_flush(&o));                          /* 12 + 2 fit: "." stands for it */
        cr_assert_eq(o.n, 0);
        k = read(p[0], got, sizeof(got) - 1);
        cr_assert_gt(k, 0);
        got[k] = 0;
        cr_assert_str_eq(got, "a/b\nsrc/x.c\n.\n");

        /* No room even for ".": it waits for the next flush. */
        cr_assert(watch_out_add(&o, "abcdefghijklmn"));         /* 15 of 16 */
        cr_assert_not(watch_out_add(&o, "x"));
        cr_assert_not(watch_out_flush(&o));
        cr_assert(watch_out_flush(&o));
        k = read(p[0], got, sizeof(got) - 1);
        cr_assert_gt(k, 0);
        got[k] = 0;
        cr_assert_str_eq(got, "abcdefghijklmn\n.\n");

        /* The reader gone: the fd is let go, nothing is queued any more. */
        close(p[0]);
        cr_assert(watch_out_add(&o, "c"));
        (void) watch_out_flush(&o);
        cr_assert_eq(o.fd, -1);
        cr_assert_eq(o.n, 0);
        cr_assert_not(watch_out_add(&o, "d"));
        cr_assert_not(o.left_out);
}

/* A procfs-shaped tree: PID/fd/N symbolic links to what each descriptor is. */
static void fake_fd(const char *root, const char *pid, const char *fd, const char *target) {
        char path[512];

        snprintf(path, sizeof(path), "%s/%s", root, pid);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%s/fd", root, pid);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%s/fd/%s", root, pid, fd);
        cr_assert_eq(symlink(target, path), 0, "symlink %s: %s", path, strerror(errno));
}

Test(watch_proto, inotify_holders_found_in_a_proc_tree) {
        char root[] = "/tmp/test-watch-proto-XXXXXX", path[600];

        cr_assert_not_null(mkdtemp(root));
        cr_assert_eq(watch_inotify_held(root, 1), 0, "an empty tree holds nothing");
        fake_fd(root, "10", "0", "/dev/null");
        fake_fd(root, "10", "1", "pipe:[4242]");
        fake_fd(root, "11", "3", "anon_inode:inotifyx");
        fake_fd(root, "12", "5", "anon_inode:[eventpoll]");
        snprintf(path, sizeof(path), "%s/self", root);
        cr_assert_eq(mkdir(path, 0755), 0);
        fake_fd(root, "net", "7", "anon_inode:inotify");         /* not a PID */
        cr_assert_eq(watch_inotify_held(root, 1), 0, "no inotify descriptor in it");
        fake_fd(root, "20", "4", "anon_inode:[inotifyfd:1]");    /* gVisor's name */
        cr_assert_eq(watch_inotify_held(root, 1), 1);
        cr_assert_eq(watch_inotify_held(root, 20), 0, "the asking process's own is not counted");
        fake_fd(root, "21", "9", "anon_inode:inotify");          /* Linux's */
        cr_assert_eq(watch_inotify_held(root, 20), 1);
        snprintf(path, sizeof(path), "rm -rf '%s'", root);
        cr_assert_eq(system(path), 0);
        cr_assert_lt(watch_inotify_held(root, 1), 0, "an unreadable root is an error, not 'nobody'");
}

Test(watch_proto, inotify_holder_seen_in_the_real_proc) {
        int p[2], fd;
        pid_t pid;
        char c;

        cr_assert_eq(pipe(p), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                fd = inotify_init1(IN_CLOEXEC);
                (void) !write(p[1], fd >= 0 ? "y" : "n", 1);
                pause();
                _exit(0);
        }
        cr_assert_eq(read(p[0], &c, 1), 1);
        cr_assert_eq(c, 'y');
        cr_assert_eq(watch_inotify_held("/proc", (int) getpid()), 1);
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}
