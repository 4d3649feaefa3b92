/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reading the configuration document into a Config: key tables, the one
 * dispatcher that walks them, the shapes lists and maps take, and the
 * validators. Nothing here asks the file system; config_resolve()
 * (config-resolve.c) does that afterwards.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "config-escalation.h"
#include "config-parse.h"
#include "host-rule.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"
#include "tokens.h"
#include "view-policy.h"

int config_error(ConfigParser *p, const char *path, int r, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        if (p->error)   /* keep the first error */
                return r;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (asprintf(&p->error, "%s: %s%s%s", p->file, strempty(path), isempty(path) ? "" : ": ",
                     msg ?: "out of memory") < 0)
                p->error = NULL;
        return r;
}

const char *config_json_type_label(json_object *v) {
        switch (json_object_get_type(v)) {
        case json_type_null: return "null";
        case json_type_boolean: return "a boolean";
        case json_type_double: return "a number";
        case json_type_int: return "an integer";
        case json_type_object: return "an object";
        case json_type_array: return "an array";
        case json_type_string: return "a string";
        }
        return "something else";
}

int config_expect_type(ConfigParser *p, json_object *v, const char *path, json_type t, const char *what) {
        if (json_object_get_type(v) == t)
                return 0;
        return config_error(p, path, -EINVAL, "expected %s, got %s", what, config_json_type_label(v));
}

int config_get_int64(ConfigParser *p, json_object *v, const char *path, int64_t *ret) {
        int64_t i = json_object_get_int64(v);

        if (i == INT64_MAX && json_object_get_uint64(v) > INT64_MAX)
                return config_error(p, path, -ERANGE, "%" PRIu64 " is too large", json_object_get_uint64(v));
        *ret = i;
        return 0;
}

/* ------------------------------------------------------------- dispatcher */

static const ConfigKey *key_find(const ConfigKey *keys, const char *name) {
        for (const ConfigKey *k = keys; k->name; k++)
                if (streq(k->name, name))
                        return k;
        return NULL;
}

static int unknown_key(ConfigParser *p, const ConfigKey *keys, const char *path) {
        _cleanup_free_ char *known = NULL;
        const char *names[CONFIG_KEYS_MAX + 1] = {};

        for (size_t i = 0; keys[i].name; i++)
                names[i] = keys[i].name;
        known = strv_join((char **) names, ", ");
        if (!known)
                return config_oom(p);
        return config_error(p, path, -EINVAL, "unknown key (known keys here: %s)", known);
}

int config_dispatch(ConfigParser *p, json_object *v, const char *path, const ConfigKey *keys, void *base) {
        bool seen[CONFIG_KEYS_MAX] = {};
        size_t n_keys = 0;
        int r;

        while (keys[n_keys].name)
                n_keys++;
        if (n_keys > CONFIG_KEYS_MAX)   /* a table too long for seen[]: a bug, not an input */
                return config_error(p, path, -E2BIG, "internal error: more than %d keys in a table", CONFIG_KEYS_MAX);

        r = config_expect_type(p, v, path, json_type_object, "an object");
        if (r < 0)
                return r;

        json_object_object_foreach(v, name, val) {
                _cleanup_free_ char *kp = keypath_key(path, name, strlen(name));
                const ConfigKey *k;

                if (!kp)
                        return config_oom(p);
                k = key_find(keys, name);
                if (!k)
                        return unknown_key(p, keys, kp);
                /* json_parse_strict() refuses duplicates already; a tree built another way must not sneak one in. */
                if (seen[k - keys])
                        return config_error(p, kp, -EEXIST, "duplicate key");
                seen[k - keys] = true;
                if (json_object_get_type(val) == json_type_null)
                        return config_error(p, kp, -EINVAL, "null is not a valid value; omit the key to use the default");
                r = k->parse(p, val, kp, (uint8_t *) base + k->offset, k->data);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < n_keys; i++)
                if ((keys[i].flags & CONFIG_KEY_REQUIRED) && !seen[i])
                        return config_error(p, path, -EINVAL, "missing required key \"%s\"", keys[i].name);
        return 0;
}

int config_parse_object(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        return config_dispatch(p, v, path, data, field);
}

/* ----------------------------------------------------------------- shapes */

int config_parse_array(ConfigParser *p, json_object *v, const char *path, const char *what, size_t max,
                       size_t size, void **items, size_t *n, ConfigItemFunc item, void *userdata) {
        size_t len;
        int r;

        r = config_expect_type(p, v, path, json_type_array, what);
        if (r < 0)
                return r;
        len = json_object_array_length(v);
        if (len > max)
                return config_error(p, path, -E2BIG, "has %zu entries, at most %zu are allowed", len, max);

        *items = calloc(len ?: 1, size);
        if (!*items)
                return config_oom(p);
        *n = 0;
        for (size_t i = 0; i < len; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);

                if (!ip)
                        return config_oom(p);
                *n = i + 1;
                r = item(p, json_object_array_get_idx(v, i), ip, *items, i, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

int config_parse_map(ConfigParser *p, json_object *v, const char *path, const char *what, const char *noun,
                     size_t max, size_t size, void **items, size_t *n, ConfigEntryFunc entry, void *userdata) {
        size_t len, i = 0;
        int r;

        r = config_expect_type(p, v, path, json_type_object, what);
        if (r < 0)
                return r;
        len = (size_t) json_object_object_length(v);
        if (len > max)
                return config_error(p, path, -E2BIG, "has %zu %s, at most %zu are allowed", len, noun, max);

        *items = calloc(len ?: 1, size);
        if (!*items)
                return config_oom(p);
        *n = 0;
        json_object_object_foreach(v, key, val) {
                _cleanup_free_ char *kp = keypath_key(path, key, strlen(key));

                if (!kp)
                        return config_oom(p);
                *n = i + 1;
                r = entry(p, key, val, kp, (uint8_t *) *items + i * size, userdata);
                if (r < 0)
                        return r;
                i++;
        }
        return 0;
}

/* ---------------------------------------------------------- field parsers */

int config_get_string(ConfigParser *p, json_object *v, const char *path, bool allow_empty, char **ret) {
        const char *s;
        size_t len;
        char *c;
        int r;

        r = config_expect_type(p, v, path, json_type_string, "a string");
        if (r < 0)
                return r;
        s = json_object_get_string(v);
        len = (size_t) json_object_get_string_len(v);
        if (strlen(s) != len)
                return config_error(p, path, -EINVAL, "string contains a NUL character");
        if (len > CONFIG_MAX_STRING)
                return config_error(p, path, -E2BIG, "string is longer than %d bytes", CONFIG_MAX_STRING);
        if (!allow_empty && len == 0)
                return config_error(p, path, -EINVAL, "must not be empty");
        c = strdup(s);
        if (!c)
                return config_oom(p);
        *ret = c;
        return 0;
}

int config_parse_string(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        return config_get_string(p, v, path, false, field);
}

int config_parse_bool(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        bool *b = field;
        int r;

        r = config_expect_type(p, v, path, json_type_boolean, "true or false");
        if (r < 0)
                return r;
        *b = json_object_get_boolean(v);
        return 0;
}

int config_parse_strv(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        const ConfigStrvSpec *spec = data;
        _cleanup_strv_free_ char **l = NULL;
        size_t n;
        int r;

        r = config_expect_type(p, v, path, json_type_array, "an array of strings");
        if (r < 0)
                return r;
        n = json_object_array_length(v);
        if (n > spec->max)
                return config_error(p, path, -E2BIG, "has %zu entries, at most %zu are allowed", n, spec->max);
        if (n == 0 && !spec->allow_empty_list)
                return config_error(p, path, -EINVAL, "must not be an empty array");

        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return config_oom(p);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);
                if (!ip)
                        return config_oom(p);
                r = config_get_string(p, json_object_array_get_idx(v, i), ip, false, &l[i]);
                if (r < 0)
                        return r;
        }
        *(char ***) field = TAKE_PTR(l);
        return 0;
}

