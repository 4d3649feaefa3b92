/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The egress helper's frame filter, its pure part (spec section 4.5,
 * "Egress by name"): what an Ethernet frame the sandbox wrote to tap0 is,
 * read strictly enough to judge it before libslirp sees it, and the few
 * frames the helper writes back itself (a DNS answer over UDP, an ICMP
 * port unreachable, a TCP reset). Reads buf[0..len) only; the builders
 * write at most size bytes and return the frame's length, 0 when it does
 * not fit.
 */

#define ETH_HEADER_SIZE 14
#define IPV4_HEADER_MIN 20
/* The tap's MTU (slirp4netns' and the helper's) and the largest frame read from it. */
#define EGRESS_MTU 65520u
#define EGRESS_FRAME_MAX (EGRESS_MTU + ETH_HEADER_SIZE)

typedef enum FrameKind {
        FRAME_DROP,             /* not IPv4 or ARP, malformed, a fragment, a protocol not carried */
        FRAME_ARP,
        FRAME_TCP,              /* a TCP segment that does not open a connection */
        FRAME_TCP_SYN,          /* SYN without ACK: a new connection */
        FRAME_UDP,
        FRAME_ICMP,
} FrameKind;

typedef struct FrameInfo {
        FrameKind kind;
        const char *why;                /* FRAME_DROP: static text */
        uint8_t src_mac[6], dst_mac[6];
        uint32_t src, dst;              /* host byte order */
        uint8_t ttl;
        uint16_t sport, dport;          /* TCP and UDP */
        uint32_t tcp_seq;
        uint8_t tcp_flags;
        const uint8_t *ip;              /* the IPv4 packet (header included), up to its total length */
        size_t ip_len;
        const uint8_t *payload;         /* TCP or UDP payload */
        size_t payload_len;
} FrameInfo;

#define TCP_FLAG_FIN 0x01
#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_RST 0x04
#define TCP_FLAG_ACK 0x10

/* Always fills *ret; kind FRAME_DROP with why for what is not passed on. */
void frame_parse(const uint8_t *buf, size_t len, FrameInfo *ret);

/* The Internet checksum of buf, folded, starting from sum (for pseudo headers). */
uint16_t inet_checksum(const void *buf, size_t len, uint32_t sum);

/*
 * A UDP answer to the datagram req: Ethernet addresses swapped, from
 * req->dst:req->dport to req->src:req->sport, payload as given.
 */
size_t frame_build_udp_reply(const FrameInfo *req, const uint8_t *payload, size_t n, uint8_t *out, size_t size);

/* ICMP destination unreachable (type 3, code) from req->dst, quoting req's header and first 8 bytes. */
#define ICMP_UNREACH_PORT 3
size_t frame_build_icmp_unreach(const FrameInfo *req, uint8_t code, uint8_t *out, size_t size);

/* The reset a refused SYN gets: RST|ACK from req->dst:dport, acknowledging the SYN. */
size_t frame_build_tcp_rst(const FrameInfo *req, uint8_t *out, size_t size);
