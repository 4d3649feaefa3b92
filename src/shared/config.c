/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "config.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"
#include "tokens.h"
#include "util.h"

/*
 * Every message has the shape "FILE: KEY.PATH: what is wrong", so that a
 * reader can find the offending line without knowing the parser.
 */
typedef struct Parser {
        const char *file;
        const ConfigEnv *env;
        char *error;
} Parser;

static int perr(Parser *p, const char *path, int r, const char *fmt, ...) _printf_(4, 5);
static int perr(Parser *p, const char *path, int r, const char *fmt, ...) {
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

#define OOM(p) perr(p, NULL, -ENOMEM, "out of memory")

static const char *json_type_label(json_object *v) {
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

static int expect_type(Parser *p, json_object *v, const char *path, json_type t, const char *what) {
        if (json_object_get_type(v) == t)
                return 0;
        return perr(p, path, -EINVAL, "expected %s, got %s", what, json_type_label(v));
}

/* ---------------------------------------------------------------- fields */

static int get_string(Parser *p, json_object *v, const char *path, bool allow_empty, char **ret) {
        const char *s;
        size_t len;
        char *c;
        int r;

        r = expect_type(p, v, path, json_type_string, "a string");
        if (r < 0)
                return r;
        s = json_object_get_string(v);
        len = (size_t) json_object_get_string_len(v);
        if (strlen(s) != len)
                return perr(p, path, -EINVAL, "string contains a NUL character");
        if (len > CONFIG_MAX_STRING)
                return perr(p, path, -E2BIG, "string is longer than %d bytes", CONFIG_MAX_STRING);
        if (!allow_empty && len == 0)
                return perr(p, path, -EINVAL, "must not be empty");
        c = strdup(s);
        if (!c)
                return OOM(p);
        *ret = c;
        return 0;
}

static int get_bool(Parser *p, json_object *v, const char *path, bool *ret) {
        int r = expect_type(p, v, path, json_type_boolean, "true or false");
        if (r < 0)
                return r;
        *ret = json_object_get_boolean(v);
        return 0;
}

static int get_string_array(Parser *p, json_object *v, const char *path, size_t max, bool allow_empty_list,
                            char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n;
        int r;

        r = expect_type(p, v, path, json_type_array, "an array of strings");
        if (r < 0)
                return r;
        n = json_object_array_length(v);
        if (n > max)
                return perr(p, path, -E2BIG, "has %zu entries, at most %zu are allowed", n, max);
        if (n == 0 && !allow_empty_list)
                return perr(p, path, -EINVAL, "must not be an empty array");

        l = calloc(n + 1, sizeof(char *));
        if (!l)
                return OOM(p);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);
                if (!ip)
                        return OOM(p);
                r = get_string(p, json_object_array_get_idx(v, i), ip, false, &l[i]);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/*
 * Walks the keys of an object, refusing unknown ones. For each known key the
 * callback is called with its index in names[].
 */
typedef int (*KeyHandler)(Parser *p, size_t which, json_object *v, const char *path, void *userdata);

static int parse_object_keys(Parser *p, json_object *obj, const char *path, const char *const *names,
                             KeyHandler handler, void *userdata) {
        int r;

        r = expect_type(p, obj, path, json_type_object, "an object");
        if (r < 0)
                return r;

        json_object_object_foreach(obj, key, val) {
                _cleanup_free_ char *kp = keypath_key(path, key, strlen(key));
                size_t i;

                if (!kp)
                        return OOM(p);
                for (i = 0; names[i]; i++)
                        if (streq(names[i], key))
                                break;
                if (!names[i]) {
                        _cleanup_free_ char *known = NULL;
                        size_t len = 0;
                        for (size_t j = 0; names[j]; j++)
                                len += strlen(names[j]) + 2;
                        known = calloc(len + 1, 1);
                        if (!known)
                                return OOM(p);
                        for (size_t j = 0; names[j]; j++) {
                                if (j > 0)
                                        strcat(known, ", ");
                                strcat(known, names[j]);
                        }
                        return perr(p, kp, -EINVAL, "unknown key (known keys here: %s)", known);
                }
                if (json_object_get_type(val) == json_type_null)
                        return perr(p, kp, -EINVAL, "null is not a valid value; omit the key to use the default");
                r = handler(p, i, val, kp, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ------------------------------------------------------------ validators */

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

/* An absolute path without ".." segments, normalised, or an error naming it. */
static int parse_absolute_path(Parser *p, const char *in, const char *path, char **ret) {
        int r;

        if (!path_is_absolute(in))
                return perr(p, path, -EINVAL, "\"%s\" is not an absolute path", in);
        if (path_has_dotdot(in))
                return perr(p, path, -EINVAL, "\"%s\" contains a \"..\" segment", in);
        r = path_normalize(in, ret);
        if (r < 0)
                return perr(p, path, r, "\"%s\" is not a valid path", in);
        return 0;
}

/*
 * Sandbox paths: absolute, no "..", not the root, and not a path Lazaret owns
 * (the workspace tree, its control directory, the kernel file systems).
 */
static int check_sandbox_path(Parser *p, const char *in, const char *path, char **ret) {
        static const char *const reserved[] = { SANDBOX_WORKSPACE, SANDBOX_CONTROL_DIR, "/proc", "/sys", "/dev", NULL };
        _cleanup_free_ char *norm = NULL;
        int r;

        r = parse_absolute_path(p, in, path, &norm);
        if (r < 0)
                return r;
        if (streq(norm, "/"))
                return perr(p, path, -EINVAL, "the sandbox root \"/\" cannot be used here");
        for (size_t i = 0; reserved[i]; i++)
                if (path_is_at_or_below(norm, reserved[i]))
                        return perr(p, path, -EPERM, "\"%s\" is inside %s, which Lazaret manages", norm, reserved[i]);
        *ret = TAKE_PTR(norm);
        return 0;
}

/* Host path templates: syntax only; expansion needs the Domain. */
static int check_host_template(Parser *p, const char *in, const char *path, TokenFlags flags) {
        _cleanup_free_ char *why = NULL;
        int r;

        r = tokens_expand(in, flags, NULL, NULL, &why);
        if (r < 0)
                return perr(p, path, r, "%s", why ?: "invalid token");
        if (!(in[0] == '/' || in[0] == '~' || in[0] == '{'))
                return perr(p, path, -EINVAL, "\"%s\" is not an absolute path (start it with \"/\", \"~\" or a token)", in);
        if (path_has_dotdot(in))
                return perr(p, path, -EINVAL, "\"%s\" contains a \"..\" segment", in);
        return 0;
}

static int parse_cidr_list(Parser *p, json_object *v, const char *path, CidrList *ret) {
        size_t n;
        int r;

        r = expect_type(p, v, path, json_type_array, "an array of IPv4 prefixes");
        if (r < 0)
                return r;
        n = json_object_array_length(v);
        if (n > CONFIG_MAX_LIST)
                return perr(p, path, -E2BIG, "has %zu entries, at most %d are allowed", n, CONFIG_MAX_LIST);

        free(ret->items);
        *ret = (CidrList) {};
        ret->items = calloc(n ?: 1, sizeof(Cidr));
        if (!ret->items)
                return OOM(p);

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i), *s = NULL;
                Cidr c;

                if (!ip)
                        return OOM(p);
                r = get_string(p, json_object_array_get_idx(v, i), ip, false, &s);
                if (r < 0)
                        return r;
                r = cidr_parse(s, &c);
                if (r == -EAFNOSUPPORT)
                        return perr(p, ip, r, "\"%s\" is an IPv6 prefix; IPv6 is disabled inside the sandbox, so only IPv4 prefixes are accepted", s);
                if (r == -EADDRNOTAVAIL)
                        return perr(p, ip, r, "\"%s\" has host bits set below the prefix length", s);
                if (r < 0)
                        return perr(p, ip, r, "\"%s\" is not an IPv4 prefix of the form a.b.c.d/n", s);
                for (size_t j = 0; j < ret->n; j++)
                        if (cidr_equal(&ret->items[j], &c))
                                return perr(p, ip, -EEXIST, "\"%s\" is listed twice", s);
                ret->items[ret->n++] = c;
        }
        return 0;
}

/* --------------------------------------------------------------- volumes */

static const char *const volume_keys[] = { "host", "container", "mode", "force", NULL };

static int volume_key(Parser *p, size_t which, json_object *v, const char *path, void *userdata) {
        Volume *vol = userdata;
        _cleanup_free_ char *s = NULL;
        int r;

        switch (which) {
        case 0:
                r = get_string(p, v, path, false, &s);
                if (r < 0)
                        return r;
                r = check_host_template(p, s, path, TOKEN_ALL);
                if (r < 0)
                        return r;
                vol->host = TAKE_PTR(s);
                return 0;
        case 1:
                r = get_string(p, v, path, false, &s);
                if (r < 0)
                        return r;
                return check_sandbox_path(p, s, path, &vol->container);
        case 2:
                r = get_string(p, v, path, false, &s);
                if (r < 0)
                        return r;
                if (streq(s, "ro"))
                        vol->mode = VOLUME_RO;
                else if (streq(s, "rw"))
                        vol->mode = VOLUME_RW;
                else
                        return perr(p, path, -EINVAL, "\"%s\" is not a mount mode; use \"ro\" or \"rw\"", s);
                return 0;
        case 3:
                return get_bool(p, v, path, &vol->force);
        }
        return -EINVAL;
}

static int parse_volumes(Parser *p, json_object *v, const char *path, Profile *prof) {
        size_t n;
        int r;

        r = expect_type(p, v, path, json_type_array, "an array of volume objects");
        if (r < 0)
                return r;
        n = json_object_array_length(v);
        if (n > CONFIG_MAX_LIST)
                return perr(p, path, -E2BIG, "has %zu entries, at most %d are allowed", n, CONFIG_MAX_LIST);
        prof->volumes = calloc(n ?: 1, sizeof(Volume));
        if (!prof->volumes)
                return OOM(p);

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);
                Volume *vol = &prof->volumes[i];

                if (!ip)
                        return OOM(p);
                prof->n_volumes = i + 1;
                vol->mode = VOLUME_RO;
                r = parse_object_keys(p, json_object_array_get_idx(v, i), ip, volume_keys, volume_key, vol);
                if (r < 0)
                        return r;
                if (!vol->host)
                        return perr(p, ip, -EINVAL, "missing required key \"host\"");
                if (!vol->container)
                        return perr(p, ip, -EINVAL, "missing required key \"container\"");
                for (size_t j = 0; j < i; j++)
                        if (path_is_at_or_below(vol->container, prof->volumes[j].container) ||
                            path_is_at_or_below(prof->volumes[j].container, vol->container))
                                return perr(p, ip, -EEXIST, "container path \"%s\" overlaps volumes[%zu] (\"%s\")",
                                            vol->container, j, prof->volumes[j].container);
        }
        return 0;
}

/* ------------------------------------------------------------------- env */

static int parse_env(Parser *p, json_object *v, const char *path, Profile *prof) {
        size_t n;
        int r;

        r = expect_type(p, v, path, json_type_object, "an object of NAME: \"value\" pairs");
        if (r < 0)
                return r;
        n = (size_t) json_object_object_length(v);
        if (n > CONFIG_MAX_LIST)
                return perr(p, path, -E2BIG, "has %zu entries, at most %d are allowed", n, CONFIG_MAX_LIST);
        prof->env = calloc(n ?: 1, sizeof(EnvEntry));
        if (!prof->env)
                return OOM(p);

        json_object_object_foreach(v, key, val) {
                _cleanup_free_ char *kp = keypath_key(path, key, strlen(key)), *s = NULL;
                EnvEntry *e = &prof->env[prof->n_env];
                const char *from;

                if (!kp)
                        return OOM(p);
                if (!env_name_is_valid(key))
                        return perr(p, kp, -EINVAL, "not a valid environment variable name (letters, digits, '_', not starting with a digit)");
                if (startswith(key, "LAZARET_"))
                        return perr(p, kp, -EPERM, "LAZARET_* variables are set by Lazaret itself");
                r = get_string(p, val, kp, true, &s);
                if (r < 0)
                        return r;
                e->name = strdup(key);
                if (!e->name)
                        return OOM(p);
                prof->n_env++;
                from = startswith(s, "env:");
                if (from) {
                        if (!env_name_is_valid(from))
                                return perr(p, kp, -EINVAL, "\"%s\": \"env:\" must be followed by a host variable name", s);
                        e->from_host = true;
                        e->value = strdup(from);
                        if (!e->value)
                                return OOM(p);
                } else
                        e->value = TAKE_PTR(s);
        }
        return 0;
}

/* ----------------------------------------------------------------- image */

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

static int parse_image(Parser *p, const char *s, const char *path, ImageRef *ret) {
        const char *rest;
        int r;

        if (streq(s, BUILTIN_IMAGE)) {
                *ret = (ImageRef) { .kind = IMAGE_BUILTIN };
                return 0;
        }

        rest = startswith(s, "oci:");
        if (!rest)
                return perr(p, path, -EINVAL,
                            "\"%s\" is not a supported image reference; use \"oci:DIR[:TAG]\" (a local OCI image layout) or \"%s\"",
                            s, BUILTIN_IMAGE);

        _cleanup_free_ char *dir = strdup(rest), *tag = NULL;
        if (!dir)
                return OOM(p);
        char *colon = strrchr(dir, ':');
        if (colon && is_tag(colon + 1) && !strchr(colon + 1, '/')) {
                tag = strdup(colon + 1);
                *colon = 0;
        } else
                tag = strdup("latest");
        if (!tag)
                return OOM(p);
        if (isempty(dir))
                return perr(p, path, -EINVAL, "\"%s\" names no directory", s);
        r = check_host_template(p, dir, path, TOKEN_ALL);
        if (r < 0)
                return r;

        *ret = (ImageRef) { .kind = IMAGE_OCI_LAYOUT, .path = TAKE_PTR(dir), .tag = TAKE_PTR(tag) };
        return 0;
}

/* ---------------------------------------------------------------- limits */

typedef struct LimitsState {
        Limits *limits;
        bool memory_high_set;
} LimitsState;

/* A size: a string with an optional K/M/G/T suffix or "infinity", or an integer of bytes. */
static int get_size(Parser *p, json_object *v, const char *path, bool allow_infinity, uint64_t min, uint64_t *ret) {
        char b[LIMIT_STRING_MAX];
        uint64_t x;
        int r;

        if (json_object_get_type(v) == json_type_int) {
                int64_t i = json_object_get_int64(v);
                if (i < 0)
                        return perr(p, path, -ERANGE, "%" PRIi64 " is negative", i);
                x = (uint64_t) i;
        } else if (json_object_get_type(v) == json_type_string) {
                const char *s = json_object_get_string(v);
                r = limit_parse_size(s, &x);
                if (r == -ERANGE)
                        return perr(p, path, r, "\"%.64s\" is too large", s);
                if (r < 0)
                        return perr(p, path, r,
                                    "\"%.64s\" is not a size; use bytes or a number with K, M, G or T (binary multiples)%s",
                                    s, allow_infinity ? ", or \"infinity\"" : "");
        } else
                return perr(p, path, -EINVAL, "expected a size (such as \"512M\", \"8G\" or a number of bytes), got %s",
                            json_type_label(v));
        if (x == LIMIT_INFINITY && !allow_infinity)
                return perr(p, path, -EINVAL, "cannot be \"infinity\"");
        if (x < min)
                return perr(p, path, -ERANGE, "%s is too small; the least is %s", limit_format_size(x, b),
                            limit_format_size(min, (char[LIMIT_STRING_MAX]) {}));
        *ret = x;
        return 0;
}

/* A count: an integer, or "infinity" where allowed. */
static int get_count(Parser *p, json_object *v, const char *path, bool allow_infinity, uint64_t min, uint64_t max,
                     uint64_t *ret) {
        int64_t i;

        if (allow_infinity && json_object_get_type(v) == json_type_string &&
            streq(json_object_get_string(v), "infinity")) {
                *ret = LIMIT_INFINITY;
                return 0;
        }
        if (json_object_get_type(v) != json_type_int)
                return perr(p, path, -EINVAL, "expected an integer%s, got %s", allow_infinity ? " or \"infinity\"" : "",
                            json_type_label(v));
        i = json_object_get_int64(v);
        if (i < 0 || (uint64_t) i < min || (uint64_t) i > max) {
                if (max == INT64_MAX)
                        return perr(p, path, -ERANGE, "%" PRIi64 " is out of range; the least is %" PRIu64, i, min);
                return perr(p, path, -ERANGE, "%" PRIi64 " is out of range; use %" PRIu64 " to %" PRIu64, i, min, max);
        }
        *ret = (uint64_t) i;
        return 0;
}

static int limits_key(Parser *p, size_t which, json_object *v, const char *path, void *userdata) {
        LimitsState *st = userdata;
        Limits *l = st->limits;

        switch (which) {
        case 0:
                return get_size(p, v, path, true, LIMIT_MIN_MEMORY, &l->memory_max);
        case 1:
                st->memory_high_set = true;
                return get_size(p, v, path, true, LIMIT_MIN_MEMORY, &l->memory_high);
        case 2:
                return get_count(p, v, path, true, LIMIT_MIN_TASKS, INT64_MAX, &l->tasks_max);
        case 3:
                return get_count(p, v, path, false, LIMIT_CPU_WEIGHT_MIN, LIMIT_CPU_WEIGHT_MAX, &l->cpu_weight);
        case 4:
                return get_size(p, v, path, false, LIMIT_MIN_TMP_SIZE, &l->tmp_size);
        case 5:
                return get_count(p, v, path, true, LIMIT_MIN_PROCESSES, INT64_MAX, &l->processes);
        case 6:
                return get_size(p, v, path, true, LIMIT_MIN_ADDRESS_SPACE, &l->address_space);
        }
        return -EINVAL;
}

static int parse_limits(Parser *p, json_object *v, const char *path, Limits *l) {
        LimitsState st = { .limits = l };
        char a[LIMIT_STRING_MAX], b[LIMIT_STRING_MAX];
        int r;

        r = parse_object_keys(p, v, path, limit_names, limits_key, &st);
        if (r < 0)
                return r;
        if (!st.memory_high_set)
                l->memory_high = limits_default_memory_high(l->memory_max);
        if (l->memory_high > l->memory_max)
                return perr(p, path, -EINVAL, "memory_high (%s) must not exceed memory_max (%s)",
                            limit_format_size(l->memory_high, a), limit_format_size(l->memory_max, b));
        /* The sandbox's own limit must be hit first: it fails one fork, the scope's would fail gVisor. */
        if (l->tasks_max != LIMIT_INFINITY &&
            (l->processes == LIMIT_INFINITY ||
             l->tasks_max < l->processes * LIMIT_HOST_TASKS_PER_PROCESS + LIMIT_HOST_TASKS_OVERHEAD))
                return perr(p, path, -EINVAL,
                            "tasks_max (%s) must be at least %llu × processes + %llu (%s) so that the sandbox's own process limit "
                            "is reached first: gVisor uses about %llu host tasks per sandbox process",
                            limit_format_count(l->tasks_max, a), LIMIT_HOST_TASKS_PER_PROCESS, LIMIT_HOST_TASKS_OVERHEAD,
                            l->processes == LIMIT_INFINITY ? "processes is infinity"
                                    : limit_format_count(l->processes * LIMIT_HOST_TASKS_PER_PROCESS + LIMIT_HOST_TASKS_OVERHEAD, b),
                            LIMIT_HOST_TASKS_PER_PROCESS);
        return 0;
}

/* --------------------------------------------------------------- profile */

static const char *const profile_keys[] = {
        "image", "command", "persistent_dirs", "allow_egress", "deny_egress", "env", "volumes", "isolate_ignored",
        "directfs", "limits", NULL
};

static int profile_key(Parser *p, size_t which, json_object *v, const char *path, void *userdata) {
        Profile *prof = userdata;
        _cleanup_strv_free_ char **l = NULL;
        int r;

        switch (which) {
        case 0:
                r = get_string(p, v, path, false, &prof->image_raw);
                if (r < 0)
                        return r;
                return parse_image(p, prof->image_raw, path, &prof->image);
        case 1:
                return get_string_array(p, v, path, CONFIG_MAX_ARGV, false, &prof->command);
        case 2:
                r = get_string_array(p, v, path, 32, true, &l);
                if (r < 0)
                        return r;
                prof->persistent_dirs = calloc(strv_length(l) + 1, sizeof(char *));
                if (!prof->persistent_dirs)
                        return OOM(p);
                for (size_t i = 0; l[i]; i++) {
                        _cleanup_free_ char *ip = keypath_index(path, i);
                        if (!ip)
                                return OOM(p);
                        r = check_sandbox_path(p, l[i], ip, &prof->persistent_dirs[i]);
                        if (r < 0)
                                return r;
                        for (size_t j = 0; j < i; j++)
                                if (path_is_at_or_below(prof->persistent_dirs[i], prof->persistent_dirs[j]) ||
                                    path_is_at_or_below(prof->persistent_dirs[j], prof->persistent_dirs[i]))
                                        return perr(p, ip, -EEXIST, "\"%s\" overlaps \"%s\"; list each tree once",
                                                    prof->persistent_dirs[i], prof->persistent_dirs[j]);
                }
                return 0;
        case 3:
                return parse_cidr_list(p, v, path, &prof->allow_egress);
        case 4:
                return parse_cidr_list(p, v, path, &prof->deny_egress);
        case 5:
                return parse_env(p, v, path, prof);
        case 6:
                return parse_volumes(p, v, path, prof);
        case 7:
                return get_bool(p, v, path, &prof->isolate_ignored);
        case 8:
                return get_bool(p, v, path, &prof->directfs);
        case 9:
                return parse_limits(p, v, path, &prof->limits);
        }
        return -EINVAL;
}

static void profile_done(Profile *prof) {
        free(prof->name);
        free(prof->image_raw);
        free(prof->image.path);
        free(prof->image.tag);
        strv_free(prof->command);
        strv_free(prof->persistent_dirs);
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
        static const char *const dirs[] = { "/usr", "/etc", "/var", "/opt", "/root", NULL };

        *prof = (Profile) {
                .name = strdup(BUILTIN_PROFILE_NAME),
                .image_raw = strdup(BUILTIN_IMAGE),
                .image = { .kind = IMAGE_BUILTIN },
                .persistent_dirs = strv_copy((char **) dirs),
                .isolate_ignored = true,
                .directfs = true,
                .builtin = true,
        };
        limits_default(&prof->limits);
        if (!prof->name || !prof->image_raw || !prof->persistent_dirs)
                return -ENOMEM;
        return 0;
}

/* ------------------------------------------------------------ escalation */

/*
 * Programs that run other programs or code of the caller's choosing. A rule
 * naming one would let the sandbox choose what runs on the host, so they are
 * refused whatever the arguments. Names ending in '*' match as prefixes.
 */
static const char *const banned_programs[] = {
        "git", "git-*",
        "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox", "toybox",
        "env", "sudo", "su", "doas", "pkexec", "runuser", "setpriv", "chroot", "nsenter", "unshare",
        "systemd-run", "flatpak-spawn", "xargs", "nohup", "setsid", "timeout", "nice", "ionice", "stdbuf",
        "time", "watch", "script", "expect", "strace", "ltrace", "gdb", "valgrind", "ssh", "find",
        "python*", "perl*", "ruby*", "node", "nodejs", "deno", "bun", "lua*", "php*", "tclsh*", "wish*",
        "awk", "gawk", "mawk", "nawk", "sed", "vim", "vi", "nvim", "emacs", "less", "more", "man",
        NULL
};

static const char *banned_match(const char *path) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;

        for (size_t i = 0; banned_programs[i]; i++) {
                size_t l = strlen(banned_programs[i]);
                if (banned_programs[i][l - 1] == '*') {
                        if (strncmp(base, banned_programs[i], l - 1) == 0)
                                return banned_programs[i];
                } else if (streq(base, banned_programs[i]))
                        return banned_programs[i];
        }
        return NULL;
}

