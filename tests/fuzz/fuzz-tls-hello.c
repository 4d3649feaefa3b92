/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the TLS ClientHello reader (tls_hello_parse(),
 * src/egress/tls-hello.c) on the first bytes of a connection. Its verdict
 * is one of the documented ones; a name it reads is a normalised host
 * name; reading only the bytes it says it consumed gives the same verdict.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tls-hello.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char norm[DNS_NAME_TEXT_MAX + 1], *why = NULL;
        TlsHello h, h2;
        int r;

        fuzz_accepted = false;
        r = tls_hello_parse(data, size, &h, &why);
        if (r != TLS_HELLO_SNI && r != TLS_HELLO_NO_SNI && r != -EAGAIN && r != -ENOMSG && r != -EBADMSG && r != -E2BIG)
                abort();
        if (r < 0 && r != -EAGAIN && !why)
                abort();
        free(why);
        if (r < 0)
                return 0;
        fuzz_accepted = true;
        if (h.consumed > size || h.has_sni != (r == TLS_HELLO_SNI))
                abort();
        if (h.has_sni && (host_name_normalize(h.server_name, strlen(h.server_name), 0, norm, NULL) != 0 ||
                          strcmp(norm, h.server_name) != 0))
                abort();
        if (tls_hello_parse(data, h.consumed, &h2, NULL) != r || memcmp(&h, &h2, sizeof h) != 0)
                abort();
        return 0;
}
