/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/*
 * The workspace view's rule (spec §4.6.2): which side of the view each
 * name in each directory lives on. Pure: the daemon (src/view/) supplies
 * what it saw on the host and in Domain state.
 *
 * The rule: nothing the sandbox writes may later be read by a host tool as
 * configuration or code that the tool runs by itself. Git reads such files
 * only from a directory it takes for a git dir, and git takes a directory
 * for one only if it holds HEAD. So:
 *   - a git dir's control names (config, config.worktree, commondir,
 *     gitdir, their .lock files, hooks/) in any directory that is or may
 *     become a git dir live in Domain state (PROTECTED); in the
 *     workspace's own git dir they are read-only (READONLY);
 *   - a HEAD reaches the host only where git itself creates git dirs (a
 *     directory named .git, .git/worktrees/<name>, .git/modules/...) or a
 *     reflog (logs/HEAD), and only while that directory holds none of the
 *     control names on the host; any other new HEAD (a bare repository
 *     made inside) lives in Domain state, so the host never sees a git dir
 *     the sandbox made outside those places;
 *   - the kept names (view_is_kept_name(): remotes/, branches/, the
 *     sequencer state) live in Domain state wherever the control names
 *     do, and in the workspace's own git dir too; so do an object store's
 *     info/alternates and info/http-alternates (any directory named
 *     objects) and a git dir's info/grafts: git follows, sends to or runs
 *     what they say (spec §4.6, "Kept in the Domain");
 *   - a .git that is not a directory (a gitfile or a symbolic link, which
 *     redirect git's search) lives in Domain state;
 *   - the integration names: files that other host programs run or obey
 *     by themselves (.envrc, .vscode/, the hook managers' configuration,
 *     agents' settings and instructions, ...; view_integration_names()),
 *     at any depth,
 *     and the workspace paths named by the host's own git configuration
 *     (core.hooksPath, included files) live in Domain state.
 * Domain state shadows the host: the host's version stays visible inside
 * until the sandbox writes (copy-up), deletes (whiteout) or replaces it.
 */

/* Below a checkout's state directory (checkout.h, checkout_state_path()): the view's Domain state (the shadow tree). */
#define VIEW_STATE_DIR "view"
/* ... and that of the git dir view of a linked worktree or a submodule (git-sentry.h, GitLinked). */
#define VIEW_GIT_STATE_DIR "view-git"
/* In the control directory (/run/lazaret inside): the workspace's host path, which lazaret-init links to /workspace. */
#define LAZARET_WORKSPACE_PATH_FILE "workspace-path"

/* The root of a git dir view: a git dir of the host's own, as the workspace's top .git is. */
#define VIEW_DIR_GIT_ROOT ((ViewDir) { .zone = VIEW_ZONE_GIT_TOP, .gitpos = true, .head_allowed = true })
/* On a copied-up file in it: the host file it was copied from ("SIZE MTIME-S MTIME-NS"). */
#define VIEW_BASE_XATTR "user.lazaret.base"
/* Below a checkout's state directory (checkout.h): Ignored Workspace State (spec §4.6), opaque over the host. */
#define VIEW_IGNORED_DIR "ignored"
/* In the control directory (read-only inside at /run/lazaret): the host user's core.excludesFile, copied. */
#define VIEW_EXCLUDES_FILE "git-excludes"
/* What a whiteout there (a symbolic link) points to. */
#define VIEW_WHITEOUT_TARGET "\001lazaret-whiteout\001"

typedef enum ViewZone {
        VIEW_ZONE_WORK,                 /* an ordinary directory of the workspace */
        VIEW_ZONE_GIT_TOP,              /* the workspace's own git dir, <top>/.git */
        VIEW_ZONE_GIT,                  /* any other directory at or below a .git directory */
        VIEW_ZONE_PROTECTED,            /* a protected directory and everything below it */
        _VIEW_ZONE_MAX,
} ViewZone;

typedef enum ViewClass {
        VIEW_SHARED,                    /* the host's, read-write */
        VIEW_READONLY,                  /* the host's, never written from inside (EROFS) */
        VIEW_PROTECTED,                 /* Domain state over the host's */
        VIEW_IGNORED,                   /* Ignored Workspace State: Domain state alone, the host's never seen */
        _VIEW_CLASS_MAX,
} ViewClass;

