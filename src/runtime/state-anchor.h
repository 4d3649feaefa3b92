/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "domain.h"      /* STATE_ANCHOR_DIR, STATE_ANCHOR_TRASH_DIR: the Domain Root's layout */

/*
 * The State Anchor's layout in the Domain Root (spec §4.6), pure:
 *
 *   <Domain Root>/state/                       0700, the Domain's persistent layers
 *   <Domain Root>/state/<layer name>/          one per persistent_dirs entry, 0700
 *                                   upper/     the overlay's upper layer (mode of the lower's directory)
 *                                   work/      the overlay's work directory
 *                                   empty/     the lower, when the image has no such directory
 *                                   owners-kept  the layer keeps owners and modes as written
 *                                              (made with the layer; an older layer lacks it)
 *
 *   <Domain Root>/state/.dpkg-base             the image's dpkg status hash the persisted
 *                                              package database was made over
 *   <Domain Root>/state/.package-database-stale   present while it no longer matches
 *
 * The layer name of a sandbox path is its systemd-style escape ("/usr" is
 * "usr", "/var/lib" is "var-lib", "/opt/my-tools" is "opt-my\x2dtools"):
 * one directory name per path, different paths never share one.
 */

#define STATE_ANCHOR_UPPER "upper"
#define STATE_ANCHOR_WORK "work"
#define STATE_ANCHOR_EMPTY_LOWER "empty"
/* Present in a layer made by a Lazaret that keeps owners and modes inside
 * (issue 33); a layer with an upper and without it was written before. */
#define STATE_ANCHOR_OWNERS_KEPT "owners-kept"
/* Records of the Domain's own: a leading dot, which no layer name has. */
#define STATE_ANCHOR_DPKG_BASE ".dpkg-base"
#define STATE_ANCHOR_DPKG_STALE ".package-database-stale"

/* The overlay file system a supervisor mount entry of the State Anchor asks for. */
#define STATE_ANCHOR_FSTYPE "overlay"

/* The files Lazaret puts into every sandbox itself, never persisted (seed 001). */
extern const char *const state_anchor_excluded[];

/* The layer name of a clean absolute sandbox path other than "/"; -EINVAL otherwise. */
int state_anchor_layer_name(const char *sandbox_path, char **ret);

/* The sandbox path of a layer name; -EINVAL if name is not one state_anchor_layer_name() makes. */
int state_anchor_layer_path(const char *name, char **ret);

/* Whether path is one of state_anchor_excluded[]. */
bool state_anchor_is_excluded(const char *path);


typedef enum StateChange {
        STATE_CHANGE_NONE,              /* not a change of its own (an opaque marker, the layer's root) */
        STATE_CHANGE_WRITTEN,           /* added, or changed against the lower */
        STATE_CHANGE_DELETED,           /* a whiteout: the lower's entry is hidden */
        STATE_CHANGE_REPLACED,          /* an opaque directory: the lower's contents are hidden */
} StateChange;

const char *state_change_to_string(StateChange c);

/*
 * What an entry of an upper layer means, from its name and lstat() (and,
 * for a directory, whether it carries an opaque mark): kernel overlayfs
 * whiteouts are 0/0 character devices, fuse-overlayfs' may also be
 * ".wh.NAME" files (then *ret_name, if not NULL, is NAME, pointing into
 * name) and ".wh..wh..opq" marks its directory opaque.
 */
StateChange state_anchor_classify(const char *name, unsigned mode, unsigned long long rdev, bool opaque,
                                  const char **ret_name);
