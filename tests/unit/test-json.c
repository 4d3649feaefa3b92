/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "json-util.h"
#include "runsc-output.h"

#define SHOWN(len) ((int) ((len) > 200 ? 200 : (len)))

/* Refused with exactly this error and message (line, column, key path, what). */
static void refused_n(const char *text, size_t len, int error, const char *message) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        int r = json_parse_strict(text, len, &o, &err);
        cr_assert_eq(r, error, "%.*s: got %d (%s), expected %d", SHOWN(len), text, r, err ?: "no message", error);
        cr_assert_null(o);
        cr_assert_str_eq(err, message, "%.*s", SHOWN(len), text);
}

static void refused(const char *text, int error, const char *message) {
        refused_n(text, strlen(text), error, message);
}

static json_object *accepted_n(const char *text, size_t len) {
        json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(json_parse_strict(text, len, &o, &err), 0, "%.*s: %s", SHOWN(len), text, err ?: "");
        cr_assert_null(err);
        cr_assert_not_null(o);
        return o;
}

static json_object *accepted(const char *text) {
        return accepted_n(text, strlen(text));
}

Test(json, relaxed_dialect_accepted) {
        _cleanup_json_ json_object *o =
                accepted("{ // line comment\n \"a\": [1, 2,], /* block */ \"b\": {\"c\": true,}, }\n// end\n");
        json_object *a;
        cr_assert(json_object_is_type(o, json_type_object));
        cr_assert(json_object_object_get_ex(o, "a", &a));
        cr_assert_eq(json_object_array_length(a), 2);
        cr_assert_eq(json_object_object_length(o), 2);
}

Test(json, duplicates_named_with_path_line_and_column) {
        refused("{\"a\": 1,\n \"a\": 2}", -EEXIST, "line 2, column 2: a: duplicate key");
        refused("{\"p\": {\"dev\": {\"image\": \"x\",\n\n  \"image\": \"y\"}}}", -EEXIST, "line 3, column 3: p.dev.image: duplicate key");
        refused("{\"l\": [{}, {\"k\": 1, \"k\": 1}]}", -EEXIST, "line 1, column 21: l[1].k: duplicate key");
        /* Escapes are decoded before comparing. */
        refused("{\"ab\": 1, \"a\\u0062\": 2}", -EEXIST, "line 1, column 11: ab: duplicate key");
        refused("{\"odd key\": 1, \"odd key\": 2}", -EEXIST, "line 1, column 16: [\"odd key\"]: duplicate key");
}

Test(json, distinct_keys_in_different_objects_are_fine) {
        _cleanup_json_ json_object *o =
                accepted("{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}, \"c\": [{\"x\": 1}, {\"x\": 2}], \"x \": 3, \"X\": 4}");
        cr_assert_eq(json_object_object_length(o), 5);
}

/* Many keys: looked up in json-c's hash table, not compared pairwise; the last one repeats the first. */
Test(json, many_keys) {
        const size_t n = 50000;
        _cleanup_free_ char *t = malloc(n * 24 + 32);
        size_t k = 0;

        cr_assert_not_null(t);
        t[k++] = '{';
        for (size_t i = 0; i < n; i++)
                k += (size_t) sprintf(t + k, "\"k%zu\": %zu,\n", i, i);
        t[k] = '}';
        _cleanup_json_ json_object *o = accepted_n(t, k + 1);
        cr_assert_eq(json_object_object_length(o), (int) n);
        k += (size_t) sprintf(t + k, "\"k0\": 0}");
        refused_n(t, k, -EEXIST, "line 50001, column 1: k0: duplicate key");
}

