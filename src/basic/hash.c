/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <nettle/sha2.h>

#include "hash.h"

void sha256_buf(const void *data, size_t len, uint8_t ret[SHA256_DIGEST_LEN]) {
        struct sha256_ctx ctx;

        sha256_init(&ctx);
        sha256_update(&ctx, len, data);
        sha256_digest(&ctx, SHA256_DIGEST_LEN, ret);
}

void hexify(const uint8_t *data, size_t len, char *ret) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < len; i++) {
                ret[2 * i] = digits[data[i] >> 4];
                ret[2 * i + 1] = digits[data[i] & 15];
        }
        ret[2 * len] = 0;
}
