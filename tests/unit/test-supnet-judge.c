/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * supnet_judge(): the supervisor's verdict on the in-gVisor probe's report
 * (the lines of lazaret-init's probe) against the derived policy. The reports are
 * built here from the policy itself, in /proc/net/route's encoding, and
 * then spoiled one way at a time.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "net-policy.h"
#include "supervisor-net.h"
#include "line-buffer.h"
#include "macro.h"

#define CHALLENGE "lz-0123456789abcdef:00112233445566778899aabbccddeeff"

static SupNet net = SUPNET_INIT;
static char err[512];

static void setup(void) {
        Cidr allow;

        cr_assert_eq(cidr_parse("10.23.0.5/32", &allow), 0);
        cr_assert_eq(net_policy_derive(&(CidrList) { .items = &allow, .n = 1 }, NULL, NULL, NULL, &net.policy, NULL), 0);
        snprintf(net.challenge, sizeof(net.challenge), "%s", CHALLENGE);
        err[0] = 0;
}

static void teardown(void) {
        supnet_done(&net);
}

TestSuite(supnet_judge, .init = setup, .fini = teardown);

/* One /proc/net/route line of the probe: hex of the network-order value, as Linux and gVisor print it. */
static void append_route(FILE *f, const char *iface, uint32_t dst, int plen, uint32_t gw, int metric) {
        uint32_t mask = plen == 0 ? 0 : ~0u << (32 - plen);

        fprintf(f, "route %s %08X %08X %04X %08X %d\n", iface, htonl(dst), htonl(gw), gw ? 3 : 1, htonl(mask), metric);
}

typedef enum Spoil {
        SPOIL_NONE,
        SPOIL_DROP_DENY,        /* every route on deny0 missing (what gVisor does to routes on lo) */
        SPOIL_EXTRA,            /* one route the policy lacks */
        SPOIL_WRONG_GATEWAY,    /* the 10/8 deny toward the slirp gateway instead */
        SPOIL_DENIED_REACHED,
        SPOIL_NO_CHALLENGE,     /* the allowed canary answered something else */
        SPOIL_ALLOWED_FAILED,
        SPOIL_IPV6,
        SPOIL_NO_END,
        SPOIL_NO_DENIED,        /* no line about the denied canary */
} Spoil;

static char *report(Spoil s) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        cr_assert_not_null(f);
        /* With host rules the probe runs no allowed address canary (the allowed name canary is its proof). */
        if (net.policy->n_hosts > 0)
                ;
        else if (s == SPOIL_NO_CHALLENGE)
                fprintf(f, "allowed lz-other:ffff\n");
        else if (s == SPOIL_ALLOWED_FAILED)
                fprintf(f, "allowed-failed Connection timed out\n");
        else
                fprintf(f, "allowed %s\n", CHALLENGE);
        for (size_t i = 0; i < net.policy->n_routes; i++) {
                const NetRoute *r = &net.policy->routes[i];
                uint32_t gw = r->gateway;

                if (s == SPOIL_DROP_DENY && r->link == NET_LINK_DENY)
                        continue;
                if (s == SPOIL_WRONG_GATEWAY && r->dst.addr == NET_IP4(10, 0, 0, 0) && r->dst.prefixlen == 8) {
                        append_route(f, "tap0", r->dst.addr, 8, NET_GATEWAY, 0);
                        continue;
                }
                append_route(f, net_links[r->link].name, r->dst.addr, r->dst.prefixlen, gw, (int) r->priority);
        }
        if (s == SPOIL_EXTRA)
                append_route(f, "tap0", NET_IP4(10, 99, 0, 0), 24, NET_GATEWAY, 0);
        if (s == SPOIL_IPV6)
                fprintf(f, "ipv6 00000000000000000000000000000001 01 80 10 80       lo\n");
        /* As the probe prints it: last, after the route table. */
        if (s == SPOIL_DENIED_REACHED || s == SPOIL_DROP_DENY)
                fprintf(f, "denied reached connected\n");
        else if (s != SPOIL_NO_DENIED)
                fprintf(f, "denied pending\n");
        if (s != SPOIL_NO_END)
                fprintf(f, "end\n");
        cr_assert_eq(fclose(f), 0);
        return buf;
}

static int judge(Spoil s) {
        _cleanup_free_ char *r = report(s);
        return WITH_LINE(err, supnet_judge(&net, r, &line_));
}

