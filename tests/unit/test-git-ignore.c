/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-ignore.h"
#include "host-git.h"
#include "macro.h"

static IgnoreList *parse(const char *text, const char *base) {
        _cleanup_free_ char *error = NULL;
        IgnoreList *l = NULL;
        int r = ignore_list_parse(text, strlen(text), base, "test", &l, &error);
        cr_assert_eq(r, 0, "parse failed (%d): %s", r, error ? error : "");
        return l;
}

/* The verdict of one list for one path. */
static int verdict(const char *rules, const char *path, bool is_dir) {
        _cleanup_ignore_list_ IgnoreList *l = parse(rules, "");
        const IgnoreList *lists[] = { l };
        return ignore_lists_match(lists, 1, path, is_dir, NULL);
}

#define EXCLUDED(rules, path, dir) cr_expect_eq(verdict(rules, path, dir), IGNORE_EXCLUDED, "'%s' %s", rules, path)
#define INCLUDED(rules, path, dir) cr_expect_eq(verdict(rules, path, dir), IGNORE_INCLUDED, "'%s' %s", rules, path)
#define NOMATCH(rules, path, dir) cr_expect_eq(verdict(rules, path, dir), IGNORE_NO_MATCH, "'%s' %s", rules, path)

Test(git_ignore, lines) {
        NOMATCH("# a\n", "# a", false);
        EXCLUDED("\\#a\n", "#a", false);
        EXCLUDED("\\!a\n", "!a", false);
        NOMATCH("\n\n", "a", false);
        EXCLUDED("a  \n", "a", false);           /* trailing spaces go */
        NOMATCH("a  \n", "a  ", false);
        EXCLUDED("a\\ \n", "a ", false);         /* unless quoted */
        EXCLUDED("a\\  \n", "a ", false);
        EXCLUDED("a\r\n", "a", false);
        EXCLUDED("\xef\xbb\xbf" "a\n", "a", false);
        EXCLUDED("b\na", "a", false);            /* no final newline */
        NOMATCH("a\\\n", "a", false);            /* a trailing backslash matches nothing */
        NOMATCH("/\n", "a", true);
        NOMATCH("!\n", "a", false);
}

Test(git_ignore, negation_and_order) {
        INCLUDED("*.o\n!a.o\n", "a.o", false);
        EXCLUDED("!a.o\n*.o\n", "a.o", false);    /* the last matching line wins */
        EXCLUDED("*.o\n!a.o\n", "b.o", false);
}

Test(git_ignore, directories_only) {
        EXCLUDED("a/\n", "a", true);
        NOMATCH("a/\n", "a", false);
        EXCLUDED("a/\n", "x/a", true);           /* still a basename pattern */
        EXCLUDED("/a/\n", "a", true);
        NOMATCH("/a/\n", "x/a", true);
}

Test(git_ignore, anchoring) {
        EXCLUDED("a\n", "x/y/a", false);
        EXCLUDED("/a\n", "a", false);
        NOMATCH("/a\n", "x/a", false);
        EXCLUDED("x/a\n", "x/a", false);
        NOMATCH("x/a\n", "y/x/a", false);        /* a middle slash anchors */
        EXCLUDED("*/a\n", "x/a", false);
        NOMATCH("*/a\n", "x/y/a", false);
}

Test(git_ignore, wildcards) {
        EXCLUDED("a?c\n", "abc", false);
        NOMATCH("a?c\n", "ac", false);
        NOMATCH("x?y\n", "x/y", false);
        EXCLUDED("a*\n", "a", false);
        EXCLUDED("*.py[cod]\n", "x.pyc", false);
        NOMATCH("*.py[cod]\n", "x.pyx", false);
        EXCLUDED("[a-c]x\n", "bx", false);
        NOMATCH("[a-c]x\n", "dx", false);
        EXCLUDED("[!a-c]x\n", "dx", false);
        EXCLUDED("[^a-c]x\n", "dx", false);
        NOMATCH("[^a-c]x\n", "ax", false);
        EXCLUDED("[]a]\n", "]", false);
        EXCLUDED("[a-]\n", "-", false);
        EXCLUDED("[[:digit:]]x\n", "7x", false);
        EXCLUDED("[[:space:]]x\n", " x", false);
        NOMATCH("[[:space:]]x\n", "\vx", false); /* git's space has no \v */
        NOMATCH("[[:foo:]]\n", "f", false);      /* an unknown class matches nothing */
        NOMATCH("[ab\n", "a", false);            /* nor does an unterminated one */
        EXCLUDED("[[:alpha]\n", "a", false);     /* no ":]": ordinary members */
        EXCLUDED("\\*\n", "*", false);
        NOMATCH("\\*\n", "a", false);
        NOMATCH("a[/]b\n", "a/b", false);        /* a class never matches '/' */
        NOMATCH("A\n", "a", false);              /* case-sensitive */
}

