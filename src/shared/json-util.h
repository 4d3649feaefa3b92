/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include <json-c/json.h>

/* Hard limits on a configuration document; exceeding one is an error. */
#define JSON_DOC_MAX_BYTES (1024 * 1024)
#define JSON_MAX_DEPTH 32

/*
 * Parses a JSON document in json-c's relaxed dialect (comments, trailing
 * commas) and then insists on what json-c lets pass: a single value with
 * nothing but whitespace and comments after it, no duplicate object keys
 * (compared by their full decoded bytes), no escaped NUL (\u0000) and no
 * unpaired surrogate escape in any key or string (json-c would cut or merge
 * those, so two distinct keys could become one), and at most JSON_MAX_DEPTH
 * levels of nesting.
 *
 * On failure returns a negative errno and a message in *ret_error that names
 * the line and, for duplicates, the key path (for example
 * "line 7: profiles.dev.image: duplicate key", or
 * "line 1: profiles[\"dev\x00a\"]: key contains a NUL character (\u0000)").
 */
int json_parse_strict(const char *text, size_t len, json_object **ret, char **ret_error);

/*
 * Appends an object key or an array index to a key path, in the form a reader
 * would write it: "profiles.dev", "volumes[2]", or profiles["odd key"] when the
 * key is not a plain identifier. Returns NULL on OOM.
 */
char *keypath_key(const char *parent, const char *key, size_t keylen);
char *keypath_index(const char *parent, size_t index);
