/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "dns-codec.h"
#include "egress-vectors.h"

#define IP4(a, b, c, d) (((uint32_t) (a) << 24) | ((uint32_t) (b) << 16) | ((uint32_t) (c) << 8) | (uint32_t) (d))

/* A small message writer for the forms no resolver here sends. */
typedef struct Msg {
        uint8_t b[2048];
        size_t n;
} Msg;

static void put(Msg *m, const void *p, size_t n) {
        cr_assert_leq(m->n + n, sizeof(m->b));
        memcpy(m->b + m->n, p, n);
        m->n += n;
}

static void put16(Msg *m, uint16_t v) {
        uint8_t b[2] = { (uint8_t) (v >> 8), (uint8_t) v };
        put(m, b, 2);
}

static void put32(Msg *m, uint32_t v) {
        put16(m, (uint16_t) (v >> 16));
        put16(m, (uint16_t) v);
}

static void put_name(Msg *m, const char *name) {
        while (*name) {
                size_t l = strcspn(name, ".");
                uint8_t lb = (uint8_t) l;
                put(m, &lb, 1);
                put(m, name, l);
                name += l + (name[l] == '.');
        }
        put(m, "", 1);
}

static void header(Msg *m, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns, uint16_t ar) {
        m->n = 0;
        put16(m, id);
        put16(m, flags);
        put16(m, qd);
        put16(m, an);
        put16(m, ns);
        put16(m, ar);
}

static void rr(Msg *m, const char *owner, uint16_t type, uint32_t ttl, const void *rdata, uint16_t rdlen) {
        put_name(m, owner);
        put16(m, type);
        put16(m, DNS_CLASS_IN);
        put32(m, ttl);
        put16(m, rdlen);
        put(m, rdata, rdlen);
}

static void rr_a(Msg *m, const char *owner, uint32_t addr, uint32_t ttl) {
        uint8_t a[4] = { (uint8_t) (addr >> 24), (uint8_t) (addr >> 16), (uint8_t) (addr >> 8), (uint8_t) addr };
        rr(m, owner, DNS_TYPE_A, ttl, a, 4);
}

static void rr_cname(Msg *m, const char *owner, const char *target, uint32_t ttl) {
        Msg t = {};
        put_name(&t, target);
        rr(m, owner, DNS_TYPE_CNAME, ttl, t.b, (uint16_t) t.n);
}

static void answer_head(Msg *m, uint16_t id, const char *qname, uint16_t qtype, uint16_t an) {
        header(m, id, 0x8180, 1, an, 0, 0);
        put_name(m, qname);
        put16(m, qtype);
        put16(m, DNS_CLASS_IN);
}

/* glibc's question (getent ahosts Registry.Example.ORG with "options edns0"). */
Test(dns_query, glibc_questions) {
        _cleanup_free_ uint8_t *a = NULL, *aaaa = NULL;
        size_t na, naaaa;
        DnsQuery q;

        a = vector_load("dns-query", "accept-glibc-a", &na);
        aaaa = vector_load("dns-query", "accept-glibc-aaaa", &naaaa);
        cr_assert_eq(dns_query_parse(a, na, &q, NULL), 0);
        cr_assert_str_eq(q.qname, "registry.example.org");
        cr_assert_eq(q.qname_wire_len, 22);
        cr_assert_eq(memcmp(q.qname_wire, "\x08Registry\x07" "Example\x03ORG", 21), 0, "the case as sent is kept");
        cr_assert_eq(q.qtype, DNS_TYPE_A);
        cr_assert_eq(q.qclass, DNS_CLASS_IN);
        cr_assert_eq(q.opcode, 0);
        cr_assert(q.rd);
        cr_assert(q.edns);
        cr_assert_geq(q.edns_udp_size, 512);
        cr_assert_eq(q.id, (a[0] << 8) | a[1]);
        cr_assert_eq(dns_query_parse(aaaa, naaaa, &q, NULL), 0);
        cr_assert_eq(q.qtype, DNS_TYPE_AAAA);

        /* Every shorter prefix is refused, never read past. */
        for (size_t i = 0; i < na; i++)
                cr_assert_eq(dns_query_parse(a, i, &q, NULL), -EBADMSG, "prefix of %zu bytes", i);
}

