/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "host-rule.h"

/*
 * What the coordinator and the egress helper say to each other about
 * denied names (spec section 4.5, "A denied name"), on the helper's API
 * socket, whose path the coordinator chose (slirp4netns 1.2's protocol:
 * one JSON request per connection):
 *
 *   {"execute": "add_host", "arguments": {"rule": RULE, "scope": SCOPE}}
 *       a live rule: RULE as a profile's allow_hosts entry reads it
 *       (host-rule.h), SCOPE "once" or "domain"; answered
 *       {"return": {}} or {"error": {"desc": ...}}
 *   {"execute": "remove_host", "arguments": {"rule": RULE}}
 *       the live rule RULE (canonical, as add_host took it) ends at once,
 *       once or domain alike; connections to names no rule allows any more
 *       on their port are closed (spec: "Forgetting"); answered
 *       {"return": {"removed": BOOL, "closed": N}} (removed false: the
 *       helper held no such rule; the profile's own rules are never
 *       removed) or {"error": {"desc": ...}}
 *   {"execute": "watch_denied", "arguments": {}}
 *       answered {"return": {}} and a newline; the connection then stays
 *       open and the helper writes one event per line (below), never
 *       waiting: a line the socket cannot take now is dropped and counted
 *
 * The event lines, printable ASCII, at most EGRESS_EVENT_LINE_MAX bytes
 * with the newline:
 *
 *   denied dns NAME         a DNS question for NAME, which no rule allows
 *   denied port NAME PORT   a connection to NAME (bound, allowed on other
 *                           ports) on PORT, which no rule allows
 *   dropped COUNT           COUNT events the helper did not send (its
 *                           bound, or a full socket)
 *
 * NAME is a host name as host_name_normalize() writes it (letters,
 * digits, '-' and '.', lower case): the sandbox chose it, so both ends
 * judge it with that one reader, and nothing else is a name here. Pure.
 */

#define EGRESS_EVENT_LINE_MAX (sizeof("denied port ") + DNS_NAME_TEXT_MAX + sizeof(" 65535\n"))

typedef enum EgressEventKind {
        EGRESS_EVENT_DENIED_DNS,
        EGRESS_EVENT_DENIED_PORT,
        EGRESS_EVENT_DROPPED,
} EgressEventKind;

typedef struct EgressEvent {
        EgressEventKind kind;
        char name[DNS_NAME_TEXT_MAX + 1];       /* DENIED_* */
        uint16_t port;                          /* DENIED_PORT: 1..65535 */
        uint32_t dropped;                       /* DROPPED: 1.. */
} EgressEvent;

/* The line with its newline into buf; its length, or -EINVAL for an event outside the grammar. */
int egress_event_format(const EgressEvent *ev, char buf[static EGRESS_EVENT_LINE_MAX]);
/* One line of n bytes without its newline; -EBADMSG (a sentence in *ret_error, may be NULL) outside the grammar. */
int egress_event_parse(const char *line, size_t n, EgressEvent *ret, char **ret_error);
/* The host rule that would allow what a DENIED_* event was refused: "NAME" or "NAME:PORT". */
void egress_event_rule(const EgressEvent *ev, char buf[static HOST_RULE_STRING_MAX]);

/*
 * How long an allow lasts: once (spec: the next answer or connection it
 * allows, and that answer's TTL after it), for the Domain's life (the
 * helper's), or kept (the Domain Store; the helper hears "domain" and
 * the store gives it to the next start).
 */
typedef enum EgressScope {
        EGRESS_SCOPE_ONCE,
        EGRESS_SCOPE_DOMAIN,
        EGRESS_SCOPE_KEEP,
        _EGRESS_SCOPE_MAX,
} EgressScope;

/* A once rule not used within this long lapses unused. */
#define EGRESS_ONCE_UNUSED_MS (5u * 60u * 1000u)
/* A once rule, once used, lasts this long: the TTL of the helper's synthetic answers. */
#define EGRESS_ONCE_USED_MS (60u * 1000u)

const char *egress_scope_to_string(EgressScope s);
int egress_scope_from_string(const char *s, EgressScope *ret);

/* The add_host request for rule (checked with host_rule_parse()) and scope (once or domain), as JSON text. */
int egress_allow_request(const char *rule, EgressScope scope, char **ret, char **ret_error);
/* add_host's arguments object, judged: the rule parsed, the scope once or domain. -EINVAL with a sentence. */
int egress_allow_parse(json_object *args, HostRule *ret_rule, EgressScope *ret_scope, char **ret_error);

/* The remove_host request for rule (checked with host_rule_parse()), as JSON text. */
int egress_remove_request(const char *rule, char **ret, char **ret_error);
/* remove_host's arguments object, judged: one rule. -EINVAL with a sentence. */
int egress_remove_parse(json_object *args, HostRule *ret_rule, char **ret_error);

/*
 * The helper's answer to add_host or remove_host, as the coordinator reads
 * it (the helper parses what the sandbox sent: its answers are judged,
 * never trusted): 1 for a return that says "removed": true, 0 for any
 * other return, -EINVAL for an error (*ret_error its description, shown
 * escaped with egress_show()), -EBADMSG (with a sentence) for anything
 * else.
 */
int egress_reply_parse(const char *text, size_t len, char **ret_error);
