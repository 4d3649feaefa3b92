/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The denied-name channel between the egress helper and the coordinator
 * (egress-proto.h): what the helper may write, what the coordinator reads
 * back, and every line outside the grammar refused, the sandbox's bytes
 * never passed on as a name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "egress-proto.h"
#include "json-util.h"
#include "util.h"

static void round_trip(const EgressEvent *ev, const char *want) {
        char buf[EGRESS_EVENT_LINE_MAX];
        _cleanup_free_ char *why = NULL;
        EgressEvent back;
        int n = egress_event_format(ev, buf);

        cr_assert_gt(n, 0);
        cr_assert_str_eq(buf, want);
        cr_assert_eq(buf[n - 1], '\n');
        cr_assert_eq(egress_event_parse(buf, (size_t) n - 1, &back, &why), 0, "%s", why);
        cr_assert_eq(back.kind, ev->kind);
        cr_assert_str_eq(back.name, ev->name);
        cr_assert_eq(back.port, ev->port);
        cr_assert_eq(back.dropped, ev->dropped);
}

Test(egress_proto, events) {
        EgressEvent longest = { .kind = EGRESS_EVENT_DENIED_PORT, .port = 65535 };
        char buf[EGRESS_EVENT_LINE_MAX], rule[HOST_RULE_STRING_MAX];

        round_trip(&(EgressEvent) { .kind = EGRESS_EVENT_DENIED_DNS, .name = "registry.npmjs.org" },
                   "denied dns registry.npmjs.org\n");
        round_trip(&(EgressEvent) { .kind = EGRESS_EVENT_DENIED_PORT, .name = "probe.lazaret.test", .port = 8080 },
                   "denied port probe.lazaret.test 8080\n");
        round_trip(&(EgressEvent) { .kind = EGRESS_EVENT_DROPPED, .dropped = 17 }, "dropped 17\n");

        /* The longest name there is fits, with the longest port. */
        memset(longest.name, 'a', 63);
        longest.name[63] = '.';
        memset(longest.name + 64, 'b', 63);
        longest.name[127] = '.';
        memset(longest.name + 128, 'c', 63);
        longest.name[191] = '.';
        memset(longest.name + 192, 'd', 61);
        longest.name[253] = 0;
        cr_assert_gt(egress_event_format(&longest, buf), 0);

        egress_event_rule(&(EgressEvent) { .kind = EGRESS_EVENT_DENIED_PORT, .name = "a.example", .port = 22 }, rule);
        cr_assert_str_eq(rule, "a.example:22");
        egress_event_rule(&(EgressEvent) { .kind = EGRESS_EVENT_DENIED_DNS, .name = "a.example" }, rule);
        cr_assert_str_eq(rule, "a.example");
}

/* A name the helper could not carry is not written: the sandbox's choice of bytes stops at the helper. */
Test(egress_proto, format_refuses) {
        char buf[EGRESS_EVENT_LINE_MAX];
        static const char *const bad[] = {
                "", "UPPER.example", "under_score.example", "esc\x1b[2J.example", "a..b", "-a.example", "a.example.",
                "sp ace.example", "new\nline.example",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                EgressEvent ev = { .kind = EGRESS_EVENT_DENIED_DNS };
                strcpy(ev.name, bad[i]);
                cr_assert_eq(egress_event_format(&ev, buf), -EINVAL, "\"%s\" was written", bad[i]);
        }
        cr_assert_eq(egress_event_format(&(EgressEvent) { .kind = EGRESS_EVENT_DENIED_PORT, .name = "a.example" }, buf),
                     -EINVAL, "port 0");
        cr_assert_eq(egress_event_format(&(EgressEvent) { .kind = EGRESS_EVENT_DROPPED }, buf), -EINVAL, "0 dropped");
}

Test(egress_proto, parse_refuses) {
        static const char *const bad[] = {
                "denied dns ",
                "denied dns UPPER.example",
                "denied dns a_b.example",
                "denied dns a.example extra",
                "denied dns \x1b]0;title\x07.example",
                "denied dns caf\xc3\xa9.example",
                "denied port a.example",
                "denied port a.example 0",
                "denied port a.example 65536",
                "denied port a.example +80",
                "denied port a.example 80 x",
                "denied  dns a.example",
                "dropped 0",
                "dropped -1",
                "dropped 4294967296",
                "allowed dns a.example",
                "{\"return\":{}}",
        };
        char huge[EGRESS_EVENT_LINE_MAX + 8];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_free_ char *why = NULL;
                EgressEvent ev;

                cr_assert_eq(egress_event_parse(bad[i], strlen(bad[i]), &ev, &why), -EBADMSG, "\"%s\" was read", bad[i]);
                cr_assert_not_null(why);
                /* The sentence never carries a control byte of the line. */
                for (const char *p = why; *p; p++)
                        cr_assert((unsigned char) *p >= 0x20 && (unsigned char) *p < 0x7f, "why: %s", why);
        }
        memset(huge, 'a', sizeof(huge));
        memcpy(huge, "denied dns ", 11);
        cr_assert_eq(egress_event_parse(huge, sizeof(huge), &(EgressEvent) {}, NULL), -EBADMSG);
}

