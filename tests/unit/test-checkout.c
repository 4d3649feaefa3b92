/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkout.h"
#include "cleanup.h"
#include "git-sentry.h"
#include "view-policy.h"

static CheckoutId plain(uint64_t ino, int64_t sec, uint32_t nsec) {
        return (CheckoutId) {
                .repository = true,
                .git_dir = { .ino = ino, .dev_major = 8, .dev_minor = 1, .has_btime = true, .btime_sec = sec, .btime_nsec = nsec },
        };
}

static void key_of(const CheckoutId *id, char k[static CHECKOUT_KEY_MAX]) {
        checkout_id_key(id, k);
}

Test(checkout, key_form) {
        CheckoutId a = plain(1234, 1700000000, 5), none = {};
        char k[CHECKOUT_KEY_MAX];

        key_of(&a, k);
        cr_assert_eq(strlen(k), CHECKOUT_KEY_HEX_LEN);
        cr_assert(checkout_key_is_valid(k));
        key_of(&none, k);
        cr_assert_str_eq(k, CHECKOUT_KEY_NONE);
        cr_assert(checkout_key_is_valid(k));
}

/* The re-clone of the issue: the same inode number, another birth. */
Test(checkout, reused_inode_other_birth_is_another_checkout) {
        CheckoutId a = plain(1234, 1700000000, 5), b = plain(1234, 1700000000, 6), c = plain(1234, 1700000100, 5);

        cr_assert_not(checkout_id_equal(&a, &b));
        cr_assert_not(checkout_id_equal(&a, &c));
        cr_assert(checkout_id_equal(&a, &a));
}

/* A device number given out again at mount time does not change the key when the birth time is known. */
Test(checkout, device_not_in_key_with_birth_time) {
        CheckoutId a = plain(1234, 1700000000, 5), b = a;

        b.git_dir.dev_major = 0;
        b.git_dir.dev_minor = 47;
        cr_assert(checkout_id_equal(&a, &b));
}

/* Without a birth time, device and inode decide. */
Test(checkout, fallback_device_and_inode) {
        CheckoutId a = plain(1234, 0, 0), b, c;

        a.git_dir.has_btime = false;
        b = a;
        b.git_dir.dev_minor = 2;
        c = a;
        c.git_dir.ino = 1235;
        cr_assert_not(checkout_id_equal(&a, &b));
        cr_assert_not(checkout_id_equal(&a, &c));
        cr_assert(checkout_id_equal(&a, &a));
        /* the same directory with and without a birth time: different keys (kept apart, never confused) */
        b = a;
        b.git_dir.has_btime = true;
        cr_assert_not(checkout_id_equal(&a, &b));
}

Test(checkout, linked_worktree_needs_both) {
        CheckoutId a = plain(10, 1700000000, 1), b, c;

        a.linked = true;
        a.common_dir = (CheckoutDirId) { .ino = 20, .has_btime = true, .btime_sec = 1600000000, .btime_nsec = 2 };
        b = a;
        b.common_dir.btime_nsec = 3;            /* the main repository re-cloned, same registration inode */
        c = a;
        c.linked = false;                       /* the same git dir, no common dir */
        cr_assert_not(checkout_id_equal(&a, &b));
        cr_assert_not(checkout_id_equal(&a, &c));
        /* a linked worktree without a birth time on its common dir falls back for the whole key */
        b = a;
        b.common_dir.has_btime = false;
        cr_assert_not(checkout_id_equal(&a, &b));
}

Test(checkout, key_validity) {
        cr_assert(checkout_key_is_valid("0123456789abcdef"));
        cr_assert(checkout_key_is_valid("legacy-0123456789abcdef"));
        cr_assert(checkout_key_is_valid("none"));
        cr_assert_not(checkout_key_is_valid("0123456789ABCDEF"));
        cr_assert_not(checkout_key_is_valid("0123456789abcde"));
        cr_assert_not(checkout_key_is_valid("0123456789abcdef0"));
        cr_assert_not(checkout_key_is_valid("legacy-"));
        cr_assert_not(checkout_key_is_valid("legacy-0123"));
        cr_assert_not(checkout_key_is_valid(".."));
        cr_assert_not(checkout_key_is_valid(""));
        cr_assert_not(checkout_key_is_valid(NULL));
}

