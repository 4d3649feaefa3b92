/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/*
 * The Domain's Agent Sandbox as seen from the coordinator: the prepared
 * root file system, the Runtime Supervisor child in its caller-configured
 * user namespace (inside the transient scope lazaret-ID-sandbox.scope), the
 * runsc container, and the `runsc exec` clients of the sessions.
 */

Sandbox *sandbox_free(Sandbox *sb);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sandbox *, sandbox_free);
int sandbox_new(Manager *m, Sandbox **ret);
const char *sandbox_id(const Sandbox *sb);
/* The image's default command, or NULL when it has none. */
char **sandbox_default_command(const Sandbox *sb);

/* Stops a stale scope and removes stale runtime files of this Domain (FR-7). */
int sandbox_recover(Sandbox *sb);

/* Prepares and starts; calls manager_sandbox_ready() or manager_sandbox_failed(). */
int sandbox_start(Sandbox *sb);

/*
 * Stops everything. Returns 1 when stopping is under way (the manager hears
 * manager_sandbox_stopped() later), 0 when there was nothing to stop.
 */
int sandbox_stop(Sandbox *sb);

/* Starts a session's `runsc exec` client with the given stdio; sets s->pid. */
int sandbox_spawn_session(Sandbox *sb, Session *s, char **env, const int stdio[3]);
/* Delivers a signal: to the foreground process group (terminal events) or the session's process. */
int sandbox_signal_session(Sandbox *sb, Session *s, int sig, bool foreground);
/* Kills the session's process inside; its runsc exec client then exits. */
int sandbox_kill_session(Sandbox *sb, Session *s);
