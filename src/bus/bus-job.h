/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-util.h"
#include "cleanup.h"

/*
 * A job of the user manager (StartTransientUnit, StopUnit, ...) followed on
 * the caller's own bus connection, without waiting: JobRemoved is matched
 * before the call, the reply names the job, and done() is called once, from
 * the event loop, with the job's result ("done", "failed", "canceled",
 * "timeout", ...), or "no-such-unit" when the unit does not exist, or
 * "error" with the bus error. A timer ends the wait with "timeout".
 */
typedef struct BusJob BusJob;
typedef void (*BusJobDone)(BusJob *j, const char *result, const sd_bus_error *error, void *userdata);

int bus_job_start(sd_bus *bus, const char *method, BusAppend append, void *append_data, uint64_t timeout_usec,
                  BusJobDone done, void *userdata, BusJob **ret);
BusJob *bus_job_free(BusJob *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusJob *, bus_job_free);
