/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Desktop notifications of pending escalation requests (notify.h):
 * GetNameOwner, then GetCapabilities, then Notify, each asynchronous; the
 * ActionInvoked match is made for the owner's unique name before Notify,
 * and a signal from any other sender is ignored.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escalation-proto.h"
#include "log.h"
#include "notify.h"
#include "notify-text.h"
#include "strv.h"
#include "util.h"

#define NOTIFICATIONS_NAME "org.freedesktop.Notifications"
#define NOTIFICATIONS_PATH "/org/freedesktop/Notifications"
#define NOTIFICATIONS_IFACE "org.freedesktop.Notifications"
#define ACTION_APPROVE "approve"
#define ACTION_DENY "deny"
#define CALL_TIMEOUT_USEC (5ULL * 1000000)

typedef struct Note Note;
struct Note {
        Notifier *n;
        Note *next;
        char request[ESC_ID_LEN + 1];
        char session[ESC_ID_LEN + 1];
        char **argv;
        char *why;
        char *owner;                    /* the server's unique name */
        uint32_t id;                    /* the server's notification ID; 0 before the reply */
        bool offer_approve;
        sd_bus_slot *call, *action;
};

struct Notifier {
        sd_bus *bus;
        char *profile;
        NotifierCallbacks cb;
        void *userdata;
        Note *notes;
};

static Note *note_free(Note *x) {
        if (!x)
                return NULL;
        sd_bus_slot_unref(x->call);
        sd_bus_slot_unref(x->action);
        strv_free(x->argv);
        free(x->why);
        free(x->owner);
        free(x);
        return NULL;
}

static void note_drop(Note *x) {
        for (Note **p = &x->n->notes; *p; p = &(*p)->next)
                if (*p == x) {
                        *p = x->next;
                        break;
                }
        note_free(x);
}

static Note *note_find(Notifier *n, const char *request) {
        for (Note *x = n ? n->notes : NULL; x; x = x->next)
                if (streq(x->request, request))
                        return x;
        return NULL;
}

static int on_action(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Note *x = userdata;
        Notifier *n = x->n;
        char request[ESC_ID_LEN + 1];
        const char *action;
        uint32_t id;
        bool approve;

        /* Only the server that made the notification speaks for it. */
        if (!x->owner || !streq_ptr(sd_bus_message_get_sender(m), x->owner))
                return 0;
        if (sd_bus_message_read(m, "us", &id, &action) < 0 || x->id == 0 || id != x->id)
                return 0;
        if (streq(action, ACTION_APPROVE) && x->offer_approve)
                approve = true;
        else if (streq(action, ACTION_DENY))
                approve = false;
        else
                return 0;
        memcpy(request, x->request, sizeof(request));
        /* The decision ends the request, which withdraws (and frees) x: nothing of it is used after this. */
        n->cb.decide(request, approve, n->userdata);
        return 0;
}

static int on_notify_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Note *x = userdata;
        uint32_t id;

        x->call = sd_bus_slot_unref(x->call);
        if (sd_bus_message_is_method_error(m, NULL) || sd_bus_message_read(m, "u", &id) < 0 || id == 0) {
                log_session(LOG_NOTICE, x->session, "The notification server did not show escalation request %s: %s",
                            x->request, sd_bus_message_get_error(m) ? sd_bus_message_get_error(m)->message : "no ID");
                note_drop(x);
                return 0;
        }
        x->id = id;
        log_session(LOG_INFO, x->session, "Escalation request %s shown as desktop notification %u (by %s)", x->request,
                    id, x->owner);
        return 0;
}

static int append_actions(sd_bus_message *m, bool approve) {
        int k = sd_bus_message_open_container(m, 'a', "s");

        if (k >= 0 && approve)
                k = sd_bus_message_append(m, "ss", ACTION_APPROVE, "Approve");
        if (k >= 0)
                k = sd_bus_message_append(m, "ss", ACTION_DENY, "Deny");
        return k >= 0 ? sd_bus_message_close_container(m) : k;
}

