/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>

#include "cidr.h"

Test(cidr, parses_and_prints) {
        Cidr c;
        char b[CIDR_STRING_MAX];

        cr_assert_eq(cidr_parse("10.0.0.0/8", &c), 0);
        cr_assert_str_eq(cidr_to_string(&c, b), "10.0.0.0/8");
        cr_assert_eq(cidr_parse("0.0.0.0/0", &c), 0);
        cr_assert_eq(c.prefixlen, 0);
        cr_assert_eq(cidr_parse("192.0.2.7", &c), 0);
        cr_assert_str_eq(cidr_to_string(&c, b), "192.0.2.7/32");
}

Test(cidr, refuses) {
        Cidr c;
        cr_assert_eq(cidr_parse("10.0.0.1/8", &c), -EADDRNOTAVAIL);
        cr_assert_eq(cidr_parse("fd00::/8", &c), -EAFNOSUPPORT);
        cr_assert_eq(cidr_parse("10.0.0.0/33", &c), -EINVAL);
        cr_assert_eq(cidr_parse("10.0.0.0/", &c), -EINVAL);
        cr_assert_eq(cidr_parse("10.0.0.0/08", &c), -EINVAL);
        cr_assert_eq(cidr_parse("10.0.0.0/+8", &c), -EINVAL);
        cr_assert_eq(cidr_parse("10.0.0/8", &c), -EINVAL);
        cr_assert_eq(cidr_parse("010.0.0.0/8", &c), -EINVAL);
        cr_assert_eq(cidr_parse(" 10.0.0.0/8", &c), -EINVAL);
        cr_assert_eq(cidr_parse("10.0.0.0/8 ", &c), -EINVAL);
        cr_assert_eq(cidr_parse("", &c), -EINVAL);
        cr_assert_eq(cidr_parse("/8", &c), -EINVAL);
}

Test(cidr, relations) {
        Cidr a, b, t;
        cr_assert_eq(cidr_parse("10.0.0.0/8", &a), 0);
        cr_assert_eq(cidr_parse("10.137.54.0/24", &b), 0);
        cr_assert(cidr_contains(&a, &b));
        cr_assert_not(cidr_contains(&b, &a));
        cr_assert(cidr_overlaps(&a, &b));
        cr_assert(cidr_contains(&cidr_reserved_topology, &b));
        cr_assert_eq(cidr_parse("10.137.56.0/24", &t), 0);
        cr_assert_not(cidr_overlaps(&cidr_reserved_topology, &t));
}
