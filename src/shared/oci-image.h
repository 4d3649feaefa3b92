/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

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
