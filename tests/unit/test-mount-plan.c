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
#include "macro.h"
#include "mount-plan.h"
#include "strv.h"

#define WS MOUNT_PART_BIT(MOUNT_PART_WORKSPACE)
#define GS MOUNT_PART_BIT(MOUNT_PART_GIT_SENTRY)

static MountEntry bind(MountPart part, const char *dest, const char *source, bool ro, unsigned nests_in) {
        return (MountEntry) {
                .part = part, .kind = MOUNT_BIND, .destination = (char *) dest, .source = (char *) source,
                .read_only = ro, .id = { .dev = 8, .ino = 1234, .directory = true }, .nests_in = nests_in,
        };
}

static void add_ok(MountPlan *p, MountEntry e) {
        _cleanup_free_ char *error = NULL;
        cr_assert_eq(mount_plan_add(p, &e, &error), 0, "%s at %s refused: %s", mount_part_to_string(e.part),
                     e.destination, error ?: "");
        cr_assert_null(error);
}

static void add_bad(MountPlan *p, MountEntry e, int want, const char *msg) {
        _cleanup_free_ char *error = NULL;
        size_t n = p->n_entries;

        cr_assert_eq(mount_plan_add(p, &e, &error), want, "%s at %s: expected %d", mount_part_to_string(e.part),
                     e.destination ?: "(null)", want);
        cr_assert_not_null(error);
        cr_assert(strstr(error, msg), "message '%s' lacks '%s'", error, msg);
        cr_assert_eq(p->n_entries, n, "a refused entry was added");
}

/* The plan a Domain with one volume at /etc has. */
static void typical(MountPlan *p) {
        cr_assert_eq(mount_plan_init(p), 0);
        add_ok(p, bind(MOUNT_PART_ROOT, "/", "/img/rootfs", false, 0));
        add_ok(p, bind(MOUNT_PART_WORKSPACE, "/workspace", "/home/u/p", false, 0));
        add_ok(p, bind(MOUNT_PART_GIT_SENTRY, "/workspace/.git", "/home/u/p/.git", false, WS | GS));
        add_ok(p, bind(MOUNT_PART_GIT_SENTRY, "/workspace/.git/config", "/home/u/p/.git/config", true, WS | GS));
        add_ok(p, bind(MOUNT_PART_CONTROL, "/run/lazaret", "/run/user/1/lazaret/x/control", true, 0));
        add_ok(p, bind(MOUNT_PART_VOLUME, "/etc", "/home/u/etc", true, MOUNT_PART_BIT(MOUNT_PART_TMP)));
        add_ok(p, bind(MOUNT_PART_RESOLVER, "/etc/resolv.conf", "/run/user/1/lazaret/x/control/resolv.conf", true,
                       MOUNT_PART_BIT(MOUNT_PART_VOLUME)));
}

Test(mount_plan, init_holds_gvisors_own) {
        _cleanup_(mount_plan_done) MountPlan p = {};

        cr_assert_eq(mount_plan_init(&p), 0);
        cr_assert_eq(p.n_entries, 4);
        cr_assert_str_eq(p.entries[0].destination, "/proc");
        cr_assert_eq(p.entries[0].kind, MOUNT_SANDBOX);
        cr_assert_eq(p.entries[3].part, MOUNT_PART_TMP);
        cr_assert_str_eq(p.entries[3].destination, "/tmp");
}

Test(mount_plan, declared_nesting) {
        _cleanup_(mount_plan_done) MountPlan p = {};

        typical(&p);
        cr_assert_eq(p.n_entries, 11);
        /* Destinations are normalised. */
        add_ok(&p, bind(MOUNT_PART_GIT_SENTRY, "/workspace//.git/hooks/", "/d/hooks", false, WS | GS));
        cr_assert_not_null(mount_plan_find(&p, "/workspace/.git/hooks"));
        /* A volume may cover /tmp or lie in it: it says so. */
        add_ok(&p, bind(MOUNT_PART_VOLUME, "/tmp/cache", "/home/u/cache", false, MOUNT_PART_BIT(MOUNT_PART_TMP)));
}

