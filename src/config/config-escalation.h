/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "config.h"
#include "config-parse.h"

/*
 * The "escalation" object (lazaret.conf(5)): its key table, for the top
 * level's, and the resolution of each auto-approve rule's program.
 */
extern const ConfigKey config_escalation_keys[];

/*
 * The file-system half of the rules: resolves each rule's argv[0]
 * (AutoApproveRule.program, NULL when it does not exist) and refuses a
 * program whose resolved name is one that runs arbitrary commands.
 */
int config_escalation_resolve(ConfigParser *p, Config *c);
