/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host-rule.h"

/*
 * The egress helper's DNS codec (spec section 4.5, "Egress by name"). Pure:
 * it reads a question the sandbox sent, builds the helper's answers (one
 * synthetic A record, an empty NOERROR, NXDOMAIN, REFUSED, SERVFAIL,
 * FORMERR), builds the helper's own question to the upstream resolver,
 * reads that resolver's answer (following CNAMEs from the name asked to
 * its records, reading only records on that chain) and makes HTTPS/SVCB
 * records safe to hand on (ech and address hints removed). Every reader
 * is bounded by its input and returns -errno with a sentence in
 * *ret_error (which may be NULL); outputs are written only on success.
 * Names are compared in the form host_name_normalize() gives.
 */

#define DNS_PORT 53
#define DNS_HEADER_SIZE 12
/* The most a UDP answer may hold without EDNS (RFC 1035). */
#define DNS_UDP_MAX 512
/* The UDP size the helper offers upstream and in its answers' OPT (the DNS flag day's value). */
#define DNS_EDNS_UDP_SIZE 1232
#define DNS_NAME_WIRE_MAX 255
/* CNAME links followed from the name asked. */
#define DNS_CNAME_MAX 8
/* Answer records read from an upstream answer; a longer answer is refused. */
#define DNS_ANSWER_RECORDS_MAX 64
/* Records of the type asked kept from an upstream answer (at the chain's end). */
#define DNS_ANSWER_KEEP_MAX 16

enum {
        DNS_TYPE_A = 1,
        DNS_TYPE_CNAME = 5,
        DNS_TYPE_SOA = 6,
        DNS_TYPE_AAAA = 28,
        DNS_TYPE_OPT = 41,
        DNS_TYPE_SVCB = 64,
        DNS_TYPE_HTTPS = 65,
        DNS_TYPE_IXFR = 251,
        DNS_TYPE_AXFR = 252,
        DNS_TYPE_ANY = 255,
};

#define DNS_CLASS_IN 1

enum {
        DNS_RCODE_NOERROR = 0,
        DNS_RCODE_FORMERR = 1,
        DNS_RCODE_SERVFAIL = 2,
        DNS_RCODE_NXDOMAIN = 3,
        DNS_RCODE_NOTIMP = 4,
        DNS_RCODE_REFUSED = 5,
};

/* SvcParamKeys (RFC 9460). */
enum {
        SVC_KEY_MANDATORY = 0,
        SVC_KEY_ALPN = 1,
        SVC_KEY_NO_DEFAULT_ALPN = 2,
        SVC_KEY_PORT = 3,
        SVC_KEY_IPV4HINT = 4,
        SVC_KEY_ECH = 5,
        SVC_KEY_IPV6HINT = 6,
};

typedef struct DnsQuery {
        uint16_t id;
        uint8_t opcode;
        bool rd;
        uint16_t qtype;
        uint16_t qclass;
        /* The name as sent, uncompressed, in its case (the answer repeats it). */
        uint8_t qname_wire[DNS_NAME_WIRE_MAX];
        size_t qname_wire_len;
        /* Lower case, no trailing dot; "" for the root. */
        char qname[DNS_NAME_TEXT_MAX + 1];
        bool edns;
        uint16_t edns_udp_size;
} DnsQuery;

/*
 * A question as a client sends it: not an answer, one question, no answer
 * or authority records, at most one additional record, which must be an
 * EDNS OPT at the root; nothing after the message. Any opcode and type is
 * read (the caller answers what it does not serve with REFUSED); names hold
 * letters, digits, '-' and '_' only, and their compression pointers point
 * strictly backwards. -EBADMSG otherwise.
 */
int dns_query_parse(const uint8_t *buf, size_t len, DnsQuery *ret, char **ret_error);

/* One record of an answer the helper builds; the owner is always the name asked. */
typedef struct DnsRecord {
        uint16_t type;
        uint32_t ttl;
        const uint8_t *rdata;
        uint16_t rdlen;
} DnsRecord;

