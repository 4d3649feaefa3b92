/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * How the Runtime Supervisor, its own helpers (lazaret-watch,
 * lazaret-setid-responder) and the workspace view's notifier enter
 * their sandbox once their resources are acquired (slirp4netns' order):
 * harden_drop_privileges() drops every capability, the bounding set too
 * (EPERM there means no CAP_SETPCAP, so nothing to drop: a helper run by
 * hand as a plain user), and sets NO_NEW_PRIVS; harden_load_allowlist()
 * loads a seccomp filter that allows the syscalls numbered in nrs (as
 * SCMP_SYS() gives them; one this kernel's headers do not know is
 * skipped) and kills the process on any other.
 *
 * harden_drop_privileges_keep() keeps the capabilities whose bits are set
 * in keep (1 << CAP_CHOWN, ...), effective and permitted, and drops the
 * rest the same way: for lazaret-setid-responder, which applies a chown
 * or chmod on a State Anchor overlay.
 */
int harden_drop_privileges(void);
int harden_drop_privileges_keep(uint64_t keep);
int harden_load_allowlist(const int *nrs, size_t n);
