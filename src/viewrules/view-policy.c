/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"
#include "strv.h"
#include "util.h"
#include "view-policy.h"

#define CONTROL_NAMES "config", "config.worktree", "commondir", "gitdir", "hooks"
static const char *const control_names[] = { CONTROL_NAMES };

/*
 * Names at the top of a git dir that git itself writes, but whose content
 * a later host git command follows, sends to or runs (spec §4.6, "kept in
 * the Domain"): a remote's URL (remotes/, branches/: a host fetch or push
 * of that name goes there, or runs an ext:: command or a remote helper),
 * and an operation stopped half-way (rebase-merge/, rebase-apply/,
 * sequencer/ with its todo list of exec lines and strategy program names,
 * and the pseudo-refs that tell git such an operation is under way), which
 * a host --continue would finish by running what the sandbox wrote.
 */
#define KEPT_NAMES "remotes", "branches", "rebase-merge", "rebase-apply", "sequencer", \
                   "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD"
static const char *const kept_names[] = { KEPT_NAMES, NULL };

/* Whose presence on the host makes a directory look prepared as a git dir (ViewFacts.host_control). */
static const char *const fact_names[] = { CONTROL_NAMES, KEPT_NAMES, NULL };

/*
 * Files that a host program reads, without the developer running project
 * code on purpose, as what to execute or obey (spec §4.6, the table of
 * integration names, each with its reason): protected at any depth.
 */
static const char *const integration_names[] = {
        /* direnv, editors, agents, dev containers */
        ".envrc", ".vscode", ".idea", ".mcp.json", ".claude", ".devcontainer",
        /* hook managers: a hook installed in the git dir reads these at every commit or push */
        ".pre-commit-config.yaml", ".pre-commit-config.yml", "prek.toml",
        ".husky", ".huskyrc", ".huskyrc.json", ".huskyrc.yaml", ".huskyrc.yml", ".huskyrc.js", "husky.config.js",
        "lefthook.yml", "lefthook.yaml", "lefthook.json", "lefthook.jsonc", "lefthook.toml",
        ".lefthook.yml", ".lefthook.yaml", ".lefthook.json", ".lefthook.jsonc", ".lefthook.toml",
        "lefthook-local.yml", "lefthook-local.yaml", "lefthook-local.json", "lefthook-local.jsonc", "lefthook-local.toml",
        ".lefthook-local.yml", ".lefthook-local.yaml", ".lefthook-local.json", ".lefthook-local.jsonc",
        ".lefthook-local.toml", ".lefthook", ".lefthook-local",
        ".overcommit.yml", ".git-hooks", ".githooks",
        "hk.pkl", "hk.local.pkl",
        "captainhook.json", "grumphp.yml", "grumphp.yaml", "grumphp.yml.dist", "grumphp.yaml.dist",
        ".rusty-hook.toml", "rusty-hook.toml",
        /* what a hook runs by name: lint-staged's and commitlint's own files */
        ".lintstagedrc", ".lintstagedrc.json", ".lintstagedrc.yaml", ".lintstagedrc.yml", ".lintstagedrc.js",
        ".lintstagedrc.cjs", ".lintstagedrc.mjs", "lint-staged.config.js", "lint-staged.config.cjs",
        "lint-staged.config.mjs", "lint-staged.config.ts",
        ".commitlintrc", ".commitlintrc.json", ".commitlintrc.yaml", ".commitlintrc.yml", ".commitlintrc.js",
        ".commitlintrc.cjs", ".commitlintrc.mjs", ".commitlintrc.ts", ".commitlintrc.cts", "commitlint.config.js",
        "commitlint.config.cjs", "commitlint.config.mjs", "commitlint.config.ts", "commitlint.config.cts",
        /* editors and agents: settings that start programs, instructions they obey */
        ".cursor", ".cursorrules", ".gemini", ".codex", ".continue", ".windsurf", ".windsurfrules", ".zed", ".helix",
        ".kiro", ".roo", ".amazonq", ".clinerules", ".aider.conf.yml",
        "AGENTS.md", "CLAUDE.md", "CLAUDE.local.md", "GEMINI.md", "copilot-instructions.md",
        ".nvim.lua", ".nvimrc", ".exrc", ".lazy.lua", ".dir-locals.el", ".dir-locals-2.el",
        /* environment managers and git-lfs */
        "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".mise", ".tool-versions", ".lfsconfig",
        NULL,
};

