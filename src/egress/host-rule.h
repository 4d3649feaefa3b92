/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Host rules of a profile's egress (spec section 4.5, "Egress by name"):
 * "example.com", "*.example.com", each optionally with ":PORT[,PORT...]".
 * Pure. Names are compared in the ASCII form DNS questions and TLS
 * server_name carry (A-labels), lower case, without a trailing dot; this
 * file also holds the one normaliser of host names that the DNS, TLS and
 * HTTP readers of src/egress/ use, so that all of them read a name alike.
 */

/* The longest host name in text, without a trailing dot (RFC 1035: 255 on the wire). */
#define DNS_NAME_TEXT_MAX 253
#define DNS_LABEL_MAX 63
/* Ports one rule may list. */
#define HOST_RULE_MAX_PORTS 16
/* The ports of a rule without a port list. */
#define HOST_RULE_DEFAULT_PORTS { 80, 443 }
/* "*.name:p1,...,p16" */
#define HOST_RULE_STRING_MAX (DNS_NAME_TEXT_MAX + 2 + 1 + HOST_RULE_MAX_PORTS * 6 + 1)

typedef enum HostNameFlags {
        HOST_NAME_TRAILING_DOT = 1 << 0,        /* accept one trailing dot and drop it */
} HostNameFlags;

/*
 * The n bytes at s as a host name: labels of letters, digits and '-', 1 to
 * 63 bytes, neither starting nor ending with '-', at most 253 bytes in
 * all. Written to out in lower case, NUL-terminated. -EINVAL with a
 * sentence naming the fault in *ret_error (which may be NULL); out is
 * written only on success.
 */
int host_name_normalize(const char *s, size_t n, HostNameFlags flags, char out[static DNS_NAME_TEXT_MAX + 1],
                        char **ret_error);

/*
 * Whether name (normalised) is "invalid" or a name under it: RFC 6761
 * section 6.4 reserves .invalid, which resolves nowhere. No rule may name
 * one: the network attestation's name canaries live there (net-policy.h),
 * and the egress helper answers such names itself, never asking upstream.
 */
bool host_name_is_invalid(const char *name);

typedef struct HostRule {
        char name[DNS_NAME_TEXT_MAX + 1];       /* without "*.", lower case */
        bool wildcard;                          /* "*.name": names below name, not name itself */
        uint16_t ports[HOST_RULE_MAX_PORTS];    /* ascending */
        size_t n_ports;                         /* 0: no list, HOST_RULE_DEFAULT_PORTS */
} HostRule;

/*
 * One rule. -EINVAL with a sentence in *ret_error naming what is wrong with
 * s (the text shown escaped and cut); *ret written only on success.
 */
int host_rule_parse(const char *s, HostRule *ret, char **ret_error);
/* The canonical text: lower case, no trailing dot, ports ascending. */
void host_rule_format(const HostRule *r, char buf[static HOST_RULE_STRING_MAX]);

/* Whether the rule's pattern matches name (normalised, see host_name_normalize()). */
bool host_rule_matches(const HostRule *r, const char *name);
/* Whether the rule allows name on port. */
bool host_rule_allows(const HostRule *r, const char *name, uint16_t port);

typedef struct HostRuleList {
        HostRule *items;
        size_t n;
} HostRuleList;

/* The most rules one list holds. */
#define HOST_RULE_LIST_MAX 256

/*
 * Parses s and appends it; a pattern already in the list is refused
 * (-EEXIST: extend its port list instead), and so is the 257th rule
 * (-E2BIG). -ENOMEM without memory.
 */
int host_rule_list_add(HostRuleList *l, const char *s, char **ret_error);
void host_rule_list_done(HostRuleList *l);

/* Whether any rule matches name: the question DNS asks. */
bool host_rules_match(const HostRuleList *l, const char *name);
/* Whether any rule allows name on port: the question a connection asks. */
bool host_rules_allow(const HostRuleList *l, const char *name, uint16_t port);