/* ------------------------------------------------------------- validators */

bool profile_name_is_valid(const char *name) {
        size_t l = name ? strlen(name) : 0;

        if (l < PROFILE_NAME_MIN || l > PROFILE_NAME_MAX)
                return false;
        for (size_t i = 0; i < l; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

bool env_name_is_valid(const char *name) {
        if (!name || !*name || strlen(name) > 255)
                return false;
        if (!((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z') || name[0] == '_'))
                return false;
        for (const char *c = name + 1; *c; c++)
                if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
                        return false;
        return true;
}

/*
 * No path Lazaret reads may hold a control character: it would let a path
 * forge a second line in any message or listing that shows it. The path is
 * not repeated in the message, for the same reason.
 */
static int refuse_control(ConfigParser *p, const char *in, const char *path) {
        for (const unsigned char *c = (const unsigned char *) in; *c; c++)
                if (*c < 0x20 || *c == 0x7f)
                        return config_error(p, path, -EINVAL, "contains a control character (0x%02x at byte %zu); a path may not",
                                            *c, (size_t) (c - (const unsigned char *) in));
        return 0;
}

int config_absolute_path(ConfigParser *p, const char *in, const char *path, char **ret) {
        int r;

        r = refuse_control(p, in, path);
        if (r < 0)
                return r;
        if (!path_is_absolute(in))
                return config_error(p, path, -EINVAL, "\"%s\" is not an absolute path", in);
        if (path_has_dotdot(in))
                return config_error(p, path, -EINVAL, "\"%s\" contains a \"..\" segment", in);
        r = path_normalize(in, ret);
        if (r < 0)
                return config_error(p, path, r, "\"%s\" is not a valid path", in);
        return 0;
}

/*
 * Sandbox paths: absolute, no "..", not the root, and not a path Lazaret owns
 * (the workspace tree, its control directory, the kernel file systems).
 */
static int check_sandbox_path(ConfigParser *p, const char *in, const char *path, char **ret) {
        static const char *const reserved[] = { SANDBOX_WORKSPACE, SANDBOX_CONTROL_DIR, "/proc", "/sys", "/dev", NULL };
        _cleanup_free_ char *norm = NULL;
        int r;

        r = config_absolute_path(p, in, path, &norm);
        if (r < 0)
                return r;
        if (streq(norm, "/"))
                return config_error(p, path, -EINVAL, "the sandbox root \"/\" cannot be used here");
        for (size_t i = 0; reserved[i]; i++)
                if (path_is_at_or_below(norm, reserved[i]))
                        return config_error(p, path, -EPERM, "\"%s\" is inside %s, which Lazaret manages", norm, reserved[i]);
        *ret = TAKE_PTR(norm);
        return 0;
}

/* Host path templates: syntax only; expansion needs the Domain. */
static int check_host_template(ConfigParser *p, const char *in, const char *path, TokenFlags flags) {
        _cleanup_free_ char *why = NULL;
        int r;

        r = refuse_control(p, in, path);
        if (r < 0)
                return r;
        r = tokens_expand(in, flags, NULL, NULL, &why);
        if (r < 0)
                return config_error(p, path, r, "%s", why ?: "invalid token");
        if (!(in[0] == '/' || in[0] == '~' || in[0] == '{'))
                return config_error(p, path, -EINVAL, "\"%s\" is not an absolute path (start it with \"/\", \"~\" or a token)", in);
        if (path_has_dotdot(in))
                return config_error(p, path, -EINVAL, "\"%s\" contains a \"..\" segment", in);
        return 0;
}

/* char **: a host path template; data points to the TokenFlags it may use. */
static int parse_host_template(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = config_get_string(p, v, path, false, &s);
        if (r < 0)
                return r;
        r = check_host_template(p, s, path, *(const TokenFlags *) data);
        if (r < 0)
                return r;
        *(char **) field = TAKE_PTR(s);
        return 0;
}

static const TokenFlags tokens_all = TOKEN_ALL, tokens_tilde = TOKEN_TILDE;

/* A check of a string that writes what it makes of it (a normalised path, say) to *ret. */
typedef int (*StringCheck)(ConfigParser *p, const char *in, const char *path, char **ret);

static int parse_checked_string(ConfigParser *p, json_object *v, const char *path, char **ret, StringCheck check) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = config_get_string(p, v, path, false, &s);
        if (r < 0)
                return r;
        return check(p, s, path, ret);
}

/* char **: a sandbox path (check_sandbox_path()). */
static int parse_sandbox_path(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        return parse_checked_string(p, v, path, field, check_sandbox_path);
}

/* ------------------------------------------------------------------ CIDRs */

static int cidr_item(ConfigParser *p, json_object *v, const char *path, void *items, size_t i, void *userdata) {
        Cidr *l = items;
        _cleanup_free_ char *s = NULL;
        int r;

        r = config_get_string(p, v, path, false, &s);
        if (r < 0)
                return r;
        r = cidr_parse(s, &l[i]);
        if (r == -EAFNOSUPPORT)
                return config_error(p, path, r, "\"%s\" is an IPv6 prefix; IPv6 is disabled inside the sandbox, so only IPv4 prefixes are accepted", s);
        if (r == -EADDRNOTAVAIL)
                return config_error(p, path, r, "\"%s\" has host bits set below the prefix length", s);
        if (r < 0)
                return config_error(p, path, r, "\"%s\" is not an IPv4 prefix of the form a.b.c.d/n", s);
        for (size_t j = 0; j < i; j++)
                if (cidr_equal(&l[j], &l[i]))
                        return config_error(p, path, -EEXIST, "\"%s\" is listed twice", s);
        return 0;
}

/* CidrList *: an array of IPv4 prefixes, each listed once. */
static int parse_cidr_list(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        CidrList *l = field;

        return config_parse_array(p, v, path, "an array of IPv4 prefixes", CONFIG_MAX_LIST, sizeof(Cidr),
                                  (void **) &l->items, &l->n, cidr_item, NULL);
}

/* ---------------------------------------------------------------- volumes */

static int parse_volume_mode(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        _cleanup_free_ char *s = NULL;
        VolumeMode *m = field;
        int r;

        r = config_get_string(p, v, path, false, &s);
        if (r < 0)
                return r;
        if (streq(s, "ro"))
                *m = VOLUME_RO;
        else if (streq(s, "rw"))
                *m = VOLUME_RW;
        else
                return config_error(p, path, -EINVAL, "\"%s\" is not a mount mode; use \"ro\" or \"rw\"", s);
        return 0;
}

static const ConfigKey volume_keys[] = {
        { "host",      parse_host_template, offsetof(Volume, host),      &tokens_all, CONFIG_KEY_REQUIRED },
        { "container", parse_sandbox_path,  offsetof(Volume, container), NULL,        CONFIG_KEY_REQUIRED },
        { "mode",      parse_volume_mode,   offsetof(Volume, mode) },
        { "force",     config_parse_bool,   offsetof(Volume, force) },
        {}
};

static int volume_item(ConfigParser *p, json_object *v, const char *path, void *items, size_t i, void *userdata) {
        Volume *vols = items, *vol = &vols[i];
        int r;

        vol->mode = VOLUME_RO;
        r = config_dispatch(p, v, path, volume_keys, vol);
        if (r < 0)
                return r;
        for (size_t j = 0; j < i; j++)
                if (path_is_at_or_below(vol->container, vols[j].container) ||
                    path_is_at_or_below(vols[j].container, vol->container))
                        return config_error(p, path, -EEXIST, "container path \"%s\" overlaps volumes[%zu] (\"%s\")",
                                            vol->container, j, vols[j].container);
        return 0;
}

static int parse_volumes(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        Profile *prof = field;

        return config_parse_array(p, v, path, "an array of volume objects", CONFIG_MAX_LIST, sizeof(Volume),
                                  (void **) &prof->volumes, &prof->n_volumes, volume_item, NULL);
}

/* -------------------------------------------------------------------- env */

static int env_entry(ConfigParser *p, const char *key, json_object *v, const char *path, void *item, void *userdata) {
        _cleanup_free_ char *s = NULL;
        EnvEntry *e = item;
        const char *from;
        int r;

        if (!env_name_is_valid(key))
                return config_error(p, path, -EINVAL, "not a valid environment variable name (letters, digits, '_', not starting with a digit)");
        if (startswith(key, "LAZARET_"))
                return config_error(p, path, -EPERM, "LAZARET_* variables are set by Lazaret itself");
        r = config_get_string(p, v, path, true, &s);
        if (r < 0)
                return r;
        e->name = strdup(key);
        if (!e->name)
                return config_oom(p);
        from = startswith(s, "env:");
        if (from) {
                if (!env_name_is_valid(from))
                        return config_error(p, path, -EINVAL, "\"%s\": \"env:\" must be followed by a host variable name", s);
                e->from_host = true;
                e->value = strdup(from);
                if (!e->value)
                        return config_oom(p);
        } else
                e->value = TAKE_PTR(s);
        return 0;
}

static int parse_env(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        Profile *prof = field;

        return config_parse_map(p, v, path, "an object of NAME: \"value\" pairs", "entries", CONFIG_MAX_LIST,
                                sizeof(EnvEntry), (void **) &prof->env, &prof->n_env, env_entry, NULL);
}

/* ------------------------------------------------------------------ image */

static bool is_tag(const char *t) {
        size_t l = strlen(t);

        if (l == 0 || l > 128)
                return false;
        if (!((t[0] >= 'a' && t[0] <= 'z') || (t[0] >= 'A' && t[0] <= 'Z') || (t[0] >= '0' && t[0] <= '9') || t[0] == '_'))
                return false;
        for (size_t i = 1; i < l; i++)
                if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= '0' && t[i] <= '9') ||
                      t[i] == '_' || t[i] == '.' || t[i] == '-'))
                        return false;
        return true;
}

static int image_ref_parse(ConfigParser *p, const char *s, const char *path, ImageRef *ret) {
        const char *rest;
        int r;

        if (streq(s, BUILTIN_IMAGE)) {
                *ret = (ImageRef) { .kind = IMAGE_BUILTIN };
                return 0;
        }

        rest = startswith(s, "oci:");
        if (!rest)
                return config_error(p, path, -EINVAL,
                                    "\"%s\" is not a supported image reference; use \"oci:DIR[:TAG]\" (a local OCI image layout) or \"%s\"",
                                    s, BUILTIN_IMAGE);

        _cleanup_free_ char *dir = strdup(rest), *tag = NULL;
        if (!dir)
                return config_oom(p);
        char *colon = strrchr(dir, ':');
        if (colon && is_tag(colon + 1) && !strchr(colon + 1, '/')) {
                tag = strdup(colon + 1);
                *colon = 0;
        } else
                tag = strdup("latest");
        if (!tag)
                return config_oom(p);
        if (isempty(dir))
                return config_error(p, path, -EINVAL, "\"%s\" names no directory", s);
        r = check_host_template(p, dir, path, TOKEN_ALL);
        if (r < 0)
                return r;

        *ret = (ImageRef) { .kind = IMAGE_OCI_LAYOUT, .path = TAKE_PTR(dir), .tag = TAKE_PTR(tag) };
        return 0;
}

/* Profile *: the image as written and as understood. */
static int parse_image(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        Profile *prof = field;
        int r;

        r = config_get_string(p, v, path, false, &prof->image_raw);
        if (r < 0)
                return r;
        return image_ref_parse(p, prof->image_raw, path, &prof->image);
}

/* ----------------------------------------------------------------- limits */

/* The bounds of one limit: sizes and counts alike. */
typedef struct LimitSpec {
        bool allow_infinity;
        uint64_t min;
        uint64_t max;           /* counts only */
} LimitSpec;

/* uint64_t *: a size, a string with an optional K/M/G/T suffix or "infinity", or an integer of bytes. */
static int parse_size(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        const LimitSpec *spec = data;
        char b[LIMIT_STRING_MAX];
        uint64_t x;
        int r;

        if (json_object_get_type(v) == json_type_int) {
                int64_t i;

                r = config_get_int64(p, v, path, &i);
                if (r < 0)
                        return r;
                if (i < 0)
                        return config_error(p, path, -ERANGE, "%" PRIi64 " is negative", i);
                x = (uint64_t) i;
        } else if (json_object_get_type(v) == json_type_string) {
                const char *s = json_object_get_string(v);
                r = limit_parse_size(s, &x);
                if (r == -ERANGE)
                        return config_error(p, path, r, "\"%.64s\" is too large", s);
                if (r < 0)
                        return config_error(p, path, r,
                                            "\"%.64s\" is not a size; use bytes or a number with K, M, G or T (binary multiples)%s",
                                            s, spec->allow_infinity ? ", or \"infinity\"" : "");
        } else
                return config_error(p, path, -EINVAL, "expected a size (such as \"512M\", \"8G\" or a number of bytes), got %s",
                                    config_json_type_label(v));
        if (x == LIMIT_INFINITY && !spec->allow_infinity)
                return config_error(p, path, -EINVAL, "cannot be \"infinity\"");
        if (x < spec->min)
                return config_error(p, path, -ERANGE, "%s is too small; the least is %s", limit_format_size(x, b),
                                    limit_format_size(spec->min, (char[LIMIT_STRING_MAX]) {}));
        *(uint64_t *) field = x;
        return 0;
}

/* uint64_t *: a count, an integer, or "infinity" where allowed. */
static int parse_count(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        const LimitSpec *spec = data;
        int64_t i;
        int r;

        if (spec->allow_infinity && json_object_get_type(v) == json_type_string &&
            streq(json_object_get_string(v), "infinity")) {
                *(uint64_t *) field = LIMIT_INFINITY;
                return 0;
        }
        if (json_object_get_type(v) != json_type_int)
                return config_error(p, path, -EINVAL, "expected an integer%s, got %s",
                                    spec->allow_infinity ? " or \"infinity\"" : "", config_json_type_label(v));
        r = config_get_int64(p, v, path, &i);
        if (r < 0)
                return r;
        if (i < 0 || (uint64_t) i < spec->min || (uint64_t) i > spec->max) {
                if (spec->max == INT64_MAX)
                        return config_error(p, path, -ERANGE, "%" PRIi64 " is out of range; the least is %" PRIu64, i, spec->min);
                return config_error(p, path, -ERANGE, "%" PRIi64 " is out of range; use %" PRIu64 " to %" PRIu64, i,
                                    spec->min, spec->max);
        }
        *(uint64_t *) field = (uint64_t) i;
        return 0;
}

static const LimitSpec memory_spec = { .allow_infinity = true, .min = LIMIT_MIN_MEMORY },
                       tasks_spec = { .allow_infinity = true, .min = LIMIT_MIN_TASKS, .max = INT64_MAX },
                       cpu_weight_spec = { .min = LIMIT_CPU_WEIGHT_MIN, .max = LIMIT_CPU_WEIGHT_MAX },
                       tmp_size_spec = { .min = LIMIT_MIN_TMP_SIZE },
                       processes_spec = { .allow_infinity = true, .min = LIMIT_MIN_PROCESSES, .max = INT64_MAX },
                       address_space_spec = { .allow_infinity = true, .min = LIMIT_MIN_ADDRESS_SPACE },
                       root_size_spec = { .min = LIMIT_MIN_ROOT_SIZE };

/* In the order of limit_names[] (resource-limits.c), which "known keys here" shows. */
static const ConfigKey limits_keys[] = {
        { "memory_max",    parse_size,  offsetof(Limits, memory_max),    &memory_spec },
        { "memory_high",   parse_size,  offsetof(Limits, memory_high),   &memory_spec },
        { "tasks_max",     parse_count, offsetof(Limits, tasks_max),     &tasks_spec },
        { "cpu_weight",    parse_count, offsetof(Limits, cpu_weight),    &cpu_weight_spec },
        { "tmp_size",      parse_size,  offsetof(Limits, tmp_size),      &tmp_size_spec },
        { "processes",     parse_count, offsetof(Limits, processes),     &processes_spec },
        { "address_space", parse_size,  offsetof(Limits, address_space), &address_space_spec },
        { "root_size",     parse_size,  offsetof(Limits, root_size),     &root_size_spec },
        {}
};

/* Limits *: the table, then the rules between the keys. */
static int parse_limits(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        char a[LIMIT_STRING_MAX], b[LIMIT_STRING_MAX];
        Limits *l = field;
        int r;

        /* 0 is below LIMIT_MIN_MEMORY, so it means "not given" after the table ran. */
        l->memory_high = 0;
        r = config_dispatch(p, v, path, limits_keys, l);
        if (r < 0)
                return r;
        if (l->memory_high == 0)
                l->memory_high = limits_default_memory_high(l->memory_max);
        if (l->memory_high > l->memory_max)
                return config_error(p, path, -EINVAL, "memory_high (%s) must not exceed memory_max (%s)",
                                    limit_format_size(l->memory_high, a), limit_format_size(l->memory_max, b));
        /* The sandbox's own limit must be hit first: it fails one fork, the scope's would fail gVisor. */
        if (l->tasks_max != LIMIT_INFINITY &&
            (l->processes == LIMIT_INFINITY ||
             l->tasks_max < l->processes * LIMIT_HOST_TASKS_PER_PROCESS + LIMIT_HOST_TASKS_OVERHEAD))
                return config_error(p, path, -EINVAL,
                                    "tasks_max (%s) must be at least %llu × processes + %llu (%s) so that the sandbox's own process limit "
                                    "is reached first: gVisor uses about %llu host tasks per sandbox process",
                                    limit_format_count(l->tasks_max, a), LIMIT_HOST_TASKS_PER_PROCESS, LIMIT_HOST_TASKS_OVERHEAD,
                                    l->processes == LIMIT_INFINITY ? "processes is infinity"
                                            : limit_format_count(l->processes * LIMIT_HOST_TASKS_PER_PROCESS + LIMIT_HOST_TASKS_OVERHEAD, b),
                                    LIMIT_HOST_TASKS_PER_PROCESS);
        return 0;
}

/* ---------------------------------------------------------------- profile */

static const ConfigStrvSpec command_spec = { .max = CONFIG_MAX_ARGV },
                            persistent_dirs_spec = { .max = 32, .allow_empty_list = true };

/* char ***: sandbox paths that survive the session, none inside another. */
static int parse_persistent_dirs(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        _cleanup_strv_free_ char **l = NULL, **dirs = NULL;
        int r;

        r = config_parse_strv(p, v, path, &l, &persistent_dirs_spec);
        if (r < 0)
                return r;
        dirs = calloc(strv_length(l) + 1, sizeof(char *));
        if (!dirs)
                return config_oom(p);
        for (size_t i = 0; l[i]; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);
                if (!ip)
                        return config_oom(p);
                r = check_sandbox_path(p, l[i], ip, &dirs[i]);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++)
                        if (path_is_at_or_below(dirs[i], dirs[j]) || path_is_at_or_below(dirs[j], dirs[i]))
                                return config_error(p, ip, -EEXIST, "\"%s\" overlaps \"%s\"; list each tree once",
                                                    dirs[i], dirs[j]);
        }
        *(char ***) field = TAKE_PTR(dirs);
        return 0;
}