/* Where a directory lies that git reads by its place (view-policy.c, kept_by_place()). */
typedef enum ViewPlace {
        VIEW_PLACE_NONE,
        VIEW_PLACE_OBJECTS,             /* a directory named objects: an object store, or may become one */
        VIEW_PLACE_OBJECTS_INFO,        /* its info/: alternates, http-alternates, commit-graph(s) */
        VIEW_PLACE_OBJECTS_PACK,        /* its pack/: multi-pack-index, the packs' reverse indexes and bitmaps */
        VIEW_PLACE_OBJECTS_LOOSE,       /* one of its fan-out directories (two hex digits, ViewDir.fan): loose objects */
        VIEW_PLACE_INFO,                /* a git dir's info/: grafts */
} ViewPlace;

typedef struct ViewDir {
        ViewZone zone;
        ViewPlace place;
        uint8_t fan;                    /* VIEW_PLACE_OBJECTS_LOOSE: the first byte of its objects' names */
        bool top;                       /* the workspace's root directory */
        bool gitpos;                    /* git makes git dirs here: a .git, worktrees/<n>, below modules/ */
        bool head_allowed;              /* a new HEAD may reach the host here (gitpos, or a logs/ directory) */
        bool modules;                   /* a modules/ directory or a submodule git dir below one */
        bool worktrees;                 /* a git dir's worktrees/ directory */
} ViewDir;

/* The root of the workspace. */
#define VIEW_DIR_TOP ((ViewDir) { .zone = VIEW_ZONE_WORK, .top = true })

/* What the daemon saw of a directory, asked only when view_name_needs_facts(). */
typedef struct ViewFacts {
        bool holds_head;                /* HEAD exists in the directory, on either side */
        bool host_head;                 /* HEAD exists there on the host */
        bool host_control;              /* a control or kept name exists there on the host (view_fact_names()) */
} ViewFacts;

/* config, config.worktree, commondir, gitdir, hooks (a NAME.lock is judged as NAME by view_name_class()). */
bool view_is_control_name(const char *name);

/*
 * remotes, branches, rebase-merge, rebase-apply, sequencer,
 * CHERRY_PICK_HEAD, REVERT_HEAD, REBASE_HEAD: kept in the Domain wherever
 * a control name is, and in the workspace's own git dir too (not
 * read-only: the sandbox's git writes them).
 */
bool view_is_kept_name(const char *name);
/* Those names, NULL-terminated. */
const char *const *view_kept_names(void);

/* The control names and the kept names, NULL-terminated: ViewFacts.host_control is any of them on the host. */
const char *const *view_fact_names(void);

/* Whether view_name_class() needs the facts of the directory for this name. */
bool view_name_needs_facts(const ViewDir *d, const char *name);

/*
 * What the configured and derived lists say of a name, beside the built-in
 * integration names. VIEW_LISTED_PROTECTED is 1, so a caller may pass a
 * bool "protected" where it has no list of removed names.
 */
typedef enum ViewListed {
        VIEW_LISTED_NONE = 0,
        VIEW_LISTED_PROTECTED = 1,      /* a protected path or name: Domain state */
        VIEW_LISTED_SHARED = 2,         /* a built-in integration name the profile removed */
} ViewListed;

/*
 * The lists (spec §4.6, lazaret.conf(5) protected_paths): paths are
 * workspace-relative paths protected exactly there (the profile's "/..."
 * entries, the core.hooksPath directories and included files that the
 * host's git configuration names); names are protected at any depth like
 * the built-in integration names; unprotect lists built-in names that the
 * profile removed ("!NAME"). Any of them may be NULL.
 */
typedef struct ViewLists {
        char *const *paths;
        char *const *names;
        char *const *unprotect;
} ViewLists;

/*
 * How the lists mark name, whose workspace-relative path is rel (NULL when
 * unknown: paths then match nothing). A NAME.lock is judged as NAME. paths
 * apply in every zone but VIEW_ZONE_PROTECTED, names and unprotect only in
 * ordinary workspace directories (VIEW_ZONE_WORK).
 */
ViewListed view_listed(const ViewLists *l, const ViewDir *d, const char *rel, const char *name);

/*
 * Whether a path of l lies strictly below rel (workspace-relative): that
 * directory must stay where it is and stay a directory, or the sandbox
 * could put a symbolic link (or a directory it filled) in its place and
 * redirect what the host reads at the protected path. The view refuses to
 * remove, rename, or rename onto it (EBUSY) and to make a symbolic link
 * there (EPERM).
 */
bool view_lists_hold_below(const ViewLists *l, const char *rel);

