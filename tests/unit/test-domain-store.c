/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cleanup.h"
#include "audit-queue.h"
#include "domain-store.h"
#include "fs-util.h"
#include "path-util.h"
#include "strv.h"

static char *dir, *path;

static void setup(void) {
        char tmpl[] = "/tmp/lazaret-unit-store-XXXXXX";

        cr_assert_not_null(mkdtemp(tmpl));
        dir = strdup(tmpl);
        path = path_join(dir, DOMAIN_STORE_FILE);
}

static void teardown(void) {
        (void) rm_rf(dir);
        free(dir);
        free(path);
}

static int64_t user_version(void) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int64_t v = -1;

        cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
}

Test(store, generations_and_leases, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **leased = NULL;
        _cleanup_free_ char *state = NULL, *error = NULL;
        DomainStore *s = NULL;
        uint64_t g1, g2;

        cr_assert_eq(domain_store_open(path, &s, &error), 0, "%s", error ?: "");
        cr_assert_eq(user_version(), DOMAIN_STORE_VERSION, "a new file is migrated from version 0");
        cr_assert_eq(domain_store_begin_generation(s, "c1", 100, "lowerA", (char *[]) { (char *) "/usr", (char *) "/etc", NULL },
                                                   &g1, &error), 0, "%s", error ?: "");
        cr_assert_eq(domain_store_leased_lowers(s, &leased, &error), 0);
        cr_assert_eq(strv_length(leased), 1);
        cr_assert_str_eq(leased[0], "lowerA");
        leased = strv_free(leased);
        cr_assert_eq(domain_store_generation_running(s, g1, "fp1", &error), 0, "%s", error ?: "");
        cr_assert_eq(domain_store_generation_state(s, g1, &state, &error), 0);
        cr_assert_str_eq(state, "running");
        state = mfree(state);

        /* The owner crashed: the next generation closes it and releases its lease first. */
        domain_store_close(s);
        cr_assert_eq(domain_store_open(path, &s, &error), 0, "%s", error ?: "");
        cr_assert_eq(domain_store_begin_generation(s, "c2", 200, "lowerB", NULL, &g2, &error), 0, "%s", error ?: "");
        cr_assert_gt(g2, g1);
        cr_assert_eq(domain_store_generation_state(s, g1, &state, &error), 0);
        cr_assert_str_eq(state, "abandoned");
        state = mfree(state);
        cr_assert_eq(domain_store_leased_lowers(s, &leased, &error), 0);
        cr_assert_eq(strv_length(leased), 1);
        cr_assert_str_eq(leased[0], "lowerB");
        leased = strv_free(leased);

        cr_assert_eq(domain_store_end_generation(s, g2, "stopped", 300, &error), 0, "%s", error ?: "");
        cr_assert_eq(domain_store_leased_lowers(s, &leased, &error), 0);
        cr_assert_null(leased, "an ended generation holds no lease");
        /* Ending it twice, or an unknown one, or as "running", is refused. */
        cr_assert_eq(domain_store_end_generation(s, g2, "stopped", 400, &error), -ENOENT);
        error = mfree(error);
        cr_assert_eq(domain_store_generation_running(s, 999, "fp", &error), -ENOENT);
        error = mfree(error);
        cr_assert_eq(domain_store_end_generation(s, g2, "running", 400, &error), -EINVAL);
        error = mfree(error);
        cr_assert_eq(domain_store_generation_state(s, 999, &state, &error), -ENOENT);
        domain_store_close(s);
}

/* A corrupt file: a named error, and not one byte of it changed. */
Test(store, corrupt_file_refused_unchanged, .init = setup, .fini = teardown) {
        static const char junk[] = "SQLite format 3\0 this is not really a database, but it starts like one";
        _cleanup_free_ char *error = NULL, *before = NULL, *after = NULL, *wal = NULL;
        DomainStore *s = NULL;
        size_t n1, n2;

        cr_assert_eq(write_file_bytes(path, junk, sizeof(junk), 0600), 0);
        cr_assert_eq(read_full_file(path, 4096, &before, &n1), 0);
        cr_assert_eq(domain_store_open(path, &s, &error), -EBADMSG);
        cr_assert_null(s);
        cr_assert(strstr(error, "is corrupt"), "%s", error);
        cr_assert(strstr(error, "nothing was changed"), "%s", error);
        cr_assert_eq(read_full_file(path, 4096, &after, &n2), 0);
        cr_assert_eq(n1, n2);
        cr_assert_eq(memcmp(before, after, n1), 0, "the corrupt store was written to");
        wal = path_join(dir, DOMAIN_STORE_FILE "-wal");
        cr_assert_eq(access(wal, F_OK), -1, "a WAL was made beside a corrupt store");
}