Test(checkout, state_paths) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        char *x = NULL;

        cr_assert_eq(checkout_state_path("/d/domains/abc", "0123456789abcdef", VIEW_STATE_DIR, &a), 0);
        cr_assert_str_eq(a, "/d/domains/abc/checkouts/0123456789abcdef/view");
        cr_assert_eq(checkout_state_path("/d/domains/abc", "0123456789abcdef", VIEW_GIT_STATE_DIR, &b), 0);
        cr_assert_str_eq(b, "/d/domains/abc/checkouts/0123456789abcdef/view-git");
        cr_assert_eq(checkout_state_path("/d/domains/abc", "none", VIEW_IGNORED_DIR, &c), 0);
        cr_assert_str_eq(c, "/d/domains/abc/checkouts/none/ignored");
        cr_assert_eq(checkout_state_path("/d/domains/abc", "0123456789abcdef", NULL, &d), 0);
        cr_assert_str_eq(d, "/d/domains/abc/checkouts/0123456789abcdef");
        cr_assert_eq(checkout_state_path("/d", "../../etc", "view", &x), -EINVAL);
        cr_assert_eq(checkout_state_path("/d", "0123456789abcdef", "a/b", &x), -EINVAL);
        cr_assert_eq(checkout_state_path("/d", "0123456789abcdef", "..", &x), -EINVAL);
        cr_assert_eq(checkout_state_path("/d", "0123456789abcdef", "", &x), -EINVAL);
        cr_assert_eq(checkout_state_path("d", "0123456789abcdef", "view", &x), -EINVAL);
        cr_assert_null(x);
}

Test(checkout, record_round_trip) {
        CheckoutRecord rec = { .has_id = true, .id = plain(77, 1700000000, 123456789), .workspace = (char *) "/home/u/p\001q",
                               .first_used = 10, .last_used = 20 };
        _cleanup_(checkout_record_done) CheckoutRecord back = {};
        _cleanup_free_ char *text = NULL, *error = NULL;
        char key[CHECKOUT_KEY_MAX];

        rec.id.linked = true;
        rec.id.common_dir = (CheckoutDirId) { .ino = UINT64_MAX - 1, .dev_major = 254, .dev_minor = 3 };
        checkout_id_key(&rec.id, key);
        rec.key = key;
        cr_assert_eq(checkout_record_to_string(&rec, &text), 0);
        cr_assert_eq(checkout_record_parse(text, strlen(text), &back, &error), 0, "%s", error ?: "");
        cr_assert_str_eq(back.key, key);
        cr_assert(back.has_id);
        cr_assert(checkout_id_equal(&back.id, &rec.id));
        cr_assert_eq(back.id.git_dir.btime_nsec, 123456789);
        cr_assert(back.id.linked);
        cr_assert_not(back.id.common_dir.has_btime);
        cr_assert_eq(back.id.common_dir.ino, UINT64_MAX - 1);
        cr_assert_str_eq(back.workspace, rec.workspace);
        cr_assert_eq(back.first_used, 10);
        cr_assert_eq(back.last_used, 20);
}

