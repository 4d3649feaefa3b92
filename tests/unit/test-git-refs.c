/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * git-refs.c (a repository's refs read without git) against repositories
 * git made, and host_git_commits_since() (host-git.c) running the real git
 * on a repository whose own configuration would run a program if git read
 * it. Skipped without git.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-refs.h"
#include "host-git.h"
#include "json-util.h"
#include "strv.h"

static char *base;

static void setup(void) {
        base = strdup("/tmp/lazaret-test-git-refs-XXXXXX");
        cr_assert_not_null(base);
        cr_assert_not_null(mkdtemp(base));
}

static void teardown(void) {
        rm_rf(base);
        free(base);
}

static void run(const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL, *full = NULL;
        va_list ap;

        va_start(ap, fmt);
        cr_assert_geq(vasprintf(&cmd, fmt, ap), 0);
        va_end(ap);
        cr_assert_geq(asprintf(&full, "cd %s && export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null "
                                      "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t "
                                      "GIT_COMMITTER_EMAIL=t@t && (%s) >/dev/null 2>&1", base, cmd), 0);
        cr_assert_eq(system(full), 0, "%s", cmd);
}

/* What git says a name is, 40 hex digits. */
static char *rev(const char *name) {
        _cleanup_free_ char *cmd = NULL;
        char buf[128] = "";
        FILE *f;

        cr_assert_geq(asprintf(&cmd, "git -C %s/r rev-parse %s", base, name), 0);
        f = popen(cmd, "r");
        cr_assert_not_null(f);
        cr_assert_not_null(fgets(buf, sizeof(buf), f));
        pclose(f);
        buf[strcspn(buf, "\n")] = 0;
        return strdup(buf);
}

static bool have_git(void) {
        return system("git --version >/dev/null 2>&1") == 0;
}

static void put(const char *path, const char *text, mode_t mode) {
        _cleanup_free_ char *p = NULL;

        cr_assert_geq(asprintf(&p, "%s/%s", base, path), 0);
        cr_assert_eq(write_file(p, text, mode), 0, "%s", path);
}

static int open_dir(const char *rel) {
        _cleanup_free_ char *p = NULL;
        int fd;

        cr_assert_geq(asprintf(&p, "%s/%s", base, rel), 0);
        fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(fd, 0, "%s", p);
        return fd;
}

/* Loose over packed, HEAD only detached, tags, nothing followed, names git would not make skipped. */
Test(git_refs, read, .init = setup, .fini = teardown) {
        _cleanup_(git_refs_done) GitRefs r = {}, back = {};
        _cleanup_json_ json_object *o = NULL;
        _cleanup_close_ int g = -EBADF;
        const char *a = "1111111111111111111111111111111111111111", *b = "2222222222222222222222222222222222222222";
        int64_t taken = 0;

        run("mkdir -p .git/refs/heads/feat .git/refs/tags .git/refs/remotes/origin");
        put(".git/HEAD", "ref: refs/heads/main\n", 0644);
        put(".git/packed-refs", "# pack-refs with: peeled fully-peeled sorted \n"
                                "1111111111111111111111111111111111111111 refs/heads/main\n"
                                "1111111111111111111111111111111111111111 refs/tags/v1\n"
                                "^2222222222222222222222222222222222222222\n"
                                "zz refs/heads/bad\n", 0644);
        put(".git/refs/heads/main", "2222222222222222222222222222222222222222\n", 0644);
        put(".git/refs/heads/feat/x", "1111111111111111111111111111111111111111\n", 0644);
        put(".git/refs/heads/main.lock", "3333333333333333333333333333333333333333\n", 0644);
        put(".git/refs/heads/sym", "ref: refs/heads/main\n", 0644);
        put(".git/refs/remotes/origin/main", "1111111111111111111111111111111111111111", 0644);
        run("ln -s main .git/refs/heads/link");
        g = open_dir(".git");
        cr_assert_eq(git_refs_read(g, g, &r), 0);
        cr_assert_eq(r.n, 4);
        cr_expect_str_eq(r.refs[0].name, "refs/heads/feat/x");
        cr_expect_str_eq(r.refs[1].name, "refs/heads/main");
        cr_expect_str_eq(r.refs[1].oid, b);
        cr_expect_str_eq(r.refs[2].name, "refs/remotes/origin/main");
        cr_expect_str_eq(r.refs[3].name, "refs/tags/v1");
        cr_expect_str_eq(git_refs_find(&r, "refs/tags/v1")->oid, a);
        cr_expect_null(git_refs_find(&r, "HEAD"));
        cr_expect_not(r.cut);

        /* A detached HEAD is a ref of its own. */
        put(".git/HEAD", "1111111111111111111111111111111111111111\n", 0644);
        git_refs_done(&r);
        cr_assert_eq(git_refs_read(g, g, &r), 0);
        cr_assert_eq(r.n, 5);
        cr_expect_str_eq(r.refs[0].name, "HEAD");

        /* The record, and back. */
        cr_assert_eq(git_refs_to_json(&r, 1700000000, &o), 0);
        cr_assert_eq(git_refs_from_json(o, &back, &taken), 0);
        cr_expect_eq(taken, 1700000000);
        cr_assert_eq(back.n, r.n);
        for (size_t i = 0; i < r.n; i++) {
                cr_expect_str_eq(back.refs[i].name, r.refs[i].name);
                cr_expect_str_eq(back.refs[i].oid, r.refs[i].oid);
        }

        /* A reftable is not read. */
        run("mkdir .git/reftable");
        git_refs_done(&r);
        cr_expect_eq(git_refs_read(g, g, &r), -EOPNOTSUPP);
        /* ... and said as such where a person reads it (lazaretctl status, changes, the launch line). */
        cr_expect_not_null(strstr(git_refs_strerror(-EOPNOTSUPP), "reftable"));
        cr_expect_not_null(strstr(git_refs_strerror(-EOPNOTSUPP), "not counted"));
}

/* Bounded: the refs past GIT_REFS_MAX are not read, and the result says it was cut. */
/* A linked worktree's own refs: its detached HEAD and its bisect refs, under "worktrees/<name>/". */
Test(git_refs, worktrees, .init = setup, .fini = teardown) {
        _cleanup_(git_refs_done) GitRefs r = {};
        _cleanup_close_ int g = -EBADF;
        const char *a = "1111111111111111111111111111111111111111", *b = "2222222222222222222222222222222222222222";
        const GitRef *x;

        run("mkdir -p .git/refs/heads .git/worktrees/w/refs/bisect .git/worktrees/.hidden .git/worktrees/v");
        put(".git/HEAD", "ref: refs/heads/main\n", 0644);
        put(".git/refs/heads/main", "1111111111111111111111111111111111111111\n", 0644);
        put(".git/worktrees/w/HEAD", "2222222222222222222222222222222222222222\n", 0644);
        put(".git/worktrees/w/refs/bisect/bad", "1111111111111111111111111111111111111111\n", 0644);
        put(".git/worktrees/v/HEAD", "ref: refs/heads/main\n", 0644);
        put(".git/worktrees/.hidden/HEAD", "2222222222222222222222222222222222222222\n", 0644);
        g = open_dir(".git");
        cr_assert_eq(git_refs_read(g, g, &r), 0);
        cr_assert_eq(r.n, 3);
        cr_assert_not_null(x = git_refs_find(&r, "worktrees/w/HEAD"));
        cr_expect_str_eq(x->oid, b);
        cr_assert_not_null(x = git_refs_find(&r, "worktrees/w/refs/bisect/bad"));
        cr_expect_str_eq(x->oid, a);
        cr_expect_null(git_refs_find(&r, "worktrees/v/HEAD"));
        cr_expect(git_ref_name_is_valid("worktrees/w/HEAD"));
        cr_expect(!git_ref_name_is_valid("worktrees/w/heads/x"));
        cr_expect(!git_ref_name_is_valid("worktrees/.w/HEAD"));
        cr_expect(!git_ref_name_is_valid("worktrees//HEAD"));
        cr_expect(!git_ref_name_is_valid("worktrees/w/refs/a..b"));
        cr_expect(!git_ref_name_is_valid("worktrees/w"));
}

Test(git_refs, bounded, .init = setup, .fini = teardown) {
        _cleanup_(git_refs_done) GitRefs r = {};
        _cleanup_close_ int g = -EBADF;
        _cleanup_free_ char *path = NULL;
        FILE *f;

        run("mkdir -p .git/refs/heads");
        cr_assert_geq(asprintf(&path, "%s/.git/packed-refs", base), 0);
        f = fopen(path, "w");
        cr_assert_not_null(f);
        for (unsigned i = 0; i < GIT_REFS_MAX + 100; i++)
                fprintf(f, "1111111111111111111111111111111111111111 refs/tags/t%05u\n", i);
        fclose(f);
        put(".git/refs/heads/main", "2222222222222222222222222222222222222222\n", 0644);
        g = open_dir(".git");
        cr_assert_eq(git_refs_read(g, g, &r), 0);
        cr_expect(r.cut);
        cr_expect_eq(r.n, GIT_REFS_MAX);
        /* In name order: the branch before the tags. */
        cr_expect_str_eq(r.refs[0].name, "refs/heads/main");
}

Test(git_refs, names) {
        cr_expect(git_ref_name_is_valid("HEAD"));
        cr_expect(git_ref_name_is_valid("refs/heads/a-b_c/d.e"));
        cr_expect(git_ref_name_is_valid("refs/heads/\xc3\xbc"));
        cr_expect_not(git_ref_name_is_valid("refs/"));
        cr_expect_not(git_ref_name_is_valid("refs/heads/a..b"));
        cr_expect_not(git_ref_name_is_valid("refs/heads/a.lock"));
        cr_expect_not(git_ref_name_is_valid("refs/heads/.a"));
        cr_expect_not(git_ref_name_is_valid("refs/heads/a b"));
        cr_expect_not(git_ref_name_is_valid("refs/heads/a\nb"));
        cr_expect_not(git_ref_name_is_valid("heads/a"));
        cr_expect_not(git_ref_name_is_valid("refs/heads/a@{1}"));
        cr_expect(git_oid_is_valid("0123456789abcdef0123456789abcdef01234567"));
        cr_expect_not(git_oid_is_valid("0123456789ABCDEF0123456789abcdef01234567"));
        cr_expect_not(git_oid_is_valid("0123"));
}

Test(git_refs, record_strict) {
        static const char *const bad[] = {
                "{\"version\":2,\"taken\":1,\"cut\":false,\"refs\":{}}",
                "{\"version\":1,\"taken\":1,\"cut\":false,\"refs\":{},\"x\":1}",
                "{\"version\":1,\"taken\":1,\"cut\":false,\"refs\":{\"refs/heads/a\":\"12\"}}",
                "{\"version\":1,\"taken\":1,\"cut\":false,\"refs\":{\"heads/a\":\"1111111111111111111111111111111111111111\"}}",
                "{\"version\":1,\"taken\":1,\"cut\":false,\"refs\":{\"refs/heads/a\":\"1111111111111111111111111111111111111111\","
                "\"refs/heads/b\":\"1111111111111111111111111111111111111111111111111111111111111111\"}}",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_json_ json_object *o = NULL;
                _cleanup_(git_refs_done) GitRefs r = {};

                cr_assert_eq(json_parse_strict(bad[i], strlen(bad[i]), &o, NULL), 0);
                cr_expect_eq(git_refs_from_json(o, &r, NULL), -EBADMSG, "%s", bad[i]);
        }
}

static const HostGitCommit *find(const HostGitCommit *c, size_t n, const char *oid) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(c[i].oid, oid) == 0)
                        return &c[i];
        return NULL;
}

