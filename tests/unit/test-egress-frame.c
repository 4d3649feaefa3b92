/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include <criterion/criterion.h>

#include "egress-frame.h"
#include "egress-util.h"

static const uint8_t guest_mac[6] = { 0x02, 0, 0, 0, 0, 0x64 };
static const uint8_t gw_mac[6] = { 0x52, 0x55, 0x0a, 0x89, 0x36, 0x02 };

/* An Ethernet frame from the guest 10.137.54.100 to dst, with an IPv4 header and l4 as given. */
static size_t frame(uint8_t *buf, uint8_t proto, uint32_t dst, const uint8_t *l4, size_t l4_len, uint16_t frag) {
        uint8_t *ip = buf + ETH_HEADER_SIZE;

        memcpy(buf, gw_mac, 6);
        memcpy(buf + 6, guest_mac, 6);
        put_be16(buf + 12, 0x0800);
        memset(ip, 0, 20);
        ip[0] = 0x45;
        put_be16(ip + 2, (uint16_t) (20 + l4_len));
        put_be16(ip + 6, frag);
        ip[8] = 64;
        ip[9] = proto;
        put_be32(ip + 12, 0x0a893664);
        put_be32(ip + 16, dst);
        put_be16(ip + 10, inet_checksum(ip, 20, 0));
        memcpy(ip + 20, l4, l4_len);
        return ETH_HEADER_SIZE + 20 + l4_len;
}

static size_t tcp(uint8_t *buf, uint32_t dst, uint16_t dport, uint8_t flags) {
        uint8_t h[20] = {};

        put_be16(h, 40000);
        put_be16(h + 2, dport);
        put_be32(h + 4, 1000);
        h[12] = 5 << 4;
        h[13] = flags;
        return frame(buf, 6, dst, h, sizeof(h), 0);
}

Test(egress_frame, kinds) {
        uint8_t buf[256], udp[12] = { 0x9c, 0x40, 0, 53, 0, 12, 0, 0, 'a', 'b', 'c', 'd' };
        FrameInfo f;
        size_t n;

        n = tcp(buf, 0x0a894001, 443, TCP_FLAG_SYN);
        frame_parse(buf, n, &f);
        cr_assert_eq(f.kind, FRAME_TCP_SYN);
        cr_assert_eq(f.dst, 0x0a894001u);
        cr_assert_eq(f.dport, 443);
        n = tcp(buf, 0x0a894001, 443, TCP_FLAG_SYN | TCP_FLAG_ACK);
        frame_parse(buf, n, &f);
        cr_assert_eq(f.kind, FRAME_TCP, "a SYN-ACK answers a host forward: not a new connection");

        n = frame(buf, 17, 0x0a893603, udp, sizeof(udp), 0);
        frame_parse(buf, n, &f);
        cr_assert_eq(f.kind, FRAME_UDP);
        cr_assert_eq(f.dport, 53);
        cr_assert_eq(f.payload_len, 4);
        cr_assert_eq(memcmp(f.payload, "abcd", 4), 0);

        /* Padding after the packet is allowed, a packet longer than the frame is not. */
        frame_parse(buf, n + 10, &f);
        cr_assert_eq(f.kind, FRAME_UDP);
        frame_parse(buf, n - 1, &f);
        cr_assert_eq(f.kind, FRAME_DROP);

        /* A UDP length past the packet. */
        put_be16(buf + ETH_HEADER_SIZE + 20 + 4, 40);
        frame_parse(buf, n, &f);
        cr_assert_eq(f.kind, FRAME_DROP);

        /* Fragments never pass: the filter would judge the first alone. */
        n = frame(buf, 17, 0x0a893603, udp, sizeof(udp), 0x2000);
        frame_parse(buf, n, &f);
        cr_assert_eq(f.kind, FRAME_DROP);
        cr_assert_str_eq(f.why, "an IPv4 fragment");
        n = frame(buf, 17, 0x0a893603, udp, sizeof(udp), 0x0001);
        frame_parse(buf, n, &f);
        cr_assert_eq(f.kind, FRAME_DROP);

        /* Other protocols, IPv6, short frames. */
        n = frame(buf, 47, 0x0a893603, udp, sizeof(udp), 0);
        frame_parse(buf, n, &f);
        cr_assert_eq(f.kind, FRAME_DROP);
        put_be16(buf + 12, 0x86dd);
        frame_parse(buf, n, &f);
        cr_assert_eq(f.kind, FRAME_DROP);
        put_be16(buf + 12, 0x0806);
        frame_parse(buf, n, &f);
        cr_assert_eq(f.kind, FRAME_ARP);
        frame_parse(buf, 13, &f);
        cr_assert_eq(f.kind, FRAME_DROP);
}

