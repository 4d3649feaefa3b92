/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The manager's side of denied names (spec section 4.5, "A denied name"):
 * what the egress helper refused becomes a line on every terminal
 * attached to the Domain, an EgressDenied signal, a desktop notification
 * and an audit event (as often as egress-watch.h allows), and a question
 * on one terminal through the shared approval prompt (term-prompt.h,
 * session_prompt_*()). An allow comes only from the host side: that
 * prompt's keys on the developer's terminal, AllowEgress on the bus
 * (lazaretctl egress allow), never from the sandbox, which has neither
 * the terminal's keys nor the bus nor the helper's API socket.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "escalation-proto.h"
#include "log.h"
#include "manager.h"
#include "strv.h"
#include "util.h"

/* How long the prompt waits for a key before the name stays denied. */
#define EGRESS_PROMPT_TIMEOUT_USEC (60ULL * 1000 * 1000)
/* The most rules the Domain Store keeps for one Domain. */
#define EGRESS_KEPT_MAX 128

struct EgressPrompt {
        Manager *m;
        Session *session;
        char rule[HOST_RULE_STRING_MAX];
        EgressEvent ev;
        EgressScope scope;
        char approve_key;
        bool deciding;                  /* the allow is on its way to the helper: keys mean nothing */
        sd_event_source *timer;
};

static uint64_t realtime_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static const char *denial_what(const EgressEvent *ev, char buf[static 64]) {
        if (ev->kind == EGRESS_EVENT_DENIED_PORT)
                snprintf(buf, 64, "a connection to port %u", (unsigned) ev->port);
        else
                snprintf(buf, 64, "a DNS question");
        return buf;
}

/* One event of the audit trail (the escalation trail's table, spec 5.6), with its journal line. */
static void egress_audit(Manager *m, const char *event, const char *by, const char *why, const char *outcome,
                         const char *rule) {
        EscalationEvent ev = { .time_usec = realtime_usec(), .event = event, .by = by, .why = why, .outcome = outcome,
                               .detail = rule };

        log_session_id(LOG_INFO, NULL, ESCALATION_AUDIT_MESSAGE_ID, "Audit: %s %s (%s; by %s; %s)", event, rule,
                       strna(why), strna(by), strna(outcome));
        audit_writer_add(m->audit, &ev, 1);
}

/* ------------------------------------------------------------------- the prompt */

static const char *scope_said(EgressScope s) {
        switch (s) {
        case EGRESS_SCOPE_ONCE:
                return "once: its next answer or connection, then 60 s";
        case EGRESS_SCOPE_DOMAIN:
                return "for this Domain's life";
        default:
                return "kept: in the Domain Store, for every start";
        }
}

static const char *scope_approve(EgressScope s) {
        switch (s) {
        case EGRESS_SCOPE_ONCE:
                return "allow it once";
        case EGRESS_SCOPE_DOMAIN:
                return "allow it for this Domain's life";
        default:
                return "allow it and keep it";
        }
}

static void on_prompt_key(Session *s, unsigned char c, void *userdata);

static int prompt_draw(EgressPrompt *p, bool first) {
        _cleanup_free_ char *profile = esc_string_to_display(p->m->domain->profile->name),
                            *rule = esc_string_to_display(p->rule);
        char what[64];
        TermPrompt t;

        if (!profile || !rule)
                return -ENOMEM;
        t = (TermPrompt) {
                .title = "The sandbox was refused a host no rule allows",
                .fields = {
                        { "Profile:", profile },
                        { "Refused:", denial_what(&p->ev, what) },
                        { "Scope:", scope_said(p->scope) },
                        { "Host:", rule },
                },
                .n_fields = 4,
                .subject = 3,
                .approve_label = scope_approve(p->scope),
                .keys = { { 'n', "leave it denied" }, { 's', "change the scope" }, { 'm', "no more such prompts" },
                          { 'r', "redraw" } },
                .n_keys = 4,
                .too_long = "The prompt does not fit this window: allow it with 'lazaretctl egress allow HOST', or "
                            "enlarge the window and press r.",
        };
        p->approve_key = 0;
        if (first)
                return session_prompt_begin(p->session, &t, on_prompt_key, p->m, &p->approve_key);
        return session_prompt_redraw(p->session, &t, &p->approve_key);
}

