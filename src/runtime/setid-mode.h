/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

/*
 * The mode a host file gets when the sandbox asks for `requested` on a file
 * whose mode is `current` (spec C22): everything asked for, except a
 * set-user-ID or set-group-ID bit the file does not have already. A bit
 * the file has (the host's own set-ID file, a directory that inherited
 * S_ISGID) is kept when asked for and dropped when not; a new one is never
 * given. Only the permission bits (07777) of either mode count.
 */
mode_t setid_permitted_mode(mode_t requested, mode_t current);
