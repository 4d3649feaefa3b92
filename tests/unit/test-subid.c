/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "isolated.h"
#include "macro.h"
#include "strv.h"
#include "subid.h"

Test(subid, picks_lowest_sufficient_range) {
        SubidRange r = {};
        const SubidSpan spans[] = {
                { 300000, 65536 },
                { 200000, 1000 },                       /* too small */
                { 231072, 65536 },                      /* the lowest sufficient one */
                { 4294967295ULL, 65536 },               /* does not fit in 32 bits */
                { 1ULL << 40, 1ULL << 20 },
        };

        cr_assert_eq(subid_pick(spans, ELEMENTSOF(spans), &r), 0);
        cr_assert_eq(r.start, 231072);
        cr_assert_eq(r.count, 65536);
        cr_assert_eq(subid_pick(spans, 2, &r), 0);
        cr_assert_eq(r.start, 300000);
        cr_assert_eq(subid_pick(spans + 3, 2, &r), -ENOENT);
        cr_assert_eq(r.start, 300000, "a failure must not write the range");
        cr_assert_eq(subid_pick(NULL, 0, &r), -ENOENT);
        /* The last start whose SUBID_COUNT IDs still fit. */
        cr_assert_eq(subid_pick(&(SubidSpan) { 4294967296ULL - 65536, 65536 }, 1, &r), 0);
        cr_assert_eq(r.start, 4294901760U);
        cr_assert_eq(subid_pick(&(SubidSpan) { 4294967296ULL - 65535, 65536 }, 1, &r), -ENOENT);
        cr_assert_eq(subid_pick(&(SubidSpan) { 100000, 1ULL << 33 }, 1, &r), 0);
        cr_assert_eq(r.count, UINT32_MAX);
}

Test(subid, nss_source_as_libsubid_reads_it) {
        char *s = (char *) "unset";

        cr_assert_eq(subid_nss_source(NULL, &s), 0);
        cr_assert_null(s);
        cr_assert_eq(subid_nss_source("passwd: files systemd\ngroup: files\n", &s), 0);
        cr_assert_null(s);
        cr_assert_eq(subid_nss_source("passwd: files\nsubid:\tfiles sss\n", &s), 0);
        cr_assert_null(s);
        cr_assert_eq(subid_nss_source("#subid: ldap\nSUBID:   \nsubid: sss files\nsubid: ldap\n", &s), 0);
        cr_assert_str_eq(s, "sss");
        free(s);
        cr_assert_eq(subid_nss_source("subid:sss", &s), 0);
        cr_assert_str_eq(s, "sss");
        free(s);
}

Test(subid, missing_message_names_source_and_fix) {
        _cleanup_free_ char *both = NULL, *gids = NULL, *nss = NULL;

        cr_assert_eq(subid_missing_message("alice", NULL, true, true, &both), 0);
        cr_assert_str_eq(both, "no range of 65536 subordinate IDs for alice in /etc/subuid and /etc/subgid (add one "
                         "with: sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 alice)");
        cr_assert_eq(subid_missing_message("alice", NULL, false, true, &gids), 0);
        cr_assert_str_eq(gids, "no range of 65536 subordinate IDs for alice in /etc/subgid (add one with: "
                         "sudo usermod --add-subgids 100000-165535 alice)");
        cr_assert_eq(subid_missing_message("1001", "sss", true, false, &nss), 0);
        cr_assert_str_eq(nss, "no range of 65536 subordinate IDs for 1001 from the subid source \"sss\" of "
                         "/etc/nsswitch.conf (have one assigned there, or make that line \"subid: files\" and "
                         "add one with: sudo usermod --add-subuids 100000-165535 1001)");
}

Test(subid, map_check_wants_exactly_the_two_lines) {
        SubidRange r = { .start = 231072, .count = 65536 };

        /* As the kernel prints it, in either order. */
        cr_assert_eq(subid_map_check("         0       1001          1\n         1     231072      65536\n", 1001, &r), 0);
        cr_assert_eq(subid_map_check("1 231072 65536\n0 1001 1\n", 1001, &r), 0);
        cr_assert_eq(subid_map_check("0 1001 1\n", 1001, &r), -EPERM);                          /* range missing */
        cr_assert_eq(subid_map_check("0 1001 1\n1 231072 65535\n", 1001, &r), -EPERM);          /* short */
        cr_assert_eq(subid_map_check("0 1002 1\n1 231072 65536\n", 1001, &r), -EPERM);          /* other user */
        cr_assert_eq(subid_map_check("0 1001 1\n1 231072 65536\n65537 0 1\n", 1001, &r), -EPERM); /* extra line */
        cr_assert_eq(subid_map_check("0 1001 1 x\n1 231072 65536\n", 1001, &r), -EPERM);        /* junk */
        cr_assert_eq(subid_map_check("+0 1001 1\n1 231072 65536\n", 1001, &r), -EPERM);        /* a sign */
        cr_assert_eq(subid_map_check("0 1001 1\n1 231072 4295032832\n", 1001, &r), -EPERM);   /* 65536 + 2^32 */
        cr_assert_eq(subid_map_check("0 1001 1\n1\t231072 65536\n", 1001, &r), -EPERM);      /* not the kernel's spaces */
        cr_assert_eq(subid_map_check("", 1001, &r), -EPERM);
}

