/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration's key tables on their own (config-parse.h): one
 * dispatcher for every object, one helper for arrays and one for objects of
 * named entries, on a small struct of this test's own.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config-parse.h"
#include "json-util.h"
#include "strv.h"

typedef struct Inner {
        bool flag;
} Inner;

typedef struct Thing {
        char *name;
        bool on;
        char **list;
        Inner inner;
} Thing;

static const ConfigStrvSpec list_spec = { .max = 2 };

static const ConfigKey inner_keys[] = {
        { "flag", config_parse_bool, offsetof(Inner, flag) },
        {}
};

static const ConfigKey thing_keys[] = {
        { "name",  config_parse_string, offsetof(Thing, name),  NULL,       CONFIG_KEY_REQUIRED },
        { "on",    config_parse_bool,   offsetof(Thing, on) },
        { "list",  config_parse_strv,   offsetof(Thing, list),  &list_spec },
        { "inner", config_parse_object, offsetof(Thing, inner), inner_keys },
        {}
};

static void thing_done(Thing *t) {
        free(t->name);
        strv_free(t->list);
}

/* Dispatches text into *t; returns the result, the message in *ret_error. */
static int dispatch(const char *text, Thing *t, char **ret_error) {
        _cleanup_json_ json_object *root = NULL;
        _cleanup_free_ char *why = NULL;
        ConfigParser p = { .file = "t.json" };
        int r;

        cr_assert_eq(json_parse_strict(text, strlen(text), &root, &why), 0, "%s: %s", text, why ?: "");
        *t = (Thing) {};
        r = config_dispatch(&p, root, "", thing_keys, t);
        *ret_error = p.error;
        cr_assert_eq(r < 0, !!p.error, "a result of %d came with message %s", r, strna(p.error));
        return r;
}

static void refused(const char *text, int want_r, const char *want) {
        _cleanup_free_ char *err = NULL;
        Thing t;
        int r;

        r = dispatch(text, &t, &err);
        thing_done(&t);
        cr_assert_eq(r, want_r, "%s: %d", text, r);
        cr_assert_str_eq(err, want, "%s", text);
}

Test(config_dispatch, fields_land_at_their_offsets) {
        _cleanup_free_ char *err = NULL;
        Thing t;

        cr_assert_eq(dispatch("{\"list\": [\"a\", \"b\"], \"inner\": {\"flag\": true}, \"name\": \"n\", \"on\": true}", &t, &err), 0,
                     "%s", err);
        cr_assert_str_eq(t.name, "n");
        cr_assert(t.on);
        cr_assert_eq(strv_length(t.list), 2);
        cr_assert_str_eq(t.list[1], "b");
        cr_assert(t.inner.flag);
        thing_done(&t);

        /* Keys left out keep what the caller put there. */
        cr_assert_eq(dispatch("{\"name\": \"n\"}", &t, &err), 0);
        cr_assert_not(t.on);
        cr_assert_null(t.list);
        cr_assert_not(t.inner.flag);
        thing_done(&t);
}

Test(config_dispatch, unknown_key_lists_the_known_ones) {
        refused("{\"name\": \"n\", \"nmae\": \"n\"}", -EINVAL, "t.json: nmae: unknown key (known keys here: name, on, list, inner)");
        refused("{\"name\": \"n\", \"inner\": {\"flg\": true}}", -EINVAL, "t.json: inner.flg: unknown key (known keys here: flag)");
        refused("{\"name\": \"n\", \"odd key\": 1}", -EINVAL, "t.json: [\"odd key\"]: unknown key (known keys here: name, on, list, inner)");
}

