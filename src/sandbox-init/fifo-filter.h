/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <linux/filter.h>

/*
 * A seccomp filter under which mknod(2) and mknodat(2) of a FIFO fail with
 * EPERM ("the file system does not support the type of node requested").
 * gVisor 20240729 cannot create a FIFO on a host-backed mount (/workspace,
 * the volumes): it keeps one in the sandbox's memory instead, listed inside
 * and absent on the host. One path cannot be told from another in a seccomp
 * filter, so FIFOs are refused everywhere inside. lazaret-exec installs it
 * (PR_SET_SECCOMP, after PR_SET_NO_NEW_PRIVS) before it executes a
 * session's command, which keeps it with everything it starts.
 *
 * Only linux/ headers: lazaret-exec has no C library.
 */
extern const struct sock_fprog fifo_filter;
