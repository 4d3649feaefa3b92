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
#include "path-util.h"
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

/* The hook managers whose own hook runs what their configuration names: its files, and the key of a command line. */
static const char *const pre_commit_files[] = { ".pre-commit-config.yaml", ".pre-commit-config.yml", NULL };
static const char *const lefthook_files[] = { "lefthook.yml", ".lefthook.yml", "lefthook.yaml", ".lefthook.yaml",
                                              ".config/lefthook.yml", ".config/lefthook.yaml", NULL };

typedef enum HookManager {
        HOOK_MANAGER_NONE,
        HOOK_MANAGER_PRE_COMMIT,
        HOOK_MANAGER_LEFTHOOK,
} HookManager;

/* Which manager a hook's text runs, and where its configuration is. */
static HookManager hook_manager(const char *text, const char *const **ret_files, const char **ret_key) {
        if (strstr(text, "pre_commit") || strstr(text, "pre-commit.com")) {
                *ret_files = pre_commit_files;
                *ret_key = "entry:";
                return HOOK_MANAGER_PRE_COMMIT;
        }
        if (strstr(text, "lefthook")) {
                *ret_files = lefthook_files;
                *ret_key = "run:";
                return HOOK_MANAGER_LEFTHOOK;
        }
        *ret_files = NULL;
        *ret_key = NULL;
        return HOOK_MANAGER_NONE;
}

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
        _cleanup_strv_free_ char **lines = NULL;
        bool seen[3] = {};
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
                        const char *const *files, *key;
                        HookManager m = hook_manager(text, &files, &key);
                        if (m != HOOK_MANAGER_NONE) {
                                if (!seen[m]) {
                                        seen[m] = true;
                                        r = scan_config(workspace_fd, hooks[i].hook, hooks[i].action, files, key, &lines);
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

/* Every hook git may run in a clone (githooks(5)), for the paths they name. */
static const char *const all_hooks[] = {
        "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
        "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
        "pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
        "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
        "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
        "post-index-change", NULL,
};

static bool is_path_sep(char c) {
        return isspace((unsigned char) c) || strchr(";&|<>()'\"", c);
}

/* The end of one word from s: separators count only outside $(...), ${...} and `...`. */
static const char *word_end(const char *s, const char *end) {
        unsigned depth = 0;
        bool tick = false;

        for (; s < end; s++) {
                if (*s == '`') {
                        tick = !tick;
                        continue;
                }
                if (*s == '$' && s + 1 < end && (s[1] == '(' || s[1] == '{')) {
                        depth++;
                        s++;
                        continue;
                }
                if (depth > 0 && (*s == ')' || *s == '}')) {
                        depth--;
                        continue;
                }
                if (depth == 0 && !tick && is_path_sep(*s))
                        break;
        }
        return s;
}

static bool path_chars_ok(const char *p) {
        for (; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("._-+@,/", *p))
                        return false;
        return true;
}

/*
 * One word, quotes removed, as a workspace-relative path in *ret (NULL: it
 * names none). The rules are host_hooks_named_paths()'s.
 */
static int word_path(const char *w, size_t n, const char *hook_dir, const char *workspace_path, char **ret) {
        _cleanup_free_ char *word = NULL, *joined = NULL, *simple = NULL;
        const char *rest, *e;
        bool beside_hook = false;
        size_t k = 0;

        *ret = NULL;
        word = malloc(n + 1);
        if (!word)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (w[i] != '"' && w[i] != '\'')
                        word[k++] = w[i];
        word[k] = 0;
        rest = word;

        if (rest[0] == '-') {
                /* --config=tools/x.yml: the value. */
                e = strchr(rest, '=');
                if (!e)
                        return 0;
                rest = e + 1;
        }
        e = strrchr(rest, '$');
        if (e || strchr(rest, '`')) {
                /* After the last expansion: "$(git rev-parse --show-toplevel)/x", "$ROOT/x", "$(dirname "$0")/x". */
                const char *after = NULL;

                for (const char *p = rest; *p; p++)
                        if ((*p == ')' || *p == '}' || *p == '`') && p[1] == '/')
                                after = p + 1;
                if (e) {
                        const char *v = e + 1;
                        while (isalnum((unsigned char) *v) || *v == '_')
                                v++;
                        if (v > e + 1 && *v == '/' && (!after || v > after))
                                after = v;
                }
                if (!after)
                        return 0;
                beside_hook = strstr(rest, "dirname") && strstr(rest, "$0") && after > strstr(rest, "dirname");
                rest = after + 1;
                if (beside_hook && !hook_dir)
                        return 0;
        } else if (rest[0] == '/') {
                size_t wn = workspace_path ? strlen(workspace_path) : 0;

                if (wn == 0 || strncmp(rest, workspace_path, wn) != 0 || rest[wn] != '/')
                        return 0;
                rest += wn + 1;
        } else if (!strchr(rest, '/'))
                return 0;               /* a bare word: a program, an argument */

        if (!*rest || rest[0] == '/' || rest[0] == '~' || strstr(rest, "://") || !path_chars_ok(rest))
                return 0;
        /* Lexically below the workspace, as a path from its top. */
        if (asprintf(&joined, "/w/%s/%s", beside_hook ? hook_dir : ".", rest) < 0)
                return -ENOMEM;
        if (path_simplify(joined, NULL, &simple) < 0)
                return 0;
        if (strncmp(simple, "/w/", 3) != 0)
                return 0;       /* it left the workspace ("/.." simplifies to "/") */
        if (streq(simple + 3, ".git") || strncmp(simple + 3, ".git/", 5) == 0)
                return 0;       /* the git dir: the view's own to protect */
        *ret = strdup(simple + 3);
        return *ret ? 0 : -ENOMEM;
}

int host_hooks_named_paths(const char *text, const char *only_after, const char *hook_dir,
                           const char *workspace_path, char ***paths) {
        int added = 0;

        for (const char *l = text; *l;) {
                const char *end = strchrnul(l, '\n'), *s = l, *next = *end ? end + 1 : end;

                while (s < end && isspace((unsigned char) *s))
                        s++;
                if (only_after) {
                        size_t k = strlen(only_after);

                        if (s < end && *s == '-')
                                for (s++; s < end && isspace((unsigned char) *s); s++)
                                        ;
                        if ((size_t) (end - s) < k || memcmp(s, only_after, k) != 0) {
                                l = next;
                                continue;
                        }
                        s += k;
                }
                while (s < end) {
                        const char *e;

                        while (s < end && is_path_sep(*s))
                                s++;
                        if (s >= end || *s == '#')
                                break;  /* a comment from here */
                        e = word_end(s, end);
                        if (e == s)
                                e++;
                        if (strv_length(*paths) >= HOST_HOOKS_PATHS_MAX)
                                return added;
                        _cleanup_free_ char *p = NULL;
                        int r = word_path(s, e - s, hook_dir, workspace_path, &p);
                        if (r < 0)
                                return r;
                        if (p && !strv_contains((const char *const *) *paths, p)) {
                                r = strv_consume(paths, TAKE_PTR(p));
                                if (r < 0)
                                        return r;
                                added++;
                        }
                        s = e;
                }
                l = next;
        }
        return added;
}

int host_hooks_scan_paths(int workspace_fd, int dir_fd, const char *hook_dir, const char *workspace_path,
                          char ***paths) {
        bool seen[3] = {};
        int added = 0, r;

        for (const char *const *h = all_hooks; *h; h++) {
                _cleanup_free_ char *text = NULL;
                const char *const *config, *key;
                HookManager m;

                r = read_beneath(dir_fd, *h, &text);
                if (r < 0)
                        return r;
                if (!text)
                        continue;
                r = host_hooks_named_paths(text, NULL, hook_dir, workspace_path, paths);
                if (r < 0)
                        return r;
                added += r;
                m = hook_manager(text, &config, &key);
                if (seen[m])
                        config = NULL;          /* read once */
                seen[m] = true;
                for (const char *const *f = config; f && *f; f++) {
                        _cleanup_free_ char *conf = NULL;

                        r = read_beneath(workspace_fd, *f, &conf);
                        if (r < 0)
                                return r;
                        if (!conf)
                                continue;
                        r = host_hooks_named_paths(conf, key, NULL, workspace_path, paths);
                        if (r < 0)
                                return r;
                        added += r;
                }
        }
        return added;
}

/*
 * The workspace path that link (the link's text), met at the
 * workspace-relative path at (dir: at's directory, "" for the top), stands
 * for, with rest (what followed at in the walked path, or "") after it:
 * lexically simplified, below the top; NULL in *ret when it leaves the
 * workspace, lies in .git or holds a control byte.
 */
static int link_resolved(const char *link, const char *dir, const char *rest, const char *workspace_path, char **ret) {
        _cleanup_free_ char *joined = NULL, *simple = NULL;
        const char *target = link;

        *ret = NULL;
        for (const char *c = link; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return 0;
        if (target[0] == '/') {
                size_t wn = workspace_path ? strlen(workspace_path) : 0;

                if (wn == 0 || strncmp(target, workspace_path, wn) != 0 || (target[wn] != '/' && target[wn] != 0))
                        return 0;       /* outside the workspace: not the view's to protect */
                target += wn;
                dir = "";
        }
        if (asprintf(&joined, "/w/%s/%s/%s", dir, target, rest) < 0)
                return -ENOMEM;
        if (path_simplify(joined, NULL, &simple) < 0)
                return 0;
        if (strncmp(simple, "/w/", 3) != 0)
                return 0;
        if (streq(simple + 3, ".git") || strncmp(simple + 3, ".git/", 5) == 0)
                return 0;
        *ret = strdup(simple + 3);
        return *ret ? 0 : -ENOMEM;
}

/*
 * One step of path's walk: the first component (from the top) that is a
 * symbolic link, and the path it resolves to in *ret (NULL when none is a
 * link, when the walk cannot go on, or when it leaves what can be protected).
 */
static int link_step(int workspace_fd, const char *path, const char *workspace_path, char **ret) {
        size_t len = strlen(path);

        *ret = NULL;
        for (size_t end = 0; end < len;) {
                _cleanup_free_ char *dir = NULL;
                _cleanup_close_ int dfd = -EBADF;
                const char *name = path + end, *slash = strchr(name, '/');
                size_t nlen = slash ? (size_t) (slash - name) : strlen(name);
                char buf[4096], comp[256];
                ssize_t n;

                if (nlen == 0 || nlen >= sizeof(comp))
                        return 0;
                memcpy(comp, name, nlen);
                comp[nlen] = 0;
                dir = strndup(path, end > 0 ? end - 1 : 0);
                if (!dir)
                        return -ENOMEM;
                /* The directories so far hold no link: opened without following one. */
                dfd = openat_beneath(workspace_fd, dir, O_PATH | O_DIRECTORY, 0, false);
                if (dfd < 0)
                        return 0;
                n = readlinkat(dfd, comp, buf, sizeof(buf) - 1);
                if (n >= 0) {
                        buf[n] = 0;
                        return link_resolved(buf, dir, slash ? slash + 1 : "", workspace_path, ret);
                }
                if (errno != EINVAL)
                        return 0;       /* missing or unreadable: git would run nothing there */
                end += nlen + 1;
        }
        return 0;
}

int host_hooks_link_targets(int workspace_fd, const char *workspace_path, char ***paths) {
        size_t n = strv_length(*paths);
        int added = 0, r;

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *cur = strdup((*paths)[i]);

                if (!cur)
                        return -ENOMEM;
                for (unsigned hop = 0; hop < HOST_HOOKS_LINK_HOPS; hop++) {
                        char *next = NULL;

                        r = link_step(workspace_fd, cur, workspace_path, &next);
                        if (r < 0)
                                return r;
                        if (!next)
                                break;
                        free(cur);
                        cur = next;
                        if (strv_contains((const char *const *) *paths, cur))
                                continue;
                        if (strv_length(*paths) >= HOST_HOOKS_PATHS_MAX)
                                return added;
                        r = strv_extend(paths, cur);
                        if (r < 0)
                                return r;
                        added++;
                }
        }
        return added;
}