/* A database whose pages were damaged after it was written. */
Test(store, damaged_database_refused, .init = setup, .fini = teardown) {
        _cleanup_free_ char *error = NULL;
        DomainStore *s = NULL;
        uint64_t g;
        int fd;

        cr_assert_eq(domain_store_open(path, &s, &error), 0);
        for (int i = 0; i < 50; i++)
                cr_assert_eq(domain_store_begin_generation(s, "c", (uint64_t) i, "lower", (char *[]) { (char *) "/usr", NULL },
                                                           &g, &error), 0);
        domain_store_close(s);
        /* Checkpointed on close: damage the second page onwards. */
        fd = open(path, O_WRONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        cr_assert_eq(pwrite(fd, "garbage garbage garbage garbage garbage garbage garbage", 56, 4096 + 8), 56);
        close(fd);
        cr_assert_eq(domain_store_open(path, &s, &error), -EBADMSG, "%s", error ?: "opened");
        cr_assert(strstr(error, "is corrupt"), "%s", error);
}

Test(store, newer_schema_refused, .init = setup, .fini = teardown) {
        _cleanup_free_ char *error = NULL;
        DomainStore *s = NULL;
        sqlite3 *db = NULL;

        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        cr_assert_eq(domain_store_open(path, &s, &error), -EPROTONOSUPPORT);
        cr_assert(strstr(error, "schema version 99, newer than this Lazaret's 3"), "%s", error);
        cr_assert_eq(user_version(), 99, "the newer store was changed");
}

Test(store, symlink_refused, .init = setup, .fini = teardown) {
        _cleanup_free_ char *error = NULL, *target = path_join(dir, "elsewhere");
        DomainStore *s = NULL;

        cr_assert_eq(symlink(target, path), 0);
        cr_assert_eq(domain_store_open(path, &s, &error), -ELOOP);
        cr_assert_eq(access(target, F_OK), -1, "the symlink's target was created");
}

/* A store at version 1 opened again keeps its rows: migration runs once. */
Test(store, reopen_keeps_rows, .init = setup, .fini = teardown) {
        _cleanup_free_ char *error = NULL, *state = NULL;
        DomainStore *s = NULL;
        uint64_t g;

        cr_assert_eq(domain_store_open(path, &s, &error), 0);
        cr_assert_eq(domain_store_begin_generation(s, "c", 1, "lower", NULL, &g, &error), 0);
        domain_store_close(s);
        cr_assert_eq(domain_store_open(path, &s, &error), 0);
        cr_assert_eq(domain_store_generation_state(s, g, &state, &error), 0);
        cr_assert_str_eq(state, "starting");
        domain_store_close(s);
}

/* gc reads a running Domain's leases beside its owner, and writes nothing. */
Test(store, readonly_reader, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **leased = NULL;
        _cleanup_free_ char *error = NULL;
        DomainStore *w = NULL, *r = NULL;
        uint64_t g;

        cr_assert_eq(domain_store_open_readonly(path, &r, &error), -ENOENT);
        cr_assert_eq(access(path, F_OK), -1, "the read-only open created the store");
        error = mfree(error);
        cr_assert_eq(domain_store_open(path, &w, &error), 0);
        cr_assert_eq(domain_store_begin_generation(w, "c", 1, "lowerA", NULL, &g, &error), 0);
        cr_assert_eq(domain_store_open_readonly(path, &r, &error), 0, "%s", error ?: "");
        cr_assert_eq(domain_store_leased_lowers(r, &leased, &error), 0);
        cr_assert_eq(strv_length(leased), 1);
        cr_assert_str_eq(leased[0], "lowerA");
        cr_assert_lt(domain_store_end_generation(r, g, "stopped", 2, &error), 0, "a read-only store was written");
        domain_store_close(r);
        domain_store_close(w);
}

static int collect(const EscalationEvent *ev, void *userdata) {
        char ***list = userdata;

        return strv_extendf(list, "%s %s %s %s %d", ev->request ?: "-", ev->event, ev->by ?: "-", ev->outcome ?: "-",
                            ev->status);
}

/* The audit trail of host escalation (migration 2): events kept in order, the newest N listed. */
Test(store, escalation_events, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **list = NULL;
        _cleanup_free_ char *error = NULL;
        DomainStore *s = NULL;
        sqlite3 *db = NULL;

        /* A store written at version 1 gains the table and keeps its rows. */
        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        cr_assert_eq(sqlite3_exec(db,
                                  "CREATE TABLE generations (id INTEGER PRIMARY KEY, coordinator_id TEXT NOT NULL,"
                                  " started_usec INTEGER NOT NULL, ended_usec INTEGER, state TEXT NOT NULL, network_fingerprint TEXT);"
                                  "CREATE TABLE leases (generation INTEGER, lower_id TEXT, released_usec INTEGER);"
                                  "CREATE TABLE layers (generation INTEGER, path TEXT);"
                                  "INSERT INTO generations (coordinator_id, started_usec, state) VALUES ('c', 1, 'stopped');"
                                  "PRAGMA user_version = 1;",
                                  NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        cr_assert_eq(domain_store_open(path, &s, &error), 0, "%s", error ?: "");
        cr_assert_eq(user_version(), DOMAIN_STORE_VERSION);
        /* Two in one transaction; with a bad one among them, none is written. */
        cr_assert_lt(domain_store_add_escalation_events(s, (EscalationEvent[]) {
                                                                { .time_usec = 1, .request = "r0", .event = "requested" },
                                                                { .time_usec = 1, .request = "r0", .event = "bogus" } },
                                                        2, &error), 0);
        error = mfree(error);
        cr_assert_eq(domain_store_add_escalation_events(s, (EscalationEvent[]) {
                                                                { .time_usec = 1, .request = "r1", .session = "s1",
                                                                  .event = "requested", .argv_json = "[\"/bin/true\"]" },
                                                                { .time_usec = 2, .request = "r1", .event = "approved",
                                                                  .by = "rule" } },
                                                        2, &error), 0, "%s", error ?: "");
        cr_assert_eq(domain_store_add_escalation_event(s, &(EscalationEvent) { .time_usec = 3, .request = "r1",
                                                       .event = "result", .by = "rule", .outcome = "completed", .status = 3 },
                                                       &error), 0);
        cr_assert_eq(domain_store_add_escalation_event(s, &(EscalationEvent) { .time_usec = 4, .event = "refused",
                                                       .detail = "garbage" }, &error), 0);
        /* An event the schema does not know is refused by the table itself. */
        cr_assert_lt(domain_store_add_escalation_event(s, &(EscalationEvent) { .time_usec = 5, .event = "bogus" }, &error), 0);
        error = mfree(error);
        cr_assert_eq(domain_store_escalation_events(s, 100, collect, &list, &error), 0);
        cr_assert_eq(strv_length(list), 4);
        cr_assert_str_eq(list[0], "r1 requested - - 0");
        cr_assert_str_eq(list[1], "r1 approved rule - 0");
        cr_assert_str_eq(list[2], "r1 result rule completed 3");
        cr_assert_str_eq(list[3], "- refused - - 0");
        list = strv_free(list);
        cr_assert_eq(domain_store_escalation_events(s, 2, collect, &list, &error), 0);
        cr_assert_eq(strv_length(list), 2);
        cr_assert_str_eq(list[0], "r1 result rule completed 3", "the newest two, oldest first");
        domain_store_close(s);
}

/*
 * Migration 3: a store at version 2 keeps its audit trail, in order, and
 * its table now takes the denied-name events; the kept egress rules.
 */
Test(store, egress, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **list = NULL, **kept = NULL;
        _cleanup_free_ char *error = NULL;
        DomainStore *s = NULL;
        sqlite3 *db = NULL;

        cr_assert_eq(domain_store_open(path, &s, &error), 0, "%s", error ?: "");
        domain_store_close(s);
        s = NULL;
        /* Back to version 2 as an older Lazaret left it: the old table, an event in it, no egress table. */
        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        cr_assert_eq(sqlite3_exec(db,
                                  "DROP TABLE egress_allows; DROP TABLE escalation_events;"
                                  "CREATE TABLE escalation_events (id INTEGER PRIMARY KEY, time_usec INTEGER NOT NULL,"
                                  " request TEXT, session TEXT, event TEXT NOT NULL CHECK (event IN ('requested','refused',"
                                  "'approved','denied','aborted','result','session-ended')), decided_by TEXT, argv TEXT,"
                                  " cwd TEXT, why TEXT, outcome TEXT, status INTEGER, detail TEXT);"
                                  "INSERT INTO escalation_events (time_usec, request, event) VALUES (7, 'r9', 'requested');"
                                  "PRAGMA user_version = 2;",
                                  NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        cr_assert_eq(domain_store_open(path, &s, &error), 0, "%s", error ?: "");
        cr_assert_eq(user_version(), 3);
        cr_assert_eq(domain_store_add_escalation_event(s, &(EscalationEvent) { .time_usec = 8, .event = "egress-denied",
                                                       .why = "a DNS question", .detail = "a.example" }, &error), 0,
                     "%s", error ?: "");
        cr_assert_eq(domain_store_add_escalation_event(s, &(EscalationEvent) { .time_usec = 9, .event = "egress-allowed",
                                                       .by = "terminal", .outcome = "keep", .detail = "a.example" },
                                                       &error), 0, "%s", error ?: "");
        cr_assert_eq(domain_store_escalation_events(s, 100, collect, &list, &error), 0);
        cr_assert_eq(strv_length(list), 3);
        cr_assert_str_eq(list[0], "r9 requested - - 0", "the old event kept, first");
        cr_assert_str_eq(list[1], "- egress-denied - - 0");
        cr_assert_str_eq(list[2], "- egress-allowed terminal keep 0");

        cr_assert_eq(domain_store_egress_kept(s, &kept, &error), 0);
        cr_assert_null(kept);
        cr_assert_eq(domain_store_egress_keep(s, "b.example:8080", 2, "bus", &error), 0, "%s", error ?: "");
        cr_assert_eq(domain_store_egress_keep(s, "a.example", 1, "terminal", &error), 0);
        cr_assert_eq(domain_store_egress_keep(s, "a.example", 3, "bus", &error), 0, "a rule kept twice is kept once");
        cr_assert_eq(domain_store_egress_kept(s, &kept, &error), 0);
        cr_assert_eq(strv_length(kept), 2);
        cr_assert_str_eq(kept[0], "a.example", "oldest first");
        cr_assert_str_eq(kept[1], "b.example:8080");
        kept = strv_free(kept);
        cr_assert_eq(domain_store_egress_forget(s, "a.example", &error), 0);
        cr_assert_eq(domain_store_egress_forget(s, "a.example", &error), -ENOENT);
        cr_assert_eq(domain_store_egress_kept(s, &kept, &error), 0);
        cr_assert_eq(strv_length(kept), 1);
        cr_assert_str_eq(kept[0], "b.example:8080");
        domain_store_close(s);
}

static uint64_t count(const char *sql) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        uint64_t n = UINT64_MAX;

        cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sql);
        if (sqlite3_step(st) == SQLITE_ROW)
                n = (uint64_t) sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

#define DAY_USEC (UINT64_C(86400) * UINT64_C(1000000))

/* Issue 31 item 4: what a store keeps is bounded, by age and count of events and by generations. */
Test(store, retention, .init = setup, .fini = teardown) {
        _cleanup_free_ char *error = NULL;
        DomainStore *s = NULL;
        StoreRemoved removed;
        uint64_t g[6], now = 1000 * DAY_USEC;

        cr_assert_eq(domain_store_open(path, &s, &error), 0, "%s", error ?: "");
        /* Six generations: five ended, one of them still holding its lease (a crashed owner's is closed as
         * abandoned by the next begin, which releases it); the newest running. */
        for (int i = 0; i < 6; i++) {
                cr_assert_eq(domain_store_begin_generation(s, "c", now + i, "lowerA",
                                                           (char *[]) { (char *) "/usr", NULL }, &g[i], &error), 0, "%s",
                             error ?: "");
                if (i < 5 && i != 1)
                        cr_assert_eq(domain_store_end_generation(s, g[i], "stopped", now + i, &error), 0);
        }
        /* g[1] was abandoned by g[2]'s begin: ended, lease released. Hold a lease on g[0] by hand. */
        {
                sqlite3 *db = NULL;
                cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
                cr_assert_eq(sqlite3_exec(db, "UPDATE leases SET released_usec = NULL WHERE generation = 1", NULL, NULL, NULL),
                             SQLITE_OK);
                sqlite3_close(db);
        }
        /* Events: 300 ten days old, 300 from today. */
        for (int i = 0; i < 600; i++)
                cr_assert_eq(domain_store_add_escalation_event(s, &(EscalationEvent) {
                                                                   .time_usec = i < 300 ? now - 10 * DAY_USEC : now - (600 - i),
                                                                   .request = "r", .event = "requested" },
                                                               &error), 0);

        /* Refused: a retention of nothing. */
        cr_assert_eq(domain_store_apply_retention(s, &(StoreRetention) { 0, 100, 1 }, now, NULL, &error), -EINVAL);
        cr_assert_str_eq(error, "a retention of nothing would empty the Domain Store");
        error = mfree(error);
        cr_assert_eq(count("SELECT count(*) FROM escalation_events"), 600);

        /* Seven days, 200 events, three generations. */
        cr_assert_eq(domain_store_apply_retention(s, &(StoreRetention) { 7, 200, 3 }, now, &removed, &error), 0, "%s",
                     error ?: "");
        cr_assert_eq(removed.events, 400, "%" PRIu64, removed.events);
        cr_assert_eq(count("SELECT count(*) FROM escalation_events"), 200);
        cr_assert_eq(count("SELECT min(time_usec) FROM escalation_events"), now - 200, "the newest are kept");
        /* Generations 4, 5, 6 are the newest three; 2 and 3 go (ended, released); 1 stays (its lease is held). */
        cr_assert_eq(removed.generations, 2);
        cr_assert_eq(count("SELECT count(*) FROM generations"), 4);
        cr_assert_eq(count("SELECT count(*) FROM generations WHERE id IN (2, 3)"), 0);
        cr_assert_eq(count("SELECT count(*) FROM leases WHERE generation IN (2, 3)"), 0);
        cr_assert_eq(count("SELECT count(*) FROM layers WHERE generation IN (2, 3)"), 0);
        cr_assert_eq(count("SELECT count(*) FROM layers WHERE generation = 1"), 1);
        /* The running generation is never removed, however small the bound. */
        cr_assert_eq(domain_store_apply_retention(s, &(StoreRetention) { 1, 100, 1 }, now, &removed, &error), 0);
        cr_assert_eq(count("SELECT count(*) FROM generations WHERE id = 6"), 1);
        cr_assert_eq(count("SELECT count(*) FROM generations WHERE id = 1"), 1);
        cr_assert_eq(count("SELECT count(*) FROM generations"), 2);
        domain_store_close(s);
}

/* The audit queue: copies, order across the ring's wrap, batches, the bound, a bad batch not retried. */
Test(store, audit_queue, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **list = NULL;
        _cleanup_free_ char *error = NULL;
        DomainStore *s = NULL;
        AuditQueue *q = audit_queue_new();
        size_t lost;
        int r;

        cr_assert_not_null(q);
        cr_assert_eq(domain_store_open(path, &s, &error), 0, "%s", error ?: "");
        cr_assert_eq(audit_queue_flush(q, s, &lost, &error), 0, "nothing pending");

        /* Strings are copied: the caller's buffer changes after the push. */
        for (unsigned i = 0; i < AUDIT_QUEUE_MAX + 10; i++) {
                char id[32];
                snprintf(id, sizeof(id), "r%u", i);
                r = audit_queue_push(q, &(EscalationEvent) { .time_usec = i, .request = id, .event = "requested" });
                cr_assert_eq(r, i < AUDIT_QUEUE_MAX ? 0 : -ENOBUFS, "push %u: %d", i, r);
                memset(id, 'x', sizeof(id) - 1);
        }
        cr_assert_eq(audit_queue_pending(q), AUDIT_QUEUE_MAX);
        cr_assert_eq(audit_queue_take_dropped(q), 10);
        cr_assert_eq(audit_queue_take_dropped(q), 0);

        /* One batch at a time, oldest first. */
        cr_assert_eq(audit_queue_flush(q, s, &lost, &error), (int) AUDIT_BATCH);
        cr_assert_eq(audit_queue_pending(q), AUDIT_QUEUE_MAX - AUDIT_BATCH);
        /* Room again, at the ring's start: pushed after the rest, flushed after them. */
        cr_assert_eq(audit_queue_push(q, &(EscalationEvent) { .time_usec = 9, .request = "last", .event = "result",
                                                              .by = "rule", .outcome = "completed", .status = 3 }), 0);
        /* A bad event (the table refuses it) loses its batch alone. */
        while (audit_queue_pending(q) > 1 + AUDIT_BATCH)
                cr_assert_gt(audit_queue_flush(q, s, &lost, &error), 0);
        cr_assert_eq(audit_queue_push(q, &(EscalationEvent) { .time_usec = 9, .event = "bogus" }), 0);
        cr_assert_eq(audit_queue_flush(q, s, &lost, &error), (int) AUDIT_BATCH);
        cr_assert_lt(audit_queue_flush(q, s, &lost, &error), 0);
        cr_assert_eq(lost, 2, "the batch with the bad event: the last good one and the bad one");
        error = mfree(error);
        cr_assert_eq(audit_queue_pending(q), 0);
        cr_assert_eq(count("SELECT count(*) FROM escalation_events"), AUDIT_QUEUE_MAX, "all but the lost batch");
        cr_assert_eq(domain_store_escalation_events(s, 1, collect, &list, &error), 0);
        cr_assert_str_eq(list[0], "r4095 requested - - 0", "in order; the copy, not the caller's changed buffer");
        audit_queue_free(q);
        domain_store_close(s);
}

/* The pending events, read without the store: from the skip-th oldest, in order across the ring's wrap. */
Test(store, audit_queue_visit, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **list = NULL;
        _cleanup_free_ char *error = NULL;
        DomainStore *s = NULL;
        AuditQueue *q = audit_queue_new();

        cr_assert_not_null(q);
        cr_assert_eq(audit_queue_visit(q, 0, collect, &list), 0);
        cr_assert_null(list, "nothing pending, nothing visited");
        cr_assert_eq(domain_store_open(path, &s, &error), 0, "%s", error ?: "");
        for (unsigned i = 0; i < AUDIT_QUEUE_MAX; i++) {
                char id[32];
                snprintf(id, sizeof(id), "r%u", i);
                cr_assert_eq(audit_queue_push(q, &(EscalationEvent) { .time_usec = i, .request = id, .event = "requested" }), 0);
        }
        /* One batch out, two in at the ring's start: the pending ones wrap. */
        cr_assert_eq(audit_queue_flush(q, s, NULL, &error), (int) AUDIT_BATCH);
        cr_assert_eq(audit_queue_push(q, &(EscalationEvent) { .request = "w1", .event = "requested" }), 0);
        cr_assert_eq(audit_queue_push(q, &(EscalationEvent) { .request = "w2", .event = "result", .outcome = "denied" }), 0);
        cr_assert_eq(audit_queue_visit(q, audit_queue_pending(q) - 3, collect, &list), 0);
        cr_assert_eq(strv_length(list), 3);
        cr_assert_str_eq(list[0], "r4095 requested - - 0");
        cr_assert_str_eq(list[1], "w1 requested - - 0");
        cr_assert_str_eq(list[2], "w2 result - denied 0");
        list = strv_free(list);
        cr_assert_eq(audit_queue_visit(q, audit_queue_pending(q), collect, &list), 0);
        cr_assert_null(list, "skipping all visits none");
        audit_queue_free(q);
        domain_store_close(s);
}