static const char *const rule_keys[] = { "argv", "trailing_args", NULL };

static int rule_key(Parser *p, size_t which, json_object *v, const char *path, void *userdata) {
        AutoApproveRule *rule = userdata;
        int r;

        switch (which) {
        case 0: {
                _cleanup_free_ char *a0 = keypath_index(path, 0), *norm = NULL, *real = NULL;
                const char *hit;

                r = get_string_array(p, v, path, CONFIG_MAX_ARGV, false, &rule->argv);
                if (r < 0)
                        return r;
                if (!a0)
                        return OOM(p);
                if (!path_is_absolute(rule->argv[0]) || path_has_dotdot(rule->argv[0]))
                        return perr(p, a0, -EINVAL, "\"%s\" must be an absolute program path without \"..\"", rule->argv[0]);
                r = path_normalize(rule->argv[0], &norm);
                if (r < 0)
                        return perr(p, a0, r, "\"%s\" is not a valid path", rule->argv[0]);
                hit = banned_match(norm);
                /* A symlink such as /usr/bin/python3 -> python3.11 is judged by both names. */
                real = realpath(norm, NULL);
                if (!hit && real)
                        hit = banned_match(real);
                if (hit)
                        return perr(p, a0, -EPERM,
                                    "\"%s\" can run arbitrary commands (matches \"%s\") and cannot be auto-approved",
                                    rule->argv[0], hit);
                /* What the file system said is part of the fingerprint: a reader that resolves differently fails it. */
                rule->program = TAKE_PTR(real);
                return 0;
        }
        case 1:
                return get_bool(p, v, path, &rule->trailing_args);
        }
        return -EINVAL;
}

