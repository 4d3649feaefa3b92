/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>

/*
 * Probes the canaries at ALLOWED and DENIED (dotted IPv4) on PORT from this
 * sandbox's network stack and writes the report, ending in "end", to OUT.
 * 0, or -EIO when the report could not be written.
 */
int netprobe_report(FILE *out, const char *allowed, const char *denied, int port);
