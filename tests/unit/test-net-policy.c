/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "net-policy.h"

/* A CidrList from prefixes given as strings (test helper; aborts the test on a bad prefix). */
typedef struct TestList {
        Cidr items[8];
        CidrList list;
} TestList;

static const CidrList *mk(TestList *t, const char *const *prefixes) {
        size_t n = 0;
        for (; prefixes && prefixes[n]; n++)
                cr_assert_eq(cidr_parse(prefixes[n], &t->items[n]), 0, "bad test prefix %s", prefixes[n]);
        t->list = (CidrList) { .items = t->items, .n = n };
        return &t->list;
}

#define DEFAULT_POLICY_DIGEST "f1873a2e4a2ba19523c334bb21f65765875b83af55209a1c5cd33a2c19b5aae3"

static void derive_fails(const char *const *ag, const char *const *dg, const char *const *ap, const char *const *dp,
                         int want, const char *want_bad);

#define L(...) ((const char *const[]) { __VA_ARGS__, NULL })

static NetPolicy *derive_ok(const char *const *ag, const char *const *dg, const char *const *ap, const char *const *dp) {
        TestList a, b, c, d;
        NetPolicy *p = NULL;
        char bad[CIDR_STRING_MAX];
        Cidr badc = {};
        int r = net_policy_derive(mk(&a, ag), mk(&b, dg), mk(&c, ap), mk(&d, dp), &p, &badc);
        cr_assert_eq(r, 0, "derive failed: %s (%s)", strerror(-r), cidr_to_string(&badc, bad));
        return p;
}

static void assert_routes(const NetPolicy *p, const char *const *want) {
        char b[NET_ROUTE_STRING_MAX];
        size_t n = 0;
        while (want[n])
                n++;
        for (size_t i = 0; i < p->n_routes && i < n; i++)
                cr_expect_str_eq(net_route_to_string(&p->routes[i], b), want[i], "route %zu", i);
        cr_assert_eq(p->n_routes, n, "got %zu routes, want %zu", p->n_routes, n);
}

/* The fixed topology routes, as they begin every policy. */
#define FIXED_32 \
        "10.137.54.2/32 dev tap0 table 254 metric 0", \
        "10.137.54.3/32 dev tap0 table 254 metric 0", \
        "10.137.55.2/32 dev canary0 table 254 metric 0", \
        "10.137.55.10/32 dev deny0 table 254 metric 0"
#define CANARY_DENY "10.137.55.0/29 via 10.137.55.10 dev deny0 table 254 metric 0"

