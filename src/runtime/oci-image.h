/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "subid.h"

/*
 * Reading what an OCI image layout and an unpacked bundle say, with the
 * same strict JSON rules as the configuration (json-util.h).
 */

/* The manifest digest (64 hex digits) that the layout's index.json gives for tag. */
int oci_index_digest(const char *index_json, size_t n, const char *tag, char **ret_digest, char **ret_error);

/*
 * The environment (without LAZARET_* entries) and default command of an
 * unpacked image's config.json, each at most 256 entries. Either may come
 * back empty (NULL).
 */
int oci_bundle_process(const char *config_json, size_t n, char ***ret_env, char ***ret_cmd, char **ret_error);

/*
 * The prepared-artifact ID of a prepared lower (SR-15, FR-22): SHA-256 (64
 * hex digits) of the manifest digest, the preparer's version and the ID
 * mapping the image was unpacked under (ns 0 -> uid/gid, ns 1..count -> the
 * subordinate ranges). The same image unpacked by another preparer or
 * under another mapping is another tree; the same inputs are always the
 * same one. -EINVAL for a digest that is not 64 lowercase hex digits or an
 * empty preparer.
 */
#define PREPARED_ID_LEN 64
int prepared_artifact_id(const char *manifest_digest, const char *preparer, uint32_t uid, const SubidRange *uids,
                         uint32_t gid, const SubidRange *gids, char ret[PREPARED_ID_LEN + 1]);
