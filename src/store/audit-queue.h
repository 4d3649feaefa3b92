/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "domain-store.h"

/*
 * The coordinator's audit events on their way to the Domain Store (issue 31
 * item 4). The store is written from the event loop, and each transaction
 * syncs the store's log: a flood of refused requests written one event per
 * transaction held the loop for seconds (bench/store-burst.c: 1,000 events,
 * 1.9 to 6.3 s). Events wait here, copied, and the owner writes them in
 * batches of at most AUDIT_BATCH, one transaction each, from a timer: the
 * loop waits at most one such transaction at a time. The queue holds at
 * most AUDIT_QUEUE_MAX events; more are counted as dropped (the owner says
 * so in the journal, where every event also has its line).
 */

#define AUDIT_BATCH 64U
#define AUDIT_QUEUE_MAX 4096U

typedef struct AuditQueue AuditQueue;

AuditQueue *audit_queue_new(void);
AuditQueue *audit_queue_free(AuditQueue *q);

/* A copy of ev (its strings included) is queued; -ENOBUFS (counted as dropped) when full, -ENOMEM. */
int audit_queue_push(AuditQueue *q, const EscalationEvent *ev);

size_t audit_queue_pending(const AuditQueue *q);

/*
 * The pending events from the skip-th oldest on, oldest first, for a
 * reader of the audit trail that must not wait for the store (the events
 * not written yet are the newest). Stops at fn's first error.
 */
int audit_queue_visit(const AuditQueue *q, size_t skip, EscalationEventVisit fn, void *userdata);

/* The events dropped since the last call, and the count reset. */
uint64_t audit_queue_take_dropped(AuditQueue *q);

/*
 * Writes the oldest AUDIT_BATCH events (or fewer) in one transaction and
 * removes them from the queue, written or not: a batch the store refused is
 * reported (the number lost in *ret_lost) and not tried again, so that one
 * bad event cannot hold the queue. Returns the number written, 0 when
 * nothing was pending, or the store's error.
 */
int audit_queue_flush(AuditQueue *q, DomainStore *s, size_t *ret_lost, char **ret_error);