bool view_is_control_name(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(control_names); i++)
                if (streq(name, control_names[i]))
                        return true;
        return false;
}

bool view_is_kept_name(const char *name) {
        return strv_contains(kept_names, name);
}

const char *const *view_kept_names(void) {
        return kept_names;
}

const char *const *view_fact_names(void) {
        return fact_names;
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t n = strlen(s), k = strlen(suffix);
        return n > k && streq(s + n - k, suffix);
}

/*
 * Whether name is kept in the Domain by where it lies, in any directory
 * that could belong to a git dir: an object store's alternates (git reads
 * objects from every directory they name, and a host repack or gc copies
 * those objects into the repository), its commit-graph files and its
 * multi-pack-index (the host's git takes a commit's tree and parents from
 * the first and where an object's bytes are from the second without
 * checking them against the objects: a forged one would make a host
 * checkout write another tree than the commit names, unseen by the report
 * of commits made inside, which reads the objects), and a git dir's
 * info/grafts (it rewrites the parents of commits for every host command,
 * gc's pruning too). The sandbox's git writes its own; the host's stay the
 * host's.
 */
static bool kept_by_place(const ViewDir *d, const char *name) {
        switch (d->place) {
        case VIEW_PLACE_OBJECTS_INFO:
                return streq(name, "alternates") || streq(name, "http-alternates") || streq(name, "commit-graph") ||
                        streq(name, "commit-graphs");
        case VIEW_PLACE_OBJECTS_PACK:
                /* A reverse index maps offsets to objects, a bitmap objects to what
                 * they reach: a host repack copies the bytes a forged one points at
                 * under the names it meant, and a host push or served fetch sends
                 * what a forged bitmap says is reachable. Their temporary files
                 * too: git renames them into place, which stays on one side. */
                return streq(name, "multi-pack-index") || startswith(name, "multi-pack-index-") ||
                        has_suffix(name, ".rev") || has_suffix(name, ".bitmap") || startswith(name, "tmp_rev_") ||
                        startswith(name, "tmp_bitmap_");
        case VIEW_PLACE_INFO:
                return streq(name, "grafts");
        default:
                return false;
        }
}

bool view_is_integration_name(const char *name) {
        for (size_t i = 0; integration_names[i]; i++)
                if (streq(name, integration_names[i]))
                        return true;
        return false;
}

const char *const *view_integration_names(void) {
        return integration_names;
}

/* NAME.lock as NAME, in buf (NAME_MAX + 1 bytes; a longer name is left as it is). */
static const char *lock_base(const char *name, char *buf) {
        size_t n = strlen(name);

        if (n > 5 && n <= NAME_MAX && streq(name + n - 5, ".lock")) {
                memcpy(buf, name, n - 5);
                buf[n - 5] = 0;
                return buf;
        }
        return name;
}

bool view_name_needs_facts(const ViewDir *d, const char *name) {
        char base[NAME_MAX + 1];

        if (d->zone == VIEW_ZONE_PROTECTED || d->zone == VIEW_ZONE_GIT_TOP)
                return false;
        name = lock_base(name, base);
        return streq(name, "HEAD") || view_is_control_name(name) || view_is_kept_name(name);
}

ViewListed view_listed(const ViewLists *l, const ViewDir *d, const char *rel, const char *name) {
        char base[NAME_MAX + 1];
        size_t n;

        if (!l || d->zone == VIEW_ZONE_PROTECTED)
                return VIEW_LISTED_NONE;
        if (rel && l->paths) {
                /* rel ends with name; its lock file is judged as the path without ".lock". */
                n = strlen(rel);
                STRV_FOREACH(p, (char **) l->paths) {
                        size_t k = strlen(*p);
                        if (streq(*p, rel) || (n == k + 5 && (strncmp(rel, *p, k) == 0) && streq(rel + k, ".lock")))
                                return VIEW_LISTED_PROTECTED;
                }
        }
        if (d->zone != VIEW_ZONE_WORK)
                return VIEW_LISTED_NONE;
        name = lock_base(name, base);
        if (strv_contains((const char *const *) l->names, name))
                return VIEW_LISTED_PROTECTED;
        if (strv_contains((const char *const *) l->unprotect, name))
                return VIEW_LISTED_SHARED;
        return VIEW_LISTED_NONE;
}

