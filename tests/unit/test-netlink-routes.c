/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The libmnl route installer against the real kernel: every test runs in its
 * own process (Criterion forks) inside a fresh user + network namespace, so
 * it changes nothing outside and no packet can leave. Nothing sends traffic.
 *
 * Each test body runs in a forked child (isolated.h), checks with CHECK()
 * and reports by its exit status.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "isolated.h"
#include "net-policy.h"
#include "netlink-routes.h"

/* Runs body in a forked child inside a fresh user + network namespace. */
static void run_isolated(void (*body)(void)) {
        run_isolated_with(CLONE_NEWNET, NULL, body);
}

/* The enforcement namespace's links, with veth peers standing in for slirp4netns and the canary namespace. */
static void make_links(Netlink *nl, NetlinkLinks *ret) {
        static const char *const peers[_NET_LINK_MAX] = {
                [NET_LINK_TAP] = "tapp",
                [NET_LINK_DENY] = "sink",
                [NET_LINK_CANARY] = "canaryp",
        };
        int lo = netlink_link_index("lo");

        CHECK((lo) > (0));
        CHECK((netlink_disable_ipv6()) == (0));
        CHECK((netlink_link_set_up(nl, lo)) == (0));
        for (size_t i = 0; i < _NET_LINK_MAX; i++) {
                CHECK((netlink_veth_create(nl, net_links[i].name, peers[i], -1)) == (0), "veth %s", net_links[i].name);
                CHECK((netlink_link_set_up(nl, netlink_link_index(net_links[i].name))) == (0));
                CHECK((netlink_link_set_up(nl, netlink_link_index(peers[i]))) == (0));
        }
        CHECK((netlink_veth_create(nl, "tap0", "other", -1)) == (-EEXIST));
        CHECK((netlink_resolve_links(nl, ret)) == (0));
        for (size_t i = 0; i < _NET_LINK_MAX; i++)
                CHECK((netlink_address_add(nl, ret->ifindex[i], &net_links[i].address, true)) == (0));
}

static NetPolicy *policy(void) {
        Cidr a[2], d[2];
        CHECK((cidr_parse("10.20.0.0/16", &a[0])) == (0));
        CHECK((cidr_parse("198.51.100.0/24", &a[1])) == (0));
        CHECK((cidr_parse("10.20.30.0/24", &d[0])) == (0));
        CHECK((cidr_parse("203.0.113.7/32", &d[1])) == (0));
        CidrList allow = { a, 2 }, deny = { d, 2 };
        NetPolicy *p = NULL;
        CHECK((net_policy_derive(&allow, &deny, NULL, NULL, &p, NULL)) == (0));
        return p;
}

/* A fresh namespace with the policy installed and verified. */
static void setup_installed(Netlink **ret_nl, NetlinkLinks *links, NetPolicy **ret_p) {
        _cleanup_free_ char *mismatch = NULL;
        Netlink *nl = NULL;
        NetPolicy *p;
        size_t failed = SIZE_MAX;
        int r;

        CHECK((netlink_open(&nl)) == (0));
        make_links(nl, links);
        p = policy();
        r = netlink_policy_install(nl, p, links, &failed);
        CHECK((r) == (0), "install failed at route %zu: %s", failed, strerror(-r));
        r = netlink_policy_verify(nl, p, links, &mismatch);
        CHECK((r) == (1), "verify: %d\n%s", r, mismatch ?: "");
        *ret_nl = nl;
        *ret_p = p;
}

static void expect_mismatch(Netlink *nl, const NetPolicy *p, const NetlinkLinks *links, const char *const *lines) {
        _cleanup_free_ char *mismatch = NULL;
        size_t n_lines = 0, n_found = 1;

        CHECK((netlink_policy_verify(nl, p, links, &mismatch)) == (0), "the change went unnoticed");
        CHECK((mismatch) != NULL);
        for (; lines[n_lines]; n_lines++)
                CHECK((strstr(mismatch, lines[n_lines])) != NULL, "missing \"%s\" in:\n%s", lines[n_lines], mismatch);
        for (const char *c = mismatch; *c; c++)
                n_found += *c == '\n';
        CHECK((n_found) == (n_lines), "expected %zu differences, got:\n%s", n_lines, mismatch);
}

static void installs_and_reads_back_exactly(void) {
        _cleanup_netlink_ Netlink *nl = NULL;
        _cleanup_net_policy_ NetPolicy *p = NULL;
        _cleanup_free_ NetlinkRoute *kr = NULL;
        _cleanup_free_ char *problem = NULL;
        NetlinkLinks links;
        size_t n = 0, main_routes = 0;

        setup_installed(&nl, &links, &p);

        /* the main table holds exactly the policy, in number too */
        CHECK((netlink_routes_dump(nl, &kr, &n)) == (0));
        for (size_t i = 0; i < n; i++)
                main_routes += kr[i].table == NET_ROUTE_TABLE;
        CHECK((main_routes) == (p->n_routes));
        CHECK((p->n_routes) == (15));

        /* installing again is refused route by route (NLM_F_EXCL), starting with the first */
        size_t failed = SIZE_MAX;
        CHECK((netlink_policy_install(nl, p, &links, &failed)) == (-EEXIST));
        CHECK((failed) == (0));

        CHECK((netlink_ipv6_absent(nl, &problem)) == (1), "%s", problem ?: "");
}

