/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: host rules (src/egress/host-rule.c), one rule per input. An
 * accepted rule's canonical text reads back as the same rule, and the rule
 * matches the names it stands for; a refused one says why.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "host-rule.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char text[HOST_RULE_STRING_MAX + 64], buf[HOST_RULE_STRING_MAX], probe[DNS_NAME_TEXT_MAX + 3];
        char norm[DNS_NAME_TEXT_MAX + 1], again[DNS_NAME_TEXT_MAX + 1];
        char *why = NULL;
        HostRule r, r2;
        int k;

        fuzz_accepted = false;
        if (size >= sizeof text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;

        /* The normaliser is idempotent. */
        if (host_name_normalize(text, size, HOST_NAME_TRAILING_DOT, norm, NULL) == 0) {
                if (host_name_normalize(norm, strlen(norm), 0, again, NULL) != 0 || strcmp(norm, again) != 0)
                        abort();
        }

        k = host_rule_parse(text, &r, &why);
        if (k < 0) {
                if (!why)
                        abort();
                free(why);
                return 0;
        }
        fuzz_accepted = true;
        host_rule_format(&r, buf);
        if (host_rule_parse(buf, &r2, NULL) != 0 || memcmp(&r, &r2, sizeof r) != 0)
                abort();
        if (r.wildcard) {
                strcpy(probe, "x.");
                if (strlen(r.name) + 2 <= DNS_NAME_TEXT_MAX) {
                        strcat(probe, r.name);
                        if (!host_rule_matches(&r, probe))
                                abort();
                }
                if (host_rule_matches(&r, r.name))
                        abort();
        } else if (!host_rule_matches(&r, r.name))
                abort();
        for (size_t i = 0; i < r.n_ports; i++)
                if (!host_rule_allows(&r, r.wildcard ? probe : r.name, r.ports[i]) && !r.wildcard)
                        abort();
        return 0;
}
