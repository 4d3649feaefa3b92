/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the upstream resolver's answers (dns_answer_parse(),
 * src/egress/dns-codec.c), read as the answer to the question the input
 * itself repeats (its ID, its first name read without compression, its
 * type), and the HTTPS/SVCB records kept made safe (dns_svcb_sanitize(),
 * whose output sanitises to itself). Each input's bytes are also read as
 * SVCB RDATA (dns_svcb_strip()).
 */
#include <stdlib.h>
#include <string.h>

#include "dns-codec.h"
#include "fuzz.h"

bool fuzz_accepted = false;

/* The question's name as plain labels, or 0 when it is not one. */
static size_t question(const uint8_t *d, size_t size, char *name, uint16_t *type) {
        size_t pos = DNS_HEADER_SIZE, o = 0;

        while (pos < size && d[pos] != 0) {
                size_t l = d[pos];
                if (l > 63 || pos + 1 + l > size || o + l + 1 > DNS_NAME_TEXT_MAX)
                        return 0;
                if (o)
                        name[o++] = '.';
                for (size_t i = 0; i < l; i++) {
                        char c = (char) d[pos + 1 + i];
                        name[o++] = c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
                }
                pos += 1 + l;
        }
        if (pos + 5 > size)
                return 0;
        name[o] = 0;
        *type = (uint16_t) (d[pos + 1] << 8 | d[pos + 2]);
        return pos + 5;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t out[65536], again[65536];
        char name[DNS_NAME_TEXT_MAX + 1];
        static const uint16_t ech[] = { SVC_KEY_ECH };
        uint16_t type = DNS_TYPE_A;
        size_t n, n2;
        DnsAnswer a;
        int r;

        fuzz_accepted = false;
        r = dns_svcb_strip(data, size, ech, 1, out, sizeof out, &n, NULL);
        if (r == 1 && n > size)
                abort();
        if (size < DNS_HEADER_SIZE || question(data, size, name, &type) == 0)
                return 0;
        r = dns_answer_parse(data, size, (uint16_t) (data[0] << 8 | data[1]), name, type, &a, NULL);
        if (r < 0)
                return 0;
        fuzz_accepted = true;
        if (a.n_records > DNS_ANSWER_KEEP_MAX || a.n_cnames > DNS_CNAME_MAX)
                abort();
        for (size_t i = 0; i < a.n_records; i++) {
                const DnsRecord *rec = &a.records[i];

                if (rec->type != type || rec->rdata < data || rec->rdata + rec->rdlen > data + size)
                        abort();
                if (type == DNS_TYPE_A && rec->rdlen != 4)
                        abort();
                if (type != DNS_TYPE_HTTPS && type != DNS_TYPE_SVCB)
                        continue;
                if (dns_svcb_sanitize(rec->rdata, rec->rdlen, out, sizeof out, &n, NULL) != 1)
                        continue;
                if (n > rec->rdlen || dns_svcb_sanitize(out, n, again, sizeof again, &n2, NULL) != 1 || n2 != n ||
                    memcmp(out, again, n) != 0)
                        abort();
        }
        return 0;
}