static void check_query_refused(const Msg *m, const char *why_part) {
        _cleanup_free_ char *why = NULL;
        DnsQuery q = { .id = 4242 };

        cr_assert_eq(dns_query_parse(m->b, m->n, &q, &why), -EBADMSG, "accepted; want \"%s\"", why_part);
        cr_assert(why && strstr(why, why_part), "\"%s\" does not say \"%s\"", why, why_part);
        cr_assert_eq(q.id, 4242, "written on failure");
}

Test(dns_query, refusals) {
        Msg m;

        header(&m, 1, 0x8100, 1, 0, 0, 0);
        put_name(&m, "a.example");
        put32(&m, 0x00010001);
        check_query_refused(&m, "an answer");

        header(&m, 1, 0x0100, 2, 0, 0, 0);
        put_name(&m, "a.example");
        put32(&m, 0x00010001);
        put_name(&m, "b.example");
        put32(&m, 0x00010001);
        check_query_refused(&m, "2 questions");

        header(&m, 1, 0x0100, 1, 0, 0, 0);
        put_name(&m, "a.example");
        put32(&m, 0x00010001);
        put(&m, "x", 1);
        check_query_refused(&m, "after the question");

        /* A pointer in the question can only point into the header: refused. */
        header(&m, 1, 0x0100, 1, 0, 0, 0);
        put(&m, "\x01" "a\xc0\x04", 4);
        put32(&m, 0x00010001);
        check_query_refused(&m, "compression pointer");
        header(&m, 1, 0x0100, 1, 0, 0, 0);
        put(&m, "\xc0\x0c", 2);
        put32(&m, 0x00010001);
        check_query_refused(&m, "compression pointer");

        header(&m, 1, 0x0100, 1, 0, 0, 0);
        put(&m, "\x03" "a.b\x00", 5);
        put32(&m, 0x00010001);
        check_query_refused(&m, "no host name");

        header(&m, 1, 0x0100, 1, 0, 0, 0);
        put(&m, "\x41" "a", 2);
        check_query_refused(&m, "unknown type");

        /* 5 labels of 63: 320 bytes of name. */
        header(&m, 1, 0x0100, 1, 0, 0, 0);
        for (int i = 0; i < 5; i++) {
                put(&m, "\x3f", 1);
                for (int j = 0; j < 63; j++)
                        put(&m, "x", 1);
        }
        put(&m, "", 1);
        put32(&m, 0x00010001);
        check_query_refused(&m, "longer than 255");

        header(&m, 1, 0x0100, 1, 0, 0, 0);
        put_name(&m, "a.example");
        put16(&m, 1);
        check_query_refused(&m, "cut off");

        header(&m, 1, 0x0100, 1, 0, 0, 1);
        put_name(&m, "a.example");
        put32(&m, 0x00010001);
        put_name(&m, "a.example");
        put16(&m, DNS_TYPE_OPT);
        put16(&m, 1232);
        put32(&m, 0);
        put16(&m, 0);
        check_query_refused(&m, "not an EDNS OPT at the root");

        header(&m, 1, 0x0100, 1, 0, 0, 1);
        put_name(&m, "a.example");
        put32(&m, 0x00010001);
        put(&m, "", 1);
        put16(&m, DNS_TYPE_OPT);
        put16(&m, 1232);
        put32(&m, 0);
        put16(&m, 8);
        put32(&m, 0);
        check_query_refused(&m, "run past the end");

        header(&m, 1, 0x0100, 1, 1, 0, 0);
        put_name(&m, "a.example");
        put32(&m, 0x00010001);
        check_query_refused(&m, "answer or authority");
}

Test(dns_query, other_opcodes_and_types_are_read) {
        DnsQuery q;
        Msg m;

        /* NOTIFY (opcode 4), class CH, type ANY: read, so that the caller can answer REFUSED. */
        header(&m, 7, 4 << 11, 1, 0, 0, 0);
        put_name(&m, "_dmarc.Example.org");
        put16(&m, DNS_TYPE_ANY);
        put16(&m, 3);
        cr_assert_eq(dns_query_parse(m.b, m.n, &q, NULL), 0);
        cr_assert_eq(q.opcode, 4);
        cr_assert_not(q.rd);
        cr_assert_eq(q.qclass, 3);
        cr_assert_str_eq(q.qname, "_dmarc.example.org");
        cr_assert_not(q.edns);
        /* The root. */
        header(&m, 7, 0, 1, 0, 0, 0);
        put(&m, "", 1);
        put16(&m, DNS_TYPE_SOA);
        put16(&m, 1);
        cr_assert_eq(dns_query_parse(m.b, m.n, &q, NULL), 0);
        cr_assert_str_eq(q.qname, "");
}

