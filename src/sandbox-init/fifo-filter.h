/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Installs, in the calling process and everything it starts, a seccomp
 * filter under which mknod(2) and mknodat(2) of a FIFO fail with EPERM
 * ("the file system does not support the type of node requested"). gVisor
 * 20240729 cannot create a FIFO on a host-backed mount (/workspace, the
 * volumes): it keeps one in the sandbox's memory instead, listed inside and
 * absent on the host. One path cannot be told from another in a seccomp
 * filter, so FIFOs are refused everywhere inside. Sets no_new_privs first.
 * 0 or a negative errno.
 */
int fifo_filter_install(void);
