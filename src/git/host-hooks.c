/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "host-hooks.h"
#include "macro.h"
#include "strv.h"
#include "util.h"

/* The hooks a developer's own git command starts, and what that command is. */
static const struct {
        const char *hook, *action;
} hooks[] = {
        { "pre-commit", "a commit" },         { "prepare-commit-msg", "a commit" },
        { "commit-msg", "a commit" },         { "post-commit", "a commit" },
        { "pre-merge-commit", "a merge" },    { "pre-push", "a push" },
        { "post-checkout", "a checkout" },    { "post-merge", "a merge or pull" },
        { "pre-rebase", "a rebase" },         { "post-rewrite", "a rebase or amend" },
};

/* Programs that run what the project holds: its scripts, tests, build files. */
static const char *const project_runners[] = {
        "npm", "npx", "yarn", "pnpm", "bun", "deno", "make", "just", "pytest", "tox", "nox", "cargo",
        "gradle", "mvn", "rake", "bundle", "composer", "poetry", "uv", "hatch", "pdm", NULL,
};

static bool ends_with(const char *s, size_t n, const char *suffix) {
        size_t k = strlen(suffix);
        return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Whether one word of a command line names project code. */
static bool word_runs_project(const char *w, size_t n, const char *next, size_t next_n) {
        static const char *const scripts[] = { ".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", NULL };

        if (n == 0 || memchr(w, '$', n))
                return false;
        for (const char *const *p = project_runners; *p; p++)
                if (n == strlen(*p) && memcmp(w, *p, n) == 0)
                        return true;
        if (n == 2 && memcmp(w, "go", 2) == 0)
                return (next_n == 4 && memcmp(next, "test", 4) == 0) || (next_n == 3 && memcmp(next, "run", 3) == 0) ||
                       (next_n == 8 && memcmp(next, "generate", 8) == 0);
        if (ends_with(w, n, "gradlew") || ends_with(w, n, "mvnw"))
                return true;
        if (n > 2 && w[0] == '.' && w[1] == '/')
                return true;
        /* A relative path to a script: the workspace's. */
        if (w[0] != '/' && w[0] != '-' && w[0] != '~' && memchr(w, '/', n))
                for (const char *const *p = scripts; *p; p++)
                        if (ends_with(w, n, *p))
                                return true;
        return false;
}

static bool is_sep(char c) {
        return isspace((unsigned char) c) || strchr(";&|()`'\"=", c);
}

static bool line_runs_project(const char *l, size_t n) {
        size_t i = 0;

        while (i < n) {
                size_t s, e, t, u;

                while (i < n && is_sep(l[i]))
                        i++;
                s = i;
                while (i < n && !is_sep(l[i]))
                        i++;
                e = i;
                if (e > s && l[s] == '#')
                        return false;           /* a comment from here */
                t = i;
                while (t < n && is_sep(l[t]))
                        t++;
                u = t;
                while (u < n && !is_sep(l[u]))
                        u++;
                if (word_runs_project(l + s, e - s, l + t, u - t))
                        return true;
        }
        return false;
}

int host_hooks_command(const char *text, const char *only_after, char **ret) {
        for (const char *l = text; *l;) {
                const char *end = strchrnul(l, '\n'), *s = l, *next = *end ? end + 1 : end;
                size_t n;

                while (s < end && isspace((unsigned char) *s))
                        s++;
                if (s < end && *s == '-' && only_after)
                        for (s++; s < end && isspace((unsigned char) *s); s++)
                                ;       /* a YAML list item: "- run: ..." */
                if (only_after) {
                        size_t k = strlen(only_after);
                        if ((size_t) (end - s) < k || memcmp(s, only_after, k) != 0) {
                                l = next;
                                continue;
                        }
                        for (s += k; s < end && isspace((unsigned char) *s); s++)
                                ;
                }
                n = end - s;
                while (n > 0 && isspace((unsigned char) s[n - 1]))
                        n--;
                if (n > 0 && *s != '#' && line_runs_project(s, n)) {
                        char *c = strndup(s, n < 60 ? n : 60);
                        if (!c)
                                return -ENOMEM;
                        *ret = c;
                        return 0;
                }
                l = next;
        }
        *ret = NULL;
        return 0;
}

/* The text of a regular file below dirfd, nothing followed; NULL (and 0) when it is not there or not readable. */
static int read_beneath(int dirfd, const char *path, char **ret) {
        _cleanup_close_ int fd = openat_beneath(dirfd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, false);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        ssize_t k;

        *ret = NULL;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        buf = malloc(HOST_HOOKS_FILE_MAX + 1);
        if (!buf)
                return -ENOMEM;
        k = read(fd, buf, HOST_HOOKS_FILE_MAX);
        if (k < 0)
                return 0;
        buf[k] = 0;
        if (memchr(buf, 0, k))
                return 0;               /* a binary hook: not read */
        *ret = TAKE_PTR(buf);
        return 0;
}

static int add_line(char ***lines, const char *where, const char *cmd, const char *action) {
        if (strv_length(*lines) >= HOST_HOOKS_LINES_MAX)
                return 0;
        return strv_extendf(lines, "%s runs `%s`: %s made on the host runs what the sandbox wrote; make it inside, "
                            "or review the changes first", where, cmd, action);
}

/* A hook manager's configuration, for the hook that runs it. */
static int scan_config(int wfd, const char *hook, const char *action, const char *const *files, const char *key,
                       char ***lines) {
        for (const char *const *f = files; *f; f++) {
                _cleanup_free_ char *text = NULL, *cmd = NULL, *where = NULL;
                int r = read_beneath(wfd, *f, &text);

                if (r < 0)
                        return r;
                if (!text)
                        continue;
                r = host_hooks_command(text, key, &cmd);
                if (r < 0)
                        return r;
                if (!cmd)
                        continue;
                if (asprintf(&where, "your host's %s hook, through %s,", hook, *f) < 0)
                        return -ENOMEM;
                return add_line(lines, where, cmd, action);
        }
        return 0;
}

int host_hooks_scan(int workspace_fd, char *const *hook_dirs, char ***ret_lines) {
        static const char *const pre_commit[] = { ".pre-commit-config.yaml", ".pre-commit-config.yml", NULL };
        static const char *const lefthook[] = { "lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml",
                                                ".config/lefthook.yml", ".config/lefthook.yaml", NULL };
        _cleanup_strv_free_ char **lines = NULL;
        bool pre_commit_seen = false, lefthook_seen = false;
        int r;

        STRV_FOREACH(d, (char **) hook_dirs)
                for (size_t i = 0; i < ELEMENTSOF(hooks); i++) {
                        _cleanup_free_ char *path = NULL, *text = NULL, *cmd = NULL, *where = NULL;

                        if (asprintf(&path, "%s/%s", *d, hooks[i].hook) < 0)
                                return -ENOMEM;
                        r = read_beneath(workspace_fd, path, &text);
                        if (r < 0)
                                return r;
                        if (!text)
                                continue;
                        /* A hook manager's own hook runs the manager: its configuration says what runs. */
                        if (strstr(text, "pre_commit") || strstr(text, "pre-commit.com")) {
                                if (!pre_commit_seen) {
                                        pre_commit_seen = true;
                                        r = scan_config(workspace_fd, hooks[i].hook, hooks[i].action, pre_commit,
                                                        "entry:", &lines);
                                        if (r < 0)
                                                return r;
                                }
                                continue;
                        }
                        if (strstr(text, "lefthook")) {
                                if (!lefthook_seen) {
                                        lefthook_seen = true;
                                        r = scan_config(workspace_fd, hooks[i].hook, hooks[i].action, lefthook, "run:",
                                                        &lines);
                                        if (r < 0)
                                                return r;
                                }
                                continue;
                        }
                        size_t dn = strlen(*d);
                        if ((dn >= 2 && streq(*d + dn - 2, "/_")) || strstr(text, "husky")) {
                                /* husky 9's wrapper in <dir>/_ (core.hooksPath) runs <dir>/<hook>. */
                                _cleanup_free_ char *own = NULL, *hp = NULL;

                                if (dn >= 2 && streq(*d + dn - 2, "/_") ?
                                            asprintf(&hp, "%.*s/%s", (int) dn - 2, *d, hooks[i].hook) < 0 :
                                            asprintf(&hp, ".husky/%s", hooks[i].hook) < 0)
                                        return -ENOMEM;
                                r = read_beneath(workspace_fd, hp, &own);
                                if (r < 0)
                                        return r;
                                free(text);
                                text = TAKE_PTR(own);
                                free(path);
                                path = TAKE_PTR(hp);
                                if (!text)
                                        continue;
                        }
                        r = host_hooks_command(text, NULL, &cmd);
                        if (r < 0)
                                return r;
                        if (!cmd)
                                continue;
                        if (asprintf(&where, "your host's %s hook (%s)", hooks[i].hook, path) < 0)
                                return -ENOMEM;
                        r = add_line(&lines, where, cmd, hooks[i].action);
                        if (r < 0)
                                return r;
                }
        *ret_lines = TAKE_PTR(lines);
        return 0;
}
