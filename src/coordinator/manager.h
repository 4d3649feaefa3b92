/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "activation.h"
#include "audit.h"
#include "bus-names.h"
#include "config.h"
#include "domain.h"
#include "domain-store.h"
#include "egress-watch.h"
#include "escalation.h"
#include "notify.h"
#include "sandbox.h"
#include "session.h"

/*
 * The Host Coordinator of one Domain: the only owner of the Domain's bus
 * name, lock, sandbox, sessions and child processes (OR-1).
 *
 * Lifecycle (spec/lazaret.md, "Domain lifecycle"):
 *   STARTING  lock held, bus name being acquired, then the sandbox
 *             starting; not yet published: the object is not exported,
 *             READY=1 not sent
 *   RUNNING   published: sessions may be opened
 *   STOPPING  no new sessions; sessions ended, sandbox and supervisor being
 *             stopped, runtime files removed; then the process exits
 *   FAILED    like STOPPING, entered from an error; exit status is non-zero
 *   MAINTENANCE  a maintenance request's coordinator (launch-request.h):
 *             lock held, store open, bus name owned, published with the
 *             store's methods only; no sandbox, no session. It stops
 *             after MAINTENANCE_IDLE_USEC without a call, and at once when
 *             a launching client connects (that client, told "stopping",
 *             connects again and waits for the next coordinator)
 *
 * The manager owns its parts (Sandbox, Session) and hears from them only
 * through their callbacks, from the event loop. manager_stop() only records
 * the decision and schedules the teardown, which runs from the loop too.
 */
typedef enum DomainState {
        DOMAIN_STARTING,
        DOMAIN_RUNNING,
        DOMAIN_STOPPING,
        DOMAIN_FAILED,
        DOMAIN_MAINTENANCE,
} DomainState;

const char *domain_state_to_string(DomainState s);

#define COORDINATOR_ID_LEN 32
/* A maintenance coordinator stops this long after its last call. */
#define MAINTENANCE_IDLE_USEC (5ULL * 1000 * 1000)

typedef struct Manager Manager;
typedef struct EgressPrompt EgressPrompt;

struct Manager {
        sd_event *event;
        sd_bus *bus;
        sd_bus_slot *object_slot;
        sd_bus_slot *name_slot, *name_acquired_slot;
        sd_event_source *name_timer;

        char id[DOMAIN_ID_LEN + 1];
        char bus_name[BUS_NAME_MAX];
        char coordinator_id[COORDINATOR_ID_LEN + 1];
        char fingerprint[SHA256_HEX_LEN + 1];
        Config *config;
        Domain *domain;                 /* NULL in maintenance: the workspace need not exist any more */
        DomainRecord record;            /* the Domain record's profile and workspace */
        char *domain_dir;               /* <data_root>/domains/<id> */
        bool maintenance;               /* the launch request asked for maintenance (launch-request.h) */
        uint64_t startup_usec;          /* CLOCK_MONOTONIC when manager_startup() began, for the published line */

        SubidRange subuids, subgids;    /* what the sandbox's user namespace maps to, looked up once */
        char *runtime_root;     /* $XDG_RUNTIME_DIR/lazaret */
        char *runtime_dir;      /* $XDG_RUNTIME_DIR/lazaret/ID: runsc state, specs */
        int lock_fd;
        DomainStore *store;             /* opened once the lock is held (FR-17) */
        AuditWriter *audit;             /* the escalation audit trail's queue into the store */

        Activation *activation; /* the clients of `lazaretctl launch` waiting for the start */

        DomainState state;
        char *failure;          /* why the Domain failed, for clients */
        int exit_code;
        sd_event_source *teardown;      /* defer: runs the teardown from the loop */

        Sandbox *sandbox;
        Escalations *escalations;       /* NULL unless escalation is enabled and the sandbox runs */
        Notifier *notifier;             /* desktop notifications: pending requests, denied names */
        EgressWatch *egress;            /* denied names; NULL unless the profile has host rules and the sandbox runs */
        EgressPrompt *egress_prompt;    /* the one denied-name prompt up, or NULL */
        bool egress_quiet;              /* the developer chose "no more such prompts" */
        unsigned egress_kept_pending;   /* kept rules sent to the helper, not yet answered: publication waits */
        /* Ended sessions whose mailbox names the sandbox must still forget, sent in one batch. */
        char **forget_pending;
        sd_event_source *forget_timer;

        Session *sessions;
        unsigned n_sessions;
        sd_event_source *idle_timer;    /* also the maintenance coordinator's */
};

int manager_new(const char *id, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Validates the Domain, takes the lock, begins acquiring the bus name. < 0: nothing began. */
/* On failure *ret_why (optional) is the line to tell waiting clients. */
int manager_startup(Manager *m, char **ret_why);

/* Records the decision to stop (failure NULL: orderly) and schedules the teardown. Idempotent. */
void manager_stop(Manager *m, const char *failure);

/* Opens a session for a bus caller (manager-bus.c). */
int manager_open_session(Manager *m, const SessionParams *p, Session **ret, sd_bus_error *error);
Session *manager_find_session(Manager *m, const char *id);

void manager_update_status(Manager *m);

/* A maintenance call was served: the idle timeout starts again. */
void manager_maintenance_touch(Manager *m);

/* The sandbox is ready and every part that had to be (manager-egress.c's kept rules): publish the Domain. */
void manager_finish_start(Manager *m);

/*
 * manager-egress.c: denied names (spec 4.5, "A denied name"). start() is
 * called once the sandbox is ready: 1 when kept rules went to the helper
 * and publication waits for their answers (manager_finish_start() then
 * follows), 0 when it need not wait. allow() validates rule, keeps it
 * (EGRESS_SCOPE_KEEP) and sends it; done() hears the helper's answer, by is
 * who relayed the developer's decision (ESC_BY_TERMINAL, ESC_BY_BUS).
 */
int manager_egress_start(Manager *m);
void manager_egress_stop(Manager *m);
void manager_egress_session_gone(Manager *m, Session *s);
int manager_egress_allow(Manager *m, const char *rule, EgressScope scope, const char *by, EgressAllowDone done,
                         void *userdata, char **ret_error);
/*
 * Forgets rule: from the Domain Store when kept, and from the running
 * helper whatever its scope. 0: done (no helper runs: a stopped Domain's
 * maintenance coordinator); 1: done() hears the helper's answer from the
 * loop (-ENOENT when neither held it); < 0 with a sentence: nothing done.
 */
int manager_egress_forget(Manager *m, const char *rule, const char *by, EgressAllowDone done, void *userdata,
                          char **ret_error);

/* manager-bus.c */
int manager_publish(Manager *m);
void manager_emit_session_ended(Manager *m, const char *session_id, int exit_status, const char *reason);
void manager_emit_sessions_changed(Manager *m);
void manager_emit_state_changed(Manager *m);
void manager_emit_escalation_requested(Manager *m, const char *request_id, const char *session_id);
void manager_emit_egress_denied(Manager *m, const EgressDenial *d);