/* char ***: the workspace view's protected_paths, each normalised (view-policy.h), none twice. */
static const ConfigStrvSpec protected_paths_spec = { .max = 64, .allow_empty_list = true };

static int parse_protected_paths(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        _cleanup_strv_free_ char **l = NULL, **out = NULL;
        int r;

        r = config_parse_strv(p, v, path, &l, &protected_paths_spec);
        if (r < 0)
                return r;
        out = calloc(strv_length(l) + 1, sizeof(char *));
        if (!out)
                return config_oom(p);
        for (size_t i = 0; l[i]; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);
                const char *why = NULL;

                if (!ip)
                        return config_oom(p);
                r = view_protect_entry_normalize(l[i], &out[i], &why);
                if (r == -ENOMEM)
                        return config_oom(p);
                if (r < 0)
                        return config_error(p, ip, r, "\"%s\": %s; an entry is NAME (at any depth), /PATH (from the "
                                            "workspace's top) or !NAME (a built-in name no longer protected)", l[i], why);
                for (size_t j = 0; j < i; j++)
                        if (streq(out[i], out[j]))
                                return config_error(p, ip, -EEXIST, "\"%s\" is listed twice", out[i]);
        }
        *(char ***) field = TAKE_PTR(out);
        return 0;
}

/* char ***: workspace-relative paths in git's form, each listed once. */
static int parse_shared_ignored(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        static const ConfigStrvSpec spec = { .max = 64, .allow_empty_list = true };
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = config_parse_strv(p, v, path, &l, &spec);
        if (r < 0)
                return r;
        for (size_t i = 0; l[i]; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);
                if (!ip)
                        return config_oom(p);
                if (strlen(l[i]) >= 4096 || !path_is_plain_relative(l[i], strlen(l[i])))
                        return config_error(p, ip, -EINVAL, "\"%s\" must be a path relative to the workspace's top, "
                                            "without a leading or trailing '/' or \".\" or \"..\" components", l[i]);
                for (size_t j = 0; j < i; j++)
                        if (streq(l[i], l[j]))
                                return config_error(p, ip, -EEXIST, "\"%s\" is listed twice", l[i]);
        }
        *(char ***) field = TAKE_PTR(l);
        return 0;
}

