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
