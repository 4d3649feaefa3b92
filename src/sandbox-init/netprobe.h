/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>

/*
 * Probes the canaries at ALLOWED and DENIED (dotted IPv4) on PORT from this
 * sandbox's network stack and writes the report, ending in "end", to OUT.
 * 0, or -EIO when the report could not be written.
 */
int netprobe_report(FILE *out, const char *allowed, const char *denied, int port);

/*
 * Copies the routes of a /proc/net/route table read from IN to OUT as
 * "route" lines, each column checked (hex where the kernel prints hex);
 * the first line it cannot read ends the copy with a "route-error" line,
 * so that a table read in part is never reported as the whole.
 */
void netprobe_dump_routes(FILE *in, FILE *out);