/* json_parse_strict() refuses duplicates first; a tree built otherwise meets the dispatcher's own check. */
Test(config_dispatch, duplicate_key) {
        _cleanup_json_ json_object *root = json_object_new_object(), *inner = json_object_new_object();
        ConfigParser p = { .file = "t.json" };
        Thing t = {};

        cr_assert_not_null(root);
        cr_assert_not_null(inner);
        cr_assert_eq(json_object_object_add(root, "name", json_object_new_string("n")), 0);
        cr_assert_eq(json_object_object_add_ex(root, "on", json_object_new_boolean(true), JSON_C_OBJECT_ADD_KEY_IS_NEW), 0);
        cr_assert_eq(json_object_object_add_ex(root, "on", json_object_new_boolean(false), JSON_C_OBJECT_ADD_KEY_IS_NEW), 0);
        cr_assert_eq(json_object_object_length(root), 3, "json-c merged the keys: the test proves nothing");
        cr_assert_eq(config_dispatch(&p, root, "", thing_keys, &t), -EEXIST);
        cr_assert_str_eq(p.error, "t.json: on: duplicate key");
        cr_assert(t.on, "the second value was parsed");
        thing_done(&t);
        free(p.error);

        /* The same at a nested path. */
        p = (ConfigParser) { .file = "t.json" };
        t = (Thing) {};
        cr_assert_eq(json_object_object_add_ex(inner, "flag", json_object_new_boolean(true), JSON_C_OBJECT_ADD_KEY_IS_NEW), 0);
        cr_assert_eq(json_object_object_add_ex(inner, "flag", json_object_new_boolean(true), JSON_C_OBJECT_ADD_KEY_IS_NEW), 0);
        cr_assert_eq(config_dispatch(&p, inner, "profiles.dev.inner", inner_keys, &t.inner), -EEXIST);
        cr_assert_str_eq(p.error, "t.json: profiles.dev.inner.flag: duplicate key");
        free(p.error);
}

Test(config_dispatch, wrong_types) {
        refused("[]", -EINVAL, "t.json: expected an object, got an array");
        refused("{\"name\": 1}", -EINVAL, "t.json: name: expected a string, got an integer");
        refused("{\"name\": \"n\", \"on\": \"yes\"}", -EINVAL, "t.json: on: expected true or false, got a string");
        refused("{\"name\": \"n\", \"list\": \"a\"}", -EINVAL, "t.json: list: expected an array of strings, got a string");
        refused("{\"name\": \"n\", \"list\": [\"a\", 2]}", -EINVAL, "t.json: list[1]: expected a string, got an integer");
        refused("{\"name\": \"n\", \"list\": [\"a\", \"b\", \"c\"]}", -E2BIG, "t.json: list: has 3 entries, at most 2 are allowed");
        refused("{\"name\": \"n\", \"inner\": []}", -EINVAL, "t.json: inner: expected an object, got an array");
        refused("{\"name\": \"n\", \"inner\": {\"flag\": 1.5}}", -EINVAL, "t.json: inner.flag: expected true or false, got a number");
        refused("{\"name\": \"\"}", -EINVAL, "t.json: name: must not be empty");
}

Test(config_dispatch, null_is_refused) {
        refused("{\"name\": null}", -EINVAL, "t.json: name: null is not a valid value; omit the key to use the default");
        refused("{\"name\": \"n\", \"inner\": {\"flag\": null}}", -EINVAL, "t.json: inner.flag: null is not a valid value; omit the key to use the default");
}

Test(config_dispatch, required_key_missing) {
        refused("{}", -EINVAL, "t.json: missing required key \"name\"");
        refused("{\"on\": true, \"list\": [\"a\"]}", -EINVAL, "t.json: missing required key \"name\"");
        /* A key's own error comes before the missing one. */
        refused("{\"on\": 1}", -EINVAL, "t.json: on: expected true or false, got an integer");
}

Test(config_dispatch, first_error_is_kept) {
        ConfigParser p = { .file = "t.json" };

        cr_assert_eq(config_error(&p, "a", -EINVAL, "first %d", 1), -EINVAL);
        cr_assert_eq(config_error(&p, "b", -EPERM, "second"), -EPERM);
        cr_assert_str_eq(p.error, "t.json: a: first 1");
        free(p.error);
}

/* --------------------------------------------------------------- shapes */

typedef struct Item {
        char *name;
        bool on;
} Item;

static const ConfigKey item_keys[] = {
        { "name", config_parse_string, offsetof(Item, name), NULL, CONFIG_KEY_REQUIRED },
        { "on",   config_parse_bool,   offsetof(Item, on) },
        {}
};

static int item_parse(ConfigParser *p, json_object *v, const char *path, void *items, size_t i, void *userdata) {
        Item *l = items;
        int r;

        r = config_dispatch(p, v, path, item_keys, &l[i]);
        if (r < 0)
                return r;
        for (size_t j = 0; j < i; j++)
                if (streq(l[j].name, l[i].name))
                        return config_error(p, path, -EEXIST, "\"%s\" is items[%zu] already", l[i].name, j);
        return 0;
}

