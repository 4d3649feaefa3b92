/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "path-util.h"
#include "view-changes.h"
#include "view-policy.h"

/* A workspace (host side) and a view state directory, side by side. */
typedef struct Tree {
        char *base;
        int host, state;
} Tree;

static Tree tree(void) {
        Tree t = { .base = strdup("/tmp/lazaret-test-view-changes-XXXXXX") };
        _cleanup_free_ char *h = NULL, *s = NULL;

        cr_assert_not_null(t.base);
        cr_assert_not_null(mkdtemp(t.base));
        h = path_join(t.base, "ws");
        s = path_join(t.base, "view");
        cr_assert_eq(mkdir(h, 0755), 0);
        cr_assert_eq(mkdir(s, 0700), 0);
        t.host = open(h, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        t.state = open(s, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(t.host, 0);
        cr_assert_geq(t.state, 0);
        return t;
}

static void tree_done(Tree *t) {
        close(t->host);
        close(t->state);
        rm_rf(t->base);
        free(t->base);
}

static void put(int dir, const char *path, const char *text, mode_t mode) {
        int fd = openat(dir, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);

        cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        cr_assert_eq(fchmod(fd, mode), 0);
        close(fd);
}

static char *get(int dir, const char *path) {
        _cleanup_close_ int fd = openat(dir, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        char *s = NULL;

        if (fd < 0)
                return NULL;
        cr_assert_geq(read_full_fd(fd, 65536, &s, NULL), 0);
        return s;
}

static void md(int dir, const char *path) {
        cr_assert_eq(mkdirat(dir, path, 0755), 0, "%s: %s", path, strerror(errno));
}

/* A copy-up of the host's file, as the view makes it: the copy records the host file's size and mtime. */
static void copy_up(Tree *t, const char *path, const char *text) {
        struct stat st;
        char b[96];
        int fd, n;

        cr_assert_eq(fstatat(t->host, path, &st, AT_SYMLINK_NOFOLLOW), 0);
        put(t->state, path, text, st.st_mode & 07777);
        fd = openat(t->state, path, O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        n = snprintf(b, sizeof(b), "%lld %lld %ld", (long long) st.st_size, (long long) st.st_mtim.tv_sec,
                     (long) st.st_mtim.tv_nsec);
        cr_assert_eq(fsetxattr(fd, VIEW_BASE_XATTR, b, (size_t) n, 0), 0, "user xattrs: %s", strerror(errno));
        close(fd);
}

static void whiteout(Tree *t, const char *path) {
        cr_assert_eq(symlinkat(VIEW_WHITEOUT_TARGET, t->state, path), 0);
}

static const ViewChange *find(const ViewChanges *l, const char *path) {
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->changes[i].path, path) == 0)
                        return &l->changes[i];
        return NULL;
}

Test(view_changes, base_parse) {
        ViewBase b;

        cr_assert_eq(view_base_parse("12 1700000000 5", 15, &b), 0);
        cr_assert_eq(b.size, 12);
        cr_assert_eq(b.mtime_sec, 1700000000);
        cr_assert_eq(b.mtime_nsec, 5);
        cr_assert_lt(view_base_parse("12 1700000000", 13, &b), 0);
        cr_assert_lt(view_base_parse("12 1700000000 5 ", 16, &b), 0);
        cr_assert_lt(view_base_parse("12 17 1000000000", 16, &b), 0);
        cr_assert_lt(view_base_parse("-1 17 5", 7, &b), 0);
        cr_assert_lt(view_base_parse("", 0, &b), 0);
        cr_assert_lt(view_base_parse("1 2 3\0", 6, &b), 0);
        cr_assert_lt(view_base_parse("1  2 3", 6, &b), 0);
        cr_assert_lt(view_base_parse("1 2 +3", 6, &b), 0);
        cr_assert_lt(view_base_parse("1 -2 3", 6, &b), 0);
        cr_assert_eq(view_base_parse("0 0 999999999", 13, &b), 0);
        cr_assert_eq(b.mtime_nsec, 999999999);
}

Test(view_changes, kinds_and_scaffolding) {
        _cleanup_(view_changes_done) ViewChanges l = {};
        Tree t = tree();
        const ViewChange *c;

        /* Host: a tracked .vscode/settings.json, a .mcp.json, a nested repository sub/.git. */
        md(t.host, ".vscode");
        put(t.host, ".vscode/settings.json", "{\"a\":1}\n", 0644);
        put(t.host, ".mcp.json", "{}\n", 0644);
        put(t.host, "plain", "x\n", 0644);
        md(t.host, "sub");
        md(t.host, "sub/.git");
        put(t.host, "sub/.git/HEAD", "ref: refs/heads/main\n", 0644);
        md(t.host, "sub/.git/objects");

        /* State: what the sandbox wrote to protected names, and scaffolding. */
        put(t.state, ".envrc", "export X=1\n", 0644);
        md(t.state, ".vscode");
        copy_up(&t, ".vscode/settings.json", "{\"a\":2}\n");
        whiteout(&t, ".mcp.json");
        md(t.state, "sub");
        md(t.state, "sub/.git");
        put(t.state, "sub/.git/config", "[x]\n\ty = 1\n", 0644);
        put(t.state, ".lazaret-copy-up.1.2", "", 0600);
        /* Shared names never count, even if something left them in state. */
        put(t.state, "sub/ordinary", "y\n", 0644);
        md(t.state, "sub/.git/objects");
        put(t.state, "sub/.git/objects/config", "not a control file here\n", 0644);

        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &l, NULL), 0);
        cr_assert_eq(l.n, 4, "found %zu", l.n);

        c = find(&l, ".envrc");
        cr_assert_not_null(c);
        cr_assert_eq(c->kind, VIEW_CHANGE_NEW);
        cr_assert(!c->git_control);
        cr_assert_eq(c->size, 11);
        cr_assert_eq(c->host, VIEW_HOST_SAME);

        c = find(&l, ".vscode/settings.json");
        cr_assert_not_null(c);
        cr_assert_eq(c->kind, VIEW_CHANGE_CHANGED);
        cr_assert(!c->git_control);
        cr_assert_eq(c->host, VIEW_HOST_SAME);

        c = find(&l, ".mcp.json");
        cr_assert_not_null(c);
        cr_assert_eq(c->kind, VIEW_CHANGE_DELETED);

        c = find(&l, "sub/.git/config");
        cr_assert_not_null(c);
        cr_assert(c->git_control);
        cr_assert_str_eq(view_change_label(c), "git-control");
        cr_assert_eq(c->kind, VIEW_CHANGE_NEW);

        /* Sorted by path. */
        for (size_t i = 1; i < l.n; i++)
                cr_assert_lt(strcmp(l.changes[i - 1].path, l.changes[i].path), 0);
        tree_done(&t);
}

