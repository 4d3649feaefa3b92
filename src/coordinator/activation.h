/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

#include "cleanup.h"

/*
 * The activation socket (lazaret@ID.socket, spec D2): each `lazaretctl
 * launch` connects and waits for one JSON line that says how the start
 * went, {"state":"running",…} or {"state":"failed","error":…}; while the
 * start does long work it first reads progress lines, {"progress":"…"},
 * and {"progress":""} when that work ended. Nothing a client sends is read;
 * its hang-up is noticed. Writes are best effort and never block: a few
 * bytes into an empty socket buffer.
 *
 * The part knows the protocol, not the Domain: its owner says what the
 * answer is (ActivationAnswer) and hears back through the callbacks, from
 * the event loop only. Every call takes a NULL Activation (nothing to do).
 */
typedef struct Activation Activation;

typedef struct ActivationCallbacks {
        /* A client connected; the owner answers it now (activation_answer()) if the start is over. */
        void (*connected)(Activation *a, void *userdata);
        /* The last client waiting for an answer hung up before it got one. */
        void (*abandoned)(Activation *a, void *userdata);
} ActivationCallbacks;

/* What the clients read: the line is built from these (NULL: the member is left out). */
typedef struct ActivationAnswer {
        const char *state;              /* domain_state_to_string() */
        const char *domain_id, *bus_name, *coordinator_id;
        const char *error;              /* why the Domain failed; not UTF-8: a fixed sentence instead */
        const char *unenforced_limits;  /* for the clients that waited for this start only; empty: left out */
        const char *state_notice, *checkout_notice;
        char *const *git_notices;
} ActivationAnswer;

/*
 * Takes the socket passed by the service manager (sd_listen_fds()); returns
 * how many were passed (only the first is used, the others are closed).
 * With none (started by hand), an Activation that never has clients: every
 * call below still works.
 */
int activation_new(sd_event *event, const ActivationCallbacks *cb, void *userdata, Activation **ret, char **ret_error);
Activation *activation_free(Activation *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(Activation *, activation_free);

/* How many clients wait for their answer. */
unsigned activation_n_waiting(const Activation *a);

/* The long work under way (NULL or "": it ended): told to every waiting client, and to those that come. */
void activation_progress(Activation *a, const char *what);

/* Answers every waiting client with one line and lets it go; progress is over. */
int activation_answer(Activation *a, const ActivationAnswer *answer);

/*
 * A start failed: the connections queued meanwhile (the loop was busy)
 * become waiting clients, to hear the answer; left queued they would
 * activate a coordinator again and again.
 */
void activation_take_queued(Activation *a);

/* No new client is taken: those that come wait for the next coordinator. */
void activation_stop_listening(Activation *a);

/* The protocol's two lines, newline-terminated (pure; unit-tested). */
int activation_answer_line(const ActivationAnswer *answer, char **ret);
int activation_progress_line(const char *what, char **ret);