/* The prompt leaves its terminal (text last); a host command's request waiting for that terminal is asked next. */
static void prompt_end(Manager *m, const char *text) {
        EgressPrompt *p = m->egress_prompt;
        Session *s;

        if (!p)
                return;
        s = p->session;
        m->egress_prompt = NULL;
        sd_event_source_disable_unref(p->timer);
        free(p);
        session_prompt_end(s, text);
        escalations_terminal_free(m->escalations, s);
}

static void prompt_endf(Manager *m, const char *fmt, ...) _printf_(2, 3);
static void prompt_endf(Manager *m, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&text, fmt, ap) < 0)
                text = NULL;
        va_end(ap);
        prompt_end(m, text ?: "\r\n");
}

static void on_prompt_allowed(int r, const char *why, void *userdata) {
        Manager *m = userdata;

        /* The prompt went meanwhile (its session ended, the Domain stops): nothing to say where. */
        if (!m->egress_prompt || r == -ECANCELED)
                return;
        if (r < 0)
                prompt_endf(m, "\r\n[lazaret] Not allowed: %s\r\n", why);
        else
                prompt_endf(m, "\r\n[lazaret] Allowed %s (%s). Run the command again.\r\n", m->egress_prompt->rule,
                            egress_scope_to_string(m->egress_prompt->scope));
}

static void on_prompt_key(Session *s, unsigned char c, void *userdata) {
        Manager *m = userdata;
        EgressPrompt *p = m->egress_prompt;
        _cleanup_free_ char *why = NULL;
        int r;

        if (!p || p->session != s || p->deciding)
                return;
        if (p->approve_key && c == (unsigned char) p->approve_key) {
                char echo[] = { (char) c, 0 };

                session_prompt_write(s, echo);
                p->deciding = true;
                r = manager_egress_allow(m, p->rule, p->scope, ESC_BY_TERMINAL, on_prompt_allowed, m, &why);
                if (r < 0)
                        prompt_endf(m, "\r\n[lazaret] Not allowed: %s\r\n", why ?: strerror(-r));
                return;
        }
        switch (c) {
        case 's':
        case 'S':
        case 'r':
        case 'R':
                /* Another scope is another question: drawn anew, with a new approve key. */
                if (c == 's' || c == 'S')
                        p->scope = (p->scope + 1) % _EGRESS_SCOPE_MAX;
                if (prompt_draw(p, false) < 0)
                        prompt_end(m, "\r\n[lazaret] (out of memory: the prompt cannot be drawn)\r\n");
                break;
        case 'n':
        case 'N':
                prompt_endf(m, "\r\n[lazaret] %s stays denied.\r\n", p->rule);
                break;
        case 'm':
        case 'M':
                m->egress_quiet = true;
                prompt_end(m, "\r\n[lazaret] No more prompts for refused hosts in this Domain: each is still said "
                              "in one line, and 'lazaretctl egress denied' lists them.\r\n");
                break;
        default:
                break;
        }
}

static int on_prompt_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        if (m->egress_prompt && !m->egress_prompt->deciding)
                prompt_endf(m, "\r\n[lazaret] Not decided: %s stays denied ('lazaretctl egress allow %s' allows it).\r\n",
                            m->egress_prompt->rule, m->egress_prompt->rule);
        return 0;
}

/* The newest terminal session with no prompt up; NULL when there is none. */
static Session *prompt_terminal(Manager *m) {
        for (Session *s = m->sessions; s; s = s->next)  /* newest first */
                if (s->terminal && !s->prompting && !s->closing && !s->exited && s->client_tty >= 0 && !s->tty_eof)
                        return s;
        return NULL;
}

