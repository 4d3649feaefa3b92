/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

#include "cleanup.h"

/*
 * A helper program run to completion from the event loop: started with
 * spawn() (stdin and stdout on /dev/null), watched through its pidfd, its
 * stderr collected (the first PROCESS_OUTPUT_MAX bytes, trailing blanks
 * trimmed) for messages. done() is called once, from the loop, with the
 * exit status (128+N for a signal), never from process_run() itself;
 * output is the Process's own memory, valid until it is freed.
 * Freeing a Process that still runs kills it.
 */
#define PROCESS_OUTPUT_MAX 4096

typedef struct Process Process;
typedef void (*ProcessDone)(Process *p, int status, const char *output, void *userdata);

int process_run(sd_event *e, char *const *argv, ProcessDone done, void *userdata, Process **ret);
Process *process_free(Process *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Process *, process_free);

/*
 * Watches a started child through its pidfd (taken, also on failure; on
 * failure the child is killed). The source owns the pidfd, not the
 * process: let go of it with event_child_release(), not by unref.
 */
int event_watch_child(sd_event *e, sd_event_source **ret, pid_t pid, int pidfd,
                      sd_event_child_handler_t handler, void *userdata);
/*
 * Frees a source of event_watch_child() without waiting: a child that still
 * runs gets SIGKILL through its pidfd, and the loop reaps it later.
 * Returns NULL.
 */
sd_event_source *event_child_release(sd_event_source *s);

/* Runs argv and forgets it: nobody waits for its result (the loop reaps it). */
int process_run_detached(sd_event *e, char *const *argv);
