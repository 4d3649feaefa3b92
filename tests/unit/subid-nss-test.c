/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsubid_lazarettest.so: an nsswitch "subid:" module for test-subid, in
 * the role SSSD's libsubid_sss.so plays. alice owns two UID ranges and one
 * GID range, "broken" makes the source fail as an unreachable directory
 * would (leaving errno ENOENT behind), everyone else owns none.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <shadow/subid.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT enum subid_status shadow_subid_has_range(const char *owner, unsigned long start, unsigned long count,
                                                enum subid_type id_type, bool *result);
EXPORT enum subid_status shadow_subid_list_owner_ranges(const char *owner, enum subid_type id_type,
                                                        struct subid_range **ranges, int *count);
EXPORT enum subid_status shadow_subid_find_subid_owners(unsigned long id, enum subid_type id_type, uid_t **uids,
                                                        int *count);

static const struct subid_range alice_uids[] = { { 500000, 65536 }, { 300000, 70000 } };
static const struct subid_range alice_gids[] = { { 400000, 65536 } };

EXPORT enum subid_status shadow_subid_list_owner_ranges(const char *owner, enum subid_type id_type,
                                                        struct subid_range **ranges, int *count) {
        const struct subid_range *list = NULL;
        size_t n = 0;

        *ranges = NULL;
        *count = 0;
        if (strcmp(owner, "broken") == 0) {
                errno = ENOENT;         /* as a client whose daemon's socket is missing leaves it */
                return SUBID_STATUS_ERROR_CONN;
        }
        if (strcmp(owner, "alice") == 0) {
                list = id_type == ID_TYPE_UID ? alice_uids : alice_gids;
                n = id_type == ID_TYPE_UID ? sizeof(alice_uids) / sizeof(alice_uids[0])
                                           : sizeof(alice_gids) / sizeof(alice_gids[0]);
        }
        if (n == 0)
                return SUBID_STATUS_SUCCESS;
        *ranges = malloc(n * sizeof(**ranges));
        if (!*ranges)
                return SUBID_STATUS_ERROR;
        memcpy(*ranges, list, n * sizeof(**ranges));
        *count = (int) n;
        return SUBID_STATUS_SUCCESS;
}

EXPORT enum subid_status shadow_subid_has_range(const char *owner, unsigned long start, unsigned long count,
                                                enum subid_type id_type, bool *result) {
        *result = false;
        return SUBID_STATUS_SUCCESS;
}

EXPORT enum subid_status shadow_subid_find_subid_owners(unsigned long id, enum subid_type id_type, uid_t **uids,
                                                        int *count) {
        *uids = NULL;
        *count = 0;
        return SUBID_STATUS_SUCCESS;
}