Test(egress_frame, every_prefix_is_safe) {
        uint8_t buf[256];
        size_t n = tcp(buf, 0x0a894001, 443, TCP_FLAG_SYN);
        FrameInfo f;

        /* Every cut of a valid frame is read without reading past it. */
        for (size_t i = 0; i < n; i++) {
                frame_parse(buf, i, &f);
                cr_assert(f.kind == FRAME_DROP || i >= ETH_HEADER_SIZE + 40, "cut at %zu", i);
        }
}

Test(egress_frame, replies) {
        uint8_t buf[256], out[512], udp[12] = { 0x9c, 0x40, 0, 53, 0, 12, 0, 0, 'a', 'b', 'c', 'd' };
        FrameInfo f, g;
        size_t n;

        /* The DNS answer: addresses and ports swapped, checksums that verify. */
        n = frame(buf, 17, 0x0a893603, udp, sizeof(udp), 0);
        frame_parse(buf, n, &f);
        n = frame_build_udp_reply(&f, (const uint8_t *) "answer", 6, out, sizeof(out));
        cr_assert_eq(n, ETH_HEADER_SIZE + 20 + 8 + 6);
        frame_parse(out, n, &g);
        cr_assert_eq(g.kind, FRAME_UDP);
        cr_assert_eq(g.src, 0x0a893603u);
        cr_assert_eq(g.dst, 0x0a893664u);
        cr_assert_eq(g.sport, 53);
        cr_assert_eq(g.dport, 40000);
        cr_assert_eq(memcmp(out, guest_mac, 6), 0);
        cr_assert_eq(memcmp(out + 6, gw_mac, 6), 0);
        cr_assert_eq(inet_checksum(out + ETH_HEADER_SIZE, 20, 0), 0);
        cr_assert_eq(frame_build_udp_reply(&f, (const uint8_t *) "answer", 6, out, n - 1), 0);

        /* The reset of a refused SYN acknowledges it. */
        n = tcp(buf, 0xc612000a, 443, TCP_FLAG_SYN);
        frame_parse(buf, n, &f);
        n = frame_build_tcp_rst(&f, out, sizeof(out));
        frame_parse(out, n, &g);
        cr_assert_eq(g.kind, FRAME_TCP);
        cr_assert_eq(g.tcp_flags, TCP_FLAG_RST | TCP_FLAG_ACK);
        cr_assert_eq(g.src, 0xc612000au);
        cr_assert_eq(g.sport, 443);
        cr_assert_eq(g.dport, 40000);
        cr_assert_eq(get_be32(out + ETH_HEADER_SIZE + 20 + 8), 1001u);
        {
                /* TCP checksum over the pseudo header. */
                const uint8_t *ip = out + ETH_HEADER_SIZE;
                uint32_t sum = get_be16(ip + 12) + get_be16(ip + 14) + get_be16(ip + 16) + get_be16(ip + 18) + 6 + 20;
                cr_assert_eq(inet_checksum(ip + 20, 20, sum), 0);
        }

        /* ICMP port unreachable quotes the datagram's header and first 8 bytes. */
        n = frame(buf, 17, 0xc612000a, udp, sizeof(udp), 0);
        frame_parse(buf, n, &f);
        n = frame_build_icmp_unreach(&f, ICMP_UNREACH_PORT, out, sizeof(out));
        cr_assert_eq(n, ETH_HEADER_SIZE + 20 + 8 + 28);
        frame_parse(out, n, &g);
        cr_assert_eq(g.kind, FRAME_ICMP);
        cr_assert_eq(out[ETH_HEADER_SIZE + 20], 3);
        cr_assert_eq(out[ETH_HEADER_SIZE + 21], 3);
        cr_assert_eq(inet_checksum(out + ETH_HEADER_SIZE + 20, 36, 0), 0);
        cr_assert_eq(memcmp(out + ETH_HEADER_SIZE + 28, buf + ETH_HEADER_SIZE, 28), 0);
}
