/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "cleanup.h"
#include "storage-catalog.h"
#include "strv.h"
#include "util.h"

struct StorageCatalog {
        sqlite3 *db;
        char *path;
};

static void sqlite3_closep(sqlite3 **db) {
        if (*db)
                (void) sqlite3_close_v2(*db);
}

static void sqlite3_finalizep(sqlite3_stmt **st) {
        if (*st)
                (void) sqlite3_finalize(*st);
}

/* The migrations, in order: entry i takes user_version i to i + 1. */
static const char *const migrations[STORAGE_CATALOG_VERSION] = {
        "CREATE TABLE lowers ("
        "  id TEXT PRIMARY KEY,"
        "  recorded_usec INTEGER NOT NULL);"
        "CREATE TABLE leases ("
        "  lower_id TEXT NOT NULL REFERENCES lowers(id),"
        "  domain_id TEXT NOT NULL,"
        "  generation INTEGER NOT NULL,"
        "  leased_usec INTEGER NOT NULL,"
        "  PRIMARY KEY (domain_id, generation));",
};

static int db_error(StorageCatalog *c, int rc, const char *what, char **ret_error) {
        int r = rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? -EBUSY
              : rc == SQLITE_NOMEM ? -ENOMEM
              : rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? -EBADMSG
              : rc == SQLITE_FULL ? -ENOSPC
              : rc == SQLITE_READONLY || rc == SQLITE_PERM || rc == SQLITE_AUTH ? -EACCES
              : -EIO;

        return errorf(ret_error, r, "the Storage Catalog %s: %s: %s", c->path, what, sqlite3_errmsg(c->db));
}

static int exec(StorageCatalog *c, const char *sql, const char *what, char **ret_error) {
        int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : db_error(c, rc, what, ret_error);
}

/* One statement with text and integer parameters ('t', 'i'), run to its end. */
static int run(StorageCatalog *c, const char *sql, const char *types, const char *const *texts, const int64_t *ints,
               char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
        size_t t = 0, n = 0;

        for (int i = 0; rc == SQLITE_OK && types[i]; i++)
                rc = types[i] == 't' ? sqlite3_bind_text(st, i + 1, texts[t++], -1, SQLITE_STATIC)
                                     : sqlite3_bind_int64(st, i + 1, ints[n++]);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        return rc == SQLITE_DONE ? 0 : db_error(c, rc, sql, ret_error);
}

static int rollback(StorageCatalog *c, int r) {
        (void) sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

static int migrate(StorageCatalog *c, char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int64_t v;
        int rc, r;

        rc = sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return db_error(c, rc, "cannot read the schema version", ret_error);
        v = sqlite3_column_int64(st, 0);
        if (v > STORAGE_CATALOG_VERSION)
                return errorf(ret_error, -EPROTONOSUPPORT, "the Storage Catalog %s has schema version %" PRId64 ", newer "
                              "than this Lazaret's %d; use the newer Lazaret", c->path, v, STORAGE_CATALOG_VERSION);
        if (v == STORAGE_CATALOG_VERSION)
                return 0;
        r = exec(c, "BEGIN IMMEDIATE", "cannot begin the migration", ret_error);
        if (r < 0)
                return r;
        /* Another opener may have migrated it meanwhile: read again inside the transaction. */
        sqlite3_reset(st);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == STORAGE_CATALOG_VERSION)
                return exec(c, "COMMIT", "cannot commit", ret_error);
        for (int64_t i = v; i < STORAGE_CATALOG_VERSION; i++) {
                char sql[64];

                r = exec(c, migrations[i], "cannot migrate the schema", ret_error);
                if (r >= 0) {
                        snprintf(sql, sizeof(sql), "PRAGMA user_version = %" PRId64, i + 1);
                        r = exec(c, sql, "cannot record the schema version", ret_error);
                }
                if (r < 0)
                        return rollback(c, r);
        }
        return exec(c, "COMMIT", "cannot commit the migration", ret_error);
}