/*
 * libsubid itself, against an /etc of our own: each test body runs in a
 * child forked from the (multithreaded) Criterion process, in a private user
 * and mount namespace where a scratch directory is bind-mounted over /etc.
 * It checks with CHECK() and reports by its exit status: 0 passed, 77 no
 * namespaces here, anything else failed (the reason is on stderr).
 */
static char scratch[] = "/tmp/test-subid.XXXXXX";

static void scratch_setup(void) {
        cr_assert_not_null(mkdtemp(scratch));
}

static void scratch_teardown(void) {
        (void) rm_rf(scratch);
}

/* scratch/etc/NAME with text; NULL: not created. */
static void etc_file(const char *name, const char *text) {
        _cleanup_free_ char *path = NULL;

        cr_assert_geq(asprintf(&path, "%s/etc/%s", scratch, name), 0);
        if (text)
                cr_assert_eq(write_file(path, text, 0644), 0, "%s", path);
}

/* An /etc with our passwd and group, the given nsswitch.conf, subuid and subgid. */
static void prepare_etc(const char *nsswitch, const char *subuid, const char *subgid) {
        _cleanup_free_ char *etc = NULL, *passwd = NULL, *group = NULL;

        cr_assert_geq(asprintf(&etc, "%s/etc", scratch), 0);
        cr_assert_eq(mkdir(etc, 0755), 0);
        cr_assert_geq(asprintf(&passwd, "%s/passwd", etc), 0);
        cr_assert_geq(asprintf(&group, "%s/group", etc), 0);
        cr_assert_eq(copy_file("/etc/passwd", passwd, 0644), 0);
        cr_assert_eq(copy_file("/etc/group", group, 0644), 0);
        etc_file("nsswitch.conf", nsswitch);
        etc_file("subuid", subuid);
        etc_file("subgid", subgid);
}

/* The scratch /etc over /etc, in the body's own mount namespace. */
static void bind_etc(void) {
        _cleanup_free_ char *etc = NULL;

        CHECK(asprintf(&etc, "%s/etc", scratch) >= 0);
        CHECK(mount(etc, "/etc", NULL, MS_BIND, NULL) == 0, "%s", strerror(errno));
}

static void run_with_etc(void (*body)(void)) {
        run_isolated_with(CLONE_NEWNS, bind_etc, body);
}

#define NSSWITCH_FILES "passwd: files\ngroup: files\n"

static void files_by_name_and_id(void) {
        _cleanup_free_ char *why = NULL;
        SubidRange uids = {}, gids = {};

        /* root is UID and GID 0: its ranges are listed by name and by number. */
        CHECK(subid_pick_for_user("root", 0, &uids, &gids, &why) == 0, "%s", why);
        CHECK(uids.start == 231072, "%u", uids.start);       /* by number, the lower one */
        CHECK(uids.count == 70000, "%u", uids.count);
        CHECK(gids.start == 400000, "%u", gids.start);       /* by name */
        CHECK(!why);

        /* Without a name the numeric UID is the owner: no GID range of "0". */
        CHECK(subid_pick_for_user(NULL, 0, &uids, &gids, &why) == -ENOENT);
        CHECK(why && streq(why, "no range of 65536 subordinate IDs for 0 in /etc/subgid (add one with: "
                           "sudo usermod --add-subgids 100000-165535 0)"), "%s", why);
        CHECK(uids.start == 231072, "a failure must not write the ranges");
        free(TAKE_PTR(why));

        CHECK(subid_pick_for_user("lazaret-test-nobody", 4242, &uids, &gids, &why) == -ENOENT);
        CHECK(why && streq(why, "no range of 65536 subordinate IDs for lazaret-test-nobody in /etc/subuid and "
                           "/etc/subgid (add one with: sudo usermod --add-subuids 100000-165535 --add-subgids "
                           "100000-165535 lazaret-test-nobody)"), "%s", why);
}

Test(subid, libsubid_files, .init = scratch_setup, .fini = scratch_teardown) {
        prepare_etc(NSSWITCH_FILES "subid: files\n",
                    "root:300000:65536\n"
                    "root:200000:1000\n"                /* too small */
                    "0:231072:70000\n"                  /* by numeric ID: lowest */
                    "root:x:65536\n"                    /* malformed */
                    "other:100000:65536\n",
                    "root:400000:65536\n");
        run_with_etc(files_by_name_and_id);
}

