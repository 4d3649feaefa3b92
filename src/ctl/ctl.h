/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include <systemd/sd-bus.h>

#include "config.h"
#include "host-context.h"

/* Parsed global options (the only globals of lazaretctl). */
extern const char *arg_config;
extern const char *arg_profile;
extern const char *arg_workspace;
extern bool arg_json;
/* The environment and current directory, collected once in main() before any verb. */
extern HostContext arg_host;

/*
 * Verbs get their own arguments (argv[0] is the verb) and the validated
 * configuration. They return a negative errno after printing why, or the
 * process exit status (0 on success; launch returns the command's status).
 * launch.h, domains.h and image.h declare them.
 */

/*
 * How long lazaretctl waits for any answer of a coordinator (a bus call's
 * reply, the activation socket's answer while the coordinator is on the bus
 * but does not answer a ping): past it, the coordinator is not responding.
 * A session, once open, is not bounded.
 */
#define CTL_REPLY_TIMEOUT_USEC (15ULL * 1000 * 1000)
/* The exit status after "the coordinator of Domain X is not responding" (as timeout(1)'s). */
#define CTL_EXIT_NOT_RESPONDING 124

/*
 * Connects to the user bus, with CTL_REPLY_TIMEOUT_USEC as the default
 * bound of every method call; prints why on failure. Close with
 * sd_bus_flush_close_unrefp.
 */
int ctl_bus_open(sd_bus **ret);
/* Whether error is a call to name that timed out while name still has an owner. */
bool ctl_bus_not_responding(sd_bus *bus, const char *name, const sd_bus_error *error);
/* Prints that the coordinator of the Domain is not responding and what to do; returns CTL_EXIT_NOT_RESPONDING. */
int ctl_not_responding(const char *domain_id);

/* Prints --json output; when it cannot be built, prints why and returns -ENOMEM (so does ctl_json_failed()). */
struct json_object;
int ctl_print_json(struct json_object *o);
int ctl_json_failed(int r);
