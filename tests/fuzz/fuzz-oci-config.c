/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the reading of an unpacked image's config.json
 * (oci_bundle_process(), src/runtime/oci-image.c), whose process.env and
 * process.args come from the image's own configuration, third-party
 * content. Accepted means at most 256 entries each, every environment entry
 * NAME=VALUE with a name and none of Lazaret's own (LAZARET_*), and no
 * message; a refusal must explain itself and return nothing.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "json-util.h"
#include "oci-image.h"
#include "strv.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL, *err = NULL;
        _cleanup_strv_free_ char **env = NULL, **cmd = NULL;

        if (size > JSON_DOC_MAX_BYTES)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;
        if (oci_bundle_process(text, size, &env, &cmd, &err) >= 0) {
                fuzz_accepted = true;
                if (err || strv_length(env) > 256 || strv_length(cmd) > 256)
                        abort();
                for (char **e = env; e && *e; e++)
                        if (!strchr(*e, '=') || (*e)[0] == '=' || strncmp(*e, "LAZARET_", 8) == 0)
                                abort();
        } else if (!err || env || cmd)
                abort();
        return 0;
}
