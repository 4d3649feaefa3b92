/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include <systemd/sd-bus.h>

#include "cleanup.h"

/*
 * Desktop notifications for escalation requests that wait for a human
 * (spec section 5.6): where org.freedesktop.Notifications has an owner on
 * the user bus, one notification per request with Approve (only when the
 * whole argv is shown) and Deny. An action counts only from the unique
 * name that owned the notification server's name when the notification
 * was made. Every bus call is asynchronous; nothing waits. Denied names
 * (spec 4.5) are notices without actions: notifier_inform().
 */
typedef struct Notifier Notifier;

typedef struct NotifierCallbacks {
        /* The developer chose an action on request_id's notification. */
        void (*decide)(const char *request_id, bool approve, void *userdata);
} NotifierCallbacks;

Notifier *notifier_new(sd_bus *bus, const char *profile, NotifierCallbacks cb, void *userdata);
Notifier *notifier_free(Notifier *n);
DEFINE_TRIVIAL_CLEANUP_FUNC(Notifier *, notifier_free);

/* A request waits: show it (if there is a server). */
void notifier_show(Notifier *n, const char *request_id, const char *session, char *const *argv, const char *why);
/* The request was decided or ended elsewhere: its notification is withdrawn. */
void notifier_withdraw(Notifier *n, const char *request_id);
/*
 * A notice without actions (a denied name, spec 4.5): sent to whoever
 * owns the server's name now, nothing awaited, nothing that could decide.
 * summary and body are plain text of ours (no markup characters).
 */
void notifier_inform(Notifier *n, const char *summary, const char *body);
