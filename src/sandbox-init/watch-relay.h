/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/*
 * The host-edit relay inside the sandbox (spec section 4.6). gVisor's
 * inotify sees only changes made inside the sandbox; this loop reads the
 * workspace-relative paths that the host's source found changed on the
 * host from channel_fd and makes each fire an event for the watchers
 * inside through watch_trigger().
 *
 * judged: the source is the workspace view, which already told the
 * sandbox's own changes from the host's (spec 6.4), so every path is
 * triggered and nothing is watched inside. Otherwise (the plain bind, whose
 * source lazaret-watch sees every change) a path that the sandbox itself
 * changed within WATCH_ECHO_WINDOW_MS is not triggered again: the relay
 * watches the workspace inside too, and gVisor's own events are exactly
 * the sandbox's changes. Returns when the channel reaches EOF.
 */
int watch_relay_run(const char *workspace, int channel_fd, bool judged);
