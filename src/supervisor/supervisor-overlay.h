/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "setid-mode.h"

#include "helper.h"
#include "mount-plan.h"

/*
 * The State Anchor's overlays (a MOUNT_SUPERVISOR entry of type "overlay",
 * see anchor.h and state-anchor.h), staged on <stage>/<name> by the
 * supervisor in its own user and mount namespace, before runsc starts:
 *
 *   the lower (the entry's source) and the layer directory (its data) are
 *   opened from "/" without following anything; upper/ (with the lower
 *   directory's mode) and work/ are made in the layer when missing;
 *   kernel overlayfs with "userxattr", its layers given as fds, is tried
 *   first; where this kernel refuses it (no overlayfs in a user namespace),
 *   fuse-overlayfs is run on the same fds instead: the supervisor mounts
 *   the FUSE file system itself (/dev/fuse) and runs fuse-overlayfs in the
 *   foreground on that fd as one of its supervised helpers (helper.h), so
 *   its death is the Domain's failure, in one line. The first overlay
 *   decides for every later one of the same supervisor (a check, not a
 *   version number); a layer records the format it was first written in
 *   (<layer>/format) and is never mounted with the other one.
 *
 * The sandbox reaches the merged tree as a bind of the staged path, like
 * any other supervisor mount. Every failure is one line in *ret_error.
 */
/* The file systems of the overlays staged so far (at most SUPOVERLAY_ANCHORS_MAX;
 * one whose overlay has no UUID of its own is left out), for lazaret-setid-responder. */
#define SUPOVERLAY_ANCHORS_MAX 32
size_t supoverlay_anchor_ids(const AnchorId **ret);

int supoverlay_stage(const MountEntry *e, int stagefd, const char *stage, const char *name, Helpers *helpers, char **ret_error);

/*
 * The root's overlay (spec 4.6, "Prepared lower"), for a plan with a mount
 * point the image lacks: runsc makes a missing mount point in the tree that
 * holds it, and the root's tree is the prepared lower, shared by every
 * Domain of the image. rootfd (an O_RDONLY directory fd of the staged root,
 * a read-only mount) is the lower layer (a copy of its mount, at
 * <stage>/SUPOVERLAY_ROOT_LAYER/SUPOVERLAY_ROOT_LOWER) of an overlay
 * mounted on <stage>/<name>, over the staged root; its upper and work
 * directories are beside it, on a tmpfs of their own (1 MiB) in
 * <stage>/SUPOVERLAY_ROOT_LAYER: per generation, gone with this mount
 * namespace. runsc's root path is unchanged; what it makes
 * there lands in the upper. Kernel overlayfs or fuse-overlayfs as for the
 * State Anchor (the format this supervisor chose), named
 * SUPOVERLAY_ROOT_SOURCE in the mount table; not a State Anchor's (its
 * owners are not the set-ID responder's: gVisor's own root overlay takes
 * every write of the sandbox).
 */
#define SUPOVERLAY_ROOT_LAYER "root-layer"
#define SUPOVERLAY_ROOT_LOWER "lower"
#define SUPOVERLAY_ROOT_SOURCE "lazaret-root"
int supoverlay_stage_root(int rootfd, int stagefd, const char *stage, const char *name, Helpers *helpers,
                          char **ret_error);