/* Asks about d on one terminal: a connection cannot be tied to a session (one network stack), so the newest. */
static void prompt_begin(Manager *m, EgressDenial *d) {
        _cleanup_free_ EgressPrompt *p = NULL;
        Session *s;
        int r;

        if (m->egress_prompt || m->egress_quiet || d->prompted)
                return;
        s = prompt_terminal(m);
        if (!s)
                return;         /* asked with a later event, when a terminal is free */
        p = calloc(1, sizeof(EgressPrompt));
        if (!p)
                return;
        *p = (EgressPrompt) { .m = m, .session = s, .ev = d->ev, .scope = EGRESS_SCOPE_ONCE };
        snprintf(p->rule, sizeof(p->rule), "%s", d->rule);
        r = sd_event_add_time_relative(m->event, &p->timer, CLOCK_MONOTONIC, EGRESS_PROMPT_TIMEOUT_USEC, 0,
                                       on_prompt_timeout, m);
        if (r < 0)
                return;
        /* Keys reach on_prompt_key() from the loop, after m->egress_prompt is set below. */
        r = prompt_draw(p, true);
        if (r < 0) {
                sd_event_source_disable_unref(p->timer);
                return;
        }
        d->prompted = true;
        m->egress_prompt = TAKE_PTR(p);
}

/* ------------------------------------------------------------------- denials */

static void on_denied(EgressDenial *d, bool report, unsigned withheld, void *userdata) {
        Manager *m = userdata;
        _cleanup_free_ char *line = NULL, *body = NULL, *rule = esc_string_to_display(d->rule);
        char what[64], more[96] = "";

        if (!rule)
                return;
        if (report) {
                denial_what(&d->ev, what);
                if (withheld > 0)
                        snprintf(more, sizeof(more), " (%u more not shown: lazaretctl egress denied)", withheld);
                if (asprintf(&line, "\r\n[lazaret] Refused %s for %s: no host rule allows it. To allow it: "
                                    "lazaretctl egress allow %s [--domain|--keep]%s\r\n",
                             what, rule, rule, more) >= 0)
                        /* Not into a prompt on screen (its drawing would be broken): that terminal has the question. */
                        for (Session *s = m->sessions; s; s = s->next)
                                if (s->terminal && !s->prompting)
                                        session_notice(s, line);
                manager_emit_egress_denied(m, d);
                if (asprintf(&body, "The sandbox of profile %s was refused %s for %s. To allow it: lazaretctl egress "
                                    "allow %s", m->domain->profile->name, what, rule, rule) >= 0)
                        notifier_inform(m->notifier, "Lazaret: a host was refused", body);
                egress_audit(m, "egress-denied", NULL, what, NULL, d->rule);
        }
        prompt_begin(m, d);
}

static void on_dropped(uint32_t count, void *userdata) {
        log_notice("The egress helper left out %u denied-name events (its bound: the sandbox asked faster)",
                   (unsigned) count);
}

static void on_lost(const char *why, void *userdata) {
        Manager *m = userdata;

        if (m->state == DOMAIN_STARTING || m->state == DOMAIN_RUNNING)
                log_warning("Denied names are no longer reported: %s", why);
}

/* ------------------------------------------------------------------- allows */

typedef struct AllowCall {
        Manager *m;
        char rule[HOST_RULE_STRING_MAX];
        EgressScope scope;
        char *by;
        EgressAllowDone done;
        void *userdata;
} AllowCall;

static void on_allowed(int r, const char *why, void *userdata) {
        AllowCall *c = userdata;
        Manager *m = c->m;

        if (r >= 0) {
                log_info("Egress: %s allowed %s (%s)", c->by, c->rule, egress_scope_to_string(c->scope));
                egress_audit(m, "egress-allowed", c->by, NULL, egress_scope_to_string(c->scope), c->rule);
                /* A prompt asking about the same rule has its answer (decided elsewhere: the first decision wins). */
                if (m->egress_prompt && !m->egress_prompt->deciding && streq(m->egress_prompt->rule, c->rule))
                        prompt_endf(m, "\r\n[lazaret] %s was allowed (%s, by %s).\r\n", c->rule,
                                    egress_scope_to_string(c->scope), c->by);
        } else if (r != -ECANCELED)
                log_warning("Egress: the helper refused %s (%s): %s", c->rule, egress_scope_to_string(c->scope), why);
        c->done(r, why, c->userdata);
        free(c->by);
        free(c);
}