Test(json, garbage_refused) {
        refused("{\"a\": 1} x", -EINVAL, "line 1, column 10: unexpected text after the top-level value");
        refused("{\"a\": 1}\n\n  {}", -EINVAL, "line 3, column 3: unexpected text after the top-level value");
        refused("{\"a\": ", -EINVAL, "line 1, column 7: a: document is empty or incomplete");
        refused("", -EINVAL, "line 1, column 1: document is empty or incomplete");
        refused(" // nothing\n", -EINVAL, "line 2, column 1: document is empty or incomplete");
        refused("null", -EINVAL, "line 1, column 1: the document is null");
        refused("{\"a\" 1}", -EINVAL, "line 1, column 6: a: invalid JSON: expected ':' after the key");
        refused("[1 2]", -EINVAL, "line 1, column 4: invalid JSON: expected ',' or ']'");
        refused("{\"a\": 1 \"b\": 2}", -EINVAL, "line 1, column 9: invalid JSON: expected ',' or '}'");
        refused("[1,,2]", -EINVAL, "line 1, column 4: [1]: invalid JSON: expected a value");
        refused("[,]", -EINVAL, "line 1, column 2: [0]: invalid JSON: expected a value");
        refused("{,}", -EINVAL, "line 1, column 2: invalid JSON: expected a key in double quotes or '}'");
        refused("{\"a\": 1,,}", -EINVAL, "line 1, column 9: invalid JSON: expected a key in double quotes or '}'");
        refused("[\"abc", -EINVAL, "line 1, column 2: [0]: invalid JSON: unterminated string");
        refused("1 /* open", -EINVAL, "line 1, column 3: invalid JSON: unterminated comment");
        refused("1 / 2", -EINVAL, "line 1, column 3: unexpected text after the top-level value");
}

/* Nothing but what lazaret.conf(5) documents: json-c's other relaxations are refused. */
Test(json, json_c_relaxations_refused) {
        refused("{'a': 1}", -EINVAL, "line 1, column 2: invalid JSON: expected a key in double quotes or '}'");
        refused("['a']", -EINVAL, "line 1, column 2: [0]: invalid JSON: expected a value");
        refused("[NaN]", -EINVAL, "line 1, column 2: [0]: invalid JSON: expected a value");
        refused("[-Infinity]", -EINVAL, "line 1, column 3: [0]: invalid JSON: expected a digit");
        refused("[TRUE]", -EINVAL, "line 1, column 2: [0]: invalid JSON: expected a value");
        refused("[truex]", -EINVAL, "line 1, column 2: [0]: invalid JSON: expected a value");
        refused("[nul]", -EINVAL, "line 1, column 2: [0]: invalid JSON: expected a value");
        refused("[01]", -EINVAL, "line 1, column 2: [0]: invalid JSON: a number with a leading zero");
        refused("[+1]", -EINVAL, "line 1, column 2: [0]: invalid JSON: expected a value");
        refused("[1.]", -EINVAL, "line 1, column 4: [0]: invalid JSON: expected a digit after the decimal point");
        refused("[.5]", -EINVAL, "line 1, column 2: [0]: invalid JSON: expected a value");
        refused("[1e]", -EINVAL, "line 1, column 4: [0]: invalid JSON: expected a digit in the exponent");
        refused("[0x10]", -EINVAL, "line 1, column 3: invalid JSON: expected ',' or ']'");
        refused("[\"a\tb\"]", -EINVAL, "line 1, column 4: [0]: invalid JSON: control character 0x09 in a string (write it as an escape)");
        refused("[\"a\nb\"]", -EINVAL, "line 1, column 4: [0]: invalid JSON: control character 0x0a in a string (write it as an escape)");
        refused("[\"\\x41\"]", -EINVAL, "line 1, column 3: [0]: invalid JSON: invalid escape in a string");
        refused("[\"\\u12\"]", -EINVAL, "line 1, column 3: [0]: invalid JSON: invalid escape in a string");
        refused("[\"\\", -EINVAL, "line 1, column 3: [0]: invalid JSON: invalid escape in a string");
}

