/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The canonical encoding of a Config, which the fingerprint is taken over
 * (lazaret.conf(5), FINGERPRINT): JSON with every key present (defaults
 * filled in), object keys in byte order, no insignificant white space.
 * Written by hand in a fixed key order, not by a JSON library's serialiser,
 * so that the bytes are ours: strings are escaped as json-c 0.x writes them
 * with JSON_C_TO_STRING_NOSLASHESCAPE ("\"", "\\", \b \f \n \r \t, other
 * control characters as \u00xx in lower case, everything else as is), which
 * keeps the fingerprints of earlier releases.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "hash.h"
#include "macro.h"
#include "strv.h"
#include "util.h"

#define ENCODER_DEPTH_MAX 8

typedef struct Encoder {
        char *buf;
        size_t len, size;
        bool oom;
        size_t depth;
        bool first[ENCODER_DEPTH_MAX];          /* nothing written yet at this level */
        bool array[ENCODER_DEPTH_MAX];          /* this level is an array: values need separators */
} Encoder;

static void put(Encoder *e, const char *s, size_t n) {
        if (e->oom)
                return;
        if (e->len + n + 1 > e->size) {
                size_t size = e->size ?: 4096;
                char *b;

                while (size < e->len + n + 1)
                        size *= 2;
                b = realloc(e->buf, size);
                if (!b) {
                        e->oom = true;
                        return;
                }
                e->buf = b;
                e->size = size;
        }
        memcpy(e->buf + e->len, s, n);
        e->len += n;
        e->buf[e->len] = 0;
}

static void puts_(Encoder *e, const char *s) {
        put(e, s, strlen(s));
}

/* Before a value: inside an array, a comma after the first. */
static void value_prefix(Encoder *e) {
        if (e->depth == 0 || !e->array[e->depth - 1])
                return;
        if (!e->first[e->depth - 1])
                put(e, ",", 1);
        e->first[e->depth - 1] = false;
}

/* The body of a JSON string, escaped as json-c does (see the top of this file). */
static void escape(Encoder *e, const char *s) {
        static const char hex[] = "0123456789abcdef";
        const char *run = s;

        for (const char *c = s; *c; c++) {
                unsigned char u = (unsigned char) *c;
                const char *esc;
                char ubuf[7];

                switch (u) {
                case '"':  esc = "\\\""; break;
                case '\\': esc = "\\\\"; break;
                case '\b': esc = "\\b"; break;
                case '\f': esc = "\\f"; break;
                case '\n': esc = "\\n"; break;
                case '\r': esc = "\\r"; break;
                case '\t': esc = "\\t"; break;
                default:
                        if (u >= 0x20)
                                continue;
                        memcpy(ubuf, "\\u00", 4);
                        ubuf[4] = hex[u >> 4];
                        ubuf[5] = hex[u & 0xf];
                        ubuf[6] = 0;
                        esc = ubuf;
                }
                put(e, run, (size_t) (c - run));
                puts_(e, esc);
                run = c + 1;
        }
        puts_(e, run);
}

static void string_raw(Encoder *e, const char *s) {
        put(e, "\"", 1);
        escape(e, s);
        put(e, "\"", 1);
}

static void enc_string(Encoder *e, const char *s) {
        value_prefix(e);
        string_raw(e, s);
}

static void enc_string_or_null(Encoder *e, const char *s) {
        value_prefix(e);
        if (s)
                string_raw(e, s);
        else
                puts_(e, "null");
}

static void enc_bool(Encoder *e, bool b) {
        value_prefix(e);
        puts_(e, b ? "true" : "false");
}

static void enc_uint(Encoder *e, uint64_t u) {
        char b[24];

        value_prefix(e);
        snprintf(b, sizeof(b), "%" PRIu64, u);
        puts_(e, b);
}

static void open_level(Encoder *e, const char *bracket, bool array) {
        value_prefix(e);
        puts_(e, bracket);
        if (e->depth >= ENCODER_DEPTH_MAX) {   /* the encoding below is shallower: a bug, reported as a failure */
                e->oom = true;
                return;
        }
        e->first[e->depth] = true;
        e->array[e->depth] = array;
        e->depth++;
}

static void close_level(Encoder *e, const char *bracket) {
        if (e->depth > 0)
                e->depth--;
        puts_(e, bracket);
}

