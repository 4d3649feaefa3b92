/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus-util.h"
#include "cleanup.h"
#include "macro.h"

typedef struct JobWait {
        const char *job;
        char *result;
} JobWait;

static int on_job_removed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        JobWait *w = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        if (sd_bus_message_read(msg, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (w->job && !w->result && streq(path, w->job))
                w->result = strdup(result);
        return 0;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

int bus_append_unit_replace(sd_bus_message *m, void *userdata) {
        return sd_bus_message_append(m, "ss", (const char *) userdata, "replace");
}

int bus_manager_job_wait(const char *method, BusAppend append, void *userdata, uint64_t timeout_usec,
                         char **ret_result, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        JobWait w = {};
        const char *job;
        uint64_t deadline;
        int r;

        r = sd_bus_open_user(&bus);
        if (r < 0)
                return r;
        /* Subscribed before the call: the job cannot end unseen. */
        r = sd_bus_match_signal(bus, NULL, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                "org.freedesktop.systemd1.Manager", "JobRemoved", on_job_removed, &w);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", method);
        if (r < 0)
                return r;
        r = append(m, userdata);
        if (r < 0)
                return r;
        r = sd_bus_call(bus, m, 0, ret_error, &reply);
        if (r < 0) {
                if (sd_bus_error_has_names(ret_error, "org.freedesktop.systemd1.NoSuchUnit",
                                           "org.freedesktop.systemd1.LoadFailed"))
                        return -ENOENT;
                return r;
        }
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0)
                return r;
        w.job = job;

        deadline = now_usec() + timeout_usec;
        while (!w.result) {
                uint64_t n;

                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        goto fail;
                if (r > 0)
                        continue;
                n = now_usec();
                if (n >= deadline) {
                        r = -ETIMEDOUT;
                        goto fail;
                }
                r = sd_bus_wait(bus, deadline - n);
                if (r < 0)
                        goto fail;
        }
        *ret_result = TAKE_PTR(w.result);
        return 0;
fail:
        free(w.result);
        return r;
}
