/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* An IPv4 prefix; addr is in host byte order with all host bits zero. */
typedef struct Cidr {
        uint32_t addr;
        uint8_t prefixlen;
} Cidr;

/*
 * Parses "a.b.c.d/n" (or a bare address, meaning /32). Errors:
 *   -EINVAL        not an IPv4 prefix
 *   -EAFNOSUPPORT  an IPv6 prefix (IPv6 is disabled in the sandbox)
 *   -EADDRNOTAVAIL host bits set below the prefix length
 */
int cidr_parse(const char *s, Cidr *ret);

/* "a.b.c.d/n" into buf (at least CIDR_STRING_MAX bytes). */
#define CIDR_STRING_MAX 24
const char *cidr_to_string(const Cidr *c, char *buf);

/* "a.b.c.d" of an address in host byte order into buf. */
#define IPV4_STRING_MAX 16
const char *ipv4_to_string(uint32_t addr, char buf[static IPV4_STRING_MAX]);

bool cidr_equal(const Cidr *a, const Cidr *b);
/* True when the two prefixes share at least one address. */
bool cidr_overlaps(const Cidr *a, const Cidr *b);
/* True when inner lies entirely inside outer. */
bool cidr_contains(const Cidr *outer, const Cidr *inner);

/* The fixed Lazaret network topology (slirp4netns network plus canaries). */
extern const Cidr cidr_reserved_topology;
/*
 * The ranges denied unless a more specific allow exists: RFC 1918, shared
 * address space (100.64.0.0/10) and link-local (169.254.0.0/16), in address
 * order. Allowing exactly one of them is refused.
 */
#define CIDR_N_DEFAULT_DENY 5
extern const Cidr cidr_default_deny[CIDR_N_DEFAULT_DENY];