/* PortForward[]: "PORT" or "HOST_PORT:PORT", forwarded to the host's loopback at each start; host ports distinct. */
static int parse_publish_ports(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        static const ConfigStrvSpec spec = { .max = PORT_PUBLISH_MAX, .allow_empty_list = true };
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ PortForward *out = NULL;
        Profile *prof = field;
        size_t n;
        int r;

        r = config_parse_strv(p, v, path, &l, &spec);
        if (r < 0)
                return r;
        n = strv_length(l);
        out = calloc(n ?: 1, sizeof(PortForward));
        if (!out)
                return config_oom(p);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i), *why = NULL;

                if (!ip)
                        return config_oom(p);
                r = port_forward_parse(l[i], &out[i], &why);
                if (r == -ENOMEM)
                        return config_oom(p);
                if (r < 0)
                        return config_error(p, ip, r, "%s", why);
                for (size_t j = 0; j < i; j++)
                        if (out[j].host_port == out[i].host_port)
                                return config_error(p, ip, -EEXIST, "host port %u is published twice (also by \"%s\")",
                                                    (unsigned) out[i].host_port, l[j]);
        }
        free(prof->publish_ports);
        prof->publish_ports = TAKE_PTR(out);
        prof->n_publish_ports = n;
        return 0;
}