Test(dns_answer_build, synthetic_a_and_refusals) {
        _cleanup_free_ uint8_t *a = NULL;
        uint8_t out[512];
        DnsAnswer ans;
        DnsQuery q;
        size_t na, n;

        a = vector_load("dns-query", "accept-glibc-a", &na);
        cr_assert_eq(dns_query_parse(a, na, &q, NULL), 0);

        cr_assert_eq(dns_answer_build_a(&q, IP4(10, 137, 64, 7), 60, DNS_UDP_MAX, out, sizeof out, &n), 0);
        /* ID, then QR RD RA and NOERROR; one question, one answer, the OPT. */
        cr_assert_eq(memcmp(out, a, 2), 0);
        cr_assert_eq(out[2], 0x81);
        cr_assert_eq(out[3], 0x80);
        cr_assert_eq(memcmp(out + 4, "\0\1\0\1\0\0\0\1", 8), 0);
        cr_assert_eq(memcmp(out + 12, q.qname_wire, q.qname_wire_len), 0, "the question as asked");
        cr_assert_eq(memcmp(out + 12 + q.qname_wire_len + 4, "\xc0\x0c\0\1\0\1\0\0\0\x3c\0\4\x0a\x89\x40\x07", 16), 0);
        cr_assert_eq(n, 12 + q.qname_wire_len + 4 + 16 + 11);
        /* It reads back as an answer to the same question. */
        cr_assert_eq(dns_answer_parse(out, n, q.id, q.qname, DNS_TYPE_A, &ans, NULL), 0);
        cr_assert_eq(ans.n_records, 1);
        cr_assert_eq(dns_record_a(&ans.records[0]), IP4(10, 137, 64, 7));
        cr_assert_eq(ans.ttl, 60);
        cr_assert_eq(ans.n_cnames, 0);

        cr_assert_eq(dns_answer_build(&q, DNS_RCODE_NXDOMAIN, NULL, 0, DNS_UDP_MAX, out, sizeof out, &n), 0);
        cr_assert_eq(out[3] & 0xf, DNS_RCODE_NXDOMAIN);
        cr_assert_eq(memcmp(out + 4, "\0\1\0\0\0\0\0\1", 8), 0, "no SOA: the refusal is not cached");
        cr_assert_eq(dns_answer_parse(out, n, q.id, q.qname, DNS_TYPE_A, &ans, NULL), 0);
        cr_assert_eq(ans.rcode, DNS_RCODE_NXDOMAIN);

        cr_assert_eq(dns_answer_build(&q, DNS_RCODE_REFUSED, NULL, 0, DNS_UDP_MAX, out, sizeof out, &n), 0);
        cr_assert_eq(out[3] & 0xf, DNS_RCODE_REFUSED);

        /* The empty NOERROR answer to AAAA. */
        q.qtype = DNS_TYPE_AAAA;
        cr_assert_eq(dns_answer_build(&q, DNS_RCODE_NOERROR, NULL, 0, DNS_UDP_MAX, out, sizeof out, &n), 0);
        cr_assert_eq(dns_answer_parse(out, n, q.id, q.qname, DNS_TYPE_AAAA, &ans, NULL), 0);
        cr_assert_eq(ans.rcode, DNS_RCODE_NOERROR);
        cr_assert_eq(ans.n_records, 0);
}

