/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "view-policy.h"

/*
 * The workspace view's pending protected changes (spec §4.6): what the
 * sandbox wrote to protected names, kept in the Domain's view state
 * (<domain_dir>/view, see view-policy.h) until the developer applies it to
 * the host or discards it. Used by `lazaretctl changes` while no
 * coordinator runs the Domain; nothing here logs.
 *
 * An entry of the state tree is a change only where view_name_class() (walked
 * from VIEW_DIR_TOP, with the facts the view daemon would see: HEAD and
 * control names on the host and in state) says VIEW_PROTECTED; other
 * directories there only carry protected entries further down. A whiteout
 * (a symbolic link to VIEW_WHITEOUT_TARGET) is a deletion of the host's
 * entry; a regular file with VIEW_BASE_XATTR is a copy of a host file that
 * was then changed; anything else is new, or replaces the host's entry
 * without a record of it. A directory present on both sides is merged: its
 * entries are the changes. Temporary names (VIEW_COPY_UP_PREFIX) are
 * skipped.
 *
 * Host paths are opened by fd beneath the workspace with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS; nothing is ever followed on either side.
 */

#define VIEW_COPY_UP_PREFIX ".lazaret-copy-up."
/* The temporary names an apply writes in a host directory before its rename. */
#define VIEW_APPLY_PREFIX ".lazaret-apply."
/* How deep the state tree is walked: one fd per level. */
#define VIEW_CHANGES_MAX_DEPTH 128U

typedef enum ViewChangeKind {
        VIEW_CHANGE_NEW,                /* no host entry there when it was made */
        VIEW_CHANGE_CHANGED,            /* a host entry, changed or replaced */
        VIEW_CHANGE_DELETED,            /* a whiteout: the host's entry is deleted inside */
        _VIEW_CHANGE_KIND_MAX,
} ViewChangeKind;

typedef enum ViewHostState {
        VIEW_HOST_SAME,                 /* as when copied (or, for a new entry, still absent) */
        VIEW_HOST_CHANGED,              /* the host's entry changed since, appeared or went away */
        VIEW_HOST_UNKNOWN,              /* replaced without a record of the host's version */
        _VIEW_HOST_STATE_MAX,
} ViewHostState;

typedef struct ViewChange {
        char *path;                     /* workspace-relative */
        ViewChangeKind kind;
        bool git_control;               /* a git dir's config, hooks, commondir, gitdir, HEAD, a .git file, a core.hooksPath */
        mode_t type;                    /* S_IFREG, S_IFDIR, S_IFLNK of the state entry (0 for a deletion) */
        mode_t mode;                    /* its permission bits */
        uint64_t size;                  /* bytes (a directory: of the regular files below it) */
        ViewHostState host;
        const char *root;               /* the host path that path is relative to, when not the workspace
                                         * (a git dir view's state); borrowed from view_changes_scan()'s caller */
} ViewChange;

typedef struct ViewChanges {
        ViewChange *changes;
        size_t n;
} ViewChanges;

void view_changes_done(ViewChanges *c);

/* VIEW_BASE_XATTR's value. */
typedef struct ViewBase {
        uint64_t size;
        int64_t mtime_sec;
        long mtime_nsec;
} ViewBase;

int view_base_parse(const char *s, size_t n, ViewBase *ret);
bool view_base_matches(const ViewBase *b, const struct stat *st);

/*
 * Walks the state tree (state_fd: <domain_dir>/view) against the host's
 * workspace (workspace_fd) and lists the pending changes in path order.
 * lists: what the view was told (its --protect, --protect-name and
 * --unprotect: the Git Sentry's derived paths and the profile's
 * protected_paths); git_paths: the derived ones alone (git_sentry_plan()
 * with .view), whose changes are git-control.
 *
 * root: NULL for the workspace view; for the git dir view of a linked
 * workspace (lazaret-view --git-dir: state <domain_dir>/view-git, host
 * directory the common dir or the submodule's git dir) its host path. The
 * walk then starts from VIEW_DIR_GIT_ROOT, as that view's does, every
 * change is git-control, and each change's root is set to it, so that it
 * is named and reported by its host path (view_change_shown()).
 */
int view_changes_scan(int state_fd, int workspace_fd, const char *root, const ViewLists *lists, char *const *git_paths,
                      ViewChanges *ret, char **ret_error);

/* How a change is named to the developer: its workspace-relative path, or root/path. NULL on ENOMEM. */
char *view_change_shown(const ViewChange *c);

/*
 * Whether c is named by path: the path itself or a directory above it. A
 * workspace change is named by its workspace-relative path ("" or "." is
 * the workspace); one with a root only by an absolute path at or below
 * that root (the root itself names all of them).
 */
bool view_change_named(const ViewChange *c, const char *path);

/*
 * Whether applying c is refused, and why (one line, in *ret_error): the
 * host's entry changed since (unless force), or a git-control entry
 * (unless git_control). 0 when it may be applied.
 */
int view_change_check(const ViewChange *c, bool force, bool git_control, char **ret_error);

/*
 * Writes the state version onto the host, then removes it from state: a
 * file or symbolic link by a temporary name in the host directory (the
 * state file's mode, fsync) renamed over the host's, a directory built
 * whole under a temporary name and renamed into place (never over an
 * existing one), a whiteout by removing the host's entry (a directory
 * with everything below it). The host's entry is judged again right
 * before the rename: view_change_check()'s refusals hold (-ESTALE).
 */
int view_change_apply(int state_fd, int workspace_fd, const ViewChange *c, bool force, char **ret_error);

/* Removes the change from state: the sandbox then sees the host's version again. */
int view_change_discard(int state_fd, const ViewChange *c, char **ret_error);



const char *view_change_kind_to_string(ViewChangeKind k);
/* "git-control" for a git-control entry, else the kind. */
const char *view_change_label(const ViewChange *c);
const char *view_host_state_to_string(ViewHostState s);
