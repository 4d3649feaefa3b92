/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host-edit relay's channel (spec 4.6): the paths of host changes the
 * watcher judged not to be the sandbox's own.
 */
#include "view.h"

/* Whether the sandbox sees the host's entry name of host directory dir, and its path then. With v->lock held. */
bool relay_path(View *v, Node *dir, const char *name, const struct stat *st, bool exists, char *buf, size_t size) {
        size_t len;

        if (startswith(name, RENAME_TMP_PREFIX) || node_relpath(v, dir, name, buf, size) < 0)
                return false;
        len = strlen(buf);
        if (!watch_path_valid(buf, len) || watch_path_skipped(buf))
                return false;
        /* Shadowed by Domain state (ignored, a protected copy or a whiteout): the host's change is invisible inside. */
        if (class_of(v, dir, name, exists && S_ISDIR(st->st_mode)) == VIEW_IGNORED)
                return false;
        if (state_holds(v, dir, name))
                return false;
        return true;
}

/* The relay's queued lines, after the invalidations they follow (notify_fence()). */
void relay_flush(View *v) {
        if (v->relay.n > 0 && v->notify_fence_owed)
                notify_fence(v);
        (void) watch_out_flush(&v->relay);
}
