/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* Hard limits on a document; exceeding one is an error. */
#define JSON_DOC_MAX_BYTES (1024 * 1024)
#define JSON_MAX_DEPTH 32

/*
 * Reads a JSON document (RFC 8259) with the two relaxations lazaret.conf(5)
 * documents, comments (// and slash-star) and trailing commas, in one pass of
 * our own recursive-descent reader that builds the json-c tree as it goes
 * (json-c's tokener is not used). Refused: anything but exactly one value
 * (trailing text, an empty document, a bare null), a key given twice in one
 * object (compared by its full decoded bytes), an escaped NUL (\u0000) or an
 * unpaired UTF-16 surrogate escape in any key or string, invalid UTF-8, raw
 * control characters or NUL bytes, single quotes, NaN and other words json-c
 * would take, integers outside int64/uint64, more than JSON_MAX_DEPTH nested
 * objects and arrays, and documents over JSON_DOC_MAX_BYTES.
 *
 * On failure returns a negative errno (-ENOMEM without a message) and, in
 * *ret_error, a message that names the line and column (from 1; columns count
 * characters) and the key path where there is one, for example
 * "line 7, column 3: profiles.dev.image: duplicate key", or
 * "line 1, column 18: profiles[\"dev\x00a\"]: key contains a NUL character (\u0000)".
 * *ret is written only on success.
 */
int json_parse_strict(const char *text, size_t len, json_object **ret, char **ret_error);

/* Whether s is valid UTF-8 (no overlong forms, surrogates or values past U+10FFFF), as the builders require. */
bool utf8_is_valid(const char *s);
/* A copy of s with every byte outside a valid UTF-8 sequence, and every control byte, as \xNN; NULL without memory. */
char *utf8_escape_invalid(const char *s);

/*
 * Appends an object key or an array index to a key path, in the form a reader
 * would write it: "profiles.dev", "volumes[2]", or profiles["odd key"] when the
 * key is not a plain identifier. Returns NULL on OOM.
 */
char *keypath_key(const char *parent, const char *key, size_t keylen);
char *keypath_index(const char *parent, size_t index);

/*
 * Builders that fail closed. json-c stores a NULL value as null and reports a
 * failed insertion only in a return value, so a document built with unchecked
 * calls can silently lose a field when an allocation fails. Each helper here
 * takes ownership of the value it is given, also when it fails, and treats a
 * NULL value as the allocation failure that produced it: it returns -ENOMEM
 * and the caller returns that instead of a document. An intended null is
 * written with json_add_null(). A key or string that is not valid UTF-8,
 * which json_parse_strict() would refuse to read back, is not written: -EILSEQ.
 */
int json_add(json_object *o, const char *key, json_object *value);
int json_add_null(json_object *o, const char *key);
int json_add_string(json_object *o, const char *key, const char *s);
int json_add_bool(json_object *o, const char *key, bool b);
int json_add_int64(json_object *o, const char *key, int64_t v);
int json_add_uint64(json_object *o, const char *key, uint64_t v);
int json_append(json_object *a, json_object *value);
int json_append_string(json_object *a, const char *s);
/* A new array of the strings in NULL-terminated l (which may be NULL: an empty array). */
int json_new_strv(const char *const *l, json_object **ret);
/* Adds such an array under key. */
int json_add_strv(json_object *o, const char *key, const char *const *l);
/*
 * Bytes that may not be UTF-8 (what the sandbox wrote: an argument, a
 * path), as journalctl's JSON output carries them: a string when they are
 * valid UTF-8, otherwise an array of the byte values (0..255). Never
 * refused for its content; json_get_bytes() reads either form back.
 */
json_object *json_new_bytes(const char *s);
int json_add_bytes(json_object *o, const char *key, const char *s);
int json_append_bytes(json_object *a, const char *s);
/* A strv of such values; NULL l gives an empty array. */
int json_add_bytes_strv(json_object *o, const char *key, const char *const *l);
/* The bytes of a string or of an array of byte values (no 0 among them); -EINVAL for anything else. */
int json_get_bytes(json_object *o, char **ret);

/* The text of o, serialised with JSON_C_TO_STRING_* flags, as a string the caller frees. */
int json_to_string(json_object *o, int flags, char **ret);