/* json-c clamps integers it cannot hold; they are refused instead. */
Test(json, numbers) {
        _cleanup_json_ json_object *o =
                accepted("[9223372036854775807, -9223372036854775808, 18446744073709551615, -0, 1.5e3, 0.25, 1e-400]");
        cr_assert(json_object_is_type(json_object_array_get_idx(o, 0), json_type_int));
        cr_assert_eq(json_object_get_int64(json_object_array_get_idx(o, 0)), INT64_MAX);
        cr_assert_eq(json_object_get_int64(json_object_array_get_idx(o, 1)), INT64_MIN);
        cr_assert_eq(json_object_get_uint64(json_object_array_get_idx(o, 2)), UINT64_MAX);
        cr_assert_eq(json_object_get_int64(json_object_array_get_idx(o, 3)), 0);
        cr_assert(json_object_is_type(json_object_array_get_idx(o, 4), json_type_double));
        cr_assert_float_eq(json_object_get_double(json_object_array_get_idx(o, 4)), 1500.0, 1e-9);
        cr_assert_float_eq(json_object_get_double(json_object_array_get_idx(o, 5)), 0.25, 1e-12);
        /* Written back as it was read. */
        cr_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                         "[9223372036854775807,-9223372036854775808,18446744073709551615,0,1.5e3,0.25,1e-400]");

        refused("[18446744073709551616]", -ERANGE, "line 1, column 2: [0]: integer out of range");
        refused("{\"n\":\n -9223372036854775809}", -ERANGE, "line 2, column 2: n: integer out of range");
        refused("[1e999]", -ERANGE, "line 1, column 2: [0]: number out of range");
}

Test(json, strings_decoded) {
        _cleanup_json_ json_object *o = accepted("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20AC\\ud83d\\ude00\", \"caf\xc3\xa9\", \"\", true, false, null]");
        json_object *s = json_object_array_get_idx(o, 0);
        cr_assert_eq(json_object_get_string_len(s), 8 + 2 + 3 + 4);
        cr_assert_eq(memcmp(json_object_get_string(s), "\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 17), 0);
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(o, 1)), "caf\xc3\xa9");
        cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(o, 2)), "");
        cr_assert(json_object_get_boolean(json_object_array_get_idx(o, 3)));
        cr_assert(json_object_is_type(json_object_array_get_idx(o, 4), json_type_boolean));
        cr_assert(!json_object_get_boolean(json_object_array_get_idx(o, 4)));
        cr_assert_null(json_object_array_get_idx(o, 5));
        cr_assert_eq(json_object_array_length(o), 6);
}

/* 32 nested objects and arrays are fine, 33 are not. */
Test(json, nesting_limit) {
        char t[2 * JSON_MAX_DEPTH + 3], path[3 * JSON_MAX_DEPTH + 1] = "", message[256];
        size_t k = 0;

        for (int i = 0; i < JSON_MAX_DEPTH; i++)
                t[k++] = '[';
        for (int i = 0; i < JSON_MAX_DEPTH; i++)
                t[k++] = ']';
        json_object_put(accepted_n(t, k));

        k = 0;
        for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
                t[k++] = '[';
        for (int i = 0; i < JSON_MAX_DEPTH + 1; i++)
                t[k++] = ']';
        for (int i = 0; i < JSON_MAX_DEPTH; i++)
                strcat(path, "[0]");
        snprintf(message, sizeof(message), "line 1, column 33: %s: nesting deeper than 32 levels", path);
        refused_n(t, k, -E2BIG, message);
        refused("{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":"
                "{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}",
                -E2BIG,
                "line 1, column 161: a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a: nesting deeper than 32 levels");
}

Test(json, size_limit) {
        _cleanup_free_ char *t = malloc(JSON_DOC_MAX_BYTES + 1);
        cr_assert_not_null(t);
        memset(t, 'a', JSON_DOC_MAX_BYTES + 1);
        t[0] = '"';
        t[JSON_DOC_MAX_BYTES - 1] = '"';
        json_object_put(accepted_n(t, JSON_DOC_MAX_BYTES));
        t[JSON_DOC_MAX_BYTES - 1] = 'a';
        t[JSON_DOC_MAX_BYTES] = '"';
        refused_n(t, JSON_DOC_MAX_BYTES + 1, -EFBIG, "document is larger than 1048576 bytes");
}