/*
 * char ***: host rules, "NAME", "*.NAME", each optionally ":PORT[,PORT...]"
 * (host-rule.h), in their canonical form, each pattern once.
 */
static int parse_allow_hosts(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        static const ConfigStrvSpec spec = { .max = HOST_RULE_LIST_MAX, .allow_empty_list = true };
        _cleanup_strv_free_ char **l = NULL, **out = NULL;
        HostRuleList rules = {};
        int r = 0;

        r = config_parse_strv(p, v, path, &l, &spec);
        if (r < 0)
                return r;
        out = calloc(strv_length(l) + 1, sizeof(char *));
        if (!out)
                return config_oom(p);
        for (size_t i = 0; l[i]; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i), *why = NULL;
                char buf[HOST_RULE_STRING_MAX];

                if (!ip) {
                        r = config_oom(p);
                        break;
                }
                r = host_rule_list_add(&rules, l[i], &why);
                if (r == -ENOMEM) {
                        r = config_oom(p);
                        break;
                }
                if (r < 0) {
                        r = config_error(p, ip, r, "%s", why ?: "not a host rule");
                        break;
                }
                host_rule_format(&rules.items[rules.n - 1], buf);
                out[i] = strdup(buf);
                if (!out[i]) {
                        r = config_oom(p);
                        break;
                }
        }
        host_rule_list_done(&rules);
        if (r < 0)
                return r;
        strv_free(*(char ***) field);
        *(char ***) field = TAKE_PTR(out);
        return 0;
}

