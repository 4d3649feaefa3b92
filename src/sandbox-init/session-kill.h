/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

/*
 * Ending a Client Session inside the sandbox (`lazaret-init --kill-session
 * SID`, run through `runsc exec` by the coordinator): every process whose
 * session ID is SID gets SIGKILL. gVisor starts each `runsc exec` process as
 * the leader of a session of its own, so SID is the session command's inner
 * PID, and everything it started that did not call setsid() itself is in it,
 * whatever its process group (a shell with job control gives every job one).
 */

/*
 * Reads one /proc/PID/stat line: the state letter and the session ID (the
 * sixth field, counted after the command name, which is in parentheses and
 * may itself contain spaces and parentheses). -EINVAL for anything else.
 */
int proc_stat_session(const char *line, char *ret_state, pid_t *ret_session);

/*
 * Sends SIGKILL to every live process of session sid below proc_dir ("/proc"),
 * except the caller's own, pass after pass, until a pass finds none it had
 * not signalled before (a process that forked before it was killed leaves
 * a child for the next pass). Returns how many processes were signalled,
 * or -EBUSY when 64 passes still found new ones.
 */
int session_kill(const char *proc_dir, pid_t sid);
