/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: a repository's packed-refs as git-refs.c reads it (the
 * sandbox writes the file: refs are shared), and the record the coordinator
 * keeps of what it read (git_refs_to_json(), read back by lazaretctl). What
 * is taken must be a valid name and object name, within the bounds, and
 * must come back from its record unchanged. Accepted: at least one ref.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "git-refs.h"
#include "json-util.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(git_refs_done) GitRefs r = {}, back = {};
        _cleanup_json_ json_object *o = NULL, *again = NULL;
        _cleanup_free_ char *text = malloc(size + 1), *json = NULL;
        int64_t taken = 0;

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;
        if (git_packed_refs_parse(text, size, &r) < 0)
                abort();
        git_refs_sort(&r);
        if (r.n > GIT_REFS_MAX || r.name_bytes > GIT_REFS_NAMES_MAX)
                abort();
        for (size_t i = 0; i < r.n; i++) {
                if (!git_ref_name_is_valid(r.refs[i].name) || strncmp(r.refs[i].name, "refs/", 5) != 0 ||
                    !git_oid_is_valid(r.refs[i].oid))
                        abort();
                if (i > 0 && strcmp(r.refs[i - 1].name, r.refs[i].name) >= 0)
                        abort();
                if (git_refs_find(&r, r.refs[i].name) != &r.refs[i])
                        abort();
        }
        /* The record, and back: the same refs. Mixed object name lengths are refused by the reader. */
        if (git_refs_to_json(&r, 42, &o) < 0 || json_to_string(o, JSON_C_TO_STRING_PLAIN, &json) < 0)
                abort();
        if (json_parse_strict(json, strlen(json), &again, NULL) < 0)
                abort();
        int k = git_refs_from_json(again, &back, &taken);
        bool mixed = false;
        for (size_t i = 1; i < r.n; i++)
                mixed |= strlen(r.refs[i].oid) != strlen(r.refs[0].oid);
        if (mixed ? k != -EBADMSG : k < 0)
                abort();
        if (k >= 0) {
                if (taken != 42 || back.n != r.n || back.cut != r.cut)
                        abort();
                for (size_t i = 0; i < r.n; i++)
                        if (strcmp(back.refs[i].name, r.refs[i].name) != 0 || strcmp(back.refs[i].oid, r.refs[i].oid) != 0)
                                abort();
        }
        fuzz_accepted = r.n > 0;
        return 0;
}