static void files_missing(void) {
        _cleanup_free_ char *why = NULL;
        SubidRange uids, gids;

        CHECK(subid_pick_for_user("root", 0, &uids, &gids, &why) == -ENOENT);
        CHECK(why && strstr(why, "for root in /etc/subuid (add one with: sudo usermod --add-subuids 100000-165535 root)"),
              "%s", why);
        free(TAKE_PTR(why));
        /* ret_why is optional. */
        CHECK(subid_pick_for_user("root", 0, &uids, &gids, NULL) == -ENOENT);
}

/* No nsswitch.conf, no /etc/subuid: libsubid reads files, and a missing file has no range. */
Test(subid, libsubid_missing_file, .init = scratch_setup, .fini = scratch_teardown) {
        prepare_etc(NULL, NULL, "root:400000:65536\n");
        run_with_etc(files_missing);
}

static void files_unreadable(void) {
        _cleanup_free_ char *why = NULL;
        SubidRange uids, gids;

        CHECK(subid_pick_for_user("root", 0, &uids, &gids, &why) < 0);
        CHECK(why && strstr(why, "cannot read /etc/subgid: "), "%s", why);
}

/* One that cannot be read (a directory) is named as such. */
Test(subid, libsubid_unreadable_file, .init = scratch_setup, .fini = scratch_teardown) {
        _cleanup_free_ char *dir = NULL;

        prepare_etc(NSSWITCH_FILES, "root:300000:65536\n", NULL);
        cr_assert_geq(asprintf(&dir, "%s/etc/subgid", scratch), 0);
        cr_assert_eq(mkdir(dir, 0755), 0);
        run_with_etc(files_unreadable);
}

/*
 * An nsswitch source, as SSSD or FreeIPA would be: libsubid_lazarettest.so
 * (subid-nss-test.c, found through LD_LIBRARY_PATH) answers for alice and
 * fails for "broken"; /etc/subuid, which it replaces, would answer otherwise.
 */
static void nss_source(void) {
        _cleanup_free_ char *why = NULL;
        SubidRange uids = {}, gids = {};

        CHECK(subid_pick_for_user("alice", 1001, &uids, &gids, &why) == 0, "%s", why);
        CHECK(uids.start == 300000, "%u", uids.start);
        CHECK(gids.start == 400000, "%u", gids.start);

        CHECK(subid_pick_for_user("root", 0, &uids, &gids, &why) == -ENOENT);
        CHECK(why && strstr(why, "for root from the subid source \"lazarettest\" of /etc/nsswitch.conf"), "%s", why);
        free(TAKE_PTR(why));

        CHECK(subid_pick_for_user("broken", 1002, &uids, &gids, &why) == -EIO);
        CHECK(why && streq(why, "cannot look up the subordinate UIDs of broken through the subid source "
                           "\"lazarettest\" of /etc/nsswitch.conf (libsubid_lazarettest.so)"), "%s", why);
}

Test(subid, libsubid_nss_source, .init = scratch_setup, .fini = scratch_teardown) {
        prepare_etc(NSSWITCH_FILES "subid: lazarettest\n", "root:300000:65536\nalice:100000:65536\n",
                    "root:400000:65536\nalice:100000:65536\n");
        run_with_etc(nss_source);
}

Test(subid, user_name_of_uid) {
        _cleanup_free_ char *name = NULL;

        cr_assert_eq(subid_user_name(0, &name), 0);
        cr_assert_str_eq(name, "root");
        cr_assert_eq(subid_user_name((uid_t) 4294967294U, &name), -ESRCH);
        cr_assert_str_eq(name, "root", "a failure must not write the name");
}

Test(subid, mapper_argv) {
        _cleanup_strv_free_ char **argv = NULL;
        SubidRange r = { .start = 231072, .count = 70000 };
        char **none = NULL;

        cr_assert_eq(subid_mapper_argv("sh", 4321, 1001, &r, &argv), 0);
        cr_assert_eq(strv_length(argv), 8);
        cr_assert_eq(argv[0][0], '/');
        cr_assert(strstr(argv[0], "/sh"), "%s", argv[0]);
        /* PID, then ns 0 -> the user, then ns 1.. -> exactly SUBID_COUNT of the range. */
        cr_assert_str_eq(argv[1], "4321");
        cr_assert_str_eq(argv[2], "0");
        cr_assert_str_eq(argv[3], "1001");
        cr_assert_str_eq(argv[4], "1");
        cr_assert_str_eq(argv[5], "1");
        cr_assert_str_eq(argv[6], "231072");
        cr_assert_str_eq(argv[7], "65536");
        cr_assert_null(argv[8]);

        cr_assert_eq(subid_mapper_argv("lazaret-no-such-mapper", 4321, 1001, &r, &none), -ENOENT);
        cr_assert_null(none);
}
