/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The set-ID filter's responder (spec C22): the set-ID filter hands two
 * kinds of host calls to its seccomp listener instead of deciding them
 * itself, and this answers them:
 *
 *   - fchmod(fd, mode) with S_ISUID or S_ISGID in mode (and no write for
 *     group or others, which the filter refuses itself): the responder
 *     applies the mode to the same open file without a set-ID bit the file
 *     does not have already (setid_permitted_mode()), and returns what that
 *     fchmod returned. So dpkg's "create with mode 0, then fchmod 04755"
 *     gives 0755 instead of leaving 0000, and no host file gets a new
 *     set-ID bit.
 *   - fgetxattr(fd, ...) and flistxattr(fd, ...): on an O_PATH fd, which
 *     gVisor 0.0~20240729's directfs passes for symbolic links and which
 *     the host refuses with EBADF (so `ls -l` printed "Bad file
 *     descriptor" for every link), the answer is ENODATA and an empty list,
 *     what Linux says for a link without attributes; on any other fd the
 *     call goes on as asked (SECCOMP_USER_NOTIF_FLAG_CONTINUE).
 *
 * The file is reached with pidfd_getfd() on the calling thread, checked
 * still to be the caller afterwards (SECCOMP_IOCTL_NOTIF_ID_VALID). Where
 * that fails (a kernel without PIDFD_THREAD, the caller gone), the old
 * answers stand: EPERM for the fchmod, the call itself for the others.
 *
 * setid_responder_serve() answers until the listener fails; it needs only
 * ioctl, pidfd_open, pidfd_getfd, fcntl, fstat, fchmod and close.
 */
int setid_responder_serve(int notify_fd);
