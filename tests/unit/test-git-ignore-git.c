/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * git-ignore.c and git-index.c against git itself. Builds many small
 * repositories (patterns from a table and generated ones, .gitignore files
 * at several levels, info/exclude, a core.excludesFile, some files added
 * with --force under ignored patterns, a gitlink, index versions 2 to 4)
 * and compares, for every path of each tree:
 *   - `git check-ignore --no-index -v -n`: verdict, source, line and pattern
 *     against ignore_match();
 *   - `git ls-files -s`: the tracked set and the gitlinks against
 *     git_index_parse() of .git/index;
 *   - `git ls-files -o -i --exclude-standard`: the untracked ignored files
 *     against "excluded and not tracked".
 * LAZARET_IGNORE_DIFF_REPOS (default 250) and LAZARET_IGNORE_DIFF_SEED
 * change the run. Exit 77 without git (a failure under CI=true).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-ignore.h"
#include "git-index.h"
#include "macro.h"

/* Hand-picked patterns: every rule of gitignore(5) and git's quirks. */
static const char *const table[] = {
        "a", "/a", "a/", "/a/", "!a", "!/a", "!a/", "*.o", "*", "?", "??", "a?", "?b", "*b", "a*", "a*b",
        "[ab]", "[!a]", "[^a]", "[a-c]", "[a-]", "[-a]", "[]a]", "[!]a]", "[a-c-e]", "[[:alpha:]]",
        "[[:digit:]]*", "[[:space:]]*", "[[:alpha]", "[[:foo:]]", "[a", "a[", "[\\]]", "[\\a-c]", "[a-\\c]",
        "**", "/**", "**/a", "**/a/", "a/**", "a/**/b", "**/a/**", "a/**b", "a**/b", "ab**/b", "a/b**", "a**",
        "**a", "***/a", "a/***", "a/**/**/b", "**/", "a/*", "a/*/b", "*/a", "/*", "/*/", "*/", "a/b", "a/b/",
        "/a/b", "a/b/c", "ab/b", "b/a", "a b", "a\\ ", "a ", "a  ", "a\\  ", "\\a", "\\!a", "\\#a", "#a", "!",
        "/", "//a", "a//b", "a\\/b", "a\\", "\\", "a/\\*", "\\*", "\\?", "\\[a]", "x.o", "*.log", "!*.log",
        "node_modules/", "/build", "build/", "*.py[cod]", "__pycache__/", ".hidden", ".*", "!.gitignore",
        "a.b.c", "*.b.*", "**/*.o", "a/**/", "\xef\xbb\xbf" "a", "**/ab", "ab/**", "a/b/**", "/a/**/c",
        "[[:upper:]]*", "F*", "**\\//", "a/**//", "**//", "[[:punct:]]*", "[[:xdigit:]]", "!*/", "!**/b", "-", "*a*b*", "**\\/a", "a/**\\/b",
};

/* Names in the trees: escapes, wildcards and spaces in file names too. */
static const char *const names[] = {
        "a", "b", "c", "ab", "ba", "abc", "x.o", "y.log", "foo", "Foo", "a b", "a ", "[a]", "!a", "#a", "*",
        "a*", "\\a", "node_modules", "build", "-", ".hidden", "a.b.c", "e", "x.pyc", "__pycache__", "7",
        "\xc3\xbc", " x", "a\tb",
};

/* Pieces of generated patterns. */
static const char *const pieces[] = {
        "a", "b", "ab", "c", "*", "?", "a*", "*b", "[ab]", "[!a]*", "[a-c]", "**", "*.o", "\\#a", "a?", "x.o",
        "[[:alpha:]]*", "foo", "build", "node_modules", "\\*", "a b", ".hidden", "*.*", "y.log", "e",
};

static unsigned long long rng_state;
static unsigned rnd(unsigned n) {
        rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
        return (unsigned) ((rng_state >> 33) % n);
}

static char tmp[] = "/tmp/lazaret-ignore-diff-XXXXXX";
static unsigned failures;

static void fail(const char *fmt, ...) _printf_(1, 2);
static void fail(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        failures++;
}

