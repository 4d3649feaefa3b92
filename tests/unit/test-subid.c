/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fs-util.h"
#include "strv.h"
#include "subid.h"

Test(subid, picks_lowest_sufficient_range_by_name_or_id) {
        SubidRange r;
        const char *text =
                "other:100000:65536\n"
                "alice:300000:65536\n"
                "alice:200000:1000\n"          /* too small */
                "1001:231072:65536\n"          /* by numeric ID: lowest */
                "alice:x:65536\n"              /* malformed */
                "alice:250000\n";              /* malformed */

        cr_assert_eq(subid_pick(text, "alice", 1001, &r), 0);
        cr_assert_eq(r.start, 231072);
        cr_assert_eq(r.count, 65536);
        cr_assert_eq(subid_pick(text, "alice", 2000, &r), 0);
        cr_assert_eq(r.start, 300000);
        cr_assert_eq(subid_pick(text, "bob", 2000, &r), -ENOENT);
        cr_assert_eq(subid_pick("alice:4294967295:65536\n", "alice", 1, &r), -ENOENT);
        cr_assert_eq(subid_pick("alice:1:99999999999\n", "alice", 1, &r), -ENOENT);
        cr_assert_eq(subid_pick("", "alice", 1, &r), -ENOENT);
        cr_assert_eq(subid_pick("alice:100000:65536", "alice", 1, &r), 0);   /* no final newline */
        cr_assert_eq(subid_pick("alice:+100000:65536\nalice: 100000:65536\nalice:100000:-65536\n", "alice", 1, &r), -ENOENT);
        cr_assert_eq(subid_pick("alice:0100000:065536\n", "alice", 1, &r), 0);     /* shadow reads these too */
        cr_assert_eq(r.start, 100000);
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

static char scratch[] = "/tmp/test-subid.XXXXXX";

static void scratch_setup(void) {
        cr_assert_not_null(mkdtemp(scratch));
}

static void scratch_teardown(void) {
        (void) rm_rf(scratch);
}

/* A file in the scratch directory, with text (NULL: not created). */
static char *scratch_file(const char *name, const char *text) {
        char *path = NULL;
        FILE *f;

        cr_assert_geq(asprintf(&path, "%s/%s", scratch, name), 0);
        if (text) {
                f = fopen(path, "we");
                cr_assert_not_null(f);
                cr_assert_geq(fputs(text, f), 0);
                cr_assert_eq(fclose(f), 0);
        }
        return path;
}

Test(subid, pick_ranges_reads_both_files, .init = scratch_setup, .fini = scratch_teardown) {
        _cleanup_free_ char *u = scratch_file("subuid", "alice:300000:65536\n1001:231072:65536\n");
        _cleanup_free_ char *g = scratch_file("subgid", "alice:400000:65536\n");
        _cleanup_free_ char *why = NULL;
        SubidRange uids = {}, gids = {};

        cr_assert_eq(subid_pick_ranges(u, g, "alice", 1001, 1002, &uids, &gids, &why), 0);
        cr_assert_eq(uids.start, 231072);       /* by number, the lower one */
        cr_assert_eq(gids.start, 400000);       /* by name */
        cr_assert_null(why);

        /* Without a name only the numeric IDs match: none in the group file. */
        cr_assert_eq(subid_pick_ranges(u, g, NULL, 1001, 1002, &uids, &gids, &why), -ENOENT);
        cr_assert_not_null(why);
        cr_assert(strstr(why, "no range of 65536 subordinate IDs for 1001 in "), "%s", why);
        free(TAKE_PTR(why));
        cr_assert_eq(uids.start, 231072, "a failure must not write the ranges");
        cr_assert_eq(gids.start, 400000);
}

Test(subid, pick_ranges_names_what_is_missing, .init = scratch_setup, .fini = scratch_teardown) {
        _cleanup_free_ char *u = scratch_file("subuid", "alice:300000:65536\n");
        _cleanup_free_ char *g = scratch_file("subgid", "bob:400000:65536\n");
        _cleanup_free_ char *none = scratch_file("missing", NULL);
        _cleanup_free_ char *why = NULL, *want = NULL;
        SubidRange uids, gids;

        cr_assert_eq(subid_pick_ranges(u, g, "alice", 1001, 1001, &uids, &gids, &why), -ENOENT);
        cr_assert_geq(asprintf(&want, "no range of 65536 subordinate IDs for alice in %s and %s (add one with: "
                               "sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 alice)", u, g), 0);
        cr_assert_str_eq(why, want);
        free(TAKE_PTR(why));

        /* A missing file is a missing range. */
        cr_assert_eq(subid_pick_ranges(none, g, "bob", 1001, 1001, &uids, &gids, &why), -ENOENT);
        cr_assert(strstr(why, "no range of 65536 subordinate IDs for bob"), "%s", why);
        free(TAKE_PTR(why));

        /* One that cannot be read is named as such. */
        cr_assert_lt(subid_pick_ranges(u, scratch, "alice", 1001, 1001, &uids, &gids, &why), 0);
        cr_assert(strstr(why, "cannot read ") && strstr(why, scratch), "%s", why);
        free(TAKE_PTR(why));

        /* ret_why is optional. */
        cr_assert_eq(subid_pick_ranges(u, g, "alice", 1001, 1001, &uids, &gids, NULL), -ENOENT);
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