static int on_capabilities(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        _cleanup_strv_free_ char **caps = NULL;
        Note *x = userdata;
        NotifyText t = {};
        int k;

        x->call = sd_bus_slot_unref(x->call);
        /* Without an answer: plain text, the safe assumption. */
        if (!sd_bus_message_is_method_error(m, NULL))
                (void) sd_bus_message_read_strv(m, &caps);
        k = notify_text_compose(x->n->profile, x->session, x->argv, x->why, strv_contains((const char *const *) caps, "body-markup"), &t);
        if (k >= 0) {
                x->offer_approve = t.offer_approve && strv_contains((const char *const *) caps, "actions");
                k = sd_bus_message_new_method_call(x->n->bus, &call, x->owner, NOTIFICATIONS_PATH, NOTIFICATIONS_IFACE,
                                                   "Notify");
        }
        if (k >= 0)
                k = sd_bus_message_append(call, "susss", "Lazaret", 0, "dialog-warning", t.summary, t.body);
        if (k >= 0)
                k = append_actions(call, x->offer_approve);
        if (k >= 0)
                k = sd_bus_message_append(call, "a{sv}i", 2, "urgency", "y", 2, "resident", "b", 1, 0);
        if (k >= 0)
                k = sd_bus_call_async(x->n->bus, &x->call, call, on_notify_reply, x, CALL_TIMEOUT_USEC);
        notify_text_done(&t);
        if (k < 0) {
                log_errno_session(LOG_NOTICE, k, x->session, "Cannot notify the desktop of escalation request %s",
                                  x->request);
                note_drop(x);
        }
        return 0;
}

static int on_name_owner(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Note *x = userdata;
        const char *owner;
        int k;

        x->call = sd_bus_slot_unref(x->call);
        if (sd_bus_message_is_method_error(m, NULL) || sd_bus_message_read(m, "s", &owner) < 0) {
                note_drop(x);           /* no notification server: the terminal and D-Bus remain */
                return 0;
        }
        x->owner = strdup(owner);
        if (!x->owner) {
                note_drop(x);
                return 0;
        }
        /* Matched on the sender before the notification exists: an action cannot come before the match. */
        k = sd_bus_match_signal_async(x->n->bus, &x->action, x->owner, NOTIFICATIONS_PATH, NOTIFICATIONS_IFACE,
                                      "ActionInvoked", on_action, NULL, x);
        if (k >= 0)
                k = sd_bus_call_method_async(x->n->bus, &x->call, x->owner, NOTIFICATIONS_PATH, NOTIFICATIONS_IFACE,
                                             "GetCapabilities", on_capabilities, x, "");
        if (k < 0) {
                log_errno_session(LOG_NOTICE, k, x->session, "Cannot notify the desktop of escalation request %s",
                                  x->request);
                note_drop(x);
        }
        return 0;
}

void notifier_show(Notifier *n, const char *request_id, const char *session, char *const *argv, const char *why) {
        Note *x;
        int k;

        if (!n || note_find(n, request_id))
                return;
        x = calloc(1, sizeof(Note));
        if (!x)
                return;
        x->n = n;
        snprintf(x->request, sizeof(x->request), "%s", request_id);
        snprintf(x->session, sizeof(x->session), "%s", session);
        x->argv = strv_copy(argv);
        x->why = strdup(why ?: "");
        x->next = n->notes;
        n->notes = x;
        if (!x->argv || !x->why) {
                note_drop(x);
                return;
        }
        k = sd_bus_call_method_async(n->bus, &x->call, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "GetNameOwner", on_name_owner, x, "s", NOTIFICATIONS_NAME);
        if (k < 0)
                note_drop(x);
}

void notifier_withdraw(Notifier *n, const char *request_id) {
        Note *x = note_find(n, request_id);

        if (!x)
                return;
        /* The first decision won elsewhere: the notification goes (no reply awaited). */
        if (x->id != 0)
                (void) sd_bus_call_method_async(n->bus, NULL, x->owner, NOTIFICATIONS_PATH, NOTIFICATIONS_IFACE,
                                                "CloseNotification", NULL, NULL, "u", x->id);
        note_drop(x);
}

void notifier_inform(Notifier *n, const char *summary, const char *body) {
        if (!n)
                return;
        /* No actions: there is nothing for a sender of ActionInvoked to decide, so no owner to match. */
        (void) sd_bus_call_method_async(n->bus, NULL, NOTIFICATIONS_NAME, NOTIFICATIONS_PATH, NOTIFICATIONS_IFACE, "Notify",
                                        NULL, NULL, "susssasa{sv}i", "Lazaret", 0, "dialog-information", summary, body,
                                        0, 1, "urgency", "y", 1, -1);
}

Notifier *notifier_new(sd_bus *bus, const char *profile, NotifierCallbacks cb, void *userdata) {
        Notifier *n = calloc(1, sizeof(Notifier));

        if (!n)
                return NULL;
        n->bus = bus;
        n->cb = cb;
        n->userdata = userdata;
        n->profile = strdup(profile);
        if (!n->profile)
                return mfree(n);
        return n;
}

Notifier *notifier_free(Notifier *n) {
        if (!n)
                return NULL;
        while (n->notes)
                note_drop(n->notes);
        free(n->profile);
        free(n);
        return NULL;
}
