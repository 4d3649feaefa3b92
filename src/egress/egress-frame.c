/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "egress-frame.h"
#include "egress-util.h"

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_ARP 0x0806
#define IPPROTO_ICMP_ 1
#define IPPROTO_TCP_ 6
#define IPPROTO_UDP_ 17

uint16_t inet_checksum(const void *buf, size_t len, uint32_t sum) {
        const uint8_t *p = buf;

        for (; len >= 2; p += 2, len -= 2)
                sum += get_be16(p);
        if (len)
                sum += (uint32_t) p[0] << 8;
        while (sum >> 16)
                sum = (sum & 0xffff) + (sum >> 16);
        return (uint16_t) ~sum;
}

static FrameInfo *drop(FrameInfo *f, const char *why) {
        f->kind = FRAME_DROP;
        f->why = why;
        return f;
}

void frame_parse(const uint8_t *buf, size_t len, FrameInfo *ret) {
        FrameInfo f = { .kind = FRAME_DROP };
        const uint8_t *ip, *l4;
        size_t ihl, total, l4_len;
        uint16_t type, frag;

        *ret = f;
        if (len < ETH_HEADER_SIZE) {
                drop(ret, "a frame shorter than its Ethernet header");
                return;
        }
        memcpy(f.dst_mac, buf, 6);
        memcpy(f.src_mac, buf + 6, 6);
        type = get_be16(buf + 12);
        if (type == ETHERTYPE_ARP) {
                f.kind = FRAME_ARP;
                *ret = f;
                return;
        }
        if (type != ETHERTYPE_IPV4) {
                *ret = *drop(&f, "neither IPv4 nor ARP");
                return;
        }
        ip = buf + ETH_HEADER_SIZE;
        len -= ETH_HEADER_SIZE;
        if (len < IPV4_HEADER_MIN || ip[0] >> 4 != 4) {
                *ret = *drop(&f, "not an IPv4 header");
                return;
        }
        ihl = (size_t) (ip[0] & 0x0f) * 4;
        total = get_be16(ip + 2);
        /* A frame may carry padding after the packet, never less than it. */
        if (ihl < IPV4_HEADER_MIN || total < ihl || total > len) {
                *ret = *drop(&f, "an IPv4 packet whose lengths do not add up");
                return;
        }
        frag = get_be16(ip + 6);
        /* libslirp reassembles fragments; the filter would judge only the first, so none pass. */
        if (frag & 0x3fff) {
                *ret = *drop(&f, "an IPv4 fragment");
                return;
        }
        f.ip = ip;
        f.ip_len = total;
        f.ttl = ip[8];
        f.src = get_be32(ip + 12);
        f.dst = get_be32(ip + 16);
        l4 = ip + ihl;
        l4_len = total - ihl;
        switch (ip[9]) {
        case IPPROTO_TCP_: {
                size_t off;

                if (l4_len < 20) {
                        *ret = *drop(&f, "a TCP header cut short");
                        return;
                }
                off = (size_t) (l4[12] >> 4) * 4;
                if (off < 20 || off > l4_len) {
                        *ret = *drop(&f, "a TCP header whose length does not add up");
                        return;
                }
                f.sport = get_be16(l4);
                f.dport = get_be16(l4 + 2);
                f.tcp_seq = get_be32(l4 + 4);
                f.tcp_flags = l4[13];
                f.payload = l4 + off;
                f.payload_len = l4_len - off;
                f.kind = (f.tcp_flags & (TCP_FLAG_SYN | TCP_FLAG_ACK)) == TCP_FLAG_SYN ? FRAME_TCP_SYN : FRAME_TCP;
                break;
        }
        case IPPROTO_UDP_: {
                size_t ulen;

                if (l4_len < 8) {
                        *ret = *drop(&f, "a UDP header cut short");
                        return;
                }
                ulen = get_be16(l4 + 4);
                if (ulen < 8 || ulen > l4_len) {
                        *ret = *drop(&f, "a UDP datagram whose length does not add up");
                        return;
                }
                f.sport = get_be16(l4);
                f.dport = get_be16(l4 + 2);
                f.payload = l4 + 8;
                f.payload_len = ulen - 8;
                f.kind = FRAME_UDP;
                break;
        }
        case IPPROTO_ICMP_:
                f.kind = FRAME_ICMP;
                break;
        default:
                *ret = *drop(&f, "an IP protocol other than TCP, UDP and ICMP");
                return;
        }
        *ret = f;
}