Test(git_ignore, double_star) {
        EXCLUDED("**/a\n", "a", false);
        EXCLUDED("**/a\n", "x/y/a", false);
        EXCLUDED("x/**\n", "x/y", false);
        EXCLUDED("x/**\n", "x/y/z", false);
        NOMATCH("x/**\n", "x", true);
        EXCLUDED("x/**/y\n", "x/y", false);
        EXCLUDED("x/**/y\n", "x/a/b/y", false);
        NOMATCH("x/**/y\n", "x/ay", false);
        EXCLUDED("x**y\n", "xaby", false);        /* not a segment: '*' */
        NOMATCH("a/x**y\n", "a/xa/by", false);
        /* git's quirk: after a literal head, a "**" followed by "/" spans directories. */
        EXCLUDED("a/x**/y\n", "a/xa/b/y", false);
        EXCLUDED("a/x**/y\n", "a/xy", false);
        EXCLUDED("a/x**\n", "a/xb/c", false);
        NOMATCH("a/**\\/b\n", "a/b", false);
        EXCLUDED("a/**\\/b\n", "a/x/b", false);
        NOMATCH("**\\//\n", "a/b", true);      /* found by fuzz-git-ignore */
        NOMATCH("a/**//\n", "a/b", true);
}

static double seconds(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Patterns that make a backtracking matcher exponential stay fast. */
Test(git_ignore, pathological) {
        char pattern[IGNORE_PATTERN_MAX + 1], path[IGNORE_PATH_MAX + 1];
        _cleanup_ignore_list_ IgnoreList *l1 = NULL, *l2 = NULL;
        size_t n = 0;

        while (n + 2 < IGNORE_PATTERN_MAX - 2) {
                pattern[n++] = '*';
                pattern[n++] = 'a';
        }
        pattern[n++] = 'b';
        pattern[n] = 0;
        memset(path, 'a', IGNORE_PATH_MAX);
        path[IGNORE_PATH_MAX] = 0;
        l1 = parse(pattern, "");

        n = 0;
        while (n + 4 < IGNORE_PATTERN_MAX - 4) {
                memcpy(pattern + n, "**/a", 4);
                n += 4;
                pattern[n++] = '/';
        }
        pattern[n++] = 'b';
        pattern[n] = 0;
        l2 = parse(pattern, "");

        const IgnoreList *lists[] = { l1, l2 };
        double t = seconds();
        cr_assert_eq(ignore_lists_match(lists, 1, path, false, NULL), IGNORE_NO_MATCH);
        for (size_t i = 1; i < IGNORE_PATH_MAX - 1; i += 2)
                path[i] = '/';
        cr_assert_eq(ignore_lists_match(lists + 1, 1, path, false, NULL), IGNORE_NO_MATCH);
        t = seconds() - t;
        cr_assert_lt(t, 0.5, "took %.3f s", t);
}

Test(git_ignore, bounds) {
        _cleanup_free_ char *big = malloc(IGNORE_FILE_MAX + 2), *error = NULL;
        IgnoreList *l = NULL;

        memset(big, 'a', IGNORE_FILE_MAX + 1);
        cr_assert_eq(ignore_list_parse(big, IGNORE_FILE_MAX + 1, "", "big", &l, &error), -EFBIG);
        cr_assert(strstr(error, "big"));
        free(TAKE_PTR(error));
        cr_assert_eq(ignore_list_parse(big, IGNORE_PATTERN_MAX + 1, "", "long", &l, &error), -E2BIG);
        cr_assert(strstr(error, "long:1"));
        free(TAKE_PTR(error));
        cr_assert_eq(ignore_list_parse(big, IGNORE_PATTERN_MAX, "", "long", &l, &error), 0);
        l = ignore_list_free(l);
        for (size_t i = 0; i < 2 * (IGNORE_PATTERNS_MAX + 1); i += 2)
                big[i + 1] = '\n';
        cr_assert_eq(ignore_list_parse(big, 2 * (IGNORE_PATTERNS_MAX + 1), "", "many", &l, &error), -E2BIG);
        free(TAKE_PTR(error));
        cr_assert_eq(ignore_list_parse(big, 2 * IGNORE_PATTERNS_MAX, "", "many", &l, &error), 0);
        l = ignore_list_free(l);
        cr_assert_eq(ignore_list_parse("a", 1, "../x", "base", &l, &error), -EINVAL);
        free(TAKE_PTR(error));
        cr_assert_eq(ignore_list_parse("a", 1, "/x", "base", &l, &error), -EINVAL);

        const IgnoreList *none[] = { NULL };
        cr_assert_eq(ignore_lists_match(none, 1, "a//b", false, NULL), -EINVAL);
        cr_assert_eq(ignore_lists_match(none, 1, "../b", false, NULL), -EINVAL);
        cr_assert_eq(ignore_lists_match(none, 1, "", false, NULL), -EINVAL);
        big[IGNORE_PATH_MAX + 1] = 0;
        memset(big, 'a', IGNORE_PATH_MAX + 1);
        cr_assert_eq(ignore_lists_match(none, 1, big, false, NULL), -ENAMETOOLONG);
}

/* ------------------------------------------------ a set of directory files */

typedef struct Files {
        const char *dir[4], *text[4];
        unsigned reads;
} Files;

static int read_files(void *userdata, const char *dir, IgnoreList **ret, char **ret_error) {
        Files *f = userdata;
        f->reads++;
        for (size_t i = 0; i < ELEMENTSOF(f->dir) && f->dir[i]; i++)
                if (strcmp(f->dir[i], dir) == 0)
                        return ignore_list_parse(f->text[i], strlen(f->text[i]), dir, f->dir[i], ret, ret_error);
        *ret = NULL;
        return 0;
}

Test(git_ignore, chain) {
        Files f = { { "", "a", "a/b" }, { "*.log\nbuild/\n", "!keep.log\nx\n", "*.log\n" } };
        _cleanup_ignore_cache_ IgnoreCache *c = NULL;
        _cleanup_ignore_list_ IgnoreList *info = parse("info\n*.tmp\n", ""), *global = parse("global\n!*.tmp\n", "");
        IgnoreMatch m;

        cr_assert_eq(ignore_cache_new(read_files, &f, &c), 0);
        IgnoreSet set = { ignore_cache_load, c, info, global };

        cr_assert_eq(ignore_match(&set, "x.log", false, &m, NULL), IGNORE_EXCLUDED);
        cr_assert_eq(ignore_match(&set, "a/keep.log", false, &m, NULL), IGNORE_INCLUDED);   /* deeper wins */
        cr_assert_str_eq(m.source, "a");
        cr_assert_eq(m.line, 1);
        cr_assert_eq(ignore_match(&set, "a/b/keep.log", false, &m, NULL), IGNORE_EXCLUDED); /* deeper still */
        cr_assert_str_eq(m.source, "a/b");
        cr_assert_eq(ignore_match(&set, "x", false, NULL, NULL), IGNORE_NO_MATCH);          /* a/'s rule */
        cr_assert_eq(ignore_match(&set, "a/x", false, NULL, NULL), IGNORE_EXCLUDED);
        cr_assert_eq(ignore_match(&set, "q.tmp", false, NULL, NULL), IGNORE_EXCLUDED);      /* info beats global */
        cr_assert_eq(ignore_match(&set, "global", false, NULL, NULL), IGNORE_EXCLUDED);
        cr_assert_eq(ignore_match(&set, "info", true, NULL, NULL), IGNORE_EXCLUDED);

        /* Below an excluded directory, nothing comes back, and its files are not read. */
        unsigned reads = f.reads;
        cr_assert_eq(ignore_match(&set, "build/keep.log", false, &m, NULL), IGNORE_EXCLUDED);
        cr_assert_str_eq(m.pattern, "build/");
        cr_assert_eq(ignore_match(&set, "a/x/y/z", false, &m, NULL), IGNORE_EXCLUDED);
        cr_assert_str_eq(m.pattern, "x");
        cr_assert_eq(f.reads, reads, "read %u files of excluded directories", f.reads - reads);

        /* Cached: a second lookup reads nothing; a put replaces, a forget rereads. */
        reads = f.reads;
        cr_assert_eq(ignore_match(&set, "a/b/c.log", false, NULL, NULL), IGNORE_EXCLUDED);
        cr_assert_eq(f.reads, reads);
        cr_assert_eq(ignore_cache_put(c, "a/b", parse("!c.log\n", "a/b")), 0);
        cr_assert_eq(ignore_match(&set, "a/b/c.log", false, NULL, NULL), IGNORE_INCLUDED);
        f.text[2] = "";
        ignore_cache_forget(c, "a/b");
        cr_assert_eq(ignore_match(&set, "a/b/c.log", false, NULL, NULL), IGNORE_EXCLUDED); /* the top-level rule */
        cr_assert_eq(f.reads, reads + 1);
}

Test(git_ignore, cache_grows) {
        _cleanup_ignore_cache_ IgnoreCache *c = NULL;
        const IgnoreList *l;
        char dir[32];

        cr_assert_eq(ignore_cache_new(NULL, NULL, &c), 0);
        for (unsigned i = 0; i < 1000; i++) {
                snprintf(dir, sizeof(dir), "d%u", i);
                cr_assert_eq(ignore_cache_put(c, dir, i % 2 ? parse("x\n", dir) : NULL), 0);
        }
        for (unsigned i = 0; i < 1000; i++) {
                snprintf(dir, sizeof(dir), "d%u", i);
                cr_assert_eq(ignore_cache_load(c, dir, &l, NULL), 0);
                cr_assert_eq(l != NULL, i % 2 == 1);
                if (l)
                        cr_assert_str_eq(ignore_list_base(l), dir);
        }
}

Test(git_ignore, load_at) {
        char tmp[] = "/tmp/test-git-ignore-XXXXXX";
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *error = NULL;
        IgnoreList *l = NULL;
        char p[128];

        cr_assert(mkdtemp(tmp));
        fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_eq(ignore_list_load_at(fd, ".gitignore", "", "x", &l, &error), 0);
        cr_assert_null(l);
        snprintf(p, sizeof(p), "%s/real", tmp);
        cr_assert_eq(write_file(p, "a\nb\n", 0644), 0);
        snprintf(p, sizeof(p), "%s/.gitignore", tmp);
        cr_assert_eq(symlink("real", p), 0);
        cr_assert_eq(ignore_list_load_at(fd, ".gitignore", "", "x", &l, &error), 0);
        cr_assert_null(l, "a symlinked .gitignore is read");
        cr_assert_eq(ignore_list_load_at(fd, "real", "", "x", &l, &error), 0);
        cr_assert_eq(ignore_list_size(l), 2);
        ignore_list_free(l);
        (void) rm_rf(tmp);
}

Test(git_ignore, excludes_file) {
        char tmp[] = "/tmp/test-git-ignore-XXXXXX", p[256];
        _cleanup_free_ char *error = NULL, *f = NULL, *git = NULL;

        cr_assert_eq(ignore_default_excludes_file("/x", "/h", &f), 0);
        cr_assert_str_eq(f, "/x/git/ignore");
        free(TAKE_PTR(f));
        cr_assert_eq(ignore_default_excludes_file("", "/h", &f), 0);
        cr_assert_str_eq(f, "/h/.config/git/ignore");
        free(TAKE_PTR(f));
        cr_assert_eq(ignore_default_excludes_file(NULL, NULL, &f), 0);
        cr_assert_null(f);

        if (find_program("git", &git) < 0)
                cr_skip_test("git is not installed");
        cr_assert(mkdtemp(tmp));
        setenv("HOME", tmp, 1);
        unsetenv("XDG_CONFIG_HOME");
        setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
        /* A repository named by the environment is not consulted. */
        setenv("GIT_DIR", "/nonexistent", 1);
        cr_assert_eq(host_git_excludes_file(&f, &error), 0, "%s", error);
        snprintf(p, sizeof(p), "%s/.config/git/ignore", tmp);
        cr_assert_str_eq(f, p);
        free(TAKE_PTR(f));
        snprintf(p, sizeof(p), "%s/.gitconfig", tmp);
        cr_assert_eq(write_file(p, "[core]\n\texcludesFile = ~/my-ignore\n", 0644), 0);
        cr_assert_eq(host_git_excludes_file(&f, &error), 0, "%s", error);
        snprintf(p, sizeof(p), "%s/my-ignore", tmp);
        cr_assert_str_eq(f, p);
        (void) rm_rf(tmp);
}