Test(net_policy, defaults_exact) {
        _cleanup_net_policy_ NetPolicy *p = derive_ok(NULL, NULL, NULL, NULL);
        assert_routes(p, L(FIXED_32,
                           CANARY_DENY,
                           "169.254.0.0/16 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "192.168.0.0/16 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "172.16.0.0/12 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "100.64.0.0/10 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "10.0.0.0/8 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "0.0.0.0/0 via 10.137.54.2 dev tap0 table 254 metric 0"));
        for (size_t i = 0; i < p->n_routes; i++)
                cr_assert_eq(p->routes[i].verdict, p->routes[i].link == NET_LINK_DENY ? NET_DENY : NET_ALLOW);
}

Test(net_policy, configured_exact) {
        _cleanup_net_policy_ NetPolicy *p = derive_ok(L("10.20.0.0/16", "198.51.100.7"),
                                                      L("203.0.113.0/24", "10.0.0.0/8"),
                                                      L("192.168.10.0/24"),
                                                      L("10.20.30.0/24", "8.8.8.8/32"));
        assert_routes(p, L(FIXED_32,
                           "8.8.8.8/32 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "198.51.100.7/32 via 10.137.54.2 dev tap0 table 254 metric 0",
                           CANARY_DENY,
                           "10.20.30.0/24 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "192.168.10.0/24 via 10.137.54.2 dev tap0 table 254 metric 0",
                           "203.0.113.0/24 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "10.20.0.0/16 via 10.137.54.2 dev tap0 table 254 metric 0",
                           "169.254.0.0/16 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "192.168.0.0/16 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "172.16.0.0/12 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "100.64.0.0/10 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "10.0.0.0/8 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "0.0.0.0/0 via 10.137.54.2 dev tap0 table 254 metric 0"));
}

Test(net_policy, deny_everything_replaces_default_route) {
        _cleanup_net_policy_ NetPolicy *p = derive_ok(L("93.184.216.0/24"), L("0.0.0.0/0"), NULL, NULL);
        cr_assert_eq(p->n_routes, 12);
        char b[NET_ROUTE_STRING_MAX];
        cr_assert_str_eq(net_route_to_string(&p->routes[p->n_routes - 1], b),
                         "0.0.0.0/0 via 10.137.55.10 dev deny0 table 254 metric 0");
        cr_assert_str_eq(net_route_to_string(&p->routes[5], b),
                         "93.184.216.0/24 via 10.137.54.2 dev tap0 table 254 metric 0");

        /* allowing everything would allow into the reserved topology: refused, as by config validation */
        derive_fails(L("0.0.0.0/0"), NULL, NULL, NULL, -EPERM, "0.0.0.0/0");
}

static void derive_fails(const char *const *ag, const char *const *dg, const char *const *ap, const char *const *dp,
                         int want, const char *want_bad) {
        TestList a, b, c, d;
        NetPolicy *p = NULL;
        char s[CIDR_STRING_MAX];
        Cidr bad = {};
        int r = net_policy_derive(mk(&a, ag), mk(&b, dg), mk(&c, ap), mk(&d, dp), &p, &bad);
        cr_assert_eq(r, want, "got %d, want %d", r, want);
        cr_assert_null(p);
        cr_assert_str_eq(cidr_to_string(&bad, s), want_bad);
}

Test(net_policy, conflicts) {
        /* equal-prefix allow and deny, in every combination of global and profile lists */
        derive_fails(L("10.1.0.0/16"), L("10.1.0.0/16"), NULL, NULL, -EEXIST, "10.1.0.0/16");
        derive_fails(NULL, L("10.1.0.0/16"), L("10.1.0.0/16"), NULL, -EEXIST, "10.1.0.0/16");
        derive_fails(L("8.8.8.8/32"), NULL, NULL, L("8.8.8.8/32"), -EEXIST, "8.8.8.8/32");
        derive_fails(NULL, NULL, L("1.2.3.0/24"), L("1.2.3.0/24"), -EEXIST, "1.2.3.0/24");
        derive_fails(L("0.0.0.0/0"), L("0.0.0.0/0"), NULL, NULL, -EPERM, "0.0.0.0/0");
        /* a whole default-denied range may not be allowed */
        /* (10.0.0.0/8 contains the reserved topology, which is checked first) */
        derive_fails(L("10.0.0.0/8"), NULL, NULL, NULL, -EPERM, "10.0.0.0/8");
        derive_fails(NULL, NULL, L("172.16.0.0/12"), NULL, -EEXIST, "172.16.0.0/12");
        derive_fails(L("100.64.0.0/10"), NULL, NULL, NULL, -EEXIST, "100.64.0.0/10");
        derive_fails(NULL, NULL, L("169.254.0.0/16"), NULL, -EEXIST, "169.254.0.0/16");
        derive_fails(L("192.168.0.0/16"), NULL, NULL, NULL, -EEXIST, "192.168.0.0/16");
}

Test(net_policy, reserved_topology) {
        derive_fails(L("10.137.54.0/24"), NULL, NULL, NULL, -EPERM, "10.137.54.0/24");
        derive_fails(NULL, NULL, L("10.137.55.2/32"), NULL, -EPERM, "10.137.55.2/32");
        derive_fails(L("10.128.0.0/9"), NULL, NULL, NULL, -EPERM, "10.128.0.0/9");
        derive_fails(L("0.0.0.0/1"), NULL, NULL, NULL, -EPERM, "0.0.0.0/1");
        derive_fails(NULL, L("10.137.54.0/23"), NULL, NULL, -EPERM, "10.137.54.0/23");
        derive_fails(NULL, NULL, NULL, L("10.137.55.0/29"), -EPERM, "10.137.55.0/29");
        derive_fails(NULL, L("10.137.54.3/32"), NULL, NULL, -EPERM, "10.137.54.3/32");

        /* a broader deny is valid: the fixed routes are more specific */
        _cleanup_net_policy_ NetPolicy *p = derive_ok(NULL, L("10.137.0.0/16"), NULL, NULL);
        char b[NET_ROUTE_STRING_MAX];
        cr_assert_str_eq(net_route_to_string(&p->routes[5], b), "10.137.0.0/16 via 10.137.55.10 dev deny0 table 254 metric 0");
        /* allows next to (not in) the reserved range are fine */
        _cleanup_net_policy_ NetPolicy *q = derive_ok(L("10.137.53.0/24", "10.137.56.0/21"), NULL, NULL, NULL);
        cr_assert_eq(q->n_routes, 13);
}

static void digest_of(const char *const *ag, const char *const *dg, const char *const *ap, const char *const *dp,
                      uint8_t ret[SHA256_DIGEST_LEN]) {
        _cleanup_net_policy_ NetPolicy *p = derive_ok(ag, dg, ap, dp);
        cr_assert_eq(net_policy_digest(p, ret), 0);
}

Test(net_policy, digest_stability) {
        uint8_t d0[SHA256_DIGEST_LEN], d1[SHA256_DIGEST_LEN], dx[SHA256_DIGEST_LEN];
        char hex[SHA256_HEX_LEN + 1];

        /* same configuration, same digest; the order of configuration entries does not matter */
        digest_of(L("10.20.0.0/16", "1.1.1.1/32"), L("203.0.113.0/24"), NULL, NULL, d0);
        digest_of(L("1.1.1.1/32", "10.20.0.0/16"), L("203.0.113.0/24"), NULL, NULL, d1);
        cr_assert_eq(memcmp(d0, d1, sizeof(d0)), 0);
        /* the same entry from the profile instead of the global list is the same policy */
        digest_of(L("1.1.1.1/32"), L("203.0.113.0/24"), L("10.20.0.0/16"), NULL, d1);
        cr_assert_eq(memcmp(d0, d1, sizeof(d0)), 0);

        /* any change to the policy changes the digest */
        const char *const *variants[][4] = {
                { L("10.20.0.0/16"), L("203.0.113.0/24"), NULL, NULL },                         /* allow removed */
                { L("10.20.0.0/17", "1.1.1.1/32"), L("203.0.113.0/24"), NULL, NULL },           /* prefix length */
                { L("10.21.0.0/16", "1.1.1.1/32"), L("203.0.113.0/24"), NULL, NULL },           /* address */
                { L("10.20.0.0/16"), L("203.0.113.0/24", "1.1.1.1/32"), NULL, NULL },           /* allow became deny */
                { L("10.20.0.0/16", "1.1.1.1/32"), L("203.0.113.0/24"), NULL, L("9.9.9.9") },   /* profile deny added */
                { L("10.20.0.0/16", "1.1.1.1/32"), NULL, NULL, NULL },                          /* deny removed */
        };
        for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
                digest_of(variants[i][0], variants[i][1], variants[i][2], variants[i][3], dx);
                cr_assert_neq(memcmp(d0, dx, sizeof(d0)), 0, "variant %zu has the same digest", i);
        }

        /* The digest of the default policy is pinned: changing the encoding or the defaults must be deliberate. */
        digest_of(NULL, NULL, NULL, NULL, dx);
        hexify(dx, sizeof(dx), hex);
        cr_assert_str_eq(hex, DEFAULT_POLICY_DIGEST);
}

Test(net_policy, profile_of_config) {
        static const ConfigEnv env = { .home = "/home/u", .xdg_data_home = "/nonexistent-lazaret-unit/share" };
        const char *text =
                "{\"network\": {\"allow\": [\"10.20.0.0/16\"], \"deny\": [\"203.0.113.0/24\"]},"
                " \"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_egress\": [\"192.168.10.0/24\"],"
                "                         \"deny_egress\": [\"10.20.30.0/24\"]}}}";
        _cleanup_config_ Config *c = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_net_policy_ NetPolicy *p = NULL, *q = NULL, *g = NULL;
        uint8_t dp[SHA256_DIGEST_LEN], dq[SHA256_DIGEST_LEN], dg[SHA256_DIGEST_LEN];

        cr_assert_eq(config_parse(text, strlen(text), "/x.json", &env, &c, &err), 0, "%s", err ?: "");
        cr_assert_eq(net_policy_derive_for_profile(c, config_find_profile(c, "dev"), &p), 0);
        q = derive_ok(L("10.20.0.0/16"), L("203.0.113.0/24"), L("192.168.10.0/24"), L("10.20.30.0/24"));
        cr_assert_eq(net_policy_digest(p, dp), 0);
        cr_assert_eq(net_policy_digest(q, dq), 0);
        cr_assert_eq(memcmp(dp, dq, sizeof(dp)), 0);
        /* the built-in profile sees only the global lists */
        cr_assert_eq(net_policy_derive_for_profile(c, config_find_profile(c, "default"), &g), 0);
        cr_assert_eq(net_policy_digest(g, dg), 0);
        cr_assert_neq(memcmp(dp, dg, sizeof(dp)), 0);
        cr_assert_eq(g->n_routes, p->n_routes - 2);
}

/* Host rules (spec 4.5, "Egress by name"): the pool via the gateway, the default route denied; without them nothing changes. */
Test(net_policy, host_rules) {
        static const ConfigEnv env = { .home = "/home/u", .xdg_data_home = "/nonexistent-lazaret-unit/share" };
        const char *text =
                "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_egress\": [\"203.0.113.0/24\"],"
                "                          \"allow_hosts\": [\"Example.COM\", \"*.example.org:22,443\"]},"
                "              \"plain\": {\"image\": \"builtin:default\", \"allow_egress\": [\"203.0.113.0/24\"]}}}";
        _cleanup_config_ Config *c = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_net_policy_ NetPolicy *p = NULL, *q = NULL;
        const Profile *dev;

        cr_assert_eq(config_parse(text, strlen(text), "/x.json", &env, &c, &err), 0, "%s", err ?: "");
        dev = config_find_profile(c, "dev");
        cr_assert_str_eq(dev->allow_hosts[0], "example.com");
        cr_assert_str_eq(dev->allow_hosts[1], "*.example.org:22,443");
        cr_assert_null(dev->allow_hosts[2]);
        cr_assert_eq(net_policy_derive_for_profile(c, dev, &p), 0);
        assert_routes(p, L(FIXED_32,
                           CANARY_DENY,
                           "203.0.113.0/24 via 10.137.54.2 dev tap0 table 254 metric 0",
                           "10.137.64.0/18 via 10.137.54.2 dev tap0 table 254 metric 0",
                           "169.254.0.0/16 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "192.168.0.0/16 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "172.16.0.0/12 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "100.64.0.0/10 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "10.0.0.0/8 via 10.137.55.10 dev deny0 table 254 metric 0",
                           "0.0.0.0/0 via 10.137.55.10 dev deny0 table 254 metric 0"));
        cr_assert_eq(net_policy_derive_for_profile(c, config_find_profile(c, "plain"), &q), 0);
        cr_assert_eq(q->n_routes, p->n_routes - 1);
        cr_assert_str_eq(q->routes[q->n_routes - 1].verdict == NET_ALLOW ? "allow" : "deny", "allow");
}

Test(net_policy, encoding_round_trip) {
        _cleanup_net_policy_ NetPolicy *p = derive_ok(L("10.20.0.0/16"), L("203.0.113.0/24"), NULL, NULL), *q = NULL;
        _cleanup_free_ uint8_t *buf = NULL, *buf2 = NULL;
        size_t len, len2;

        cr_assert_eq(net_policy_encode(p, &buf, &len), 0);
        cr_assert_eq(len, NET_POLICY_HEADER_SIZE + 3 * NET_POLICY_LINK_SIZE + p->n_routes * NET_POLICY_ROUTE_SIZE);
        cr_assert_eq(memcmp(buf, "LZNETPOL\0\0\0\1\0\0\0\3\0\0\0\x0d", 20), 0);
        /* link 0: "tap0", 10.137.54.100/24 */
        cr_assert_eq(memcmp(buf + 20, "tap0\0\0\0\0\0\0\0\0\0\0\0\0\x0a\x89\x36\x64\x18\0\0\0", 24), 0);
        /* route 0: 10.137.54.2/32, tap0, allow, table 254, no gateway, metric 0 */
        cr_assert_eq(memcmp(buf + 92, "\x0a\x89\x36\x02\x20\0\0\0\0\0\0\xfe\0\0\0\0\0\0\0\0", 20), 0);

        cr_assert_eq(net_policy_decode(buf, len, &q), 0);
        cr_assert_eq(net_policy_encode(q, &buf2, &len2), 0);
        cr_assert_eq(len, len2);
        cr_assert_eq(memcmp(buf, buf2, len), 0);
}

static void decode_refuses(const uint8_t *buf, size_t len, const char *what) {
        NetPolicy *p = NULL;
        cr_assert_eq(net_policy_decode(buf, len, &p), -EBADMSG, "accepted: %s", what);
        cr_assert_null(p);
}

Test(net_policy, decode_refuses) {
        _cleanup_net_policy_ NetPolicy *p = derive_ok(L("10.20.0.0/16"), NULL, NULL, NULL);
        _cleanup_free_ uint8_t *buf = NULL, *m = NULL;
        size_t len, r0 = NET_POLICY_HEADER_SIZE + 3 * NET_POLICY_LINK_SIZE;

        cr_assert_eq(net_policy_encode(p, &buf, &len), 0);
        m = malloc(len + 1);
        cr_assert_not_null(m);

#define MUTATE(stmt, what) do { memcpy(m, buf, len); stmt; decode_refuses(m, len, what); } while (0)
        decode_refuses(buf, len - 1, "truncated");
        memcpy(m, buf, len);
        m[len] = 0;
        decode_refuses(m, len + 1, "trailing byte");
        decode_refuses(buf, 0, "empty");
        MUTATE(m[0] = 'X', "magic");
        MUTATE(m[11] = 2, "version");
        MUTATE(m[19]++, "route count");
        MUTATE(m[20] = 'x', "link name");
        MUTATE(m[20 + 19] = 101, "link address");
        MUTATE(m[r0 + 4] = 31, "host bits / order");
        MUTATE(m[r0 + 5] = 3, "link index");
        MUTATE(m[r0 + 6] = 1, "verdict inconsistent with link");
        MUTATE(m[r0 + 7] = 1, "reserved byte");
        MUTATE(m[r0 + 11] = 253, "table");
        MUTATE(m[r0 + 19] = 1, "priority");
        MUTATE(m[r0 + 15] = 9, "gateway on the on-link gateway route");
        /* swap the first two routes: not in canonical order */
        MUTATE((memcpy(m + r0, buf + r0 + NET_POLICY_ROUTE_SIZE, NET_POLICY_ROUTE_SIZE),
                memcpy(m + r0 + NET_POLICY_ROUTE_SIZE, buf + r0, NET_POLICY_ROUTE_SIZE)), "order");
        /* the same route twice */
        MUTATE(memcpy(m + r0 + NET_POLICY_ROUTE_SIZE, buf + r0, NET_POLICY_ROUTE_SIZE), "duplicate");
        /* the gateway route missing (route 0 dropped) */
        memcpy(m, buf, len);
        m[19]--;
        memmove(m + r0, m + r0 + NET_POLICY_ROUTE_SIZE, len - r0 - NET_POLICY_ROUTE_SIZE);
        decode_refuses(m, len - NET_POLICY_ROUTE_SIZE, "fixed route missing");
        /* the default route missing (the last route dropped) */
        memcpy(m, buf, len);
        m[19]--;
        decode_refuses(m, len - NET_POLICY_ROUTE_SIZE, "default route missing");
}

/* The host rules in the canonical bytes: ascending after the routes, so the digest covers them. */
static NetPolicy *derive_with_hosts(const char *hosts_json) {
        static const ConfigEnv env = { .home = "/home/u", .xdg_data_home = "/nonexistent-lazaret-unit/share" };
        _cleanup_config_ Config *c = NULL;
        _cleanup_free_ char *err = NULL, *text = NULL;
        NetPolicy *p = NULL;

        cr_assert_gt(asprintf(&text, "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_hosts\": %s}}}",
                              hosts_json), 0);
        cr_assert_eq(config_parse(text, strlen(text), "/x.json", &env, &c, &err), 0, "%s", err ?: "");
        cr_assert_eq(net_policy_derive_for_profile(c, config_find_profile(c, "dev"), &p), 0);
        return p;
}

Test(net_policy, host_rules_encoded) {
        _cleanup_net_policy_ NetPolicy *p = derive_with_hosts("[\"registry.npmjs.org\", \"*.Example.org:22,443\", \"a.example\"]"),
                                       *same = derive_with_hosts("[\"a.example\", \"registry.npmjs.org\", \"*.example.org:443,22\"]"),
                                       *other = derive_with_hosts("[\"a.example\", \"registry.npmjs.org\", \"*.example.org:443\"]"),
                                       *q = NULL;
        _cleanup_free_ uint8_t *buf = NULL, *buf2 = NULL, *m = NULL;
        uint8_t dp[SHA256_DIGEST_LEN], ds[SHA256_DIGEST_LEN], dother[SHA256_DIGEST_LEN];
        /* count, then each rule's length and text; '*' sorts before 'a': the order is the bytes' */
        static const uint8_t tail[] = "\0\0\0\3" "\0\x14*.example.org:22,443" "\0\x09" "a.example" "\0\x12" "registry.npmjs.org";
        size_t len, len2, end;

        cr_assert_eq(p->n_hosts, 3);
        cr_assert_str_eq(p->hosts[0], "*.example.org:22,443");
        cr_assert_str_eq(p->hosts[1], "a.example");
        cr_assert_str_eq(p->hosts[2], "registry.npmjs.org");
        cr_assert_eq(net_policy_encode(p, &buf, &len), 0);
        end = NET_POLICY_HEADER_SIZE + 3 * NET_POLICY_LINK_SIZE + p->n_routes * NET_POLICY_ROUTE_SIZE;
        cr_assert_eq(len, end + sizeof(tail) - 1);
        cr_assert_eq(memcmp(buf + end, tail, sizeof(tail) - 1), 0);
        cr_assert_eq(net_policy_decode(buf, len, &q), 0);
        cr_assert_eq(q->n_hosts, 3);
        cr_assert_str_eq(q->hosts[2], "registry.npmjs.org");
        cr_assert_eq(net_policy_encode(q, &buf2, &len2), 0);
        cr_assert_eq(len2, len);
        cr_assert_eq(memcmp(buf, buf2, len), 0);

        /* The digest follows the rules, not the order they were written in. */
        cr_assert_eq(net_policy_digest(p, dp), 0);
        cr_assert_eq(net_policy_digest(same, ds), 0);
        cr_assert_eq(net_policy_digest(other, dother), 0);
        cr_assert_eq(memcmp(dp, ds, sizeof(dp)), 0);
        cr_assert_neq(memcmp(dp, dother, sizeof(dp)), 0);

        m = malloc(len + 1);
        cr_assert_not_null(m);
        MUTATE(m[end + 3] = 0, "a count of no host rules");
        MUTATE(m[end + 3] = 4, "a count beyond the rules there are");
        MUTATE(m[end + 6] = '!', "a rule that is none");
        MUTATE(m[end + 8] = 'E', "a rule not in canonical text (upper case)");
        MUTATE(m[end + 28] = 'z', "rules out of order (z.example after registry.npmjs.org)");
        MUTATE(m[end + 5] = 0x13, "a rule's length off by one");
        memcpy(m, buf, len);
        m[len] = 0;
        decode_refuses(m, len + 1, "a trailing byte after the host rules");
        decode_refuses(buf, len - 1, "a host rule cut short");
        /* Host rules in a policy that routes no pool: the default policy with this tail. */
        {
                _cleanup_net_policy_ NetPolicy *d = derive_ok(NULL, NULL, NULL, NULL);
                _cleanup_free_ uint8_t *dbuf = NULL, *dm = NULL;
                size_t dlen;

                cr_assert_eq(net_policy_encode(d, &dbuf, &dlen), 0);
                dm = malloc(dlen + sizeof(tail));
                cr_assert_not_null(dm);
                memcpy(dm, dbuf, dlen);
                memcpy(dm + dlen, tail, sizeof(tail) - 1);
                decode_refuses(dm, dlen + sizeof(tail) - 1, "host rules without the pool routed");
        }
}