static void detects_a_removed_route(void) {
        _cleanup_netlink_ Netlink *nl = NULL;
        _cleanup_net_policy_ NetPolicy *p = NULL;
        NetlinkLinks links;
        NetRoute deny10 = {
                .dst = { NET_IP4(10, 0, 0, 0), 8 }, .verdict = NET_DENY, .link = NET_LINK_DENY,
                .gateway = NET_DENY_NEXTHOP, .table = NET_ROUTE_TABLE, .priority = NET_ROUTE_PRIORITY,
        };

        setup_installed(&nl, &links, &p);
        CHECK((netlink_route_delete(nl, &deny10, &links)) == (0));
        expect_mismatch(nl, p, &links, (const char *const[]) {
                "missing route 10.0.0.0/8 via 10.137.55.10 dev deny0 table 254 metric 0", NULL });
}

static void detects_a_foreign_and_a_changed_route(void) {
        _cleanup_netlink_ Netlink *nl = NULL;
        _cleanup_net_policy_ NetPolicy *p = NULL;
        NetlinkLinks links;
        NetRoute extra = {
                .dst = { NET_IP4(192, 0, 2, 0), 24 }, .verdict = NET_ALLOW, .link = NET_LINK_TAP,
                .gateway = NET_GATEWAY, .table = NET_ROUTE_TABLE, .priority = NET_ROUTE_PRIORITY,
        };
        NetRoute deny172 = {
                .dst = { NET_IP4(172, 16, 0, 0), 12 }, .verdict = NET_DENY, .link = NET_LINK_DENY,
                .gateway = NET_DENY_NEXTHOP, .table = NET_ROUTE_TABLE, .priority = NET_ROUTE_PRIORITY,
        };
        NetRoute allow172 = deny172;

        allow172.link = NET_LINK_TAP;
        allow172.gateway = NET_GATEWAY;

        setup_installed(&nl, &links, &p);
        CHECK((netlink_route_add(nl, &extra, &links)) == (0));
        CHECK((netlink_route_delete(nl, &deny172, &links)) == (0));
        CHECK((netlink_route_add(nl, &allow172, &links)) == (0));
        expect_mismatch(nl, p, &links, (const char *const[]) {
                "unexpected route 192.0.2.0/24 via 10.137.54.2 dev tap0 table 254 metric 0",
                "route 172.16.0.0/12 via 10.137.55.10 dev deny0 table 254 metric 0 differs: found 172.16.0.0/12 via 10.137.54.2 dev tap0",
                NULL });
}

static void detects_a_changed_metric(void) {
        _cleanup_netlink_ Netlink *nl = NULL;
        _cleanup_net_policy_ NetPolicy *p = NULL;
        NetlinkLinks links;

        setup_installed(&nl, &links, &p);
        /* the same default route, once more with another metric: Linux keeps both */
        NetRoute def = p->routes[p->n_routes - 1];
        def.priority = 5;
        CHECK((netlink_route_add(nl, &def, &links)) == (0));
        expect_mismatch(nl, p, &links, (const char *const[]) {
                "unexpected route 0.0.0.0/0 via 10.137.54.2 dev tap0 table 254 metric 5", NULL });
        /* and with the original gone, the metric alone differs */
        CHECK((netlink_route_delete(nl, &p->routes[p->n_routes - 1], &links)) == (0));
        expect_mismatch(nl, p, &links, (const char *const[]) {
                "route 0.0.0.0/0 via 10.137.54.2 dev tap0 table 254 metric 0 differs: found 0.0.0.0/0 via 10.137.54.2 dev tap0 table 254 metric 5",
                NULL });
}

static void detects_an_address_with_its_kernel_routes(void) {
        _cleanup_netlink_ Netlink *nl = NULL;
        _cleanup_net_policy_ NetPolicy *p = NULL;
        NetlinkLinks links;
        Cidr a = { NET_IP4(192, 0, 2, 1), 24 };

        setup_installed(&nl, &links, &p);
        /* an address with a prefix route brings a connected route and a local route that the policy lacks */
        CHECK((netlink_address_add(nl, netlink_link_index("sink"), &a, false)) == (0));
        expect_mismatch(nl, p, &links, (const char *const[]) {
                "unexpected route 192.0.2.0/24 dev sink table 254 metric 0",
                "unexpected route 192.0.2.1/32 dev sink table 255",
                "unexpected route 192.0.2.255/32 dev sink table 255",
                NULL });
}

static void sees_ipv6_until_disabled(void) {
        _cleanup_netlink_ Netlink *nl = NULL;
        _cleanup_free_ char *problem = NULL;

        CHECK((netlink_open(&nl)) == (0));
        if (access("/proc/sys/net/ipv6", F_OK) < 0)
                _exit(77);
        CHECK((netlink_link_set_up(nl, netlink_link_index("lo"))) == (0));
        CHECK((netlink_ipv6_absent(nl, &problem)) == (0), "::1 on lo went unnoticed");
        CHECK((strstr(problem, "IPv6 address")) != NULL, "%s", problem);
        CHECK((netlink_disable_ipv6()) == (0));
        free(problem);
        problem = NULL;
        CHECK((netlink_ipv6_absent(nl, &problem)) == (1), "%s", problem ?: "");
}

Test(netlink_routes, installs_and_reads_back_exactly) {
        run_isolated(installs_and_reads_back_exactly);
}

Test(netlink_routes, detects_a_removed_route) {
        run_isolated(detects_a_removed_route);
}

Test(netlink_routes, detects_a_foreign_and_a_changed_route) {
        run_isolated(detects_a_foreign_and_a_changed_route);
}

Test(netlink_routes, detects_a_changed_metric) {
        run_isolated(detects_a_changed_metric);
}

Test(netlink_routes, detects_an_address_with_its_kernel_routes) {
        run_isolated(detects_an_address_with_its_kernel_routes);
}

Test(netlink_routes, sees_ipv6_until_disabled) {
        run_isolated(sees_ipv6_until_disabled);
}
