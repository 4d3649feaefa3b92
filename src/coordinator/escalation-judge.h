/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "escalation-proto.h"
#include "trust-anchor.h"

/*
 * What the coordinator judges about an escalation request (spec 5.6,
 * SR-8..SR-10), apart from what escalation.c does with it (the mailbox's
 * files, the prompt, the host command, the result, the audit trail): which
 * records are taken and accepted before anyone is asked, whether an
 * auto-approve rule approves one, and what each decision does to a
 * request. Nothing here runs a program, draws a prompt or writes the
 * store; only esc_mailbox_take() touches a file. Unit-tested without a
 * sandbox (tests/unit/test-escalation-judge.c).
 */

/* ------------------------------------------------------ taking a record */

/* A request's file name: its ID, ESC_ID_LEN lowercase hex digits. */
bool esc_is_id_name(const char *name);

/*
 * Takes the record named name from requests/ (dirfd): opened without
 * following a link, removed whatever it is, then read once if it is a
 * request name, a regular file and within ESC_REQUEST_MAX. Hostile input:
 * nothing is believed but what is checked here and by esc_request_check().
 * Refused: -EINVAL (not a request name), the open's -errno (a symlink:
 * -ELOOP), -EBADF (not a regular file), -EFBIG (too large), the read's
 * -errno; *ret_why says it in words.
 */
int esc_mailbox_take(int dirfd, const char *name, char **ret_buf, size_t *ret_len, char **ret_why);

/* ------------------------------------------------ accepting a request */

/* The request IDs seen, against replay: the last ESC_SEEN_MAX. */
#define ESC_SEEN_MAX 4096

typedef struct EscSeen {
        char (*ids)[ESC_ID_LEN + 1];
        size_t n, next;
} EscSeen;

int esc_seen_init(EscSeen *s);
void esc_seen_done(EscSeen *s);
/* true: id was seen before; false: it is remembered from now on (the oldest forgotten when full). */
bool esc_seen_check_add(EscSeen *s, const char *id);

/* A request's time may differ from the host's this much. */
#define ESC_CLOCK_SKEW_USEC (10ULL * 60 * 1000000)

/* What a parsed record is judged against: the Domain's state when it arrived. */
typedef struct EscCheck {
        const char *name;               /* its file name in requests/ */
        const char *sandbox_id;         /* this generation's */
        const char *profile, *domain_id;
        TrustAnchor *trust;             /* this generation's; NULL: none yet */
        const uint8_t *session_key;     /* the Session Anchor key of the session it names; NULL: no such session */
        uint64_t now_usec;              /* CLOCK_REALTIME */
        unsigned n_pending, max_pending;        /* accepted, unresolved requests of the Domain */
        EscSeen *seen;                  /* gains its ID once it passed the checks before the replay check */
} EscCheck;

/*
 * Whether the record buf, parsed into q, is accepted (0) or refused before
 * anyone is asked, in this order: its ID is its name (-EINVAL), it names
 * this sandbox (-ESTALE) and a session of this Domain (-ESRCH), the
 * generation has a Trust Anchor (-ENOKEY), its credential is the
 * generation's for (session role, profile, Domain, generation, that
 * session) (-EKEYREJECTED; -ENOMEM), it certifies the session's own key
 * (-EPERM), that key signed these bytes (-EBADMSG), its time is near the
 * host's (-ETIME), its ID is new (-EALREADY), and fewer than max_pending
 * requests are pending (-EBUSY). *ret_why says why in words.
 */
int esc_request_check(const EscCheck *c, const char *buf, const EscRequest *q, char **ret_why);

/* --------------------------------------------------- auto-approve rules */

/*
 * SR-8: the first rule that approves argv, or NULL. A rule approves the
 * exact argv (a prefix of it with trailing_args), never one with a shell
 * metacharacter, a backslash or a control byte in any argument, only an
 * absolute argv[0], and only while that path resolves to the program the
 * configuration judged: real is realpath(argv[0]) now (NULL: it does not
 * resolve).
 */
const AutoApproveRule *esc_rule_match(const AutoApproveRule *rules, size_t n_rules, char *const *argv, const char *real);

/* ------------------------------------------------------------ decisions */

/* An accepted request, until its one result. */
typedef enum EscRequestState {
        ESC_REQUEST_WAITING,            /* for a prompt (or, without a terminal, for its deadline) */
        ESC_REQUEST_PROMPTING,          /* on its session's terminal */
        ESC_REQUEST_RUNNING,            /* approved: its command runs */
        _ESC_REQUEST_STATE_MAX,
} EscRequestState;

const char *esc_request_state_to_string(EscRequestState s);

typedef enum EscDecision {
        ESC_DECIDE_APPROVE,             /* run it (as edited, when an edit came with it) */
        ESC_DECIDE_DENY,
        ESC_DECIDE_ABORT,               /* deny, and end the asking session (its terminal's 'q') */
        ESC_DECIDE_EXPIRE,              /* its deadline passed: undecided, or its command ran too long */
} EscDecision;

/* Who relays a human's decision: the prompt's keys, DecideEscalation (and lazaretctl), a desktop notification. */
#define ESC_BY_TERMINAL "terminal"
#define ESC_BY_BUS "bus"
#define ESC_BY_NOTIFICATION "notification"

/* What a decision does to a request. */
typedef struct EscStep {
        bool run;                       /* its command runs; otherwise it ends with outcome */
        EscOutcome outcome;
        const char *message;            /* the result's message */
        const char *event;              /* the decision's audit event; NULL: only the result is recorded */
        const char *detail;             /* that event's detail */
        bool end_prompt;                /* its prompt leaves the terminal before the command runs */
        bool say_who;                   /* ... with a line that says where it was approved */
        bool abort_session;             /* then its session ends */
} EscStep;

/*
 * The one table of decisions: what decision d, relayed by by (ESC_BY_*;
 * NULL for ESC_DECIDE_EXPIRE), does to a request in state. The first
 * decision wins: -EBUSY when a human decides on a request whose command
 * runs already; -EPERM for an abort from elsewhere than the terminal;
 * -EINVAL for a relay that is none of ESC_BY_*.
 */
int esc_decide(EscRequestState state, EscDecision d, const char *by, EscStep *ret);
