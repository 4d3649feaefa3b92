/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* setid_permitted_mode(): what the set-ID filter's responder applies (spec C22). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The State Anchor identities the supervisor hands the responder (issue 33). */
Test(setid_mode, anchor_id_round_trip) {
        AnchorId id = { .type = 0x794c7630, .key = 0x98c8fe7233cbc2b4ULL }, back;
        char buf[ANCHOR_ID_STRING_MAX];

        anchor_id_format(&id, buf);
        cr_assert_str_eq(buf, "794c7630:98c8fe7233cbc2b4");
        cr_assert_eq(anchor_id_parse(buf, &back), 0);
        cr_assert(anchor_id_in(&back, &id, 1));
        id.key ^= 1;
        cr_assert_not(anchor_id_in(&back, &id, 1));
        cr_assert_not(anchor_id_in(&back, NULL, 0));
}

Test(setid_mode, anchor_id_parse_refuses) {
        AnchorId id;

        cr_assert_eq(anchor_id_parse("", &id), -EINVAL);
        cr_assert_eq(anchor_id_parse("794c7630", &id), -EINVAL);
        cr_assert_eq(anchor_id_parse("794c7630:", &id), -EINVAL);
        cr_assert_eq(anchor_id_parse(":1", &id), -EINVAL);
        cr_assert_eq(anchor_id_parse("794c7630:1x", &id), -EINVAL);
        cr_assert_eq(anchor_id_parse("-1:1", &id), -EINVAL);
        cr_assert_eq(anchor_id_parse("1:11111111111111111", &id), -EINVAL);
        cr_assert_eq(anchor_id_parse("794C7630:1", &id), -EINVAL);
}

/* Two files of one directory: one identity; a tmpfs elsewhere: another. */
Test(setid_mode, anchor_id_of_fd) {
        AnchorId a, b;
        int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

        cr_assert_geq(fd, 0);
        cr_assert_eq(anchor_id_of_fd(fd, &a), 0);
        close(fd);
        fd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        cr_assert_eq(anchor_id_of_fd(fd, &b), 0);
        close(fd);
        cr_assert_not(anchor_id_in(&a, &b, 1));
        cr_assert_eq(anchor_id_of_fd(-1, &a), -EBADF);
}
