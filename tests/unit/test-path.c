/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "host-context.h"
#include "macro.h"
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

Test(path, plain_relative) {
        static const char *const good[] = { "a", "a/b", "..a/b.", ".../x", ".git/config", "a b/ c" };
        static const char *const bad[] = { "", "/a", "a/", "a//b", ".", "..", "a/./b", "a/..", "./a" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                cr_assert(path_is_plain_relative(good[i], strlen(good[i])), "%s", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                cr_assert_not(path_is_plain_relative(bad[i], strlen(bad[i])), "%s", bad[i]);
        cr_assert(path_is_plain_relative("a/..", 1)); /* only the first n bytes */
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

Test(path, absolute_lexical) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;

        cr_assert_eq(path_absolute_lexical("../x/./y", "/home/u/src", &a), 0);
        cr_assert_str_eq(a, "/home/u/x/y");
        cr_assert_eq(path_absolute_lexical("/a/b/../../..", "/ignored", &b), 0);
        cr_assert_str_eq(b, "/");
        cr_assert_eq(path_absolute_lexical(".", "/w", &c), 0);
        cr_assert_str_eq(c, "/w");
        cr_assert_eq(path_absolute_lexical("rel", NULL, &d), -EINVAL);
        cr_assert_eq(path_absolute_lexical("", "/w", &d), -EINVAL);
}

/* path_walk(): never follows, says where it stopped and why. */
Test(path, walk) {
        char tmpl[] = "/tmp/lazaret-test-walk-XXXXXX";
        _cleanup_free_ char *top = NULL, *real = NULL, *link = NULL, *deep = NULL, *via = NULL, *open_dir = NULL,
                            *under_open = NULL, *made = NULL, *cmd = NULL;
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        int fd = -EBADF;
        struct stat st;

        cr_assert_not_null(mkdtemp(tmpl));
        top = realpath(tmpl, NULL);
        cr_assert(asprintf(&real, "%s/real", top) > 0 && asprintf(&link, "%s/link", top) > 0 &&
                  asprintf(&deep, "%s/real/d", top) > 0 && asprintf(&via, "%s/link/d", top) > 0 &&
                  asprintf(&open_dir, "%s/open", top) > 0 && asprintf(&under_open, "%s/open/x", top) > 0 &&
                  asprintf(&made, "%s/real/new/er", top) > 0);
        cr_assert_eq(mkdir(real, 0755), 0);
        cr_assert_eq(mkdir(deep, 0755), 0);
        cr_assert_eq(symlink(real, link), 0);
        cr_assert_eq(mkdir(open_dir, 0777), 0);
        cr_assert_eq(chmod(open_dir, 0777), 0);
        cr_assert_eq(mkdir(under_open, 0700), 0);

        cr_assert_eq(path_walk(deep, PATH_WALK_TRUSTED, &fd, &w), 0);
        cr_assert_eq(fstat(fd, &st), 0);
        cr_assert(S_ISDIR(st.st_mode));
        close(fd);

        cr_assert_eq(path_walk(via, 0, NULL, &w), -ELOOP);
        cr_assert_eq(w.failure, PATH_WALK_SYMLINK);
        cr_assert_str_eq(w.at, link);
        cr_assert_eq(path_walk(link, 0, NULL, &w), -ELOOP);
        cr_assert_str_eq(w.at, link);

        /* Not judged without PATH_WALK_TRUSTED; refused with it. */
        cr_assert_eq(path_walk(under_open, 0, NULL, &w), 0);
        cr_assert_eq(path_walk(under_open, PATH_WALK_TRUSTED, NULL, &w), -EPERM);
        cr_assert_eq(w.failure, PATH_WALK_WRITABLE);
        cr_assert_str_eq(w.at, open_dir);
        cr_assert_eq(w.mode, 0777);
        /* /tmp is sticky: fine above, not as the path itself. */
        cr_assert_eq(path_walk("/tmp", PATH_WALK_TRUSTED, NULL, &w), -EPERM);
        cr_assert_str_eq(w.at, "/tmp");

        cr_assert_eq(path_walk(made, PATH_WALK_TRUSTED, NULL, &w), -ENOENT);
        cr_assert_eq(w.failure, PATH_WALK_MISSING);
        cr_assert_eq(path_walk(made, PATH_WALK_TRUSTED | PATH_WALK_MKDIR, NULL, &w), 0);
        cr_assert_eq(stat(made, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0700);
        /* Never creates through a link. */
        {
                _cleanup_free_ char *bad = NULL, *target = NULL;
                cr_assert(asprintf(&bad, "%s/link/viaitself", top) > 0 && asprintf(&target, "%s/real/viaitself", top) > 0);
                cr_assert_eq(path_walk(bad, PATH_WALK_MKDIR, NULL, &w), -ELOOP);
                cr_assert_neq(stat(target, &st), 0);
        }

        cr_assert(asprintf(&cmd, "rm -rf '%s'", top) > 0);
        cr_assert_eq(system(cmd), 0);
}

/* What a sandbox of an older Lazaret left: the line names the repair (issue 15). */
Test(path, repair_error) {
        _cleanup_free_ char *e = NULL;
        PathWalkResult w = { .failure = PATH_WALK_FOREIGN_OWNER, .at = (char *) "/ws/.git", .uid = 100999 };

        cr_assert_eq(path_repair_error("workspace \"/ws\"", "/ws", &w, -EPERM, "what git runs", &e), -EPERM);
        cr_assert_str_eq(e, "workspace \"/ws\": \"/ws/.git\" is owned by UID 100999, not by you (a sandbox of an older "
                            "Lazaret chowned it, if that is one of your subordinate IDs); give it back with "
                            "'lazaretctl unshare -- chown -R 0:0 /ws/.git'");
        e = mfree(e);

        w = (PathWalkResult) { .failure = PATH_WALK_WRITABLE, .at = (char *) "/ws/.git/config", .mode = 0666 };
        cr_assert_eq(path_repair_error(NULL, "/ws/.git/config", &w, -EPERM, "what git runs", &e), -EPERM);
        cr_assert_str_eq(e, "\"/ws/.git/config\" is writable by group or others (mode 0666), who could change what git "
                            "runs (a sandbox of an older Lazaret may have changed it); repair with "
                            "'chmod go-w /ws/.git/config'");
        e = mfree(e);

        /* Anything else reads as path_walk_error()'s. */
        w = (PathWalkResult) { .failure = PATH_WALK_MISSING, .at = (char *) "/ws" };
        cr_assert_eq(path_repair_error(NULL, "/ws", &w, -ENOENT, "what git runs", &e), -ENOENT);
        cr_assert_str_eq(e, "\"/ws\" does not exist");
}