int manager_egress_allow(Manager *m, const char *rule, EgressScope scope, const char *by, EgressAllowDone done,
                         void *userdata, char **ret_error) {
        _cleanup_strv_free_ char **kept = NULL;
        _cleanup_free_ AllowCall *c = NULL;
        _cleanup_free_ char *why = NULL;
        HostRule parsed;
        int r;

        if (!m->egress)
                return errorf(ret_error, -ENOTCONN, "Domain %s has no host rules (allow_hosts): its egress is by "
                              "address only, and no name is refused", m->id);
        r = host_rule_parse(rule, &parsed, ret_error);
        if (r < 0)
                return r;
        c = calloc(1, sizeof(AllowCall));
        if (!c)
                return -ENOMEM;
        *c = (AllowCall) { .m = m, .scope = scope, .done = done, .userdata = userdata };
        host_rule_format(&parsed, c->rule);
        c->by = strdup(by);
        if (!c->by)
                return -ENOMEM;
        if (scope == EGRESS_SCOPE_KEEP) {
                r = domain_store_egress_kept(m->store, &kept, &why);
                if (r >= 0 && strv_length(kept) >= EGRESS_KEPT_MAX && !strv_contains((const char *const *) kept, c->rule))
                        r = errorf(&why, -E2BIG, "the Domain Store keeps %d rules already; forget one first "
                                   "(lazaretctl egress forget)", EGRESS_KEPT_MAX);
                if (r >= 0)
                        r = domain_store_egress_keep(m->store, c->rule, realtime_usec(), by, &why);
                if (r < 0) {
                        free(c->by);
                        return errorf(ret_error, r, "cannot keep %s: %s", c->rule, why ?: strerror(-r));
                }
        }
        r = egress_watch_allow(m->egress, c->rule, scope, on_allowed, c);
        if (r < 0) {
                free(c->by);
                return errorf(ret_error, r, "cannot send %s to the egress helper: %s", c->rule, strerror(-r));
        }
        TAKE_PTR(c);
        return 0;
}

typedef struct ForgetCall {
        Manager *m;
        char rule[HOST_RULE_STRING_MAX];
        bool kept;              /* the Domain Store kept it (and forgot it) */
        char *by;
        EgressAllowDone done;
        void *userdata;
} ForgetCall;

static void on_forgotten(int r, const char *why, void *userdata) {
        ForgetCall *c = userdata;
        _cleanup_free_ char *msg = NULL;

        if (r == 0 && !c->kept) {
                r = -ENOENT;
                if (asprintf(&msg, "%s is neither kept nor allowed in the running sandbox", c->rule) < 0)
                        msg = NULL;
                why = msg ?: "not allowed";
        } else if (r < 0 && r != -ECANCELED) {
                log_warning("Egress: the helper did not forget %s: %s", c->rule, why);
                if (c->kept && asprintf(&msg, "%s is no longer kept, but the running sandbox may still allow it: %s",
                                        c->rule, why) >= 0)
                        why = msg;
        }
        if (r >= 0 || (r != -ENOENT && c->kept)) {
                log_info("Egress: %s forgot %s (%s)", c->by, c->rule,
                         r > 0 ? (c->kept ? "kept, and in the running sandbox" : "in the running sandbox") : "kept");
                egress_audit(c->m, "egress-forgotten", c->by, NULL, NULL, c->rule);
        }
        c->done(r >= 0 ? 0 : r, why, c->userdata);
        free(c->by);
        free(c);
}