Test(supnet_judge, exact_policy_passes) {
        cr_assert_eq(judge(SPOIL_NONE), 0, "%s", err);
}

Test(supnet_judge, missing_deny_routes_are_named_before_the_canary) {
        cr_assert_lt(judge(SPOIL_DROP_DENY), 0);
        cr_assert_not_null(strstr(err, "network attestation failed: gVisor has no route for "), "%s", err);
        cr_assert_not_null(strstr(err, "(the policy denies it via 10.137.55.10 dev deny0)"), "%s", err);
        cr_assert_not_null(strstr(err, "the denied canary 10.137.55.3 answered"), "%s", err);
        cr_assert_null(strchr(err, '\n'), "%s", err);
}

Test(supnet_judge, extra_route) {
        cr_assert_lt(judge(SPOIL_EXTRA), 0);
        cr_assert_not_null(strstr(err, "gVisor holds a route the policy does not: 10.99.0.0/24 via 10.137.54.2 dev tap0"),
                           "%s", err);
}

Test(supnet_judge, wrong_gateway) {
        cr_assert_lt(judge(SPOIL_WRONG_GATEWAY), 0);
        cr_assert_not_null(strstr(err, "gVisor holds a route the policy does not: 10.0.0.0/8 via 10.137.54.2 dev tap0"),
                           "%s", err);
}

Test(supnet_judge, denied_canary_reached) {
        cr_assert_eq(judge(SPOIL_DENIED_REACHED), -EPERM);
        cr_assert_not_null(strstr(err, "the denied canary 10.137.55.3 answered from inside the sandbox"), "%s", err);
}

Test(supnet_judge, wrong_challenge) {
        cr_assert_lt(judge(SPOIL_NO_CHALLENGE), 0);
        cr_assert_not_null(strstr(err, "not this generation's challenge"), "%s", err);
}

Test(supnet_judge, allowed_canary_unreachable) {
        cr_assert_eq(judge(SPOIL_ALLOWED_FAILED), -EHOSTUNREACH);
        cr_assert_not_null(strstr(err, "10.137.55.2 is unreachable from inside the sandbox (Connection timed out)"), "%s", err);
}

Test(supnet_judge, ipv6_present) {
        cr_assert_eq(judge(SPOIL_IPV6), -EPERM);
        cr_assert_not_null(strstr(err, "the sandbox has IPv6"), "%s", err);
}

Test(supnet_judge, denied_canary_not_reported) {
        cr_assert_lt(judge(SPOIL_NO_DENIED), 0);
        cr_assert_not_null(strstr(err, "did not report the denied canary"), "%s", err);
}

Test(supnet_judge, unfinished_report) {
        cr_assert_lt(judge(SPOIL_NO_END), 0);
        cr_assert_not_null(strstr(err, "the probe did not finish its report"), "%s", err);
}

Test(supnet_judge, no_challenge_line_at_all) {
        _cleanup_free_ char *r = report(SPOIL_NONE);
        char *nl = strchr(r, '\n');

        /* Without the "allowed" line: no proof that the allowed canary answered. */
        cr_assert_lt(WITH_LINE(err, supnet_judge(&net, nl + 1, &line_)), 0);
        cr_assert_not_null(strstr(err, "did not report the allowed canary"), "%s", err);
}

Test(supnet_judge, unreadable_route) {
        cr_assert_lt(WITH_LINE(err, supnet_judge(&net, "allowed " CHALLENGE "\nroute tap0 zz\nend\n", &line_)), 0);
        cr_assert_not_null(strstr(err, "unreadable route"), "%s", err);
}

/* The exact report with its first route line replaced by line. */
static int judge_with_first_route(const char *line) {
        _cleanup_free_ char *r = report(SPOIL_NONE), *out = NULL;
        char *start = strstr(r, "\nroute "), *end;

        cr_assert_not_null(start);
        start++;
        end = strchr(start, '\n');
        cr_assert_not_null(end);
        cr_assert_gt(asprintf(&out, "%.*s%s%s", (int) (start - r), r, line, end), 0);
        return WITH_LINE(err, supnet_judge(&net, out, &line_));
}

#define EXPECT_UNREADABLE(fmt, ...) do {                                                       \
                char l_[256];                                                                   \
                snprintf(l_, sizeof(l_), fmt, __VA_ARGS__);                                     \
                cr_expect_eq(judge_with_first_route(l_), -EBADMSG, "accepted \"%s\"", l_);      \
                cr_expect_not_null(strstr(err, "unreadable route"), "\"%s\": %s", l_, err);     \
        } while (0)

