/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Storage Catalog: a lower recorded once, one lease per (Domain,
 * generation), a Domain's next lease drops its dead owner's, gc forgets
 * only unleased lowers, and the schema is versioned.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cleanup.h"
#include "fs-util.h"
#include "path-util.h"
#include "storage-catalog.h"
#include "strv.h"

static char *dir, *path;

static void setup(void) {
        char tmpl[] = "/tmp/lazaret-unit-catalog-XXXXXX";

        cr_assert_not_null(mkdtemp(tmpl));
        dir = strdup(tmpl);
        path = path_join(dir, STORAGE_CATALOG_FILE);
}

static void teardown(void) {
        (void) rm_rf(dir);
        free(dir);
        free(path);
}

static int64_t count(const char *sql) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        int64_t v = -1;

        cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        if (sqlite3_step(st) == SQLITE_ROW)
                v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return v;
}

static char *joined(StorageCatalog *c, bool all) {
        _cleanup_strv_free_ char **l = NULL;
        char *s;

        cr_assert_eq(all ? storage_catalog_leases(c, &l, NULL) : storage_catalog_leased(c, &l, NULL), 0);
        s = l ? strv_join(l, ",") : strdup("");
        cr_assert_not_null(s);
        return s;
}

TestSuite(storage_catalog, .init = setup, .fini = teardown);

Test(storage_catalog, shared_lower_and_leases) {
        StorageCatalog *a = NULL, *b = NULL;
        _cleanup_free_ char *s1 = NULL, *s2 = NULL, *s3 = NULL, *s4 = NULL;

        cr_assert_eq(storage_catalog_open(path, &a, NULL), 0);
        cr_assert_eq(count("PRAGMA user_version"), STORAGE_CATALOG_VERSION);
        /* Two Domains (two openers, as two coordinators) of one image: one lower, two leases. */
        cr_assert_eq(storage_catalog_open(path, &b, NULL), 0);
        cr_assert_eq(storage_catalog_lease(a, "L1", "aaaaaaaaaaaa", 1, 10, NULL), 0);
        cr_assert_eq(storage_catalog_lease(b, "L1", "bbbbbbbbbbbb", 7, 11, NULL), 0);
        cr_assert_eq(count("SELECT count(*) FROM lowers"), 1);
        s1 = joined(a, true);
        cr_assert_str_eq(s1, "L1 aaaaaaaaaaaa 1,L1 bbbbbbbbbbbb 7");
        /* The next generation of a Domain drops its earlier (a dead owner's) lease. */
        cr_assert_eq(storage_catalog_lease(a, "L2", "aaaaaaaaaaaa", 2, 12, NULL), 0);
        s2 = joined(a, true);
        cr_assert_str_eq(s2, "L1 bbbbbbbbbbbb 7,L2 aaaaaaaaaaaa 2");
        /* Released: gone; releasing what is not leased is fine. */
        cr_assert_eq(storage_catalog_release(b, "bbbbbbbbbbbb", 7, NULL), 0);
        cr_assert_eq(storage_catalog_release(b, "bbbbbbbbbbbb", 7, NULL), 0);
        s3 = joined(b, false);
        cr_assert_str_eq(s3, "L2");

        /* gc: a leased lower is never forgotten; an unleased one is. */
        cr_assert_eq(storage_catalog_gc_begin(b, NULL), 0);
        cr_assert_eq(storage_catalog_forget(b, "L2", NULL), 0);
        cr_assert_eq(storage_catalog_forget(b, "L1", NULL), 0);
        cr_assert_eq(storage_catalog_gc_end(b, true, NULL), 0);
        cr_assert_eq(count("SELECT count(*) FROM lowers WHERE id = 'L2'"), 1);
        cr_assert_eq(count("SELECT count(*) FROM lowers WHERE id = 'L1'"), 0);
        /* A collection rolled back forgets nothing. */
        cr_assert_eq(storage_catalog_release(a, "aaaaaaaaaaaa", 2, NULL), 0);
        cr_assert_eq(storage_catalog_gc_begin(b, NULL), 0);
        cr_assert_eq(storage_catalog_forget(b, "L2", NULL), 0);
        cr_assert_eq(storage_catalog_gc_end(b, false, NULL), 0);
        cr_assert_eq(count("SELECT count(*) FROM lowers WHERE id = 'L2'"), 1);
        s4 = joined(b, false);
        cr_assert_str_eq(s4, "");
        storage_catalog_close(a);
        storage_catalog_close(b);
}

Test(storage_catalog, gc_excludes_leases) {
        StorageCatalog *a = NULL, *b = NULL;
        char *why = NULL;

        cr_assert_eq(storage_catalog_open(path, &a, NULL), 0);
        cr_assert_eq(storage_catalog_open(path, &b, NULL), 0);
        cr_assert_eq(storage_catalog_gc_begin(a, NULL), 0);
        /* While gc decides, nobody leases: the lease waits its busy timeout, then fails by name. */
        cr_assert_eq(storage_catalog_lease(b, "L1", "bbbbbbbbbbbb", 1, 1, &why), -EBUSY);
        cr_assert_not_null(strstr(why, "Storage Catalog"));
        free(why);
        cr_assert_eq(storage_catalog_gc_end(a, true, NULL), 0);
        cr_assert_eq(storage_catalog_lease(b, "L1", "bbbbbbbbbbbb", 1, 1, NULL), 0);
        storage_catalog_close(a);
        storage_catalog_close(b);
}

Test(storage_catalog, newer_and_foreign_refused) {
        StorageCatalog *c = NULL;
        char *why = NULL;
        sqlite3 *db = NULL;

        cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
        cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
        cr_assert_eq(storage_catalog_open(path, &c, &why), -EPROTONOSUPPORT);
        cr_assert_not_null(strstr(why, "newer"));
        free(why);
        why = NULL;
        cr_assert_eq(unlink(path), 0);
        cr_assert_eq(symlink("/etc/passwd", path), 0);
        cr_assert_eq(storage_catalog_open(path, &c, &why), -ELOOP);
        free(why);
}
