/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "config.h"

/*
 * lazaretctl state: the State Anchor of a Domain, from the host (FR-11,
 * SR-14, OR-5), by Domain and never by an arbitrary path.
 *
 *   state list                         every Domain that has State Anchor layers
 *   state inspect [DOMAIN-ID]          one Domain's layers: sizes, what changed
 *                                      against the image (paths, never contents)
 *   state verify [DOMAIN-ID]           the layers' structure; needs the Domain lock
 *   state reset [DOMAIN-ID] [PATH]     empties one persistent path, or all of them;
 *                                      needs the Domain lock; asks first (--yes)
 *   state gc                           removes prepared lowers no running Domain leased
 *                                      (its Domain Store, read-only) and failed preparations
 *
 * The Domain is the one given, or that of the profile and workspace. verify
 * and reset take the Domain lock (<Domain Root>/coordinator.lock) and refuse
 * while a coordinator holds it, that is, while a session, the sandbox or
 * its overlay mounts may use the state. A reset moves the layer (or the
 * whole state directory) into <Domain Root>/state-trash/ by one rename and
 * then deletes it as root of a user namespace mapped like the sandbox's
 * (the layers hold files of subordinate IDs): killed at any instant, the
 * next launch sees the old layer or none, never a mix; a later reset
 * removes what a killed one left in the trash.
 */
void state_set_yes(bool yes);
int verb_state(int argc, char *argv[], const Config *config);
