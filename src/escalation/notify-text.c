/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "escalation-proto.h"
#include "notify-text.h"

char *notify_markup_escape(const char *s) {
        size_t n = 0;
        char *ret, *p;

        for (const char *c = s; *c; c++)
                n += *c == '&' ? 5 : *c == '<' || *c == '>' ? 4 : *c == '"' || *c == '\'' ? 6 : 1;
        ret = p = malloc(n + 1);
        if (!ret)
                return NULL;
        for (const char *c = s; *c; c++)
                switch (*c) {
                case '&': p = stpcpy(p, "&amp;"); break;
                case '<': p = stpcpy(p, "&lt;"); break;
                case '>': p = stpcpy(p, "&gt;"); break;
                case '"': p = stpcpy(p, "&quot;"); break;
                case '\'': p = stpcpy(p, "&apos;"); break;
                default: *p++ = *c;
                }
        *p = 0;
        return ret;
}

void notify_text_done(NotifyText *t) {
        free(t->summary);
        free(t->body);
        *t = (NotifyText) {};
}

/* s cut to max bytes (on a character boundary of the already escaped, ASCII-only display text). */
static char *cut(const char *s, size_t max, bool *ret_cut) {
        *ret_cut = strlen(s) > max;
        return strndup(s, *ret_cut ? max : strlen(s));
}

int notify_text_compose(const char *profile, const char *session, char *const *argv, const char *why, bool markup,
                        NotifyText *ret) {
        _cleanup_free_ char *shown = esc_argv_to_display(argv), *why_shown = esc_string_to_display(why ?: ""),
                            *prof = esc_string_to_display(profile), *cmd = NULL, *why_cut = NULL, *plain = NULL;
        bool cmd_cut, why_was_cut;
        NotifyText t = {};

        if (!shown || !why_shown || !prof)
                return -ENOMEM;
        cmd = cut(shown, NOTIFY_ARGV_SHOWN_MAX, &cmd_cut);
        why_cut = cut(why_shown, NOTIFY_WHY_SHOWN_MAX, &why_was_cut);
        if (!cmd || !why_cut)
                return -ENOMEM;
        if (asprintf(&plain, "Profile %s, session %.8s\nCommand: %s%s\nWhy: %s%s%s", prof, session, cmd,
                     cmd_cut ? " [...]" : "", why && *why ? why_cut : "(none given)", why_was_cut ? " [...]" : "",
                     cmd_cut ? "\nThe command is too long to show here: decide on the session's terminal or with "
                               "lazaretctl escalations." : "") < 0)
                return -ENOMEM;
        t.summary = strdup("Lazaret: the sandbox asks to run a host command");
        t.body = markup ? notify_markup_escape(plain) : TAKE_PTR(plain);
        if (!t.summary || !t.body) {
                notify_text_done(&t);
                return -ENOMEM;
        }
        t.offer_approve = !cmd_cut;
        *ret = t;
        return 0;
}
