/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/*
 * The text of a desktop notification for a pending escalation request
 * (spec section 5.6): what the developer reads on the desktop before
 * pressing Approve. Everything the sandbox wrote is escaped first for
 * reading (esc_argv_to_display()) and then, when the server renders
 * markup (its "body-markup" capability), for the markup. Approve is
 * offered only when the whole argv is in the body; a longer command is
 * cut, said so, and must be decided elsewhere.
 */
#define NOTIFY_ARGV_SHOWN_MAX 400       /* bytes of the displayed argv a notification carries */
#define NOTIFY_WHY_SHOWN_MAX 200

/* &, <, >, " and ' as entities: the subset of markup notification servers read. */
char *notify_markup_escape(const char *s);

typedef struct NotifyText {
        char *summary;
        char *body;
        bool offer_approve;
} NotifyText;

void notify_text_done(NotifyText *t);
int notify_text_compose(const char *profile, const char *session, char *const *argv, const char *why, bool markup,
                        NotifyText *ret);
