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

/* Connects to the user bus; prints why on failure. Close with sd_bus_flush_close_unrefp. */
int ctl_bus_open(sd_bus **ret);

/* Prints --json output; when it cannot be built, prints why and returns -ENOMEM (so does ctl_json_failed()). */
struct json_object;
int ctl_print_json(struct json_object *o);
int ctl_json_failed(int r);