static const ConfigKey profile_keys[] = {
        { "image",           parse_image,           0,                                   NULL, CONFIG_KEY_REQUIRED },
        { "command",         config_parse_strv,     offsetof(Profile, command),          &command_spec },
        { "persistent_dirs", parse_persistent_dirs, offsetof(Profile, persistent_dirs) },
        { "allow_egress",    parse_cidr_list,       offsetof(Profile, allow_egress) },
        { "deny_egress",     parse_cidr_list,       offsetof(Profile, deny_egress) },
        { "allow_hosts",     parse_allow_hosts,     offsetof(Profile, allow_hosts) },
        { "env",             parse_env,             0 },
        { "volumes",         parse_volumes,         0 },
        { "isolate_ignored", config_parse_bool,     offsetof(Profile, isolate_ignored) },
        { "protected_paths", parse_protected_paths, offsetof(Profile, protected_paths) },
        { "shared_ignored",  parse_shared_ignored,  offsetof(Profile, shared_ignored) },
        { "publish_ports",   parse_publish_ports,   0 },
        { "directfs",        config_parse_bool,     offsetof(Profile, directfs) },
        { "git_fsmonitor",   config_parse_bool,     offsetof(Profile, git_fsmonitor) },
        { "limits",          parse_limits,          offsetof(Profile, limits) },
        {}
};

static void profile_done(Profile *prof) {
        free(prof->name);
        free(prof->image_raw);
        free(prof->image.path);
        free(prof->image.tag);
        strv_free(prof->command);
        strv_free(prof->persistent_dirs);
        strv_free(prof->protected_paths);
        strv_free(prof->shared_ignored);
        strv_free(prof->allow_hosts);
        free(prof->publish_ports);
        free(prof->allow_egress.items);
        free(prof->deny_egress.items);
        for (size_t i = 0; i < prof->n_env; i++) {
                free(prof->env[i].name);
                free(prof->env[i].value);
        }
        free(prof->env);
        for (size_t i = 0; i < prof->n_volumes; i++) {
                free(prof->volumes[i].host);
                free(prof->volumes[i].container);
        }
        free(prof->volumes);
}

/* The profile that exists without any configuration file. */
static int profile_builtin(Profile *prof) {
        /* What an agent installs with apt, pip --user, npm -g or by hand (issue 16, SR-14). */
        static const char *const dirs[] = { "/usr", "/etc", "/var/lib", "/root", "/opt", NULL };

        *prof = (Profile) {
                .name = strdup(BUILTIN_PROFILE_NAME),
                .image_raw = strdup(BUILTIN_IMAGE),
                .image = { .kind = IMAGE_BUILTIN },
                .persistent_dirs = strv_copy((char **) dirs),
                .isolate_ignored = true,
                .directfs = true,
                .git_fsmonitor = true,
                .builtin = true,
        };
        limits_default(&prof->limits);
        if (!prof->name || !prof->image_raw || !prof->persistent_dirs)
                return -ENOMEM;
        return 0;
}

static int profile_entry(ConfigParser *p, const char *name, json_object *v, const char *path, void *item, void *userdata) {
        Profile *prof = item;

        if (!profile_name_is_valid(name))
                return config_error(p, path, -EINVAL,
                                    "invalid profile name; names are 2 to 32 characters of a-z, 0-9, '_' and '-'");
        prof->name = strdup(name);
        if (!prof->name)
                return config_oom(p);
        prof->isolate_ignored = true;
        prof->directfs = true;
        prof->git_fsmonitor = true;
        limits_default(&prof->limits);
        return config_dispatch(p, v, path, profile_keys, prof);
}

static int parse_profiles(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        Config *c = field;

        return config_parse_map(p, v, path, "an object of profiles", "profiles", CONFIG_MAX_PROFILES, sizeof(Profile),
                                (void **) &c->profiles, &c->n_profiles, profile_entry, NULL);
}

/* -------------------------------------------------------------- top level */

/* char **: a profile name; whether it is defined is checked once all are read. */
static int parse_profile_name(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        char **s = field;
        int r;

        r = config_get_string(p, v, path, false, s);
        if (r < 0)
                return r;
        if (!profile_name_is_valid(*s))
                return config_error(p, path, -EINVAL, "\"%s\" is not a valid profile name", *s);
        return 0;
}

/* char **: runtime.runsc as a path; config_resolve() judges the file it names. */
static int parse_runsc(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        return parse_checked_string(p, v, path, field, config_absolute_path);
}

static const ConfigKey network_keys[] = {
        { "allow", parse_cidr_list, offsetof(Config, allow) },
        { "deny",  parse_cidr_list, offsetof(Config, deny) },
        {}
};

