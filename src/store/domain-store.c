/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cleanup.h"
#include "domain-store.h"
#include "sqlite-util.h"
#include "strv.h"
#include "util.h"

struct DomainStore {
        sqlite3 *db;
        char *path;
};

/* The migrations, in order: entry i takes user_version i to i + 1. */
static const char *const migrations[DOMAIN_STORE_VERSION] = {
        "CREATE TABLE generations ("
        "  id INTEGER PRIMARY KEY,"
        "  coordinator_id TEXT NOT NULL,"
        "  started_usec INTEGER NOT NULL,"
        "  ended_usec INTEGER,"
        "  state TEXT NOT NULL CHECK (state IN ('starting','running','stopped','failed','abandoned')),"
        "  network_fingerprint TEXT);"
        "CREATE TABLE leases ("
        "  generation INTEGER NOT NULL REFERENCES generations(id),"
        "  lower_id TEXT NOT NULL,"
        "  released_usec INTEGER,"
        "  PRIMARY KEY (generation, lower_id));"
        "CREATE TABLE layers ("
        "  generation INTEGER NOT NULL REFERENCES generations(id),"
        "  path TEXT NOT NULL,"
        "  PRIMARY KEY (generation, path));",
        /* 2: the audit trail of host escalation (spec 5.6). */
        "CREATE TABLE escalation_events ("
        "  id INTEGER PRIMARY KEY,"
        "  time_usec INTEGER NOT NULL,"
        "  request TEXT,"
        "  session TEXT,"
        "  event TEXT NOT NULL CHECK (event IN ('requested','refused','approved','denied','aborted','result','session-ended')),"
        "  decided_by TEXT,"
        "  argv TEXT,"
        "  cwd TEXT,"
        "  why TEXT,"
        "  outcome TEXT,"
        "  status INTEGER,"
        "  detail TEXT);"
        "CREATE INDEX escalation_events_request ON escalation_events (request);",
        /* 3: denied names in the audit trail, and the names the developer kept allowed (spec 4.5, "A denied
         * name"). SQLite cannot change a CHECK: the table is made anew and its rows copied in order. */
        "CREATE TABLE escalation_events_3 ("
        "  id INTEGER PRIMARY KEY,"
        "  time_usec INTEGER NOT NULL,"
        "  request TEXT,"
        "  session TEXT,"
        "  event TEXT NOT NULL CHECK (event IN ('requested','refused','approved','denied','aborted','result',"
        "                                       'session-ended','egress-denied','egress-allowed','egress-forgotten')),"
        "  decided_by TEXT,"
        "  argv TEXT,"
        "  cwd TEXT,"
        "  why TEXT,"
        "  outcome TEXT,"
        "  status INTEGER,"
        "  detail TEXT);"
        "INSERT INTO escalation_events_3 SELECT * FROM escalation_events ORDER BY id;"
        "DROP TABLE escalation_events;"
        "ALTER TABLE escalation_events_3 RENAME TO escalation_events;"
        "CREATE INDEX escalation_events_request ON escalation_events (request);"
        "CREATE TABLE egress_allows ("
        "  rule TEXT PRIMARY KEY NOT NULL,"
        "  added_usec INTEGER NOT NULL,"
        "  added_by TEXT NOT NULL);",
};

#define LABEL "the Domain Store"

static int db_error(DomainStore *s, int rc, const char *what, char **ret_error) {
        return sqlite_error(s->db, LABEL, s->path, rc, what, ret_error);
}

static int exec(DomainStore *s, const char *sql, const char *what, char **ret_error) {
        return sqlite_exec(s->db, LABEL, s->path, sql, what, ret_error);
}

static int get_int(DomainStore *s, const char *sql, int64_t *ret, char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);

        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return db_error(s, rc, sql, ret_error);
        *ret = sqlite3_column_int64(st, 0);
        return 0;
}

