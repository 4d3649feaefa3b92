/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "config.h"

/*
 * lazaretctl launch [--] [CMD [ARG...]]: validates the Domain, records the
 * launch request, activates the Domain through its socket and runs one
 * session in it. Returns the command's exit status, 128+N when a signal
 * cancelled the launch or ended the session, or a negative errno after
 * printing why.
 */
int verb_launch(int argc, char *argv[], const Config *config);
