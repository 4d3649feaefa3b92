/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

#include <systemd/sd-bus.h>

/*
 * sd-bus helpers shared by lazaretctl and the coordinator (no other library
 * of src/ knows sd-bus: src/layers.txt).
 */

typedef int (*BusAppend)(sd_bus_message *m, void *userdata);

/* append() for the common (unit name, "replace") arguments; userdata is the unit name. */
int bus_append_unit_replace(sd_bus_message *m, void *userdata);

/*
 * The start of StartTransientUnit's arguments for a scope holding pid: the
 * name, mode "fail", and, in the opened property array, Description, PIDs,
 * CollectMode=inactive-or-failed, KillMode=control-group and
 * KillSignal=SIGKILL (nothing Lazaret puts in a scope has state worth a
 * graceful stop). The caller appends its own properties, then calls
 * bus_append_scope_end().
 */
int bus_append_scope_begin(sd_bus_message *m, const char *scope, const char *description, pid_t pid);
/* Closes the property array and appends the empty auxiliary unit list. */
int bus_append_scope_bound_to(sd_bus_message *m, const char *service);
int bus_append_scope_end(sd_bus_message *m);

/*
 * Registers the org.lazaret.Domain1 error names with the errno each stands
 * for, so that sd_bus_error_set*() returns a meaningful negative errno for
 * them and clients can map replies back. Once per process.
 */
int bus_register_error_map(void);
