/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: an Escalation Mailbox request, which a hostile sandbox
 * writes. Accepted means parsed and signed by the corpus key (32 bytes of
 * 0x11, the Session Anchor of the seed files); an accepted request must
 * format back to exactly the bytes read (Ed25519 signatures are
 * deterministic), so nothing is read that the signature did not cover.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "escalation-proto.h"
#include "fuzz.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t key[ESC_KEY_LEN], pub[ESC_KEY_LEN];
        EscRequest q = {};
        char *error = NULL, *again = NULL;
        size_t len;

        memset(key, 0x11, sizeof(key));
        esc_key_public(key, pub);
        if (esc_request_parse((const char *) data, size, &q, &error) < 0) {
                if (!error && size <= ESC_REQUEST_MAX)
                        abort();
                free(error);
                return 0;
        }
        if (error)
                abort();
        if (esc_request_verify((const char *) data, &q, pub)) {
                fuzz_accepted = true;
                if (esc_request_format(&q, key, &again, &len) < 0 || len != size || memcmp(again, data, size) != 0)
                        abort();
                free(again);
        }
        esc_request_done(&q);
        return 0;
}