#define enc_object_begin(e) open_level(e, "{", false)
#define enc_object_end(e) close_level(e, "}")
#define enc_array_begin(e) open_level(e, "[", true)
#define enc_array_end(e) close_level(e, "]")

/* An object key; the caller writes keys in byte order. */
static void enc_key(Encoder *e, const char *key) {
        if (e->depth > 0) {
                if (!e->first[e->depth - 1])
                        put(e, ",", 1);
                e->first[e->depth - 1] = false;
        }
        string_raw(e, key);
        put(e, ":", 1);
}

static void enc_strv(Encoder *e, char *const *l) {
        enc_array_begin(e);
        for (char *const *s = l; s && *s; s++)
                enc_string(e, *s);
        enc_array_end(e);
}

static void enc_cidrs(Encoder *e, const CidrList *l) {
        char b[CIDR_STRING_MAX];

        enc_array_begin(e);
        for (size_t i = 0; i < l->n; i++)
                enc_string(e, cidr_to_string(&l->items[i], b));
        enc_array_end(e);
}

/* A limit: bytes and counts as numbers, "infinity" as that string. */
static void enc_limit(Encoder *e, const char *key, uint64_t v) {
        enc_key(e, key);
        if (v == LIMIT_INFINITY)
                enc_string(e, "infinity");
        else
                enc_uint(e, v);
}

static void enc_limits(Encoder *e, const Limits *l) {
        enc_object_begin(e);
        enc_limit(e, "address_space", l->address_space);
        enc_limit(e, "cpu_weight", l->cpu_weight);
        enc_limit(e, "memory_high", l->memory_high);
        enc_limit(e, "memory_max", l->memory_max);
        enc_limit(e, "processes", l->processes);
        enc_limit(e, "root_size", l->root_size);
        enc_limit(e, "tasks_max", l->tasks_max);
        enc_limit(e, "tmp_size", l->tmp_size);
        enc_object_end(e);
}

static int env_compare(const void *a, const void *b) {
        return strcmp((*(const EnvEntry *const *) a)->name, (*(const EnvEntry *const *) b)->name);
}

/* Keyed by variable name, in byte order; a host variable as "env:NAME", as written. */
static int enc_env(Encoder *e, const Profile *prof) {
        _cleanup_free_ const EnvEntry **sorted = calloc(prof->n_env ?: 1, sizeof(EnvEntry *));

        if (!sorted)
                return -ENOMEM;
        for (size_t i = 0; i < prof->n_env; i++)
                sorted[i] = &prof->env[i];
        qsort(sorted, prof->n_env, sizeof(EnvEntry *), env_compare);

        enc_object_begin(e);
        for (size_t i = 0; i < prof->n_env; i++) {
                enc_key(e, sorted[i]->name);
                put(e, "\"", 1);
                if (sorted[i]->from_host)
                        puts_(e, "env:");
                escape(e, sorted[i]->value);
                put(e, "\"", 1);
        }
        enc_object_end(e);
        return 0;
}

static void enc_volumes(Encoder *e, const Profile *prof) {
        enc_array_begin(e);
        for (size_t i = 0; i < prof->n_volumes; i++) {
                const Volume *v = &prof->volumes[i];

                enc_object_begin(e);
                enc_key(e, "container");
                enc_string(e, v->container);
                enc_key(e, "force");
                enc_bool(e, v->force);
                enc_key(e, "host");
                enc_string(e, v->host);
                enc_key(e, "mode");
                enc_string(e, volume_mode_to_string(v->mode));
                enc_object_end(e);
        }
        enc_array_end(e);
}