Test(view_changes, host_edit_after_copy_up_is_seen_and_refused) {
        _cleanup_(view_changes_done) ViewChanges l = {}, l2 = {};
        _cleanup_free_ char *error = NULL, *s = NULL;
        Tree t = tree();
        const ViewChange *c;

        md(t.host, ".vscode");
        put(t.host, ".vscode/settings.json", "{\"a\":1}\n", 0644);
        md(t.state, ".vscode");
        copy_up(&t, ".vscode/settings.json", "{\"a\":2}\n");
        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &l, NULL), 0);
        c = find(&l, ".vscode/settings.json");
        cr_assert_eq(c->host, VIEW_HOST_SAME);

        /* The developer edits it on the host meanwhile. */
        put(t.host, ".vscode/settings.json", "{\"host\":true}\n", 0644);
        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &l2, NULL), 0);
        c = find(&l2, ".vscode/settings.json");
        cr_assert_eq(c->host, VIEW_HOST_CHANGED);
        cr_assert_eq(view_change_check(c, false, false, &error), -ESTALE);
        cr_assert_not_null(strstr(error, "changed on the host"));
        free(error);
        error = NULL;

        /* An apply from the older listing judges the host again and refuses. */
        cr_assert_eq(view_change_apply(t.state, t.host, find(&l, ".vscode/settings.json"), false, &error), -ESTALE);
        s = get(t.host, ".vscode/settings.json");
        cr_assert_str_eq(s, "{\"host\":true}\n");
        free(s);
        s = get(t.state, ".vscode/settings.json");
        cr_assert_str_eq(s, "{\"a\":2}\n");

        /* --force writes it all the same. */
        cr_assert_eq(view_change_apply(t.state, t.host, c, true, NULL), 0);
        free(s);
        s = get(t.host, ".vscode/settings.json");
        cr_assert_str_eq(s, "{\"a\":2}\n");
        tree_done(&t);
}