/* Where runsc may make a missing mount point in the image's tree: unless an earlier entry, not gVisor's own nor a persistent path, holds it. */
Test(mount_plan, points_in_image) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        static const bool want[] = {
                false, false, false, false,     /* /proc /dev /sys /tmp: gVisor's own */
                false,                          /* the root */
                true,                           /* /workspace */
                false, false,                   /* the Git Sentry's, in the workspace */
                true,                           /* /run/lazaret */
                true,                           /* the volume at /etc */
                false,                          /* /etc/resolv.conf, in that volume */
                true,                           /* a volume in /tmp: gVisor's tmpfs is not on the host */
                true,                           /* a persistent /srv/data */
                true,                           /* a volume in it: the persistent lower is the image's */
                false,                          /* a file in that volume */
        };
        MountEntry anchor = { .part = MOUNT_PART_STATE_ANCHOR, .kind = MOUNT_SUPERVISOR, .destination = (char *) "/srv/data",
                              .source = (char *) "/img/rootfs/srv/data", .fstype = (char *) "overlay",
                              .data = (char *) "/d/state/srv-data" };

        typical(&p);
        add_ok(&p, bind(MOUNT_PART_VOLUME, "/tmp/cache", "/home/u/cache", false, MOUNT_PART_BIT(MOUNT_PART_TMP)));
        add_ok(&p, anchor);
        add_ok(&p, bind(MOUNT_PART_VOLUME, "/srv/data/cache", "/home/u/data-cache", false,
                        MOUNT_PART_BIT(MOUNT_PART_STATE_ANCHOR)));
        add_ok(&p, bind(MOUNT_PART_RESOLVER, "/srv/data/cache/hosts", "/run/user/1/hosts", true,
                        MOUNT_PART_BIT(MOUNT_PART_VOLUME) | MOUNT_PART_BIT(MOUNT_PART_STATE_ANCHOR)));
        cr_assert_eq(p.n_entries, ELEMENTSOF(want));
        for (size_t i = 0; i < p.n_entries; i++)
                cr_assert_eq(mount_plan_point_in_image(&p, i), want[i], "%s", p.entries[i].destination);
        cr_assert(!mount_plan_point_in_image(&p, p.n_entries));
}

Test(mount_plan, undeclared_nesting_refused) {
        _cleanup_(mount_plan_done) MountPlan p = {};

        typical(&p);
        /* The Git Sentry does not nest in the control directory, a volume not in the workspace. */
        add_bad(&p, bind(MOUNT_PART_GIT_SENTRY, "/run/lazaret/x", "/d/x", false, WS | GS), -EPERM,
                "git-sentry at /run/lazaret/x lies inside the control mount at /run/lazaret");
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/workspace/sub", "/home/u/sub", false, 0), -EPERM,
                "volume at /workspace/sub lies inside the workspace mount at /workspace");
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/proc/sys", "/home/u/sys", false, MOUNT_PART_BIT(MOUNT_PART_TMP)), -EPERM,
                "lies inside the system mount at /proc");
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/etc/ssl", "/home/u/ssl", false, 0), -EPERM,
                "volume at /etc/ssl lies inside the volume mount at /etc");
}

Test(mount_plan, shadowing_refused) {
        _cleanup_(mount_plan_done) MountPlan p = {};

        typical(&p);
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/run/lazaret", "/home/u/x", false, 0), -EEXIST,
                "volume at /run/lazaret would cover the control mount at the same place");
        /* Mounted later, /run would hide the control directory below it. */
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/run", "/home/u/run", false, 0), -EPERM,
                "volume at /run would hide the control mount at /run/lazaret below it");
        add_bad(&p, bind(MOUNT_PART_STATE_ANCHOR, "/workspace/..", "/x", false, 0), -EINVAL, "not a clean absolute path");
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/proc", "/home/u/proc", false, MOUNT_PART_BIT(MOUNT_PART_TMP)), -EEXIST,
                "would cover the system mount");
}

Test(mount_plan, malformed_entries_refused) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        MountEntry e;

        cr_assert_eq(mount_plan_init(&p), 0);
        add_bad(&p, bind(MOUNT_PART_VOLUME, "data", "/home/u/d", false, 0), -EINVAL, "not an absolute path");
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/data", "home/u/d", false, 0), -EINVAL, "absolute host path");
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/data", "/home/u/../d", false, 0), -EINVAL, "absolute host path");
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/", "/home/u", false, 0), -EINVAL, "only the root file system");
        add_bad(&p, bind(MOUNT_PART_ROOT, "/data", "/img", false, 0), -EINVAL, "only the root file system");
        add_ok(&p, bind(MOUNT_PART_ROOT, "/", "/img", false, 0));
        add_bad(&p, bind(MOUNT_PART_ROOT, "/", "/img2", false, 0), -EEXIST, "a second root file system");
        e = bind(MOUNT_PART_VOLUME, "/data", "/home/u/d", false, 0);
        e.kind = MOUNT_SANDBOX;
        e.fstype = (char *) "tmpfs";
        add_bad(&p, e, -EINVAL, "made by gVisor itself");
        e = bind(MOUNT_PART_VOLUME, "/data", "/home/u/d", false, 1u << 30);
        add_bad(&p, e, -EINVAL, "unknown parts");
        e = bind(_MOUNT_PART_MAX, "/data", "/home/u/d", false, 0);
        add_bad(&p, e, -EINVAL, "unknown part");
        e = (MountEntry) { .part = MOUNT_PART_STATE_ANCHOR, .kind = MOUNT_SUPERVISOR, .destination = (char *) "/var/cache",
                           .source = (char *) "tmpfs" };
        add_bad(&p, e, -EINVAL, "needs a source and a type");
        e.fstype = (char *) "tmpfs";
        e.data = (char *) "size=64m,mode=0755";
        add_ok(&p, e);
}

