/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "host-context.h"
#include "path-util.h"

static void check_norm(const char *in, const char *want) {
        _cleanup_free_ char *out = NULL;
        cr_assert_eq(path_normalize(in, &out), 0, "normalize %s", in);
        cr_assert_str_eq(out, want);
}

Test(path, normalize) {
        check_norm("/", "/");
        check_norm("//", "/");
        check_norm("/a//b/", "/a/b");
        check_norm("/a/./b/.", "/a/b");
        check_norm("/./", "/");
}

Test(path, normalize_refuses) {
        char *out = NULL;
        cr_assert_eq(path_normalize("a/b", &out), -EINVAL);
        cr_assert_eq(path_normalize("", &out), -EINVAL);
        cr_assert_eq(path_normalize("/a/../b", &out), -EINVAL);
        cr_assert_eq(path_normalize("/..", &out), -EINVAL);
        cr_assert_null(out);
}

Test(path, dotdot) {
        cr_assert(path_has_dotdot(".."));
        cr_assert(path_has_dotdot("/a/.."));
        cr_assert(path_has_dotdot("../a"));
        cr_assert(path_has_dotdot("~/x/../y"));
        cr_assert_not(path_has_dotdot("/a/..b"));
        cr_assert_not(path_has_dotdot("/a/b.."));
        cr_assert_not(path_has_dotdot("/a/.../b"));
}

Test(path, at_or_below) {
        cr_assert(path_is_at_or_below("/a/b", "/a/b"));
        cr_assert(path_is_at_or_below("/a/b/c", "/a/b"));
        cr_assert_not(path_is_at_or_below("/a/bc", "/a/b"));
        cr_assert_not(path_is_at_or_below("/a", "/a/b"));
        cr_assert(path_is_at_or_below("/x", "/"));
        cr_assert(path_is_at_or_below("/", "/"));
}

Test(path, join) {
        _cleanup_free_ char *a = path_join("/a/", "/b"), *b = path_join("/", "x"), *c = path_join("/a", "b/c");
        cr_assert_str_eq(a, "/a/b");
        cr_assert_str_eq(b, "/x");
        cr_assert_str_eq(c, "/a/b/c");
}

Test(path, canonicalize_resolves_symlinks_and_keeps_missing_tail) {
        char tmpl[] = "/tmp/lazaret-test-path-XXXXXX";
        char *d = mkdtemp(tmpl);
        _cleanup_free_ char *real = NULL, *link = NULL, *target = NULL, *out = NULL, *in = NULL, *want = NULL;

        cr_assert_not_null(d);
        real = realpath(d, NULL);
        cr_assert(asprintf(&target, "%s/real", real) > 0);
        cr_assert(asprintf(&link, "%s/link", real) > 0);
        cr_assert_eq(mkdir(target, 0700), 0);
        cr_assert_eq(symlink(target, link), 0);

        cr_assert(asprintf(&in, "%s/link/missing/deeper", d) > 0);
        cr_assert_eq(path_canonicalize(in, &out), 0);
        cr_assert(asprintf(&want, "%s/missing/deeper", target) > 0);
        cr_assert_str_eq(out, want);

        free(out);
        out = NULL;
        cr_assert_eq(path_canonicalize(link, &out), 0);
        cr_assert_str_eq(out, target);

        cr_assert_eq(path_canonicalize("/nonexistent-lazaret/x/../y", &out), -EINVAL);
        unlink(link);
        rmdir(target);
        rmdir(real);
}

Test(path, xdg_defaults) {
        HostContext hc = {};

        setenv("HOME", "/home/someone", 1);
        unsetenv("XDG_CONFIG_HOME");
        setenv("XDG_DATA_HOME", "relative/ignored", 1);
        setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
        unsetenv("LAZARET_CONFIG");
        cr_assert_eq(host_context_from_environment(&hc), 0);
        cr_assert_str_eq(hc.home, "/home/someone");
        cr_assert_str_eq(hc.xdg_config_home, "/home/someone/.config");
        cr_assert_str_eq(hc.xdg_data_home, "/home/someone/.local/share");
        cr_assert_str_eq(hc.xdg_runtime_dir, "/run/user/4242");
        cr_assert_null(hc.config_env);
        cr_assert_not_null(hc.cwd);
        host_context_done(&hc);
}

/* Collected once: later changes to the environment do not reach a copy. */
Test(path, host_context_is_a_snapshot) {
        HostContext hc = {}, copy = {};

        setenv("HOME", "/home/a//b/", 1);
        setenv("XDG_CONFIG_HOME", "/cfg", 1);
        setenv("LAZARET_CONFIG", "/etc/x.json", 1);
        cr_assert_eq(host_context_from_environment(&hc), 0);
        setenv("HOME", "/elsewhere", 1);
        cr_assert_eq(host_context_copy(&hc, &copy), 0);
        host_context_done(&hc);
        cr_assert_str_eq(copy.home, "/home/a/b");
        cr_assert_str_eq(copy.xdg_config_home, "/cfg");
        cr_assert_str_eq(copy.config_env, "/etc/x.json");
        host_context_done(&copy);
        cr_assert_null(copy.home);
}
