/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-rule.h"
#include "macro.h"
#include "net-policy.h"
#include "strv.h"

const NetLinkSpec net_links[_NET_LINK_MAX] = {
        [NET_LINK_TAP] = { "tap0", { NET_SANDBOX, 24 } },
        [NET_LINK_DENY] = { "deny0", { NET_DENY_ADDRESS, 30 } },
        [NET_LINK_CANARY] = { "canary0", { NET_CANARY_ENFORCEMENT, 32 } },
};

/* The routes of the fixed topology, present in every policy. */
static const NetRoute fixed_routes[] = {
        /* slirp4netns gateway and synthetic DNS, on-link, more specific than the 10/8 deny */
        { { NET_GATEWAY, 32 }, NET_ALLOW, NET_LINK_TAP, 0, NET_ROUTE_TABLE, NET_ROUTE_PRIORITY },
        { { NET_DNS, 32 }, NET_ALLOW, NET_LINK_TAP, 0, NET_ROUTE_TABLE, NET_ROUTE_PRIORITY },
        /* the allowed canary, on-link through the canary veth */
        { { NET_CANARY_ALLOWED, 32 }, NET_ALLOW, NET_LINK_CANARY, 0, NET_ROUTE_TABLE, NET_ROUTE_PRIORITY },
        /* the deny next hop: on-link on deny0, where nobody answers for it */
        { { NET_DENY_NEXTHOP, 32 }, NET_DENY, NET_LINK_DENY, 0, NET_ROUTE_TABLE, NET_ROUTE_PRIORITY },
        /* the aggregate canary deny (covers the denied canary .3) */
        { { NET_IP4(10, 137, 55, 0), 29 }, NET_DENY, NET_LINK_DENY, NET_DENY_NEXTHOP, NET_ROUTE_TABLE, NET_ROUTE_PRIORITY },
};

NetPolicy *net_policy_free(NetPolicy *p) {
        if (!p)
                return NULL;
        free(p->routes);
        strv_free(p->hosts);
        free(p);
        return NULL;
}

const char *net_verdict_to_string(NetVerdict v) {
        return v == NET_DENY ? "deny" : "allow";
}

const char *net_route_to_string(const NetRoute *r, char *buf) {
        char d[CIDR_STRING_MAX], g[16];
        const char *dev = r->link < _NET_LINK_MAX ? net_links[r->link].name : "?";

        cidr_to_string(&r->dst, d);
        if (r->gateway != 0) {
                ipv4_to_string(r->gateway, g);
                snprintf(buf, NET_ROUTE_STRING_MAX, "%s via %s dev %s table %u metric %u", d, g, dev, r->table, r->priority);
        } else
                snprintf(buf, NET_ROUTE_STRING_MAX, "%s dev %s table %u metric %u", d, dev, r->table, r->priority);
        return buf;
}

/* Canonical order; see net-policy.h. */
static int route_compare(const NetRoute *a, const NetRoute *b) {
        if (a->dst.prefixlen != b->dst.prefixlen)
                return a->dst.prefixlen > b->dst.prefixlen ? -1 : 1;
        if ((a->gateway == 0) != (b->gateway == 0))
                return a->gateway == 0 ? -1 : 1;
        if (a->dst.addr != b->dst.addr)
                return a->dst.addr < b->dst.addr ? -1 : 1;
        return 0;
}

static int route_compare_qsort(const void *a, const void *b) {
        return route_compare(a, b);
}

static bool route_equal(const NetRoute *a, const NetRoute *b) {
        return cidr_equal(&a->dst, &b->dst) && a->verdict == b->verdict && a->link == b->link &&
                a->gateway == b->gateway && a->table == b->table && a->priority == b->priority;
}

static NetRoute route_for(const Cidr *dst, NetVerdict v) {
        return (NetRoute) {
                .dst = *dst,
                .verdict = v,
                .link = v == NET_DENY ? NET_LINK_DENY : NET_LINK_TAP,
                .gateway = v == NET_DENY ? NET_DENY_NEXTHOP : NET_GATEWAY,
                .table = NET_ROUTE_TABLE,
                .priority = NET_ROUTE_PRIORITY,
        };
}

