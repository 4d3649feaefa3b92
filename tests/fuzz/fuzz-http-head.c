/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the HTTP/1.x request-head reader (http_head_parse(),
 * src/egress/http-head.c) on the first bytes of a plain-HTTP connection.
 * Its verdict is one of the documented ones; the host it reads is a
 * normalised host name; the head alone gives the same reading.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "http-head.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char norm[DNS_NAME_TEXT_MAX + 1], *why = NULL;
        HttpHead h, h2;
        int r;

        fuzz_accepted = false;
        r = http_head_parse(data, size, &h, &why);
        if (r != 0 && r != -EAGAIN && r != -ENOMSG && r != -EBADMSG && r != -E2BIG)
                abort();
        if (r < 0 && r != -EAGAIN && !why)
                abort();
        free(why);
        if (r < 0)
                return 0;
        fuzz_accepted = true;
        if (h.length > size || h.length > HTTP_HEAD_MAX || !h.method[0])
                abort();
        if (host_name_normalize(h.host, strlen(h.host), 0, norm, NULL) != 0 || strcmp(norm, h.host) != 0)
                abort();
        if (http_head_parse(data, h.length, &h2, NULL) != 0 || memcmp(&h, &h2, sizeof h) != 0)
                abort();
        return 0;
}
