/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "cleanup.h"
#include "config.h"
#include "domain-store.h"
#include "escalation-judge.h"
#include "session.h"

/*
 * Host escalation of one Domain (spec section 5.6): the Escalation Mailbox
 * (requests/ the sandbox writes, results/ it reads, one doorbell FIFO per
 * session), the requests read from it, their decision (an auto-approve
 * rule, or the prompt on the asking session's terminal), the host command
 * (execve, bounded output), the result written back and the audit trail.
 * Everything runs from the event loop; nothing waits.
 */
typedef struct Escalations Escalations;

typedef struct EscalationsCallbacks {
        /* The session a verified request names, or NULL. */
        Session *(*find_session)(const char *id, void *userdata);
        /* The developer chose Abort on s's prompt: end that session. */
        void (*abort_session)(Session *s, void *userdata);
        /* A verified request waits for a human (no rule approved it). */
        void (*pending)(const char *request_id, const char *session_id, char *const *argv, const char *why,
                        void *userdata);
        /* An accepted request is over (decided and run, ended, or gone with its session). */
        void (*resolved)(const char *request_id, void *userdata);
        /* The mailbox names of an ended session were removed: have the sandbox forget them. */
        void (*forget_session)(const char *session_id, void *userdata);
        /* Events of the audit trail, for the Domain Store (their journal lines are written): the owner keeps copies. */
        void (*audit)(const EscalationEvent *evs, size_t n, void *userdata);
} EscalationsCallbacks;

typedef struct EscalationsParams {
        sd_event *event;
        sd_bus *bus;                    /* the user bus: each host command gets a transient scope */
        int dir_fd;                     /* the mailbox's root directory (sandbox_mailbox_fd()), borrowed */
        const char *domain_id;
        const char *profile;
        const char *workspace;          /* the host workspace, canonical */
        const Config *config;           /* escalation.* and the rules; outlives this */
        EscalationsCallbacks cb;
        void *userdata;
} EscalationsParams;

/* Opens the mailbox's directories (requests/, results/, trust/) below dir_fd and starts watching requests/. */
int escalations_new(const EscalationsParams *p, Escalations **ret, char **ret_error);
Escalations *escalations_free(Escalations *e);

/*
 * Whether results/ or trust/ has less than a quarter of its names free, or
 * too few for the next session once two more have ended: then the names
 * ended sessions left must be forgotten now, not in the next batch. False
 * when it cannot tell (and for NULL).
 */
bool escalations_mailbox_scarce(Escalations *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Escalations *, escalations_free);

/*
 * The generation's sandbox ID: requests naming another are refused. A new
 * Trust Anchor (CA) is made for it; sessions opened from now on get
 * credentials it issues, and only those verify.
 */
int escalations_set_sandbox(Escalations *e, const char *sandbox_id, char **ret_error);

/* Each accepted request: state is "waiting", "prompting" or "running". Stops at fn's first error. */
typedef int (*EscalationVisit)(const char *id, const char *session, const char *state, const char *why,
                               char *const *argv, const char *cwd, void *userdata);
int escalations_list(Escalations *e, EscalationVisit fn, void *userdata);

/*
 * A decision from elsewhere than the prompt, by ESC_BY_BUS (D-Bus,
 * lazaretctl) or ESC_BY_NOTIFICATION: approve (with argv, the developer's
 * edit, when not NULL) or deny. It goes through the one function the
 * prompt's keys and the deadline decide through too (esc_decide()'s
 * table). The first decision wins: a prompt up for it is withdrawn.
 * -ENOENT: no such pending request; -EBUSY: it is running already.
 */
int escalations_decide(Escalations *e, const char *id, bool approve, char **argv, const char *by);

/* Another prompt (a denied name's) left s's terminal: a request waiting for it is asked now. NULL e: nothing. */
void escalations_terminal_free(Escalations *e, Session *s);

/* A session opened: its credential is issued and published, its doorbell created and held open. */
int escalations_session_opened(Escalations *e, Session *s);
/*
 * A session is ending (before it is freed): its pending requests end
 * without a result, its running host commands are killed, its credential,
 * doorbell and results are removed (spec 5.6 step 6, OR-3).
 */
void escalations_session_closed(Escalations *e, Session *s);
