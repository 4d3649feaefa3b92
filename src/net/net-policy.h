/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cidr.h"
#include "cleanup.h"
#include "config.h"
#include "hash.h"

/*
 * The derived egress policy (spec section 4.5): what the Runtime Supervisor
 * installs in the enforcement network namespace, derived only from trusted
 * configuration, the default denies and the fixed topology. Pure: no netlink
 * here; src/supervisor/netlink-routes.c installs and reads it back.
 *
 * Every route is a unicast route in the main table. Allowed prefixes go via
 * the slirp4netns gateway on tap0; denied prefixes go via an address nobody
 * owns on the dead-end veth deny0 (spec section 6.1, D1), never blackhole,
 * unreachable or prohibit routes, and never routes on lo. Longest-prefix match
 * decides; no two routes share a destination.
 */

/* The links of the enforcement namespace, named by role (never by ifindex). */
typedef enum NetLinkRole {
        NET_LINK_TAP,           /* slirp4netns' tap device */
        NET_LINK_DENY,          /* the dead-end veth end that denied prefixes route into */
        NET_LINK_CANARY,        /* the veth end toward the canary peer namespace */
        _NET_LINK_MAX,
} NetLinkRole;

typedef struct NetLinkSpec {
        const char *name;       /* interface name in the enforcement namespace */
        Cidr address;           /* its one IPv4 address, added without a prefix route */
} NetLinkSpec;

/* Indexed by NetLinkRole. */
extern const NetLinkSpec net_links[_NET_LINK_MAX];

/* Fixed topology (seed 004), host byte order. */
#define NET_IP4(a, b, c, d) (((uint32_t) (a) << 24) | ((uint32_t) (b) << 16) | ((uint32_t) (c) << 8) | (uint32_t) (d))
#define NET_SLIRP_CIDR          "10.137.54.0/24"
#define NET_GATEWAY             NET_IP4(10, 137, 54, 2)
#define NET_DNS                 NET_IP4(10, 137, 54, 3)
#define NET_SANDBOX             NET_IP4(10, 137, 54, 100)
#define NET_CANARY_ENFORCEMENT  NET_IP4(10, 137, 55, 1)
#define NET_CANARY_ALLOWED      NET_IP4(10, 137, 55, 2)
#define NET_CANARY_DENIED       NET_IP4(10, 137, 55, 3)
#define NET_CANARY_ALLOWED_STR  "10.137.55.2"
#define NET_CANARY_DENIED_STR   "10.137.55.3"
#define NET_GATEWAY_STR         "10.137.54.2"
#define NET_DNS_STR             "10.137.54.3"
/* The egress helper's synthetic addresses (spec 4.5, "Egress by name"), routed via the gateway with host rules. */
#define NET_EGRESS_POOL         NET_IP4(10, 137, 64, 0)
#define NET_EGRESS_POOL_PREFIXLEN 18
/*
 * The network attestation's name canaries (spec 4.5), for a policy with host
 * rules: names under .invalid (RFC 6761: resolved nowhere, and no host rule
 * may name one), which the egress helper answers itself and whose
 * connections it carries to the canary responder's Unix socket, never to an
 * address. The helper allows the allowed one, on NET_CANARY_NAME_PORT only,
 * when the supervisor gives it that socket (--canary-socket); no rule
 * allows the denied one. The allowed one is bound from the helper's start
 * to the pool's first address (NET_EGRESS_CANARY_BOUND), so that the probe
 * can send its ClientHello canaries there while it resolves the name, and
 * then checks that the answer is that address. The unbound address is the
 * pool's last, which the helper never hands out: a direct connection to it
 * must be refused.
 */
#define NET_CANARY_NAME_ALLOWED "allowed.canary.lazaret.invalid"
#define NET_CANARY_NAME_DENIED  "denied.canary.lazaret.invalid"
#define NET_CANARY_NAME_PORT    443
#define NET_EGRESS_CANARY_BOUND NET_IP4(10, 137, 64, 1)
#define NET_EGRESS_CANARY_BOUND_STR "10.137.64.1"
#define NET_EGRESS_UNBOUND      NET_IP4(10, 137, 127, 254)
#define NET_EGRESS_UNBOUND_STR  "10.137.127.254"
/* deny0 is 10.137.55.9/30; 10.137.55.10 is the deny next hop, which no one owns. */
#define NET_DENY_ADDRESS        NET_IP4(10, 137, 55, 9)
#define NET_DENY_NEXTHOP        NET_IP4(10, 137, 55, 10)

