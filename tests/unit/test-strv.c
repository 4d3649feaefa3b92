/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

Test(strv, grows_without_losing_anything) {
        _cleanup_strv_free_ char **l = NULL;
        char big[5000];

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        for (int i = 0; i < 100; i++)
                cr_assert_eq(strv_extendf(&l, "--arg%d=%s", i, i == 50 ? big : "v"), 0);
        cr_assert_eq(strv_extend_strv(&l, (char *[]) { (char *) "a", (char *) "b", NULL }), 0);
        cr_assert_eq(strv_extend_strv(&l, NULL), 0);
        cr_assert_eq(strv_length(l), 102);
        cr_assert_str_eq(l[0], "--arg0=v");
        cr_assert_eq(strlen(l[50]), strlen("--arg50=") + sizeof(big) - 1);
        cr_assert_str_eq(l[99], "--arg99=v");
        cr_assert_str_eq(l[101], "b");
        cr_assert_null(l[102]);
}

Test(strv, sort) {
        _cleanup_strv_free_ char **l = NULL;

        strv_sort(NULL);
        cr_assert_eq(strv_extend_strv(&l, (char *[]) { (char *) "var-lib", (char *) "etc", (char *) "usr", (char *) "opt", NULL }), 0);
        strv_sort(l);
        cr_assert_str_eq(l[0], "etc");
        cr_assert_str_eq(l[1], "opt");
        cr_assert_str_eq(l[2], "usr");
        cr_assert_str_eq(l[3], "var-lib");
        cr_assert_null(l[4]);
}
