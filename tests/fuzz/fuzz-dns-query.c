/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the DNS questions the sandbox sends the egress helper
 * (dns_query_parse(), src/egress/dns-codec.c). For an accepted question the
 * helper's answers (a synthetic A, NXDOMAIN) are built and must read back
 * as answers to that very question; FORMERR is built for anything with a
 * header.
 */
#include <stdlib.h>
#include <string.h>

#include "dns-codec.h"
#include "fuzz.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t out[DNS_UDP_MAX + 64];
        DnsAnswer a;
        DnsQuery q;
        size_t n;
        int r;

        fuzz_accepted = false;
        r = dns_formerr_build(data, size, out, sizeof out, &n);
        if ((r == 0) != (size >= DNS_HEADER_SIZE) || (r == 0 && n != DNS_HEADER_SIZE))
                abort();
        if (dns_query_parse(data, size, &q, NULL) < 0)
                return 0;
        fuzz_accepted = true;
        if (strlen(q.qname) > DNS_NAME_TEXT_MAX || q.qname_wire_len > DNS_NAME_WIRE_MAX)
                abort();
        if (dns_answer_build_a(&q, 0x0a894001, 60, DNS_UDP_MAX, out, sizeof out, &n) != 0 || n > DNS_UDP_MAX)
                abort();
        if (q.opcode == 0 && q.qclass == DNS_CLASS_IN) {
                r = dns_answer_parse(out, n, q.id, q.qname, q.qtype, &a, NULL);
                if (r != 0 || a.rcode != 0 || a.n_records != (q.qtype == DNS_TYPE_A) ||
                    (a.n_records && dns_record_a(&a.records[0]) != 0x0a894001))
                        abort();
        }
        if (dns_answer_build(&q, DNS_RCODE_NXDOMAIN, NULL, 0, DNS_UDP_MAX, out, sizeof out, &n) != 0)
                abort();
        if (q.opcode == 0 && q.qclass == DNS_CLASS_IN &&
            (dns_answer_parse(out, n, q.id, q.qname, q.qtype, &a, NULL) != 0 || a.rcode != DNS_RCODE_NXDOMAIN))
                abort();
        return 0;
}