static const ConfigKey runtime_keys[] = {
        { "runsc", parse_runsc, offsetof(Config, runsc) },
        {}
};

/* An integer in [min, max] into an unsigned field; unit names it in the message. */
typedef struct UintRange {
        int64_t min, max;
        const char *unit;
} UintRange;

static int parse_bounded_uint(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        const UintRange *range = data;
        int64_t t;
        int r;

        r = config_expect_type(p, v, path, json_type_int, "an integer");
        if (r < 0)
                return r;
        r = config_get_int64(p, v, path, &t);
        if (r < 0)
                return r;
        if (t < range->min || t > range->max)
                return config_error(p, path, -ERANGE, "%" PRIi64 " is out of range; use %" PRIi64 " to %" PRIi64 " %s", t,
                                    range->min, range->max, range->unit);
        *(unsigned *) field = (unsigned) t;
        return 0;
}

static const UintRange retention_days = { RETENTION_AUDIT_DAYS_MIN, RETENTION_AUDIT_DAYS_MAX, "days" };
static const UintRange retention_events = { RETENTION_AUDIT_EVENTS_MIN, RETENTION_AUDIT_EVENTS_MAX, "events" };
static const UintRange retention_generations = { RETENTION_GENERATIONS_MIN, RETENTION_GENERATIONS_MAX, "generations" };

static const ConfigKey retention_keys[] = {
        { "audit_days",   parse_bounded_uint, offsetof(Config, retention.audit_days),   &retention_days },
        { "audit_events", parse_bounded_uint, offsetof(Config, retention.audit_events), &retention_events },
        { "generations",  parse_bounded_uint, offsetof(Config, retention.generations),  &retention_generations },
        {}
};

/* data_root is held as written until config_parse() expands it. */
static const ConfigKey top_keys[] = {
        { "data_root",       parse_host_template, offsetof(Config, data_root),       &tokens_tilde },
        { "default_profile", parse_profile_name,  offsetof(Config, default_profile) },
        { "network",         config_parse_object, 0,                                 network_keys },
        { "escalation",      config_parse_object, 0,                                 config_escalation_keys },
        { "profiles",        parse_profiles,      0 },
        { "retention",       config_parse_object, 0,                                 retention_keys },
        { "runtime",         config_parse_object, 0,                                 runtime_keys },
        {}
};

static int profile_compare(const void *a, const void *b) {
        return strcmp(((const Profile *) a)->name, ((const Profile *) b)->name);
}

/*
 * The reserved topology belongs to Lazaret: allowing into it would reach the
 * helper's own addresses and canaries, and a deny at /23 or narrower would cut
 * them off. A broader deny is fine; the fixed routes are more specific.
 */
static int check_topology(ConfigParser *p, const CidrList *l, const char *path, bool allow) {
        /*
         * Ranges no egress can ever reach through the network helper: an
         * allow that lies wholly inside one can only be a mistake (an allow
         * that merely covers one, such as 0.0.0.0/0, is fine). The helper
         * runs with the host's loopback disabled.
         */
        static const struct {
                const char *cidr, *what;
        } unreachable[] = {
                { "0.0.0.0/8",   "\"this network\" (0.0.0.0/8)" },
                { "127.0.0.0/8", "loopback, which the sandbox's network never reaches on the host" },
                { "224.0.0.0/4", "multicast, which the network helper does not carry" },
                { "240.0.0.0/4", "reserved (240.0.0.0/4 and the broadcast address)" },
        };
        char b[CIDR_STRING_MAX], t[CIDR_STRING_MAX];

        for (size_t i = 0; allow && i < l->n; i++)
                for (size_t k = 0; k < ELEMENTSOF(unreachable); k++) {
                        Cidr u;

                        if (cidr_parse(unreachable[k].cidr, &u) < 0)
                                assert_not_reached();
                        if (cidr_contains(&u, &l->items[i])) {
                                _cleanup_free_ char *ip = keypath_index(path, i);
                                if (!ip)
                                        return config_oom(p);
                                return config_error(p, ip, -EINVAL, "\"%s\" lies in %s; no egress can reach it",
                                                    cidr_to_string(&l->items[i], b), unreachable[k].what);
                        }
                }

        for (size_t i = 0; i < l->n; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);
                if (!ip)
                        return config_oom(p);
                if (allow && cidr_overlaps(&l->items[i], &cidr_reserved_topology))
                        return config_error(p, ip, -EPERM, "\"%s\" overlaps %s, which is reserved for Lazaret's own network",
                                            cidr_to_string(&l->items[i], b), cidr_to_string(&cidr_reserved_topology, t));
                if (!allow && cidr_contains(&cidr_reserved_topology, &l->items[i]))
                        return config_error(p, ip, -EPERM, "\"%s\" lies inside %s, which is reserved for Lazaret's own network",
                                            cidr_to_string(&l->items[i], b), cidr_to_string(&cidr_reserved_topology, t));
        }
        return 0;
}

/* SR-6: an allow and a deny of exactly the same prefix is a conflict. */
static int check_conflicts(ConfigParser *p, const CidrList *allow, const char *allow_path,
                           const CidrList *deny, const char *deny_path, bool with_defaults) {
        char b[CIDR_STRING_MAX];

        for (size_t i = 0; i < allow->n; i++) {
                _cleanup_free_ char *ip = keypath_index(allow_path, i);
                if (!ip)
                        return config_oom(p);
                if (with_defaults)
                        for (size_t j = 0; j < ELEMENTSOF(cidr_default_deny); j++)
                                if (cidr_equal(&allow->items[i], &cidr_default_deny[j]))
                                        return config_error(p, ip, -EEXIST,
                                                            "\"%s\" is exactly a default-denied range; allow more specific prefixes inside it instead",
                                                            cidr_to_string(&allow->items[i], b));
                if (deny)
                        for (size_t j = 0; j < deny->n; j++)
                                if (cidr_equal(&allow->items[i], &deny->items[j]))
                                        return config_error(p, ip, -EEXIST, "\"%s\" is also denied by %s[%zu]; an equal allow and deny is a conflict",
                                                            cidr_to_string(&allow->items[i], b), deny_path, j);
        }
        return 0;
}