Test(dns_answer_build, truncation_and_space) {
        _cleanup_free_ uint8_t *a = NULL;
        uint8_t big[600] = {}, out[1024];
        DnsRecord rec = { .type = DNS_TYPE_HTTPS, .ttl = 5, .rdata = big, .rdlen = sizeof big };
        DnsQuery q;
        size_t na, n;

        a = vector_load("dns-query", "accept-glibc-a", &na);
        cr_assert_eq(dns_query_parse(a, na, &q, NULL), 0);
        cr_assert_eq(dns_answer_build(&q, 0, &rec, 1, DNS_UDP_MAX, out, sizeof out, &n), 0);
        cr_assert(out[2] & 0x02, "the truncation bit");
        cr_assert_eq(out[6] << 8 | out[7], 0, "no records");
        cr_assert_leq(n, DNS_UDP_MAX);
        cr_assert_eq(dns_answer_build(&q, 0, &rec, 1, 1232, out, sizeof out, &n), 0);
        cr_assert_not(out[2] & 0x02);
        cr_assert_eq(n, 12 + q.qname_wire_len + 4 + 12 + sizeof big + 11);
        cr_assert_eq(dns_answer_build(&q, 0, NULL, 0, DNS_UDP_MAX, out, 20, &n), -ENOBUFS);
}

Test(dns_formerr, echoes_id_only) {
        uint8_t out[64];
        size_t n;

        cr_assert_eq(dns_formerr_build((const uint8_t *) "\x12\x34\x01\x00garbage", 11, out, sizeof out, &n), -EBADMSG);
        cr_assert_eq(dns_formerr_build((const uint8_t *) "\x12\x34\x01\x00\0\1\0\0\0\0\0\0\xff", 13, out, sizeof out, &n), 0);
        cr_assert_eq(n, 12);
        cr_assert_eq(memcmp(out, "\x12\x34\x81\x81\0\0\0\0\0\0\0\0", 12), 0);
}

Test(dns_query_build, reads_back) {
        uint8_t out[512];
        DnsQuery q;
        size_t n;

        cr_assert_eq(dns_query_build(0xbeef, "Cdn.Example.net", DNS_TYPE_A, out, sizeof out, &n), 0);
        cr_assert_eq(dns_query_parse(out, n, &q, NULL), 0);
        cr_assert_eq(q.id, 0xbeef);
        cr_assert_str_eq(q.qname, "cdn.example.net");
        cr_assert(q.rd);
        cr_assert(q.edns);
        cr_assert_eq(q.edns_udp_size, DNS_EDNS_UDP_SIZE);
        cr_assert_eq(dns_query_build(1, "bad..name", DNS_TYPE_A, out, sizeof out, &n), -EINVAL);
        cr_assert_eq(dns_query_build(1, "cdn.example.net", DNS_TYPE_A, out, 30, &n), -ENOBUFS);
}

/* dnsmasq's answers (tests/fuzz/make-egress-corpus). */
Test(dns_answer_parse, dnsmasq_answers) {
        _cleanup_free_ uint8_t *plain = NULL, *chain = NULL, *two = NULL, *nx = NULL, *empty = NULL;
        size_t n1, n2, n3, n4, n5;
        DnsAnswer a;

        plain = vector_load("dns-answer", "accept-a-plain", &n1);
        cr_assert_eq(dns_answer_parse(plain, n1, 0x1001, "www.example.org", DNS_TYPE_A, &a, NULL), 0);
        cr_assert_eq(a.rcode, 0);
        cr_assert_eq(a.n_records, 1);
        cr_assert_eq(dns_record_a(&a.records[0]), IP4(198, 51, 100, 7));

        /* registry.example.org -> edge.example.net -> cdn.example.net, two addresses: bound to the name asked. */
        chain = vector_load("dns-answer", "accept-a-cname-chain", &n2);
        cr_assert_eq(dns_answer_parse(chain, n2, 0x1002, "registry.example.org", DNS_TYPE_A, &a, NULL), 0);
        cr_assert_eq(a.n_cnames, 2);
        cr_assert_str_eq(a.end_name, "cdn.example.net");
        cr_assert_eq(a.n_records, 2);
        cr_assert_eq(dns_record_a(&a.records[0]), IP4(192, 0, 2, 10));
        cr_assert_eq(dns_record_a(&a.records[1]), IP4(192, 0, 2, 11));

        two = vector_load("dns-answer", "accept-a-two-addresses", &n3);
        cr_assert_eq(dns_answer_parse(two, n3, 0x1003, "cdn.example.net", DNS_TYPE_A, &a, NULL), 0);
        cr_assert_eq(a.n_records, 2);

        nx = vector_load("dns-answer", "accept-nxdomain", &n4);
        cr_assert_eq(dns_answer_parse(nx, n4, 0x1004, "nothing.example.org", DNS_TYPE_A, &a, NULL), 0);
        cr_assert_eq(a.rcode, DNS_RCODE_NXDOMAIN);
        cr_assert_eq(a.n_records, 0);

        empty = vector_load("dns-answer", "accept-aaaa-empty", &n5);
        cr_assert_eq(dns_answer_parse(empty, n5, 0x1005, "www.example.org", DNS_TYPE_AAAA, &a, NULL), 0);
        cr_assert_eq(a.rcode, 0);
        cr_assert_eq(a.n_records, 0);

        /* Bound to the question: another ID, name or type is refused. */
        cr_assert_eq(dns_answer_parse(chain, n2, 0x1003, "registry.example.org", DNS_TYPE_A, &a, NULL), -EBADMSG);
        cr_assert_eq(dns_answer_parse(chain, n2, 0x1002, "cdn.example.net", DNS_TYPE_A, &a, NULL), -EBADMSG);
        cr_assert_eq(dns_answer_parse(chain, n2, 0x1002, "registry.example.org", DNS_TYPE_HTTPS, &a, NULL), -EBADMSG);
        /*
         * Every prefix that cuts the answer section is refused; the additional
         * section (dnsmasq's OPT, the last 11 bytes) is not read.
         */
        for (size_t i = 0; i < n2 - 11; i++)
                cr_assert_lt(dns_answer_parse(chain, i, 0x1002, "registry.example.org", DNS_TYPE_A, &a, NULL), 0,
                             "prefix of %zu bytes", i);
        cr_assert_eq(dns_answer_parse(chain, n2 - 11, 0x1002, "registry.example.org", DNS_TYPE_A, &a, NULL), 0);
}