Test(json, nul_byte_refused) {
        static const char a[] = "{\"a\": 1}\0", b[] = "[\"a\0b\"]", c[] = "[1, /* \0 */ 2]", d[] = "\0";
        refused_n(a, sizeof(a) - 1, -EINVAL, "line 1, column 9: NUL byte in document");
        refused_n(b, sizeof(b) - 1, -EINVAL, "line 1, column 4: [0]: NUL byte in document");
        refused_n(c, sizeof(c) - 1, -EINVAL, "line 1, column 8: NUL byte in document");
        refused_n(d, sizeof(d) - 1, -EINVAL, "line 1, column 1: NUL byte in document");
}

/*
 * json-c keeps keys as C strings: "dev\u0000a" and "dev\u0000b" would both be
 * "dev" to it, and the later would silently win. Refused at the escape, the
 * whole key named with \x00.
 */
Test(json, nul_in_keys_refused) {
        refused("{\"profiles\":{\"dev\\u0000a\":{\"image\":\"builtin:default\"},\"dev\\u0000b\":{\"image\":\"oci:/evil\"}}}", -EDOM,
                "line 1, column 18: profiles[\"dev\\x00a\"]: key contains a NUL character (\\u0000)");
        refused("{\"data_root\":\"/a\",\n\"data_root\\u0000x\":\"/b\"}", -EDOM,
                "line 2, column 11: [\"data_root\\x00x\"]: key contains a NUL character (\\u0000)");
        refused("{\"\\u0000\": 1}", -EDOM, "line 1, column 3: [\"\\x00\"]: key contains a NUL character (\\u0000)");
}

Test(json, nul_in_strings_refused) {
        refused("{\"a\": \"x\\u0000y\"}", -EDOM, "line 1, column 9: a: string contains a NUL character (\\u0000)");
        refused("{\"l\": [\"ok\",\n \"\\u0000\"]}", -EDOM, "line 2, column 3: l[1]: string contains a NUL character (\\u0000)");
        refused("\"\\u0000\"", -EDOM, "line 1, column 2: string contains a NUL character (\\u0000)");
}

/* json-c turns every unpaired surrogate into U+FFFD: distinct escapes, one key. */
Test(json, unpaired_surrogates_refused) {
        refused("{\"\\ud800\": 1, \"\\udc00\": 2}", -EILSEQ,
                "line 1, column 3: [\"\\xed\\xa0\\x80\"]: key contains an unpaired UTF-16 surrogate escape");
        refused("{\"a\": \"\\udfff\"}", -EILSEQ, "line 1, column 8: a: string contains an unpaired UTF-16 surrogate escape");
        refused("{\"a\": \"x\\ud800\\u0041\"}", -EILSEQ, "line 1, column 9: a: string contains an unpaired UTF-16 surrogate escape");
        refused("[\"\\ud800\"]", -EILSEQ, "line 1, column 3: [0]: string contains an unpaired UTF-16 surrogate escape");
}

