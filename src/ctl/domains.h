/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "config.h"

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