/*
 * The commits since a base, with their paths, read by the host's git from
 * the object store alone: the repository's configuration, which would run
 * a program to check a signature, is not read, and neither is a GIT_DIR of
 * the caller's.
 */
Test(git_refs, commits_since, .init = setup, .fini = teardown) {
        _cleanup_free_ char *b = NULL, *c1 = NULL, *c2 = NULL, *m = NULL, *side = NULL, *objects = NULL,
                            *marker = NULL, *why = NULL;
        HostGitCommit *c = NULL;
        size_t n = 0;
        bool cut = true;

        if (!have_git())
                cr_skip_test("git is not installed");
        run("git init -q r && cd r && echo a > a && git add a && git commit -qm base");
        b = rev("HEAD");
        run("cd r && mkdir .husky && echo evil > .husky/pre-push && git add .husky && git commit -qm c1");
        c1 = rev("HEAD");
        run("cd r && echo b > 'we ird' && printf x > \"$(printf 'n\\nl')\" && git add . && git commit -qm c2");
        c2 = rev("HEAD");
        run("cd r && git checkout -qb side HEAD~1 && echo s >> a && git commit -qam s && git checkout -q - && "
            "git merge -q --no-edit side");
        m = rev("HEAD");
        side = rev("side");
        /* A signed-looking commit and a configuration that runs a program to show signatures. */
        cr_assert_geq(asprintf(&marker, "%s/ran", base), 0);
        put("gpg", "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran\"\nexit 1\n", 0755);
        run("cd r && S=$(printf 'tree %%s\\nparent %%s\\nauthor t <t@t> 1 +0000\\ncommitter t <t@t> 1 +0000\\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\\n \\n -----END PGP SIGNATURE-----\\n\\nsigned\\n' "
            "$(git rev-parse HEAD^{tree}) $(git rev-parse HEAD) | git hash-object -t commit -w --stdin) && "
            "git update-ref HEAD $S");
        free(m);
        m = rev("HEAD");
        run("cd r && git config log.showSignature true && git config gpg.program %s/gpg", base);
        /* The test's own check that such a configuration runs the program, when git reads it. */
        run("cd r && git log -1 >/dev/null; test -e %s/ran && rm %s/ran", base, base);
        cr_assert_geq(asprintf(&objects, "%s/r/.git/objects", base), 0);
        setenv("GIT_DIR", "/nonexistent", 1);
        cr_assert_eq(host_git_commits_since(objects, (char *[]) { b, NULL }, (char *[]) { m, NULL }, 100, &c, &n,
                                            &cut, &why), 0, "%s", why);
        unsetenv("GIT_DIR");
        cr_expect_not(cut);
        cr_assert_eq(n, 5);
        cr_expect_eq(access(marker, F_OK), -1, "the repository's gpg.program ran");
        cr_assert_not_null(find(c, n, c1));
        cr_expect_eq(strv_length(find(c, n, c1)->paths), 1);
        cr_expect_str_eq(find(c, n, c1)->paths[0], ".husky/pre-push");
        cr_expect_eq(find(c, n, c1)->ref, 0);
        cr_assert_not_null(find(c, n, c2));
        cr_expect(strv_contains((const char *const *) find(c, n, c2)->paths, "we ird"));
        cr_expect(strv_contains((const char *const *) find(c, n, c2)->paths, "n\nl"));
        cr_assert_not_null(find(c, n, side));
        /* A clean merge brought nothing of its own; neither did the signed commit (the same tree). */
        cr_assert_not_null(find(c, n, m));
        cr_expect_null(find(c, n, m)->paths);
        host_git_commits_free(c, n);

        /* Bounded: the newest first, then cut. */
        cr_assert_eq(host_git_commits_since(objects, (char *[]) { b, NULL }, (char *[]) { m, NULL }, 2, &c, &n,
                                            &cut, &why), 0);
        cr_expect(cut);
        cr_expect_eq(n, 2);
        host_git_commits_free(c, n);

        /* A base that is gone is passed over; nothing new since the newest. */
        cr_assert_eq(host_git_commits_since(objects, (char *[]) { m, (char *) "1111111111111111111111111111111111111111", NULL },
                                            (char *[]) { m, NULL }, 100, &c, &n, &cut, &why), 0, "%s", why);
        cr_expect_eq(n, 0);
        host_git_commits_free(c, n);
}
