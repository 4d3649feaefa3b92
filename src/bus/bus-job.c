/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bus-job.h"
#include "cleanup.h"
#include "macro.h"

struct BusJob {
        sd_bus_slot *match, *call;
        sd_event_source *timer;
        char *path;
        BusJobDone done;
        void *userdata;
        bool finished;
};

BusJob *bus_job_free(BusJob *j) {
        if (!j)
                return NULL;
        sd_bus_slot_unref(j->match);
        sd_bus_slot_unref(j->call);
        sd_event_source_disable_unref(j->timer);
        free(j->path);
        free(j);
        return NULL;
}

/* Reports once; done() may free j, so nothing touches j afterwards. */
static void finish(BusJob *j, const char *result, const sd_bus_error *error) {
        if (j->finished)
                return;
        j->finished = true;
        j->match = sd_bus_slot_unref(j->match);
        j->call = sd_bus_slot_unref(j->call);
        j->timer = sd_event_source_disable_unref(j->timer);
        j->done(j, result, error, j->userdata);
}

static int on_job_removed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusJob *j = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        if (sd_bus_message_read(msg, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (j->path && streq(path, j->path))
                finish(j, result, NULL);
        return 0;
}

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        BusJob *j = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        const char *path;

        if (e) {
                if (sd_bus_error_has_names(e, "org.freedesktop.systemd1.NoSuchUnit",
                                           "org.freedesktop.systemd1.LoadFailed"))
                        finish(j, "no-such-unit", e);
                else
                        finish(j, "error", e);
                return 0;
        }
        if (sd_bus_message_read(reply, "o", &path) < 0 || !(j->path = strdup(path))) {
                finish(j, "error", &SD_BUS_ERROR_MAKE_CONST(SD_BUS_ERROR_INVALID_ARGS, "Unexpected reply from the user manager"));
                return 0;
        }
        /* JobRemoved comes after the reply on the same connection. */
        return 0;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        finish(userdata, "timeout", NULL);
        return 0;
}

int bus_job_start(sd_bus *bus, const char *method, BusAppend append, void *append_data, uint64_t timeout_usec,
                  BusJobDone done, void *userdata, BusJob **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(bus_job_freep) BusJob *j = NULL;
        int r;

        j = calloc(1, sizeof(BusJob));
        if (!j)
                return -ENOMEM;
        j->done = done;
        j->userdata = userdata;

        /* Subscribed before the call, on the same connection, which the bus
         * daemon handles in order: the job cannot end unseen. */
        r = sd_bus_match_signal_async(bus, &j->match, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                      "org.freedesktop.systemd1.Manager", "JobRemoved", on_job_removed, NULL, j);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", method);
        if (r < 0)
                return r;
        r = append(m, append_data);
        if (r < 0)
                return r;
        r = sd_bus_call_async(bus, &j->call, m, on_reply, j, 0);
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(sd_bus_get_event(bus), &j->timer, CLOCK_MONOTONIC, timeout_usec, 0,
                                       on_timeout, j);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}
