/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "config.h"
#include "domain.h"
#include "egress-proto.h"

/*
 * The verbs about running Domains: each asks the Domain's coordinator over
 * the user bus. argv[1], when given, is a Domain ID; else the Domain is that
 * of the selected profile and workspace.
 */
int verb_status(int argc, char *argv[], const Config *config);
int verb_list(int argc, char *argv[], const Config *config);
int verb_stop(int argc, char *argv[], const Config *config);
int verb_log(int argc, char *argv[], const Config *config);
/* --lines of "log": the last n lines, 0 for every line kept. */
void log_set_lines(unsigned n);
/* escalations [list] | approve ID | deny ID: of the selected profile and workspace's Domain. */
int verb_escalations(int argc, char *argv[], const Config *config);

/* The Domain a verb is about (argv[1] when argc > 1, else the profile and workspace's), its bus name, a bus connection. */
int domain_open_target(int argc, char *argv[], const Config *config, sd_bus **ret_bus,
                       char ret_id[DOMAIN_ID_LEN + 1], char ret_name[BUS_NAME_MAX]);
/* The PublishedPorts property, a(sqq), as [{"host_address","host_port","port"}]; its human lines. */
int published_ports_json(sd_bus_message *m, json_object **ret);
void published_ports_print(json_object *ports, const char *indent);
/* ports [list] | publish [HOST_PORT:]PORT | unpublish HOST_PORT: of the profile and workspace's Domain. */
int verb_ports(int argc, char *argv[], const Config *config);
/* egress [denied] | allow RULE | kept | forget RULE (egress.c); --once, --domain, --keep set allow's scope. */
int verb_egress(int argc, char *argv[], const Config *config);
void egress_set_scope(EgressScope s, const char *option);