Test(dns_answer_parse, truncated_answers_go_to_tcp) {
        _cleanup_free_ uint8_t *plain = NULL;
        size_t n;
        DnsAnswer a;

        plain = vector_load("dns-answer", "accept-a-plain", &n);
        plain[2] |= 0x02;
        cr_assert_eq(dns_answer_parse(plain, n, 0x1001, "www.example.org", DNS_TYPE_A, &a, NULL), -EMSGSIZE);
}

Test(dns_answer_parse, only_the_chain_is_read) {
        DnsAnswer a;
        Msg m;

        /* An address for another name first, then a CNAME to a name whose address is off the chain too. */
        answer_head(&m, 9, "pkg.example.org", DNS_TYPE_A, 4);
        rr_a(&m, "evil.example.net", IP4(203, 0, 113, 66), 300);
        rr_cname(&m, "pkg.example.org", "edge.example.net", 120);
        rr_a(&m, "pkg.example.org.evil.net", IP4(203, 0, 113, 67), 300);
        rr_a(&m, "Edge.Example.NET", IP4(192, 0, 2, 1), 30);
        cr_assert_eq(dns_answer_parse(m.b, m.n, 9, "pkg.example.org", DNS_TYPE_A, &a, NULL), 0);
        cr_assert_eq(a.n_records, 1);
        cr_assert_eq(dns_record_a(&a.records[0]), IP4(192, 0, 2, 1));
        cr_assert_eq(a.ttl, 30, "the smallest TTL on the chain");

        /* A chain that ends without an address: the caller may ask for its end. */
        answer_head(&m, 9, "pkg.example.org", DNS_TYPE_A, 2);
        rr_cname(&m, "pkg.example.org", "edge.example.net", 120);
        rr_a(&m, "evil.example.net", IP4(203, 0, 113, 66), 300);
        cr_assert_eq(dns_answer_parse(m.b, m.n, 9, "pkg.example.org", DNS_TYPE_A, &a, NULL), 0);
        cr_assert_eq(a.n_records, 0);
        cr_assert_str_eq(a.end_name, "edge.example.net");
        cr_assert_eq(a.ttl, 120);
}

