/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "host-rule.h"

static int parse(const char *s, HostRule *r, char **why) {
        free(*why);
        *why = NULL;
        return host_rule_parse(s, r, why);
}

static void check_canonical(const char *in, const char *want) {
        _cleanup_free_ char *why = NULL;
        char buf[HOST_RULE_STRING_MAX];
        HostRule r;

        cr_assert_eq(parse(in, &r, &why), 0, "\"%s\": %s", in, why);
        host_rule_format(&r, buf);
        cr_assert_str_eq(buf, want);
        /* The canonical form reads back as itself. */
        cr_assert_eq(parse(buf, &r, &why), 0);
        host_rule_format(&r, buf);
        cr_assert_str_eq(buf, want);
}

Test(host_rule, forms) {
        check_canonical("example.com", "example.com");
        check_canonical("Example.COM.", "example.com");
        check_canonical("*.example.com", "*.example.com");
        check_canonical("*.Example.com.:443", "*.example.com:443");
        check_canonical("git.example.org:443,22", "git.example.org:22,443");
        check_canonical("a-b.xn--bcher-kva.example:8080", "a-b.xn--bcher-kva.example:8080");
        check_canonical("*.co.uk", "*.co.uk");
        check_canonical("x.y:1,65535", "x.y:1,65535");
        check_canonical("1host.example", "1host.example");
}

static void check_refused(const char *in, const char *why_part) {
        _cleanup_free_ char *why = NULL;
        HostRule r = { .name = "untouched" };

        cr_assert_eq(parse(in, &r, &why), -EINVAL, "\"%s\" was accepted", in);
        cr_assert_not_null(why);
        cr_assert(strstr(why, why_part), "\"%s\": \"%s\" does not say \"%s\"", in, why, why_part);
        cr_assert_str_eq(r.name, "untouched", "written on failure");
}

