/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>

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
        cr_assert_eq(subid_map_check("", 1001, &r), -EPERM);
}