static int parse_auto_approve(Parser *p, json_object *v, const char *path, Config *c) {
        size_t n;
        int r;

        r = expect_type(p, v, path, json_type_array, "an array of rule objects");
        if (r < 0)
                return r;
        n = json_object_array_length(v);
        if (n > CONFIG_MAX_LIST)
                return perr(p, path, -E2BIG, "has %zu entries, at most %d are allowed", n, CONFIG_MAX_LIST);
        c->auto_approve = calloc(n ?: 1, sizeof(AutoApproveRule));
        if (!c->auto_approve)
                return OOM(p);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);
                if (!ip)
                        return OOM(p);
                c->n_auto_approve = i + 1;
                r = parse_object_keys(p, json_object_array_get_idx(v, i), ip, rule_keys, rule_key, &c->auto_approve[i]);
                if (r < 0)
                        return r;
                if (!c->auto_approve[i].argv)
                        return perr(p, ip, -EINVAL, "missing required key \"argv\"");
        }
        return 0;
}

static const char *const escalation_keys[] = { "enabled", "timeout_s", "auto_approve", NULL };

static int escalation_key(Parser *p, size_t which, json_object *v, const char *path, void *userdata) {
        Config *c = userdata;
        int64_t t;
        int r;

        switch (which) {
        case 0:
                return get_bool(p, v, path, &c->escalation_enabled);
        case 1:
                r = expect_type(p, v, path, json_type_int, "an integer number of seconds");
                if (r < 0)
                        return r;
                t = json_object_get_int64(v);
                if (t < 1 || t > ESCALATION_TIMEOUT_MAX)
                        return perr(p, path, -ERANGE, "%" PRIi64 " is out of range; use 1 to %d seconds", t, ESCALATION_TIMEOUT_MAX);
                c->escalation_timeout_s = (unsigned) t;
                return 0;
        case 2:
                return parse_auto_approve(p, v, path, c);
        }
        return -EINVAL;
}

