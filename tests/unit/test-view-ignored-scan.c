/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-ignore.h"
#include "path-util.h"
#include "view-ignored.h"

/* A workspace in a scratch directory; files made by relative path. */
static char *base;
static int ws = -EBADF;

static void put(const char *rel, const char *content) {
        _cleanup_free_ char *p = path_join(base, rel), *dir = NULL;

        cr_assert_not_null(p);
        dir = strdup(p);
        *strrchr(dir, '/') = 0;
        cr_assert_geq(mkdir_parents(dir, 0755), 0);
        cr_assert_geq(write_file(p, content, 0644), 0);
}

static void setup(void) {
        base = strdup("/tmp/lazaret-test-view-ignored-XXXXXX");
        cr_assert_not_null(mkdtemp(base));
        ws = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(ws, 0);
}

static void teardown(void) {
        safe_close(ws);
        (void) rm_rf(base);
        free(base);
}

static const ViewIgnoredPath *find(const ViewIgnored *l, const char *path) {
        for (size_t i = 0; i < l->n; i++)
                if (strcmp(l->paths[i].path, path) == 0)
                        return &l->paths[i];
        return NULL;
}

Test(view_ignored, lists_the_top_most_untracked_excluded_paths, .init = setup, .fini = teardown) {
        _cleanup_(view_ignored_done) ViewIgnored l = {};
        _cleanup_ignore_list_ IgnoreList *excludes = NULL;
        char *shared[] = { (char *) ".env", NULL };
        const ViewIgnoredPath *p;

        put(".gitignore", "node_modules/\n*.log\n.env\n");
        put("node_modules/a/index.js", "12345");
        put("node_modules/b.js", "123");
        put("src/x.log", "1");
        put("src/main.c", "int main;\n");
        put("src/sub/.gitignore", "*.o\n");
        put("src/sub/a.o", "oo");
        put(".env", "S=1\n");
        put("b.hostonly", "h");
        put(".git/info/exclude", "/secret-dir/\n");
        put("secret-dir/k", "k");
        put(".git/logs/x.log", "l");
        cr_assert_eq(ignore_list_parse("*.hostonly\n", 11, "", "excludes", &excludes, NULL), 0);

        cr_assert_eq(view_ignored_scan(ws, excludes, shared, &l, NULL), 0);
        p = find(&l, "node_modules");
        cr_assert_not_null(p);
        cr_expect(p->directory);
        cr_expect_eq(p->size, 8);
        /* not listed again below an ignored directory */
        cr_expect_null(find(&l, "node_modules/b.js"));
        cr_expect_not_null(find(&l, "src/x.log"));
        cr_expect_not_null(find(&l, "src/sub/a.o"));
        cr_expect_not_null(find(&l, "b.hostonly"));
        cr_expect_not_null(find(&l, "secret-dir"));
        cr_expect_null(find(&l, "src/main.c"));
        cr_expect_null(find(&l, "src"));
        cr_expect_null(find(&l, ".git"));
        cr_expect_null(find(&l, ".git/logs/x.log"));
        p = find(&l, ".env");
        cr_assert_not_null(p);
        cr_expect(p->shared);
        cr_expect_not(find(&l, "src/x.log")->shared);
        /* in path order */
        for (size_t i = 1; i < l.n; i++)
                cr_expect_lt(strcmp(l.paths[i - 1].path, l.paths[i].path), 0);
}

Test(view_ignored, a_symlinked_gitignore_is_not_followed, .init = setup, .fini = teardown) {
        _cleanup_(view_ignored_done) ViewIgnored l = {};

        put("rules", "*.txt\n");
        put("a.txt", "a");
        cr_assert_eq(symlinkat("rules", ws, ".gitignore"), 0);
        cr_assert_eq(view_ignored_scan(ws, NULL, NULL, &l, NULL), 0);
        cr_expect_null(find(&l, "a.txt"));
}