/* Columns count characters, not bytes. */
Test(json, invalid_utf8_refused) {
        refused("[\"\xc3\"]", -EILSEQ, "line 1, column 3: [0]: invalid UTF-8 in a string");
        refused("[\"\xc0\xaf\"]", -EILSEQ, "line 1, column 3: [0]: invalid UTF-8 in a string");          /* overlong "/" */
        refused("[\"\xe0\x9f\xbf\"]", -EILSEQ, "line 1, column 3: [0]: invalid UTF-8 in a string");      /* overlong U+07FF */
        refused("[\"\xf0\x8f\xbf\xbf\"]", -EILSEQ, "line 1, column 3: [0]: invalid UTF-8 in a string");  /* overlong U+FFFF */
        refused("[\"\xed\xa0\x80\"]", -EILSEQ, "line 1, column 3: [0]: invalid UTF-8 in a string");      /* a surrogate */
        refused("[\"\xf4\x90\x80\x80\"]", -EILSEQ, "line 1, column 3: [0]: invalid UTF-8 in a string");  /* past U+10FFFF */
        refused("[\"\xe2\x82\"]", -EILSEQ, "line 1, column 3: [0]: invalid UTF-8 in a string");
        refused("[\"\xc3\xa9\xe2\x82\xac\", \"\xff\"]", -EILSEQ, "line 1, column 9: [1]: invalid UTF-8 in a string");
        refused("{\"a\xff\": 1}", -EILSEQ, "line 1, column 4: invalid UTF-8 in a string");
        refused("// caf\xc3\xa9 \xff\n1", -EILSEQ, "line 1, column 9: invalid UTF-8 in a comment");
        refused("\xef\xbb\xbf{}", -EINVAL, "line 1, column 1: invalid JSON: expected a value");
}

Test(json, surrogate_pairs_and_trailing_commas_fine) {
        _cleanup_json_ json_object *o = accepted("{\"\\ud83d\\ude00\": [1, 2,], \"\\u00e9\": {\"x\": 1,},}");
        json_object *v;
        cr_assert(json_object_object_get_ex(o, "\xf0\x9f\x98\x80", &v));
        cr_assert_eq(json_object_array_length(v), 2);
        cr_assert(json_object_object_get_ex(o, "\xc3\xa9", NULL));
}

Test(json, keypaths) {
        _cleanup_free_ char *a = keypath_key("", "profiles", 8), *b = keypath_key("profiles", "dev", 3),
                            *c = keypath_index("volumes", 2), *d = keypath_key("p", "a.b", 3),
                            *e = keypath_key("p", "q\"\n", 3), *f = keypath_key(NULL, "caf\xc3\xa9\xff", 6),
                            *g = keypath_index(NULL, 0);
        cr_assert_str_eq(a, "profiles");
        cr_assert_str_eq(b, "profiles.dev");
        cr_assert_str_eq(c, "volumes[2]");
        cr_assert_str_eq(d, "p[\"a.b\"]");
        cr_assert_str_eq(e, "p[\"q\\\"\\x0a\"]");
        cr_assert_str_eq(f, "[\"caf\xc3\xa9\\xff\"]");
        cr_assert_str_eq(g, "[0]");
}

