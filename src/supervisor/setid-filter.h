/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The set-ID filter: a seccomp filter, allow by default, that refuses with
 * EPERM every host call that would give a file the set-user-ID or
 * set-group-ID bit (the chmod family, and the mode of calls that create
 * files). Loaded before runsc starts, it binds runsc, its gofer and the
 * gVisor kernel, so nothing the sandbox writes on the host carries them.
 * It also refuses a chmod that adds write for group or others, sets the
 * caller's umask to 022 and keeps it there (umask(2) returns 0 and does
 * nothing), and makes every chown to an owner or group other than 0 return
 * 0 without changing anything: no host file becomes writable by others or
 * changes hands.
 */
int setid_filter_load(void);