/* Adds r unless an equal destination with the same verdict is there; an opposite verdict is a conflict. */
static int add_route(NetPolicy *p, const NetRoute *r, Cidr *ret_bad) {
        for (size_t i = 0; i < p->n_routes; i++) {
                if (!cidr_equal(&p->routes[i].dst, &r->dst))
                        continue;
                if (p->routes[i].verdict == r->verdict && p->routes[i].link == r->link && p->routes[i].gateway == r->gateway)
                        return 0;
                if (ret_bad)
                        *ret_bad = r->dst;
                return -EEXIST;
        }
        if (p->n_routes >= NET_POLICY_MAX_ROUTES)
                return -E2BIG;
        p->routes[p->n_routes++] = *r;
        return 0;
}

static int check_list(const CidrList *l, NetVerdict v, Cidr *ret_bad) {
        if (!l)
                return 0;
        for (size_t i = 0; i < l->n; i++) {
                const Cidr *c = &l->items[i];
                if (v == NET_ALLOW) {
                        /* Same rules as config validation (config.c: check_topology, check_conflicts). */
                        if (cidr_overlaps(c, &cidr_reserved_topology))
                                goto reserved;
                        for (size_t j = 0; j < ELEMENTSOF(cidr_default_deny); j++)
                                if (cidr_equal(c, &cidr_default_deny[j])) {
                                        if (ret_bad)
                                                *ret_bad = *c;
                                        return -EEXIST;
                                }
                } else if (cidr_contains(&cidr_reserved_topology, c))
                        goto reserved;
                continue;
        reserved:
                if (ret_bad)
                        *ret_bad = *c;
                return -EPERM;
        }
        return 0;
}

static int add_list(NetPolicy *p, const CidrList *l, NetVerdict v, Cidr *ret_bad) {
        int r;

        if (!l)
                return 0;
        for (size_t i = 0; i < l->n; i++) {
                NetRoute route = route_for(&l->items[i], v);
                r = add_route(p, &route, ret_bad);
                if (r < 0)
                        return r;
        }
        return 0;
}

int net_policy_derive(const CidrList *allow_global, const CidrList *deny_global,
                      const CidrList *allow_profile, const CidrList *deny_profile,
                      NetPolicy **ret, Cidr *ret_bad) {
        _cleanup_net_policy_ NetPolicy *p = NULL;
        const Cidr everything = { 0, 0 };
        bool have_default = false;
        int r;

        r = check_list(allow_global, NET_ALLOW, ret_bad);
        if (r >= 0)
                r = check_list(allow_profile, NET_ALLOW, ret_bad);
        if (r >= 0)
                r = check_list(deny_global, NET_DENY, ret_bad);
        if (r >= 0)
                r = check_list(deny_profile, NET_DENY, ret_bad);
        if (r < 0)
                return r;

        p = calloc(1, sizeof(NetPolicy));
        if (!p)
                return -ENOMEM;
        p->routes = calloc(NET_POLICY_MAX_ROUTES, sizeof(NetRoute));
        if (!p->routes)
                return -ENOMEM;

        for (size_t i = 0; i < ELEMENTSOF(fixed_routes); i++) {
                r = add_route(p, &fixed_routes[i], ret_bad);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(cidr_default_deny); i++) {
                NetRoute route = route_for(&cidr_default_deny[i], NET_DENY);
                r = add_route(p, &route, ret_bad);
                if (r < 0)
                        return r;
        }
        r = add_list(p, deny_global, NET_DENY, ret_bad);
        if (r >= 0)
                r = add_list(p, deny_profile, NET_DENY, ret_bad);
        if (r >= 0)
                r = add_list(p, allow_global, NET_ALLOW, ret_bad);
        if (r >= 0)
                r = add_list(p, allow_profile, NET_ALLOW, ret_bad);
        if (r < 0)
                return r;

        /* Everything else is allowed: the default route, unless a configured deny is 0.0.0.0/0. */
        for (size_t i = 0; i < p->n_routes; i++)
                if (cidr_equal(&p->routes[i].dst, &everything))
                        have_default = true;
        if (!have_default) {
                NetRoute route = route_for(&everything, NET_ALLOW);
                r = add_route(p, &route, ret_bad);
                if (r < 0)
                        return r;
        }

        qsort(p->routes, p->n_routes, sizeof(NetRoute), route_compare_qsort);
        *ret = TAKE_PTR(p);
        return 0;
}