Test(mount_plan, too_many_entries) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        char dest[64];

        cr_assert_eq(mount_plan_init(&p), 0);
        while (p.n_entries < MOUNT_PLAN_MAX_ENTRIES) {
                snprintf(dest, sizeof(dest), "/v%zu", p.n_entries);
                add_ok(&p, bind(MOUNT_PART_VOLUME, dest, "/home/u/v", false, 0));
        }
        add_bad(&p, bind(MOUNT_PART_VOLUME, "/last", "/home/u/v", false, 0), -E2BIG, "more than 256 mounts");
}

Test(mount_plan, truncate) {
        _cleanup_(mount_plan_done) MountPlan p = {};

        typical(&p);
        mount_plan_truncate(&p, 5);
        cr_assert_eq(p.n_entries, 5);
        cr_assert_null(mount_plan_find(&p, "/workspace"));
        add_ok(&p, bind(MOUNT_PART_WORKSPACE, "/workspace", "/home/u/q", false, 0));
}

Test(mount_plan, identity_from_fd) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = open("/etc/hostname", O_PATH | O_CLOEXEC), dfd = open("/", O_PATH | O_CLOEXEC),
                            nfd = open("/dev/null", O_PATH | O_CLOEXEC);
        struct stat st;

        cr_assert(fd >= 0 && dfd >= 0 && nfd >= 0);
        cr_assert_eq(fstat(fd, &st), 0);
        cr_assert_eq(mount_plan_init(&p), 0);
        cr_assert_eq(mount_plan_add_bind_fd(&p, MOUNT_PART_VOLUME, "/etc/hostname", "/etc/hostname", fd, true, 0, &error), 0);
        cr_assert_eq(p.entries[4].id.dev, (uint64_t) st.st_dev);
        cr_assert_eq(p.entries[4].id.ino, (uint64_t) st.st_ino);
        cr_assert(!p.entries[4].id.directory);
        cr_assert_eq(mount_plan_add_bind_fd(&p, MOUNT_PART_VOLUME, "/host", "/", dfd, true, 0, &error), 0);
        cr_assert(p.entries[5].id.directory);
        cr_assert_eq(mount_plan_add_bind_fd(&p, MOUNT_PART_VOLUME, "/null", "/dev/null", nfd, true, 0, &error), -EPERM);
        cr_assert(strstr(error, "neither a directory nor a regular file"), "%s", error);
}

Test(mount_plan, oci_mounts_are_staged) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_strv_free_ char **strings = NULL;
        _cleanup_free_ OciMount *m = NULL;
        size_t n = 0;

        typical(&p);
        cr_assert_eq(mount_plan_oci_mounts(&p, "/b/stage", &m, &n, &strings), 0);
        /* Neither gVisor's own nor the root file system: the builder renders those. */
        cr_assert_eq(n, 6);
        cr_assert_str_eq(m[0].destination, "/workspace");
        cr_assert_str_eq(m[0].source, "/b/stage/5");
        cr_assert_str_eq(m[0].type, "bind");
        cr_assert_str_eq(m[0].options[1], "rw");
        cr_assert_str_eq(m[2].destination, "/workspace/.git/config");
        cr_assert_str_eq(m[2].options[1], "ro");
        cr_assert_str_eq(m[5].destination, "/etc/resolv.conf");
        cr_assert_str_eq(m[5].source, "/b/stage/10");
        for (size_t i = 0; i < n; i++)
                cr_assert(strncmp(m[i].source, "/b/stage/", 9) == 0, "%s", m[i].source);
}