static int enc_profile(Encoder *e, const Profile *prof) {
        int r;

        enc_object_begin(e);
        enc_key(e, "allow_egress");
        enc_cidrs(e, &prof->allow_egress);
        /* Only when set, canonical: the fingerprints of configurations without host rules stay. */
        if (prof->allow_hosts && prof->allow_hosts[0]) {
                enc_key(e, "allow_hosts");
                enc_strv(e, prof->allow_hosts);
        }
        enc_key(e, "command");
        if (prof->command)
                enc_strv(e, prof->command);
        else
                enc_string_or_null(e, NULL);
        enc_key(e, "deny_egress");
        enc_cidrs(e, &prof->deny_egress);
        enc_key(e, "directfs");
        enc_bool(e, prof->directfs);
        enc_key(e, "env");
        r = enc_env(e, prof);
        if (r < 0)
                return r;
        /* Only when off: the fingerprints of earlier configurations stay. */
        if (!prof->git_fsmonitor) {
                enc_key(e, "git_fsmonitor");
                enc_bool(e, false);
        }
        enc_key(e, "image");
        enc_string(e, prof->image_raw);
        enc_key(e, "isolate_ignored");
        enc_bool(e, prof->isolate_ignored);
        enc_key(e, "limits");
        enc_limits(e, &prof->limits);
        enc_key(e, "persistent_dirs");
        enc_strv(e, prof->persistent_dirs);
        if (strv_length(prof->protected_paths) > 0) {
                /* Only when set, so that the fingerprints of earlier configurations stay. */
                enc_key(e, "protected_paths");
                enc_strv(e, prof->protected_paths);
        }
        /* Only when set, as "HOST_PORT:PORT" each: earlier fingerprints stay. */
        if (prof->n_publish_ports > 0) {
                enc_key(e, "publish_ports");
                enc_array_begin(e);
                for (size_t i = 0; i < prof->n_publish_ports; i++) {
                        char b[PORT_FORWARD_STRING_MAX];

                        port_forward_format(&prof->publish_ports[i], b);
                        enc_string(e, b);
                }
                enc_array_end(e);
        }
        /* Only when set: the fingerprints of configurations without it stay as they were. */
        if (prof->shared_ignored && prof->shared_ignored[0]) {
                enc_key(e, "shared_ignored");
                enc_strv(e, prof->shared_ignored);
        }
        enc_key(e, "volumes");
        enc_volumes(e, prof);
        enc_object_end(e);
        return 0;
}

static void enc_escalation(Encoder *e, const Config *c) {
        enc_object_begin(e);
        enc_key(e, "auto_approve");
        enc_array_begin(e);
        for (size_t i = 0; i < c->n_auto_approve; i++) {
                const AutoApproveRule *rule = &c->auto_approve[i];

                enc_object_begin(e);
                enc_key(e, "argv");
                enc_strv(e, rule->argv);
                enc_key(e, "program");
                enc_string_or_null(e, rule->program);
                enc_key(e, "trailing_args");
                enc_bool(e, rule->trailing_args);
                enc_object_end(e);
        }
        enc_array_end(e);
        enc_key(e, "enabled");
        enc_bool(e, c->escalation_enabled);
        enc_key(e, "timeout_s");
        enc_uint(e, c->escalation_timeout_s);
        enc_object_end(e);
}

/*
 * Profiles are keyed by name (c->profiles is sorted), env entries by variable
 * name; lists keep their configured order, which is meaningful.
 */
int config_canonical_json(const Config *c, char **ret) {
        _cleanup_free_ char *buf = NULL;
        Encoder e = {};
        int r;

        enc_object_begin(&e);
        enc_key(&e, "data_root");
        enc_string(&e, c->data_root);
        enc_key(&e, "default_profile");
        enc_string(&e, c->default_profile);
        enc_key(&e, "escalation");
        enc_escalation(&e, c);
        enc_key(&e, "format");
        enc_string(&e, "lazaret-config/1");
        enc_key(&e, "network");
        enc_object_begin(&e);
        enc_key(&e, "allow");
        enc_cidrs(&e, &c->allow);
        enc_key(&e, "deny");
        enc_cidrs(&e, &c->deny);
        enc_object_end(&e);
        enc_key(&e, "profiles");
        enc_object_begin(&e);
        for (size_t i = 0; i < c->n_profiles; i++) {
                enc_key(&e, c->profiles[i].name);
                r = enc_profile(&e, &c->profiles[i]);
                if (r < 0) {
                        free(e.buf);
                        return r;
                }
        }
        enc_object_end(&e);
        enc_key(&e, "runtime");
        enc_object_begin(&e);
        enc_key(&e, "runsc");
        enc_string_or_null(&e, c->runsc);
        enc_object_end(&e);
        enc_object_end(&e);

        buf = e.buf;
        if (e.oom || !buf)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

const char *config_fingerprint_hex(const Config *c, char *buf) {
        hexify(c->fingerprint, SHA256_DIGEST_LEN, buf);
        return buf;
}