Test(dns_answer_parse, chain_limits) {
        _cleanup_free_ uint8_t *loop = NULL, *selfptr = NULL;
        _cleanup_free_ char *why = NULL;
        char from[32], to[32];
        DnsAnswer a;
        size_t n;
        Msg m;

        loop = vector_load("dns-answer", "reject-a-cname-loop", &n);
        cr_assert_eq(dns_answer_parse(loop, n, 0x1009, "loop-a.example.org", DNS_TYPE_A, &a, &why), -ELOOP);
        cr_assert(strstr(why, "loop"), "%s", why);
        selfptr = vector_load("dns-answer", "reject-pointer-to-itself", &n);
        cr_assert_eq(dns_answer_parse(selfptr, n, 0x1009, "loop-a.example.org", DNS_TYPE_A, &a, NULL), -EBADMSG);

        /* Eight links are followed, nine are not. */
        for (int links = 8; links <= 9; links++) {
                answer_head(&m, 3, "c0.example", DNS_TYPE_A, (uint16_t) (links + 1));
                for (int i = 0; i < links; i++) {
                        snprintf(from, sizeof from, "c%d.example", i);
                        snprintf(to, sizeof to, "c%d.example", i + 1);
                        rr_cname(&m, from, to, 60);
                }
                rr_a(&m, to, IP4(192, 0, 2, 9), 60);
                cr_assert_eq(dns_answer_parse(m.b, m.n, 3, "c0.example", DNS_TYPE_A, &a, NULL), links == 8 ? 0 : -ELOOP,
                             "%d links", links);
        }

        /* Two CNAMEs for one name, or a CNAME beside an address, is no answer at all. */
        answer_head(&m, 3, "x.example", DNS_TYPE_A, 2);
        rr_cname(&m, "x.example", "a.example", 60);
        rr_cname(&m, "x.example", "b.example", 60);
        cr_assert_eq(dns_answer_parse(m.b, m.n, 3, "x.example", DNS_TYPE_A, &a, NULL), -EBADMSG);
        answer_head(&m, 3, "x.example", DNS_TYPE_A, 2);
        rr_cname(&m, "x.example", "a.example", 60);
        rr_a(&m, "x.example", IP4(192, 0, 2, 9), 60);
        cr_assert_eq(dns_answer_parse(m.b, m.n, 3, "x.example", DNS_TYPE_A, &a, NULL), -EBADMSG);
        /* An A record of the wrong size. */
        answer_head(&m, 3, "x.example", DNS_TYPE_A, 1);
        rr(&m, "x.example", DNS_TYPE_A, 60, "\1\2\3\4\5", 5);
        cr_assert_eq(dns_answer_parse(m.b, m.n, 3, "x.example", DNS_TYPE_A, &a, NULL), -EBADMSG);
        /* A CNAME whose target runs on past its data. */
        answer_head(&m, 3, "x.example", DNS_TYPE_A, 1);
        rr(&m, "x.example", DNS_TYPE_CNAME, 60, "\1a\0\0", 4);
        cr_assert_eq(dns_answer_parse(m.b, m.n, 3, "x.example", DNS_TYPE_A, &a, NULL), -EBADMSG);
        /* A TTL with the top bit set counts as zero. */
        answer_head(&m, 3, "x.example", DNS_TYPE_A, 1);
        rr_a(&m, "x.example", IP4(192, 0, 2, 9), 0x80000000u);
        cr_assert_eq(dns_answer_parse(m.b, m.n, 3, "x.example", DNS_TYPE_A, &a, NULL), 0);
        cr_assert_eq(a.ttl, 0);
        /* More records than are read. */
        answer_head(&m, 3, "x.example", DNS_TYPE_A, DNS_ANSWER_RECORDS_MAX + 1);
        for (int i = 0; i <= DNS_ANSWER_RECORDS_MAX; i++)
                rr_a(&m, "x.example", IP4(192, 0, 2, i), 60);
        cr_assert_eq(dns_answer_parse(m.b, m.n, 3, "x.example", DNS_TYPE_A, &a, NULL), -E2BIG);
}

