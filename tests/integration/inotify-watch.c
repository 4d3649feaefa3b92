/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inotify-watch DIR...: a real inotify watcher for test-watch.sh, run
 * inside the sandbox (built static). It watches each DIR with the mask
 * libuv (Node's fs.watch, so webpack, vite, tsc --watch) uses, prints
 * "ready" once every watch is in place and then one line per event,
 * "EVENTS NAME" (EVENTS: the set names joined by '|', NAME: the watched
 * directory's path plus the entry's name), flushed at once.
 */
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#define MASK (IN_ATTRIB | IN_CREATE | IN_MODIFY | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_MOVED_FROM | IN_MOVED_TO)

static const struct { unsigned bit; const char *name; } names[] = {
        { IN_ATTRIB, "ATTRIB" }, { IN_CREATE, "CREATE" }, { IN_MODIFY, "MODIFY" }, { IN_DELETE, "DELETE" },
        { IN_DELETE_SELF, "DELETE_SELF" }, { IN_MOVE_SELF, "MOVE_SELF" }, { IN_MOVED_FROM, "MOVED_FROM" },
        { IN_MOVED_TO, "MOVED_TO" }, { IN_ISDIR, "ISDIR" }, { IN_Q_OVERFLOW, "OVERFLOW" },
};

int main(int argc, char *argv[]) {
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
        const char *dirs[64] = {};
        int fd = inotify_init1(IN_CLOEXEC);

        if (fd < 0 || argc < 2 || argc > 64)
                return 2;
        for (int i = 1; i < argc; i++) {
                int wd = inotify_add_watch(fd, argv[i], MASK);
                if (wd < 0 || wd >= 64) {
                        perror(argv[i]);
                        return 1;
                }
                dirs[wd] = argv[i];
        }
        printf("ready\n");
        fflush(stdout);
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n <= 0)
                        return 1;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *e = (const struct inotify_event *) p;
                        const char *sep = "";

                        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                                if (e->mask & names[i].bit) {
                                        printf("%s%s", sep, names[i].name);
                                        sep = "|";
                                }
                        printf(" %s%s%s\n", e->wd >= 0 && e->wd < 64 && dirs[e->wd] ? dirs[e->wd] : "?",
                               e->len ? "/" : "", e->len ? e->name : "");
                        p += sizeof(*e) + e->len;
                }
                fflush(stdout);
        }
}