static int run(const char *fmt, ...) _printf_(1, 2);
static int run(const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL;
        va_list ap;
        int r;
        va_start(ap, fmt);
        r = vasprintf(&cmd, fmt, ap);
        va_end(ap);
        if (r < 0)
                abort();
        r = system(cmd);
        if (r != 0) {
                fprintf(stderr, "failed (%d): %s\n", r, cmd);
                exit(EXIT_FAILURE);
        }
        return 0;
}

/* Output of a shell command, NUL-terminated, length in *ret_len. */
static char *capture(size_t *ret_len, const char *fmt, ...) _printf_(2, 3);
static char *capture(size_t *ret_len, const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL;
        char *buf = NULL;
        size_t n = 0, cap = 0;
        va_list ap;
        FILE *f;
        int r;
        va_start(ap, fmt);
        r = vasprintf(&cmd, fmt, ap);
        va_end(ap);
        if (r < 0)
                abort();
        f = popen(cmd, "re");
        if (!f)
                abort();
        for (;;) {
                if (n + 4096 + 1 > cap) {
                        cap = cap ? cap * 2 : 65536;
                        buf = realloc(buf, cap);
                        if (!buf)
                                abort();
                }
                size_t k = fread(buf + n, 1, cap - n - 1, f);
                if (k == 0)
                        break;
                n += k;
        }
        buf[n] = 0;
        /* check-ignore exits 1 when it found nothing ignored. */
        r = pclose(f);
        if (r != 0 && !(r == 256 && strstr(cmd, "check-ignore"))) {
                fprintf(stderr, "failed: %s\n", cmd);
                exit(EXIT_FAILURE);
        }
        *ret_len = n;
        return buf;
}

typedef struct Tree {
        char *paths[256];
        bool is_dir[256];
        size_t n;
} Tree;

static bool tree_has(const Tree *t, const char *p, size_t *ret) {
        for (size_t i = 0; i < t->n; i++)
                if (strcmp(t->paths[i], p) == 0) {
                        if (ret)
                                *ret = i;
                        return true;
                }
        return false;
}

static void tree_add(Tree *t, const char *p, bool dir) {
        size_t i;
        if (tree_has(t, p, &i)) {
                t->is_dir[i] = t->is_dir[i] || dir;
                return;
        }
        if (t->n >= ELEMENTSOF(t->paths))
                return;
        t->paths[t->n] = strdup(p);
        t->is_dir[t->n++] = dir;
}

static void tree_done(Tree *t) {
        for (size_t i = 0; i < t->n; i++)
                free(t->paths[i]);
        t->n = 0;
}

static void gen_tree(Tree *t) {
        unsigned n = 15 + rnd(40);
        for (unsigned k = 0; k < n; k++) {
                char p[512] = "";
                unsigned depth = 1 + rnd(4);
                for (unsigned d = 0; d < depth; d++) {
                        if (d > 0) {
                                tree_add(t, p, true);
                                strcat(p, "/");
                        }
                        strcat(p, names[rnd(ELEMENTSOF(names))]);
                }
                /* A path that is already a directory stays one. */
                tree_add(t, p, rnd(5) == 0);
        }
        for (size_t i = 0; i < t->n; i++)
                for (size_t j = 0; j < t->n; j++) {
                        size_t l = strlen(t->paths[i]);
                        if (strncmp(t->paths[j], t->paths[i], l) == 0 && t->paths[j][l] == '/')
                                t->is_dir[i] = true;
                }
}

static void gen_pattern(FILE *f) {
        unsigned kind = rnd(10);
        if (kind < 3) {
                fputs(table[rnd(ELEMENTSOF(table))], f);
        } else {
                unsigned segs = 1 + rnd(3);
                if (rnd(4) == 0)
                        fputc('!', f);
                if (rnd(4) == 0)
                        fputc('/', f);
                for (unsigned s = 0; s < segs; s++) {
                        if (s > 0)
                                fputc('/', f);
                        fputs(pieces[rnd(ELEMENTSOF(pieces))], f);
                }
                if (rnd(4) == 0)
                        fputc('/', f);
                if (rnd(8) == 0)
                        fputs("  ", f);
        }
        switch (rnd(12)) {
        case 0: fputs("\r\n", f); break;
        case 1: fputs("\n# a comment\n", f); break;
        case 2: fputs("\n\n", f); break;
        default: fputc('\n', f);
        }
}

