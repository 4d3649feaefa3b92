/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor's staging of the mount plan, for real: each test body
 * runs in a child forked from Criterion's (multithreaded) test process, which
 * enters a user and mount namespace of its own as the supervisor does and
 * stages a plan written to a scratch bundle. The child checks with CHECK()
 * and reports by its exit status: 0 passed, 77 no namespaces here.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cleanup.h"
#include "escalation-proto.h"
#include "fs-util.h"
#include "isolated.h"
#include "mount-plan.h"
#include "path-util.h"
#include "supervisor-mounts.h"

static char *top, *bundle;

static void sh(const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL;
        va_list ap;

        va_start(ap, fmt);
        CHECK(vasprintf(&cmd, fmt, ap) > 0);
        va_end(ap);
        CHECK(system(cmd) == 0, "%s", cmd);
}

static char *sub(const char *rel) {
        return path_join(top, rel);
}

/* Each body runs as root of a user namespace mapped to us, in a mount namespace of its own. */
static void run_isolated(void (*body)(void)) {
        run_isolated_with(CLONE_NEWNS, NULL, body);
}

static void setup(void) {
        char tmpl[] = "/tmp/lazaret-unit-supmounts-XXXXXX";

        cr_assert_not_null(mkdtemp(tmpl));
        top = realpath(tmpl, NULL);
        bundle = sub("bundle");
        sh("mkdir -p '%1$s/bundle/stage' '%1$s/ws/sub' '%1$s/other' && echo ws > '%1$s/ws/marker' && "
           "echo other > '%1$s/other/marker' && echo cfg > '%1$s/file'", top);
}

static void teardown(void) {
        /* The namespaces go with this process; the files stay ours. */
        sh("rm -rf '%s'", top);
        free(bundle);
        free(top);
}

static void add_bind(MountPlan *p, MountPart part, const char *dest, const char *rel, bool ro, unsigned nests_in) {
        _cleanup_free_ char *path = sub(rel), *error = NULL;
        _cleanup_close_ int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);

        CHECK(fd >= 0, "%s: %m", path);
        CHECK_EQ(mount_plan_add_bind_fd(p, part, dest, path, fd, ro, nests_in, &error), 0, "%s", error ?: "");
}

static void write_plan(const MountPlan *p) {
        _cleanup_free_ char *s = NULL, *path = path_join(bundle, "mounts.json");

        CHECK_EQ(mount_plan_to_string(p, &s), 0);
        CHECK_EQ(write_file(path, s, 0600), 0);
}

static int stage(char *err, size_t errlen) {
        _cleanup_free_ char *why = NULL;
        bool relays;
        int r = supmounts_stage(bundle, NULL, -EBADF, NULL, &relays, &why);

        snprintf(err, errlen, "%s", why ?: "");
        return r;
}

static char *staged(size_t i) {
        _cleanup_free_ char *s = path_join(bundle, "stage");
        return mount_plan_staged_path(s, i);
}

static void stages_what_was_checked_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *ws = staged(4), *file = staged(5), *marker = NULL, *text = NULL, *tmp = staged(6),
                            *inside = NULL;
        MountEntry t = { .part = MOUNT_PART_STATE_ANCHOR, .kind = MOUNT_SUPERVISOR, .destination = (char *) "/var/tmp",
                         .source = (char *) "lazaret-test", .fstype = (char *) "tmpfs", .data = (char *) "size=1m" };
        struct stat a, b;
        struct statfs sf;
        char err[512];

        CHECK_EQ(mount_plan_init(&p), 0);
        add_bind(&p, MOUNT_PART_WORKSPACE, "/workspace", "ws", false, 0);
        add_bind(&p, MOUNT_PART_VOLUME, "/etc/x", "file", true, 0);
        CHECK_EQ(mount_plan_add(&p, &t, NULL), 0);
        write_plan(&p);
        CHECK_EQ(stage(err, sizeof(err)), 0, "%s", err);

        marker = path_join(ws, "marker");
        CHECK_EQ(read_full_file(marker, 100, &text, NULL), 0);
        CHECK_STR(text, "ws\n");
        CHECK_EQ(stat(ws, &a), 0);
        CHECK_EQ(a.st_ino, p.entries[4].id.ino);
        /* Read-write where the plan says so, read-only where it says that. */
        inside = path_join(ws, "written");
        CHECK_EQ(write_file(inside, "x", 0644), 0);
        CHECK_EQ(open(file, O_WRONLY | O_CLOEXEC), -1);
        CHECK_EQ(errno, EROFS);
        CHECK_EQ(stat(file, &b), 0);
        CHECK_EQ(b.st_ino, p.entries[5].id.ino);
        /* The supervisor's own file system. */
        CHECK_EQ(statfs(tmp, &sf), 0);
        CHECK_EQ(sf.f_type, TMPFS_MAGIC);
        /* Nothing more can be staged once runsc may look. */
        _cleanup_free_ char *extra = staged(99);
        CHECK_EQ(mkdir(extra, 0700), -1);
        CHECK_EQ(errno, EROFS);
}

