/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "cleanup.h"
#include "sqlite-util.h"
#include "util.h"

void sqlite3_closep(sqlite3 **db) {
        if (*db)
                (void) sqlite3_close_v2(*db);
}

void sqlite3_finalizep(sqlite3_stmt **st) {
        if (*st)
                (void) sqlite3_finalize(*st);
}

int sqlite_error(sqlite3 *db, const char *label, const char *path, int rc, const char *what, char **ret_error) {
        int r = rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? -EBUSY
              : rc == SQLITE_NOMEM ? -ENOMEM
              : rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB ? -EBADMSG
              : rc == SQLITE_FULL ? -ENOSPC
              : rc == SQLITE_READONLY || rc == SQLITE_PERM || rc == SQLITE_AUTH ? -EACCES
              : -EIO;

        return errorf(ret_error, r, "%s %s: %s: %s", label, path, what, sqlite3_errmsg(db));
}

int sqlite_exec(sqlite3 *db, const char *label, const char *path, const char *sql, const char *what,
                char **ret_error) {
        int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        return rc == SQLITE_OK ? 0 : sqlite_error(db, label, path, rc, what, ret_error);
}

int sqlite_run(sqlite3 *db, const char *label, const char *path, const char *sql, const char *what, const char *types,
               const char *const *texts, const int64_t *ints, char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
        size_t t = 0, n = 0;

        for (int i = 0; rc == SQLITE_OK && types[i]; i++)
                rc = types[i] == 't' ? sqlite3_bind_text(st, i + 1, texts[t++], -1, SQLITE_TRANSIENT)
                                     : sqlite3_bind_int64(st, i + 1, ints[n++]);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        return rc == SQLITE_DONE ? 0 : sqlite_error(db, label, path, rc, what, ret_error);
}

int sqlite_migrate(sqlite3 *db, const char *label, const char *path, const char *const *migrations, int version,
                   const char *advice, char **ret_error) {
        _cleanup_(sqlite3_finalizep) sqlite3_stmt *st = NULL;
        int64_t v;
        int rc, r;

        rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
        if (rc == SQLITE_OK)
                rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
                return sqlite_error(db, label, path, rc, "cannot read the schema version", ret_error);
        v = sqlite3_column_int64(st, 0);
        if (v > version)
                return errorf(ret_error, -EPROTONOSUPPORT, "%s %s has schema version %" PRId64 ", newer than this "
                              "Lazaret's %d; %s", label, path, v, version, advice);
        if (v == version)
                return 0;
        r = sqlite_exec(db, label, path, "BEGIN IMMEDIATE", "cannot begin the migration", ret_error);
        if (r < 0)
                return r;
        sqlite3_reset(st);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == version)
                return sqlite_exec(db, label, path, "COMMIT", "cannot commit", ret_error);
        /* A statement left stepping holds its tables: a migration that drops one would fail (SQLITE_LOCKED). */
        sqlite3_reset(st);
        for (int64_t i = v; i < version; i++) {
                char sql[64];

                r = sqlite_exec(db, label, path, migrations[i], "cannot migrate the schema", ret_error);
                if (r >= 0) {
                        snprintf(sql, sizeof(sql), "PRAGMA user_version = %" PRId64, i + 1);
                        r = sqlite_exec(db, label, path, sql, "cannot record the schema version", ret_error);
                }
                if (r < 0) {
                        (void) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
                        return r;
                }
        }
        return sqlite_exec(db, label, path, "COMMIT", "cannot commit the migration", ret_error);
}
