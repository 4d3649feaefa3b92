/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
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

/*
 * Which file system an open file lives on, as the set-ID responder judges
 * "is this a State Anchor overlay?" (spec C22, issue 33). Not a mount (runsc
 * binds the supervisor's overlay into namespaces of its own, and a bind is
 * another mount) but the superblock, which every bind shares:
 *   - kernel overlayfs: its f_type and f_fsid, which it derives from the
 *     overlay's own UUID (the supervisor mounts with uuid=on, kept in the
 *     upper layer's root); a device number would not do, since overlayfs
 *     reports a lower file system's for files when the layers lie on two;
 *   - FUSE (fuse-overlayfs): its f_type and the device number, which FUSE
 *     gives every file of the mount and no other mount (its f_fsid is 0).
 * Any other file system's identity is its f_type and f_fsid too.
 */
typedef struct AnchorId {
        uint64_t type;
        uint64_t key;
} AnchorId;

#define ANCHOR_ID_STRING_MAX 40         /* "%" PRIx64 ":" "%" PRIx64 and the NUL */

/* The identity of the file system fd lives on; < 0 if it cannot be asked. */
int anchor_id_of_fd(int fd, AnchorId *ret);
/* "TYPE:KEY" in hex, into buf (ANCHOR_ID_STRING_MAX). */
void anchor_id_format(const AnchorId *id, char *buf);
/* The reverse; -EINVAL for anything else. */
int anchor_id_parse(const char *s, AnchorId *ret);
bool anchor_id_in(const AnchorId *id, const AnchorId *set, size_t n);