Test(supnet_judge, route_lines_are_read_strictly) {
        _cleanup_free_ char *r = report(SPOIL_NONE);
        char first[128], *start = strstr(r, "\nroute ") + 1;
        char i[32], d[16], g[16], f[16], m[16], x[16];

        snprintf(first, sizeof(first), "%.*s", (int) strcspn(start, "\n"), start);
        cr_assert_eq(sscanf(first, "route %31s %15s %15s %15s %15s %15s", i, d, g, f, m, x), 6);
        cr_assert_eq(judge_with_first_route(first), 0, "%s", err);

        EXPECT_UNREADABLE("route %s %s %s %s %s %s ", i, d, g, f, m, x);          /* trailing space */
        EXPECT_UNREADABLE("route %s  %s %s %s %s %s", i, d, g, f, m, x);          /* two spaces */
        EXPECT_UNREADABLE("route %s\t%s %s %s %s %s", i, d, g, f, m, x);          /* a tab */
        EXPECT_UNREADABLE("route %s %s %s %s %s +%s", i, d, g, f, m, x);          /* a sign */
        EXPECT_UNREADABLE("route %s %s %s %s %s 0%s", i, d, g, f, m, x);          /* a leading zero */
        EXPECT_UNREADABLE("route %s 0x%s %s %s %s %s", i, d, g, f, m, x);         /* a prefix */
        EXPECT_UNREADABLE("route %s %s %s %s %s 4294967296", i, d, g, f, m);      /* beyond 32 bits */
        EXPECT_UNREADABLE("route %s %s %s 0%s %s %s", i, d, g, f, m, x);          /* flags of five digits */
        EXPECT_UNREADABLE("route %s %s %s %s %s %s 0", i, d, g, f, m, x);         /* a seventh field */
        EXPECT_UNREADABLE("route %s %s %s %s %s", i, d, g, f, m);                 /* a field short */
}

/*
 * The name canaries (a policy with host rules): the same report, without
 * the allowed address canary's line, with the probe's name lines first,
 * as it prints them, then spoiled one at a time; each failure is one line
 * naming its canary.
 */
static const char *const good_names[] = {
        "name-allowed " CHALLENGE,
        "name-denied nxdomain",
        "name-direct refused",
        "name-sni closed",
};

static void with_host_rules(void) {
        net.policy->hosts = calloc(2, sizeof(char *));
        cr_assert_not_null(net.policy->hosts);
        net.policy->hosts[0] = strdup("example.com");
        cr_assert_not_null(net.policy->hosts[0]);
        net.policy->n_hosts = 1;
}

/* The exact report with the name lines (NULL: left out) at its start, as the probe prints them, or
 * without at_start before its "end" line (the judgement does not depend on where they are). */
static int judge_names_at(const char *const names[4], bool at_start) {
        _cleanup_free_ char *r = report(SPOIL_NONE), *out = NULL;
        char *nl = at_start ? r : strstr(r, "\nend\n") + 1;
        size_t len;
        FILE *f = open_memstream(&out, &len);

        cr_assert_not_null(f);
        fprintf(f, "%.*s", (int) (nl - r), r);
        for (size_t i = 0; i < 4; i++)
                if (names[i])
                        fprintf(f, "%s\n", names[i]);
        fputs(nl, f);
        cr_assert_eq(fclose(f), 0);
        return WITH_LINE(err, supnet_judge(&net, out, &line_));
}

static int judge_names(const char *const names[4]) {
        return judge_names_at(names, true);
}

static void expect_name_refusal(size_t i, const char *line, const char *why_part) {
        const char *names[4] = { good_names[0], good_names[1], good_names[2], good_names[3] };

        names[i] = line;
        err[0] = 0;
        cr_expect_lt(judge_names(names), 0, "accepted with \"%s\"", line ?: "(none)");
        cr_expect_not_null(strstr(err, why_part), "\"%s\": %s", line ?: "(none)", err);
        cr_expect_null(strchr(err, '\n'), "%s", err);
}