static const char *const network_keys[] = { "allow", "deny", NULL };

static int network_key(Parser *p, size_t which, json_object *v, const char *path, void *userdata) {
        Config *c = userdata;
        return parse_cidr_list(p, v, path, which == 0 ? &c->allow : &c->deny);
}

/* --------------------------------------------------------------- runtime */

/*
 * The runsc binary Lazaret runs on the user's behalf: an absolute path
 * without symbolic links, to a regular executable file, that nobody but
 * root and the caller can swap: path_walk(PATH_WALK_TRUSTED) judges every
 * component by fd (owner, mode, POSIX ACL; sticky directories above it
 * allowed). (Where it lies relative to the workspace and volumes is checked
 * with the Domain, in domain_check_exposure().)
 */
static int check_runsc(Parser *p, const char *in, const char *path, char **ret) {
        static const char rule[] =
                "runsc and every directory above it must belong to root or to you and be writable by nobody else "
                "(a sticky directory such as /tmp excepted)";
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        _cleanup_free_ char *norm = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        r = parse_absolute_path(p, in, path, &norm);
        if (r < 0)
                return r;
        r = path_walk(norm, PATH_WALK_TRUSTED, &fd, &w);
        if (r == -ENOMEM)
                return OOM(p);
        if (r < 0) {
                _cleanup_free_ char *msg = NULL;

                path_walk_error(NULL, norm, &w, r, "the binary", rule, &msg);
                if (!msg)
                        return OOM(p);
                return perr(p, path, r, "%s", msg);
        }
        if (fstat(fd, &st) < 0)
                return perr(p, path, -errno, "\"%s\": %s", norm, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return perr(p, path, -EINVAL, "\"%s\" is not a regular file", norm);
        if (!(st.st_mode & 0111) || faccessat(fd, "", X_OK, AT_EMPTY_PATH) < 0)
                return perr(p, path, -EACCES, "\"%s\" is not executable", norm);
        *ret = TAKE_PTR(norm);
        return 0;
}

static const char *const runtime_keys[] = { "runsc", NULL };

static int runtime_key(Parser *p, size_t which, json_object *v, const char *path, void *userdata) {
        Config *c = userdata;
        _cleanup_free_ char *s = NULL;
        int r;

        r = get_string(p, v, path, false, &s);
        if (r < 0)
                return r;
        return check_runsc(p, s, path, &c->runsc);
}

/* -------------------------------------------------------------- top level */

typedef struct TopState {
        Config *config;
        char *data_root_raw;
} TopState;

static const char *const top_keys[] = { "data_root", "default_profile", "network", "escalation", "profiles", "runtime", NULL };

static int parse_profiles(Parser *p, json_object *v, const char *path, Config *c) {
        size_t n;
        int r;

        r = expect_type(p, v, path, json_type_object, "an object of profiles");
        if (r < 0)
                return r;
        n = (size_t) json_object_object_length(v);
        if (n > CONFIG_MAX_PROFILES)
                return perr(p, path, -E2BIG, "has %zu profiles, at most %d are allowed", n, CONFIG_MAX_PROFILES);
        c->profiles = calloc(n + 1, sizeof(Profile));  /* + the built-in default */
        if (!c->profiles)
                return OOM(p);

        json_object_object_foreach(v, name, val) {
                _cleanup_free_ char *kp = keypath_key(path, name, strlen(name));
                Profile *prof = &c->profiles[c->n_profiles];

                if (!kp)
                        return OOM(p);
                if (!profile_name_is_valid(name))
                        return perr(p, kp, -EINVAL,
                                    "invalid profile name; names are 2 to 32 characters of a-z, 0-9, '_' and '-'");
                c->n_profiles++;
                prof->name = strdup(name);
                if (!prof->name)
                        return OOM(p);
                prof->isolate_ignored = true;
                prof->directfs = true;
                limits_default(&prof->limits);
                r = parse_object_keys(p, val, kp, profile_keys, profile_key, prof);
                if (r < 0)
                        return r;
                if (!prof->image_raw)
                        return perr(p, kp, -EINVAL, "missing required key \"image\"");
        }
        return 0;
}

static int top_key(Parser *p, size_t which, json_object *v, const char *path, void *userdata) {
        TopState *st = userdata;
        Config *c = st->config;
        int r;

        switch (which) {
        case 0:
                r = get_string(p, v, path, false, &st->data_root_raw);
                if (r < 0)
                        return r;
                return check_host_template(p, st->data_root_raw, path, TOKEN_TILDE);
        case 1:
                r = get_string(p, v, path, false, &c->default_profile);
                if (r < 0)
                        return r;
                if (!profile_name_is_valid(c->default_profile))
                        return perr(p, path, -EINVAL, "\"%s\" is not a valid profile name", c->default_profile);
                return 0;
        case 2:
                return parse_object_keys(p, v, path, network_keys, network_key, c);
        case 3:
                return parse_object_keys(p, v, path, escalation_keys, escalation_key, c);
        case 4:
                return parse_profiles(p, v, path, c);
        case 5:
                return parse_object_keys(p, v, path, runtime_keys, runtime_key, c);
        }
        return -EINVAL;
}

static int profile_compare(const void *a, const void *b) {
        return strcmp(((const Profile *) a)->name, ((const Profile *) b)->name);
}

/*
 * The reserved topology belongs to Lazaret: allowing into it would reach the
 * helper's own addresses and canaries, and a deny at /23 or narrower would cut
 * them off. A broader deny is fine; the fixed routes are more specific.
 */
static int check_topology(Parser *p, const CidrList *l, const char *path, bool allow) {
        char b[CIDR_STRING_MAX], t[CIDR_STRING_MAX];

        for (size_t i = 0; i < l->n; i++) {
                _cleanup_free_ char *ip = keypath_index(path, i);
                if (!ip)
                        return OOM(p);
                if (allow && cidr_overlaps(&l->items[i], &cidr_reserved_topology))
                        return perr(p, ip, -EPERM, "\"%s\" overlaps %s, which is reserved for Lazaret's own network",
                                    cidr_to_string(&l->items[i], b), cidr_to_string(&cidr_reserved_topology, t));
                if (!allow && cidr_contains(&cidr_reserved_topology, &l->items[i]))
                        return perr(p, ip, -EPERM, "\"%s\" lies inside %s, which is reserved for Lazaret's own network",
                                    cidr_to_string(&l->items[i], b), cidr_to_string(&cidr_reserved_topology, t));
        }
        return 0;
}

/* SR-6: an allow and a deny of exactly the same prefix is a conflict. */
static int check_conflicts(Parser *p, const CidrList *allow, const char *allow_path,
                           const CidrList *deny, const char *deny_path, bool with_defaults) {
        char b[CIDR_STRING_MAX];

        for (size_t i = 0; i < allow->n; i++) {
                _cleanup_free_ char *ip = keypath_index(allow_path, i);
                if (!ip)
                        return OOM(p);
                if (with_defaults)
                        for (size_t j = 0; j < ELEMENTSOF(cidr_default_deny); j++)
                                if (cidr_equal(&allow->items[i], &cidr_default_deny[j]))
                                        return perr(p, ip, -EEXIST,
                                                    "\"%s\" is exactly a default-denied range; allow more specific prefixes inside it instead",
                                                    cidr_to_string(&allow->items[i], b));
                if (deny)
                        for (size_t j = 0; j < deny->n; j++)
                                if (cidr_equal(&allow->items[i], &deny->items[j]))
                                        return perr(p, ip, -EEXIST, "\"%s\" is also denied by %s[%zu]; an equal allow and deny is a conflict",
                                                    cidr_to_string(&allow->items[i], b), deny_path, j);
        }
        return 0;
}

static int config_validate_network(Parser *p, Config *c) {
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
                        return OOM(p);
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

static int fingerprint(Config *c) {
        _cleanup_free_ char *canon = NULL;
        int r;

        r = config_canonical_json(c, &canon);
        if (r < 0)
                return r;
        sha256_buf(canon, strlen(canon), c->fingerprint);
        return 0;
}

int config_parse(const char *text, size_t len, const char *filename, const ConfigEnv *env,
                 Config **ret, char **ret_error) {
        _cleanup_config_ Config *c = NULL;
        _cleanup_json_ json_object *root = NULL;
        Parser p = { .file = filename ?: "built-in configuration", .env = env };
        TopState st = {};

        int r;

        *ret_error = NULL;

        c = calloc(1, sizeof(Config));
        if (!c)
                return -ENOMEM;
        c->escalation_enabled = true;
        c->escalation_timeout_s = ESCALATION_TIMEOUT_DEFAULT;
        st.config = c;
        if (filename) {
                c->path = strdup(filename);
                if (!c->path)
                        return -ENOMEM;
        }

        if (text) {
                _cleanup_free_ char *why = NULL;

                r = json_parse_strict(text, len, &root, &why);
                if (r < 0) {
                        perr(&p, NULL, r, "%s", why ?: "invalid JSON");
                        goto fail;
                }
                r = parse_object_keys(&p, root, "", top_keys, top_key, &st);
                if (r < 0)
                        goto fail;
        }

        /* The built-in profile stays available unless a file redefines it. */
        if (!config_find_profile(c, BUILTIN_PROFILE_NAME)) {
                Profile *np = reallocarray(c->profiles, c->n_profiles + 1, sizeof(Profile));
                if (!np) {
                        r = -ENOMEM;
                        goto fail;
                }
                c->profiles = np;
                r = profile_builtin(&c->profiles[c->n_profiles]);
                c->n_profiles++;
                if (r < 0)
                        goto fail;
        }
        qsort(c->profiles, c->n_profiles, sizeof(Profile), profile_compare);

        if (!c->default_profile) {
                c->default_profile = strdup(BUILTIN_PROFILE_NAME);
                if (!c->default_profile) {
                        r = -ENOMEM;
                        goto fail;
                }
        } else if (!config_find_profile(c, c->default_profile)) {
                r = perr(&p, "default_profile", -ENOENT, "no profile named \"%s\" is defined", c->default_profile);
                goto fail;
        }

        r = config_validate_network(&p, c);
        if (r < 0)
                goto fail;

        /* data_root: "~" is the only expansion; the result is normalised. */
        {
                _cleanup_free_ char *expanded = NULL, *why = NULL;
                TokenContext tc = { .home = env->home };

                if (st.data_root_raw) {
                        r = tokens_expand(st.data_root_raw, TOKEN_TILDE, &tc, &expanded, &why);
                        if (r < 0) {
                                perr(&p, "data_root", r, "%s", why ?: "cannot expand");
                                goto fail;
                        }
                } else {
                        expanded = path_join(env->xdg_data_home, "lazaret");
                        if (!expanded) {
                                r = -ENOMEM;
                                goto fail;
                        }
                }
                /* Normalised, not resolved: a symbolic link on the way is refused when a
                 * Domain is validated (domain_check_sources()), naming the resolved path. */
                r = path_normalize(expanded, &c->data_root);
                if (r < 0) {
                        perr(&p, "data_root", r, "\"%s\" is not a valid path: %s", expanded, strerror(-r));
                        goto fail;
                }
                if (streq(c->data_root, "/")) {
                        r = perr(&p, "data_root", -EINVAL, "the file system root cannot be the data root");
                        goto fail;
                }
        }

        r = fingerprint(c);
        if (r < 0)
                goto fail;

        free(st.data_root_raw);
        *ret = TAKE_PTR(c);
        return 0;

fail:
        free(st.data_root_raw);
        if (r == -ENOMEM && !p.error)
                perr(&p, NULL, r, "out of memory");
        *ret_error = p.error;
        return r;
}

/* ------------------------------------------------------------ canonical */

static json_object *json_strv(char **l) {
        json_object *a = json_object_new_array();
        if (!a)
                return NULL;
        STRV_FOREACH(s, l)
                if (json_object_array_add(a, json_object_new_string(*s)) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

static json_object *json_cidrs(const CidrList *l) {
        json_object *a = json_object_new_array();
        char b[CIDR_STRING_MAX];
        if (!a)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                json_object_array_add(a, json_object_new_string(cidr_to_string(&l->items[i], b)));
        return a;
}

/* Keys sorted; bytes and counts as numbers, "infinity" as that string. */
static json_object *limits_json(const Limits *l) {
        static const char *const sorted[] = { "address_space", "cpu_weight", "memory_high", "memory_max", "processes",
                                              "tasks_max", "tmp_size", NULL };
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        for (size_t i = 0; sorted[i]; i++)
                for (size_t j = 0; limit_names[j]; j++)
                        if (streq(sorted[i], limit_names[j])) {
                                uint64_t v = limits_get(l, j);
                                json_object_object_add(o, sorted[i], v == LIMIT_INFINITY ? json_object_new_string("infinity")
                                                                                        : json_object_new_uint64(v));
                        }
        return o;
}

static int env_compare(const void *a, const void *b) {
        return strcmp(((const EnvEntry *) a)->name, ((const EnvEntry *) b)->name);
}

/*
 * The canonical encoding: JSON with every key present (defaults filled in),
 * object keys in byte order, no insignificant whitespace, strings as json-c
 * writes them with unescaped slashes. Profiles are keyed by name; env entries
 * by variable name; lists keep their configured order, which is meaningful.
 */
int config_canonical_json(const Config *c, char **ret) {
        _cleanup_json_ json_object *root = json_object_new_object();
        json_object *net, *esc, *rules, *profiles;
        char *s;

        if (!root)
                return -ENOMEM;

        /* Keys are added in sorted order at every level. */
        json_object_object_add(root, "data_root", json_object_new_string(c->data_root));
        json_object_object_add(root, "default_profile", json_object_new_string(c->default_profile));

        esc = json_object_new_object();
        rules = json_object_new_array();
        for (size_t i = 0; i < c->n_auto_approve; i++) {
                json_object *r = json_object_new_object();
                json_object_object_add(r, "argv", json_strv(c->auto_approve[i].argv));
                json_object_object_add(r, "program", c->auto_approve[i].program ? json_object_new_string(c->auto_approve[i].program) : NULL);
                json_object_object_add(r, "trailing_args", json_object_new_boolean(c->auto_approve[i].trailing_args));
                json_object_array_add(rules, r);
        }
        json_object_object_add(esc, "auto_approve", rules);
        json_object_object_add(esc, "enabled", json_object_new_boolean(c->escalation_enabled));
        json_object_object_add(esc, "timeout_s", json_object_new_int64(c->escalation_timeout_s));
        json_object_object_add(root, "escalation", esc);

        json_object_object_add(root, "format", json_object_new_string("lazaret-config/1"));

        net = json_object_new_object();
        json_object_object_add(net, "allow", json_cidrs(&c->allow));
        json_object_object_add(net, "deny", json_cidrs(&c->deny));
        json_object_object_add(root, "network", net);

        profiles = json_object_new_object();
        for (size_t i = 0; i < c->n_profiles; i++) {   /* already sorted */
                const Profile *prof = &c->profiles[i];
                json_object *o = json_object_new_object(), *env = json_object_new_object(), *vols = json_object_new_array();
                _cleanup_free_ EnvEntry *sorted = NULL;

                json_object_object_add(o, "allow_egress", json_cidrs(&prof->allow_egress));
                json_object_object_add(o, "command", prof->command ? json_strv(prof->command) : NULL);
                json_object_object_add(o, "deny_egress", json_cidrs(&prof->deny_egress));
                json_object_object_add(o, "directfs", json_object_new_boolean(prof->directfs));

                sorted = calloc(prof->n_env ?: 1, sizeof(EnvEntry));
                if (!sorted)
                        return -ENOMEM;
                memcpy(sorted, prof->env, prof->n_env * sizeof(EnvEntry));
                qsort(sorted, prof->n_env, sizeof(EnvEntry), env_compare);
                for (size_t j = 0; j < prof->n_env; j++) {
                        _cleanup_free_ char *v = NULL;
                        if (asprintf(&v, "%s%s", sorted[j].from_host ? "env:" : "", sorted[j].value) < 0)
                                return -ENOMEM;
                        json_object_object_add(env, sorted[j].name, json_object_new_string(v));
                }
                json_object_object_add(o, "env", env);
                json_object_object_add(o, "image", json_object_new_string(prof->image_raw));
                json_object_object_add(o, "isolate_ignored", json_object_new_boolean(prof->isolate_ignored));
                json_object_object_add(o, "limits", limits_json(&prof->limits));
                json_object_object_add(o, "persistent_dirs", json_strv(prof->persistent_dirs));
                for (size_t j = 0; j < prof->n_volumes; j++) {
                        json_object *v = json_object_new_object();
                        json_object_object_add(v, "container", json_object_new_string(prof->volumes[j].container));
                        json_object_object_add(v, "force", json_object_new_boolean(prof->volumes[j].force));
                        json_object_object_add(v, "host", json_object_new_string(prof->volumes[j].host));
                        json_object_object_add(v, "mode", json_object_new_string(volume_mode_to_string(prof->volumes[j].mode)));
                        json_object_array_add(vols, v);
                }
                json_object_object_add(o, "volumes", vols);
                json_object_object_add(profiles, prof->name, o);
        }
        json_object_object_add(root, "profiles", profiles);

        {
                json_object *rt = json_object_new_object();
                json_object_object_add(rt, "runsc", c->runsc ? json_object_new_string(c->runsc) : NULL);
                json_object_object_add(root, "runtime", rt);
        }

        s = strdup(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

const char *config_fingerprint_hex(const Config *c, char *buf) {
        hexify(c->fingerprint, SHA256_DIGEST_LEN, buf);
        return buf;
}

const char *volume_mode_to_string(VolumeMode m) {
        return m == VOLUME_RW ? "rw" : "ro";
}

/* ------------------------------------------------------------------ load */

int config_default_path(const HostContext *hc, char **ret) {
        char *j;

        if (hc->config_env) {
                j = strdup(hc->config_env);
                if (!j)
                        return -ENOMEM;
                *ret = j;
                return 1;       /* named by the environment: must exist */
        }
        if (!hc->xdg_config_home)
                return -ENXIO;
        j = path_join(hc->xdg_config_home, "lazaret/config.json");
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}

static int read_config_file(const char *path, char **ret, size_t *ret_len, mode_t *ret_mode, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n = 0;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return errorf(ret_error, -EINVAL, "%s: not a regular file", path);
        if (st.st_uid != getuid() && st.st_uid != 0)
                return errorf(ret_error, -EPERM, "%s: owned by UID %u, not by you; refusing to trust it", path, (unsigned) st.st_uid);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return errorf(ret_error, -EPERM, "%s: writable by group or others (mode %04o); run chmod go-w on it",
                              path, (unsigned) (st.st_mode & 07777));

        r = read_full_fd(fd, JSON_DOC_MAX_BYTES, &buf, &n);
        if (r == -EFBIG)
                return errorf(ret_error, r, "%s: larger than %d bytes", path, JSON_DOC_MAX_BYTES);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        *ret_mode = st.st_mode & 07777;
        return 0;
}

static int config_env(const HostContext *hc, ConfigEnv *ret, char **ret_error) {
        if (!hc->home)
                return errorf(ret_error, -ENXIO, "cannot determine the home directory: %s", strerror(ENXIO));
        if (!hc->xdg_data_home)
                return errorf(ret_error, -ENXIO, "cannot determine $XDG_DATA_HOME: %s", strerror(ENXIO));
        *ret = (ConfigEnv) { .home = hc->home, .xdg_data_home = hc->xdg_data_home };
        return 0;
}

int config_load_builtin(const HostContext *hc, Config **ret, char **ret_error) {
        ConfigEnv env;
        int r;

        *ret_error = NULL;
        r = config_env(hc, &env, ret_error);
        if (r < 0)
                return r;
        return config_parse(NULL, 0, NULL, &env, ret, ret_error);
}

int config_load(const HostContext *hc, const char *explicit_path, Config **ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL, *canon = NULL;
        bool must_exist;
        size_t len = 0;
        mode_t mode = 0;
        ConfigEnv env;
        Config *c = NULL;
        int r;

        *ret_error = NULL;

        r = config_env(hc, &env, ret_error);
        if (r < 0)
                return r;

        if (explicit_path) {
                path = strdup(explicit_path);
                if (!path)
                        return -ENOMEM;
                must_exist = true;
        } else {
                r = config_default_path(hc, &path);
                if (r < 0)
                        return r;
                must_exist = r > 0;
        }

        r = read_config_file(path, &text, &len, &mode, ret_error);
        if (r == -ENOENT && !must_exist)
                return config_parse(NULL, 0, NULL, &env, ret, ret_error);
        if (r < 0) {
                if (!*ret_error)
                        (void) !asprintf(ret_error, "%s: cannot read: %s", path, strerror(-r));
                return r;
        }

        /* Messages and the exposure check use the canonical path. */
        canon = realpath(path, NULL);
        if (!canon)
                return -errno;

        r = config_parse(text, len, canon, &env, &c, ret_error);
        if (r < 0)
                return r;
        c->mode = mode;         /* as opened: not looked up again by path */
        *ret = c;
        return 0;
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * A name that looks like it holds a secret: one of the words below anywhere
 * in it, or KEY/KEYS as a whole word ('_'-separated) or at its end (API_KEY,
 * SSH_KEYS, GPG_KEY_ID, apiKey); not KEYBOARD or XKB_KEYMAP, which would
 * warn for nothing. Case-insensitive.
 */
static bool name_looks_secret(const char *name) {
        static const char *const words[] = {
                "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTH",
        };
        char up[256];
        size_t i;

        for (i = 0; name[i] && i < sizeof(up) - 1; i++)
                up[i] = (char) (name[i] >= 'a' && name[i] <= 'z' ? name[i] - 'a' + 'A' : name[i]);
        up[i] = 0;
        for (size_t w = 0; w < ELEMENTSOF(words); w++)
                if (strstr(up, words[w]))
                        return true;
        for (const char *k = strstr(up, "KEY"); k; k = strstr(k + 1, "KEY")) {
                const char *e = k + 3 + (k[3] == 'S');
                bool starts = k == up || k[-1] == '_';

                if (*e == 0 || (starts && *e == '_'))
                        return true;
        }
        return false;
}

int config_literal_secrets(const Config *c, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;

        for (size_t p = 0; p < c->n_profiles; p++)
                for (size_t e = 0; e < c->profiles[p].n_env; e++) {
                        const EnvEntry *x = &c->profiles[p].env[e];
                        _cleanup_free_ char *s = NULL;

                        if (x->from_host || isempty(x->value) || !name_looks_secret(x->name))
                                continue;
                        if (asprintf(&s, "%s.%s", c->profiles[p].name, x->name) < 0 || strv_push(&l, s) < 0)
                                return -ENOMEM;
                        TAKE_PTR(s);
                }
        if (l)
                qsort(l, strv_length(l), sizeof(char *), strcmp_ptr);
        *ret = TAKE_PTR(l);
        return 0;
}
