/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "audit-queue.h"
#include "cleanup.h"
#include "macro.h"

/* One queued event and the strings it owns. */
typedef struct Entry {
        EscalationEvent ev;
        char *strings[9];
} Entry;

struct AuditQueue {
        Entry *ring;            /* AUDIT_QUEUE_MAX entries */
        size_t head, n;
        uint64_t dropped;
};

AuditQueue *audit_queue_new(void) {
        AuditQueue *q = calloc(1, sizeof(*q));

        if (!q)
                return NULL;
        q->ring = calloc(AUDIT_QUEUE_MAX, sizeof(Entry));
        if (!q->ring)
                return mfree(q);
        return q;
}

static void entry_clear(Entry *e) {
        for (size_t i = 0; i < ELEMENTSOF(e->strings); i++)
                e->strings[i] = mfree(e->strings[i]);
        e->ev = (EscalationEvent) {};
}

static void drop_oldest(AuditQueue *q, size_t k) {
        for (size_t i = 0; i < k && q->n > 0; i++) {
                entry_clear(&q->ring[q->head]);
                q->head = (q->head + 1) % AUDIT_QUEUE_MAX;
                q->n--;
        }
}

AuditQueue *audit_queue_free(AuditQueue *q) {
        if (!q)
                return NULL;
        drop_oldest(q, q->n);
        free(q->ring);
        return mfree(q);
}

/* s copied into the entry's next string slot; NULL stays NULL. */
static int own(Entry *e, size_t *slot, const char *s, const char **ret) {
        *ret = NULL;
        if (!s)
                return 0;
        e->strings[*slot] = strdup(s);
        if (!e->strings[*slot])
                return -ENOMEM;
        *ret = e->strings[(*slot)++];
        return 0;
}

int audit_queue_push(AuditQueue *q, const EscalationEvent *ev) {
        Entry *e;
        size_t slot = 0;
        int r = 0;

        if (q->n >= AUDIT_QUEUE_MAX) {
                q->dropped++;
                return -ENOBUFS;
        }
        e = &q->ring[(q->head + q->n) % AUDIT_QUEUE_MAX];
        e->ev = (EscalationEvent) { .time_usec = ev->time_usec, .status = ev->status };
        const char *const from[] = { ev->request, ev->session, ev->event, ev->by, ev->argv_json,
                                     ev->cwd, ev->why, ev->outcome, ev->detail };
        const char **to[] = { &e->ev.request, &e->ev.session, &e->ev.event, &e->ev.by, &e->ev.argv_json,
                              &e->ev.cwd, &e->ev.why, &e->ev.outcome, &e->ev.detail };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(from); i++)
                r = own(e, &slot, from[i], to[i]);
        if (r < 0) {
                entry_clear(e);
                q->dropped++;
                return r;
        }
        q->n++;
        return 0;
}

size_t audit_queue_pending(const AuditQueue *q) {
        return q ? q->n : 0;
}

int audit_queue_visit(const AuditQueue *q, size_t skip, EscalationEventVisit fn, void *userdata) {
        for (size_t k = skip; q && k < q->n; k++) {
                int r = fn(&q->ring[(q->head + k) % AUDIT_QUEUE_MAX].ev, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

uint64_t audit_queue_take_dropped(AuditQueue *q) {
        uint64_t d = q->dropped;

        q->dropped = 0;
        return d;
}

int audit_queue_flush(AuditQueue *q, DomainStore *s, size_t *ret_lost, char **ret_error) {
        EscalationEvent batch[AUDIT_BATCH];
        size_t k = 0;
        int r;

        if (ret_lost)
                *ret_lost = 0;
        if (q->n == 0)
                return 0;
        /* The oldest, in order; the ring may wrap inside the batch. */
        for (; k < AUDIT_BATCH && k < q->n; k++)
                batch[k] = q->ring[(q->head + k) % AUDIT_QUEUE_MAX].ev;
        r = domain_store_add_escalation_events(s, batch, k, ret_error);
        drop_oldest(q, k);
        if (r < 0) {
                if (ret_lost)
                        *ret_lost = k;
                return r;
        }
        return (int) k;
}
