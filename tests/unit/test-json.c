/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "json-util.h"

static void parse_fails(const char *text, const char *needle) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_lt(json_parse_strict(text, strlen(text), &o, &err), 0, "should fail: %s", text);
        cr_assert_null(o);
        cr_assert_not_null(err);
        cr_assert_not_null(strstr(err, needle), "message \"%s\" lacks \"%s\"", err, needle);
}

Test(json, relaxed_dialect_accepted) {
        const char *t = "{ // line comment\n \"a\": [1, 2,], /* block */ \"b\": {\"c\": true,}, }\n// end\n";
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(json_parse_strict(t, strlen(t), &o, &err), 0, "%s", err ?: "");
        cr_assert(json_object_is_type(o, json_type_object));
}

Test(json, duplicates_named_with_path_and_line) {
        parse_fails("{\"a\": 1,\n \"a\": 2}", "line 2: a: duplicate key");
        parse_fails("{\"p\": {\"dev\": {\"image\": \"x\",\n\n \"image\": \"y\"}}}", "line 3: p.dev.image: duplicate key");
        parse_fails("{\"l\": [{}, {\"k\": 1, \"k\": 1}]}", "l[1].k: duplicate key");
        /* Escapes are decoded before comparing. */
        parse_fails("{\"ab\": 1, \"a\\u0062\": 2}", "duplicate key");
        parse_fails("{\"odd key\": 1, \"odd key\": 2}", "[\"odd key\"]: duplicate key");
}

Test(json, distinct_keys_in_different_objects_are_fine) {
        const char *t = "{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}, \"c\": [{\"x\": 1}, {\"x\": 2}]}";
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(json_parse_strict(t, strlen(t), &o, &err), 0, "%s", err ?: "");
}

Test(json, garbage_refused) {
        parse_fails("{\"a\": 1} x", "unexpected text after the top-level value");
        parse_fails("{\"a\": 1} {}", "unexpected text");
        parse_fails("{\"a\": ", "incomplete");
        parse_fails("", "empty or incomplete");
        parse_fails("{\"a\" 1}", "invalid JSON");
        parse_fails("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", "");
}

Test(json, nul_byte_refused) {
        const char t[] = "{\"a\": 1}\0";
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        cr_assert_lt(json_parse_strict(t, sizeof(t) - 1, &o, &err), 0);
        cr_assert_not_null(strstr(err, "NUL"));
}

/*
 * json-c keeps keys as C strings: "dev\u0000a" and "dev\u0000b" would both be
 * "dev" to it, and the later would silently win. Refused, key named with \x00.
 */
Test(json, nul_in_keys_refused) {
        parse_fails("{\"profiles\":{\"dev\\u0000a\":{\"image\":\"builtin:default\"},\"dev\\u0000b\":{\"image\":\"oci:/evil\"}}}",
                    "line 1: profiles[\"dev\\x00a\"]: key contains a NUL character (\\u0000)");
        parse_fails("{\"data_root\":\"/a\",\n\"data_root\\u0000x\":\"/b\"}",
                    "line 2: [\"data_root\\x00x\"]: key contains a NUL character (\\u0000)");
        parse_fails("{\"\\u0000\": 1}", "[\"\\x00\"]: key contains a NUL character");
        parse_fails("{'a\\u0000': 1}", "[\"a\\x00\"]: key contains a NUL character");
}

Test(json, nul_in_strings_refused) {
        parse_fails("{\"a\": \"x\\u0000y\"}", "line 1: a: string contains a NUL character (\\u0000)");
        parse_fails("{\"l\": [\"ok\",\n \"\\u0000\"]}", "line 2: l[1]: string contains a NUL character");
        parse_fails("\"\\u0000\"", "line 1: string contains a NUL character");
}

/* json-c turns every unpaired surrogate into U+FFFD: distinct escapes, one key. */
Test(json, unpaired_surrogates_refused) {
        parse_fails("{\"\\ud800\": 1, \"\\udc00\": 2}", "key contains an unpaired UTF-16 surrogate escape");
        parse_fails("{\"a\": \"\\udfff\"}", "a: string contains an unpaired UTF-16 surrogate escape");
        parse_fails("{\"a\": \"\\ud800\\u0041\"}", "a: string contains an unpaired UTF-16 surrogate escape");
}

Test(json, surrogate_pairs_and_trailing_commas_fine) {
        const char *t = "{\"\\ud83d\\ude00\": [1, 2,], \"\\u00e9\": {\"x\": 1,},}";
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        json_object *v;
        cr_assert_eq(json_parse_strict(t, strlen(t), &o, &err), 0, "%s", err ?: "");
        cr_assert(json_object_object_get_ex(o, "\xf0\x9f\x98\x80", &v));
        cr_assert_eq(json_object_array_length(v), 2);
        cr_assert(json_object_object_get_ex(o, "\xc3\xa9", NULL));
}

Test(json, keypaths) {
        _cleanup_free_ char *a = keypath_key("", "profiles", 8), *b = keypath_key("profiles", "dev", 3),
                            *c = keypath_index("volumes", 2), *d = keypath_key("p", "a.b", 3),
                            *e = keypath_key("p", "q\"\n", 3);
        cr_assert_str_eq(a, "profiles");
        cr_assert_str_eq(b, "profiles.dev");
        cr_assert_str_eq(c, "volumes[2]");
        cr_assert_str_eq(d, "p[\"a.b\"]");
        cr_assert_str_eq(e, "p[\"q\\\"\\x0a\"]");
}
