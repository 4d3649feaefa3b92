/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/*
 * The mount plan's staging (spec C19), in the supervisor's own mount
 * namespace and before runsc starts: a tmpfs (mode 0700) on the bundle's
 * staging directory, then for entry i of the plan in the bundle:
 *
 *   a bind:            its source opened again from "/" one component at a
 *                      time without following anything, its device, inode
 *                      and type compared with what the coordinator's check
 *                      saw, and a detached recursive copy of what was opened
 *                      (open_tree() from that fd, read-only where the entry
 *                      is) moved onto <stage>/<i>;
 *   a supervisor mount: the file system mounted on <stage>/<i> (a tmpfs
 *                      only, for now; any other type is refused by name);
 *   gVisor's own:      nothing.
 *
 * Nobody outside this mount namespace sees the staged mounts; runsc, its
 * child, is given only their paths. Every failure is one line in err.
 */
int supmounts_stage(const char *bundle, char **ret_error);

/* After supmounts_stage(): the staged workspace bind, opened as a directory
 * (O_RDONLY, close-on-exec), for the host-edit watcher (spec section 4.6). */
int supmounts_open_workspace(const char *bundle, int *ret_fd, char **ret_error);