Test(view_changes, replaced_without_record_is_unknown) {
        _cleanup_(view_changes_done) ViewChanges l = {};
        Tree t = tree();
        const ViewChange *c;

        put(t.host, ".envrc", "host\n", 0644);
        put(t.state, ".envrc", "sandbox\n", 0644);
        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &l, NULL), 0);
        c = find(&l, ".envrc");
        cr_assert_eq(c->kind, VIEW_CHANGE_CHANGED);
        cr_assert_eq(c->host, VIEW_HOST_UNKNOWN);
        cr_assert_eq(view_change_check(c, false, false, NULL), -ESTALE);
        cr_assert_eq(view_change_check(c, true, false, NULL), 0);
        tree_done(&t);
}

Test(view_changes, git_control_needs_its_flag) {
        _cleanup_(view_changes_done) ViewChanges l = {};
        _cleanup_free_ char *error = NULL;
        char *const protect[] = { (char *) "tools/hooks", NULL };
        Tree t = tree();

        md(t.host, "tools");
        md(t.host, "tools/hooks");
        md(t.state, "tools");
        md(t.state, "tools/hooks");
        put(t.state, "tools/hooks/pre-commit", "#!/bin/sh\n", 0755);
        /* A bare repository made inside: its HEAD and config stay in state. */
        md(t.host, "bare");
        md(t.state, "bare");
        put(t.state, "bare/HEAD", "ref: refs/heads/main\n", 0644);
        put(t.state, "bare/config", "[core]\n", 0644);

        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, &(ViewLists) { .paths = protect }, protect, &l, NULL), 0);
        cr_assert_eq(l.n, 3, "found %zu", l.n);
        for (size_t i = 0; i < l.n; i++) {
                cr_assert(l.changes[i].git_control, "%s", l.changes[i].path);
                cr_assert_eq(view_change_check(&l.changes[i], true, false, &error), -EPERM);
                cr_assert_not_null(strstr(error, "--git-control"));
                free(error);
                error = NULL;
                cr_assert_eq(view_change_check(&l.changes[i], false, true, NULL), 0);
        }
        /* The derived path is protected only because the host's git configuration names it. */
        view_changes_done(&l);
        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &l, NULL), 0);
        cr_assert_null(find(&l, "tools/hooks/pre-commit"));
        tree_done(&t);
}

Test(view_changes, apply_writes_atomically_and_clears_state) {
        _cleanup_(view_changes_done) ViewChanges l = {}, after = {};
        _cleanup_free_ char *s = NULL;
        Tree t = tree();
        struct stat st;

        put(t.state, ".envrc", "export X=1\n", 0775);
        put(t.host, ".mcp.json", "{}\n", 0644);
        whiteout(&t, ".mcp.json");
        md(t.state, ".claude");
        put(t.state, ".claude/settings.json", "{}\n", 0600);
        md(t.host, ".idea");
        md(t.host, ".idea/sub");
        put(t.host, ".idea/sub/x", "x\n", 0644);
        whiteout(&t, ".idea");

        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &l, NULL), 0);
        cr_assert_eq(l.n, 4);
        for (size_t i = 0; i < l.n; i++)
                cr_assert_eq(view_change_apply(t.state, t.host, &l.changes[i], false, NULL), 0, "%s", l.changes[i].path);

        s = get(t.host, ".envrc");
        cr_assert_str_eq(s, "export X=1\n");
        cr_assert_eq(fstatat(t.host, ".envrc", &st, 0), 0);
        cr_assert_eq(st.st_mode & 07777, 0755, "group write dropped: %o", st.st_mode & 07777);
        cr_assert_eq(fstatat(t.host, ".mcp.json", &st, AT_SYMLINK_NOFOLLOW), -1);
        cr_assert_eq(fstatat(t.host, ".idea", &st, AT_SYMLINK_NOFOLLOW), -1);
        cr_assert_eq(fstatat(t.host, ".claude/settings.json", &st, AT_SYMLINK_NOFOLLOW), 0);
        cr_assert(S_ISREG(st.st_mode));

        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &after, NULL), 0);
        cr_assert_eq(after.n, 0);
        /* No temporary name is left behind. */
        {
                _cleanup_(closedirp) DIR *d = fdopendir(dup(t.host));
                struct dirent *de;
                while ((de = readdir(d)))
                        cr_assert_null(strstr(de->d_name, VIEW_APPLY_PREFIX), "%s", de->d_name);
        }
        tree_done(&t);
}

