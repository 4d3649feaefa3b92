/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "config.h"

/*
 * lazaretctl never opens a Domain Store: only the holder of the Domain lock
 * does (FR-17), so what a verb needs from a store it asks the Domain's
 * coordinator on the bus. A running Domain's coordinator answers; for a
 * stopped one, lazaretctl first starts a maintenance coordinator through
 * the usual activation (the launch request, marked "maintenance", and the
 * activation socket): it takes the lock, opens the store, answers, and
 * exits when idle, or at once when asked to Stop or when a launch comes.
 *
 * Calls method of Domain id's coordinator with the arguments types and the
 * rest describe; *ret_reply is the reply. A stopped Domain's coordinator
 * is started for it, a Domain starting or stopping waited for, all of it
 * bounded. -ENOENT when the Domain has no record here (it never ran),
 * said by nobody; otherwise a negative errno after saying why on standard
 * error (CTL_EXIT_NOT_RESPONDING's case included: -EHOSTDOWN).
 */
int ctl_domain_call(const Config *config, sd_bus *bus, const char *id, sd_bus_message **ret_reply, const char *method,
                    const char *types, ...);

/*
 * Ends a maintenance coordinator that a verb started, so that the verb may
 * take the Domain lock itself: 1 when it was one (asked to stop), 0 when the
 * Domain's coordinator is a running one (or none).
 */
int ctl_domain_end_maintenance(sd_bus *bus, const char *id);