Test(supnet_judge, name_canaries) {
        with_host_rules();
        cr_assert_eq(judge_names(good_names), 0, "%s", err);

        /* Without them, or with a policy that has no host rules, the report is refused. */
        cr_assert_lt(judge(SPOIL_NONE), 0);
        cr_assert_not_null(strstr(err, "the probe did not report the allowed name canary allowed.canary.lazaret.invalid"),
                           "%s", err);

        expect_name_refusal(0, NULL, "did not report the allowed name canary allowed.canary.lazaret.invalid");
        expect_name_refusal(0, "name-allowed lz-other:ffff",
                            "the allowed name canary allowed.canary.lazaret.invalid: the probe reported \"lz-other:ffff\", "
                            "not this generation's challenge");
        expect_name_refusal(0, "name-allowed-failed the resolver answered rcode 3 without an address",
                            "network attestation failed: the allowed name canary allowed.canary.lazaret.invalid: "
                            "the resolver answered rcode 3");
        expect_name_refusal(1, "name-denied-failed it resolved to 10.137.64.2",
                            "network attestation failed: the denied name canary denied.canary.lazaret.invalid: "
                            "it resolved to 10.137.64.2");
        expect_name_refusal(1, "name-denied servfail", "the denied name canary denied.canary.lazaret.invalid: the probe "
                            "reported \"servfail\"");
        expect_name_refusal(2, "name-direct-failed a connection to 10.137.127.254 was established",
                            "network attestation failed: the direct connection canary to 10.137.127.254 (an address no "
                            "name resolved to): a connection to 10.137.127.254 was established");
        expect_name_refusal(2, NULL, "did not report the direct connection canary");
        expect_name_refusal(3, "name-sni-failed it was answered \"" CHALLENGE "\"",
                            "network attestation failed: the ClientHello canary (naming denied.canary.lazaret.invalid "
                            "on the allowed name's address): it was answered");
        expect_name_refusal(3, "name-sni-failed its connection to 10.137.64.1: Connection timed out",
                            "the ClientHello canary");
        expect_name_refusal(3, "name-sni closed\nname-sni closed", "the probe reported the ClientHello canary");
        expect_name_refusal(3, "name-snix closed", "unknown line");
}

/* With host rules the allowed name canary is the positive proof: a report that also ran the
 * address canary, answered or not, is not the report this policy's probe writes. */
Test(supnet_judge, no_address_canary_with_host_rules) {
        static const char *const lines[] = { "allowed " CHALLENGE "\n", "allowed-failed Connection timed out\n" };

        with_host_rules();
        for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
                _cleanup_free_ char *r = report(SPOIL_NONE), *out = NULL;

                cr_assert_gt(asprintf(&out, "%s%s", lines[i], r), 0);
                err[0] = 0;
                cr_expect_eq(WITH_LINE(err, supnet_judge(&net, out, &line_)), -EBADMSG, "accepted \"%s\"", lines[i]);
                cr_expect_not_null(strstr(err, "the probe ran the allowed address canary, which a policy with host "
                                               "rules leaves to the allowed name canary"), "%s", err);
        }
        /* And the same report without it, with the name canaries, passes (name_canaries below spoils it). */
        cr_assert_eq(judge_names(good_names), 0, "%s", err);
}

Test(supnet_judge, name_lines_anywhere_before_end) {
        with_host_rules();
        cr_assert_eq(judge_names_at(good_names, false), 0, "%s", err);
}

/* When the supervisor stops reading the report: at a whole line "end", nowhere else. */
Test(supnet_judge, report_complete) {
        static const struct {
                const char *text;
                bool expect;
        } cases[] = {
                { "end\n", true },
                { "allowed x\nend\n", true },
                { "name-sni closed\nend\nmore\n", true },
                { "allowed x\nend", false },             /* not yet ended by its newline */
                { "allowed x\nended\n", false },
                { "allowed x\nend \n", false },
                { "allowed x\nxend\n", false },
                { "", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                cr_expect_eq(supnet_report_complete(cases[i].text, strlen(cases[i].text)), cases[i].expect,
                             "\"%s\": expected %d", cases[i].text, cases[i].expect);
        /* Only the n bytes given count, whatever follows them. */
        cr_expect(!supnet_report_complete("end\n", 3));
}

Test(supnet_judge, name_lines_without_host_rules) {
        const char *names[4] = { good_names[0], NULL, NULL, NULL };

        cr_assert_lt(judge_names(names), 0);
        cr_assert_not_null(strstr(err, "unknown line \"name-allowed "), "%s", err);
}
