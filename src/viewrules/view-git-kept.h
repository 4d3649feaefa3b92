/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the workspace view keeps of git dirs in Domain state (spec §4.6,
 * "kept in the Domain": view_is_kept_name(), an object store's alternates,
 * info/grafts), seen from outside the view: for the launch line,
 * `lazaretctl status` and `lazaretctl changes`. Reads only, never follows
 * a symbolic link, and logs nothing.
 */

/* Entries a walk visits at most, and how deep it goes: the trees are small, a larger one is cut short. */
#define VIEW_KEPT_SCAN_MAX 4096U
#define VIEW_KEPT_DEPTH_MAX 32U

/*
 * The git operations stopped half-way inside: walks a view's Domain state
 * (state_fd: <domain_dir>/view, or view-git with root set to the git dir
 * view's host path) for directories holding rebase-merge/, rebase-apply/,
 * sequencer/, CHERRY_PICK_HEAD or REVERT_HEAD (a whiteout is none), and
 * returns one line per such git dir, sorted, saying what is under
 * way and how to finish or abort it inside (*ret_lines NULL: none).
 * Control bytes in a path are left for the caller to escape.
 */
int view_git_ops_scan(int state_fd, const char *root, char ***ret_lines);

/*
 * The host's own entries of the kept names in the git dir git_dir_fd (the
 * workspace's .git, or the common dir a linked workspace's git dir view
 * serves), in its worktrees/<name>/ and in the git dirs below its
 * modules/: each as prefix/path (a directory with a trailing "/"), in path
 * order (*ret_paths NULL: none). The host's git still reads them; the
 * sandbox no longer writes them there.
 */
int view_git_kept_on_host(int git_dir_fd, const char *prefix, char ***ret_paths);

/* The one line that names such paths (the first four, then how many more). */
int view_git_kept_notice(char *const *paths, char **ret);

/*
 * Both, for a Domain: the operations under way in the view's state
 * (state_fd) and the git dir view's (git_state_fd, whose host path is
 * git_root), and the host's kept files in the workspace's .git (below
 * workspace_fd) and in the git dir view's root (git_root_fd). An fd < 0
 * is skipped. *ret_ops: lines as view_git_ops_scan()'s; *ret_host: paths.
 * Both are valid UTF-8: a byte that is not is written as \xNN (control
 * bytes are left for the caller to escape).
 */
int view_git_kept_scan(int workspace_fd, int state_fd, int git_root_fd, const char *git_root, int git_state_fd,
                       char ***ret_ops, char ***ret_host);