static int entry_parse(ConfigParser *p, const char *key, json_object *v, const char *path, void *item, void *userdata) {
        Item *it = item;

        it->name = strdup(key);
        if (!it->name)
                return config_oom(p);
        return config_parse_bool(p, v, path, &it->on, NULL);
}

static void items_free(Item *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(l[i].name);
        free(l);
}

static int shape(const char *text, bool map, Item **items, size_t *n, char **ret_error) {
        _cleanup_json_ json_object *root = NULL;
        _cleanup_free_ char *why = NULL;
        ConfigParser p = { .file = "t.json" };
        int r;

        cr_assert_eq(json_parse_strict(text, strlen(text), &root, &why), 0, "%s: %s", text, why ?: "");
        *items = NULL;
        *n = 0;
        if (map)
                r = config_parse_map(&p, root, "things", "an object of things", "things", 2, sizeof(Item),
                                     (void **) items, n, entry_parse, NULL);
        else
                r = config_parse_array(&p, root, "things", "an array of thing objects", 2, sizeof(Item),
                                       (void **) items, n, item_parse, NULL);
        *ret_error = p.error;
        return r;
}

Test(config_shapes, array_of_objects) {
        _cleanup_free_ char *err = NULL;
        Item *l;
        size_t n;

        cr_assert_eq(shape("[{\"name\": \"a\"}, {\"name\": \"b\", \"on\": true}]", false, &l, &n, &err), 0, "%s", err);
        cr_assert_eq(n, 2);
        cr_assert_str_eq(l[1].name, "b");
        cr_assert(l[1].on);
        items_free(l, n);

        cr_assert_eq(shape("[]", false, &l, &n, &err), 0);
        cr_assert_eq(n, 0);
        cr_assert_not_null(l, "an empty array is an empty list, not an absent one");
        items_free(l, n);

        cr_assert_eq(shape("{}", false, &l, &n, &err), -EINVAL);
        cr_assert_str_eq(err, "t.json: things: expected an array of thing objects, got an object");
        items_free(l, n);
        free(err);
        cr_assert_eq(shape("[{}, {}, {}]", false, &l, &n, &err), -E2BIG);
        cr_assert_str_eq(err, "t.json: things: has 3 entries, at most 2 are allowed");
        items_free(l, n);
        free(err);
        cr_assert_eq(shape("[{\"name\": \"a\"}, \"b\"]", false, &l, &n, &err), -EINVAL);
        cr_assert_str_eq(err, "t.json: things[1]: expected an object, got a string");
        items_free(l, n);
        free(err);
        cr_assert_eq(shape("[{\"name\": \"a\"}, {\"on\": true}]", false, &l, &n, &err), -EINVAL);
        cr_assert_str_eq(err, "t.json: things[1]: missing required key \"name\"");
        items_free(l, n);
        free(err);
        err = NULL;

        /* Entries are counted before they are parsed: the half-parsed one is the owner's to free. */
        cr_assert_eq(shape("[{\"name\": \"a\"}, {\"name\": \"a\"}]", false, &l, &n, &err), -EEXIST);
        cr_assert_str_eq(err, "t.json: things[1]: \"a\" is items[0] already");
        cr_assert_eq(n, 2);
        cr_assert_str_eq(l[1].name, "a");
        items_free(l, n);
}

Test(config_shapes, object_of_named_entries) {
        _cleanup_free_ char *err = NULL;
        Item *l;
        size_t n;

        cr_assert_eq(shape("{\"a\": true, \"b\": false}", true, &l, &n, &err), 0, "%s", err);
        cr_assert_eq(n, 2);
        cr_assert_str_eq(l[0].name, "a");
        cr_assert(l[0].on);
        cr_assert_str_eq(l[1].name, "b");
        items_free(l, n);

        cr_assert_eq(shape("[]", true, &l, &n, &err), -EINVAL);
        cr_assert_str_eq(err, "t.json: things: expected an object of things, got an array");
        items_free(l, n);
        free(err);
        cr_assert_eq(shape("{\"a\": true, \"b\": true, \"c\": true}", true, &l, &n, &err), -E2BIG);
        cr_assert_str_eq(err, "t.json: things: has 3 things, at most 2 are allowed");
        items_free(l, n);
        free(err);
        cr_assert_eq(shape("{\"a\": true, \"b c\": 1}", true, &l, &n, &err), -EINVAL);
        cr_assert_str_eq(err, "t.json: things[\"b c\"]: expected true or false, got an integer");
        cr_assert_eq(n, 2);
        items_free(l, n);
}
