/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "helper.h"

#include <stdbool.h>
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
 *   a supervisor mount: the file system mounted on <stage>/<i>: a tmpfs,
 *                      a State Anchor overlay (supervisor-overlay.h), or
 *                      a directory of the Escalation Mailbox (type
 *                      ESC_MAILBOX_FSTYPE: the mailbox's two bounded tmpfs
 *                      are made once on <stage>/mailbox, and a detached
 *                      copy of the directory is moved onto <stage>/<i>);
 *                      any other type is refused by name;
 *   the workspace view: its source opened and insisted on as a bind's, the
 *                      FUSE connection mounted on <stage>/<i>, and view (the
 *                      lazaret-view program) started in helpers to serve it;
 *                      the workspace's own view (not a git dir's) is given
 *                      relay_fd, the host-edit relay's write end (spec 4.6),
 *                      when it is one, and *ret_relays says so;
 *   gVisor's own:      nothing.
 *
 * Nobody outside this mount namespace sees the staged mounts; runsc, its
 * child, is given only their paths. Every failure is one line in err.
 */
int supmounts_stage(const char *bundle, const char *view, int relay_fd, Helpers *helpers, bool *ret_relays,
                    char **ret_error);

/* After supmounts_stage(): the workspace opened as a directory (O_RDONLY,
 * close-on-exec) for the host-edit watcher (spec section 4.6): the staged
 * bind, or, with the workspace view, the host directory it serves. */
int supmounts_open_workspace(const char *bundle, int *ret_fd, char **ret_error);

/* Where the Escalation Mailbox's file systems are made, below the staging directory. */
#define SUPMOUNTS_MAILBOX "mailbox"

/* After supmounts_stage(): the Escalation Mailbox's root directory (O_RDONLY,
 * close-on-exec), for the coordinator; -EBADF in *ret_fd when the plan has no mailbox. */
int supmounts_open_mailbox(const char *bundle, int *ret_fd, char **ret_error);