/*
 * The answer to q: its ID, opcode, RD and question, RA set, the rcode and
 * the records (owner: a pointer to the question's name), and an OPT when
 * q had one. When the whole answer exceeds max bytes, the records are left
 * out and the truncation bit set (the client asks again over TCP). -ENOBUFS
 * when even that does not fit size.
 */
int dns_answer_build(const DnsQuery *q, uint8_t rcode, const DnsRecord *records, size_t n_records, size_t max,
                     uint8_t *buf, size_t size, size_t *ret_len);

/* An answer with one A record of addr (host byte order). */
int dns_answer_build_a(const DnsQuery *q, uint32_t addr, uint32_t ttl, size_t max, uint8_t *buf, size_t size,
                       size_t *ret_len);

/*
 * FORMERR for a message dns_query_parse() refused: its ID and opcode when
 * it has a whole header, no question. -EBADMSG when it has no header (no
 * answer is sent then).
 */
int dns_formerr_build(const uint8_t *query, size_t len, uint8_t *buf, size_t size, size_t *ret_len);

/* The helper's own question to the upstream resolver: RD set, an OPT offering DNS_EDNS_UDP_SIZE. */
int dns_query_build(uint16_t id, const char *name, uint16_t type, uint8_t *buf, size_t size, size_t *ret_len);

typedef struct DnsAnswer {
        uint8_t rcode;
        /* The minimum TTL of the chain's CNAMEs and the records kept. */
        uint32_t ttl;
        /* CNAME links followed, and the name the chain ended at (the name asked when none). */
        size_t n_cnames;
        char end_name[DNS_NAME_TEXT_MAX + 1];
        /* Records of the type asked owned by end_name; rdata points into the buffer read. */
        DnsRecord records[DNS_ANSWER_KEEP_MAX];
        size_t n_records;
} DnsAnswer;

/*
 * The upstream resolver's answer to the question (id, qname, qtype, IN):
 * ID, question and flags must match (-EBADMSG), a truncated answer is
 * -EMSGSIZE (ask over TCP). For rcode NOERROR, the CNAME chain from qname
 * is followed through the answer section (-ELOOP for a loop or more than
 * DNS_CNAME_MAX links) and the records of qtype that the chain's end owns
 * are kept (at most DNS_ANSWER_KEEP_MAX, the rest ignored); records off the
 * chain are never read. A records must hold 4 bytes. Authority and
 * additional sections are not read. An answer whose chain ends at a name
 * without records is returned as such (n_records 0, end_name that name):
 * the caller may ask again for end_name.
 */
int dns_answer_parse(const uint8_t *buf, size_t len, uint16_t id, const char *qname, uint16_t qtype,
                     DnsAnswer *ret, char **ret_error);

/* The address of an A record, in host byte order. */
uint32_t dns_record_a(const DnsRecord *r);

/*
 * Removes the SvcParams whose keys are in keys[0..n_keys) from an SVCB or
 * HTTPS record's RDATA (RFC 9460: priority, uncompressed target, params in
 * strictly ascending key order, mandatory a strictly ascending list without
 * key 0). 1 and the stripped RDATA in out when the record stays usable; 0
 * when a removed key is listed as mandatory (a client must then ignore the
 * record, so it is dropped); -EBADMSG for RDATA outside that form.
 */
int dns_svcb_strip(const uint8_t *rdata, size_t len, const uint16_t *keys, size_t n_keys, uint8_t *out,
                   size_t size, size_t *ret_len, char **ret_error);

/*
 * The helper's rule for an HTTPS/SVCB record it hands to the sandbox: an
 * alias record (priority 0) and a record whose target is not "." (the
 * owner) are dropped (0); otherwise ech, ipv4hint and ipv6hint are removed
 * as dns_svcb_strip() does.
 */
int dns_svcb_sanitize(const uint8_t *rdata, size_t len, uint8_t *out, size_t size, size_t *ret_len,
                      char **ret_error);
