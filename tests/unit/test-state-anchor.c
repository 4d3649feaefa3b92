/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "state-anchor.h"

static void check_name(const char *path, const char *want) {
        _cleanup_free_ char *name = NULL, *back = NULL;

        cr_assert_eq(state_anchor_layer_name(path, &name), 0, "name of %s", path);
        cr_assert_str_eq(name, want, "name of %s", path);
        cr_assert_eq(state_anchor_layer_path(name, &back), 0, "path of %s", name);
        cr_assert_str_eq(back, path, "path of %s", name);
}

Test(state_anchor, layer_names) {
        check_name("/usr", "usr");
        check_name("/var/lib", "var-lib");
        check_name("/opt/my-tools", "opt-my\\x2dtools");
        check_name("/root/.cache", "root-\\x2ecache");
        check_name("/a b/c\\d", "a\\x20b-c\\x5cd");
        check_name("/usr/lib.d/x.y", "usr-lib.d-x.y");
}

Test(state_anchor, different_paths_different_names) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        cr_assert_eq(state_anchor_layer_name("/var/lib", &a), 0);
        cr_assert_eq(state_anchor_layer_name("/var-lib", &b), 0);
        cr_assert_eq(state_anchor_layer_name("/var/.lib", &c), 0);
        cr_assert_str_neq(a, b);
        cr_assert_str_neq(a, c);
}

Test(state_anchor, layer_name_refuses) {
        char *out = NULL;

        cr_assert_eq(state_anchor_layer_name("/", &out), -EINVAL);
        cr_assert_eq(state_anchor_layer_name("usr", &out), -EINVAL);
        cr_assert_eq(state_anchor_layer_name("/usr/", &out), -EINVAL);
        cr_assert_eq(state_anchor_layer_name("/usr/../etc", &out), -EINVAL);
        cr_assert_eq(state_anchor_layer_name(NULL, &out), -EINVAL);
        cr_assert_null(out);
}

Test(state_anchor, layer_path_refuses_other_spellings) {
        char *out = NULL;

        cr_assert_eq(state_anchor_layer_path("", &out), -EINVAL);
        cr_assert_eq(state_anchor_layer_path("usr-", &out), -EINVAL);       /* "/usr/" */
        cr_assert_eq(state_anchor_layer_path("-usr", &out), -EINVAL);       /* "//usr" */
        cr_assert_eq(state_anchor_layer_path("a\\x2Db", &out), -EINVAL);    /* upper-case hex */
        cr_assert_eq(state_anchor_layer_path("a\\x61", &out), -EINVAL);     /* "a" needs no escape */
        cr_assert_eq(state_anchor_layer_path("a\\x00", &out), -EINVAL);
        cr_assert_eq(state_anchor_layer_path("a\\x2", &out), -EINVAL);
        cr_assert_eq(state_anchor_layer_path(".hidden", &out), -EINVAL);
        cr_assert_eq(state_anchor_layer_path("usr-..-etc", &out), -EINVAL);
        cr_assert_null(out);
}

Test(state_anchor, excluded) {
        cr_assert(state_anchor_is_excluded("/etc/resolv.conf"));
        cr_assert(state_anchor_is_excluded("/etc/hosts"));
        cr_assert(state_anchor_is_excluded("/etc/hostname"));
        cr_assert_not(state_anchor_is_excluded("/etc/passwd"));
        cr_assert_not(state_anchor_is_excluded(NULL));
}

Test(state_anchor, classify) {
        const char *n;

        cr_assert_eq(state_anchor_classify("tool", S_IFREG | 0755, 0, false, &n), STATE_CHANGE_WRITTEN);
        cr_assert_str_eq(n, "tool");
        cr_assert_eq(state_anchor_classify("profile", S_IFCHR, 0, false, &n), STATE_CHANGE_DELETED);
        cr_assert_eq(state_anchor_classify("tty", S_IFCHR, 0x0501, false, &n), STATE_CHANGE_WRITTEN);
        cr_assert_eq(state_anchor_classify(".wh.profile", S_IFREG, 0, false, &n), STATE_CHANGE_DELETED);
        cr_assert_str_eq(n, "profile");
        cr_assert_eq(state_anchor_classify(".wh..wh..opq", S_IFREG, 0, false, &n), STATE_CHANGE_NONE);
        cr_assert_eq(state_anchor_classify(".wh..opq", S_IFCHR, 0, false, &n), STATE_CHANGE_NONE);
        cr_assert_eq(state_anchor_classify("lib", S_IFDIR | 0755, 0, true, &n), STATE_CHANGE_REPLACED);
        cr_assert_eq(state_anchor_classify("lib", S_IFDIR | 0755, 0, false, &n), STATE_CHANGE_WRITTEN);
        cr_assert_str_eq(state_change_to_string(STATE_CHANGE_DELETED), "deleted");
        cr_assert_null(state_change_to_string(STATE_CHANGE_NONE));
}
