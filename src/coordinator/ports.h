/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <systemd/sd-event.h>

#include "cleanup.h"
#include "port-forward.h"

/*
 * The Domain's published ports (spec section 4.5): forwards of a sandbox
 * port to 127.0.0.1 of the host, asked of slirp4netns over its API socket,
 * whose path the coordinator chose and the supervisor handed to
 * slirp4netns. Requests run one at a time from the event loop, in the
 * order asked: a non-blocking connect, one request, the answer read to
 * EOF, at most PORTS_REQUEST_TIMEOUT_USEC. Nothing waits in the loop.
 *
 * done() hears each request's end, always from the loop, never from
 * inside ports_publish() or ports_unpublish(): r >= 0 on success; else
 * why is one sentence for a person (the host port in use, below 1024,
 * published already, slirp4netns' own refusal). The forwards die with
 * slirp4netns, that is with the sandbox: the table is dropped with it.
 */
typedef struct Ports Ports;
typedef void (*PortsDone)(Ports *p, int r, const char *why, const PortForward *f, void *userdata);

#define PORTS_REQUEST_TIMEOUT_USEC (5ULL * 1000 * 1000)

int ports_new(sd_event *e, const char *api_socket, Ports **ret);
/* Requests not yet answered end with done(-ECANCELED, "the Domain is stopping"). */
Ports *ports_free(Ports *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Ports *, ports_free);

/* Queues a request; < 0 only when it could not be queued (done() is then not called). */
int ports_publish(Ports *p, const PortForward *f, PortsDone done, void *userdata);
int ports_unpublish(Ports *p, uint16_t host_port, PortsDone done, void *userdata);

/* The forwards in force, in the order they were published; borrowed. */
size_t ports_list(const Ports *p, const PortForward **ret);
