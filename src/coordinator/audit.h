/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

#include "cleanup.h"
#include "domain-store.h"

/*
 * The coordinator's audit trail on its way to the Domain Store (spec 5.6,
 * issue 31 item 4). Events are queued (audit-queue.h: copies, at most
 * AUDIT_QUEUE_MAX) and written by a timer, AUDIT_FLUSH_DELAY_USEC after
 * the first one, one batch of at most AUDIT_BATCH per dispatch, one
 * transaction each, re-armed while events remain: the loop waits for one
 * batch at a time, not for a burst (bench/store-burst.c measured a 1,000
 * event burst at 1.9 to 6.3 s written one per transaction, 89 to 143 ms in
 * batches, the worst batch 16 to 17 ms). Events dropped because the queue
 * was full and batches the store refused are said in the journal. The
 * store is borrowed; audit_writer_flush_all() writes what is left before
 * its owner closes it.
 */
#define AUDIT_FLUSH_DELAY_USEC (50ULL * 1000)

typedef struct AuditWriter AuditWriter;

int audit_writer_new(sd_event *event, DomainStore *store, AuditWriter **ret);
/* Frees what is still queued: call audit_writer_flush_all() first to keep it. */
AuditWriter *audit_writer_free(AuditWriter *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(AuditWriter *, audit_writer_free);

/* Queues copies of n events (every one with its journal line already written by the caller). */
void audit_writer_add(AuditWriter *w, const EscalationEvent *evs, size_t n);

/* Writes everything still queued, batch by batch: at stop, before the store is closed. */
void audit_writer_flush_all(AuditWriter *w);

/*
 * The newest limit events of the trail, oldest first: the store's rows,
 * then the queued ones (newer than every row), without waiting for them to
 * be written.
 */
int audit_writer_history(AuditWriter *w, unsigned limit, EscalationEventVisit fn, void *userdata, char **ret_error);