bool view_index_path_protected(const ViewLists *l, const char *rel) {
        char prefix[PATH_MAX], name[NAME_MAX + 1];
        size_t n = strlen(rel);

        if (n == 0 || n >= sizeof(prefix) || rel[n - 1] == '/')
                return true;    /* a sparse directory entry, or nothing git writes */
        for (const char *s = rel; *s;) {
                const char *e = strchrnul(s, '/');
                ViewListed listed;

                if ((size_t) (e - s) > NAME_MAX)
                        return true;
                memcpy(name, s, e - s);
                name[e - s] = 0;
                memcpy(prefix, rel, e - rel);
                prefix[e - rel] = 0;
                listed = view_listed(l, &(ViewDir) { .zone = VIEW_ZONE_WORK, .top = s == rel }, prefix, name);
                if (listed == VIEW_LISTED_PROTECTED || (listed != VIEW_LISTED_SHARED && view_is_integration_name(name)))
                        return true;
                s = *e ? e + 1 : e;
        }
        return false;
}

bool view_lists_hold_below(const ViewLists *l, const char *rel) {
        size_t n = strlen(rel);

        if (!l || n == 0)
                return false;
        STRV_FOREACH(p, (char **) l->paths)
                if (strncmp(*p, rel, n) == 0 && (*p)[n] == '/')
                        return true;
        return false;
}

int view_protect_entry_normalize(const char *s, char **ret, const char **ret_why) {
        _cleanup_free_ char *out = NULL;
        size_t n = strlen(s);
        bool anchored;

        if (n == 0 || n > VIEW_PROTECT_ENTRY_MAX) {
                *ret_why = n == 0 ? "an empty entry" : "longer than 1024 bytes";
                return -EINVAL;
        }
        for (const char *c = s; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f) {
                        *ret_why = "a control character";
                        return -EINVAL;
                }
        if (s[0] == '!') {
                if (!view_is_integration_name(s + 1)) {
                        *ret_why = "\"!\" removes only a built-in name (lazaret-view(8) lists them)";
                        return -EINVAL;
                }
                out = strdup(s);
                goto done;
        }
        while (n > 1 && s[n - 1] == '/')
                n--;
        anchored = s[0] == '/' || memchr(s, '/', n);
        if (asprintf(&out, "%s%.*s", anchored && s[0] != '/' ? "/" : "", (int) n, s) < 0)
                return -ENOMEM;
        if (streq(out, "/")) {
                *ret_why = "the workspace itself";
                return -EINVAL;
        }
        for (const char *c = out + anchored; *c;) {
                const char *e = strchrnul(c, '/');
                size_t k = e - c;

                if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && (strncmp(c, "..", 2) == 0))) {
                        *ret_why = "an empty, \".\" or \"..\" component";
                        return -EINVAL;
                }
                if (k > NAME_MAX) {
                        *ret_why = "a component longer than 255 bytes";
                        return -EINVAL;
                }
                if (k == 4 && (strncmp(c, ".git", 4) == 0)) {
                        *ret_why = "\".git\": git dirs are protected by the view's own rule";
                        return -EINVAL;
                }
                c = *e ? e + 1 : e;
        }
done:
        if (!out)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

int view_lists_add_profile(char *const *entries, char ***paths, char ***names, char ***unprotect) {
        int r;

        STRV_FOREACH(e, (char **) entries) {
                if ((*e)[0] == '!')
                        r = strv_extend(unprotect, *e + 1);
                else if ((*e)[0] == '/')
                        r = strv_extend(paths, *e + 1);
                else
                        r = strv_extend(names, *e);
                if (r < 0)
                        return r;
        }
        return 0;
}

