/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/*
 * Issue 32 item 4: whether a git hook on the host runs the project's own
 * code (npm test, make, pytest, ./scripts/x.sh, ...), which the sandbox
 * can write, so that a commit or push made on the host runs what the
 * sandbox wrote. Read from the host's files only, never executed: the
 * hooks in .git/hooks and in the other hook directories given, husky's
 * .husky/<hook>, and the configuration of a hook manager whose hook is
 * installed there (pre-commit's `entry:`, lefthook's `run:` lines). A
 * guess by words, said as a warning: a hook that runs project code by
 * another name is not seen.
 */

/* Bytes read of one hook or configuration file; a larger one is read no further. */
#define HOST_HOOKS_FILE_MAX (64U * 1024U)
/* Lines returned at most. */
#define HOST_HOOKS_LINES_MAX 4U

/*
 * The command in text (a script or a configuration's command lines) that
 * runs project code: its first such line, trimmed and cut at 60 bytes, in
 * *ret (NULL: none). only_after, when not NULL, is the key that marks a
 * command line ("entry:", "run:"); other lines are skipped. Returns 0 or
 * -ENOMEM.
 */
int host_hooks_command(const char *text, const char *only_after, char **ret);

/*
 * One line per hook of the host's that runs project code, at most
 * HOST_HOOKS_LINES_MAX (*ret_lines NULL: none): hook_dirs are
 * workspace-relative directories below workspace_fd to read hooks from
 * (".git/hooks" and the in-workspace core.hooksPath directories; ones
 * that are not there, or not directories, count as none). Nothing is
 * followed: a hook that is a symbolic link is not read.
 */
int host_hooks_scan(int workspace_fd, char *const *hook_dirs, char ***ret_lines);

/*
 * Issue 32 item 2: the workspace files a hook names by path, which the view
 * then protects (a write inside lands in Domain state), so that the host's
 * next commit or push cannot run what the sandbox wrote there. Git runs a
 * hook in the top of the working tree, so a relative path in it is a
 * workspace path. Read, never run; a guess by words, erring towards
 * protecting: every word of a non-comment line that is a relative path with
 * a '/' ("scripts/check.sh", "./gradlew"), the value of an "--opt=PATH", the
 * part after an expansion ("$(git rev-parse --show-toplevel)/tools/x"), the
 * part after "$(dirname "$0")/" joined to the hook's directory when that is
 * in the workspace, and an absolute path below workspace_path. Never one
 * that leaves the workspace, one in .git, or one with glob or expansion
 * characters left in it.
 */

/* Paths named at most, for all hooks of a Domain together. */
#define HOST_HOOKS_PATHS_MAX 64U

/*
 * Adds to *paths (without duplicates, up to HOST_HOOKS_PATHS_MAX in all)
 * the workspace-relative paths text names. hook_dir is the
 * workspace-relative directory the hook is in, or NULL when it is outside
 * the workspace; workspace_path is the workspace's normalised absolute host
 * path, or NULL. only_after as for host_hooks_command(): when not NULL,
 * only lines with that key ("entry:", "run:") are read. Returns how many
 * were added, or -ENOMEM.
 */
int host_hooks_named_paths(const char *text, const char *only_after, const char *hook_dir,
                           const char *workspace_path, char ***paths);

/*
 * The paths every hook in a hook directory names, and the configuration of
 * the hook managers its hooks run (pre-commit's entry:, lefthook's run:),
 * added to *paths as host_hooks_named_paths() does. dir_fd is the hook
 * directory (opened by the caller, who judged it); hook_dir its
 * workspace-relative path or NULL when it is outside the workspace;
 * workspace_fd the workspace, for the managers' configuration. Nothing is
 * followed. Returns the number added or -ENOMEM.
 */
int host_hooks_scan_paths(int workspace_fd, int dir_fd, const char *hook_dir, const char *workspace_path,
                          char ***paths);

/*
 * A named path that is, or lies below, a symbolic link in the workspace:
 * the host's shell follows the link, so what it runs is the target. For
 * each path of *paths (those already there; workspace-relative), the links
 * on its way are read one component at a time beneath workspace_fd (each
 * directory opened without following anything, each link read, never
 * followed by the kernel), and every path it resolves to within the
 * workspace is added (as host_hooks_named_paths() adds, up to
 * HOST_HOOKS_PATHS_MAX in all): "scripts/check.sh" -> "../tools/check.sh"
 * adds "tools/check.sh"; a link whose target is absolute counts when it
 * lies below workspace_path. A target outside the workspace, in .git, or
 * with a control byte ends that path's walk (nothing the view can
 * protect); at most HOST_HOOKS_LINK_HOPS links per path. Returns how many
 * were added, or -ENOMEM.
 */
#define HOST_HOOKS_LINK_HOPS 16U
int host_hooks_link_targets(int workspace_fd, const char *workspace_path, char ***paths);