static void write_rules(const char *path, unsigned n, int forced) {
        FILE *f = fopen(path, "we");
        if (!f)
                abort();
        if (forced >= 0)
                fprintf(f, "%s\n", table[forced]);
        for (unsigned k = 0; k < n; k++)
                gen_pattern(f);
        fclose(f);
}

typedef struct Repo {
        const char *root;
} Repo;

static int read_dir(void *userdata, const char *dir, IgnoreList **ret, char **ret_error) {
        const Repo *repo = userdata;
        _cleanup_free_ char *full = NULL, *source = NULL;
        _cleanup_close_ int fd = -EBADF;

        if (asprintf(&full, "%s/%s", repo->root, dir) < 0 ||
            asprintf(&source, "%s%s.gitignore", dir, *dir ? "/" : "") < 0)
                return -ENOMEM;
        fd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                *ret = NULL;
                return 0;
        }
        return ignore_list_load_at(fd, ".gitignore", dir, source, ret, ret_error);
}

static IgnoreList *load_file(const char *path, const char *source) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        IgnoreList *l = NULL;
        size_t n;
        if (read_full_file(path, IGNORE_FILE_MAX, &text, &n) < 0)
                return NULL;
        if (ignore_list_parse(text, n, "", source, &l, &error) < 0) {
                fail("%s: %s", path, error);
                return NULL;
        }
        return l;
}