Test(supmounts, stages_what_was_checked, .init = setup, .fini = teardown) {
        run_isolated(stages_what_was_checked_body);
}

static void refused(const char *want) {
        char err[512];

        CHECK_EQ(stage(err, sizeof(err)), -EPERM, "%s", err);
        CHECK(strstr(err, want), "message '%s' lacks '%s'", err, want);
}

static void swapped_directory_refused_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};

        CHECK_EQ(mount_plan_init(&p), 0);
        add_bind(&p, MOUNT_PART_WORKSPACE, "/workspace", "ws", false, 0);
        write_plan(&p);
        /* After the check, another directory takes the workspace's place. */
        sh("mv '%1$s/ws' '%1$s/ws.real' && mv '%1$s/other' '%1$s/ws'", top);
        refused("changed after it was checked: it is no longer the directory that was judged");
}

Test(supmounts, swapped_directory_refused, .init = setup, .fini = teardown) {
        run_isolated(swapped_directory_refused_body);
}

static void symlink_refused_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};

        CHECK_EQ(mount_plan_init(&p), 0);
        add_bind(&p, MOUNT_PART_WORKSPACE, "/workspace", "ws/sub", false, 0);
        write_plan(&p);
        /* A parent swapped for a symlink to a directory with the same layout. */
        sh("mkdir '%1$s/other/sub' && mv '%1$s/ws' '%1$s/ws.real' && ln -s other '%1$s/ws'", top);
        refused("is now a symbolic link");
}

Test(supmounts, symlink_refused, .init = setup, .fini = teardown) {
        run_isolated(symlink_refused_body);
}

static void file_swapped_refused_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};

        CHECK_EQ(mount_plan_init(&p), 0);
        add_bind(&p, MOUNT_PART_VOLUME, "/etc/x", "file", true, 0);
        write_plan(&p);
        sh("echo new > '%1$s/file.new' && mv '%1$s/file.new' '%1$s/file'", top);
        refused("it is no longer the file that was judged");
}

Test(supmounts, file_swapped_refused, .init = setup, .fini = teardown) {
        run_isolated(file_swapped_refused_body);
}

static void other_file_systems_refused_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        MountEntry o = { .part = MOUNT_PART_STATE_ANCHOR, .kind = MOUNT_SUPERVISOR, .destination = (char *) "/usr",
                         .source = (char *) "/dev/sda1", .fstype = (char *) "ext4" };
        char err[512];

        CHECK_EQ(mount_plan_init(&p), 0);
        CHECK_EQ(mount_plan_add(&p, &o, NULL), 0);
        write_plan(&p);
        CHECK_EQ(stage(err, sizeof(err)), -EOPNOTSUPP, "%s", err);
        CHECK(strstr(err, "ext4 file system at /usr; it makes only tmpfs and overlay"), "%s", err);
}

Test(supmounts, other_file_systems_refused, .init = setup, .fini = teardown) {
        run_isolated(other_file_systems_refused_body);
}

