/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cidr.h"
#include "net-policy.h"

/*
 * rtnetlink for the Runtime Supervisor, through libmnl (no `ip` subprocess):
 * builds the enforcement namespace's links, installs a derived NetPolicy in
 * the current network namespace, and reads it back. Every request asks for
 * an ACK and every error is returned as -errno. Nothing here logs.
 */

typedef struct Netlink Netlink;

int netlink_open(Netlink **ret);
Netlink *netlink_close(Netlink *nl);
DEFINE_TRIVIAL_CLEANUP_FUNC(Netlink *, netlink_close);
#define _cleanup_netlink_ _cleanup_(netlink_closep)

/* ifindex of a link of the current namespace, by name; -ENODEV when absent. */
int netlink_link_index(const char *name);

/*
 * Creates a veth pair: name here, peer in the network namespace peer_netns_fd
 * (-1: here as well). Both ends stay down. -EEXIST when a name is taken.
 */
int netlink_veth_create(Netlink *nl, const char *name, const char *peer, int peer_netns_fd);
int netlink_link_delete(Netlink *nl, int ifindex);
int netlink_link_set_up(Netlink *nl, int ifindex);
int netlink_link_set_down(Netlink *nl, int ifindex);
int netlink_link_set_mtu(Netlink *nl, int ifindex, uint32_t mtu);

/*
 * Waits, polling every millisecond for up to timeout_ms, until the link's
 * operational state is UP: 0, -ETIMEDOUT, or the kernel's -errno. A veth
 * end brought up while its peer was still down gets carrier, and its
 * transmit queue, only when the kernel's link watch work has run for it
 * (net/core/link_watch.c, a work item on another thread); a frame it sends
 * before that is dropped. The operational state turns UP in that same work,
 * just before the queue is attached.
 */
int netlink_link_wait_up(Netlink *nl, int ifindex, int timeout_ms);

/* Adds address/prefixlen to a link; with no_prefix_route the kernel adds no connected route. */
int netlink_address_add(Netlink *nl, int ifindex, const Cidr *address, bool no_prefix_route);

/* Writes 1 to net.ipv6.conf.{default,all}.disable_ipv6 of the current namespace. */
int netlink_disable_ipv6(void);

/* ifindex of each policy link (net_links[]) in the current namespace. */
typedef struct NetlinkLinks {
        int ifindex[_NET_LINK_MAX];
} NetlinkLinks;

int netlink_resolve_links(Netlink *nl, NetlinkLinks *ret);

/* One route as the kernel reports it (IPv4, host byte order). */
typedef struct NetlinkRoute {
        uint32_t dst;
        uint8_t prefixlen;
        uint32_t table;
        uint8_t type;           /* RTN_* */
        uint8_t scope;          /* RT_SCOPE_* */
        uint32_t gateway;       /* 0: none */
        int oif;                /* 0: none */
        uint32_t priority;
        bool multipath;         /* RTA_MULTIPATH present */
        bool other_source;      /* RTA_SRC, a source prefix or a TOS: not something Lazaret installs */
} NetlinkRoute;

/* RTM_NEWROUTE with NLM_F_CREATE|NLM_F_EXCL for one route; -EEXIST when one is there. */
int netlink_route_add(Netlink *nl, const NetRoute *r, const NetlinkLinks *links);
int netlink_route_delete(Netlink *nl, const NetRoute *r, const NetlinkLinks *links);

/* Installs every route of the policy, in its canonical order; stops at the first failure. */
int netlink_policy_install(Netlink *nl, const NetPolicy *p, const NetlinkLinks *links, size_t *ret_failed_index);

/* All IPv4 routes of every table (RTM_GETROUTE dump). */
int netlink_routes_dump(Netlink *nl, NetlinkRoute **ret, size_t *ret_n);

/*
 * Compares the namespace's IPv4 routes with the policy exactly. The main table
 * must hold exactly the policy's routes (destination, prefix length, table,
 * gateway, output link, priority, unicast type and matching scope), nothing
 * more; the local table may hold only the kernel's local and broadcast routes
 * for the addresses of lo and the policy links; no other table may hold
 * anything. Returns 1 on an exact match; 0 on a mismatch with *ret_mismatch
 * naming every difference (one per line); <0 on error.
 */
int netlink_policy_verify(Netlink *nl, const NetPolicy *p, const NetlinkLinks *links, char **ret_mismatch);

/*
 * Checks that the namespace has no IPv6 address or route at all (after
 * netlink_disable_ipv6() not even ::1 on lo remains). Returns 1 when so, 0
 * with *ret_problem describing the first one found, <0 on error.
 */
int netlink_ipv6_absent(Netlink *nl, char **ret_problem);
