/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress-util.h"
#include "host-rule.h"
#include "macro.h"
#include "parse-util.h"
#include "util.h"

static bool is_ldh(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

static char lower(char c) {
        return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
}

int host_name_normalize(const char *s, size_t n, HostNameFlags flags, char out[static DNS_NAME_TEXT_MAX + 1],
                        char **ret_error) {
        char buf[DNS_NAME_TEXT_MAX + 1], shown[EGRESS_SHOW_MAX];
        size_t label = 0;

        if ((flags & HOST_NAME_TRAILING_DOT) && n > 1 && s[n - 1] == '.')
                n--;
        if (n == 0)
                return errorf(ret_error, -EINVAL, "an empty host name");
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] >= 0x80)
                        return errorf(ret_error, -EINVAL,
                                      "\"%s\" is not ASCII: write an internationalised name in its xn-- form "
                                      "(idn2 prints it), as DNS and TLS carry it",
                                      egress_show(s, n, shown));
        if (n > DNS_NAME_TEXT_MAX)
                return errorf(ret_error, -EINVAL, "\"%s\" is longer than a host name can be (%d bytes)",
                              egress_show(s, n, shown), DNS_NAME_TEXT_MAX);
        for (size_t i = 0; i <= n; i++) {
                if (i == n || s[i] == '.') {
                        if (label == 0)
                                return errorf(ret_error, -EINVAL, "\"%s\" has an empty label", egress_show(s, n, shown));
                        if (label > DNS_LABEL_MAX)
                                return errorf(ret_error, -EINVAL, "\"%s\" has a label longer than %d bytes",
                                              egress_show(s, n, shown), DNS_LABEL_MAX);
                        if (s[i - label] == '-' || s[i - 1] == '-')
                                return errorf(ret_error, -EINVAL, "\"%s\" has a label that starts or ends with '-'",
                                              egress_show(s, n, shown));
                        label = 0;
                        if (i < n)
                                buf[i] = '.';
                        continue;
                }
                if (!is_ldh(s[i]))
                        return errorf(ret_error, -EINVAL,
                                      "\"%s\" holds '%s', which no host name does (letters, digits, '-' and '.' only)",
                                      egress_show(s, n, shown), egress_show(s + i, 1, (char[EGRESS_SHOW_MAX]) {}));
                buf[i] = lower(s[i]);
                label++;
        }
        buf[n] = 0;
        memcpy(out, buf, n + 1);
        return 0;
}

static int parse_ports(const char *s, const char *whole, HostRule *r, char **ret_error) {
        char shown[EGRESS_SHOW_MAX];
        size_t n = 0;

        for (const char *p = s;;) {
                const char *e = strchr(p, ',');
                size_t len = e ? (size_t) (e - p) : strlen(p);
                uint64_t v;
                size_t j;

                if (parse_unsigned_n(p, len, 0, 1, 65535, &v) < 0)
                        return errorf(ret_error, -EINVAL, "\"%s\": \"%s\" is not a port (decimal, 1 to 65535)",
                                      egress_show(whole, strlen(whole), (char[EGRESS_SHOW_MAX]) {}),
                                      egress_show(p, len, shown));
                if (n == HOST_RULE_MAX_PORTS)
                        return errorf(ret_error, -EINVAL, "\"%s\" lists more than %d ports",
                                      egress_show(whole, strlen(whole), shown), HOST_RULE_MAX_PORTS);
                /* Insert in order; a port listed twice is a typo worth naming. */
                for (j = 0; j < n && r->ports[j] < v; j++)
                        ;
                if (j < n && r->ports[j] == v)
                        return errorf(ret_error, -EINVAL, "\"%s\" lists port %u twice",
                                      egress_show(whole, strlen(whole), shown), (unsigned) v);
                memmove(r->ports + j + 1, r->ports + j, (n - j) * sizeof(r->ports[0]));
                r->ports[j] = (uint16_t) v;
                n++;
                if (!e)
                        break;
                p = e + 1;
        }
        r->n_ports = n;
        return 0;
}

static bool has_suffix_label(const char *name, const char *suffix) {
        size_t n = strlen(name), m = strlen(suffix);

        if (n == m)
                return streq(name, suffix);
        return n > m && name[n - m - 1] == '.' && streq(name + n - m, suffix);
}

bool host_name_is_invalid(const char *name) {
        return has_suffix_label(name, "invalid");
}