Test(checkout, record_refuses) {
        static const char *bad[] = {
                "{\"version\": 1, \"key\": \"0123456789abcdef\", \"identity\": null, \"first_used\": 1, \"last_used\": 1}",
                "{\"version\": 2, \"key\": \"legacy-0123456789abcdef\", \"identity\": null, \"first_used\": 1, \"last_used\": 1}",
                "{\"version\": 1, \"key\": \"legacy-0123456789abcdef\", \"identity\": null, \"first_used\": 1, \"last_used\": 1, \"x\": 1}",
                "{\"version\": 1, \"key\": \"../x\", \"identity\": null, \"first_used\": 1, \"last_used\": 1}",
                /* a key that is not the identity's */
                "{\"version\": 1, \"key\": \"0123456789abcdef\", \"identity\": {\"repository\": true, \"git_dir\": "
                "{\"inode\": 1, \"device_major\": 1, \"device_minor\": 1}}, \"first_used\": 1, \"last_used\": 1}",
                "{\"version\": 1, \"key\": \"legacy-0123456789abcdef\", \"identity\": null, \"first_used\": -1, \"last_used\": 1}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_(checkout_record_done) CheckoutRecord r = {};
                _cleanup_free_ char *error = NULL;
                cr_assert_lt(checkout_record_parse(bad[i], strlen(bad[i]), &r, &error), 0, "accepted: %s", bad[i]);
        }
        {
                const char *ok = "{\"version\": 1, \"key\": \"legacy-0123456789abcdef\", \"identity\": null, "
                                 "\"first_used\": 1, \"last_used\": 2, \"note\": \"n\"}";
                _cleanup_(checkout_record_done) CheckoutRecord r = {};
                _cleanup_free_ char *error = NULL;
                cr_assert_eq(checkout_record_parse(ok, strlen(ok), &r, &error), 0, "%s", error ?: "");
                cr_assert_not(r.has_id);
                cr_assert_str_eq(r.note, "n");
        }
}

Test(checkout, describe) {
        CheckoutId a = plain(5, 0, 7), n = {};
        _cleanup_free_ char *s = NULL, *t = NULL;

        cr_assert_eq(checkout_id_describe(&a, &s), 0);
        cr_assert_str_eq(s, "git dir inode 5 born 1970-01-01T00:00:00.000000007Z");
        cr_assert_eq(checkout_id_describe(&n, &t), 0);
        cr_assert_str_eq(t, "not a git repository");
}

/* On the real file system: a .git made again at the same path is another checkout; the same one stays. */
Test(checkout, of_workspace) {
        char tmpl[] = "/tmp/lazaret-checkout-XXXXXX";
        char *dir = mkdtemp(tmpl);
        _cleanup_free_ char *git = NULL;
        _cleanup_close_ int wfd = -EBADF;
        CheckoutId a, a2, b, none;
        GitLinked l = { .root_fd = -EBADF };

        cr_assert_not_null(dir);
        wfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(wfd, 0);
        cr_assert_eq(checkout_id_of_workspace(wfd, NULL, &none), 0);
        cr_assert_not(none.repository);
        cr_assert_eq(asprintf(&git, "%s/.git", dir) > 0, true);
        cr_assert_eq(mkdir(git, 0755), 0);
        cr_assert_eq(checkout_id_of_workspace(wfd, &l, &a), 0);
        cr_assert(a.repository);
        cr_assert_not(a.linked);
        cr_assert_eq(checkout_id_of_workspace(wfd, NULL, &a2), 0);
        cr_assert(checkout_id_equal(&a, &a2));
        cr_assert_eq(rmdir(git), 0);
        /* File systems stamp times by the clock tick (4 ms on ext4): a clone takes longer than that. */
        usleep(30 * 1000);
        cr_assert_eq(mkdir(git, 0755), 0);
        cr_assert_eq(checkout_id_of_workspace(wfd, NULL, &b), 0);
        if (a.git_dir.has_btime)
                /* even where the file system gave the inode number back */
                cr_assert_not(checkout_id_equal(&a, &b), "inode %llu and %llu", (unsigned long long) a.git_dir.ino,
                              (unsigned long long) b.git_dir.ino);
        /* a .git that is a symbolic link is refused, never followed */
        cr_assert_eq(rmdir(git), 0);
        cr_assert_eq(symlink("/", git), 0);
        cr_assert_lt(checkout_id_of_workspace(wfd, NULL, &b), 0);
        cr_assert_eq(unlink(git), 0);
        cr_assert_eq(rmdir(dir), 0);
}

