/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "cleanup.h"
#include "subid.h"

/*
 * A child in a caller-configured user namespace (SR-12): the child unshares
 * CLONE_NEWUSER and waits; the coordinator writes its maps with the setuid
 * newuidmap/newgidmap (ns 0 -> our uid/gid, ns 1..65536 -> our subordinate
 * range), reads them back, and reports mapped(). The child becomes root of
 * its namespace and execs argv only after userns_child_go().
 *
 * The child gets keep_fd as fd 3 and stderr_fd (when >= 0, else /dev/null)
 * as its standard error. It is watched through a pidfd from the start:
 * exited() is reported at any time, from the loop.
 */
typedef struct UsernsChild UsernsChild;
typedef struct UsernsCallbacks {
        void (*mapped)(UsernsChild *c, void *userdata);
        void (*failed)(UsernsChild *c, const char *why, void *userdata);
        void (*exited)(UsernsChild *c, int status, void *userdata);
} UsernsCallbacks;

int userns_child_start(sd_event *e, char *const *argv, int keep_fd, int stderr_fd, const SubidRange *uids,
                       const SubidRange *gids,
                       const UsernsCallbacks *cb, void *userdata, UsernsChild **ret);
pid_t userns_child_pid(const UsernsChild *c);
/* Lets the mapped child exec. */
int userns_child_go(UsernsChild *c);
/* Kills the child if it still runs. */
UsernsChild *userns_child_free(UsernsChild *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(UsernsChild *, userns_child_free);
