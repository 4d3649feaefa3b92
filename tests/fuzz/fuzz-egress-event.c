/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the egress helper's denied-name events as the coordinator
 * reads them (src/egress/egress-proto.c), one line (without its newline)
 * per input. The helper parses what the sandbox sent and writes these
 * lines; a broken helper, or one the sandbox subverted, could write
 * anything. An accepted line formats back to itself, and its name is
 * one host_name_normalize() leaves as it is; a refused one says why.
 */
#include <stdlib.h>
#include <string.h>

#include "egress-proto.h"
#include "fuzz.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char buf[EGRESS_EVENT_LINE_MAX], norm[DNS_NAME_TEXT_MAX + 1];
        char *why = NULL;
        EgressEvent ev;
        int n;

        fuzz_accepted = false;
        if (egress_event_parse((const char *) data, size, &ev, &why) < 0) {
                if (!why)
                        abort();
                free(why);
                return 0;
        }
        fuzz_accepted = true;
        n = egress_event_format(&ev, buf);
        if (n < 1 || (size_t) n != size + 1 || memcmp(buf, data, size) != 0 || buf[size] != '\n')
                abort();
        if (ev.kind != EGRESS_EVENT_DROPPED &&
            (host_name_normalize(ev.name, strlen(ev.name), 0, norm, NULL) != 0 || strcmp(norm, ev.name) != 0))
                abort();
        return 0;
}
