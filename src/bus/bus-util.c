/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <signal.h>

#include "bus-names.h"
#include "bus-util.h"

int bus_append_unit_replace(sd_bus_message *m, void *userdata) {
        return sd_bus_message_append(m, "ss", (const char *) userdata, "replace");
}

int bus_append_scope_begin(sd_bus_message *m, const char *scope, const char *description, pid_t pid) {
        int r;

        r = sd_bus_message_append(m, "ss", scope, "fail");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "Description", "s", description);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t) pid);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "CollectMode", "s", "inactive-or-failed");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "KillMode", "s", "control-group");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "KillSignal", "i", SIGKILL);
        return r;
}

/*
 * The scope goes with service (BindsTo=), and after it (Before=): stop jobs
 * run in the reverse of start order, so a `systemctl --user stop` of the
 * service lets its own teardown finish before the user manager kills what
 * is left in the scope; without an order the two stop jobs ran at once and
 * the sandbox died under the coordinator's orderly teardown. Before= does
 * not hold the scope's start: the service's start job, already running,
 * is the one it would order, and no job waits on it.
 */
int bus_append_scope_bound_to(sd_bus_message *m, const char *service) {
        int r = sd_bus_message_append(m, "(sv)", "BindsTo", "as", 1, service);

        return r < 0 ? r : sd_bus_message_append(m, "(sv)", "Before", "as", 1, service);
}

int bus_append_scope_end(sd_bus_message *m) {
        int r = sd_bus_message_close_container(m);

        return r < 0 ? r : sd_bus_message_append(m, "a(sa(sv))", 0);
}

static const sd_bus_error_map lazaret_bus_errors[] = {
        SD_BUS_ERROR_MAP(LAZARET_ERROR_INVALID_ARGS, EINVAL),
        SD_BUS_ERROR_MAP(LAZARET_ERROR_NOT_READY, EAGAIN),
        SD_BUS_ERROR_MAP(LAZARET_ERROR_STOPPING, ESHUTDOWN),
        SD_BUS_ERROR_MAP(LAZARET_ERROR_NO_SUCH_SESSION, ENOENT),
        SD_BUS_ERROR_MAP(LAZARET_ERROR_NOT_OWNER, EPERM),
        SD_BUS_ERROR_MAP(LAZARET_ERROR_CONFIG_MISMATCH, ESTALE),
        SD_BUS_ERROR_MAP(LAZARET_ERROR_LIMIT, E2BIG),
        SD_BUS_ERROR_MAP(LAZARET_ERROR_ACCESS, EACCES),
        SD_BUS_ERROR_MAP(LAZARET_ERROR_SPAWN, ENOEXEC),
        SD_BUS_ERROR_MAP_END
};

int bus_register_error_map(void) {
        return sd_bus_error_add_map(lazaret_bus_errors);
}
