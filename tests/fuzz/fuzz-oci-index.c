/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the reading of an OCI image layout's index.json
 * (oci_index_digest(), src/runtime/oci-image.c), third-party content, for the
 * tag "latest". Accepted means a sha256 digest of 64 lowercase hex digits and
 * no message; a refusal must explain itself and return nothing.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "json-util.h"
#include "oci-image.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL, *digest = NULL, *err = NULL;

        if (size > JSON_DOC_MAX_BYTES)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;
        if (oci_index_digest(text, size, "latest", &digest, &err) >= 0) {
                fuzz_accepted = true;
                if (err || !digest || strlen(digest) != 64 || strspn(digest, "0123456789abcdef") != 64)
                        abort();
        } else if (!err || digest)
                abort();
        return 0;
}
