/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the one JSON reader every document Lazaret reads goes
 * through (configuration, launch request, Domain record, OCI image index and
 * config, runsc's output). What it accepts, json-c writes back, and the
 * reader must accept that text again and read the same tree from it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "json-util.h"
#include "macro.h"

bool fuzz_accepted = false;

static const int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_json_ json_object *o = NULL, *again = NULL;
        _cleanup_free_ char *err = NULL, *text = NULL, *text2 = NULL;
        int r;

        if (size > JSON_DOC_MAX_BYTES + 16)
                return 0;
        r = json_parse_strict((const char *) data, size, &o, &err);
        if (r < 0) {
                /* A refusal says where, except for size and memory. */
                if (o || (r != -ENOMEM && !err) ||
                    (err && size <= JSON_DOC_MAX_BYTES && (strncmp(err, "line ", 5) != 0 || !strstr(err, ", column "))))
                        abort();
                return 0;
        }
        fuzz_accepted = true;
        if (err || !o)
                abort();

        /* json-c's output is read back to the same tree. */
        if (json_to_string(o, flags, &text) < 0)
                return 0;
        free(err);
        err = NULL;
        if (json_parse_strict(text, strlen(text), &again, &err) < 0) {
                if (strlen(text) > JSON_DOC_MAX_BYTES)
                        return 0;
                abort();
        }
        if (!json_object_equal(o, again) || json_to_string(again, flags, &text2) < 0 || !streq(text, text2))
                abort();
        return 0;
}