static void one_repo(unsigned no) {
        _cleanup_free_ char *root = NULL, *excludes = NULL, *input = NULL, *out = NULL, *tracked = NULL,
                             *ignored = NULL, *error = NULL, *index_data = NULL;
        _cleanup_ignore_cache_ IgnoreCache *cache = NULL;
        _cleanup_ignore_list_ IgnoreList *info = NULL, *global = NULL;
        _cleanup_git_index_ GitIndex *idx = NULL;
        Tree t = {};
        size_t n, n_index;
        bool sha256 = rnd(6) == 0;
        int r;

        if (asprintf(&root, "%s/r%u", tmp, no) < 0 || asprintf(&excludes, "%s/excludes%u", tmp, no) < 0)
                abort();
        run("git init -q %s %s", sha256 ? "--object-format=sha256" : "", root);
        gen_tree(&t);
        for (size_t i = 0; i < t.n; i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s", root, t.paths[i]) < 0)
                        abort();
                if (t.is_dir[i])
                        r = mkdir_parents(p, 0755);
                else {
                        _cleanup_free_ char *parent = strdup(p);
                        *strrchr(parent, '/') = 0;
                        r = mkdir_parents(parent, 0755);
                        if (r >= 0)
                                r = write_file(p, "x\n", 0644);
                }
                if (r < 0) {
                        fprintf(stderr, "cannot create %s\n", p);
                        exit(EXIT_FAILURE);
                }
        }
        /* Rule files: the top level (with a table pattern first), some directories, info/exclude, excludesFile. */
        {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/.gitignore", root) < 0)
                        abort();
                write_rules(p, rnd(6), (int) (no % ELEMENTSOF(table)));
                tree_add(&t, ".gitignore", false);
        }
        for (size_t i = 0, k = t.n; i < k; i++)
                if (t.is_dir[i] && rnd(3) == 0) {
                        _cleanup_free_ char *p = NULL, *rel = NULL;
                        if (asprintf(&p, "%s/%s/.gitignore", root, t.paths[i]) < 0 ||
                            asprintf(&rel, "%s/.gitignore", t.paths[i]) < 0)
                                abort();
                        write_rules(p, 1 + rnd(4), rnd(2) ? (int) rnd(ELEMENTSOF(table)) : -1);
                        tree_add(&t, rel, false);
                }
        {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/.git/info/exclude", root) < 0)
                        abort();
                write_rules(p, rnd(4), -1);
                info = load_file(p, ".git/info/exclude");
                write_rules(excludes, rnd(4), -1);
                global = load_file(excludes, excludes);
                run("git -C %s config core.excludesFile %s", root, excludes);
        }

        /* Track some files, ignored or not; a gitlink; an index version. */
        {
                _cleanup_free_ char *list = NULL;
                unsigned n_add = 0;
                FILE *f;
                if (asprintf(&list, "%s/add%u", tmp, no) < 0)
                        abort();
                f = fopen(list, "we");
                for (size_t i = 0; i < t.n; i++)
                        if (!t.is_dir[i] && rnd(3) == 0) {
                                fprintf(f, "%s%c", t.paths[i], 0);
                                n_add++;
                        }
                fclose(f);
                if (n_add > 0)
                        run("cd %s && git --literal-pathspecs add -f --pathspec-from-file=%s --pathspec-file-nul",
                            root, list);
                if (rnd(2))
                        run("git -C %s update-index --add --cacheinfo 160000,%s,zz-sub", root,
                            sha256 ? "1111111111111111111111111111111111111111111111111111111111111111"
                                   : "1111111111111111111111111111111111111111");
                if (rnd(3) == 0) /* an intent-to-add entry makes a version 3 index */
                        run("cd %s && touch zz-new && git add -f -N zz-new", root);
                run("git -C %s update-index --index-version %u", root, 2 + rnd(3));
        }

        /* check-ignore of every path of the tree. */
        {
                _cleanup_free_ char *list = NULL;
                FILE *f;
                if (asprintf(&list, "%s/paths%u", tmp, no) < 0)
                        abort();
                f = fopen(list, "we");
                for (size_t i = 0; i < t.n; i++)
                        fprintf(f, "%s%c", t.paths[i], 0);
                fclose(f);
                out = capture(&n, "cd %s && git check-ignore --no-index -v -n -z --stdin <%s", root, list);
        }
        r = ignore_cache_new(read_dir, &(Repo) { root }, &cache);
        if (r < 0)
                abort();
        IgnoreSet set = { ignore_cache_load, cache, info, global };
        for (const char *p = out; p < out + n;) {
                const char *src = p, *line = src + strlen(src) + 1, *pat = line + strlen(line) + 1,
                           *path = pat + strlen(pat) + 1;
                size_t i;
                IgnoreMatch m = {};
                p = path + strlen(path) + 1;
                if (!tree_has(&t, path, &i)) {
                        fail("repo %u: git named '%s', not in the tree", no, path);
                        continue;
                }
                r = ignore_match(&set, path, t.is_dir[i], &m, &error);
                IgnoreVerdict want = !*src ? IGNORE_NO_MATCH : pat[0] == '!' ? IGNORE_INCLUDED : IGNORE_EXCLUDED;
                if (r < 0) {
                        fail("repo %u: %s: error %d %s", no, path, r, error ? error : "");
                        continue;
                }
                bool same = (IgnoreVerdict) r == want;
                if (same && want != IGNORE_NO_MATCH)
                        same = strcmp(m.source, src) == 0 && (unsigned) atoi(line) == m.line &&
                               strcmp(m.pattern, pat) == 0;
                if (!same)
                        fail("repo %u: '%s'%s: git says %s:%s:'%s', we say %d %s:%u:'%s'", no, path,
                             t.is_dir[i] ? " (dir)" : "", src, line, pat, r, r ? m.source : "", r ? m.line : 0,
                             r ? m.pattern : "");
        }

        /* The index against ls-files. */
        {
                _cleanup_free_ char *ipath = NULL;
                if (asprintf(&ipath, "%s/.git/index", root) < 0)
                        abort();
                r = read_full_file(ipath, GIT_INDEX_SIZE_MAX, &index_data, &n_index);
                if (r < 0)
                        abort();
                r = git_index_parse(index_data, n_index, sha256 ? GIT_HASH_SHA256 : GIT_HASH_SHA1, &idx, &error);
                if (r < 0) {
                        fail("repo %u: index refused: %s", no, error);
                        goto done;
                }
                if (!idx->checksum_verified)
                        fail("repo %u: checksum not verified", no);
        }
        tracked = capture(&n, "git -C %s ls-files -s -z", root);
        size_t k = 0, n_links = 0;
        for (const char *p = tracked; p < tracked + n; p += strlen(p) + 1, k++) {
                const char *name = strchr(p, '\t') + 1;
                bool link = strncmp(p, "160000 ", 7) == 0;
                if (k >= idx->n_paths || strcmp(idx->paths[k], name) != 0)
                        fail("repo %u: ls-files entry %zu is '%s', we read '%s'", no, k, name,
                             k < idx->n_paths ? idx->paths[k] : "(none)");
                if (link != git_index_is_gitlink(idx, name))
                        fail("repo %u: '%s' gitlink: git %d, we %d", no, name, link, !link);
                if (!git_index_is_tracked(idx, name))
                        fail("repo %u: '%s' not tracked for us", no, name);
                n_links += link;
        }
        if (k != idx->n_paths || n_links != idx->n_gitlinks)
                fail("repo %u: git lists %zu paths and %zu gitlinks, we read %zu and %zu", no, k, n_links,
                     idx->n_paths, idx->n_gitlinks);
        for (size_t i = 0; i < t.n; i++)
                if (t.is_dir[i]) {
                        _cleanup_free_ char *prefix = NULL;
                        bool git_has = false;
                        if (asprintf(&prefix, "%s/", t.paths[i]) < 0)
                                abort();
                        for (size_t j = 0; j < idx->n_paths; j++)
                                git_has = git_has || strncmp(idx->paths[j], prefix, strlen(prefix)) == 0;
                        if (git_has != git_index_has_tracked_below(idx, t.paths[i]))
                                fail("repo %u: tracked below '%s': %d", no, t.paths[i], git_has);
                }

        /* What git treats as ignored: untracked files that the rules exclude. */
        ignored = capture(&n, "git -C %s ls-files -z -o -i --exclude-standard", root);
        for (size_t i = 0; i < t.n; i++) {
                bool git_ignored = false, ours;
                if (t.is_dir[i])
                        continue;
                for (const char *p = ignored; p < ignored + n; p += strlen(p) + 1)
                        git_ignored = git_ignored || strcmp(p, t.paths[i]) == 0;
                r = ignore_match(&set, t.paths[i], false, NULL, NULL);
                ours = r == IGNORE_EXCLUDED && !git_index_is_tracked(idx, t.paths[i]);
                if (ours != git_ignored)
                        fail("repo %u: '%s' ignored: git %d, we %d", no, t.paths[i], git_ignored, ours);
        }
done:
        tree_done(&t);
        if (failures == 0)
                (void) rm_rf(root);
}

