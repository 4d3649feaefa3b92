/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The coordinator's audit writer (src/coordinator/audit.c) on a real
 * sd-event loop and a Domain Store in /tmp: nothing is written when the
 * events are handed over; the timer writes one batch per dispatch until
 * the queue is empty; the history has the queued events after the
 * store's; flush_all writes everything left.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <systemd/sd-event.h>

#include "audit-queue.h"
#include "audit.h"
#include "cleanup.h"
#include "domain-store.h"
#include "fs-util.h"
#include "path-util.h"
#include "strv.h"

static char *dir, *path;
static DomainStore *store;
static sd_event *event;

static void setup(void) {
        char tmpl[] = "/tmp/lazaret-unit-audit-XXXXXX";
        char *error = NULL;

        cr_assert_not_null(mkdtemp(tmpl));
        dir = strdup(tmpl);
        path = path_join(dir, DOMAIN_STORE_FILE);
        cr_assert_eq(domain_store_open(path, &store, &error), 0, "%s", error ?: "");
        cr_assert_eq(sd_event_new(&event), 0);
}

static void teardown(void) {
        domain_store_close(store);
        sd_event_unref(event);
        (void) rm_rf(dir);
        free(dir);
        free(path);
}

static int count(const EscalationEvent *ev, void *userdata) {
        (*(unsigned *) userdata)++;
        return 0;
}

static unsigned in_store(void) {
        char *error = NULL;
        unsigned n = 0;

        cr_assert_eq(domain_store_escalation_events(store, 100000, count, &n, &error), 0, "%s", error ?: "");
        return n;
}

static int collect(const EscalationEvent *ev, void *userdata) {
        return strv_extend(userdata, ev->request);
}

static void push(AuditWriter *w, unsigned from, unsigned n) {
        for (unsigned i = from; i < from + n; i++) {
                char id[32];
                snprintf(id, sizeof(id), "r%u", i);
                audit_writer_add(w, &(EscalationEvent) { .time_usec = i, .request = id, .event = "requested" }, 1);
        }
}

Test(audit_writer, batches_from_the_loop, .init = setup, .fini = teardown) {
        _cleanup_(audit_writer_freep) AuditWriter *w = NULL;
        _cleanup_strv_free_ char **list = NULL;
        char *error = NULL;
        unsigned dispatches = 0;

        cr_assert_eq(audit_writer_new(event, store, &w), 0);
        push(w, 0, 3 * AUDIT_BATCH + 5);
        cr_assert_eq(in_store(), 0, "handing events over writes nothing");

        /* The history has them all the same, in order, the newest last. */
        cr_assert_eq(audit_writer_history(w, 3, collect, &list, &error), 0);
        cr_assert_eq(strv_length(list), 3);
        cr_assert_str_eq(list[2], "r196");

        /* One batch per dispatch, then nothing is armed any more. */
        while (in_store() < 3 * AUDIT_BATCH + 5) {
                cr_assert_gt(sd_event_run(event, 5 * 1000 * 1000), 0, "the flush timer did not fire");
                dispatches++;
                cr_assert_eq(in_store(), dispatches < 4 ? dispatches * AUDIT_BATCH : 3 * AUDIT_BATCH + 5);
        }
        cr_assert_eq(dispatches, 4);
        cr_assert_eq(sd_event_run(event, 200 * 1000), 0, "the timer stays off with nothing queued");

        /* Some in the store, some queued: the history joins them, oldest first. */
        push(w, 1000, 2);
        list = strv_free(list);
        cr_assert_eq(audit_writer_history(w, 4, collect, &list, &error), 0);
        cr_assert_eq(strv_length(list), 4);
        cr_assert_str_eq(list[0], "r195");
        cr_assert_str_eq(list[1], "r196");
        cr_assert_str_eq(list[2], "r1000");
        cr_assert_str_eq(list[3], "r1001");

        /* At stop: everything left, without the loop. */
        audit_writer_flush_all(w);
        cr_assert_eq(in_store(), 3 * AUDIT_BATCH + 7);
}
