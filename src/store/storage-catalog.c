/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "cleanup.h"
#include "sqlite-util.h"
#include "storage-catalog.h"
#include "strv.h"
#include "util.h"

struct StorageCatalog {
        sqlite3 *db;
        char *path;
};

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

#define LABEL "the Storage Catalog"

static int db_error(StorageCatalog *c, int rc, const char *what, char **ret_error) {
        return sqlite_error(c->db, LABEL, c->path, rc, what, ret_error);
}

static int exec(StorageCatalog *c, const char *sql, const char *what, char **ret_error) {
        return sqlite_exec(c->db, LABEL, c->path, sql, what, ret_error);
}

static int run(StorageCatalog *c, const char *sql, const char *types, const char *const *texts, const int64_t *ints,
               char **ret_error) {
        return sqlite_run(c->db, LABEL, c->path, sql, sql, types, texts, ints, ret_error);
}

static int rollback(StorageCatalog *c, int r) {
        (void) sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
        return r;
}

static int migrate(StorageCatalog *c, char **ret_error) {
        return sqlite_migrate(c->db, LABEL, c->path, migrations, STORAGE_CATALOG_VERSION, "use the newer Lazaret",
                              ret_error);
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
        /* Opened and closed once per start: a close that checkpoints the log
         * (the last connection's) costs a launch the database file's writes
         * and syncs. The log is synced at each commit all the same; SQLite
         * checkpoints it when it grows (spec 6.4, "The cold launch's own steps"). */
        (void) sqlite3_db_config(c->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
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
