/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "strv.h"
#include "view-git-kept.h"

static char *base;
static int root = -EBADF;

static void setup(void) {
        base = strdup("/tmp/lazaret-test-view-git-kept-XXXXXX");
        cr_assert_not_null(base);
        cr_assert_not_null(mkdtemp(base));
        root = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(root, 0);
}

static void teardown(void) {
        safe_close(root);
        rm_rf(base);
        free(base);
}

/* mkdir -p of path's directories below root, then the file itself (a directory when path ends in "/"). */
static void put(const char *path, const char *text) {
        char buf[512];
        size_t n = strlen(path);

        cr_assert_lt(n, sizeof(buf));
        strcpy(buf, path);
        for (char *p = buf; (p = strchr(p, '/')); p++) {
                *p = 0;
                cr_assert(mkdirat(root, buf, 0755) >= 0 || errno == EEXIST, "mkdir %s: %m", buf);
                *p = '/';
        }
        if (path[n - 1] == '/')
                return;
        _cleanup_close_ int fd = openat(root, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        cr_assert_geq(fd, 0, "%s: %m", path);
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t) strlen(text));
}

static char *joined(char **l) {
        char *s = strv_join(l, "|");
        cr_assert_not_null(s);
        return s;
}

TestSuite(view_git_kept, .init = setup, .fini = teardown);

Test(view_git_kept, operations_under_way_in_state) {
        _cleanup_strv_free_ char **lines = NULL;
        _cleanup_free_ char *s = NULL;

        put(".git/rebase-merge/git-rebase-todo", "exec true\n");
        put(".git/modules/m/CHERRY_PICK_HEAD", "0123\n");
        put(".git/worktrees/w/rebase-apply/applying", "");
        put("sub/.git/sequencer/todo", "revert 0123 x\n");
        put("sub/.git/hooks/x", "");
        /* a whiteout: the operation ended inside */
        cr_assert_eq(mkdirat(root, "old", 0755), 0);
        cr_assert_eq(mkdirat(root, "old/.git", 0755), 0);
        cr_assert_eq(symlinkat("\001lazaret-whiteout\001", root, "old/.git/rebase-merge"), 0);

        cr_assert_eq(view_git_ops_scan(root, NULL, &lines), 0);
        s = joined(lines);
        cr_expect_str_eq(s,
                         "am in progress inside, in .git/worktrees/w: finish or abort it inside (git am --continue / --abort)|"
                         "cherry-pick in progress inside, in .git/modules/m: finish or abort it inside (git cherry-pick --continue / --abort)|"
                         "rebase in progress inside: finish or abort it inside (git rebase --continue / --abort)|"
                         "revert in progress inside, in sub/.git: finish or abort it inside (git revert --continue / --abort)");
}

Test(view_git_kept, operations_of_a_git_dir_view) {
        _cleanup_strv_free_ char **lines = NULL;

        put("rebase-merge/done", "");
        cr_assert_eq(view_git_ops_scan(root, "/home/u/main/.git", &lines), 0);
        cr_assert_eq(strv_length(lines), 1);
        cr_expect_str_eq(lines[0], "rebase in progress inside, in /home/u/main/.git: finish or abort it inside "
                                   "(git rebase --continue / --abort)");
}

Test(view_git_kept, nothing_under_way) {
        _cleanup_strv_free_ char **lines = NULL;

        put(".git/hooks/pre-commit", "");
        put(".git/config", "");
        cr_assert_eq(view_git_ops_scan(root, NULL, &lines), 0);
        cr_expect_null(lines);
}

Test(view_git_kept, what_the_host_holds) {
        _cleanup_strv_free_ char **paths = NULL;
        _cleanup_free_ char *s = NULL, *line = NULL;

        put("objects/info/alternates", "/elsewhere/objects\n");
        put("objects/info/packs", "");
        put("info/grafts", "");
        put("info/exclude", "");
        put("remotes/x", "URL: ext::sh -c x\n");
        put("refs/remotes/origin/main", "");
        put("worktrees/w/rebase-merge/done", "");
        put("modules/a/b/HEAD", "ref: refs/heads/main\n");
        put("modules/a/b/objects/info/http-alternates", "");
        put("modules/a/b/branches/y", "");
        put("branches/", "");           /* git's templates make it empty */
        cr_assert_eq(view_git_kept_on_host(root, ".git", &paths), 0);
        s = joined(paths);
        cr_expect_str_eq(s, ".git/info/grafts|.git/modules/a/b/branches/|.git/modules/a/b/objects/info/http-alternates|"
                            ".git/objects/info/alternates|.git/remotes/|.git/worktrees/w/rebase-merge/");
        cr_assert_eq(view_git_kept_notice(paths, &line), 0);
        cr_expect(strstr(line, ": .git/info/grafts, .git/modules/a/b/branches/, "
                               ".git/modules/a/b/objects/info/http-alternates, .git/objects/info/alternates and 2 more;"),
                  "%s", line);
}

Test(view_git_kept, a_link_is_not_followed) {
        _cleanup_strv_free_ char **paths = NULL;

        put("elsewhere/info/alternates", "");
        cr_assert_eq(symlinkat("elsewhere", root, "objects"), 0);
        cr_assert_eq(view_git_kept_on_host(root, ".git", &paths), 0);
        cr_expect_null(paths);
}

Test(view_git_kept, not_utf8_is_escaped) {
        _cleanup_strv_free_ char **ops = NULL, **host = NULL;

        put("a\xff/.git/sequencer/todo", "pick 0123 x\n");
        cr_assert_eq(view_git_kept_scan(-EBADF, root, -EBADF, NULL, -EBADF, &ops, &host), 0);
        cr_assert_eq(strv_length(ops), 1);
        cr_expect_str_eq(ops[0], "cherry-pick in progress inside, in a\\xff/.git: finish or abort it inside "
                                 "(git cherry-pick --continue / --abort)");
        cr_expect_null(host);
}
