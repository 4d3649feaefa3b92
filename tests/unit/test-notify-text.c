/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "escalation-proto.h"
#include "notify-text.h"

Test(notify, markup_is_escaped) {
        char *s = notify_markup_escape("<b>a & 'b' \"c\"</b>");

        cr_assert_str_eq(s, "&lt;b&gt;a &amp; &apos;b&apos; &quot;c&quot;&lt;/b&gt;");
        free(s);
}

Test(notify, sandbox_text_cannot_make_markup) {
        char *argv[] = { "/bin/echo", "<a href='x'>click</a>", "\xe2\x80\xae" "evil", NULL };
        NotifyText t = {};

        cr_assert_eq(notify_text_compose("p<", "0123456789abcdef0123456789abcdef", argv, "<i>why</i>", true, &t), 0);
        cr_assert_null(strchr(t.body, '<'), "%s", t.body);
        cr_assert_null(strchr(t.body, '>'), "%s", t.body);
        cr_assert_not_null(strstr(t.body, "&lt;a href="), "%s", t.body);
        cr_assert_not_null(strstr(t.body, "\\u{202e}evil"), "a bidirectional control is shown escaped: %s", t.body);
        cr_assert(t.offer_approve);
        notify_text_done(&t);
        /* A server without markup gets the display text as it is. */
        cr_assert_eq(notify_text_compose("p", "0123456789abcdef0123456789abcdef", argv, "", false, &t), 0);
        cr_assert_not_null(strstr(t.body, "<a href="), "%s", t.body);
        cr_assert_not_null(strstr(t.body, "Why: (none given)"), "%s", t.body);
        notify_text_done(&t);
}

Test(notify, approve_only_with_the_whole_argv_shown) {
        char *long_arg = malloc(NOTIFY_ARGV_SHOWN_MAX + 1), *argv[] = { "/bin/echo", long_arg, NULL };
        NotifyText t = {};

        memset(long_arg, 'x', NOTIFY_ARGV_SHOWN_MAX);
        long_arg[NOTIFY_ARGV_SHOWN_MAX] = 0;
        cr_assert_eq(notify_text_compose("p", "0123456789abcdef0123456789abcdef", argv, "", true, &t), 0);
        cr_assert_not(t.offer_approve, "a cut command must not be approvable from the notification");
        cr_assert_not_null(strstr(t.body, "too long to show here"));
        notify_text_done(&t);
        long_arg[NOTIFY_ARGV_SHOWN_MAX - 20] = 0;
        cr_assert_eq(notify_text_compose("p", "0123456789abcdef0123456789abcdef", argv, "", true, &t), 0);
        cr_assert(t.offer_approve);
        cr_assert_not_null(strstr(t.body, long_arg));
        notify_text_done(&t);
        free(long_arg);
}
