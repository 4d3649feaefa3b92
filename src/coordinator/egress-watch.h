/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "cleanup.h"
#include "egress-proto.h"

/*
 * The denied names of a Domain whose profile has host rules (spec section
 * 4.5, "A denied name"), from the coordinator's side of the egress
 * helper's API socket (egress-proto.h): one connection watching the
 * helper's denied-name events, a table of what the sandbox was refused,
 * the bound on how often each is reported, and the rules sent to the
 * helper (add_host and remove_host, one connection each, bounded by
 * EGRESS_ALLOW_TIMEOUT_USEC). Everything runs from the event loop; nothing
 * waits. Every line the helper sends is judged again here by the same
 * reader (egress_event_parse()): one outside the grammar is logged, shown
 * escaped, and dropped.
 *
 * What is reported, and how often: a denial (a rule that would allow it,
 * "NAME" or "NAME:PORT") is reported when it is new or was last reported
 * EGRESS_REPORT_REPEAT_USEC ago, and at most EGRESS_REPORTS_PER_WINDOW
 * times in any EGRESS_REPORT_WINDOW_USEC for all names together; the
 * reports the bound held back are counted and said with the next one.
 * The table keeps EGRESS_DENIALS_MAX denials, the least recently seen
 * going first.
 */
#define EGRESS_REPORT_REPEAT_USEC (60ULL * 1000 * 1000)
#define EGRESS_REPORTS_PER_WINDOW 10u
#define EGRESS_REPORT_WINDOW_USEC (60ULL * 1000 * 1000)
#define EGRESS_DENIALS_MAX 256
#define EGRESS_ALLOW_TIMEOUT_USEC (5ULL * 1000 * 1000)

typedef struct EgressWatch EgressWatch;

typedef struct EgressDenial {
        char rule[HOST_RULE_STRING_MAX];        /* what would allow it: NAME, or NAME:PORT */
        EgressEvent ev;                         /* EGRESS_EVENT_DENIED_DNS or _PORT */
        uint64_t first_usec, last_usec;         /* CLOCK_REALTIME */
        uint64_t reported_usec;                 /* CLOCK_MONOTONIC of its last report; 0: never */
        uint32_t count;
        bool prompted;                          /* the owner asked about it on a terminal once */
} EgressDenial;

typedef struct EgressWatchCallbacks {
        /*
         * The sandbox was refused d (again): report says whether this one
         * is to be reported (the bound above), withheld how many reports
         * the bound held back since the last one. d is the table's entry:
         * the owner may set d->prompted.
         */
        void (*denied)(EgressDenial *d, bool report, unsigned withheld, void *userdata);
        /* The helper dropped count events (its own bound, or a full socket). */
        void (*dropped)(uint32_t count, void *userdata);
        /* The watch ended: the helper closed it (it exited: the Domain fails anyway) or broke the protocol. */
        void (*lost)(const char *why, void *userdata);
} EgressWatchCallbacks;

/* Connects to the helper's API socket and asks for its denied names. */
int egress_watch_new(sd_event *e, const char *api_socket, const EgressWatchCallbacks *cb, void *userdata,
                     EgressWatch **ret);
/* Rules not yet answered end with done(-ECANCELED). */
EgressWatch *egress_watch_free(EgressWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressWatch *, egress_watch_free);

/*
 * Sends rule (host_rule_parse()'s grammar) to the helper, once or for the
 * Domain's life (EGRESS_SCOPE_KEEP: the owner keeps it in the Domain Store
 * and sends it as domain). done() hears the helper's answer from the loop,
 * never from inside this call: r >= 0, or why (a sentence). < 0 only when
 * nothing was sent (done() is then not called).
 */
typedef void (*EgressAllowDone)(int r, const char *why, void *userdata);
int egress_watch_allow(EgressWatch *w, const char *rule, EgressScope scope, EgressAllowDone done, void *userdata);
/*
 * Ends rule (canonical) in the helper, whatever its scope (remove_host):
 * done() hears r = 1 when the helper held it and removed it, 0 when it
 * held no such rule, or < 0 and why; as egress_watch_allow() otherwise.
 */
int egress_watch_forget(EgressWatch *w, const char *rule, EgressAllowDone done, void *userdata);

/* The denials, in the table's order (a replaced one's slot reused); borrowed. */
size_t egress_watch_denials(const EgressWatch *w, const EgressDenial **ret);
/* The denial of rule (canonical), or NULL. */
EgressDenial *egress_watch_find(EgressWatch *w, const char *rule);
