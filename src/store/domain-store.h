/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/*
 * The Domain Store (FR-17, FR-21): a SQLite database (WAL) in the Domain
 * Root, opened only by the coordinator that holds the Domain lock. It holds
 * the durable record of each generation (coordinator ID, start and end,
 * state, network readiness fingerprint), the prepared lower it leased and
 * the State Anchor layers it mounted, the audit trail of host escalation
 * (schema version 2) and of denied names, and the host rules the developer
 * kept allowed (version 3). Every mutation is one transaction.
 *
 * The schema is versioned with PRAGMA user_version: opening migrates an
 * older store (0, a new file, is the first migration) in one transaction;
 * a newer one is refused by name. A file that is not a healthy SQLite
 * database (quick_check) is refused as corrupt before anything writes to
 * it: the file is left exactly as it was.
 *
 * Calls are short (a few rows each); the busy timeout is
 * DOMAIN_STORE_BUSY_MS, so a caller on an event loop never waits longer.
 * Errors are negative errnos with one line in *ret_error; no logging.
 */

#define DOMAIN_STORE_FILE "store.sqlite"
#define DOMAIN_STORE_VERSION 3
#define DOMAIN_STORE_BUSY_MS 200

typedef struct DomainStore DomainStore;

/* -EBADMSG corrupt, -EPROTONOSUPPORT written by a newer Lazaret, -ELOOP a symlink. */
int domain_store_open(const char *path, DomainStore **ret, char **ret_error);
/*
 * Read-only, for `lazaretctl state gc` reading a running Domain's leases
 * beside its owner (WAL readers do not block the writer): nothing is
 * created, migrated or written; -ENOENT if there is no store.
 */
int domain_store_open_readonly(const char *path, DomainStore **ret, char **ret_error);
DomainStore *domain_store_close(DomainStore *s);

/*
 * A new generation, before any of its resources exist: generations still
 * open (a crashed owner's) are closed as "abandoned" and their leases
 * released, then the new one is recorded as "starting" with its lease on
 * lower_id (a prepared-artifact ID) and its layers (sandbox paths).
 */
int domain_store_begin_generation(DomainStore *s, const char *coordinator_id, uint64_t now_usec, const char *lower_id,
                                  char *const *layers, uint64_t *ret_generation, char **ret_error);

/* "running" with the network readiness fingerprint. */
int domain_store_generation_running(DomainStore *s, uint64_t generation, const char *network_fingerprint,
                                    char **ret_error);

/* "stopped" or "failed": the end time recorded, its lease released. */
int domain_store_end_generation(DomainStore *s, uint64_t generation, const char *state, uint64_t now_usec,
                                char **ret_error);

/* The lower IDs with a lease not released (sorted, no duplicates; NULL if none). */
int domain_store_leased_lowers(DomainStore *s, char ***ret, char **ret_error);

/* The state of a generation ("starting", "running", "stopped", "failed", "abandoned"); -ENOENT if unknown. */
int domain_store_generation_state(DomainStore *s, uint64_t generation, char **ret, char **ret_error);

/*
 * One event of an escalation request (the audit trail, spec 5.6): what was
 * asked, what was decided and by whom ("rule", "terminal", "bus",
 * "lazaretctl", ...), how it ended. Strings may be NULL; argv_json is a
 * JSON array of strings; status counts only with an outcome.
 */
typedef struct EscalationEvent {
        uint64_t time_usec;
        const char *request, *session, *event, *by, *argv_json, *cwd, *why, *outcome, *detail;
        int status;
} EscalationEvent;

int domain_store_add_escalation_event(DomainStore *s, const EscalationEvent *ev, char **ret_error);
/* Several events in one transaction: all of them are written, or none. */
int domain_store_add_escalation_events(DomainStore *s, const EscalationEvent *evs, size_t n, char **ret_error);
/*
 * What a store keeps (issue 31 item 4, lazaret.conf(5) "retention"): audit
 * events younger than audit_days and at most the newest audit_events of
 * them, and the newest `generations` generations; an older one goes only
 * when it has ended and released its lease (with its lease and layer
 * rows). One transaction. The counts removed in *ret (may be NULL).
 */
typedef struct StoreRetention {
        unsigned audit_days, audit_events, generations;
} StoreRetention;

typedef struct StoreRemoved {
        uint64_t events, generations;
} StoreRemoved;

int domain_store_apply_retention(DomainStore *s, const StoreRetention *keep, uint64_t now_usec, StoreRemoved *ret,
                                 char **ret_error);

typedef int (*EscalationEventVisit)(const EscalationEvent *ev, void *userdata);
/* The newest limit events, oldest first; stops at fn's first error. */
int domain_store_escalation_events(DomainStore *s, unsigned limit, EscalationEventVisit fn, void *userdata,
                                   char **ret_error);

/*
 * The host rules the developer kept allowed (spec 4.5, "A denied name":
 * "kept"), in the canonical text of host_rule_format(): the coordinator
 * hands them to the egress helper at each start, after the profile's
 * allow_hosts. keep() of a rule kept already changes nothing; forget() of
 * one not kept is -ENOENT; kept() lists them oldest first (NULL if none).
 */
int domain_store_egress_keep(DomainStore *s, const char *rule, uint64_t now_usec, const char *by, char **ret_error);
int domain_store_egress_forget(DomainStore *s, const char *rule, char **ret_error);
int domain_store_egress_kept(DomainStore *s, char ***ret, char **ret_error);
