/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <termios.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-names.h"
#include "config.h"
#include "domain.h"

/*
 * The Host Coordinator of one Domain: the only owner of the Domain's bus
 * name, lock, sandbox, sessions and child processes (OR-1).
 *
 * Lifecycle (spec/lazaret.md, "Domain lifecycle"):
 *   STARTING  lock and bus name held, recovery done, sandbox starting;
 *             not yet published: the object is not exported, READY=1 not sent
 *   RUNNING   published: sessions may be opened
 *   STOPPING  no new sessions; sessions ended, sandbox and supervisor being
 *             stopped, runtime files removed; then the process exits
 *   FAILED    like STOPPING, entered from an error; exit status is non-zero
 */
typedef enum DomainState {
        DOMAIN_STARTING,
        DOMAIN_RUNNING,
        DOMAIN_STOPPING,
        DOMAIN_FAILED,
} DomainState;

const char *domain_state_to_string(DomainState s);

#define RANDOM_ID_LEN 32  /* hex digits of 128 random bits */

typedef struct Manager Manager;
typedef struct Session Session;
typedef struct Sandbox Sandbox;

/* A pending connection on the activation socket, answered once published. */
typedef struct Waiter {
        int fd;
        struct Waiter *next;
} Waiter;

struct Manager {
        sd_event *event;
        sd_bus *bus;
        sd_bus_slot *object_slot;

        char id[DOMAIN_ID_LEN + 1];
        char bus_name[BUS_NAME_MAX];
        char coordinator_id[RANDOM_ID_LEN + 1];
        char fingerprint[SHA256_HEX_LEN + 1];
        Config *config;
        Domain *domain;

        char *runtime_root;     /* $XDG_RUNTIME_DIR/lazaret */
        char *runtime_dir;      /* $XDG_RUNTIME_DIR/lazaret/ID: runsc state, specs */
        int lock_fd;

        int listen_fd;          /* from socket activation, or -EBADF */
        sd_event_source *listen_source;
        Waiter *waiters;

        DomainState state;
        char *failure;          /* why the Domain failed, for clients */
        int exit_code;

        Sandbox *sandbox;

        Session *sessions;
        unsigned n_sessions;
        unsigned sessions_ever;
        sd_event_source *idle_timer;
};

int manager_new(const char *id, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Validates the Domain, takes the lock and bus name, recovers, starts the sandbox. */
int manager_startup(Manager *m);

/* Called by the sandbox code. */
void manager_sandbox_ready(Manager *m);
void manager_sandbox_failed(Manager *m, const char *why);
void manager_sandbox_stopped(Manager *m);

/* Begins teardown (idempotent). failure NULL: an orderly stop. */
void manager_stop(Manager *m, const char *failure);

/* Session registry hooks. */
void manager_session_added(Manager *m);
void manager_session_removed(Manager *m);

void manager_update_status(Manager *m);

/* manager-bus.c */
int manager_publish(Manager *m);
int manager_emit_session_ended(Manager *m, const char *session_id, int exit_status, const char *reason);
void manager_emit_sessions_changed(Manager *m);

int random_hex_id(char ret[RANDOM_ID_LEN + 1]);
