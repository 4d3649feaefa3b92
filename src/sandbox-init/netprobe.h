/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>

/*
 * The name canaries of a profile with host rules (spec 4.5): the sandbox's
 * resolver (the egress helper), a name it allows and carries to the canary
 * responder, a name no rule allows, a synthetic address no name resolved
 * to, and the address the helper bound to the allowed name when it started
 * (addresses dotted IPv4).
 */
typedef struct NetprobeNames {
        const char *resolver;
        const char *allowed;
        const char *denied;
        const char *unbound;
        const char *bound;
} NetprobeNames;

/*
 * Probes the canary at DENIED (dotted IPv4) on PORT from this sandbox's
 * network stack, and the one at ALLOWED when NAMES is NULL or, when it is
 * not, the name canaries in its place, and writes the report, ending in
 * "end", to OUT. 0, or -EIO when the report could not be written.
 */
int netprobe_report(FILE *out, const char *allowed, const char *denied, int port, const NetprobeNames *names);

/*
 * Copies the routes of a /proc/net/route table read from IN to OUT as
 * "route" lines, each column checked (hex where the kernel prints hex);
 * the first line it cannot read ends the copy with a "route-error" line,
 * so that a table read in part is never reported as the whole.
 */
void netprobe_dump_routes(FILE *in, FILE *out);
