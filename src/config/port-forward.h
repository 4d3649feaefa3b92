/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Published ports (spec section 4.5, "Published ports"): a TCP port of the
 * sandbox forwarded by slirp4netns to a port of the host's loopback, and
 * nothing else. Pure: the rules of a forward, the "[HOST_PORT:]PORT" form
 * the profile and lazaretctl use, and the codec of the slirp4netns API
 * socket's three requests (one JSON object per connection, answered by one
 * JSON object, then EOF).
 */

#define PORT_HOST_ADDRESS "127.0.0.1"
/* An unprivileged user cannot bind below this on the host (ip_unprivileged_port_start's default). */
#define PORT_HOST_MIN 1024
/* Forwards one Domain may hold at once (the profile's and lazaretctl's together). */
#define PORT_PUBLISH_MAX 32
/* The longest answer of the API socket read (a list of PORT_PUBLISH_MAX entries fits many times). */
#define SLIRP_API_REPLY_MAX 16384
/* "65535:65535" */
#define PORT_FORWARD_STRING_MAX 12

typedef struct PortForward {
        uint16_t host_port;     /* on 127.0.0.1 of the host */
        uint16_t guest_port;    /* on the sandbox's address, 10.137.54.100 */
} PortForward;

/*
 * Whether a forward of host_port to guest_port may be asked for: both in
 * 1..65535, host_port at least PORT_HOST_MIN (guest ports below it are fine:
 * root inside may listen there). -EINVAL or -EPERM, with a sentence in
 * *ret_why (static text or NULL) naming what is wrong; 0 when valid.
 */
int port_forward_check(uint32_t host_port, uint32_t guest_port, char **ret_why);

/*
 * "PORT" (host port = PORT) or "HOST_PORT:PORT": plain decimal numbers, no
 * sign, space or leading zero. *ret written only on success; on failure
 * *ret_why (allocated) says what is wrong with s.
 */
int port_forward_parse(const char *s, PortForward *ret, char **ret_why);
/* "HOST_PORT:PORT", always both. */
void port_forward_format(const PortForward *f, char buf[static PORT_FORWARD_STRING_MAX]);

/* The requests: a JSON object each, allocated. */
int slirp_api_add_request(const PortForward *f, char **ret);
int slirp_api_remove_request(int id, char **ret);

/*
 * An answer of the API socket: {"return":{...}} or {"error":{"desc":"..."}}.
 * For add_hostfwd, *ret_id is the forward's ID (1..INT32_MAX). 1 for a
 * "return", 0 for an "error" (its description, sanitised to printable
 * ASCII and cut at 200 bytes, in *ret_desc), -EBADMSG for anything else.
 */
int slirp_api_parse_add_reply(const char *buf, size_t n, int *ret_id, char **ret_desc);
int slirp_api_parse_remove_reply(const char *buf, size_t n, char **ret_desc);