ViewClass view_name_class(const ViewDir *d, const ViewFacts *f, const char *name, bool is_dir, ViewListed listed) {
        static const ViewFacts none = {};
        char base[NAME_MAX + 1];
        bool control, kept;

        /* A lock file is renamed onto the file it locks: it lives where that file does. */
        name = lock_base(name, base);
        control = view_is_control_name(name);
        kept = view_is_kept_name(name);

        if (!f)
                f = &none;
        if (d->zone != VIEW_ZONE_PROTECTED && kept_by_place(d, name))
                return VIEW_PROTECTED;
        switch (d->zone) {
        case VIEW_ZONE_PROTECTED:
                return VIEW_PROTECTED;

        case VIEW_ZONE_GIT_TOP:
                /* The host's own repository: its configuration is the host's. The
                 * kept names are the sandbox's git's to write: protected, not read-only. */
                if (streq(name, "hooks") || kept)
                        return VIEW_PROTECTED;
                if (control)
                        return VIEW_READONLY;
                /* A file the host's git configuration includes, say. */
                return listed == VIEW_LISTED_PROTECTED ? VIEW_PROTECTED : VIEW_SHARED;

        case VIEW_ZONE_WORK:
                if (listed == VIEW_LISTED_PROTECTED || (listed != VIEW_LISTED_SHARED && view_is_integration_name(name)))
                        return VIEW_PROTECTED;
                if (streq(name, ".git"))
                        /* A directory is a repository's storage; a file or a
                         * symbolic link redirects git's search. */
                        return is_dir ? VIEW_SHARED : VIEW_PROTECTED;
                if (streq(name, "HEAD"))
                        /* Only a repository the host already had here keeps its HEAD shared. */
                        return f->host_head ? VIEW_SHARED : VIEW_PROTECTED;
                if ((control || kept) && f->holds_head)
                        return VIEW_PROTECTED;
                return VIEW_SHARED;

        case VIEW_ZONE_GIT:
                if (streq(name, "HEAD")) {
                        if (f->host_head)
                                return VIEW_SHARED;
                        /* A git dir whose control names the host already
                         * holds would be one the sandbox prepared. */
                        return d->head_allowed && !f->host_control ? VIEW_SHARED : VIEW_PROTECTED;
                }
                if (listed == VIEW_LISTED_PROTECTED || ((control || kept) && (d->gitpos || f->holds_head)))
                        return VIEW_PROTECTED;
                return VIEW_SHARED;

        default:
                assert_not_reached();
        }
}