Test(egress_proto, allow_request) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *text = NULL, *why = NULL;
        json_object *args;
        EgressScope scope;
        HostRule r;

        cr_assert_eq(egress_allow_request("Probe.Lazaret.Test:8080", EGRESS_SCOPE_ONCE, &text, &why), 0, "%s", why);
        cr_assert_str_eq(text, "{\"execute\":\"add_host\",\"arguments\":{\"rule\":\"probe.lazaret.test:8080\",\"scope\":\"once\"}}");
        cr_assert_eq(json_parse_strict(text, strlen(text), &o, &why), 0);
        cr_assert(json_object_object_get_ex(o, "arguments", &args));
        cr_assert_eq(egress_allow_parse(args, &r, &scope, &why), 0, "%s", why);
        cr_assert_str_eq(r.name, "probe.lazaret.test");
        cr_assert_eq(r.n_ports, 1);
        cr_assert_eq(r.ports[0], 8080);
        cr_assert_eq(scope, EGRESS_SCOPE_ONCE);

        /* The helper holds once and domain only: keep is the coordinator's (the Domain Store). */
        free(text);
        text = NULL;
        cr_assert_eq(egress_allow_request("a.example", EGRESS_SCOPE_KEEP, &text, &why), -EINVAL);
        why = mfree(why);
        cr_assert_lt(egress_allow_request("http://a.example", EGRESS_SCOPE_DOMAIN, &text, &why), 0);
        cr_assert_null(text);
}

Test(egress_proto, allow_parse_refuses) {
        static const char *const bad[] = {
                "{}",
                "{\"rule\":\"a.example\"}",
                "{\"rule\":\"a.example\",\"scope\":\"keep\"}",
                "{\"rule\":\"a.example\",\"scope\":\"forever\"}",
                "{\"rule\":\"a.example\",\"scope\":\"once\",\"extra\":1}",
                "{\"rule\":1,\"scope\":\"once\"}",
                "{\"rule\":\"a b\",\"scope\":\"once\"}",
                "{\"rule\":\"a.example:0\",\"scope\":\"domain\"}",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_(json_object_putp) json_object *o = NULL;
                _cleanup_free_ char *why = NULL;
                EgressScope scope;
                HostRule r;

                cr_assert_eq(json_parse_strict(bad[i], strlen(bad[i]), &o, &why), 0, "%s", bad[i]);
                why = mfree(why);
                cr_assert_lt(egress_allow_parse(o, &r, &scope, &why), 0, "%s was taken", bad[i]);
        }
}

Test(egress_proto, scopes) {
        EgressScope s;

        for (int i = 0; i < _EGRESS_SCOPE_MAX; i++) {
                cr_assert_eq(egress_scope_from_string(egress_scope_to_string((EgressScope) i), &s), 0);
                cr_assert_eq(s, (EgressScope) i);
        }
        cr_assert_eq(egress_scope_from_string("Once", &s), -EINVAL);
        cr_assert_eq(egress_scope_from_string(NULL, &s), -EINVAL);
        cr_assert_null(egress_scope_to_string(_EGRESS_SCOPE_MAX));
}

Test(egress_proto, remove_request) {
        _cleanup_(json_object_putp) json_object *o = NULL;
        _cleanup_free_ char *text = NULL, *why = NULL;
        json_object *args;
        HostRule r;

        cr_assert_eq(egress_remove_request("Probe.Lazaret.Test:8080", &text, &why), 0, "%s", why);
        cr_assert_str_eq(text, "{\"execute\":\"remove_host\",\"arguments\":{\"rule\":\"probe.lazaret.test:8080\"}}");
        cr_assert_eq(json_parse_strict(text, strlen(text), &o, &why), 0);
        cr_assert(json_object_object_get_ex(o, "arguments", &args));
        cr_assert_eq(egress_remove_parse(args, &r, &why), 0, "%s", why);
        cr_assert_str_eq(r.name, "probe.lazaret.test");
        cr_assert_eq(r.n_ports, 1);
        cr_assert_eq(r.ports[0], 8080);

        free(text);
        text = NULL;
        cr_assert_lt(egress_remove_request("http://a.example", &text, &why), 0);
        cr_assert_null(text);
}

Test(egress_proto, remove_parse_refuses) {
        static const char *const bad[] = {
                "{}",
                "{\"rule\":1}",
                "{\"rule\":\"a.example\",\"scope\":\"once\"}",
                "{\"rule\":\"a b\"}",
                "{\"rule\":\"*.\"}",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_(json_object_putp) json_object *o = NULL;
                _cleanup_free_ char *why = NULL;
                HostRule r;

                cr_assert_eq(json_parse_strict(bad[i], strlen(bad[i]), &o, &why), 0, "%s", bad[i]);
                why = mfree(why);
                cr_assert_lt(egress_remove_parse(o, &r, &why), 0, "%s was taken", bad[i]);
                cr_assert_not_null(why);
        }
}

/* The helper's answers as the coordinator reads them: 1 removed, 0 any other return, the error's words escaped. */
Test(egress_proto, reply_parse) {
        static const struct {
                const char *text;
                int want;
                const char *why;
        } cases[] = {
                { "{\"return\":{}}", 0, NULL },
                { "{\"return\":{\"removed\":true,\"closed\":2}}", 1, NULL },
                { "{\"return\":{\"removed\":false,\"closed\":0}}", 0, NULL },
                { "{\"return\":{\"removed\":\"yes\"}}", 0, NULL },
                { "{\"error\":{\"desc\":\"no\\u001bway\"}}", -EINVAL, "no\\x1bway" },
                { "{\"error\":{\"desc\":3}}", -EBADMSG, NULL },
                { "{\"return\":[]}", -EBADMSG, NULL },
                { "[]", -EBADMSG, NULL },
                { "", -EBADMSG, NULL },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_free_ char *why = NULL;
                int r = egress_reply_parse(cases[i].text, strlen(cases[i].text), &why);

                cr_assert_eq(r, cases[i].want, "%s: %d", cases[i].text, r);
                if (r >= 0)
                        cr_assert_null(why, "%s", cases[i].text);
                else
                        cr_assert_not_null(why, "%s", cases[i].text);
                if (cases[i].why)
                        cr_assert_str_eq(why, cases[i].why);
        }
}