/* A State Anchor overlay: the lower shows through, writes land in the upper, the lower is untouched. */
static void overlay_staged_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *lower = sub("lower"), *layer = sub("layer"), *merged = staged(4), *text = NULL,
                            *path = NULL, *format = NULL;
        MountEntry o = { .part = MOUNT_PART_STATE_ANCHOR, .kind = MOUNT_SUPERVISOR, .destination = (char *) "/usr",
                         .source = lower, .fstype = (char *) "overlay", .data = layer };
        struct stat st;
        char err[512];

        sh("mkdir -p '%1$s/lower/bin' '%1$s/layer' && chmod 0755 '%1$s/lower' && echo image > '%1$s/lower/bin/tool' && "
           "echo gone > '%1$s/lower/bin/old'", top);
        /* A strict umask, as a user service may have, must not narrow the upper's root. */
        umask(0077);
        CHECK_EQ(mount_plan_init(&p), 0);
        CHECK_EQ(mount_plan_add(&p, &o, NULL), 0);
        write_plan(&p);
        CHECK_EQ(stage(err, sizeof(err)), 0, "%s", err);

        path = path_join(merged, "bin/tool");
        CHECK_EQ(read_full_file(path, 100, &text, NULL), 0);
        CHECK_STR(text, "image\n");
        CHECK_EQ(write_file(path, "changed\n", 0644), 0);
        free(path);
        path = path_join(merged, "bin/old");
        CHECK_EQ(unlink(path), 0);
        sh("test \"$(cat '%1$s/lower/bin/tool')\" = image && test -e '%1$s/lower/bin/old' && "
           "test \"$(cat '%1$s/layer/upper/bin/tool')\" = changed && test -c '%1$s/layer/upper/bin/old'", top);
        /* The upper's root has the lower directory's mode; the layer says how it is written. */
        CHECK_EQ(stat(merged, &st), 0);
        CHECK_EQ(st.st_mode & 07777, 0755u);
        free(path);
        path = path_join(layer, "format");
        CHECK_EQ(read_full_file(path, 100, &format, NULL), 0);
        CHECK_STR(format, "kernel-overlayfs-userxattr\n");
}

Test(supmounts, overlay_staged, .init = setup, .fini = teardown) {
        run_isolated(overlay_staged_body);
}

/* A layer recorded in a format nobody knows is refused, not mounted. */
static void overlay_unknown_format_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *lower = sub("lower"), *layer = sub("layer");
        MountEntry o = { .part = MOUNT_PART_STATE_ANCHOR, .kind = MOUNT_SUPERVISOR, .destination = (char *) "/usr",
                         .source = lower, .fstype = (char *) "overlay", .data = layer };
        char err[512];

        sh("mkdir -p '%1$s/lower' '%1$s/layer' && echo aufs > '%1$s/layer/format'", top);
        CHECK_EQ(mount_plan_init(&p), 0);
        CHECK_EQ(mount_plan_add(&p, &o, NULL), 0);
        write_plan(&p);
        CHECK_EQ(stage(err, sizeof(err)), -EBADMSG, "%s", err);
        CHECK(strstr(err, "names no overlay format Lazaret knows"), "%s", err);
}

Test(supmounts, overlay_unknown_format, .init = setup, .fini = teardown) {
        run_isolated(overlay_unknown_format_body);
}

/*
 * The root's mount points (issue 33): a volume whose destination the image
 * lacks gives the staged root an overlay of this generation, in which what
 * runsc makes lands; the image's tree is untouched. With every destination
 * in the image, the root stays the bind.
 */
static void root_points_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *root = staged(4), *made = NULL, *text = NULL, *path = NULL;
        struct statfs sf;
        struct stat st;
        char err[512];

        sh("mkdir -p '%1$s/rootfs/etc' '%1$s/rootfs/workspace' && chmod 0755 '%1$s/rootfs' && "
           "echo image > '%1$s/rootfs/etc/marker'", top);
        umask(0077);
        CHECK_EQ(mount_plan_init(&p), 0);
        add_bind(&p, MOUNT_PART_ROOT, "/", "rootfs", false, 0);
        add_bind(&p, MOUNT_PART_WORKSPACE, "/workspace", "ws", false, 0);
        add_bind(&p, MOUNT_PART_VOLUME, "/srv/data/cache", "other", false, 0);
        /* In the workspace: the workspace holds its mount point, not the root. */
        add_bind(&p, MOUNT_PART_GIT_SENTRY, "/workspace/lacking", "file", true, MOUNT_PART_BIT(MOUNT_PART_WORKSPACE));
        write_plan(&p);
        CHECK_EQ(stage(err, sizeof(err)), 0, "%s", err);

        CHECK_EQ(statfs(root, &sf), 0);
        CHECK_EQ(sf.f_type, OVERLAYFS_SUPER_MAGIC);
        /* The image shows through, with its root's mode; what runsc makes stays out of the image. */
        path = path_join(root, "etc/marker");
        CHECK_EQ(read_full_file(path, 100, &text, NULL), 0);
        CHECK_STR(text, "image\n");
        CHECK_EQ(stat(root, &st), 0);
        CHECK_EQ(st.st_mode & 07777, 0755u);
        made = path_join(root, "srv/data/cache");
        CHECK_EQ(mkdir_parents(made, 0755), 0);
        sh("test -d '%1$s/bundle/stage/root-layer/upper/srv/data/cache' && test ! -e '%1$s/rootfs/srv'", top);
}

