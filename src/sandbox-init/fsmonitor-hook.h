/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * git's fsmonitor hook inside the sandbox (spec 4.6, "git asks the view"):
 * lazaret-init run under the name FSMON_HOOK_FILE (a symbolic link to init
 * in the control directory) as `fsmonitor 2 TOKEN`, in the worktree's root. It answers
 * from the workspace view's journal (fsmonitor-proto.h) on standard output:
 * the new token, a NUL, then the worktree-relative paths changed since
 * TOKEN, each followed by a NUL, or "/" and a NUL for "everything changed"
 * (a token of another instance of the view, git's first, a worktree
 * outside /workspace, no journal). Exit status 0, or 1 for a hook version
 * other than 2 (git then scans everything).
 */
int fsmonitor_hook(int argc, char *argv[]);