/* Read-only: a damaged file is refused before anything could write to it. */
static int check_health(DomainStore *s, char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        const unsigned char *v;
        int rc;

        rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT)
                return errorf(ret_error, -EBADMSG, "the Domain Store %s is corrupt (%s); nothing was changed. Move it "
                              "aside to start the Domain's record afresh", s->path, sqlite3_errstr(rc));
        if (rc != SQLITE_ROW)
                return db_error(s, rc, "cannot check it", ret_error);
        v = sqlite3_column_text(st, 0);
        if (!v || strcmp((const char *) v, "ok") != 0)
                return errorf(ret_error, -EBADMSG, "the Domain Store %s is corrupt (%s); nothing was changed. Move it "
                              "aside to start the Domain's record afresh", s->path, v ? (const char *) v : "no answer");
        return 0;
}

static int migrate(DomainStore *s, char **ret_error) {
        return sqlite_migrate(s->db, LABEL, s->path, migrations, DOMAIN_STORE_VERSION,
                              "use the newer Lazaret, or move the file aside", ret_error);
}

int domain_store_open(const char *path, DomainStore **ret, char **ret_error) {
        _cleanup_free_ DomainStore *s = NULL;
        _cleanup_(sqlite3_closep) sqlite3 *db = NULL;
        _cleanup_free_ char *p = NULL;
        struct stat st;
        int rc, r;

        if (lstat(path, &st) >= 0 && !S_ISREG(st.st_mode))
                return errorf(ret_error, S_ISLNK(st.st_mode) ? -ELOOP : -EBADMSG,
                              "the Domain Store %s is not a regular file; refusing to open it", path);
        p = strdup(path);
        s = calloc(1, sizeof(DomainStore));
        if (!p || !s)
                return -ENOMEM;
        rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW |
                             SQLITE_OPEN_FULLMUTEX, NULL);
        if (rc != SQLITE_OK)
                return errorf(ret_error, rc == SQLITE_NOMEM ? -ENOMEM : -EIO, "cannot open the Domain Store %s: %s", path,
                              db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        s->db = TAKE_PTR(db);
        s->path = TAKE_PTR(p);
        (void) sqlite3_busy_timeout(s->db, DOMAIN_STORE_BUSY_MS);
        (void) sqlite3_extended_result_codes(s->db, 0);

        r = check_health(s, ret_error);
        if (r >= 0)
                r = exec(s, "PRAGMA journal_mode = WAL", "cannot use write-ahead logging", ret_error);
        if (r >= 0)
                r = exec(s, "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL", "cannot set its options", ret_error);
        if (r >= 0)
                r = migrate(s, ret_error);
        if (r < 0) {
                domain_store_close(TAKE_PTR(s));
                return r;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int domain_store_open_readonly(const char *path, DomainStore **ret, char **ret_error) {
        _cleanup_free_ DomainStore *s = NULL;
        struct stat st;
        int64_t v = 0;
        int rc, r;

        if (lstat(path, &st) < 0)
                return errorf(ret_error, -errno, "the Domain Store %s: %m", path);
        if (!S_ISREG(st.st_mode))
                return errorf(ret_error, -ELOOP, "the Domain Store %s is not a regular file; refusing to open it", path);
        s = calloc(1, sizeof(DomainStore));
        if (!s || !(s->path = strdup(path))) {
                free(s ? s->path : NULL);
                return -ENOMEM;
        }
        rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_FULLMUTEX, NULL);
        if (rc != SQLITE_OK) {
                r = errorf(ret_error, -EIO, "cannot open the Domain Store %s: %s", path,
                           s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
                domain_store_close(TAKE_PTR(s));
                return r;
        }
        (void) sqlite3_busy_timeout(s->db, DOMAIN_STORE_BUSY_MS);
        r = check_health(s, ret_error);
        if (r >= 0)
                r = get_int(s, "PRAGMA user_version", &v, ret_error);
        if (r >= 0 && v != DOMAIN_STORE_VERSION)
                r = errorf(ret_error, -EPROTONOSUPPORT, "the Domain Store %s has schema version %lld, not %d", path,
                           (long long) v, DOMAIN_STORE_VERSION);
        if (r < 0) {
                domain_store_close(TAKE_PTR(s));
                return r;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

DomainStore *domain_store_close(DomainStore *s) {
        if (!s)
                return NULL;
        if (s->db)
                (void) sqlite3_close_v2(s->db);
        free(s->path);
        free(s);
        return NULL;
}

/* One statement with text (or NULL) and integer parameters: "t" binds the next string, "i" the next int64. */
static int run(DomainStore *s, const char *sql, const char *types, const char *const *texts, const int64_t *ints,
               char **ret_error) {
        return sqlite_run(s->db, LABEL, s->path, sql, "cannot write", types, texts, ints, ret_error);
}

static int transaction_end(DomainStore *s, int r, char **ret_error) {
        if (r < 0) {
                (void) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
                return r;
        }
        return exec(s, "COMMIT", "cannot commit", ret_error);
}

int domain_store_begin_generation(DomainStore *s, const char *coordinator_id, uint64_t now_usec, const char *lower_id,
                                  char *const *layers, uint64_t *ret_generation, char **ret_error) {
        int64_t now = (int64_t) now_usec;
        int r;

        r = exec(s, "BEGIN IMMEDIATE", "cannot begin a transaction", ret_error);
        if (r < 0)
                return r;
        /* A crashed owner's generation: over before this one starts (ordered recovery). */
        r = run(s, "UPDATE leases SET released_usec = ? WHERE released_usec IS NULL", "i", NULL, &now, ret_error);
        if (r >= 0)
                r = run(s, "UPDATE generations SET state = 'abandoned', ended_usec = ? WHERE ended_usec IS NULL", "i",
                        NULL, &now, ret_error);
        if (r >= 0)
                r = run(s, "INSERT INTO generations (coordinator_id, started_usec, state) VALUES (?, ?, 'starting')", "ti",
                        (const char *[]) { coordinator_id }, &now, ret_error);
        if (r >= 0) {
                int64_t gen = sqlite3_last_insert_rowid(s->db);

                if (lower_id)
                        r = run(s, "INSERT INTO leases (generation, lower_id) VALUES (?, ?)", "it",
                                (const char *[]) { lower_id }, &gen, ret_error);
                for (char *const *l = layers; r >= 0 && l && *l; l++)
                        r = run(s, "INSERT INTO layers (generation, path) VALUES (?, ?)", "it", (const char *[]) { *l },
                                &gen, ret_error);
                if (r >= 0)
                        *ret_generation = (uint64_t) gen;
        }
        return transaction_end(s, r, ret_error);
}

static int check_changed(DomainStore *s, uint64_t generation, char **ret_error) {
        if (sqlite3_changes(s->db) == 1)
                return 0;
        return errorf(ret_error, -ENOENT, "the Domain Store %s has no open generation %llu", s->path,
                      (unsigned long long) generation);
}

int domain_store_generation_running(DomainStore *s, uint64_t generation, const char *network_fingerprint,
                                    char **ret_error) {
        int64_t g = (int64_t) generation;
        int r;

        r = exec(s, "BEGIN IMMEDIATE", "cannot begin a transaction", ret_error);
        if (r >= 0)
                r = run(s, "UPDATE generations SET state = 'running', network_fingerprint = ? WHERE id = ? AND ended_usec IS NULL",
                        "ti", (const char *[]) { network_fingerprint }, &g, ret_error);
        if (r >= 0)
                r = check_changed(s, generation, ret_error);
        return transaction_end(s, r, ret_error);
}

int domain_store_end_generation(DomainStore *s, uint64_t generation, const char *state, uint64_t now_usec,
                                char **ret_error) {
        int64_t v[2] = { (int64_t) now_usec, (int64_t) generation };
        int r;

        if (!state || (strcmp(state, "stopped") != 0 && strcmp(state, "failed") != 0))
                return errorf(ret_error, -EINVAL, "a generation ends as stopped or failed, not \"%s\"", strna(state));
        r = exec(s, "BEGIN IMMEDIATE", "cannot begin a transaction", ret_error);
        if (r >= 0)
                r = run(s, "UPDATE generations SET state = ?, ended_usec = ? WHERE id = ? AND ended_usec IS NULL", "tii",
                        (const char *[]) { state }, v, ret_error);
        if (r >= 0)
                r = check_changed(s, generation, ret_error);
        if (r >= 0)
                r = run(s, "UPDATE leases SET released_usec = ? WHERE generation = ? AND released_usec IS NULL", "ii",
                        NULL, v, ret_error);
        return transaction_end(s, r, ret_error);
}

int domain_store_apply_retention(DomainStore *s, const StoreRetention *keep, uint64_t now_usec, StoreRemoved *ret,
                                 char **ret_error) {
        uint64_t day = UINT64_C(86400) * UINT64_C(1000000), age = (uint64_t) keep->audit_days * day;
        int64_t before = (int64_t) (now_usec > age ? now_usec - age : 0);
        int64_t events = keep->audit_events, gens = keep->generations;
        StoreRemoved removed = {};
        int r;

        if (keep->audit_days == 0 || keep->audit_events == 0 || keep->generations == 0)
                return errorf(ret_error, -EINVAL, "a retention of nothing would empty the Domain Store");
        r = exec(s, "BEGIN IMMEDIATE", "cannot begin a transaction", ret_error);
        if (r >= 0)
                r = run(s, "DELETE FROM escalation_events WHERE time_usec < ?", "i", NULL, &before, ret_error);
        if (r >= 0) {
                removed.events = (uint64_t) sqlite3_changes(s->db);
                r = run(s, "DELETE FROM escalation_events WHERE id NOT IN "
                           "(SELECT id FROM escalation_events ORDER BY id DESC LIMIT ?)",
                        "i", NULL, &events, ret_error);
        }
        if (r >= 0) {
                removed.events += (uint64_t) sqlite3_changes(s->db);
                /* The generations that go: beyond the newest, ended, no lease held. */
                r = exec(s, "CREATE TEMP TABLE IF NOT EXISTS retention_gone (id INTEGER PRIMARY KEY); "
                            "DELETE FROM temp.retention_gone",
                         "cannot prepare the retention", ret_error);
        }
        if (r >= 0)
                r = run(s, "INSERT INTO temp.retention_gone SELECT id FROM generations WHERE ended_usec IS NOT NULL "
                           "AND id NOT IN (SELECT id FROM generations ORDER BY id DESC LIMIT ?) "
                           "AND NOT EXISTS (SELECT 1 FROM leases WHERE leases.generation = generations.id "
                           "AND released_usec IS NULL)",
                        "i", NULL, &gens, ret_error);
        if (r >= 0)
                r = exec(s, "DELETE FROM layers WHERE generation IN (SELECT id FROM temp.retention_gone); "
                            "DELETE FROM leases WHERE generation IN (SELECT id FROM temp.retention_gone)",
                         "cannot write", ret_error);
        if (r >= 0)
                r = exec(s, "DELETE FROM generations WHERE id IN (SELECT id FROM temp.retention_gone)", "cannot write",
                         ret_error);
        if (r >= 0)
                removed.generations = (uint64_t) sqlite3_changes(s->db);
        r = transaction_end(s, r, ret_error);
        if (r >= 0 && ret)
                *ret = removed;
        return r;
}

int domain_store_leased_lowers(DomainStore *s, char ***ret, char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        _cleanup_strv_free_ char **l = NULL;
        int rc;

        rc = sqlite3_prepare_v2(s->db, "SELECT DISTINCT lower_id FROM leases WHERE released_usec IS NULL ORDER BY lower_id",
                                -1, &st, NULL);
        if (rc == SQLITE_OK)
                while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                        if (strv_extend(&l, (const char *) sqlite3_column_text(st, 0)) < 0)
                                return -ENOMEM;
        if (rc != SQLITE_DONE)
                return db_error(s, rc, "cannot read the leases", ret_error);
        *ret = TAKE_PTR(l);
        return 0;
}

int domain_store_generation_state(DomainStore *s, uint64_t generation, char **ret, char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc;

        rc = sqlite3_prepare_v2(s->db, "SELECT state FROM generations WHERE id = ?", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_bind_int64(st, 1, (int64_t) generation);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc == SQLITE_DONE)
                return errorf(ret_error, -ENOENT, "the Domain Store %s has no generation %llu", s->path,
                              (unsigned long long) generation);
        if (rc != SQLITE_ROW)
                return db_error(s, rc, "cannot read a generation", ret_error);
        *ret = strdup((const char *) sqlite3_column_text(st, 0));
        return *ret ? 0 : -ENOMEM;
}

static int add_escalation_event(DomainStore *s, const EscalationEvent *ev, char **ret_error) {
        const char *texts[] = { ev->request, ev->session, ev->event, ev->by, ev->argv_json, ev->cwd, ev->why, ev->outcome,
                                ev->detail };
        int64_t ints[] = { (int64_t) ev->time_usec, ev->outcome ? ev->status : 0 };

        return run(s,
                   "INSERT INTO escalation_events (time_usec, request, session, event, decided_by, argv, cwd, why, outcome, status, detail) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   "ittttttttit", texts, ints, ret_error);
}

int domain_store_add_escalation_event(DomainStore *s, const EscalationEvent *ev, char **ret_error) {
        /* One row, one implicit transaction. */
        return add_escalation_event(s, ev, ret_error);
}

int domain_store_add_escalation_events(DomainStore *s, const EscalationEvent *evs, size_t n, char **ret_error) {
        int r;

        if (n == 1)
                return add_escalation_event(s, evs, ret_error);
        /* All or none, and one commit (one sync of the log) for them all. */
        r = exec(s, "BEGIN IMMEDIATE", "cannot begin a transaction", ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = add_escalation_event(s, &evs[i], ret_error);
        return transaction_end(s, r, ret_error);
}

static const char *column_text(sqlite3_stmt *st, int i) {
        return (const char *) sqlite3_column_text(st, i);
}

int domain_store_escalation_events(DomainStore *s, unsigned limit, EscalationEventVisit fn, void *userdata,
                                   char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc, r;

        /* The newest limit events, oldest first. */
        rc = sqlite3_prepare_v2(s->db,
                                "SELECT time_usec, request, session, event, decided_by, argv, cwd, why, outcome, status, detail "
                                "FROM (SELECT * FROM escalation_events ORDER BY id DESC LIMIT ?) ORDER BY id",
                                -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_bind_int64(st, 1, limit);
        if (rc != SQLITE_OK)
                return db_error(s, rc, "cannot read the escalation events", ret_error);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                EscalationEvent ev = {
                        .time_usec = (uint64_t) sqlite3_column_int64(st, 0),
                        .request = column_text(st, 1),
                        .session = column_text(st, 2),
                        .event = column_text(st, 3),
                        .by = column_text(st, 4),
                        .argv_json = column_text(st, 5),
                        .cwd = column_text(st, 6),
                        .why = column_text(st, 7),
                        .outcome = column_text(st, 8),
                        .status = (int) sqlite3_column_int64(st, 9),
                        .detail = column_text(st, 10),
                };
                r = fn(&ev, userdata);
                if (r < 0)
                        return r;
        }
        if (rc != SQLITE_DONE)
                return db_error(s, rc, "cannot read the escalation events", ret_error);
        return 0;
}

int domain_store_egress_keep(DomainStore *s, const char *rule, uint64_t now_usec, const char *by, char **ret_error) {
        const char *texts[] = { rule, by };
        int64_t ints[] = { (int64_t) now_usec };

        return run(s, "INSERT INTO egress_allows (rule, added_usec, added_by) VALUES (?, ?, ?) "
                      "ON CONFLICT (rule) DO NOTHING",
                   "tit", texts, ints, ret_error);
}

int domain_store_egress_forget(DomainStore *s, const char *rule, char **ret_error) {
        const char *texts[] = { rule };
        int r;

        r = run(s, "DELETE FROM egress_allows WHERE rule = ?", "t", texts, NULL, ret_error);
        if (r < 0)
                return r;
        return sqlite3_changes(s->db) > 0 ? 0 : -ENOENT;
}

int domain_store_egress_kept(DomainStore *s, char ***ret, char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        _cleanup_strv_free_ char **l = NULL;
        int rc;

        rc = sqlite3_prepare_v2(s->db, "SELECT rule FROM egress_allows ORDER BY added_usec, rule", -1, &st, NULL);
        if (rc == SQLITE_OK)
                while ((rc = sqlite3_step(st)) == SQLITE_ROW)
                        if (strv_extend(&l, (const char *) sqlite3_column_text(st, 0)) < 0)
                                return -ENOMEM;
        if (rc != SQLITE_DONE)
                return db_error(s, rc, "cannot read the kept egress rules", ret_error);
        *ret = TAKE_PTR(l);
        return 0;
}
