/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "view-policy.h"

/*
 * The class of a workspace-relative path, walking it from the top as the
 * view does: each directory's ViewDir from its parent's, the same facts
 * for every directory on the way (what the case says the daemon saw).
 */
static ViewClass classify(const char *path, ViewFacts f, bool is_dir) {
        ViewDir d = VIEW_DIR_TOP;
        char buf[512], *save = NULL, *c, *next;

        cr_assert_lt(strlen(path), sizeof(buf));
        strcpy(buf, path);
        c = strtok_r(buf, "/", &save);
        for (;;) {
                ViewClass k;

                next = strtok_r(NULL, "/", &save);
                k = view_name_class(&d, &f, c, next ? true : is_dir, false);
                if (!next)
                        return k;
                d = view_child_dir(&d, c, k);
                c = next;
        }
}

#define EXPECT(path, facts, is_dir, want)                                                                   \
        cr_expect_eq(classify(path, (ViewFacts) facts, is_dir), want, "%s: %s, want %s", path,           \
                     view_class_to_string(classify(path, (ViewFacts) facts, is_dir)), view_class_to_string(want))

#define NONE {}
#define HOLDS_HEAD { .holds_head = true }
#define HOST_HEAD { .holds_head = true, .host_head = true }
#define HOST_CONTROL { .host_control = true }

