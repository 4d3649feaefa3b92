/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

#include "cleanup.h"
#include "supervisor-proto.h"

/*
 * The coordinator's end of the Runtime Supervisor's control socket
 * (SOCK_SEQPACKET). Every datagram is decoded with the supervisor protocol
 * codec; message() hears each valid one, closed() the end of the socket or
 * a datagram outside the protocol (with why). A MAILBOX message's
 * descriptor is fd, owned by message() from then on (-EBADF for the other
 * messages). Closing our end (freeing the link) tells the supervisor to exit.
 */
typedef struct SupervisorLink SupervisorLink;
typedef struct SupervisorLinkCallbacks {
        void (*message)(SupervisorLink *l, const SupervisorMsg *msg, int fd, void *userdata);
        void (*closed)(SupervisorLink *l, const char *why, void *userdata);
} SupervisorLinkCallbacks;

/* Takes fd. */
int supervisor_link_new(sd_event *e, int fd, const SupervisorLinkCallbacks *cb, void *userdata, SupervisorLink **ret);
SupervisorLink *supervisor_link_free(SupervisorLink *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(SupervisorLink *, supervisor_link_free);