Test(mount_plan, json_round_trip) {
        _cleanup_(mount_plan_done) MountPlan p = {}, q = {};
        _cleanup_free_ char *s = NULL, *t = NULL, *error = NULL;
        MountEntry e = { .part = MOUNT_PART_STATE_ANCHOR, .kind = MOUNT_SUPERVISOR, .destination = (char *) "/var/cache",
                         .source = (char *) "tmpfs", .fstype = (char *) "tmpfs", .data = (char *) "size=1m" };

        typical(&p);
        add_ok(&p, e);
        p.entries[5].id = (MountIdentity) { .dev = UINT64_MAX, .ino = (uint64_t) INT64_MAX + 7, .directory = true };
        cr_assert_eq(mount_plan_to_string(&p, &s), 0);
        cr_assert_eq(mount_plan_from_json(s, strlen(s), &q, &error), 0, "%s\n%s", error ?: "", s);
        cr_assert_eq(q.n_entries, p.n_entries);
        for (size_t i = 0; i < p.n_entries; i++) {
                cr_assert_str_eq(q.entries[i].destination, p.entries[i].destination);
                cr_assert_str_eq(q.entries[i].source, p.entries[i].source);
                cr_assert_eq(q.entries[i].part, p.entries[i].part);
                cr_assert_eq(q.entries[i].kind, p.entries[i].kind);
                cr_assert_eq(q.entries[i].read_only, p.entries[i].read_only);
                cr_assert_eq(q.entries[i].nests_in, p.entries[i].nests_in);
                cr_assert_eq(q.entries[i].id.dev, p.entries[i].id.dev);
                cr_assert_eq(q.entries[i].id.ino, p.entries[i].id.ino);
                cr_assert_eq(q.entries[i].id.directory, p.entries[i].id.directory);
        }
        cr_assert_str_eq(q.entries[11].data, "size=1m");
        cr_assert_eq(mount_plan_to_string(&q, &t), 0);
        cr_assert_str_eq(s, t);
}

static void from_json_bad(const char *text, const char *msg) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *error = NULL;

        cr_assert_lt(mount_plan_from_json(text, strlen(text), &p, &error), 0, "accepted: %s", text);
        cr_assert_not_null(error);
        cr_assert(strstr(error, msg), "message '%s' lacks '%s'", error, msg);
        cr_assert_eq(p.n_entries, 0);
}

#define E(x) "{\"entries\":[" x "]}"
#define B(extra) "{\"part\":\"volume\",\"kind\":\"bind\",\"destination\":\"/d\",\"source\":\"/s\",\"read_only\":true," \
                 "\"nests_in\":[]" extra "}"

Test(mount_plan, json_refusals) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *error = NULL;
        const char *ok = E(B(",\"type\":\"file\",\"dev\":1,\"ino\":2"));

        cr_assert_eq(mount_plan_from_json(ok, strlen(ok), &p, &error), 0, "%s", error ?: "");
        from_json_bad("[]", "not a JSON object");
        from_json_bad("{\"entries\":[],\"x\":1}", "unknown key \"x\"");
        from_json_bad("{\"entries\":{}}", "not an array");
        from_json_bad(E(B(",\"type\":\"file\",\"dev\":1,\"ino\":2,\"ino\":3")), "duplicate");
        from_json_bad(E(B(",\"type\":\"file\",\"dev\":1")), "\"ino\" is missing");
        from_json_bad(E(B(",\"type\":\"file\",\"dev\":-1,\"ino\":2")), "not a non-negative integer");
        from_json_bad(E(B(",\"type\":\"file\",\"dev\":1.5,\"ino\":2")), "not a non-negative integer");
        from_json_bad(E(B(",\"type\":\"fifo\",\"dev\":1,\"ino\":2")), "neither \"directory\" nor \"file\"");
        from_json_bad(E(B(",\"type\":\"file\",\"dev\":1,\"ino\":2,\"owner\":0")), "unknown key \"owner\"");
        from_json_bad(E("{\"part\":\"volume\",\"kind\":\"bind\",\"destination\":\"/d\",\"source\":\"/s\",\"read_only\":1,"
                        "\"nests_in\":[],\"type\":\"file\",\"dev\":1,\"ino\":2}"), "not a boolean");
        from_json_bad(E("{\"part\":\"nope\",\"kind\":\"bind\",\"destination\":\"/d\",\"source\":\"/s\",\"read_only\":true,"
                        "\"nests_in\":[],\"type\":\"file\",\"dev\":1,\"ino\":2}"), "unknown part \"nope\"");
        from_json_bad(E("{\"part\":\"volume\",\"kind\":\"bind\",\"destination\":\"/d\",\"source\":\"/s\",\"read_only\":true,"
                        "\"nests_in\":[\"tmp\",\"tmp\"],\"type\":\"file\",\"dev\":1,\"ino\":2}"), "named once");
        from_json_bad(E("{\"part\":\"volume\",\"kind\":\"supervisor\",\"destination\":\"/d\",\"source\":\"tmpfs\","
                        "\"fstype\":\"tmpfs\",\"read_only\":true,\"nests_in\":[],\"dev\":1}"), "only a bind or the view has");
        /* The plan's own rules hold for what is read back. */
        from_json_bad(E(B(",\"type\":\"file\",\"dev\":1,\"ino\":2") "," B(",\"type\":\"file\",\"dev\":1,\"ino\":2")),
                      "would cover the volume mount at the same place");
        from_json_bad("{\"entries\":[] } x", "");
}