Test(view_policy, top_git_dir) {
        EXPECT(".git", NONE, true, VIEW_SHARED);
        EXPECT(".git/config", NONE, false, VIEW_READONLY);
        EXPECT(".git/config.lock", NONE, false, VIEW_READONLY);
        EXPECT(".git/config.worktree", NONE, false, VIEW_READONLY);
        EXPECT(".git/commondir", NONE, false, VIEW_READONLY);
        EXPECT(".git/gitdir", NONE, false, VIEW_READONLY);
        EXPECT(".git/hooks", NONE, true, VIEW_PROTECTED);
        EXPECT(".git/hooks/pre-commit", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/HEAD", HOST_HEAD, false, VIEW_SHARED);
        EXPECT(".git/HEAD.lock", HOST_HEAD, false, VIEW_SHARED);
        EXPECT(".git/index", NONE, false, VIEW_SHARED);
        EXPECT(".git/index.lock", NONE, false, VIEW_SHARED);
        EXPECT(".git/objects/ab/cdef", NONE, false, VIEW_SHARED);
        EXPECT(".git/packed-refs", NONE, false, VIEW_SHARED);
}

Test(view_policy, refs_named_like_control_files_stay_shared) {
        EXPECT(".git/refs/heads/config", NONE, false, VIEW_SHARED);
        EXPECT(".git/refs/heads/hooks", NONE, false, VIEW_SHARED);
        EXPECT(".git/logs/refs/heads/config", NONE, false, VIEW_SHARED);
        /* git never writes these; a HEAD there would make a git dir */
        EXPECT(".git/refs/heads/HEAD", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/HEAD", NONE, false, VIEW_PROTECTED);
}

Test(view_policy, logs_hold_a_reflog_head) {
        EXPECT(".git/logs/HEAD", NONE, false, VIEW_SHARED);
        /* with HEAD there, the directory could pass for a git dir */
        EXPECT(".git/logs/config", HOLDS_HEAD, false, VIEW_PROTECTED);
        EXPECT(".git/logs/hooks", HOLDS_HEAD, true, VIEW_PROTECTED);
        /* a control file already there on the host: the HEAD goes to Domain state */
        EXPECT(".git/logs/HEAD", HOST_CONTROL, false, VIEW_PROTECTED);
}

Test(view_policy, submodule_and_worktree_git_dirs) {
        EXPECT(".git/modules/mod/config", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/modules/mod/config.lock", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/modules/mod/hooks/post-checkout", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/modules/mod/commondir", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/modules/a/b/config", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/modules/mod/modules/inner/config", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/modules/mod/HEAD", NONE, false, VIEW_SHARED);
        EXPECT(".git/modules/mod/HEAD", HOST_CONTROL, false, VIEW_PROTECTED);
        EXPECT(".git/modules/mod/index", NONE, false, VIEW_SHARED);
        EXPECT(".git/modules/mod/refs/heads/config", NONE, false, VIEW_SHARED);
        EXPECT(".git/worktrees/w/commondir", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/worktrees/w/gitdir", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/worktrees/w/config.worktree", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/worktrees/w/HEAD", NONE, false, VIEW_SHARED);
        EXPECT(".git/worktrees/HEAD", NONE, false, VIEW_PROTECTED);
}

Test(view_policy, git_dirs_made_elsewhere) {
        /* a nested repository: its storage shared, its control files not */
        EXPECT("sub/.git", NONE, true, VIEW_SHARED);
        EXPECT("sub/.git/config", NONE, false, VIEW_PROTECTED);
        EXPECT("sub/.git/hooks/pre-commit", NONE, false, VIEW_PROTECTED);
        EXPECT("sub/.git/HEAD", NONE, false, VIEW_SHARED);
        EXPECT("sub/.git/objects/pack/x.pack", NONE, false, VIEW_SHARED);
        /* a gitfile or a symbolic link named .git redirects git's search */
        EXPECT("sub/.git", NONE, false, VIEW_PROTECTED);
        EXPECT(".git", NONE, false, VIEW_PROTECTED);
        /* a bare repository: no HEAD of the sandbox's reaches the host */
        EXPECT("bare.git/HEAD", NONE, false, VIEW_PROTECTED);
        EXPECT("bare.git/HEAD.lock", NONE, false, VIEW_PROTECTED);
        EXPECT("bare.git/config", HOLDS_HEAD, false, VIEW_PROTECTED);
        EXPECT("bare.git/config", NONE, false, VIEW_SHARED);
        /* one the host already had keeps its HEAD; its config is still protected */
        EXPECT("bare.git/HEAD", HOST_HEAD, false, VIEW_SHARED);
        EXPECT("bare.git/config", HOST_HEAD, false, VIEW_PROTECTED);
}

Test(view_policy, kept_in_the_domain) {
        /* Sequencer state and remote definitions: kept wherever git dirs are, the top one included. */
        EXPECT(".git/rebase-merge", NONE, true, VIEW_PROTECTED);
        EXPECT(".git/rebase-merge/git-rebase-todo", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/rebase-apply/patch", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/sequencer/todo", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/CHERRY_PICK_HEAD", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/CHERRY_PICK_HEAD.lock", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/REVERT_HEAD", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/REBASE_HEAD", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/remotes/origin", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/branches/origin", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/worktrees/w/rebase-merge/done", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/modules/mod/sequencer/opts", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/modules/mod/remotes/x", NONE, false, VIEW_PROTECTED);
        EXPECT("sub/.git/rebase-apply/patch", NONE, false, VIEW_PROTECTED);
        EXPECT("bare.git/remotes/x", HOLDS_HEAD, false, VIEW_PROTECTED);
        EXPECT("bare.git/remotes/x", NONE, false, VIEW_SHARED);
        /* An object store's alternates and a git dir's grafts, by their place. */
        EXPECT(".git/objects/info/alternates", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/info/alternates.lock", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/info/http-alternates", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/modules/mod/objects/info/alternates", NONE, false, VIEW_PROTECTED);
        EXPECT("sub/.git/objects/info/alternates", NONE, false, VIEW_PROTECTED);
        EXPECT("bare.git/objects/info/alternates", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/logs/objects/info/alternates", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/info/grafts", NONE, false, VIEW_PROTECTED);
        /* Its commit-graph files and multi-pack-index: the host's git trusts what they say of objects. */
        EXPECT(".git/objects/info/commit-graph", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/info/commit-graph.lock", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/info/commit-graphs", NONE, true, VIEW_PROTECTED);
        EXPECT(".git/objects/info/commit-graphs/commit-graph-chain", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/pack/multi-pack-index", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/pack/multi-pack-index.lock", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/pack/multi-pack-index-0123abcd.bitmap", NONE, false, VIEW_PROTECTED);
        EXPECT("sub/.git/objects/pack/multi-pack-index", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/pack/pack-0123abcd.idx", NONE, false, VIEW_SHARED);
        EXPECT(".git/objects/info/packs", NONE, false, VIEW_SHARED);
        /* A pack's reverse index and bitmap: a host repack or push trusts the objects they point at. */
        EXPECT(".git/objects/pack/pack-0123abcd.rev", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/pack/pack-0123abcd.bitmap", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/pack/.tmp-12-pack-0123abcd.bitmap", NONE, false, VIEW_PROTECTED);
        EXPECT("bare.git/objects/pack/pack-0123abcd.rev", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/pack/tmp_rev_AbC123", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/pack/tmp_bitmap_AbC123", NONE, false, VIEW_PROTECTED);
        EXPECT(".git/objects/pack/tmp_idx_AbC123", NONE, false, VIEW_SHARED);
        EXPECT(".git/objects/pack/tmp_pack_AbC123", NONE, false, VIEW_SHARED);
        /* The pack itself, its index (checked when put in place), .keep, .promisor and .mtimes stay shared. */
        EXPECT(".git/objects/pack/pack-0123abcd.pack", NONE, false, VIEW_SHARED);
        EXPECT(".git/objects/pack/pack-0123abcd.keep", NONE, false, VIEW_SHARED);
        EXPECT(".git/objects/pack/pack-0123abcd.promisor", NONE, false, VIEW_SHARED);
        EXPECT(".git/objects/pack/pack-0123abcd.mtimes", NONE, false, VIEW_SHARED);
        EXPECT(".git/objects/ab/0123456789abcdef0123456789abcdef012345", NONE, false, VIEW_SHARED);
        EXPECT("src/rev/x.rev", NONE, false, VIEW_SHARED);
        EXPECT(".git/modules/mod/info/grafts", NONE, false, VIEW_PROTECTED);
        /* What git needs to share the work, and info/ files that select only what the host defines. */
        EXPECT(".git/objects/info/packs", NONE, false, VIEW_SHARED);
        EXPECT(".git/info/attributes", NONE, false, VIEW_SHARED);
        EXPECT(".git/info/exclude", NONE, false, VIEW_SHARED);
        EXPECT(".git/shallow", NONE, false, VIEW_SHARED);
        EXPECT(".git/ORIG_HEAD", NONE, false, VIEW_SHARED);
        EXPECT(".git/MERGE_HEAD", NONE, false, VIEW_SHARED);
        EXPECT(".git/FETCH_HEAD", NONE, false, VIEW_SHARED);
        EXPECT(".git/refs/remotes/origin/main", NONE, false, VIEW_SHARED);
        EXPECT(".git/logs/refs/remotes/origin/main", NONE, false, VIEW_SHARED);
        EXPECT(".git/refs/heads/sequencer", NONE, false, VIEW_SHARED);
        /* Ordinary directories of those names. */
        EXPECT("src/remotes/x.c", NONE, false, VIEW_SHARED);
        EXPECT("doc/info/grafts", NONE, false, VIEW_SHARED);
        EXPECT("src/objects/info.c", NONE, false, VIEW_SHARED);
}

Test(view_policy, a_move_may_not_change_the_place) {
        ViewDir top = VIEW_DIR_TOP, git = view_child_dir(&top, ".git", VIEW_SHARED),
                objects = view_child_dir(&git, "objects", VIEW_SHARED), a = view_child_dir(&objects, "info", VIEW_SHARED),
                b = view_child_dir(&objects, "x", VIEW_SHARED), c = view_child_dir(&top, "objects", VIEW_SHARED),
                d = view_child_dir(&top, "other", VIEW_SHARED);

        cr_expect(!view_dir_equal(&a, &b));
        cr_expect(!view_dir_equal(&c, &d));

        /* A fan-out directory: moved to another's name, its objects would be filed under other names. */
        ViewDir ab = view_child_dir(&objects, "ab", VIEW_SHARED), cd = view_child_dir(&objects, "cd", VIEW_SHARED),
                ab2 = view_child_dir(&c, "ab", VIEW_SHARED), plain = view_child_dir(&d, "ab", VIEW_SHARED);
        cr_expect_eq(ab.place, VIEW_PLACE_OBJECTS_LOOSE);
        cr_expect_eq(ab.fan, 0xab);
        cr_expect(!view_dir_equal(&ab, &cd));
        cr_expect(!view_dir_equal(&ab, &b));
        cr_expect(!view_dir_equal(&ab, &plain));
        cr_expect(view_dir_equal(&ab, &ab2) || ab.zone != ab2.zone);
        cr_expect_eq(view_child_dir(&objects, "AB", VIEW_SHARED).place, VIEW_PLACE_NONE);
        cr_expect_eq(view_child_dir(&objects, "abc", VIEW_SHARED).place, VIEW_PLACE_NONE);
}

Test(view_policy, object_names) {
        ViewDir top = VIEW_DIR_TOP, git = view_child_dir(&top, ".git", VIEW_SHARED),
                objects = view_child_dir(&git, "objects", VIEW_SHARED), ab = view_child_dir(&objects, "ab", VIEW_SHARED),
                pack = view_child_dir(&objects, "pack", VIEW_SHARED), other = view_child_dir(&top, "ab", VIEW_SHARED);
        char hex[VIEW_OBJECT_HEX_MAX];
        const char *sha1 = "0123456789abcdef0123456789abcdef012345",
                   *sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd";

        cr_expect_eq(view_object_kind(&ab, sha1, hex), VIEW_OBJECT_LOOSE);
        cr_expect_str_eq(hex, "ab0123456789abcdef0123456789abcdef012345");
        cr_expect_eq(view_object_kind(&ab, sha256, hex), VIEW_OBJECT_LOOSE);
        cr_expect_eq(strlen(hex), 64);
        cr_expect_eq(view_object_kind(&ab, "tmp_obj_AbCdEf", hex), VIEW_OBJECT_NONE);
        cr_expect_eq(view_object_kind(&ab, "0123456789ABCDEF0123456789abcdef012345", hex), VIEW_OBJECT_NONE);
        cr_expect_eq(view_object_kind(&ab, "0123456789abcdef0123456789abcdef01234", hex), VIEW_OBJECT_NONE);
        cr_expect_eq(view_object_kind(&other, sha1, hex), VIEW_OBJECT_NONE);
        cr_expect_eq(view_object_kind(&pack, "pack-0123456789abcdef0123456789abcdef01234567.pack", hex),
                     VIEW_OBJECT_PACK);
        cr_expect_str_eq(hex, "0123456789abcdef0123456789abcdef01234567");
        cr_expect_eq(view_object_kind(&pack, "pack-0123456789abcdef0123456789abcdef01234567.idx", hex),
                     VIEW_OBJECT_IDX);
        cr_expect_eq(view_object_kind(&pack, "pack-0123456789abcdef0123456789abcdef01234567.keep", hex),
                     VIEW_OBJECT_NONE);
        cr_expect_eq(view_object_kind(&pack, "tmp_pack_x.pack", hex), VIEW_OBJECT_NONE);
        cr_expect_eq(view_object_kind(&pack, "pack-0123.idx", hex), VIEW_OBJECT_NONE);
        cr_expect_eq(view_object_kind(&ab, "pack-0123456789abcdef0123456789abcdef01234567.idx", hex), VIEW_OBJECT_NONE);
}

Test(view_policy, ordinary_files_stay_shared) {
        EXPECT("src/config", NONE, false, VIEW_SHARED);
        EXPECT("config", NONE, false, VIEW_SHARED);
        EXPECT("src/hooks/useThing.js", NONE, false, VIEW_SHARED);
        EXPECT("src/hooks", NONE, true, VIEW_SHARED);
        EXPECT("README.md", NONE, false, VIEW_SHARED);
        EXPECT("node_modules/x/index.js", NONE, false, VIEW_SHARED);
}

Test(view_policy, integration_files) {
        EXPECT(".envrc", NONE, false, VIEW_PROTECTED);
        EXPECT("deep/dir/.envrc", NONE, false, VIEW_PROTECTED);
        EXPECT(".vscode", NONE, true, VIEW_PROTECTED);
        EXPECT(".vscode/settings.json", NONE, false, VIEW_PROTECTED);
        EXPECT(".vscode/sub/x", NONE, false, VIEW_PROTECTED);
        EXPECT(".idea/workspace.xml", NONE, false, VIEW_PROTECTED);
        EXPECT(".mcp.json", NONE, false, VIEW_PROTECTED);
        EXPECT(".claude/settings.json", NONE, false, VIEW_PROTECTED);
        EXPECT(".devcontainer/devcontainer.json", NONE, false, VIEW_PROTECTED);
        EXPECT(".envrc.lock", NONE, false, VIEW_PROTECTED);
        EXPECT(".envrcx", NONE, false, VIEW_SHARED);
}

/* Issue 32: what a host hook, editor, agent or environment manager runs or obeys by itself. */
Test(view_policy, hook_managers) {
        /* pre-commit and prek: the hook in .git/hooks reads the config at every commit. */
        EXPECT(".pre-commit-config.yaml", NONE, false, VIEW_PROTECTED);
        EXPECT(".pre-commit-config.yml", NONE, false, VIEW_PROTECTED);
        EXPECT(".pre-commit-config.yaml.lock", NONE, false, VIEW_PROTECTED);
        EXPECT("sub/prek.toml", NONE, false, VIEW_PROTECTED);
        /* husky: all of .husky/, the wrappers in _/ and the hooks they run. */
        EXPECT(".husky", NONE, true, VIEW_PROTECTED);
        EXPECT(".husky/pre-push", NONE, false, VIEW_PROTECTED);
        EXPECT(".husky/_/h", NONE, false, VIEW_PROTECTED);
        EXPECT(".huskyrc.json", NONE, false, VIEW_PROTECTED);
        /* lefthook: every name it looks up, .config/ too, and its script directories. */
        EXPECT("lefthook.yml", NONE, false, VIEW_PROTECTED);
        EXPECT(".lefthook.toml", NONE, false, VIEW_PROTECTED);
        EXPECT(".config/lefthook.yaml", NONE, false, VIEW_PROTECTED);
        EXPECT("lefthook-local.json", NONE, false, VIEW_PROTECTED);
        EXPECT(".lefthook-local.yml", NONE, false, VIEW_PROTECTED);
        EXPECT(".lefthook/pre-commit/check.sh", NONE, false, VIEW_PROTECTED);
        EXPECT(".lefthook-local/pre-push/x", NONE, false, VIEW_PROTECTED);
        /* overcommit, hk, captainhook, grumphp, rusty-hook, hooks directories. */
        EXPECT(".overcommit.yml", NONE, false, VIEW_PROTECTED);
        EXPECT(".git-hooks/pre_commit/x.rb", NONE, false, VIEW_PROTECTED);
        EXPECT(".githooks/pre-commit", NONE, false, VIEW_PROTECTED);
        EXPECT("hk.pkl", NONE, false, VIEW_PROTECTED);
        EXPECT(".config/hk.local.pkl", NONE, false, VIEW_PROTECTED);
        EXPECT("captainhook.json", NONE, false, VIEW_PROTECTED);
        EXPECT("grumphp.yml.dist", NONE, false, VIEW_PROTECTED);
        EXPECT(".rusty-hook.toml", NONE, false, VIEW_PROTECTED);
        /* What a hook runs by name. */
        EXPECT(".lintstagedrc.json", NONE, false, VIEW_PROTECTED);
        EXPECT("lint-staged.config.mjs", NONE, false, VIEW_PROTECTED);
        EXPECT("commitlint.config.js", NONE, false, VIEW_PROTECTED);
        EXPECT(".commitlintrc.yml", NONE, false, VIEW_PROTECTED);
        /* Judged and left open (spec §6.3). */
        EXPECT(".pre-commit-hooks.yaml", NONE, false, VIEW_SHARED);
        EXPECT(".simple-git-hooks.json", NONE, false, VIEW_SHARED);
        EXPECT("package.json", NONE, false, VIEW_SHARED);
        EXPECT("husky", NONE, true, VIEW_SHARED);
        EXPECT("lefthook.yml.orig", NONE, false, VIEW_SHARED);
}

Test(view_policy, editors_agents_environments) {
        EXPECT(".cursor/mcp.json", NONE, false, VIEW_PROTECTED);
        EXPECT(".gemini/settings.json", NONE, false, VIEW_PROTECTED);
        EXPECT(".codex/config.toml", NONE, false, VIEW_PROTECTED);
        EXPECT(".continue/config.yaml", NONE, false, VIEW_PROTECTED);
        EXPECT(".windsurf/rules/a.md", NONE, false, VIEW_PROTECTED);
        EXPECT(".zed/settings.json", NONE, false, VIEW_PROTECTED);
        EXPECT(".helix/languages.toml", NONE, false, VIEW_PROTECTED);
        EXPECT(".aider.conf.yml", NONE, false, VIEW_PROTECTED);
        EXPECT("AGENTS.md", NONE, false, VIEW_PROTECTED);
        EXPECT("pkg/AGENTS.md", NONE, false, VIEW_PROTECTED);
        EXPECT("CLAUDE.md", NONE, false, VIEW_PROTECTED);
        EXPECT("GEMINI.md", NONE, false, VIEW_PROTECTED);
        EXPECT(".cursorrules", NONE, false, VIEW_PROTECTED);
        EXPECT(".github/copilot-instructions.md", NONE, false, VIEW_PROTECTED);
        EXPECT(".nvim.lua", NONE, false, VIEW_PROTECTED);
        EXPECT(".dir-locals.el", NONE, false, VIEW_PROTECTED);
        EXPECT("mise.toml", NONE, false, VIEW_PROTECTED);
        EXPECT(".config/mise.toml", NONE, false, VIEW_PROTECTED);
        EXPECT(".mise/config.toml", NONE, false, VIEW_PROTECTED);
        EXPECT(".tool-versions", NONE, false, VIEW_PROTECTED);
        EXPECT(".lfsconfig", NONE, false, VIEW_PROTECTED);
        /* Judged and left open (spec §6.3). */
        EXPECT(".env", NONE, false, VIEW_SHARED);
        EXPECT(".python-version", NONE, false, VIEW_SHARED);
        EXPECT(".nvmrc", NONE, false, VIEW_SHARED);
        EXPECT(".github/workflows/ci.yml", NONE, false, VIEW_SHARED);
        EXPECT("README.md", NONE, false, VIEW_SHARED);
        EXPECT("agents.md", NONE, false, VIEW_SHARED);
        /* Names count in ordinary directories only: a git dir's files keep its own rule. */
        EXPECT(".git/AGENTS.md", NONE, false, VIEW_SHARED);
}

Test(view_policy, configured_paths) {
        ViewDir top = VIEW_DIR_TOP;

        cr_expect_eq(view_name_class(&top, NULL, "tools", true, true), VIEW_PROTECTED);
        cr_expect_eq(view_name_class(&top, NULL, "tools", true, false), VIEW_SHARED);
}

Test(view_policy, facts_asked_only_where_they_matter) {
        ViewDir top = VIEW_DIR_TOP, git = view_child_dir(&top, ".git", VIEW_SHARED);
        ViewDir src = view_child_dir(&top, "src", VIEW_SHARED);

        cr_expect(view_name_needs_facts(&src, "HEAD"));
        cr_expect(view_name_needs_facts(&src, "config"));
        cr_expect(view_name_needs_facts(&src, "config.lock"));
        cr_expect(view_name_needs_facts(&src, "hooks"));
        cr_expect_not(view_name_needs_facts(&src, "main.c"));
        cr_expect_not(view_name_needs_facts(&src, "HEADER"));
        cr_expect_not(view_name_needs_facts(&git, "config"));
}

Test(view_policy, renames_that_change_the_zone_are_seen) {
        ViewDir top = VIEW_DIR_TOP, a = view_child_dir(&top, "x", VIEW_SHARED), b = view_child_dir(&top, ".git", VIEW_SHARED);
        ViewDir sub = view_child_dir(&a, ".git", VIEW_SHARED);

        cr_expect(view_dir_equal(&a, &a));
        cr_expect_not(view_dir_equal(&a, &b));
        /* sub/.git and the top .git are both git dirs, but only one is the host's own */
        cr_expect_not(view_dir_equal(&sub, &b));
}

/* classify() with the lists the view was given, the relative path built on the way. */
static ViewClass classify_listed(const char *path, const ViewLists *l, bool is_dir) {
        ViewDir d = VIEW_DIR_TOP;
        char buf[512], rel[512] = "", *save = NULL, *c, *next;

        cr_assert_lt(strlen(path), sizeof(buf));
        strcpy(buf, path);
        c = strtok_r(buf, "/", &save);
        for (;;) {
                ViewClass k;

                next = strtok_r(NULL, "/", &save);
                if (rel[0])
                        strcat(rel, "/");
                strcat(rel, c);
                k = view_name_class(&d, NULL, c, next ? true : is_dir, view_listed(l, &d, rel, c));
                if (!next)
                        return k;
                d = view_child_dir(&d, c, k);
                c = next;
        }
}

Test(view_policy, profile_lists) {
        char *paths[] = { (char *) "tools/deploy.sh", (char *) ".git/extra.cfg", (char *) "cfg/included", NULL };
        char *names[] = { (char *) ".deploy-settings", NULL };
        char *unprotect[] = { (char *) ".vscode", NULL };
        ViewLists l = { .paths = paths, .names = names, .unprotect = unprotect };

        /* A name at any depth, its lock file too. */
        cr_expect_eq(classify_listed(".deploy-settings", &l, false), VIEW_PROTECTED);
        cr_expect_eq(classify_listed("a/b/.deploy-settings", &l, false), VIEW_PROTECTED);
        cr_expect_eq(classify_listed("a/.deploy-settings.lock", &l, false), VIEW_PROTECTED);
        /* A path only there. */
        cr_expect_eq(classify_listed("tools/deploy.sh", &l, false), VIEW_PROTECTED);
        cr_expect_eq(classify_listed("tools/deploy.sh.lock", &l, false), VIEW_PROTECTED);
        cr_expect_eq(classify_listed("x/tools/deploy.sh", &l, false), VIEW_SHARED);
        cr_expect_eq(classify_listed("tools/other.sh", &l, false), VIEW_SHARED);
        /* A removed built-in name is shared; the other built-ins are not. */
        cr_expect_eq(classify_listed(".vscode/settings.json", &l, false), VIEW_SHARED);
        cr_expect_eq(classify_listed("sub/.vscode", &l, true), VIEW_SHARED);
        cr_expect_eq(classify_listed(".envrc", &l, false), VIEW_PROTECTED);
        /* A file the host's git configuration includes, even inside the top git dir; the git dir's own rule stays. */
        cr_expect_eq(classify_listed(".git/extra.cfg", &l, false), VIEW_PROTECTED);
        cr_expect_eq(classify_listed(".git/config", &l, false), VIEW_READONLY);
        cr_expect_eq(classify_listed(".git/other.cfg", &l, false), VIEW_SHARED);
        cr_expect_eq(classify_listed("cfg/included", &l, false), VIEW_PROTECTED);
        /* Names and removals apply to ordinary directories only: a .vscode in a git dir is the git dir's. */
        cr_expect_eq(classify_listed(".git/.deploy-settings", &l, false), VIEW_SHARED);
        /* Without lists, as before. */
        cr_expect_eq(classify_listed(".vscode/settings.json", NULL, false), VIEW_PROTECTED);
        cr_expect_eq(classify_listed(".deploy-settings", NULL, false), VIEW_SHARED);
}

Test(view_policy, new_names_removed_by_the_profile) {
        char *unprotect[] = { (char *) "AGENTS.md", (char *) ".husky", NULL };
        ViewLists l = { .unprotect = unprotect };

        cr_expect_eq(classify_listed("AGENTS.md", &l, false), VIEW_SHARED);
        cr_expect_eq(classify_listed("sub/AGENTS.md", &l, false), VIEW_SHARED);
        cr_expect_eq(classify_listed(".husky/pre-push", &l, false), VIEW_SHARED);
        cr_expect_eq(classify_listed("CLAUDE.md", &l, false), VIEW_PROTECTED);
        cr_expect_eq(classify_listed(".pre-commit-config.yaml", &l, false), VIEW_PROTECTED);
}

static void normal(const char *in, const char *want) {
        char *out = NULL;
        const char *why = NULL;

        cr_assert_eq(view_protect_entry_normalize(in, &out, &why), 0, "%s: %s", in, why ? why : "");
        cr_expect_str_eq(out, want, "%s", in);
        free(out);
}

static void abnormal(const char *in, const char *want) {
        char *out = NULL;
        const char *why = NULL;

        cr_assert_eq(view_protect_entry_normalize(in, &out, &why), -EINVAL, "accepted %s", in);
        cr_assert_null(out);
        cr_expect(strstr(why, want), "%s: '%s' lacks '%s'", in, why, want);
}

Test(view_policy, protect_entries) {
        normal(".tool-versions", ".tool-versions");
        normal("Makefile/", "Makefile");
        normal("/Makefile", "/Makefile");
        normal("tools/deploy.sh", "/tools/deploy.sh");
        normal("/tools//", "/tools");
        normal("!.vscode", "!.vscode");
        normal("!.claude", "!.claude");
        normal("!AGENTS.md", "!AGENTS.md");
        normal("!.husky", "!.husky");
        normal("!.pre-commit-config.yaml", "!.pre-commit-config.yaml");

        abnormal("", "empty");
        abnormal("/", "the workspace itself");
        abnormal("a//b", "component");
        abnormal("a/../b", "component");
        abnormal("./a", "component");
        abnormal(".git", ".git");
        abnormal("sub/.git/config", ".git");
        abnormal("!Makefile", "built-in");
        abnormal("!", "built-in");
        abnormal("a\nb", "control");
        char long_entry[VIEW_PROTECT_ENTRY_MAX + 2];
        memset(long_entry, 'a', sizeof(long_entry) - 1);
        long_entry[sizeof(long_entry) - 1] = 0;
        abnormal(long_entry, "1024");
}

Test(view_policy, profile_entries_split) {
        char *entries[] = { (char *) "/tools/x", (char *) ".tool-versions", (char *) "!.idea", NULL };
        char **paths = NULL, **names = NULL, **unprotect = NULL;

        cr_assert_eq(view_lists_add_profile(entries, &paths, &names, &unprotect), 0);
        cr_expect_str_eq(paths[0], "tools/x");
        cr_expect_null(paths[1]);
        cr_expect_str_eq(names[0], ".tool-versions");
        cr_expect_str_eq(unprotect[0], ".idea");
        for (char **p = paths; *p; p++)
                free(*p);
        for (char **p = names; *p; p++)
                free(*p);
        for (char **p = unprotect; *p; p++)
                free(*p);
        free(paths);
        free(names);
        free(unprotect);
}

Test(view_policy, parents_of_protected_paths) {
        char *paths[] = { (char *) "tools/ci/run.sh", (char *) "conf/x.cfg", NULL };
        ViewLists l = { .paths = paths };

        cr_expect(view_lists_hold_below(&l, "tools"));
        cr_expect(view_lists_hold_below(&l, "tools/ci"));
        cr_expect(view_lists_hold_below(&l, "conf"));
        cr_expect_not(view_lists_hold_below(&l, "tools/ci/run.sh"));
        cr_expect_not(view_lists_hold_below(&l, "tool"));
        cr_expect_not(view_lists_hold_below(&l, "conf/x"));
        cr_expect_not(view_lists_hold_below(&l, ""));
        cr_expect_not(view_lists_hold_below(NULL, "tools"));
}

/* Ignored Workspace State (SR-13): the rule that view_ignored_class() adds. */
Test(view_policy, ignored_paths) {
        ViewDir top = VIEW_DIR_TOP, git = view_child_dir(&top, ".git", VIEW_SHARED),
                vsc = view_child_dir(&top, ".vscode", VIEW_PROTECTED);
        ViewIgnoreFacts excluded = { .isolate = true, .excluded = true };

        /* untracked and excluded: Domain state alone */
        cr_expect_eq(view_ignored_class(&top, VIEW_SHARED, &excluded), VIEW_IGNORED);
        /* tracked under an ignored pattern: shared */
        cr_expect_eq(view_ignored_class(&top, VIEW_SHARED, &(ViewIgnoreFacts) { .isolate = true, .excluded = true,
                                                                               .tracked = true }), VIEW_SHARED);
        /* not excluded: shared */
        cr_expect_eq(view_ignored_class(&top, VIEW_SHARED, &(ViewIgnoreFacts) { .isolate = true }), VIEW_SHARED);
        /* isolate_ignored: false, whatever is in state */
        cr_expect_eq(view_ignored_class(&top, VIEW_SHARED, &(ViewIgnoreFacts) { .excluded = true, .in_state = true }),
                     VIEW_SHARED);
        /* a name once in ignored state keeps its side after the rules change */
        cr_expect_eq(view_ignored_class(&top, VIEW_SHARED, &(ViewIgnoreFacts) { .isolate = true, .in_state = true }),
                     VIEW_IGNORED);
        cr_expect_eq(view_ignored_class(&top, VIEW_SHARED, &(ViewIgnoreFacts) { .isolate = true, .in_state = true,
                                                                               .tracked = true }), VIEW_IGNORED);
        /* shared_ignored: the host's, read-only; only for ignored paths */
        cr_expect_eq(view_ignored_class(&top, VIEW_SHARED, &(ViewIgnoreFacts) { .isolate = true, .excluded = true,
                                                                               .shared = true, .in_state = true }),
                     VIEW_READONLY);
        cr_expect_eq(view_ignored_class(&top, VIEW_SHARED, &(ViewIgnoreFacts) { .isolate = true, .shared = true }),
                     VIEW_SHARED);
        /* git dirs and protected names keep their own rule */
        cr_expect_eq(view_ignored_class(&git, VIEW_SHARED, &excluded), VIEW_SHARED);
        cr_expect_eq(view_ignored_class(&top, VIEW_PROTECTED, &excluded), VIEW_PROTECTED);
        cr_expect_eq(view_ignored_class(&top, VIEW_READONLY, &excluded), VIEW_READONLY);
        cr_expect_eq(view_ignored_class(&vsc, VIEW_SHARED, &excluded), VIEW_SHARED);
        cr_expect_str_eq(view_class_to_string(VIEW_IGNORED), "ignored");
}

Test(view_policy, listed_paths) {
        char *list[] = { (char *) ".env", (char *) "config/secrets", NULL };

        cr_expect(view_path_listed(list, ".env"));
        cr_expect(view_path_listed(list, "config/secrets"));
        cr_expect(view_path_listed(list, "config/secrets/a"));
        cr_expect_not(view_path_listed(list, ".envrc"));
        cr_expect_not(view_path_listed(list, "config/secretsx"));
        cr_expect_not(view_path_listed(list, "config"));
        cr_expect_not(view_path_listed(list, "x/.env"));
        cr_expect_not(view_path_listed(NULL, ".env"));
}

/* Issue 32 item 3: the index's paths that the host's index may not take from the sandbox. */
Test(view_policy, index_path_protected) {
        char *paths[] = { (char *) "ci/hooks", (char *) "tools/check.sh", NULL };
        char *names[] = { (char *) "secrets.toml", NULL };
        char *unprotect[] = { (char *) ".vscode", NULL };
        const ViewLists l = { .paths = paths, .names = names, .unprotect = unprotect };

        /* Built-in integration names at any depth, and below them. */
        cr_expect(view_index_path_protected(NULL, ".husky/pre-push"));
        cr_expect(view_index_path_protected(NULL, ".pre-commit-config.yaml"));
        cr_expect(view_index_path_protected(NULL, "sub/dir/.envrc"));
        cr_expect(view_index_path_protected(NULL, ".vscode/settings.json"));
        cr_expect_not(view_index_path_protected(NULL, "src/main.c"));
        cr_expect_not(view_index_path_protected(NULL, "README.md"));
        /* Listed paths exactly there and below; listed names anywhere; removed names not. */
        cr_expect(view_index_path_protected(&l, "ci/hooks/pre-commit"));
        cr_expect(view_index_path_protected(&l, "tools/check.sh"));
        cr_expect_not(view_index_path_protected(&l, "tools/check.sh.orig"));
        cr_expect_not(view_index_path_protected(&l, "x/ci/hooks/pre-commit"));
        cr_expect(view_index_path_protected(&l, "a/b/secrets.toml"));
        cr_expect_not(view_index_path_protected(&l, ".vscode/settings.json"));
        cr_expect(view_index_path_protected(&l, ".husky/pre-push"));
        /* A sparse directory entry: what it holds is unknown. */
        cr_expect(view_index_path_protected(&l, "docs/"));
}
