/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The set-ID filter: a seccomp filter, allow by default, that refuses with
 * EPERM every host call that would give a file the set-user-ID or
 * set-group-ID bit (the chmod family, and the mode of calls that create
 * files), except fchmod, whose set-ID bits its responder strips. Loaded before runsc starts, it binds runsc, its gofer and the
 * gVisor kernel, so nothing the sandbox writes on the host carries them.
 * It also refuses a chmod that adds write for group or others, sets the
 * caller's umask to 022 and keeps it there (umask(2) returns 0 and does
 * nothing), and makes every chown to an owner or group other than 0 return
 * 0 without changing anything: no host file becomes writable by others or
 * changes hands.
 *
 * Two kinds of calls go to the filter's listener, *ret_notify_fd, which a
 * responder must serve from the moment the filter is loaded (a call
 * waits for its answer): fchmod with a set-ID bit, and fgetxattr and
 * flistxattr (setid-responder.h says what it answers).
 */
int setid_filter_load(int *ret_notify_fd);