Test(view_changes, apply_never_follows_a_host_symlink) {
        _cleanup_(view_changes_done) ViewChanges l = {};
        _cleanup_free_ char *outside = NULL;
        Tree t = tree();
        struct stat st;

        /* The sandbox could have made .vscode a symlink out of the workspace on the host side. */
        outside = path_join(t.base, "outside");
        cr_assert_eq(mkdir(outside, 0755), 0);
        cr_assert_eq(symlinkat(outside, t.host, ".vscode"), 0);
        md(t.state, ".vscode");
        put(t.state, ".vscode/tasks.json", "{}\n", 0644);
        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &l, NULL), 0);
        cr_assert_eq(l.n, 1);
        cr_assert_eq(l.changes[0].type, S_IFDIR, "a directory the host lacks is new as a whole");
        /* Applying .vscode as a whole refuses to replace the host's entry without --force... */
        cr_assert_eq(view_change_apply(t.state, t.host, &l.changes[0], false, NULL), -ESTALE);
        {
                _cleanup_free_ char *p = path_join(outside, "tasks.json");
                cr_assert_eq(stat(p, &st), -1);
        }
        tree_done(&t);
}

Test(view_changes, discard_and_named) {
        _cleanup_(view_changes_done) ViewChanges l = {}, after = {};
        Tree t = tree();

        md(t.host, ".vscode");
        put(t.host, ".vscode/settings.json", "host\n", 0644);
        md(t.state, ".vscode");
        copy_up(&t, ".vscode/settings.json", "sandbox\n");
        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &l, NULL), 0);
        cr_assert_eq(l.n, 1);
        cr_assert(view_change_named(&l.changes[0], ".vscode"));
        cr_assert(view_change_named(&l.changes[0], "./.vscode/"));
        cr_assert(view_change_named(&l.changes[0], ".vscode/settings.json"));
        cr_assert(view_change_named(&l.changes[0], "."));
        cr_assert(!view_change_named(&l.changes[0], ".vsc"));
        cr_assert(!view_change_named(&l.changes[0], ".vscode/settings"));
        cr_assert_eq(view_change_discard(t.state, &l.changes[0], NULL), 0);
        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &after, NULL), 0);
        cr_assert_eq(after.n, 0);
        {
                _cleanup_free_ char *s = get(t.host, ".vscode/settings.json");
                cr_assert_str_eq(s, "host\n");
        }
        tree_done(&t);
}

