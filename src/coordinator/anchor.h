/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "domain.h"
#include "mount-plan.h"

/*
 * The State Anchor's part of the mount plan (SR-14, FR-4): for each of the
 * profile's persistent_dirs, in order, one MOUNT_SUPERVISOR entry of type
 * "overlay" at that path whose source is the prepared lower's directory
 * (opened below rootfd without following anything; a missing one is an
 * empty directory of the layer) and whose data is the layer directory
 * <Domain Root>/state/<layer name>/ (created 0700 here), in which the
 * supervisor keeps upper/ and work/ (state-anchor.h). A persistent path
 * that is a symbolic link or not a directory in the image is refused by
 * name. When the layer holding /var/lib/dpkg/status has its own copy and
 * the image's copy changed since, *ret_notice (if not NULL) says so in one
 * line (FR-22). Plain file work in the Domain Root, no children.
 */
int anchor_plan(const Domain *d, int rootfd, const char *rootfs, MountPlan *plan, char **ret_notice, char **ret_error);

/*
 * After the overlays ended (the supervisor's mount namespace is gone): the
 * work directories overlayfs left behind (work/work, mode 0000) are
 * removed, so that nothing in the Domain Root is unreadable to the user.
 */
void anchor_release(const Domain *d);
