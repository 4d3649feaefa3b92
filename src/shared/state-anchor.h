/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/*
 * The State Anchor's layout in the Domain Root (spec §4.6), pure:
 *
 *   <Domain Root>/state/                       0700, the Domain's persistent layers
 *   <Domain Root>/state/<layer name>/          one per persistent_dirs entry, 0700
 *                                   upper/     the overlay's upper layer (mode of the lower's directory)
 *                                   work/      the overlay's work directory
 *                                   empty/     the lower, when the image has no such directory
 *
 * The layer name of a sandbox path is its systemd-style escape ("/usr" is
 * "usr", "/var/lib" is "var-lib", "/opt/my-tools" is "opt-my\x2dtools"):
 * one directory name per path, different paths never share one.
 */

#define STATE_ANCHOR_DIR "state"
#define STATE_ANCHOR_UPPER "upper"
#define STATE_ANCHOR_WORK "work"
#define STATE_ANCHOR_EMPTY_LOWER "empty"

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
