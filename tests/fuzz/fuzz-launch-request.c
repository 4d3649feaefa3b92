/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: the launch request the coordinator reads at startup. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "launch-request.h"
#include "path-util.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL, *err = NULL;
        LaunchRequest req = {};

        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;
        if (launch_request_parse(text, size, "fuzz", &req, &err) >= 0) {
                fuzz_accepted = true;
                /* Accepted means: a 64-digit fingerprint and, if any, an absolute path. */
                if (err || strlen(req.fingerprint) != SHA256_HEX_LEN || (req.config_path && !path_is_absolute(req.config_path)))
                        abort();
                launch_request_done(&req);
        } else if (!err && size <= 16384)
                abort();
        return 0;
}