int storage_catalog_open(const char *path, StorageCatalog **ret, char **ret_error) {
        _cleanup_free_ StorageCatalog *c = NULL;
        _cleanup_(sqlite3_closep) sqlite3 *db = NULL;
        struct stat st;
        int rc, r;

        if (lstat(path, &st) >= 0 && !S_ISREG(st.st_mode))
                return errorf(ret_error, S_ISLNK(st.st_mode) ? -ELOOP : -EBADMSG,
                              "the Storage Catalog %s is not a regular file; refusing to open it", path);
        c = calloc(1, sizeof(StorageCatalog));
        if (!c || !(c->path = strdup(path)))
                return -ENOMEM;
        rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW |
                             SQLITE_OPEN_FULLMUTEX, NULL);
        if (rc != SQLITE_OK) {
                r = errorf(ret_error, rc == SQLITE_NOMEM ? -ENOMEM : -EIO, "cannot open the Storage Catalog %s: %s", path,
                           db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
                free(c->path);
                return r;
        }
        c->db = TAKE_PTR(db);
        (void) sqlite3_busy_timeout(c->db, STORAGE_CATALOG_BUSY_MS);
        (void) sqlite3_extended_result_codes(c->db, 0);
        r = exec(c, "PRAGMA journal_mode = WAL", "cannot use write-ahead logging", ret_error);
        if (r >= 0)
                r = exec(c, "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL", "cannot set its options", ret_error);
        if (r >= 0)
                r = migrate(c, ret_error);
        if (r < 0) {
                storage_catalog_close(TAKE_PTR(c));
                return r;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

StorageCatalog *storage_catalog_close(StorageCatalog *c) {
        if (!c)
                return NULL;
        (void) sqlite3_close_v2(c->db);
        free(c->path);
        free(c);
        return NULL;
}

int storage_catalog_lease(StorageCatalog *c, const char *lower_id, const char *domain_id, uint64_t generation,
                          uint64_t now_usec, char **ret_error) {
        int r;

        r = exec(c, "BEGIN IMMEDIATE", "cannot begin a lease", ret_error);
        if (r < 0)
                return r;
        r = run(c, "INSERT OR IGNORE INTO lowers (id, recorded_usec) VALUES (?, ?)", "ti",
                (const char *[]) { lower_id }, (int64_t[]) { (int64_t) now_usec }, ret_error);
        /* Only this Domain's lock holder writes its leases: any earlier one is a dead owner's. */
        if (r >= 0)
                r = run(c, "DELETE FROM leases WHERE domain_id = ?", "t", (const char *[]) { domain_id }, NULL, ret_error);
        if (r >= 0)
                r = run(c, "INSERT INTO leases (lower_id, domain_id, generation, leased_usec) VALUES (?, ?, ?, ?)", "ttii",
                        (const char *[]) { lower_id, domain_id }, (int64_t[]) { (int64_t) generation, (int64_t) now_usec },
                        ret_error);
        if (r < 0)
                return rollback(c, r);
        return exec(c, "COMMIT", "cannot commit a lease", ret_error);
}

int storage_catalog_release(StorageCatalog *c, const char *domain_id, uint64_t generation, char **ret_error) {
        return run(c, "DELETE FROM leases WHERE domain_id = ? AND generation = ?", "ti", (const char *[]) { domain_id },
                   (int64_t[]) { (int64_t) generation }, ret_error);
}

int storage_catalog_gc_begin(StorageCatalog *c, char **ret_error) {
        return exec(c, "BEGIN IMMEDIATE", "cannot begin the collection", ret_error);
}

int storage_catalog_forget(StorageCatalog *c, const char *lower_id, char **ret_error) {
        return run(c, "DELETE FROM lowers WHERE id = ? AND id NOT IN (SELECT lower_id FROM leases)", "t",
                   (const char *[]) { lower_id }, NULL, ret_error);
}

int storage_catalog_gc_end(StorageCatalog *c, bool commit, char **ret_error) {
        if (!commit)
                return rollback(c, 0);
        return exec(c, "COMMIT", "cannot commit the collection", ret_error);
}

static int read_lines(StorageCatalog *c, const char *sql, char ***ret, char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        _cleanup_strv_free_ char **l = NULL;
        int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);

        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
                const unsigned char *v = sqlite3_column_text(st, 0);

                if (v && strv_extend(&l, (const char *) v) < 0)
                        return -ENOMEM;
                rc = SQLITE_OK;
        }
        if (rc != SQLITE_DONE)
                return db_error(c, rc, sql, ret_error);
        *ret = TAKE_PTR(l);
        return 0;
}

int storage_catalog_leased(StorageCatalog *c, char ***ret, char **ret_error) {
        return read_lines(c, "SELECT DISTINCT lower_id FROM leases ORDER BY lower_id", ret, ret_error);
}

int storage_catalog_leases(StorageCatalog *c, char ***ret, char **ret_error) {
        return read_lines(c, "SELECT lower_id || ' ' || domain_id || ' ' || generation FROM leases "
                          "ORDER BY lower_id, domain_id, generation", ret, ret_error);
}
