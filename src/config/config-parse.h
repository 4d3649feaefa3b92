/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The machinery the configuration files share (config-*.c) and the unit
 * tests reach: a parser state that keeps the first message, key tables
 * dispatched by one function, one helper per shape (an array of entries, an
 * object keyed by names) and the field parsers that tables name. It is not
 * an API of the library: callers use config.h.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "config.h"
#include "macro.h"

#define CONFIG_BUILTIN_NAME "built-in configuration"    /* FILE in messages when there is none */

/* Every message has the shape "FILE: KEY.PATH: what is wrong". */
typedef struct ConfigParser {
        const char *file;               /* in messages only */
        const ConfigEnv *env;           /* NULL in the resolution step, which expands nothing */
        char *error;                    /* the first message; later ones are dropped */
} ConfigParser;

/* Records "FILE: PATH: message" unless a message is already held; returns r. */
int config_error(ConfigParser *p, const char *path, int r, const char *fmt, ...) _printf_(4, 5);
#define config_oom(p) config_error(p, NULL, -ENOMEM, "out of memory")

/* "a string", "an array", ...: the type of v as a message names it. */
const char *config_json_type_label(json_object *v);
int config_expect_type(ConfigParser *p, json_object *v, const char *path, json_type t, const char *what);
/*
 * The value of an integer v: json-c clamps one above INT64_MAX to INT64_MAX,
 * so such a value is refused here ("... is too large"), never read clamped.
 */
int config_get_int64(ConfigParser *p, json_object *v, const char *path, int64_t *ret);

/* ------------------------------------------------------------- key tables */

/*
 * Parses v, found at path, into field (the table's base plus the key's
 * offset). data is the key's own argument (a nested table, bounds), or NULL.
 */
typedef int (*ConfigParseFunc)(ConfigParser *p, json_object *v, const char *path, void *field, const void *data);

typedef enum ConfigKeyFlags {
        CONFIG_KEY_REQUIRED = 1 << 0,   /* "missing required key" when absent */
} ConfigKeyFlags;

/*
 * One key of an object: name, parser, offset into the struct the table
 * describes, the parser's argument and flags. A table ends with an entry
 * whose name is NULL; its order is the order "known keys here" lists.
 */
typedef struct ConfigKey {
        const char *name;
        ConfigParseFunc parse;
        size_t offset;
        const void *data;
        ConfigKeyFlags flags;
} ConfigKey;

#define CONFIG_KEYS_MAX 32              /* keys in one table */

/*
 * Walks the keys of the object v and hands each to its table entry with
 * base + offset. Refuses, naming the key path: a value that is not an
 * object, an unknown key (listing the known ones), a key given twice, null
 * as a value, and a required key that is absent. Cross-key checks are the
 * caller's, after it returns.
 */
int config_dispatch(ConfigParser *p, json_object *v, const char *path, const ConfigKey *keys, void *base);

/* A ConfigParseFunc for a nested object: data is its table, field the base of its offsets. */
int config_parse_object(ConfigParser *p, json_object *v, const char *path, void *field, const void *data);

/* ------------------------------------------------------------------ shapes */

/*
 * Entry i of an array: parses v into ((char *) items)[i * size]; the entries
 * before it are there to be compared with.
 */
typedef int (*ConfigItemFunc)(ConfigParser *p, json_object *v, const char *path, void *items, size_t i,
                              void *userdata);

/*
 * An array (what: "an array of volume objects") of at most max entries of
 * size bytes each. *items is allocated zeroed for every entry and *n counts
 * an entry before item() parses it, so that the owner's destructor frees
 * what a failure left half-parsed.
 */
int config_parse_array(ConfigParser *p, json_object *v, const char *path, const char *what, size_t max,
                       size_t size, void **items, size_t *n, ConfigItemFunc item, void *userdata);

/* Entry key of an object of named entries: parses v into item. */
typedef int (*ConfigEntryFunc)(ConfigParser *p, const char *key, json_object *v, const char *path, void *item,
                               void *userdata);

/*
 * An object of named entries (what: "an object of profiles"), at most max
 * of them ("has N <noun>, at most max are allowed"), counted and allocated
 * as config_parse_array() does.
 */
int config_parse_map(ConfigParser *p, json_object *v, const char *path, const char *what, const char *noun,
                     size_t max, size_t size, void **items, size_t *n, ConfigEntryFunc entry, void *userdata);

/* ----------------------------------------------------------- field parsers */

/* char **: a string, not empty, without NUL, at most CONFIG_MAX_STRING bytes. */
int config_parse_string(ConfigParser *p, json_object *v, const char *path, void *field, const void *data);
/* The same with the empty string allowed. */
int config_get_string(ConfigParser *p, json_object *v, const char *path, bool allow_empty, char **ret);

/* bool *: true or false. */
int config_parse_bool(ConfigParser *p, json_object *v, const char *path, void *field, const void *data);

/* char ***: an array of non-empty strings; data is a ConfigStrvSpec. */
typedef struct ConfigStrvSpec {
        size_t max;
        bool allow_empty_list;
} ConfigStrvSpec;
int config_parse_strv(ConfigParser *p, json_object *v, const char *path, void *field, const void *data);

/* An absolute path without ".." segments, normalised, or an error naming it. */
int config_absolute_path(ConfigParser *p, const char *in, const char *path, char **ret);
