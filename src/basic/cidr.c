/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cidr.h"
#include "macro.h"
#include "parse-util.h"

#define IP4(a, b, c, d) (((uint32_t) (a) << 24) | ((uint32_t) (b) << 16) | ((uint32_t) (c) << 8) | (uint32_t) (d))

const Cidr cidr_reserved_topology = { IP4(10, 137, 54, 0), 23 };

/*
 * RFC 1918 as the source documents say, plus two departures (spec section
 * 4.5): 100.64.0.0/10 (RFC 6598 shared address space: carrier-grade NAT and
 * some clouds' internal services) and 169.254.0.0/16 (link-local, where cloud
 * metadata endpoints such as 169.254.169.254 answer with instance credentials).
 */
const Cidr cidr_default_deny[CIDR_N_DEFAULT_DENY] = {
        { IP4(10, 0, 0, 0), 8 },
        { IP4(100, 64, 0, 0), 10 },
        { IP4(169, 254, 0, 0), 16 },
        { IP4(172, 16, 0, 0), 12 },
        { IP4(192, 168, 0, 0), 16 },
};

static uint32_t mask_of(uint8_t prefixlen) {
        return prefixlen == 0 ? 0 : UINT32_MAX << (32 - prefixlen);
}

int cidr_parse(const char *s, Cidr *ret) {
        char addr[INET6_ADDRSTRLEN + 1];
        const char *slash;
        uint32_t plen = 32;
        struct in_addr a;
        size_t l;

        if (!s || !*s)
                return -EINVAL;

        slash = strchr(s, '/');
        l = slash ? (size_t) (slash - s) : strlen(s);
        if (l == 0 || l >= sizeof(addr))
                return -EINVAL;
        memcpy(addr, s, l);
        addr[l] = 0;

        if (strchr(addr, ':'))
                return -EAFNOSUPPORT;

        /* inet_pton() accepts only the strict dotted-quad form. */
        if (inet_pton(AF_INET, addr, &a) != 1)
                return -EINVAL;

        /* Decimal, no sign, no leading zero; any refusal is -EINVAL. */
        if (slash && parse_uint32(slash + 1, 0, 32, &plen) < 0)
                return -EINVAL;

        uint32_t h = ntohl(a.s_addr);
        if (h & ~mask_of(plen))
                return -EADDRNOTAVAIL;

        *ret = (Cidr) { .addr = h, .prefixlen = (uint8_t) plen };
        return 0;
}

const char *ipv4_to_string(uint32_t addr, char buf[static IPV4_STRING_MAX]) {
        snprintf(buf, IPV4_STRING_MAX, "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 255, (addr >> 8) & 255, addr & 255);
        return buf;
}

const char *cidr_to_string(const Cidr *c, char *buf) {
        char a[IPV4_STRING_MAX];

        snprintf(buf, CIDR_STRING_MAX, "%s/%u", ipv4_to_string(c->addr, a), c->prefixlen);
        return buf;
}

bool cidr_equal(const Cidr *a, const Cidr *b) {
        return a->addr == b->addr && a->prefixlen == b->prefixlen;
}

bool cidr_contains(const Cidr *outer, const Cidr *inner) {
        return outer->prefixlen <= inner->prefixlen &&
                (inner->addr & mask_of(outer->prefixlen)) == outer->addr;
}

bool cidr_overlaps(const Cidr *a, const Cidr *b) {
        return cidr_contains(a, b) || cidr_contains(b, a);
}
