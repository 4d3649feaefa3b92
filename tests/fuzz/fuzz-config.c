/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the configuration parser, from raw bytes to a validated Config
 * and its canonical encoding, then the resolution step. The same entry point serves libFuzzer
 * (-Dfuzz=true with CC=clang) and the corpus replay that every build runs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "fuzz.h"
#include "json-util.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const ConfigEnv env = { .home = "/home/fuzz", .xdg_data_home = "/home/fuzz/.local/share" };
        _cleanup_free_ char *text = NULL, *err = NULL, *canon = NULL;
        Config *c = NULL;

        if (size > JSON_DOC_MAX_BYTES + 16)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;

        if (config_parse(text, size, "fuzz.json", &env, &c, &err) >= 0) {
                /* Success must come with a complete, encodable configuration. */
                if (!c || err || c->resolved || !config_find_profile(c, c->default_profile))
                        abort();
                if (config_canonical_json(c, &canon) < 0 || !canon)
                        abort();
                /* Then the file-system step, as config_load() takes it: accepted only if both pass. */
                if (config_resolve(c, &err) >= 0) {
                        if (err || !c->resolved)
                                abort();
                        fuzz_accepted = true;
                } else if (!err || c->resolved)
                        /* A refusal must explain itself. */
                        abort();
                config_free(c);
        } else if (c || !err)
                /* Failure must explain itself and leave nothing behind. */
                abort();
        return 0;
}
