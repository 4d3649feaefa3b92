/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include <systemd/sd-bus.h>

/*
 * sd-bus helpers shared by lazaretctl and the coordinator (src/shared knows
 * nothing of sd-bus).
 */

typedef int (*BusAppend)(sd_bus_message *m, void *userdata);

/*
 * Calls org.freedesktop.systemd1.Manager.METHOD on a private connection to
 * the user manager, with its arguments appended by append(), and waits, on
 * the connection's fd, for the JobRemoved signal of the job it returned.
 * *ret_result is the job's result ("done", "failed", ...). -ENOENT when the
 * unit does not exist or cannot be loaded; other errors fill ret_error.
 */
int bus_manager_job_wait(const char *method, BusAppend append, void *userdata, uint64_t timeout_usec,
                         char **ret_result, sd_bus_error *ret_error);

/* append() for the common (unit name, "replace") arguments; userdata is the unit name. */
int bus_append_unit_replace(sd_bus_message *m, void *userdata);