Test(supmounts, root_points, .init = setup, .fini = teardown) {
        run_isolated(root_points_body);
}

static void root_points_present_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *root = staged(4), *layer = NULL, *path = NULL;
        struct statfs sf, host;
        char err[512];

        /* /srv/data/cache reached through a symbolic link inside the image, as runsc resolves it. */
        sh("mkdir -p '%1$s/rootfs/var/data/cache' '%1$s/rootfs/workspace' && ln -s /var '%1$s/rootfs/srv'", top);
        CHECK_EQ(mount_plan_init(&p), 0);
        add_bind(&p, MOUNT_PART_ROOT, "/", "rootfs", false, 0);
        add_bind(&p, MOUNT_PART_WORKSPACE, "/workspace", "ws", false, 0);
        add_bind(&p, MOUNT_PART_VOLUME, "/srv/data/cache", "other", false, 0);
        write_plan(&p);
        CHECK_EQ(stage(err, sizeof(err)), 0, "%s", err);

        CHECK_EQ(statfs(root, &sf), 0);
        CHECK_EQ(statfs(top, &host), 0);
        CHECK_EQ(sf.f_type, host.f_type);
        layer = path_join(bundle, "stage/root-layer");
        CHECK_EQ(access(layer, F_OK), -1);
        /* Read-only to runsc: a point nobody foresaw fails instead of landing in the image. */
        path = path_join(root, "var/new");
        CHECK_EQ(mkdir(path, 0755), -1);
        CHECK_EQ(errno, EROFS);
}

Test(supmounts, root_points_present, .init = setup, .fini = teardown) {
        run_isolated(root_points_present_body);
}

static void bad_plan_refused_body(void) {
        _cleanup_free_ char *path = path_join(bundle, "mounts.json");
        char err[512];

        CHECK_EQ(stage(err, sizeof(err)), -ENOENT, "%s", err);
        CHECK(strstr(err, "cannot read the mount plan"), "%s", err);
        CHECK_EQ(write_file(path, "{\"entries\": 1}", 0600), 0);
        CHECK_EQ(stage(err, sizeof(err)), -EBADMSG, "%s", err);
        CHECK(strstr(err, "\"entries\" is missing or not an array"), "%s", err);
}

Test(supmounts, bad_plan_refused, .init = setup, .fini = teardown) {
        run_isolated(bad_plan_refused_body);
}

/*
 * The Escalation Mailbox (SR-10): its directories staged from the two
 * bounded tmpfs the supervisor makes, requests/ writable and full at its
 * bound, results/ and trust/ read-only, and the root handed out as one
 * descriptor that reaches the same files.
 */
static void add_mailbox(MountPlan *p, const char *name, bool ro, const char *options) {
        _cleanup_free_ char *dest = path_join("/run/lazaret/mailbox", name);
        MountEntry e = { .part = MOUNT_PART_MAILBOX, .kind = MOUNT_SUPERVISOR, .destination = dest,
                         .source = (char *) name, .fstype = (char *) ESC_MAILBOX_FSTYPE, .data = (char *) options,
                         .read_only = ro };

        CHECK_EQ(mount_plan_add(p, &e, NULL), 0);
}

