/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/*
 * sd-bus helpers shared by lazaretctl and the coordinator (src/shared knows
 * nothing of sd-bus).
 */

typedef int (*BusAppend)(sd_bus_message *m, void *userdata);

/* append() for the common (unit name, "replace") arguments; userdata is the unit name. */
int bus_append_unit_replace(sd_bus_message *m, void *userdata);

/*
 * Registers the org.lazaret.Domain1 error names with the errno each stands
 * for, so that sd_bus_error_set*() returns a meaningful negative errno for
 * them and clients can map replies back. Once per process.
 */
int bus_register_error_map(void);
