/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

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

/*
 * Runs fn(out_fd, userdata) in a child of ours that is root of a user
 * namespace mapped as verb_unshare() maps it (only the user namespace is
 * new), and returns what it wrote to out_fd, NUL-terminated, at most max
 * bytes, in *ret. For reading what lies below a subordinate ID's 0700
 * directory. Quiet: a namespace that cannot be made (no subordinate IDs,
 * no newuidmap, NoNewPrivileges) is a negative errno and nothing printed,
 * so that the caller can fall back; -EIO when fn failed.
 */
typedef int (*UnshareFn)(int out_fd, void *userdata);
int unshare_call(UnshareFn fn, void *userdata, size_t max, char **ret, size_t *ret_len);