/* The git dir view's state (lazaret-view --git-dir): named by host path, all git control. */
Test(view_changes, git_dir_view) {
        _cleanup_(view_changes_done) ViewChanges l = {};
        _cleanup_free_ char *error = NULL, *shown = NULL;
        char *const protect[] = { (char *) "worktrees/other", NULL };
        const char *root = "/home/u/main/.git";
        const ViewChange *c;
        Tree t = tree();

        /* Host: the common dir with the workspace's registration (wt) and another (other). */
        put(t.host, "HEAD", "ref: refs/heads/main\n", 0644);
        put(t.host, "config", "[core]\n", 0644);
        md(t.host, "hooks");
        md(t.host, "refs");
        md(t.host, "worktrees");
        md(t.host, "worktrees/wt");
        put(t.host, "worktrees/wt/HEAD", "ref: refs/heads/wt\n", 0644);
        put(t.host, "worktrees/wt/commondir", "../..\n", 0644);
        md(t.host, "worktrees/other");
        put(t.host, "worktrees/other/HEAD", "ref: refs/heads/o\n", 0644);
        /* A worktree added inside: HEAD on the host, its redirections in state. */
        md(t.host, "worktrees/feat");
        put(t.host, "worktrees/feat/HEAD", "ref: refs/heads/feat\n", 0644);

        md(t.state, "hooks");
        put(t.state, "hooks/post-commit", "#!/bin/sh\n", 0755);
        md(t.state, "worktrees");
        md(t.state, "worktrees/wt");
        put(t.state, "worktrees/wt/config.worktree", "[core]\n\tfsmonitor = x\n", 0644);
        whiteout(&t, "worktrees/other");
        md(t.state, "worktrees/feat");
        put(t.state, "worktrees/feat/gitdir", "/workspace/feat/.git\n", 0644);
        put(t.state, "worktrees/feat/commondir", "../..\n", 0644);
        /* Shared names left in state never count: in a git dir's worktrees/NAME a HEAD is git's own. */
        md(t.state, "refs");
        put(t.state, "refs/stray", "x\n", 0644);
        put(t.state, "worktrees/feat/HEAD", "ref: refs/heads/feat\n", 0644);
        /* The root's config is read-only there, as the top .git's: the view never serves it from state. */
        put(t.state, "config", "[core]\n\tfsmonitor = y\n", 0644);

        cr_assert_eq(view_changes_scan(t.state, t.host, root, &(ViewLists) { .paths = protect }, protect, &l, &error), 0,
                     "%s", error ? error : "");
        cr_assert_eq(l.n, 5, "found %zu", l.n);
        for (size_t i = 0; i < l.n; i++) {
                cr_assert(l.changes[i].git_control, "%s", l.changes[i].path);
                cr_assert_str_eq(l.changes[i].root, root);
        }
        cr_assert_eq(find(&l, "worktrees/other")->kind, VIEW_CHANGE_DELETED);
        cr_assert_eq(find(&l, "hooks/post-commit")->kind, VIEW_CHANGE_NEW);
        cr_assert_not_null(find(&l, "worktrees/feat/gitdir"));
        cr_assert_not_null(find(&l, "worktrees/feat/commondir"));
        c = find(&l, "worktrees/wt/config.worktree");
        cr_assert_not_null(c);
        shown = view_change_shown(c);
        cr_assert_str_eq(shown, "/home/u/main/.git/worktrees/wt/config.worktree");

        /* Named by host path only. */
        cr_assert(view_change_named(c, "/home/u/main/.git/worktrees/wt/config.worktree"));
        cr_assert(view_change_named(c, "/home/u/main/.git/worktrees/"));
        cr_assert(view_change_named(c, "/home/u/main/.git"));
        cr_assert(!view_change_named(c, "worktrees/wt/config.worktree"));
        cr_assert(!view_change_named(c, "."));
        cr_assert(!view_change_named(c, "/home/u/main/.gitx"));
        cr_assert(!view_change_named(&(ViewChange) { .path = (char *) ".envrc" }, "/home/u/main/.git"));

        /* Refused without --git-control, in a line naming the host path; then applied. */
        cr_assert_eq(view_change_check(c, false, false, &error), -EPERM);
        cr_assert_not_null(strstr(error, "/home/u/main/.git/worktrees/wt/config.worktree is git control"), "%s", error);
        cr_assert_eq(view_change_apply(t.state, t.host, c, false, NULL), 0);
        {
                _cleanup_free_ char *s = get(t.host, "worktrees/wt/config.worktree");
                cr_assert_str_eq(s, "[core]\n\tfsmonitor = x\n");
        }
        /* A new entry whose name appeared on the host meanwhile is stale. */
        put(t.host, "worktrees/feat/gitdir", "/elsewhere/.git\n", 0644);
        c = find(&l, "worktrees/feat/gitdir");
        free(error);
        error = NULL;
        cr_assert_eq(view_change_apply(t.state, t.host, c, false, &error), -ESTALE);
        cr_assert_not_null(strstr(error, "/home/u/main/.git/worktrees/feat/gitdir changed on the host"), "%s", error);
        cr_assert_eq(view_change_discard(t.state, find(&l, "worktrees/other"), NULL), 0);
        tree_done(&t);
}

/* The caches git derives from the objects, written by the sandbox's git and kept in the Domain, are not changes to review. */
Test(view_changes, derived_caches_not_listed) {
        _cleanup_(view_changes_done) ViewChanges l = {};
        Tree t = tree();

        md(t.host, ".git");
        put(t.host, ".git/HEAD", "ref: refs/heads/main\n", 0644);
        md(t.host, ".git/objects");
        md(t.host, ".git/objects/pack");
        md(t.host, ".git/objects/info");

        md(t.state, ".git");
        md(t.state, ".git/objects");
        md(t.state, ".git/objects/pack");
        md(t.state, ".git/objects/info");
        put(t.state, ".git/objects/pack/pack-1234.rev", "RIDX", 0444);
        put(t.state, ".git/objects/pack/pack-1234.bitmap", "BITM", 0444);
        put(t.state, ".git/objects/pack/multi-pack-index", "MIDX", 0444);
        put(t.state, ".git/objects/pack/tmp_rev_abc", "RIDX", 0444);
        put(t.state, ".git/objects/info/commit-graph", "CGPH", 0444);
        md(t.state, ".git/objects/info/commit-graphs");
        put(t.state, ".git/objects/info/commit-graphs/graph-1234.graph", "CGPH", 0444);
        /* Not a cache: what git follows to other object stores stays listed. */
        put(t.state, ".git/objects/info/alternates", "/elsewhere\n", 0644);

        cr_assert_eq(view_changes_scan(t.state, t.host, NULL, NULL, NULL, &l, NULL), 0);
        cr_assert_eq(l.n, 1, "found %zu, the first %s", l.n, l.n ? l.changes[0].path : "");
        cr_assert_str_eq(l.changes[0].path, ".git/objects/info/alternates");
        cr_assert(l.changes[0].git_control);
        tree_done(&t);
}