/*
 * The profile's protected_paths entries (validated by the configuration:
 * "NAME", "/PATH" or "!NAME") appended to the lists the view takes: paths
 * without their leading "/", names, removed built-in names.
 */
int view_lists_add_profile(char *const *entries, char ***paths, char ***names, char ***unprotect);

/*
 * A protected_paths entry in its normal form: "NAME" (one component,
 * protected at any depth), "/PATH" (from the workspace's top; an entry
 * with a "/" inside is one too: "a/b" is "/a/b") or "!NAME" (a built-in
 * integration name removed); trailing slashes dropped. -EINVAL and
 * *ret_why (static text) for anything else: an empty component, "." or
 * "..", ".git" anywhere (git dirs are the rule's), a control byte, over
 * VIEW_PROTECT_ENTRY_MAX bytes, a "!" before anything but a built-in name.
 */
#define VIEW_PROTECT_ENTRY_MAX 1024
int view_protect_entry_normalize(const char *s, char **ret, const char **ret_why);

/*
 * The side of name in d. is_dir: whether the entry is (or is being made) a
 * directory; only ".git" depends on it. listed: what view_listed() said
 * (a bool "protected" will do, see ViewListed).
 */
ViewClass view_name_class(const ViewDir *d, const ViewFacts *f, const char *name, bool is_dir, ViewListed listed);

/* The ViewDir of the directory name in d (a directory of class c there). */
ViewDir view_child_dir(const ViewDir *d, const char *name, ViewClass c);

/*
 * Whether name in d is where the host's git reads an object's bytes or a
 * pack's object map by its name, unchecked (issue 32): a loose object
 * (d a fan-out directory, name 38 or 62 hex digits), a pack
 * (pack-<hex>.pack) or its index (pack-<hex>.idx) in an object store's
 * pack/. *ret_hex (2 * 32 + 1 bytes): the object's or pack's name in hex,
 * which says the object format by its length.
 */
typedef enum ViewObjectKind {
        VIEW_OBJECT_NONE,
        VIEW_OBJECT_LOOSE,
        VIEW_OBJECT_PACK,
        VIEW_OBJECT_IDX,
} ViewObjectKind;
#define VIEW_OBJECT_HEX_MAX (2 * 32 + 1)
ViewObjectKind view_object_kind(const ViewDir *d, const char *name, char *ret_hex);

/* Whether two directories are the same to the rule (a rename may not change that). */
bool view_dir_equal(const ViewDir *a, const ViewDir *b);

/* Whether name is one of the built-in protected integration names. */
bool view_is_integration_name(const char *name);
/* Those names, NULL-terminated (for lazaretctl status). */
const char *const *view_integration_names(void);

/*
 * Ignored Workspace State (SR-13): what the daemon knows of a name that
 * view_name_class() put on the host's side of an ordinary directory.
 */
typedef struct ViewIgnoreFacts {
        bool isolate;                   /* the profile's isolate_ignored */
        bool in_state;                  /* the name exists in ignored Domain state */
        bool excluded;                  /* git's ignore rules exclude it (or a directory above it) */
        bool tracked;                   /* the index names it, or something below it */
        bool shared;                    /* it is at or below a shared_ignored entry */
} ViewIgnoreFacts;

/*
 * The side of such a name. A name already in ignored state stays there
 * whatever the rules now say (a .gitignore edit inside never moves the
 * sandbox's files to the host; the daemon moves a file that the index
 * comes to track out of ignored state before it asks); otherwise an untracked,
 * excluded name is ignored (or read-only when shared_ignored lists it).
 * Any other class, and any directory but an ordinary one, is returned as
 * it is: git dirs and protected paths keep their own rule.
 */
ViewClass view_ignored_class(const ViewDir *d, ViewClass c, const ViewIgnoreFacts *f);

/*
 * Whether a path of the index (workspace-relative, as git writes it) is
 * protected in the workspace: it, or a directory above it, is a listed
 * path, a listed name, or a built-in integration name the profile did not
 * remove (issue 32 item 3: what the host's index may not take from the
 * sandbox). A sparse directory entry ("dir/") counts as protected: what it
 * holds is not known.
 */
bool view_index_path_protected(const ViewLists *l, const char *rel);

/* Whether the workspace-relative path rel is one of list's entries or lies below one. */
bool view_path_listed(char *const *list, const char *rel);

const char *view_class_to_string(ViewClass c);
const char *view_zone_to_string(ViewZone z);