/* Ethernet and IPv4 headers of a reply to req carrying l4_len bytes of proto; returns the IP header. */
static uint8_t *put_headers(const FrameInfo *req, uint8_t proto, size_t l4_len, uint8_t *out) {
        uint8_t *ip = out + ETH_HEADER_SIZE;

        memcpy(out, req->src_mac, 6);
        memcpy(out + 6, req->dst_mac, 6);
        put_be16(out + 12, ETHERTYPE_IPV4);
        memset(ip, 0, IPV4_HEADER_MIN);
        ip[0] = 0x45;
        put_be16(ip + 2, (uint16_t) (IPV4_HEADER_MIN + l4_len));
        put_be16(ip + 6, 0x4000);       /* DF */
        ip[8] = 64;
        ip[9] = proto;
        put_be32(ip + 12, req->dst);
        put_be32(ip + 16, req->src);
        put_be16(ip + 10, inet_checksum(ip, IPV4_HEADER_MIN, 0));
        return ip;
}

/* The sum of the TCP/UDP pseudo header of a reply to req. */
static uint32_t pseudo_sum(const FrameInfo *req, uint8_t proto, size_t l4_len) {
        return (req->dst >> 16) + (req->dst & 0xffff) + (req->src >> 16) + (req->src & 0xffff) + proto +
               (uint32_t) l4_len;
}

size_t frame_build_udp_reply(const FrameInfo *req, const uint8_t *payload, size_t n, uint8_t *out, size_t size) {
        size_t l4_len = 8 + n, total = ETH_HEADER_SIZE + IPV4_HEADER_MIN + l4_len;
        uint8_t *udp;
        uint16_t sum;

        if (total > size || l4_len > 0xffff - IPV4_HEADER_MIN)
                return 0;
        udp = put_headers(req, IPPROTO_UDP_, l4_len, out) + IPV4_HEADER_MIN;
        put_be16(udp, req->dport);
        put_be16(udp + 2, req->sport);
        put_be16(udp + 4, (uint16_t) l4_len);
        put_be16(udp + 6, 0);
        memcpy(udp + 8, payload, n);
        sum = inet_checksum(udp, l4_len, pseudo_sum(req, IPPROTO_UDP_, l4_len));
        put_be16(udp + 6, sum == 0 ? 0xffff : sum);
        return total;
}

size_t frame_build_icmp_unreach(const FrameInfo *req, uint8_t code, uint8_t *out, size_t size) {
        size_t quoted, l4_len, total;
        uint8_t *icmp;

        if (!req->ip)
                return 0;
        quoted = (size_t) (req->ip[0] & 0x0f) * 4 + 8;
        if (quoted > req->ip_len)
                quoted = req->ip_len;
        l4_len = 8 + quoted;
        total = ETH_HEADER_SIZE + IPV4_HEADER_MIN + l4_len;
        if (total > size)
                return 0;
        icmp = put_headers(req, IPPROTO_ICMP_, l4_len, out) + IPV4_HEADER_MIN;
        memset(icmp, 0, 8);
        icmp[0] = 3;
        icmp[1] = code;
        memcpy(icmp + 8, req->ip, quoted);
        put_be16(icmp + 2, inet_checksum(icmp, l4_len, 0));
        return total;
}

size_t frame_build_tcp_rst(const FrameInfo *req, uint8_t *out, size_t size) {
        size_t l4_len = 20, total = ETH_HEADER_SIZE + IPV4_HEADER_MIN + l4_len;
        uint32_t ack = req->tcp_seq + (uint32_t) req->payload_len + ((req->tcp_flags & TCP_FLAG_SYN) ? 1 : 0) +
                       ((req->tcp_flags & TCP_FLAG_FIN) ? 1 : 0);
        uint8_t *tcp;

        if (total > size)
                return 0;
        tcp = put_headers(req, IPPROTO_TCP_, l4_len, out) + IPV4_HEADER_MIN;
        memset(tcp, 0, l4_len);
        put_be16(tcp, req->dport);
        put_be16(tcp + 2, req->sport);
        put_be32(tcp + 8, ack);
        tcp[12] = 5 << 4;
        tcp[13] = TCP_FLAG_RST | TCP_FLAG_ACK;
        put_be16(tcp + 16, inet_checksum(tcp, l4_len, pseudo_sum(req, IPPROTO_TCP_, l4_len)));
        return total;
}