#define NET_ROUTE_TABLE         254u    /* RT_TABLE_MAIN */
#define NET_ROUTE_PRIORITY      0u      /* precedence is the prefix length alone */

/* Upper bound on routes: 4 configured lists of CONFIG_MAX_LIST, defaults, fixed routes. */
#define NET_POLICY_MAX_ROUTES   2048

typedef enum NetVerdict {
        NET_ALLOW,
        NET_DENY,
} NetVerdict;

typedef struct NetRoute {
        Cidr dst;
        NetVerdict verdict;
        NetLinkRole link;
        uint32_t gateway;       /* host byte order; 0: on-link (scope link) */
        uint32_t table;
        uint32_t priority;
} NetRoute;

/*
 * Routes in canonical order: prefix length descending, on-link before via,
 * then destination ascending. That is an order Linux accepts them in (a via
 * route's next hop is an on-link /32 installed before it) and, for a
 * first-match route table, the longest-prefix order.
 */
typedef struct NetPolicy {
        NetRoute *routes;
        size_t n_routes;
        /* The host rules the egress helper enforces (spec 4.5, "Egress by
         * name"), in their canonical text (host_rule_format()), ascending,
         * each once; none (NULL) for a profile without them. Part of the
         * canonical bytes, so the digest the supervisor attests and the
         * coordinator keeps as the readiness fingerprint covers them. */
        char **hosts;
        size_t n_hosts;
} NetPolicy;

NetPolicy *net_policy_free(NetPolicy *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(NetPolicy *, net_policy_free);
#define _cleanup_net_policy_ _cleanup_(net_policy_freep)

/*
 * Derives the policy from the global and profile lists (any may be NULL).
 * Refuses, with the same rules as configuration validation:
 *   -EEXIST  an allow equal to a deny, or to a whole default-denied range
 *   -EPERM   an allow overlapping 10.137.54.0/23, or a deny inside it
 *   -E2BIG   more than NET_POLICY_MAX_ROUTES routes
 * On -EEXIST/-EPERM, *ret_bad (if not NULL) is the offending prefix.
 */
int net_policy_derive(const CidrList *allow_global, const CidrList *deny_global,
                      const CidrList *allow_profile, const CidrList *deny_profile,
                      NetPolicy **ret, Cidr *ret_bad);

/* The policy of one profile of a validated configuration, with its host rules. */
int net_policy_derive_for_profile(const Config *c, const Profile *prof, NetPolicy **ret);

/*
 * Canonical bytes (spec section 4.5; all integers big-endian):
 *   "LZNETPOL" | u32 version (1) | u32 n_links | u32 n_routes
 *   n_links x  { char name[16] NUL-padded | u32 address | u8 prefixlen | 3 zero bytes }
 *   n_routes x { u32 dst | u8 prefixlen | u8 link | u8 verdict | u8 zero
 *                | u32 table | u32 gateway | u32 priority }
 * and, only when the policy has host rules:
 *   u32 n_hosts (1 to HOST_RULE_LIST_MAX)
 *   n_hosts x  { u16 length | the rule's canonical text, no NUL }
 * in ascending byte order. A policy without host rules ends after its
 * routes, so its bytes and digest are what they were before host rules.
 */
#define NET_POLICY_MAGIC "LZNETPOL"
#define NET_POLICY_VERSION 1u
#define NET_POLICY_HEADER_SIZE 20u
#define NET_POLICY_LINK_SIZE 24u
#define NET_POLICY_ROUTE_SIZE 20u

int net_policy_encode(const NetPolicy *p, uint8_t **ret, size_t *ret_len);

/*
 * Parses canonical bytes strictly: the fixed link table, valid prefixes,
 * consistent verdicts and links, the canonical order with no duplicate
 * destination; host rules in canonical text and order, and only with the synthetic pool routed and the default route
 * denied. -EBADMSG on anything else.
 */
int net_policy_decode(const uint8_t *buf, size_t len, NetPolicy **ret);

/* SHA-256 of the canonical bytes. */
int net_policy_digest(const NetPolicy *p, uint8_t ret[SHA256_DIGEST_LEN]);

/* "10.0.0.0/8 via 10.137.55.10 dev deny0 table 254 metric 0" */
#define NET_ROUTE_STRING_MAX 128
const char *net_route_to_string(const NetRoute *r, char *buf);

const char *net_verdict_to_string(NetVerdict v);