static int hex_digit(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool all_hex(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (hex_digit(s[i]) < 0)
                        return false;
        return true;
}

ViewObjectKind view_object_kind(const ViewDir *d, const char *name, char *ret_hex) {
        static const char digits[] = "0123456789abcdef";
        size_t n = strlen(name);

        if (d->place == VIEW_PLACE_OBJECTS_LOOSE && (n == 38 || n == 62) && all_hex(name, n)) {
                ret_hex[0] = digits[d->fan >> 4];
                ret_hex[1] = digits[d->fan & 15];
                memcpy(ret_hex + 2, name, n + 1);
                return VIEW_OBJECT_LOOSE;
        }
        if (d->place == VIEW_PLACE_OBJECTS_PACK && startswith(name, "pack-")) {
                const char *e = strchrnul(name + 5, '.');
                size_t k = (size_t) (e - name - 5);

                if ((k == 40 || k == 64) && all_hex(name + 5, k) && (streq(e, ".pack") || streq(e, ".idx"))) {
                        memcpy(ret_hex, name + 5, k);
                        ret_hex[k] = 0;
                        return streq(e, ".pack") ? VIEW_OBJECT_PACK : VIEW_OBJECT_IDX;
                }
        }
        return VIEW_OBJECT_NONE;
}

/* Where name, a directory in d, lies in an object store (its info/, pack/ or a fan-out directory) or a git dir's info/ (kept_by_place()). */
static ViewPlace place_of(const ViewDir *d, const char *name, uint8_t *ret_fan) {
        *ret_fan = 0;
        if (streq(name, "objects"))
                return VIEW_PLACE_OBJECTS;
        if (d->place == VIEW_PLACE_OBJECTS && strlen(name) == 2 && all_hex(name, 2)) {
                *ret_fan = (uint8_t) (hex_digit(name[0]) << 4 | hex_digit(name[1]));
                return VIEW_PLACE_OBJECTS_LOOSE;
        }
        if (streq(name, "info") && d->place == VIEW_PLACE_OBJECTS)
                return VIEW_PLACE_OBJECTS_INFO;
        if (streq(name, "pack") && d->place == VIEW_PLACE_OBJECTS)
                return VIEW_PLACE_OBJECTS_PACK;
        if (streq(name, "info") && d->gitpos)
                return VIEW_PLACE_INFO;
        return VIEW_PLACE_NONE;
}

ViewDir view_child_dir(const ViewDir *d, const char *name, ViewClass c) {
        uint8_t fan;
        ViewPlace place = place_of(d, name, &fan);

        if (c == VIEW_PROTECTED || d->zone == VIEW_ZONE_PROTECTED)
                return (ViewDir) { .zone = VIEW_ZONE_PROTECTED };

        switch (d->zone) {
        case VIEW_ZONE_WORK:
                if (streq(name, ".git"))
                        return (ViewDir) { .zone = d->top ? VIEW_ZONE_GIT_TOP : VIEW_ZONE_GIT, .gitpos = true,
                                           .head_allowed = true };
                /* An object store anywhere: a bare repository of the host's may hold it. */
                return (ViewDir) { .zone = VIEW_ZONE_WORK, .place = place, .fan = fan };

        case VIEW_ZONE_GIT_TOP:
        case VIEW_ZONE_GIT:
                /* Where git itself makes git dirs. */
                if (d->gitpos && streq(name, "modules"))
                        return (ViewDir) { .zone = VIEW_ZONE_GIT, .gitpos = true, .head_allowed = true, .modules = true };
                if (d->gitpos && streq(name, "worktrees"))
                        return (ViewDir) { .zone = VIEW_ZONE_GIT, .worktrees = true };
                if (d->gitpos && streq(name, "logs"))
                        return (ViewDir) { .zone = VIEW_ZONE_GIT, .head_allowed = true };
                if (d->gitpos && (streq(name, "objects") || streq(name, "refs") || streq(name, "info")))
                        return (ViewDir) { .zone = VIEW_ZONE_GIT, .place = place, .fan = fan };
                if (d->modules)
                        /* A submodule's git dir, or one more component of a
                         * submodule name with a slash in it. */
                        return (ViewDir) { .zone = VIEW_ZONE_GIT, .gitpos = true, .head_allowed = true, .modules = true };
                if (d->worktrees)
                        /* A linked worktree's git dir. */
                        return (ViewDir) { .zone = VIEW_ZONE_GIT, .gitpos = true, .head_allowed = true };
                return (ViewDir) { .zone = VIEW_ZONE_GIT, .place = place, .fan = fan };

        default:
                break;
        }
        return (ViewDir) { .zone = VIEW_ZONE_GIT };
}

bool view_dir_equal(const ViewDir *a, const ViewDir *b) {
        return a->zone == b->zone && a->top == b->top && a->gitpos == b->gitpos && a->head_allowed == b->head_allowed &&
               a->modules == b->modules && a->worktrees == b->worktrees && a->place == b->place && a->fan == b->fan;
}

ViewClass view_ignored_class(const ViewDir *d, ViewClass c, const ViewIgnoreFacts *f) {
        if (c != VIEW_SHARED || d->zone != VIEW_ZONE_WORK || !f->isolate)
                return c;
        if (f->excluded && !f->tracked && f->shared)
                /* The developer's word (shared_ignored) wins over the sandbox's earlier copy. */
                return VIEW_READONLY;
        if (f->in_state)
                return VIEW_IGNORED;
        if (f->excluded && !f->tracked)
                return VIEW_IGNORED;
        return VIEW_SHARED;
}

bool view_path_listed(char *const *list, const char *rel) {
        for (char *const *p = list; p && *p; p++) {
                size_t n = strlen(*p);
                if (n > 0 && strncmp(rel, *p, n) == 0 && (rel[n] == 0 || rel[n] == '/'))
                        return true;
        }
        return false;
}

const char *view_class_to_string(ViewClass c) {
        static const char *const table[_VIEW_CLASS_MAX] = {
                [VIEW_SHARED] = "shared",
                [VIEW_READONLY] = "read-only",
                [VIEW_PROTECTED] = "protected",
                [VIEW_IGNORED] = "ignored",
        };
        return c >= 0 && c < _VIEW_CLASS_MAX ? table[c] : NULL;
}

const char *view_zone_to_string(ViewZone z) {
        static const char *const table[_VIEW_ZONE_MAX] = {
                [VIEW_ZONE_WORK] = "work",
                [VIEW_ZONE_GIT_TOP] = "git-top",
                [VIEW_ZONE_GIT] = "git",
                [VIEW_ZONE_PROTECTED] = "protected",
        };
        return z >= 0 && z < _VIEW_ZONE_MAX ? table[z] : NULL;
}
