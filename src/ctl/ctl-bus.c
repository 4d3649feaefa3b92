/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lazaretctl's connection to the user bus, shared by the verbs that use it. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

int ctl_bus_open(sd_bus **ret) {
        int r = sd_bus_open_user(ret);
        if (r < 0)
                fprintf(stderr, "Cannot connect to the user bus: %s\n"
                        "Lazaret needs a systemd user session (is $DBUS_SESSION_BUS_ADDRESS or $XDG_RUNTIME_DIR set?).\n",
                        strerror(-r));
        return r;
}
