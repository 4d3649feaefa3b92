/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* setid_permitted_mode(): what the set-ID filter's responder applies (spec C22). */
#include <criterion/criterion.h>
#include <sys/stat.h>

#include "setid-mode.h"

Test(setid_mode, new_bits_dropped) {
        cr_assert_eq(setid_permitted_mode(04755, 0600), 0755);
        cr_assert_eq(setid_permitted_mode(02711, 0644), 0711);
        cr_assert_eq(setid_permitted_mode(06755, 0), 0755);
        /* The sticky bit and the file type are not the responder's concern. */
        cr_assert_eq(setid_permitted_mode(S_IFREG | 05755, 0644), 01755);
}

Test(setid_mode, existing_bits_kept_when_asked) {
        cr_assert_eq(setid_permitted_mode(04755, 04755), 04755);
        cr_assert_eq(setid_permitted_mode(06755, 02755), 02755);
        cr_assert_eq(setid_permitted_mode(02775, S_IFDIR | 02755), 02775);
        /* Asked away: gone. */
        cr_assert_eq(setid_permitted_mode(0755, 04755), 0755);
        cr_assert_eq(setid_permitted_mode(04700, 02755), 0700);
}
