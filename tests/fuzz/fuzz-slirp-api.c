/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the coordinator's reader of slirp4netns' API answers
 * (slirp_api_parse_add_reply() and slirp_api_parse_remove_reply(),
 * src/config/port-forward.c), one answer per input. An accepted add_hostfwd
 * answer names an ID in 1..INT32_MAX; an "error" answer's description is
 * printable ASCII only, at most 200 bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "port-forward.h"

bool fuzz_accepted = false;

static void check_desc(const char *d) {
        if (!d || strlen(d) > 200)
                abort();
        for (; *d; d++)
                if (*d < 0x20 || *d >= 0x7f)
                        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *desc = NULL;
        int r, id = 0;

        fuzz_accepted = false;
        r = slirp_api_parse_add_reply((const char *) data, size, &id, &desc);
        if (r == 1 && (id < 1 || desc))
                abort();
        if (r == 0)
                check_desc(desc);
        fuzz_accepted = r >= 0;
        free(desc);
        desc = NULL;
        r = slirp_api_parse_remove_reply((const char *) data, size, &desc);
        if (r == 0)
                check_desc(desc);
        fuzz_accepted = fuzz_accepted || r >= 0;
        free(desc);
        return 0;
}
