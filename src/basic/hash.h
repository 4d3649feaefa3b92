/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32
#define SHA256_HEX_LEN (SHA256_DIGEST_LEN * 2)

void sha256_buf(const void *data, size_t len, uint8_t ret[SHA256_DIGEST_LEN]);

/* Writes 2*len lowercase hex digits and a NUL into ret. */
void hexify(const uint8_t *data, size_t len, char *ret);