int main(void) {
        const char *s = getenv("LAZARET_IGNORE_DIFF_REPOS"), *seed = getenv("LAZARET_IGNORE_DIFF_SEED");
        unsigned n = s ? (unsigned) atoi(s) : 250;
        _cleanup_free_ char *git = NULL;

        if (find_program("git", &git) < 0) {
                fprintf(stderr, "git is not installed\n");
                return getenv("CI") && strcmp(getenv("CI"), "true") == 0 ? EXIT_FAILURE : 77;
        }
        rng_state = seed ? strtoull(seed, NULL, 0) : 0x1a2a7e7ULL;
        if (!mkdtemp(tmp))
                return EXIT_FAILURE;
        /* Nothing of the user's or the system's configuration. */
        setenv("HOME", tmp, 1);
        unsetenv("XDG_CONFIG_HOME");
        setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
        setenv("GIT_AUTHOR_NAME", "t", 1);
        setenv("GIT_AUTHOR_EMAIL", "t@t", 1);
        setenv("GIT_COMMITTER_NAME", "t", 1);
        setenv("GIT_COMMITTER_EMAIL", "t@t", 1);
        unsetenv("GIT_DIR");
        unsetenv("GIT_WORK_TREE");
        for (unsigned i = 0; i < n && failures < 50; i++)
                one_repo(i);
        if (failures == 0)
                (void) rm_rf(tmp);
        else
                fprintf(stderr, "%u differences; the repositories are in %s\n", failures, tmp);
        printf("%u repositories compared with git, %u differences\n", n, failures);
        return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
