/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "config.h"

struct json_object;

/*
 * lazaretctl changes [--diff PATH]
 * lazaretctl changes apply [--force] [--git-control] (--all | PATH...)
 * lazaretctl changes discard (--all | PATH...)
 * lazaretctl changes --ignored
 *
 * The workspace view's pending protected changes of the current Domain
 * (view-changes.h): listed (names, kinds, sizes; contents only with
 * --diff), applied to the host or discarded. Apply and discard run only
 * while the Domain is stopped, holding its coordinator.lock. --ignored
 * lists instead the host paths that Ignored Workspace State shadows
 * (view-ignored.h): names, kinds and sizes.
 */
int verb_changes(int argc, char *argv[], const Config *config);

/* Options of "changes" only (set by the option parser). */
void changes_set_diff(const char *path);
void changes_set_all(bool b);
void changes_set_force(bool b);
void changes_set_git_control(bool b);
void changes_set_ignored(bool b);

/*
 * The view's protections in effect for the Domain id (NULL: that of the
 * current profile and workspace) and the count of its pending changes:
 * added to o as "View" (when o is not NULL), else printed as lines of
 * `lazaretctl status`. running: the running Domain's properties (NULL when
 * it does not run), whose MountPlan says what its view was given: the
 * paths the hooks named at its start are shown, and those they name now
 * beyond them as to protect after a restart. Problems are reported in it,
 * never fatal.
 */
int changes_status(const Config *config, const char *id, struct json_object *o, struct json_object *running);

/*
 * For lazaretctl launch, to be said once the Domain runs: the line(s) for
 * standard error when commits made since the Domain's earlier start change
 * protected paths (how many, the first, where to review), or when they
 * cannot be checked; NULL otherwise (a reason it could not look at all is
 * printed at once). The caller prints and frees it. launch asks for it in a
 * child process while it waits for the bus and the coordinator's answer
 * (notice_start() in launch.c).
 */
char *changes_launch_notice(const Config *config);
