/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "config.h"

/*
 * lazaretctl unshare [--] CMD [ARG...]: runs CMD on the host in a new user
 * namespace mapped like every Domain's (ns 0 -> the user, ns 1..65536 -> the
 * user's subordinate range), as root of it, in the current directory; for
 * removing files the sandbox chowned to subordinate IDs. Returns CMD's exit
 * status (128+N for signal N), 127 when CMD is not found, or a negative
 * errno after printing why.
 */
int verb_unshare(int argc, char *argv[], const Config *config);