int manager_egress_forget(Manager *m, const char *rule, const char *by, EgressAllowDone done, void *userdata,
                          char **ret_error) {
        _cleanup_free_ ForgetCall *c = NULL;
        _cleanup_free_ char *why = NULL;
        HostRule parsed;
        int r;

        r = host_rule_parse(rule, &parsed, ret_error);
        if (r < 0)
                return r;
        c = calloc(1, sizeof(ForgetCall));
        if (!c)
                return -ENOMEM;
        *c = (ForgetCall) { .m = m, .done = done, .userdata = userdata };
        host_rule_format(&parsed, c->rule);
        r = domain_store_egress_forget(m->store, c->rule, &why);
        if (r < 0 && r != -ENOENT)
                return errorf(ret_error, r, "cannot forget %s: %s", c->rule, why ?: strerror(-r));
        c->kept = r >= 0;
        /* A running helper: the rule ends there too, kept or allowed for the Domain's life (spec 4.5, "Forgetting"). */
        if (m->egress) {
                c->by = strdup(by);
                if (!c->by)
                        return -ENOMEM;
                r = egress_watch_forget(m->egress, c->rule, on_forgotten, c);
                if (r < 0) {
                        free(c->by);
                        if (!c->kept)
                                return errorf(ret_error, r, "cannot send %s to the egress helper: %s", c->rule,
                                              strerror(-r));
                        /* The Domain Store has let go of it already: that is a change, so it is audited. */
                        log_warning("Egress: %s forgot %s (kept), but the helper was not told: %s", by, c->rule,
                                    strerror(-r));
                        egress_audit(m, "egress-forgotten", by, NULL, NULL, c->rule);
                        return errorf(ret_error, r, "%s is no longer kept, but the running sandbox may still allow "
                                      "it: cannot reach the egress helper: %s", c->rule, strerror(-r));
                }
                TAKE_PTR(c);
                return 1;
        }
        if (!c->kept)
                return errorf(ret_error, -ENOENT, "%s is not kept", c->rule);
        egress_audit(m, "egress-forgotten", by, NULL, NULL, c->rule);
        return 0;
}

/* ------------------------------------------------------------------- start and stop */

static void on_kept_applied(int r, const char *why, void *userdata) {
        Manager *m = userdata;

        if (r == -ECANCELED)
                return;         /* the Domain stops */
        if (r < 0)
                log_warning("A kept egress rule was not applied: %s", why);
        if (m->egress_kept_pending > 0 && --m->egress_kept_pending == 0 && m->state == DOMAIN_STARTING)
                manager_finish_start(m);
}

int manager_egress_start(Manager *m) {
        _cleanup_strv_free_ char **kept = NULL;
        _cleanup_free_ char *why = NULL;
        const char *api;
        int r;

        if (!m->domain->profile->allow_hosts || !m->domain->profile->allow_hosts[0])
                return 0;
        api = sandbox_helper_api_socket(m->sandbox);
        if (!api)
                return log_error_errno(-ENOTCONN, "The egress helper's API socket is not known");
        if (!m->notifier) {
                m->notifier = notifier_new(m->bus, m->domain->profile->name, (NotifierCallbacks) {}, m);
                if (!m->notifier)
                        return -ENOMEM;
        }
        r = egress_watch_new(m->event, api,
                             &(EgressWatchCallbacks) { .denied = on_denied, .dropped = on_dropped, .lost = on_lost }, m,
                             &m->egress);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the egress helper's denied names");
        /* Kept rules are in force before the Domain is published: no session runs without them. */
        r = domain_store_egress_kept(m->store, &kept, &why);
        if (r < 0) {
                log_warning("Cannot read the kept egress rules: %s; starting without them", why ?: strerror(-r));
                return 0;
        }
        STRV_FOREACH(k, kept) {
                r = egress_watch_allow(m->egress, *k, EGRESS_SCOPE_DOMAIN, on_kept_applied, m);
                if (r < 0)
                        log_warning("The kept egress rule %s is not applied: %s", *k, strerror(-r));
                else
                        m->egress_kept_pending++;
        }
        if (m->egress_kept_pending > 0)
                log_info("Applying %u kept egress rules from the Domain Store", m->egress_kept_pending);
        return m->egress_kept_pending > 0 ? 1 : 0;
}

void manager_egress_session_gone(Manager *m, Session *s) {
        EgressPrompt *p = m->egress_prompt;

        if (!p || p->session != s)
                return;
        /* The session goes with its terminal: nothing to draw, only our state to drop. */
        m->egress_prompt = NULL;
        sd_event_source_disable_unref(p->timer);
        free(p);
}

void manager_egress_stop(Manager *m) {
        if (m->egress_prompt)
                prompt_end(m, "\r\n");
        m->egress_kept_pending = 0;
        m->egress = egress_watch_free(m->egress);
}
