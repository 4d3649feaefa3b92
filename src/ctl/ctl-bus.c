/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lazaretctl's connection to the user bus, shared by the verbs that use it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "macro.h"

int ctl_bus_open(sd_bus **ret) {
        sd_bus *bus = NULL;
        int r = sd_bus_open_user(&bus);

        if (r < 0) {
                fprintf(stderr, "Cannot connect to the user bus: %s\n"
                        "Lazaret needs a systemd user session (is $DBUS_SESSION_BUS_ADDRESS or $XDG_RUNTIME_DIR set?).\n",
                        strerror(-r));
                return r;
        }
        /* Every call of ours is bounded by this, unless it names its own bound. */
        r = sd_bus_set_method_call_timeout(bus, CTL_REPLY_TIMEOUT_USEC);
        if (r < 0) {
                sd_bus_flush_close_unref(bus);
                fprintf(stderr, "Cannot set up the bus connection: %s\n", strerror(-r));
                return r;
        }
        *ret = bus;
        return 0;
}

bool ctl_bus_not_responding(sd_bus *bus, const char *name, const sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;

        /* Timeout: our own wait (sd_bus_call()); NoReply: an asynchronous
         * call's, or the bus daemon's when the peer left without answering,
         * which the name's owner tells apart. */
        if (!sd_bus_error_has_names(error, SD_BUS_ERROR_TIMEOUT, SD_BUS_ERROR_NO_REPLY))
                return false;
        return sd_bus_get_name_creds(bus, name, 0, &creds) >= 0;
}

int ctl_not_responding(const char *domain_id) {
        fprintf(stderr, "The coordinator of Domain %s is not responding (no answer within %llu s).\n"
                "Check it with: systemctl --user status lazaret@%s.service; end the Domain with: systemctl --user stop lazaret@%s.service\n",
                domain_id, CTL_REPLY_TIMEOUT_USEC / 1000000ULL, domain_id, domain_id);
        return CTL_EXIT_NOT_RESPONDING;
}
