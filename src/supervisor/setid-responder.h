/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "setid-mode.h"

/*
 * The set-ID filter's responder (spec C22, C24): the set-ID filter hands
 * some host calls to its seccomp listener instead of deciding them itself,
 * and this answers them. The file is judged by its fd: on a State Anchor
 * overlay (its file system one of `anchors`, AnchorId in setid-mode.h; the
 * Domain's own state, issue 33) a call is applied as asked; anywhere else
 * (the workspace, volumes, runsc's standard streams) the rules of C22 and
 * C24 stand:
 *
 *   - fchmod(fd, mode) with S_ISUID, S_ISGID, S_IWGRP or S_IWOTH in mode:
 *     on a State Anchor, the mode as asked. Elsewhere write for group or
 *     others is refused with EPERM, and the rest applied without a set-ID
 *     bit the file does not have already (setid_permitted_mode()): dpkg's
 *     "create with mode 0, then fchmod 04755" gives 0755 instead of
 *     leaving 0000, and no host file gets a new set-ID bit.
 *   - fchown(fd, ...) and fchownat(fd, "", ..., AT_EMPTY_PATH), gVisor's
 *     chown: on a State Anchor, applied (a path that is not empty is not
 *     gVisor's form: answered as elsewhere); elsewhere 0, nothing changed.
 *   - fgetxattr(fd, ...) and flistxattr(fd, ...): on an O_PATH fd, which
 *     gVisor 0.0~20240729's directfs passes for symbolic links and which
 *     the host refuses with EBADF (so `ls -l` printed "Bad file
 *     descriptor" for every link), the answer is ENODATA and an empty list,
 *     what Linux says for a link without attributes; on any other fd the
 *     call goes on as asked (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
 *
 * The file is reached with pidfd_getfd() on the calling thread, checked
 * still to be the caller afterwards (SECCOMP_IOCTL_NOTIF_ID_VALID), and the
 * call is made on that copy, never by continuing the caller's own (whose
 * fd number another thread could reuse meanwhile). Where that fails (a
 * kernel without PIDFD_THREAD, the caller gone), the answers of before
 * stand: EPERM for the fchmod, 0 for a chown, the call itself for the
 * others. The IDs of a chown are the caller's; runsc's sandbox shares the
 * supervisor's user namespace, so they are the responder's too.
 *
 * The responder runs outside the filter (its own calls would otherwise
 * come back to it): it is started before the filter is loaded and
 * receives the listener over a socket (setid_listener_send/_receive()).
 * It keeps CAP_CHOWN, CAP_FOWNER and CAP_FSETID of the supervisor's user
 * namespace, which reach the developer's files and the subordinate IDs'.
 *
 * setid_responder_serve() asks for synchronous wake-ups on the listener
 * (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6: caller and responder
 * hand the CPU to each other), and answers until the listener fails; it needs only
 * ioctl, pidfd_open, pidfd_getfd, process_vm_readv, fcntl, fstat, fstatfs,
 * fchmod, fchownat and close.
 */
int setid_responder_serve(int notify_fd, const AnchorId *anchors, size_t n_anchors);

/* The listener fd over a unix socket (SCM_RIGHTS), one message. */
int setid_listener_send(int sock, int fd);
int setid_listener_receive(int sock, int *ret_fd);