static void mailbox_staged_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *req = staged(4), *res = staged(5), *trust = staged(6), *big = NULL, *probe = NULL,
                            *why = NULL;
        _cleanup_close_ int root = -EBADF, rfd = -EBADF, fd = -EBADF;
        static char chunk[64 * 1024];
        struct statfs sf;
        struct stat a, b;
        char err[512];
        ssize_t k = 0;
        size_t total = 0;

        CHECK_EQ(mount_plan_init(&p), 0);
        add_mailbox(&p, "requests", false, ESC_REQUESTS_FS_OPTIONS);
        add_mailbox(&p, "results", true, ESC_MAILBOX_FS_OPTIONS);
        add_mailbox(&p, "trust", true, ESC_MAILBOX_FS_OPTIONS);
        write_plan(&p);
        CHECK_EQ(stage(err, sizeof(err)), 0, "%s", err);

        /* requests/: a tmpfs of its own, 4 MiB, which a writer fills and no more. */
        CHECK_EQ(statfs(req, &sf), 0);
        CHECK_EQ(sf.f_type, TMPFS_MAGIC);
        CHECK_EQ((uint64_t) sf.f_blocks * sf.f_bsize, 4u * 1024 * 1024, "requests/ is %llu bytes",
                 (unsigned long long) sf.f_blocks * sf.f_bsize);
        CHECK_EQ(sf.f_files, 256u);
        big = path_join(req, ".tmp-junk");
        fd = open(big, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CHECK(fd >= 0, "%m");
        while (total < 64u * 1024 * 1024 && (k = write(fd, chunk, sizeof(chunk))) > 0)
                total += (size_t) k;
        CHECK(k < 0 && errno == ENOSPC, "wrote %zu bytes into requests/ without ENOSPC", total);
        CHECK(total <= 4u * 1024 * 1024, "%zu", total);
        /* results/ and trust/: the mailbox's tmpfs, another file system, read-only here. */
        CHECK_EQ(stat(req, &a), 0);
        CHECK_EQ(stat(res, &b), 0);
        CHECK(a.st_dev != b.st_dev);
        CHECK_EQ(statfs(res, &sf), 0);
        CHECK_EQ(sf.f_type, TMPFS_MAGIC);
        CHECK_EQ((uint64_t) sf.f_blocks * sf.f_bsize, 40u * 1024 * 1024);
        probe = path_join(trust, "x");
        CHECK_EQ(open(probe, O_WRONLY | O_CREAT | O_CLOEXEC, 0600), -1);
        CHECK_EQ(errno, EROFS);

        /* The root for the coordinator: its requests/ is what the sandbox writes, results/ writable through it. */
        CHECK_EQ(supmounts_open_mailbox(bundle, &root, &why), 0, "%s", why ?: "");
        CHECK(root >= 0);
        rfd = openat(root, "requests", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        CHECK(rfd >= 0, "%m");
        CHECK_EQ(fstatat(rfd, ".tmp-junk", &b, AT_SYMLINK_NOFOLLOW), 0);
        CHECK_EQ(fstat(fd, &a), 0);
        CHECK_EQ(a.st_ino, b.st_ino);
        CHECK_EQ(mkfifoat(root, "results/s.bell", 0600), 0);
        CHECK_EQ(mkdirat(root, "trust/made", 0700), 0);
}

Test(supmounts, mailbox_staged, .init = setup, .fini = teardown) {
        run_isolated(mailbox_staged_body);
}

static void mailbox_without_bounds_refused_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *why = NULL;
        _cleanup_close_ int root = -EBADF;
        char err[512];

        /* No mailbox in the plan: no descriptor. */
        CHECK_EQ(mount_plan_init(&p), 0);
        write_plan(&p);
        CHECK_EQ(stage(err, sizeof(err)), 0, "%s", err);
        CHECK_EQ(supmounts_open_mailbox(bundle, &root, &why), 0);
        CHECK_EQ(root, -EBADF);
}

Test(supmounts, no_mailbox, .init = setup, .fini = teardown) {
        run_isolated(mailbox_without_bounds_refused_body);
}

static void mailbox_other_bounds_refused_body(void) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        char err[512];

        /* A plan asking for other bounds (or none) is refused: the bounds are the supervisor's. */
        CHECK_EQ(mount_plan_init(&p), 0);
        add_mailbox(&p, "requests", false, "mode=0700");
        write_plan(&p);
        CHECK_EQ(stage(err, sizeof(err)), -EINVAL, "%s", err);
        CHECK(strstr(err, "fixed bounds"), "%s", err);
}

Test(supmounts, mailbox_other_bounds_refused, .init = setup, .fini = teardown) {
        run_isolated(mailbox_other_bounds_refused_body);
}