/*
 * With host rules (spec 4.5, "Egress by name"): the egress helper's
 * synthetic pool via the gateway, and the default route denied, so that a
 * public address no allowed name resolved to is not reached by address;
 * prefixes allow_egress lists stay reachable.
 */
static int strcmp_qsort(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int policy_for_names(NetPolicy *p, char *const *hosts) {
        const Cidr everything = { 0, 0 }, pool = { NET_EGRESS_POOL, NET_EGRESS_POOL_PREFIXLEN };
        NetRoute route = route_for(&pool, NET_ALLOW);
        int r;

        /* The rules as configuration holds them (canonical, each pattern once), in canonical order. */
        p->hosts = strv_copy(hosts);
        if (!p->hosts)
                return -ENOMEM;
        p->n_hosts = strv_length(p->hosts);
        if (p->n_hosts > HOST_RULE_LIST_MAX)
                return -E2BIG;
        qsort(p->hosts, p->n_hosts, sizeof(char *), strcmp_qsort);

        for (size_t i = 0; i < p->n_routes; i++)
                if (cidr_equal(&p->routes[i].dst, &everything) && p->routes[i].verdict == NET_ALLOW)
                        p->routes[i] = route_for(&everything, NET_DENY);
        r = add_route(p, &route, NULL);
        if (r < 0)
                return r;
        qsort(p->routes, p->n_routes, sizeof(NetRoute), route_compare_qsort);
        return 0;
}

int net_policy_derive_for_profile(const Config *c, const Profile *prof, NetPolicy **ret) {
        _cleanup_net_policy_ NetPolicy *p = NULL;
        int r;

        r = net_policy_derive(&c->allow, &c->deny,
                              prof ? &prof->allow_egress : NULL, prof ? &prof->deny_egress : NULL,
                              &p, NULL);
        if (r < 0)
                return r;
        if (prof && prof->allow_hosts && prof->allow_hosts[0]) {
                r = policy_for_names(p, prof->allow_hosts);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(p);
        return 0;
}

static uint8_t *put_u32(uint8_t *b, uint32_t v) {
        b[0] = (uint8_t) (v >> 24);
        b[1] = (uint8_t) (v >> 16);
        b[2] = (uint8_t) (v >> 8);
        b[3] = (uint8_t) v;
        return b + 4;
}

static uint32_t get_u32(const uint8_t *b) {
        return ((uint32_t) b[0] << 24) | ((uint32_t) b[1] << 16) | ((uint32_t) b[2] << 8) | (uint32_t) b[3];
}

int net_policy_encode(const NetPolicy *p, uint8_t **ret, size_t *ret_len) {
        size_t len;
        uint8_t *buf, *b;

        if (p->n_routes > NET_POLICY_MAX_ROUTES || p->n_hosts > HOST_RULE_LIST_MAX)
                return -E2BIG;
        len = NET_POLICY_HEADER_SIZE + _NET_LINK_MAX * NET_POLICY_LINK_SIZE + p->n_routes * NET_POLICY_ROUTE_SIZE;
        if (p->n_hosts > 0)
                len += 4;
        for (size_t i = 0; i < p->n_hosts; i++) {
                if (strlen(p->hosts[i]) >= HOST_RULE_STRING_MAX)
                        return -E2BIG;
                len += 2 + strlen(p->hosts[i]);
        }
        buf = calloc(1, len);
        if (!buf)
                return -ENOMEM;

        b = buf;
        memcpy(b, NET_POLICY_MAGIC, 8);
        b = put_u32(b + 8, NET_POLICY_VERSION);
        b = put_u32(b, _NET_LINK_MAX);
        b = put_u32(b, (uint32_t) p->n_routes);
        for (size_t i = 0; i < _NET_LINK_MAX; i++) {
                /* names are shorter than IFNAMSIZ (16); the rest stays zero */
                memcpy(b, net_links[i].name, strlen(net_links[i].name));
                b = put_u32(b + 16, net_links[i].address.addr);
                b[0] = net_links[i].address.prefixlen;
                b += 4;
        }
        for (size_t i = 0; i < p->n_routes; i++) {
                const NetRoute *r = &p->routes[i];
                b = put_u32(b, r->dst.addr);
                b[0] = r->dst.prefixlen;
                b[1] = (uint8_t) r->link;
                b[2] = (uint8_t) r->verdict;
                b = put_u32(b + 4, r->table);
                b = put_u32(b, r->gateway);
                b = put_u32(b, r->priority);
        }
        if (p->n_hosts > 0)
                b = put_u32(b, (uint32_t) p->n_hosts);
        for (size_t i = 0; i < p->n_hosts; i++) {
                size_t n = strlen(p->hosts[i]);

                b[0] = (uint8_t) (n >> 8);
                b[1] = (uint8_t) n;
                memcpy(b + 2, p->hosts[i], n);
                b += 2 + n;
        }

        *ret = buf;
        *ret_len = len;
        return 0;
}

static bool route_is_consistent(const NetRoute *r) {
        Cidr canon;

        if (r->dst.prefixlen > 32 || r->link >= _NET_LINK_MAX || r->verdict > NET_DENY)
                return false;
        /* host bits must be zero */
        canon = r->dst;
        if (canon.prefixlen < 32 && (canon.addr & (canon.prefixlen == 0 ? UINT32_MAX : UINT32_MAX >> canon.prefixlen)))
                return false;
        if (r->table != NET_ROUTE_TABLE || r->priority != NET_ROUTE_PRIORITY)
                return false;
        switch (r->link) {
        case NET_LINK_TAP:
                return r->verdict == NET_ALLOW && (r->gateway == 0 || r->gateway == NET_GATEWAY);
        case NET_LINK_DENY:
                return r->verdict == NET_DENY && (r->gateway == 0 || r->gateway == NET_DENY_NEXTHOP);
        case NET_LINK_CANARY:
                return r->verdict == NET_ALLOW && r->gateway == 0;
        default:
                return false;
        }
}

/*
 * The host rules after the routes (see net-policy.h): each the canonical
 * text of a rule configuration accepts, ascending, filling the rest
 * exactly; only in a policy that routes the pool and denies the
 * default route, as policy_for_names() makes it.
 */
static int decode_hosts(NetPolicy *p, const uint8_t *b, size_t left) {
        const Cidr pool = { NET_EGRESS_POOL, NET_EGRESS_POOL_PREFIXLEN };
        bool have_pool = false, default_denied = false;
        uint32_t n;

        for (size_t i = 0; i < p->n_routes; i++) {
                if (cidr_equal(&p->routes[i].dst, &pool) && p->routes[i].verdict == NET_ALLOW)
                        have_pool = true;
                if (p->routes[i].dst.prefixlen == 0 && p->routes[i].verdict == NET_DENY)
                        default_denied = true;
        }
        if (!have_pool || !default_denied || left < 4)
                return -EBADMSG;
        n = get_u32(b);
        b += 4;
        left -= 4;
        if (n == 0 || n > HOST_RULE_LIST_MAX)
                return -EBADMSG;
        p->hosts = calloc(n + 1, sizeof(char *));
        if (!p->hosts)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                char canon[HOST_RULE_STRING_MAX];
                HostRule rule;
                size_t l;

                if (left < 2)
                        return -EBADMSG;
                l = (size_t) b[0] << 8 | b[1];
                if (l == 0 || l >= HOST_RULE_STRING_MAX || left - 2 < l)
                        return -EBADMSG;
                p->hosts[i] = strndup((const char *) b + 2, l);
                if (!p->hosts[i])
                        return -ENOMEM;
                p->n_hosts++;
                b += 2 + l;
                left -= 2 + l;
                /* host_rule_parse() refuses names under .invalid: the canaries' are never a profile's. */
                if (strlen(p->hosts[i]) != l || host_rule_parse(p->hosts[i], &rule, NULL) < 0)
                        return -EBADMSG;
                host_rule_format(&rule, canon);
                if (!streq(canon, p->hosts[i]) || (i > 0 && strcmp(p->hosts[i - 1], p->hosts[i]) >= 0))
                        return -EBADMSG;
        }
        return left == 0 ? 0 : -EBADMSG;
}

int net_policy_decode(const uint8_t *buf, size_t len, NetPolicy **ret) {
        _cleanup_net_policy_ NetPolicy *p = NULL;
        uint32_t n_links, n_routes;
        const uint8_t *b;
        bool have_default = false;

        if (len < NET_POLICY_HEADER_SIZE || memcmp(buf, NET_POLICY_MAGIC, 8) != 0)
                return -EBADMSG;
        if (get_u32(buf + 8) != NET_POLICY_VERSION)
                return -EBADMSG;
        n_links = get_u32(buf + 12);
        n_routes = get_u32(buf + 16);
        if (n_links != _NET_LINK_MAX || n_routes > NET_POLICY_MAX_ROUTES)
                return -EBADMSG;
        if (len < NET_POLICY_HEADER_SIZE + (size_t) n_links * NET_POLICY_LINK_SIZE + (size_t) n_routes * NET_POLICY_ROUTE_SIZE)
                return -EBADMSG;

        b = buf + NET_POLICY_HEADER_SIZE;
        for (size_t i = 0; i < _NET_LINK_MAX; i++, b += NET_POLICY_LINK_SIZE) {
                uint8_t want[NET_POLICY_LINK_SIZE] = {};
                memcpy(want, net_links[i].name, strlen(net_links[i].name));
                put_u32(want + 16, net_links[i].address.addr);
                want[20] = net_links[i].address.prefixlen;
                if (memcmp(b, want, sizeof(want)) != 0)
                        return -EBADMSG;
        }

        p = calloc(1, sizeof(NetPolicy));
        if (!p)
                return -ENOMEM;
        p->routes = calloc(n_routes ?: 1, sizeof(NetRoute));
        if (!p->routes)
                return -ENOMEM;

        for (size_t i = 0; i < n_routes; i++, b += NET_POLICY_ROUTE_SIZE) {
                NetRoute *r = &p->routes[i];

                if (b[7] != 0)
                        return -EBADMSG;
                *r = (NetRoute) {
                        .dst = { get_u32(b), b[4] },
                        .link = (NetLinkRole) b[5],
                        .verdict = (NetVerdict) b[6],
                        .table = get_u32(b + 8),
                        .gateway = get_u32(b + 12),
                        .priority = get_u32(b + 16),
                };
                if (b[5] >= _NET_LINK_MAX || b[6] > NET_DENY || !route_is_consistent(r))
                        return -EBADMSG;
                /* canonical order, strictly increasing */
                if (i > 0 && route_compare(&p->routes[i - 1], r) >= 0)
                        return -EBADMSG;
                for (size_t j = 0; j < i; j++)
                        if (cidr_equal(&p->routes[j].dst, &r->dst))
                                return -EBADMSG;
                if (r->dst.prefixlen == 0)
                        have_default = true;
                p->n_routes++;
        }

        /* The fixed topology and a default route are part of every policy. */
        if (!have_default)
                return -EBADMSG;
        for (size_t i = 0; i < ELEMENTSOF(fixed_routes); i++) {
                bool found = false;
                for (size_t j = 0; j < p->n_routes && !found; j++)
                        found = route_equal(&p->routes[j], &fixed_routes[i]);
                if (!found)
                        return -EBADMSG;
        }
        if (b < buf + len) {
                int r = decode_hosts(p, b, (size_t) (buf + len - b));
                if (r < 0)
                        return r;
        }

        *ret = TAKE_PTR(p);
        return 0;
}

int net_policy_digest(const NetPolicy *p, uint8_t ret[SHA256_DIGEST_LEN]) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        int r;

        r = net_policy_encode(p, &buf, &len);
        if (r < 0)
                return r;
        sha256_buf(buf, len, ret);
        return 0;
}
