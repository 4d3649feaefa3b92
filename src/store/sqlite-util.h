/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include <sqlite3.h>

/*
 * What the Domain Store and the Storage Catalog share of SQLite. label
 * and path name the file in messages ("the Domain Store /path: what:
 * SQLite's words"); errors map to errnos (busy -EBUSY, corrupt -EBADMSG,
 * full -ENOSPC, read-only or denied -EACCES, else -EIO).
 */
void sqlite3_closep(sqlite3 **db);
void sqlite3_finalizep(sqlite3_stmt **st);

int sqlite_error(sqlite3 *db, const char *label, const char *path, int rc, const char *what, char **ret_error);
int sqlite_exec(sqlite3 *db, const char *label, const char *path, const char *sql, const char *what,
                char **ret_error);

/* One statement with text and integer parameters (types: 't', 'i' in order), run to its end. */
int sqlite_run(sqlite3 *db, const char *label, const char *path, const char *sql, const char *what, const char *types,
               const char *const *texts, const int64_t *ints, char **ret_error);

/*
 * Takes the schema from its PRAGMA user_version to version, running
 * migrations[i] for each version i it passes, in one BEGIN IMMEDIATE
 * transaction (the version read again inside it: another opener may have
 * migrated meanwhile). A newer schema is refused with -EPROTONOSUPPORT,
 * the message ending in advice.
 */
int sqlite_migrate(sqlite3 *db, const char *label, const char *path, const char *const *migrations, int version,
                   const char *advice, char **ret_error);