/* What the supervisor reads from `runsc wait`, through the same reader. */
Test(json, runsc_wait_status) {
        static const struct {
                const char *text;
                int r, status;
                const char *error;
        } cases[] = {
                { "{\"id\":\"lazaret-0123456789ab-1\",\"exitStatus\":0}\n", 0, 0, NULL },
                { "{\"id\":\"x\",\"exitStatus\":137}", 0, 137, NULL },
                { "{\"exitStatus\":255}", 0, 255, NULL },
                { "", -EINVAL, 0, "runsc wait: line 1, column 1: document is empty or incomplete" },
                { "{\"id\":\"x\",\"exitStatus\":1", -EINVAL, 0, "runsc wait: line 1, column 25: document is empty or incomplete" },
                { "{\"exitStatus\":256}", -ERANGE, 0, "runsc wait: exit status 256 is not one a process can have" },
                { "{\"exitStatus\":-1}", -ERANGE, 0, "runsc wait: exit status -1 is not one a process can have" },
                { "{\"exitStatus\":\"0\"}", -EBADMSG, 0, "runsc wait: no integer \"exitStatus\" in its answer" },
                { "{\"exitStatus\":1.0}", -EBADMSG, 0, "runsc wait: no integer \"exitStatus\" in its answer" },
                { "{\"id\":\"\\\"exitStatus\\\":0\"}", -EBADMSG, 0, "runsc wait: no integer \"exitStatus\" in its answer" },
                { "[{\"exitStatus\":0}]", -EBADMSG, 0, "runsc wait: no integer \"exitStatus\" in its answer" },
                { "{\"exitStatus\":0,\"exitStatus\":1}", -EEXIST, 0, "runsc wait: line 1, column 17: exitStatus: duplicate key" },
                { "{\"exitStatus\":0} {\"exitStatus\":1}", -EINVAL, 0,
                  "runsc wait: line 1, column 18: unexpected text after the top-level value" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_free_ char *err = NULL;
                int status = -1;
                int r = runsc_wait_status(cases[i].text, strlen(cases[i].text), &status, &err);
                cr_assert_eq(r, cases[i].r, "%s: %d (%s)", cases[i].text, r, err ?: "");
                if (r >= 0) {
                        cr_assert_eq(status, cases[i].status, "%s", cases[i].text);
                        cr_assert_null(err);
                } else {
                        cr_assert_eq(status, -1);
                        cr_assert_str_eq(err, cases[i].error, "%s", cases[i].text);
                }
        }
}

/* What the reader would refuse to read back is not written either. */
Test(json, builders_refuse_invalid_utf8) {
        _cleanup_json_ json_object *o = json_object_new_object(), *a = json_object_new_array(), *l = NULL;
        static const char *const strv[] = { "ok", "caf\xe9", NULL };

        cr_assert_eq(json_add_string(o, "w", "/home/u/caf\xe9"), -EILSEQ);
        cr_assert_eq(json_add_string(o, "w", "/home/u/\xed\xa0\x80"), -EILSEQ);
        cr_assert_eq(json_append_string(a, "\xc3"), -EILSEQ);
        cr_assert_eq(json_new_strv(strv, &l), -EILSEQ);
        cr_assert_null(l);
        cr_assert_eq(json_add_strv(o, "l", strv), -EILSEQ);
        cr_assert_eq(json_add_string(o, "caf\xe9", "ok"), -EILSEQ);
        cr_assert_eq(json_add_null(o, "\xc3"), -EILSEQ);
        cr_assert_eq(json_add(o, "\xff", json_object_new_array()), -EILSEQ);
        cr_assert_eq(json_object_object_length(o), 0);
        cr_assert_eq(json_object_array_length(a), 0);
        cr_assert_eq(json_add_string(o, "w", "/home/u/caf\xc3\xa9"), 0);
        cr_assert_eq(json_append_string(a, "\xf0\x9f\x98\x80"), 0);
        cr_assert_eq(json_add_null(o, "n"), 0);
        cr_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), "{\"w\":\"\\/home\\/u\\/caf\xc3\xa9\",\"n\":null}");
}

Test(json, utf8_validity_and_escape) {
        _cleanup_free_ char *a = utf8_escape_invalid("caf\xc3\xa9 ok"), *b = utf8_escape_invalid("x\xff\xc3(\x01\x7f\xe2\x82\xac");

        cr_assert(utf8_is_valid("caf\xc3\xa9 \xe2\x82\xac"));
        cr_assert_not(utf8_is_valid("caf\xe9"));
        cr_assert_not(utf8_is_valid("\xc0\xaf"));             /* overlong */
        cr_assert_not(utf8_is_valid("\xed\xa0\x80"));        /* surrogate */
        cr_assert_str_eq(a, "caf\xc3\xa9 ok");
        cr_assert_str_eq(b, "x\\xff\\xc3(\\x01\\x7f\xe2\x82\xac");
}

/* A caller that needs no reason may pass NULL for it (lazaretctl escalations history reads each argv so). */
Test(json, parse_without_a_reason) {
        json_object *o = NULL;

        cr_assert_eq(json_parse_strict("[\"a\"]", 5, &o, NULL), 0);
        cr_assert_not_null(o);
        json_object_put(o);
        o = NULL;
        cr_assert_lt(json_parse_strict("[\"a\",", 5, &o, NULL), 0);
        cr_assert_null(o);
        cr_assert_lt(json_parse_strict("{} x", 4, &o, NULL), 0);
        cr_assert_null(o);
}