/* Legacy state begun after the checkout was made is its own; begun before (a re-clone since), or unknown, is not. */
Test(checkout, legacy_belongs) {
        CheckoutId a = plain(5, 1000, 0);
        CheckoutDirId after = { .has_btime = true, .btime_sec = 1000, .btime_nsec = 1 },
                      before = { .has_btime = true, .btime_sec = 999, .btime_nsec = 999999999 },
                      same = { .has_btime = true, .btime_sec = 1000 }, unknown = { .ino = 9 };
        CheckoutId none = {};

        cr_assert(checkout_legacy_belongs(&a, &after, 1));
        cr_assert_not(checkout_legacy_belongs(&a, &before, 1));
        cr_assert_not(checkout_legacy_belongs(&a, &same, 1));
        cr_assert_not(checkout_legacy_belongs(&a, &unknown, 1));
        cr_assert_not(checkout_legacy_belongs(&a, (CheckoutDirId[]) { after, before }, 2));
        cr_assert_not(checkout_legacy_belongs(&a, NULL, 0));
        cr_assert_not(checkout_legacy_belongs(&none, &after, 1));
        /* a linked worktree: after both its registration and its common dir */
        a.linked = true;
        a.common_dir = (CheckoutDirId) { .has_btime = true, .btime_sec = 2000 };
        cr_assert_not(checkout_legacy_belongs(&a, &after, 1));
        cr_assert(checkout_legacy_belongs(&a, &(CheckoutDirId) { .has_btime = true, .btime_sec = 2001 }, 1));
        a.git_dir.has_btime = false;
        cr_assert_not(checkout_legacy_belongs(&a, &(CheckoutDirId) { .has_btime = true, .btime_sec = 2001 }, 1));
}

/* lazaretctl's look-up: the checkout's own directory, else an older Lazaret's state that the rule adopts, else none. */
Test(checkout, state_find) {
        char tmpl[] = "/tmp/lazaret-checkout-find-XXXXXX";
        char *dir = mkdtemp(tmpl);
        _cleanup_free_ char *git = NULL, *dd = NULL, *view = NULL, *own = NULL, *cks = NULL, *found = NULL;
        _cleanup_close_ int wfd = -EBADF;
        char key[CHECKOUT_KEY_MAX];
        CheckoutId id;

        cr_assert_not_null(dir);
        cr_assert(asprintf(&dd, "%s/domain", dir) > 0 && asprintf(&git, "%s/.git", dir) > 0 &&
                  asprintf(&view, "%s/domain/view", dir) > 0 && asprintf(&cks, "%s/domain/checkouts", dir) > 0);
        cr_assert_eq(mkdir(dd, 0700), 0);
        /* legacy state older than the checkout: not this checkout's */
        cr_assert_eq(mkdir(view, 0700), 0);
        usleep(30 * 1000);
        cr_assert_eq(mkdir(git, 0755), 0);
        wfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        cr_assert_eq(checkout_id_of_workspace(wfd, NULL, &id), 0);
        if (!id.git_dir.has_btime)
                cr_skip_test("no birth time on %s", dir);
        cr_assert_eq(checkout_state_find(dd, &id, &found), -ENOENT);
        /* begun after it: adopted, the Domain Root itself holds it */
        cr_assert_eq(rmdir(view), 0);
        usleep(30 * 1000);
        cr_assert_eq(mkdir(view, 0700), 0);
        cr_assert_eq(checkout_state_find(dd, &id, &found), 2);
        cr_assert_str_eq(found, dd);
        free(found);
        found = NULL;
        /* its own directory wins */
        checkout_id_key(&id, key);
        cr_assert_eq(checkout_state_path(dd, key, NULL, &own), 0);
        cr_assert_eq(mkdir(cks, 0700), 0);
        cr_assert_eq(mkdir(own, 0700), 0);
        cr_assert_eq(checkout_state_find(dd, &id, &found), 1);
        cr_assert_str_eq(found, own);
        cr_assert_eq(rmdir(own), 0);
        cr_assert_eq(rmdir(cks), 0);
        cr_assert_eq(rmdir(view), 0);
        cr_assert_eq(rmdir(dd), 0);
        cr_assert_eq(rmdir(git), 0);
        cr_assert_eq(rmdir(dir), 0);
}
