/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * How lazaret-egress enters its sandbox once every resource is acquired
 * (the tap, the upstream socket, the API socket, libslirp's forwards) and
 * before it reads a frame (spec section 4.5, "Egress by name": "The
 * helper's own confinement"), slirp4netns' order:
 *
 *   1. a private mount namespace whose root is an empty read-only tmpfs,
 *      holding only run_dir (bound at its own path, read-write: the
 *      listeners the helper binds for names it binds later, and the paths
 *      libslirp connects to) and, when canary_socket lies outside run_dir,
 *      that one socket (bound at its own path);
 *   2. every capability dropped, NO_NEW_PRIVS set (harden.h);
 *   3. a seccomp allowlist (EGRESS_SYSCALLS in egress-confine.c, derived
 *      by running the egress tests under strace -f; socket() for AF_INET
 *      and AF_UNIX only), any other system call killing the process
 *      (SIGSYS, which the supervisor reports as the helper's death, and
 *      the kernel's audit log records).
 *
 * The mount namespace needs CAP_SYS_ADMIN over the helper's user
 * namespace, which the helper has as the supervisor's child (root of the
 * Domain's user namespace) and needs anyway to open the tap (setns(2) asks
 * for it in the caller's own user namespace). On failure the helper must
 * not go on: -errno, with a sentence.
 */
int egress_confine(const char *run_dir, const char *canary_socket, char **ret_error);
