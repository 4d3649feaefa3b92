/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "cleanup.h"

/*
 * A spare for the next approved host command of a Domain (spec 5.6 step
 * 4): lazaret-spare started ahead of time, with the command environment,
 * in a transient scope of its own, lazaret-<domain>-esc-<spare>.scope
 * (StartTransientUnit, followed without waiting), waiting on a socket.
 * spare_run() hands it a command; it is sent only once the scope holds
 * the spare, so the command never runs outside it, and at once when it
 * does. The owner learns through callbacks, from the event loop:
 * failed() when the spare cannot run what it was given (no scope, it
 * died first, the hand-over failed), exited() when the command (or an
 * idle spare) ended. Freeing a spare kills it with its process group and
 * stops its scope, without waiting.
 */
typedef struct Spare Spare;

typedef struct SpareCallbacks {
        void (*failed)(Spare *s, const char *why, void *userdata);
        void (*exited)(Spare *s, int status, void *userdata);
        /* The command was handed over inside the scope. */
        void (*started)(Spare *s, void *userdata);
} SpareCallbacks;

typedef struct SpareParams {
        sd_event *event;
        sd_bus *bus;                    /* the user bus; NULL: no scope, the spare is ready at once */
        const char *domain_id;
        char *const *envp;              /* what the command gets */
        SpareCallbacks cb;
        void *userdata;
} SpareParams;

int spare_new(const SpareParams *p, Spare **ret);
Spare *spare_free(Spare *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Spare *, spare_free);

/* The owner changes: callbacks go to cb and userdata from now on. */
void spare_set_callbacks(Spare *s, const SpareCallbacks *cb, void *userdata);

/*
 * Runs program (absolute) with argv in cwd_fd (duplicated), stdout to
 * out_fd and stderr to err_fd (both taken, also on failure). Once only.
 * Returns 1 when the command was handed over at once (the scope was
 * there), 0 when it follows the scope (then started() or failed() says
 * how it went), or a negative errno; never calls back itself.
 */
int spare_run(Spare *s, const char *program, char *const *argv, int cwd_fd, int out_fd, int err_fd);

pid_t spare_pid(const Spare *s);
const char *spare_scope(const Spare *s);
