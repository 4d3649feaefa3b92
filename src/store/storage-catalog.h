/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/*
 * The Storage Catalog (SR-15, FR-22): one SQLite database (WAL) under the
 * Storage Root, <data_root>/images/catalog.sqlite, shared by every Domain
 * of the user. It records each prepared lower once (by its prepared-artifact
 * ID) and a lease per (Domain, generation) on the lower that generation
 * mounts. Every call is one short open transaction (BEGIN IMMEDIATE ...
 * COMMIT) under a busy timeout of STORAGE_CATALOG_BUSY_MS, so concurrent
 * Domains never wait on each other for long.
 *
 * The rule it keeps (the spin model's LeaseProtectsLower): a lower is
 * deleted only by `lazaretctl state gc`, only inside a gc transaction,
 * only when no lease holds it, and a lease is taken before its generation
 * looks at or mounts the lower; a coordinator that finds its lower gone
 * after taking its lease prepares it again or fails, never mounts a
 * half-deleted tree.
 *
 * Only the holder of a Domain's lock writes that Domain's leases, and a
 * coordinator releases its lease only once its sandbox (and with it the
 * overlays' mount namespace) is gone. A lease left by a coordinator that
 * died is replaced by the next lease of the same Domain, never dropped by
 * gc: that dead owner's sandbox may still be stopping.
 */

#define STORAGE_CATALOG_FILE "catalog.sqlite"   /* in STORAGE_IMAGES_DIR */
#define STORAGE_CATALOG_VERSION 1
#define STORAGE_CATALOG_BUSY_MS 500

typedef struct StorageCatalog StorageCatalog;

/* Creates or migrates it; -EBADMSG corrupt, -EPROTONOSUPPORT newer, -ELOOP a symlink. */
int storage_catalog_open(const char *path, StorageCatalog **ret, char **ret_error);
StorageCatalog *storage_catalog_close(StorageCatalog *c);

/* One transaction: lower_id recorded (once), domain_id's earlier leases dropped, (domain_id, generation) leases it. */
int storage_catalog_lease(StorageCatalog *c, const char *lower_id, const char *domain_id, uint64_t generation,
                          uint64_t now_usec, char **ret_error);

/* The lease of (domain_id, generation) released; none is fine. */
int storage_catalog_release(StorageCatalog *c, const char *domain_id, uint64_t generation, char **ret_error);

/*
 * gc: storage_catalog_gc_begin() starts the write transaction in which the
 * caller reads what is leased, moves the unleased lowers out of use and
 * forgets them; storage_catalog_gc_end() commits (or rolls back). Nothing
 * can lease meanwhile.
 */
int storage_catalog_gc_begin(StorageCatalog *c, char **ret_error);
/* The lower IDs with a lease (sorted, no duplicates; NULL if none). */
int storage_catalog_leased(StorageCatalog *c, char ***ret, char **ret_error);
int storage_catalog_forget(StorageCatalog *c, const char *lower_id, char **ret_error);
int storage_catalog_gc_end(StorageCatalog *c, bool commit, char **ret_error);

/* The leases, "LOWER DOMAIN GENERATION" each (sorted; NULL if none): for lazaretctl and tests. */
int storage_catalog_leases(StorageCatalog *c, char ***ret, char **ret_error);