Test(host_rule, refusals_name_the_fault) {
        check_refused("", "empty host rule");
        check_refused("bücher.example", "xn-- form");
        check_refused("com", "single label");
        check_refused("*.com", "top-level domain");
        check_refused("*", "'*' stands only");
        check_refused("*example.com", "'*' stands only");
        check_refused("a.*.example.com", "'*' stands only");
        check_refused("foo*.example.com", "'*' stands only");
        check_refused("**.example.com", "'*' stands only");
        check_refused("192.0.2.1", "allow_egress");
        check_refused("*.10.0.0", "allow_egress");
        check_refused("2001:db8::1", "more than one ':'");
        check_refused("example.com:", "without a port");
        check_refused("example.com:0", "is not a port");
        check_refused("example.com:65536", "is not a port");
        check_refused("example.com:+443", "is not a port");
        check_refused("example.com:0443", "is not a port");
        check_refused("example.com:443,", "is not a port");
        check_refused("example.com:443,,22", "is not a port");
        check_refused("example.com: 443", "is not a port");
        check_refused("example.com:443,443", "port 443 twice");
        check_refused("example.com:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "more than 16 ports");
        check_refused("-a.example.com", "starts or ends with '-'");
        check_refused("a-.example.com", "starts or ends with '-'");
        check_refused("a..example.com", "empty label");
        check_refused(".example.com", "empty label");
        check_refused("example.com..", "empty label");
        check_refused("under_score.example.com", "holds '_'");
        check_refused("sp ace.example.com", "holds ' '");
        check_refused("http://example.com", "is a URL");
        check_refused("example.com/path", "holds '/'");
        check_refused("localhost", "single label");
        check_refused("foo.localhost", "localhost is the sandbox");
        check_refused("canary.lazaret.invalid", ".invalid");
        check_refused("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example", "longer than 63");
}

/* RFC 6761's .invalid: the attestation's name canaries (net-policy.h) and nothing else. */
Test(host_rule, invalid_names) {
        cr_assert(host_name_is_invalid("invalid"));
        cr_assert(host_name_is_invalid("denied.canary.lazaret.invalid"));
        cr_assert(!host_name_is_invalid("notinvalid"));
        cr_assert(!host_name_is_invalid("invalid.example.com"));
        cr_assert(!host_name_is_invalid("x.notinvalid"));
        check_refused("*.lazaret.invalid:443", "kept for Lazaret's readiness canaries");
}

Test(host_rule, control_bytes_are_shown_escaped) {
        _cleanup_free_ char *why = NULL;
        HostRule r;

        cr_assert_eq(parse("a\x1b[31m.example", &r, &why), -EINVAL);
        cr_assert(strstr(why, "\\x1b"), "%s", why);
        cr_assert_null(strchr(why, '\x1b'));
}

Test(host_rule, name_length_limits) {
        _cleanup_free_ char *why = NULL;
        char name[300], out[DNS_NAME_TEXT_MAX + 1];
        size_t n = 0;

        /* Four labels of 63 and one of 1: 4*64 + 1 = 257 > 253. */
        while (n + 64 <= 253) {
                memset(name + n, 'a', 63);
                name[n + 63] = '.';
                n += 64;
        }
        memset(name + n, 'b', 253 - n);
        n = 253;
        name[n] = 0;
        cr_assert_eq(host_name_normalize(name, n, 0, out, NULL), 0);
        cr_assert_eq(strlen(out), 253);
        name[n] = '.';
        cr_assert_eq(host_name_normalize(name, n + 1, HOST_NAME_TRAILING_DOT, out, NULL), 0);
        cr_assert_lt(host_name_normalize(name, n + 1, 0, out, NULL), 0, "a trailing dot needs the flag");
        name[n] = 'c';
        cr_assert_eq(host_name_normalize(name, n + 1, 0, out, &why), -EINVAL);
        cr_assert(strstr(why, "longer than a host name"), "%s", why);
}

Test(host_rule, matching) {
        _cleanup_free_ char *why = NULL;
        HostRule exact, wild, ssh;

        cr_assert_eq(parse("Example.com", &exact, &why), 0);
        cr_assert_eq(parse("*.example.com", &wild, &why), 0);
        cr_assert_eq(parse("git.example.org:22", &ssh, &why), 0);

        cr_assert(host_rule_matches(&exact, "example.com"));
        cr_assert_not(host_rule_matches(&exact, "www.example.com"));
        cr_assert_not(host_rule_matches(&exact, "notexample.com"));
        cr_assert_not(host_rule_matches(&exact, "example.com.evil.net"));

        cr_assert(host_rule_matches(&wild, "a.example.com"));
        cr_assert(host_rule_matches(&wild, "a.b.example.com"));
        cr_assert_not(host_rule_matches(&wild, "example.com"), "the wildcard does not match its apex");
        cr_assert_not(host_rule_matches(&wild, "aexample.com"));
        cr_assert_not(host_rule_matches(&wild, ".example.com"));
        cr_assert_not(host_rule_matches(&wild, "example.com.evil.net"));

        /* Without a port list: 80 and 443 only. */
        cr_assert(host_rule_allows(&exact, "example.com", 443));
        cr_assert(host_rule_allows(&exact, "example.com", 80));
        cr_assert_not(host_rule_allows(&exact, "example.com", 22));
        cr_assert_not(host_rule_allows(&exact, "example.com", 8443));
        cr_assert(host_rule_allows(&ssh, "git.example.org", 22));
        cr_assert_not(host_rule_allows(&ssh, "git.example.org", 443), "a port list replaces the defaults");
        cr_assert_not(host_rule_allows(&ssh, "example.org", 22));
}

Test(host_rule, list) {
        _cleanup_free_ char *why = NULL;
        HostRuleList l = {};

        cr_assert_eq(host_rule_list_add(&l, "registry.npmjs.org", &why), 0);
        cr_assert_eq(host_rule_list_add(&l, "*.githubusercontent.com", &why), 0);
        cr_assert_eq(host_rule_list_add(&l, "github.com:22,443", &why), 0);
        cr_assert_eq(l.n, 3);
        cr_assert_eq(host_rule_list_add(&l, "GitHub.com.:80", &why), -EEXIST);
        cr_assert(strstr(why, "\"github.com:80\" repeats the pattern of \"github.com:22,443\""), "%s", why);
        free(why);
        why = NULL;
        /* The wildcard and the name are two patterns. */
        cr_assert_eq(host_rule_list_add(&l, "githubusercontent.com", &why), 0);
        cr_assert_eq(host_rule_list_add(&l, "bad_name.example", &why), -EINVAL);
        cr_assert_eq(l.n, 4);

        cr_assert(host_rules_match(&l, "github.com"));
        cr_assert(host_rules_match(&l, "raw.githubusercontent.com"));
        cr_assert_not(host_rules_match(&l, "gist.github.com"));
        cr_assert(host_rules_allow(&l, "github.com", 22));
        cr_assert_not(host_rules_allow(&l, "registry.npmjs.org", 22));
        cr_assert(host_rules_allow(&l, "registry.npmjs.org", 443));
        cr_assert_not(host_rules_match(&l, "npmjs.org"));
        host_rule_list_done(&l);
        cr_assert_eq(l.n, 0);
        cr_assert_null(l.items);
}

Test(host_rule, list_limit) {
        _cleanup_free_ char *why = NULL;
        HostRuleList l = {};
        char s[64];

        for (int i = 0; i < HOST_RULE_LIST_MAX; i++) {
                snprintf(s, sizeof s, "h%d.example", i);
                cr_assert_eq(host_rule_list_add(&l, s, &why), 0);
        }
        cr_assert_eq(host_rule_list_add(&l, "one-more.example", &why), -E2BIG);
        cr_assert_not_null(why);
        host_rule_list_done(&l);
}