/* The HTTPS records dnsmasq served: ech and the address hints go, alpn stays. */
Test(dns_svcb, sanitize_dnsmasq_https) {
        _cleanup_free_ uint8_t *ech = NULL, *mand = NULL, *alias = NULL;
        uint8_t out[1024];
        size_t n, nout;
        DnsAnswer a;

        ech = vector_load("dns-answer", "accept-https-ech", &n);
        cr_assert_eq(dns_answer_parse(ech, n, 0x1006, "svc.example.org", DNS_TYPE_HTTPS, &a, NULL), 0);
        cr_assert_eq(a.n_records, 1);
        cr_assert_gt(a.records[0].rdlen, 100);
        cr_assert_eq(dns_svcb_sanitize(a.records[0].rdata, a.records[0].rdlen, out, sizeof out, &nout, NULL), 1);
        /* priority 1, target ".", alpn "h2","h3": nothing else. */
        cr_assert_eq(nout, 3 + 4 + 6);
        cr_assert_eq(memcmp(out, "\0\1\0" "\0\1\0\6\2h2\2h3", nout), 0);

        mand = vector_load("dns-answer", "accept-https-mandatory-ech", &n);
        cr_assert_eq(dns_answer_parse(mand, n, 0x1007, "strict.example.org", DNS_TYPE_HTTPS, &a, NULL), 0);
        cr_assert_eq(a.n_records, 1);
        cr_assert_eq(dns_svcb_sanitize(a.records[0].rdata, a.records[0].rdlen, out, sizeof out, &nout, NULL), 0,
                     "ech is mandatory: the record is dropped");

        alias = vector_load("dns-answer", "accept-https-alias", &n);
        cr_assert_eq(dns_answer_parse(alias, n, 0x1008, "alias.example.org", DNS_TYPE_HTTPS, &a, NULL), 0);
        cr_assert_eq(a.n_records, 1);
        cr_assert_eq(dns_svcb_sanitize(a.records[0].rdata, a.records[0].rdlen, out, sizeof out, &nout, NULL), 0,
                     "an alias is dropped");
}

static int strip(const void *rdata, size_t len, uint8_t *out, size_t *nout, char **why) {
        static const uint16_t keys[] = { SVC_KEY_ECH };
        free(*why);
        *why = NULL;
        return dns_svcb_strip(rdata, len, keys, 1, out, 512, nout, why);
}

Test(dns_svcb, strip_forms) {
        _cleanup_free_ char *why = NULL;
        uint8_t out[512];
        size_t n;

        /* Nothing to strip: the record as it was. */
        cr_assert_eq(strip("\0\1\0\0\1\0\3\2h2", 10, out, &n, &why), 1);
        cr_assert_eq(n, 10);
        /* ech alone, under a target name. */
        cr_assert_eq(strip("\0\2\3cdn\7example\0\0\5\0\2\xab\xcd", 21, out, &n, &why), 1);
        cr_assert_eq(n, 15);
        cr_assert_eq(memcmp(out, "\0\2\3cdn\7example\0", 15), 0);
        /* mandatory naming a key that stays. */
        cr_assert_eq(strip("\0\1\0\0\0\0\2\0\1\0\1\0\3\2h2\0\5\0\1\xab", 21, out, &n, &why), 1);
        cr_assert_eq(n, 16);
        cr_assert_eq(memcmp(out, "\0\1\0\0\0\0\2\0\1\0\1\0\3\2h2", 16), 0);

        /* Refusals. */
        cr_assert_eq(strip("\0\1\0\0\5\0\0\0\1\0\0", 11, out, &n, &why), -EBADMSG);
        cr_assert(strstr(why, "ascend"), "%s", why);
        cr_assert_eq(strip("\0\1\0\0\1\0\0\0\1\0\0", 11, out, &n, &why), -EBADMSG, "a key twice");
        cr_assert_eq(strip("\0\1\0\0\0\0\2\0\0", 9, out, &n, &why), -EBADMSG, "mandatory naming itself");
        cr_assert_eq(strip("\0\1\0\0\0\0\3\0\1\0", 10, out, &n, &why), -EBADMSG, "an odd mandatory list");
        cr_assert_eq(strip("\0\1\0\0\0\0\2\0\1", 9, out, &n, &why), -EBADMSG, "a mandatory key missing");
        cr_assert_eq(strip("\0\1\xc0\x0c", 4, out, &n, &why), -EBADMSG, "a compressed target");
        cr_assert(strstr(why, "compressed"), "%s", why);
        cr_assert_eq(strip("\0\1\3ab", 5, out, &n, &why), -EBADMSG, "a target past the end");
        cr_assert_eq(strip("\0\1\0\0\1\0\x09h2", 9, out, &n, &why), -EBADMSG, "a value past the end");
        cr_assert_eq(strip("\0\1\0\0\1\0", 6, out, &n, &why), -EBADMSG, "a key cut off");
        cr_assert_eq(strip("\0\1", 2, out, &n, &why), -EBADMSG);
}
