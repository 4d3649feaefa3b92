/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "mountinfo.h"

static int parse(const char *text, HostMounts *m) {
        return mountinfo_parse(text, strlen(text), m);
}

Test(mountinfo, lines_and_escapes) {
        _cleanup_(host_mounts_done) HostMounts m = {};

        cr_assert_eq(parse("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
                           "46 22 0:4 net:[4026532178] /run/netns/x rw shared:2 - nsfs nsfs rw\n"
                           "50 22 8:1 /home/u/proj/tools /mnt/my\\040alias rw - ext4 /dev/sda1 rw\n"
                           "51 22 0:45 /a\\134b\\011c /srv/x\\012y rw master:3 - tmpfs t rw\n", &m), 0);
        cr_assert_eq(m.n, 4);
        cr_assert_eq(m.m[0].id, 22);
        cr_assert_eq(m.m[0].major, 8);
        cr_assert_eq(m.m[0].minor, 1);
        cr_assert_str_eq(m.m[0].root, "/");
        cr_assert_str_eq(m.m[0].point, "/");
        cr_assert_str_eq(m.m[1].root, "net:[4026532178]");
        cr_assert_str_eq(m.m[2].point, "/mnt/my alias");
        cr_assert_str_eq(m.m[3].root, "/a\\b\tc");
        cr_assert_str_eq(m.m[3].point, "/srv/x\ny");
        cr_assert_eq(host_mounts_find(&m, 50), &m.m[2]);
        cr_assert_null(host_mounts_find(&m, 7));
}

Test(mountinfo, refused) {
        static const char *const bad[] = {
                "22 1 8:1 / / rw\n",                             /* no "-" */
                "22 1 8:1 / / rw - ext4 x rw",                   /* no newline at the end */
                "22 1 81 / / rw - ext4 x rw\n",                  /* no MAJOR:MINOR */
                "x 1 8:1 / / rw - ext4 x rw\n",                  /* no ID */
                "22 1 8:1 / rel rw - ext4 x rw\n",               /* a relative mount point */
                "22 1 8:1 / /a\\9 rw - ext4 x rw\n",             /* a broken escape */
                "22 1 8:1 / /a\\000 rw - ext4 x rw\n",           /* an escaped NUL */
                "22 1 8:1 /\n",                                  /* too few fields */
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_(host_mounts_done) HostMounts m = {};
                cr_assert_eq(parse(bad[i], &m), -EBADMSG, "%s", bad[i]);
        }
        {
                _cleanup_(host_mounts_done) HostMounts m = {};
                cr_assert_eq(mountinfo_parse("22 1 8:1 / / rw - e x rw\n\0", 26, &m), -EBADMSG);
        }
}

Test(mountinfo, places_in_the_file_system) {
        HostMount bind = { .root = (char *) "/home/u/proj/tools", .point = (char *) "/mnt/alias" };
        HostMount top = { .root = (char *) "/", .point = (char *) "/" };
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        cr_assert_eq(host_mount_fs_path(&bind, "/mnt/alias/hooks", &a), 0);
        cr_assert_str_eq(a, "/home/u/proj/tools/hooks");
        cr_assert_eq(host_mount_fs_path(&bind, "/mnt/alias", &b), 0);
        cr_assert_str_eq(b, "/home/u/proj/tools");
        cr_assert_eq(host_mount_fs_path(&bind, "/mnt/aliased", &c), -EXDEV);
        free(c), c = NULL;
        cr_assert_eq(host_mount_fs_path(&top, "/etc", &c), 0);
        cr_assert_str_eq(c, "/etc");

        cr_assert_str_eq(path_below("/a/b/c", "/a/b"), "c");
        cr_assert_str_eq(path_below("/a/b", "/a/b"), "");
        cr_assert_str_eq(path_below("/a/b", "/"), "a/b");
        cr_assert_null(path_below("/a/bc", "/a/b"));
}

Test(mountinfo, this_process) {
        _cleanup_(host_mounts_done) HostMounts m = {};
        int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC), id;

        cr_assert(fd >= 0);
        cr_assert_eq(mountinfo_read(&m), 0);
        id = fd_mount_id(fd);
        cr_assert(id >= 0, "%s", strerror(-id));
        cr_assert_not_null(host_mounts_find(&m, id));
        close(fd);
}