static int validate_network(ConfigParser *p, Config *c) {
        int r;

        r = check_topology(p, &c->allow, "network.allow", true);
        if (r < 0)
                return r;
        r = check_topology(p, &c->deny, "network.deny", false);
        if (r < 0)
                return r;
        r = check_conflicts(p, &c->allow, "network.allow", &c->deny, "network.deny", true);
        if (r < 0)
                return r;

        for (size_t i = 0; i < c->n_profiles; i++) {
                Profile *prof = &c->profiles[i];
                _cleanup_free_ char *base = keypath_key("profiles", prof->name, strlen(prof->name)), *ap = NULL, *dp = NULL;

                if (!base || asprintf(&ap, "%s.allow_egress", base) < 0 || asprintf(&dp, "%s.deny_egress", base) < 0)
                        return config_oom(p);
                r = check_topology(p, &prof->allow_egress, ap, true);
                if (r < 0)
                        return r;
                r = check_topology(p, &prof->deny_egress, dp, false);
                if (r < 0)
                        return r;
                /* Every allow in force for the profile against every deny. */
                r = check_conflicts(p, &prof->allow_egress, ap, &prof->deny_egress, dp, true);
                if (r < 0)
                        return r;
                r = check_conflicts(p, &prof->allow_egress, ap, &c->deny, "network.deny", false);
                if (r < 0)
                        return r;
                r = check_conflicts(p, &c->allow, "network.allow", &prof->deny_egress, dp, false);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* data_root: "~" is the only expansion; the result is normalised, not resolved. */
static int finish_data_root(ConfigParser *p, Config *c) {
        _cleanup_free_ char *raw = TAKE_PTR(c->data_root), *expanded = NULL, *why = NULL;
        TokenContext tc = { .home = p->env->home };
        int r;

        if (raw) {
                r = tokens_expand(raw, TOKEN_TILDE, &tc, &expanded, &why);
                if (r < 0)
                        return config_error(p, "data_root", r, "%s", why ?: "cannot expand");
        } else {
                expanded = path_join(p->env->xdg_data_home, "lazaret");
                if (!expanded)
                        return config_oom(p);
        }
        /* A symbolic link on the way is refused when a Domain is validated
         * (domain_check_sources()), naming the resolved path. */
        r = path_normalize(expanded, &c->data_root);
        if (r < 0)
                return config_error(p, "data_root", r, "\"%s\" is not a valid path: %s", expanded, strerror(-r));
        if (streq(c->data_root, "/"))
                return config_error(p, "data_root", -EINVAL, "the file system root cannot be the data root");
        return 0;
}

/* What holds across keys, once the document is read. */
static int finish(ConfigParser *p, Config *c) {
        int r;

        /* The built-in profile stays available unless a file redefines it. */
        if (!config_find_profile(c, BUILTIN_PROFILE_NAME)) {
                Profile *np = reallocarray(c->profiles, c->n_profiles + 1, sizeof(Profile));
                if (!np)
                        return config_oom(p);
                c->profiles = np;
                r = profile_builtin(&c->profiles[c->n_profiles]);
                c->n_profiles++;
                if (r < 0)
                        return config_oom(p);
        }
        qsort(c->profiles, c->n_profiles, sizeof(Profile), profile_compare);

        if (!c->default_profile) {
                c->default_profile = strdup(BUILTIN_PROFILE_NAME);
                if (!c->default_profile)
                        return config_oom(p);
        } else if (!config_find_profile(c, c->default_profile))
                return config_error(p, "default_profile", -ENOENT, "no profile named \"%s\" is defined", c->default_profile);

        r = validate_network(p, c);
        if (r < 0)
                return r;
        return finish_data_root(p, c);
}

int config_parse(const char *text, size_t len, const char *filename, const ConfigEnv *env,
                 Config **ret, char **ret_error) {
        _cleanup_config_ Config *c = NULL;
        _cleanup_json_ json_object *root = NULL;
        ConfigParser p = { .file = filename ?: CONFIG_BUILTIN_NAME, .env = env };
        int r;

        *ret_error = NULL;

        c = calloc(1, sizeof(Config));
        if (!c)
                return -ENOMEM;
        c->escalation_enabled = true;
        c->escalation_timeout_s = ESCALATION_TIMEOUT_DEFAULT;
        c->retention.audit_days = RETENTION_AUDIT_DAYS_DEFAULT;
        c->retention.audit_events = RETENTION_AUDIT_EVENTS_DEFAULT;
        c->retention.generations = RETENTION_GENERATIONS_DEFAULT;
        if (filename) {
                c->path = strdup(filename);
                if (!c->path)
                        return -ENOMEM;
        }

        if (text) {
                _cleanup_free_ char *why = NULL;

                r = json_parse_strict(text, len, &root, &why);
                if (r < 0) {
                        config_error(&p, NULL, r, "%s", why ?: "invalid JSON");
                        goto fail;
                }
                r = config_dispatch(&p, root, "", top_keys, c);
                if (r < 0)
                        goto fail;
        }

        r = finish(&p, c);
        if (r < 0)
                goto fail;

        *ret = TAKE_PTR(c);
        return 0;

fail:
        if (r == -ENOMEM && !p.error)
                config_oom(&p);
        *ret_error = p.error;
        return r;
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        free(c->path);
        free(c->data_root);
        free(c->default_profile);
        free(c->runsc);
        free(c->allow.items);
        free(c->deny.items);
        for (size_t i = 0; i < c->n_auto_approve; i++) {
                strv_free(c->auto_approve[i].argv);
                free(c->auto_approve[i].program);
        }
        free(c->auto_approve);
        for (size_t i = 0; i < c->n_profiles; i++)
                profile_done(&c->profiles[i]);
        free(c->profiles);
        free(c);
        return NULL;
}

const Profile *config_find_profile(const Config *c, const char *name) {
        for (size_t i = 0; i < c->n_profiles; i++)
                if (streq(c->profiles[i].name, name))
                        return &c->profiles[i];
        return NULL;
}

const char *volume_mode_to_string(VolumeMode m) {
        return m == VOLUME_RW ? "rw" : "ro";
}
