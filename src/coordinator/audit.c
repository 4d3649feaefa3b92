/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "audit-queue.h"
#include "audit.h"
#include "log.h"
#include "macro.h"

struct AuditWriter {
        sd_event *event;
        DomainStore *store;             /* borrowed */
        AuditQueue *queue;
        sd_event_source *timer;         /* armed while events wait */
};

static void say_dropped(AuditWriter *w) {
        uint64_t dropped = audit_queue_take_dropped(w->queue);

        if (dropped > 0)
                log_warning("%" PRIu64 " escalation audit events were not recorded in the Domain Store: its queue of %u "
                            "events was full (each one is in the journal)", dropped, AUDIT_QUEUE_MAX);
}

/* One batch, written or lost (said); and the events dropped meanwhile. */
static void flush_batch(AuditWriter *w) {
        _cleanup_free_ char *error = NULL;
        size_t lost = 0;
        int r;

        r = audit_queue_flush(w->queue, w->store, &lost, &error);
        if (r < 0)
                log_warning("Cannot record %zu escalation audit events in the Domain Store (each one is in the journal): %s",
                            lost, error ?: strerror(-r));
        say_dropped(w);
}

static int on_flush(sd_event_source *s, uint64_t usec, void *userdata) {
        AuditWriter *w = userdata;

        flush_batch(w);
        /* The rest in the next dispatches: whatever else is ready runs in between. */
        if (audit_queue_pending(w->queue) > 0 && sd_event_source_set_time_relative(s, 0) >= 0)
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

int audit_writer_new(sd_event *event, DomainStore *store, AuditWriter **ret) {
        _cleanup_(audit_writer_freep) AuditWriter *w = calloc(1, sizeof(AuditWriter));
        int r;

        if (!w)
                return -ENOMEM;
        w->event = sd_event_ref(event);
        w->store = store;
        w->queue = audit_queue_new();
        if (!w->queue)
                return -ENOMEM;
        r = sd_event_add_time_relative(event, &w->timer, CLOCK_MONOTONIC, AUDIT_FLUSH_DELAY_USEC, 0, on_flush, w);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(w->timer, SD_EVENT_OFF);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

AuditWriter *audit_writer_free(AuditWriter *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->timer);
        audit_queue_free(w->queue);
        sd_event_unref(w->event);
        free(w);
        return NULL;
}

void audit_writer_add(AuditWriter *w, const EscalationEvent *evs, size_t n) {
        int enabled = SD_EVENT_OFF;

        if (!w)
                return;
        for (size_t i = 0; i < n; i++)
                (void) audit_queue_push(w->queue, &evs[i]);     /* a full queue counts it as dropped */
        if (!w->store || audit_queue_pending(w->queue) == 0) {
                say_dropped(w);
                return;
        }
        (void) sd_event_source_get_enabled(w->timer, &enabled);
        if (enabled != SD_EVENT_OFF)
                return;         /* armed already: the first event's delay holds */
        if (sd_event_source_set_time_relative(w->timer, AUDIT_FLUSH_DELAY_USEC) < 0 ||
            sd_event_source_set_enabled(w->timer, SD_EVENT_ONESHOT) < 0)
                flush_batch(w); /* cannot wait: write now rather than keep it */
}

void audit_writer_flush_all(AuditWriter *w) {
        size_t before;

        if (!w)
                return;
        (void) sd_event_source_set_enabled(w->timer, SD_EVENT_OFF);
        /* Each batch leaves the queue, written or lost: this ends. */
        while (w->store && (before = audit_queue_pending(w->queue)) > 0) {
                flush_batch(w);
                if (audit_queue_pending(w->queue) >= before)
                        break;
        }
        say_dropped(w);
}

int audit_writer_history(AuditWriter *w, unsigned limit, EscalationEventVisit fn, void *userdata, char **ret_error) {
        size_t pending = audit_queue_pending(w->queue), queued = pending < limit ? pending : limit;
        int r = 0;

        if (limit > queued && w->store)
                r = domain_store_escalation_events(w->store, limit - (unsigned) queued, fn, userdata, ret_error);
        if (r >= 0)
                r = audit_queue_visit(w->queue, pending - queued, fn, userdata);
        return r;
}
