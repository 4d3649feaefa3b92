/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The egress parsers' test vectors: the real captures of the fuzz seed
 * corpora (tests/fuzz/make-egress-corpus), read from the source tree
 * (LAZARET_EGRESS_CORPUS, set by meson).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs-util.h"

static inline uint8_t *vector_load(const char *kind, const char *name, size_t *ret_len) {
        const char *dir = getenv("LAZARET_EGRESS_CORPUS");
        char *path = NULL, *buf = NULL;
        int r;

        cr_assert_not_null(dir, "LAZARET_EGRESS_CORPUS is not set");
        cr_assert_geq(asprintf(&path, "%s/%s/%s", dir, kind, name), 0);
        r = read_full_file(path, 1 << 20, &buf, ret_len);
        cr_assert_eq(r, 0, "%s: %s", path, strerror(-r));
        free(path);
        return (uint8_t *) buf;
}
