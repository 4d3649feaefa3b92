/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "dns-codec.h"
#include "egress-util.h"
#include "macro.h"
#include "util.h"

#define DNS_FLAG_QR 0x8000u
#define DNS_FLAG_TC 0x0200u
#define DNS_FLAG_RD 0x0100u
#define DNS_FLAG_RA 0x0080u
#define DNS_OPCODE(f) (((f) >> 11) & 0xfu)
/* Owner pointer, type, class, TTL, RDLENGTH. */
#define DNS_RR_FIXED 12u
/* Root owner, type, class, TTL, RDLENGTH 0. */
#define DNS_OPT_SIZE 11u
/* A compression pointer to the question's name, which starts right after the header. */
#define DNS_PTR_QNAME 0xc00cu

static bool label_byte_ok(uint8_t c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/*
 * Reads the name at *off of msg[0..len) into its uncompressed wire form
 * (optional) and its text (lower case, no trailing dot; "" for the root).
 * A compression pointer, where allowed, must point before every position
 * this name has been read from so far (and after the header): the
 * positions fall with each jump, so no chain of pointers can loop.
 * *off is moved past the name as it stands in msg.
 */
static int read_name(const uint8_t *msg, size_t len, size_t *off, bool allow_ptr, uint8_t *wire, size_t *ret_wire_len,
                     char text[static DNS_NAME_TEXT_MAX + 1], char **ret_error) {
        size_t pos = *off, lowest = *off, next = SIZE_MAX, wl = 0, tl = 0;

        for (;;) {
                uint8_t l;

                if (pos >= len)
                        return errorf(ret_error, -EBADMSG, "a name runs past the end of the message");
                l = msg[pos];
                if ((l & 0xc0) == 0xc0) {
                        size_t target;

                        if (!allow_ptr)
                                return errorf(ret_error, -EBADMSG, "a compression pointer where a name must be whole");
                        if (pos + 1 >= len)
                                return errorf(ret_error, -EBADMSG, "a compression pointer cut by the end of the message");
                        target = (size_t) (l & 0x3f) << 8 | msg[pos + 1];
                        if (target < DNS_HEADER_SIZE || target >= lowest)
                                return errorf(ret_error, -EBADMSG,
                                              "a compression pointer to offset %zu, not before the name it ends", target);
                        if (next == SIZE_MAX)
                                next = pos + 2;
                        pos = lowest = target;
                        continue;
                }
                if (l & 0xc0)
                        return errorf(ret_error, -EBADMSG, "a label of an obsolete or unknown type (0x%02x)", l);
                if (wl + 1 + l > DNS_NAME_WIRE_MAX)
                        return errorf(ret_error, -EBADMSG, "a name longer than %d bytes", DNS_NAME_WIRE_MAX);
                if (l == 0) {
                        if (wire)
                                wire[wl] = 0;
                        wl++;
                        pos++;
                        break;
                }
                if (pos + 1 + l > len)
                        return errorf(ret_error, -EBADMSG, "a label runs past the end of the message");
                if (wire)
                        memcpy(wire + wl, msg + pos, 1 + (size_t) l);
                wl += 1 + (size_t) l;
                if (tl > 0)
                        text[tl++] = '.';
                for (size_t i = 0; i < l; i++) {
                        uint8_t c = msg[pos + 1 + i];

                        if (!label_byte_ok(c)) {
                                char shown[EGRESS_SHOW_MAX];
                                return errorf(ret_error, -EBADMSG, "a label holds '%s', which no host name does",
                                              egress_show(&c, 1, shown));
                        }
                        text[tl++] = (char) (c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
                }
                pos += 1 + (size_t) l;
        }
        text[tl] = 0;
        *off = next != SIZE_MAX ? next : pos;
        if (ret_wire_len)
                *ret_wire_len = wl;
        return 0;
}

int dns_query_parse(const uint8_t *buf, size_t len, DnsQuery *ret, char **ret_error) {
        DnsQuery q = {};
        uint16_t flags;
        size_t pos = DNS_HEADER_SIZE;
        int r;

        if (len < DNS_HEADER_SIZE)
                return errorf(ret_error, -EBADMSG, "%zu bytes, shorter than a DNS header", len);
        flags = get_be16(buf + 2);
        if (flags & DNS_FLAG_QR)
                return errorf(ret_error, -EBADMSG, "an answer, not a question");
        if (get_be16(buf + 4) != 1)
                return errorf(ret_error, -EBADMSG, "%u questions; one is served", get_be16(buf + 4));
        if (get_be16(buf + 6) != 0 || get_be16(buf + 8) != 0)
                return errorf(ret_error, -EBADMSG, "a question with answer or authority records");
        if (get_be16(buf + 10) > 1)
                return errorf(ret_error, -EBADMSG, "%u additional records; a question holds at most an EDNS OPT",
                              get_be16(buf + 10));
        q.id = get_be16(buf);
        q.opcode = (uint8_t) DNS_OPCODE(flags);
        q.rd = flags & DNS_FLAG_RD;
        r = read_name(buf, len, &pos, true, q.qname_wire, &q.qname_wire_len, q.qname, ret_error);
        if (r < 0)
                return r;
        if (len - pos < 4)
                return errorf(ret_error, -EBADMSG, "the question's type and class are cut off");
        q.qtype = get_be16(buf + pos);
        q.qclass = get_be16(buf + pos + 2);
        pos += 4;
        if (get_be16(buf + 10) == 1) {
                char root[DNS_NAME_TEXT_MAX + 1];
                size_t rdlen;

                r = read_name(buf, len, &pos, true, NULL, NULL, root, ret_error);
                if (r < 0)
                        return r;
                if (len - pos < 10)
                        return errorf(ret_error, -EBADMSG, "the additional record is cut off");
                if (root[0] || get_be16(buf + pos) != DNS_TYPE_OPT)
                        return errorf(ret_error, -EBADMSG, "the additional record is not an EDNS OPT at the root");
                rdlen = get_be16(buf + pos + 8);
                q.edns = true;
                q.edns_udp_size = MAX(get_be16(buf + pos + 2), (uint16_t) DNS_UDP_MAX);
                pos += 10;
                if (len - pos < rdlen)
                        return errorf(ret_error, -EBADMSG, "the EDNS options run past the end of the message");
                pos += rdlen;
        }
        if (pos != len)
                return errorf(ret_error, -EBADMSG, "%zu bytes after the question", len - pos);
        *ret = q;
        return 0;
}

static uint16_t answer_flags(uint8_t opcode, bool rd, uint8_t rcode) {
        return (uint16_t) (DNS_FLAG_QR | (unsigned) (opcode & 0xf) << 11 | (rd ? DNS_FLAG_RD : 0) | DNS_FLAG_RA |
                           (rcode & 0xf));
}

int dns_answer_build(const DnsQuery *q, uint8_t rcode, const DnsRecord *records, size_t n_records, size_t max,
                     uint8_t *buf, size_t size, size_t *ret_len) {
        size_t bare, whole, pos, limit = MIN(max, size);
        uint16_t flags = answer_flags(q->opcode, q->rd, rcode);
        bool truncated;

        if (q->qname_wire_len < 1 || q->qname_wire_len > DNS_NAME_WIRE_MAX)
                return -EINVAL;
        bare = DNS_HEADER_SIZE + q->qname_wire_len + 4 + (q->edns ? DNS_OPT_SIZE : 0);
        whole = bare;
        for (size_t i = 0; i < n_records; i++)
                whole += DNS_RR_FIXED + records[i].rdlen;
        truncated = whole > limit;
        if (bare > size)
                return -ENOBUFS;
        if (truncated)
                flags |= DNS_FLAG_TC;

        put_be16(buf, q->id);
        put_be16(buf + 2, flags);
        put_be16(buf + 4, 1);
        put_be16(buf + 6, truncated ? 0 : (uint16_t) n_records);
        put_be16(buf + 8, 0);
        put_be16(buf + 10, q->edns ? 1 : 0);
        pos = DNS_HEADER_SIZE;
        memcpy(buf + pos, q->qname_wire, q->qname_wire_len);
        pos += q->qname_wire_len;
        put_be16(buf + pos, q->qtype);
        put_be16(buf + pos + 2, q->qclass);
        pos += 4;
        for (size_t i = 0; !truncated && i < n_records; i++) {
                put_be16(buf + pos, DNS_PTR_QNAME);
                put_be16(buf + pos + 2, records[i].type);
                put_be16(buf + pos + 4, DNS_CLASS_IN);
                put_be32(buf + pos + 6, records[i].ttl);
                put_be16(buf + pos + 10, records[i].rdlen);
                pos += DNS_RR_FIXED;
                memcpy(buf + pos, records[i].rdata, records[i].rdlen);
                pos += records[i].rdlen;
        }
        if (q->edns) {
                buf[pos] = 0;
                put_be16(buf + pos + 1, DNS_TYPE_OPT);
                put_be16(buf + pos + 3, DNS_EDNS_UDP_SIZE);
                put_be32(buf + pos + 5, 0);
                put_be16(buf + pos + 9, 0);
                pos += DNS_OPT_SIZE;
        }
        *ret_len = pos;
        return 0;
}

int dns_answer_build_a(const DnsQuery *q, uint32_t addr, uint32_t ttl, size_t max, uint8_t *buf, size_t size,
                       size_t *ret_len) {
        uint8_t a[4];
        DnsRecord rec = { .type = DNS_TYPE_A, .ttl = ttl, .rdata = a, .rdlen = 4 };

        put_be32(a, addr);
        return dns_answer_build(q, DNS_RCODE_NOERROR, &rec, 1, max, buf, size, ret_len);
}

int dns_formerr_build(const uint8_t *query, size_t len, uint8_t *buf, size_t size, size_t *ret_len) {
        uint16_t flags;

        if (len < DNS_HEADER_SIZE)
                return -EBADMSG;
        if (size < DNS_HEADER_SIZE)
                return -ENOBUFS;
        flags = get_be16(query + 2);
        memset(buf, 0, DNS_HEADER_SIZE);
        memcpy(buf, query, 2);
        put_be16(buf + 2, answer_flags((uint8_t) DNS_OPCODE(flags), flags & DNS_FLAG_RD, DNS_RCODE_FORMERR));
        *ret_len = DNS_HEADER_SIZE;
        return 0;
}

int dns_query_build(uint16_t id, const char *name, uint16_t type, uint8_t *buf, size_t size, size_t *ret_len) {
        char norm[DNS_NAME_TEXT_MAX + 1];
        size_t n = strlen(name), pos;
        int r;

        r = host_name_normalize(name, n, 0, norm, NULL);
        if (r < 0)
                return r;
        n = strlen(norm);
        /* Header, labels (one length byte per label, i.e. per dot plus one), root, type, class, OPT. */
        if (size < DNS_HEADER_SIZE + n + 2 + 4 + DNS_OPT_SIZE)
                return -ENOBUFS;
        memset(buf, 0, DNS_HEADER_SIZE);
        put_be16(buf, id);
        put_be16(buf + 2, DNS_FLAG_RD);
        put_be16(buf + 4, 1);
        put_be16(buf + 10, 1);
        pos = DNS_HEADER_SIZE;
        for (const char *p = norm; *p;) {
                size_t l = strcspn(p, ".");

                buf[pos++] = (uint8_t) l;
                memcpy(buf + pos, p, l);
                pos += l;
                p += l;
                if (*p == '.')
                        p++;
        }
        buf[pos++] = 0;
        put_be16(buf + pos, type);
        put_be16(buf + pos + 2, DNS_CLASS_IN);
        pos += 4;
        buf[pos] = 0;
        put_be16(buf + pos + 1, DNS_TYPE_OPT);
        put_be16(buf + pos + 3, DNS_EDNS_UDP_SIZE);
        put_be32(buf + pos + 5, 0);
        put_be16(buf + pos + 9, 0);
        pos += DNS_OPT_SIZE;
        *ret_len = pos;
        return 0;
}

typedef struct ParsedRecord {
        char owner[DNS_NAME_TEXT_MAX + 1];
        char target[DNS_NAME_TEXT_MAX + 1];     /* of a CNAME */
        uint16_t type, class;
        uint32_t ttl;
        size_t rdoff;
        uint16_t rdlen;
} ParsedRecord;

/* RFC 2181 section 8: a TTL with the top bit set is read as zero. */
static uint32_t ttl_read(const uint8_t *p) {
        uint32_t t = get_be32(p);
        return t & 0x80000000u ? 0 : t;
}

int dns_answer_parse(const uint8_t *buf, size_t len, uint16_t id, const char *qname, uint16_t qtype,
                     DnsAnswer *ret, char **ret_error) {
        _cleanup_free_ ParsedRecord *rr = NULL;
        char name[DNS_NAME_TEXT_MAX + 1], chain[DNS_CNAME_MAX + 1][DNS_NAME_TEXT_MAX + 1];
        size_t pos = DNS_HEADER_SIZE, n_rr, n_chain = 0;
        DnsAnswer a = {};
        uint16_t flags;
        int r;

        if (len < DNS_HEADER_SIZE)
                return errorf(ret_error, -EBADMSG, "%zu bytes, shorter than a DNS header", len);
        flags = get_be16(buf + 2);
        if (get_be16(buf) != id)
                return errorf(ret_error, -EBADMSG, "an answer to another question (ID %u, not %u)", get_be16(buf), id);
        if (!(flags & DNS_FLAG_QR) || DNS_OPCODE(flags) != 0)
                return errorf(ret_error, -EBADMSG, "not an answer to a standard query");
        if (flags & DNS_FLAG_TC)
                return errorf(ret_error, -EMSGSIZE, "the answer was truncated; ask over TCP");
        if (get_be16(buf + 4) != 1)
                return errorf(ret_error, -EBADMSG, "an answer with %u questions, not the one asked", get_be16(buf + 4));
        r = read_name(buf, len, &pos, true, NULL, NULL, name, ret_error);
        if (r < 0)
                return r;
        if (len - pos < 4)
                return errorf(ret_error, -EBADMSG, "the question's type and class are cut off");
        if (!streq(name, qname) || get_be16(buf + pos) != qtype || get_be16(buf + pos + 2) != DNS_CLASS_IN)
                return errorf(ret_error, -EBADMSG, "an answer to another question");
        pos += 4;
        a.rcode = flags & 0xf;
        strcpy(a.end_name, qname);
        if (a.rcode != DNS_RCODE_NOERROR) {
                *ret = a;
                return 0;
        }

        n_rr = get_be16(buf + 6);
        if (n_rr > DNS_ANSWER_RECORDS_MAX)
                return errorf(ret_error, -E2BIG, "%zu answer records; at most %d are read", n_rr, DNS_ANSWER_RECORDS_MAX);
        rr = calloc(n_rr ?: 1, sizeof(ParsedRecord));
        if (!rr)
                return -ENOMEM;
        for (size_t i = 0; i < n_rr; i++) {
                ParsedRecord *p = &rr[i];

                r = read_name(buf, len, &pos, true, NULL, NULL, p->owner, ret_error);
                if (r < 0)
                        return r;
                if (len - pos < 10)
                        return errorf(ret_error, -EBADMSG, "answer record %zu is cut off", i + 1);
                p->type = get_be16(buf + pos);
                p->class = get_be16(buf + pos + 2);
                p->ttl = ttl_read(buf + pos + 4);
                p->rdlen = get_be16(buf + pos + 8);
                pos += 10;
                if (len - pos < p->rdlen)
                        return errorf(ret_error, -EBADMSG, "answer record %zu's data run past the end of the message",
                                      i + 1);
                p->rdoff = pos;
                if (p->type == DNS_TYPE_CNAME && p->class == DNS_CLASS_IN) {
                        size_t t = pos;

                        /* The target is read within the whole message (it may be compressed) but must end with the data. */
                        r = read_name(buf, pos + p->rdlen, &t, true, NULL, NULL, p->target, ret_error);
                        if (r < 0)
                                return r;
                        if (t != pos + p->rdlen)
                                return errorf(ret_error, -EBADMSG, "answer record %zu: bytes after a CNAME's target", i + 1);
                }
                pos += p->rdlen;
        }

        /* From the name asked, along CNAMEs, to the records of the type asked. */
        a.ttl = UINT32_MAX;
        strcpy(chain[n_chain++], qname);
        for (;;) {
                const char *cur = chain[n_chain - 1];
                const ParsedRecord *cname = NULL;
                bool have = false;

                for (size_t i = 0; i < n_rr; i++) {
                        const ParsedRecord *p = &rr[i];

                        if (p->class != DNS_CLASS_IN || !streq(p->owner, cur))
                                continue;
                        if (p->type == DNS_TYPE_CNAME && qtype != DNS_TYPE_CNAME) {
                                if (cname && !streq(cname->target, p->target))
                                        return errorf(ret_error, -EBADMSG, "%s has two CNAMEs", cur);
                                cname = p;
                        } else if (p->type == qtype) {
                                have = true;
                                if (qtype == DNS_TYPE_A && p->rdlen != 4)
                                        return errorf(ret_error, -EBADMSG, "an A record of %u bytes", p->rdlen);
                                if (a.n_records < DNS_ANSWER_KEEP_MAX) {
                                        a.records[a.n_records++] = (DnsRecord) {
                                                .type = p->type, .ttl = p->ttl, .rdata = buf + p->rdoff, .rdlen = p->rdlen,
                                        };
                                        a.ttl = MIN(a.ttl, p->ttl);
                                }
                        }
                }
                if (cname && have)
                        return errorf(ret_error, -EBADMSG, "%s has both a CNAME and other records", cur);
                if (!cname) {
                        strcpy(a.end_name, cur);
                        break;
                }
                for (size_t i = 0; i < n_chain; i++)
                        if (streq(chain[i], cname->target))
                                return errorf(ret_error, -ELOOP, "a CNAME loop at %s", cname->target);
                if (n_chain > DNS_CNAME_MAX)
                        return errorf(ret_error, -ELOOP, "more than %d CNAMEs from %s", DNS_CNAME_MAX, qname);
                a.ttl = MIN(a.ttl, cname->ttl);
                strcpy(chain[n_chain++], cname->target);
                a.n_cnames++;
        }
        if (a.ttl == UINT32_MAX)
                a.ttl = 0;
        *ret = a;
        return 0;
}

uint32_t dns_record_a(const DnsRecord *r) {
        return get_be32(r->rdata);
}

/* The end of the uncompressed target name that starts at rdata[2]; -EBADMSG when it is not one. */
static int svcb_target_end(const uint8_t *rdata, size_t len, size_t *ret, char **ret_error) {
        size_t pos = 2, wl = 0;

        for (;;) {
                uint8_t l;

                if (pos >= len)
                        return errorf(ret_error, -EBADMSG, "the SVCB target runs past the record");
                l = rdata[pos];
                if (l & 0xc0)
                        return errorf(ret_error, -EBADMSG, "the SVCB target is compressed or of an unknown label type");
                wl += 1 + (size_t) l;
                if (wl > DNS_NAME_WIRE_MAX)
                        return errorf(ret_error, -EBADMSG, "the SVCB target is longer than %d bytes", DNS_NAME_WIRE_MAX);
                pos += 1 + (size_t) l;
                if (l == 0)
                        break;
        }
        if (pos > len)
                return errorf(ret_error, -EBADMSG, "the SVCB target runs past the record");
        *ret = pos;
        return 0;
}

static bool key_in(uint16_t key, const uint16_t *keys, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (keys[i] == key)
                        return true;
        return false;
}

int dns_svcb_strip(const uint8_t *rdata, size_t len, const uint16_t *keys, size_t n_keys, uint8_t *out,
                   size_t size, size_t *ret_len, char **ret_error) {
        const uint8_t *mandatory = NULL;
        size_t pos = 0, o, n_mandatory = 0;
        uint16_t present[64];
        size_t n_present = 0;
        int32_t prev = -1;
        bool drop = false;
        int r;

        if (len < 3)
                return errorf(ret_error, -EBADMSG, "an SVCB record of %zu bytes", len);
        r = svcb_target_end(rdata, len, &pos, ret_error);
        if (r < 0)
                return r;
        if (size < pos)
                return -ENOBUFS;
        memcpy(out, rdata, pos);
        o = pos;
        while (pos < len) {
                uint16_t key, vlen;

                if (len - pos < 4)
                        return errorf(ret_error, -EBADMSG, "an SvcParam cut off by the end of the record");
                key = get_be16(rdata + pos);
                vlen = get_be16(rdata + pos + 2);
                if ((int32_t) key <= prev)
                        return errorf(ret_error, -EBADMSG, "SvcParam key %u after key %d: keys must ascend", key, prev);
                prev = key;
                if (len - pos - 4 < vlen)
                        return errorf(ret_error, -EBADMSG, "SvcParam key %u's value runs past the record", key);
                if (key == SVC_KEY_MANDATORY) {
                        if (vlen == 0 || vlen % 2)
                                return errorf(ret_error, -EBADMSG, "a mandatory list of %u bytes", vlen);
                        mandatory = rdata + pos + 4;
                        n_mandatory = vlen / 2;
                        for (size_t i = 0; i < n_mandatory; i++) {
                                uint16_t k = get_be16(mandatory + 2 * i);
                                if (k == SVC_KEY_MANDATORY || (i > 0 && k <= get_be16(mandatory + 2 * i - 2)))
                                        return errorf(ret_error, -EBADMSG,
                                                      "the mandatory list must ascend and not name itself");
                        }
                }
                if (n_present == ELEMENTSOF(present))
                        return errorf(ret_error, -EBADMSG, "more than %zu SvcParams", ELEMENTSOF(present));
                present[n_present++] = key;
                if (!key_in(key, keys, n_keys)) {
                        if (size - o < 4u + vlen)
                                return -ENOBUFS;
                        memcpy(out + o, rdata + pos, 4u + vlen);
                        o += 4u + vlen;
                }
                pos += 4u + vlen;
        }
        for (size_t i = 0; i < n_mandatory; i++) {
                uint16_t k = get_be16(mandatory + 2 * i);

                if (!key_in(k, present, n_present))
                        return errorf(ret_error, -EBADMSG, "the mandatory key %u is missing from the record", k);
                if (key_in(k, keys, n_keys))
                        drop = true;
        }
        if (drop)
                return 0;
        *ret_len = o;
        return 1;
}

int dns_svcb_sanitize(const uint8_t *rdata, size_t len, uint8_t *out, size_t size, size_t *ret_len,
                      char **ret_error) {
        static const uint16_t removed[] = { SVC_KEY_IPV4HINT, SVC_KEY_ECH, SVC_KEY_IPV6HINT };
        size_t n;
        int r;

        r = dns_svcb_strip(rdata, len, removed, ELEMENTSOF(removed), out, size, &n, ret_error);
        if (r <= 0)
                return r;
        /* An alias, or a service under another name, would lead the client to a name the binding does not know. */
        if (get_be16(rdata) == 0 || rdata[2] != 0)
                return 0;
        *ret_len = n;
        return 1;
}