int host_rule_parse(const char *s, HostRule *ret, char **ret_error) {
        char shown[EGRESS_SHOW_MAX];
        const char *colon, *name, *last;
        HostRule r = {};
        size_t len, n_labels = 1;
        int k;

        if (!s || !*s)
                return errorf(ret_error, -EINVAL, "an empty host rule; write NAME, *.NAME, or either with :PORT[,PORT...]");
        len = strlen(s);
        egress_show(s, len, shown);
        if (len > HOST_RULE_STRING_MAX)
                return errorf(ret_error, -EINVAL, "\"%s\" is longer than a host rule can be", shown);
        if (strstr(s, "://"))
                return errorf(ret_error, -EINVAL, "\"%s\" is a URL; write the host name alone (with :PORT if needed)",
                              shown);
        colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
                return errorf(ret_error, -EINVAL, "\"%s\" has more than one ':'; an IPv6 address is not a host rule "
                              "(IPv6 is off in the sandbox)", shown);
        if (colon) {
                if (colon[1] == 0)
                        return errorf(ret_error, -EINVAL, "\"%s\" ends in ':' without a port", shown);
                k = parse_ports(colon + 1, s, &r, ret_error);
                if (k < 0)
                        return k;
        }
        len = colon ? (size_t) (colon - s) : len;
        name = s;
        if (len >= 1 && s[0] == '*') {
                if (len < 2 || s[1] != '.')
                        return errorf(ret_error, -EINVAL, "\"%s\": '*' stands only as the whole first label, as in *.example.com",
                                      shown);
                r.wildcard = true;
                name += 2;
                len -= 2;
        }
        if (memchr(name, '*', len))
                return errorf(ret_error, -EINVAL, "\"%s\": '*' stands only as the whole first label, as in *.example.com",
                              shown);
        k = host_name_normalize(name, len, HOST_NAME_TRAILING_DOT, r.name, ret_error);
        if (k < 0)
                return k;
        for (const char *p = r.name; *p; p++)
                n_labels += *p == '.';
        last = strrchr(r.name, '.');
        last = last ? last + 1 : r.name;
        if (last[strspn(last, "0123456789")] == 0)
                return errorf(ret_error, -EINVAL, "\"%s\" is an address, not a name: addresses go in allow_egress", shown);
        if (n_labels < 2 && !r.wildcard)
                return errorf(ret_error, -EINVAL, "\"%s\" is a single label; write the full name (e.g. host.example.com)",
                              shown);
        if (r.wildcard && n_labels < 2)
                return errorf(ret_error, -EINVAL, "\"%s\" would allow every name under a top-level domain; "
                              "a wildcard needs two labels after *.", shown);
        if (has_suffix_label(r.name, "localhost"))
                return errorf(ret_error, -EINVAL, "\"%s\": localhost is the sandbox itself, not a destination", shown);
        if (host_name_is_invalid(r.name))
                return errorf(ret_error, -EINVAL, "\"%s\": names under .invalid are kept for Lazaret's readiness canaries",
                              shown);
        *ret = r;
        return 0;
}

void host_rule_format(const HostRule *r, char buf[static HOST_RULE_STRING_MAX]) {
        size_t o;

        o = (size_t) snprintf(buf, HOST_RULE_STRING_MAX, "%s%s", r->wildcard ? "*." : "", r->name);
        for (size_t i = 0; i < r->n_ports; i++)
                o += (size_t) snprintf(buf + o, HOST_RULE_STRING_MAX - o, "%c%u", i == 0 ? ':' : ',',
                                       (unsigned) r->ports[i]);
}

bool host_rule_matches(const HostRule *r, const char *name) {
        size_t n = strlen(name), m = strlen(r->name);

        if (!r->wildcard)
                return streq(name, r->name);
        /* At least one label in front: "x.example.com" for "*.example.com", not "example.com". */
        return n > m + 1 && name[n - m - 1] == '.' && streq(name + n - m, r->name);
}

bool host_rule_allows(const HostRule *r, const char *name, uint16_t port) {
        static const uint16_t defaults[] = HOST_RULE_DEFAULT_PORTS;
        const uint16_t *ports = r->n_ports ? r->ports : defaults;
        size_t n = r->n_ports ? r->n_ports : ELEMENTSOF(defaults);

        if (!host_rule_matches(r, name))
                return false;
        for (size_t i = 0; i < n; i++)
                if (ports[i] == port)
                        return true;
        return false;
}

int host_rule_list_add(HostRuleList *l, const char *s, char **ret_error) {
        char a[HOST_RULE_STRING_MAX], b[HOST_RULE_STRING_MAX];
        HostRule r, *items;
        int k;

        k = host_rule_parse(s, &r, ret_error);
        if (k < 0)
                return k;
        for (size_t i = 0; i < l->n; i++)
                if (l->items[i].wildcard == r.wildcard && streq(l->items[i].name, r.name)) {
                        host_rule_format(&l->items[i], a);
                        host_rule_format(&r, b);
                        return errorf(ret_error, -EEXIST, "\"%s\" repeats the pattern of \"%s\"; list it once, "
                                      "with all its ports", b, a);
                }
        if (l->n >= HOST_RULE_LIST_MAX)
                return errorf(ret_error, -E2BIG, "more than %d host rules", HOST_RULE_LIST_MAX);
        items = reallocarray(l->items, l->n + 1, sizeof(HostRule));
        if (!items)
                return -ENOMEM;
        l->items = items;
        l->items[l->n++] = r;
        return 0;
}

void host_rule_list_done(HostRuleList *l) {
        l->items = mfree(l->items);
        l->n = 0;
}

bool host_rules_match(const HostRuleList *l, const char *name) {
        for (size_t i = 0; i < l->n; i++)
                if (host_rule_matches(&l->items[i], name))
                        return true;
        return false;
}

bool host_rules_allow(const HostRuleList *l, const char *name, uint16_t port) {
        for (size_t i = 0; i < l->n; i++)
                if (host_rule_allows(&l->items[i], name, port))
                        return true;
        return false;
}
