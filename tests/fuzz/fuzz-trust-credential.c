/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the credential a request carries, which the sandbox can
 * replace with any bytes. Only the host reads it (trust_anchor_verify());
 * accepted means issued by the corpus CA for exactly the corpus session's
 * binding, and then the certified key must be the corpus Session Anchor's.
 */
#include <stdlib.h>
#include <string.h>

#include "escalation-proto.h"
#include "fuzz-corpus-key.h"
#include "fuzz.h"
#include "trust-anchor.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static TrustAnchor *ta;
        static const TrustBinding want = {
                .role = TRUST_ROLE_SESSION,
                .profile = CORPUS_PROFILE,
                .domain = CORPUS_DOMAIN,
                .generation = CORPUS_GENERATION,
                .component = CORPUS_SESSION,
        };
        uint8_t key[ESC_KEY_LEN], pub[ESC_KEY_LEN], got[ESC_KEY_LEN];
        char *error = NULL;
        int r;

        if (!ta) {
                memset(key, CORPUS_CA_KEY_BYTE, sizeof(key));
                if (trust_anchor_new_from_key(CORPUS_DOMAIN, CORPUS_GENERATION, key, &ta, NULL) < 0)
                        abort();
        }
        r = trust_anchor_verify(ta, data, size, &want, got, &error);
        if (r < 0)
                abort();                /* only out of memory */
        fuzz_accepted = r == TRUST_OK;
        if ((r == TRUST_OK) != !error)
                abort();
        free(error);
        if (fuzz_accepted) {
                memset(key, CORPUS_SESSION_KEY_BYTE, sizeof(key));
                esc_key_public(key, pub);
                if (memcmp(pub, got, sizeof(pub)) != 0)
                        abort();
        }
        return 0;
}
