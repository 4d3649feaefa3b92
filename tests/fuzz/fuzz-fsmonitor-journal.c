/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the fsmonitor hook's reading of the workspace view's change
 * journal (fsmon_header_parse(), fsmon_scan(), src/codec/fsmonitor-proto.c),
 * a whole journal file per input. The sandbox reads the file the view
 * writes, so the view is the only writer, but the hook must stay in bounds
 * on any bytes: every path it passes on lies within the input, holds no
 * NUL, the end and the unwatched offset it reports lie within what it read,
 * and the token it would give parses back to the same numbers. Accepted:
 * a header and records that answer with paths rather than "everything".
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsmonitor-proto.h"
#include "fuzz.h"

bool fuzz_accepted = false;

typedef struct Bounds {
        const char *lo, *hi;
} Bounds;

static void emit(const char *path, size_t len, bool dir, void *userdata) {
        const Bounds *b = userdata;

        (void) dir;
        if (path < b->lo || path + len > b->hi || memchr(path, 0, len))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const prefixes[] = { "", "a/", "a/b/" };
        const char *body = (const char *) data + FSMON_HEADER_SIZE;
        uint64_t instance;

        fuzz_accepted = false;
        if (fsmon_header_parse((const char *) data, size, &instance) < 0)
                return 0;
        for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
                size_t n = size - FSMON_HEADER_SIZE;
                Bounds b = { body, body + n };
                char token[FSMON_TOKEN_MAX];
                uint64_t i, o, f;
                FsmonScan s;

                /* The last one with a token in the middle: what comes before it only counts as unwatched. */
                if (fsmon_scan(body, n, FSMON_HEADER_SIZE, FSMON_HEADER_SIZE + (k == 2 ? n / 2 : 0), prefixes[k], emit, &b,
                               &s) < 0)
                        abort();
                if (s.end > FSMON_HEADER_SIZE + n || s.unwatched_from > s.end || s.unwatched_from < FSMON_HEADER_SIZE ||
                    s.n_unwatched > FSMON_UNWATCHED_MAX)
                        abort();
                fsmon_token_format(instance, s.end, s.unwatched_from, token, sizeof(token));
                if (fsmon_token_parse(token, &i, &o, &f) < 0 || i != instance || o != s.end || f != s.unwatched_from)
                        abort();
                if (k == 0)
                        fuzz_accepted = !s.trivial;
        }
        return 0;
}
