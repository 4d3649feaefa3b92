/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "escalation-proto.h"

static const uint8_t key[ESC_KEY_LEN] = { 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                          0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                          0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11 };

/* Opaque to the codec: any bytes, NUL and newline included. */
static const uint8_t cred_ok[] = { 0x30, 0x82, 0x00, '\n', 'c', 'r', 'e', 'd', 0xff };

static char *argv_ok[] = { "/usr/bin/touch", "a b", "", NULL };

static EscRequest sample(void) {
        return (EscRequest) {
                .id = "0123456789abcdef0123456789abcdef",
                .session = "fedcba9876543210fedcba9876543210",
                .sandbox = "lazaret-abc-1",
                .time_usec = 1700000000000000ULL,
                .timeout_s = 30,
                .cwd = "/workspace/sub dir",
                .why = "because\nreasons",
                .argv = argv_ok,
                .argc = 3,
                .cred = (uint8_t *) cred_ok,
                .cred_len = sizeof(cred_ok),
        };
}

/* The record holds NUL bytes (in the credential): copied whole, never with strndup(). */
static char *memdup_test(const char *p, size_t n) {
        char *t = malloc(n + 1);

        cr_assert_not_null(t);
        memcpy(t, p, n);
        t[n] = 0;
        return t;
}

static char *format(EscRequest *q, size_t *len) {
        char *buf;

        cr_assert_eq(esc_request_format(q, key, &buf, len), 0);
        return buf;
}

Test(escalation, request_roundtrip) {
        EscRequest q = sample(), p = {};
        uint8_t pub[ESC_KEY_LEN], other[ESC_KEY_LEN], opriv[ESC_KEY_LEN];
        size_t len;
        char *buf = format(&q, &len), *error = NULL;

        cr_assert_eq(esc_request_parse(buf, len, &p, &error), 0, "%s", error);
        cr_assert_str_eq(p.id, q.id);
        cr_assert_str_eq(p.session, q.session);
        cr_assert_str_eq(p.sandbox, q.sandbox);
        cr_assert_eq(p.time_usec, q.time_usec);
        cr_assert_eq(p.timeout_s, 30);
        cr_assert_str_eq(p.cwd, q.cwd);
        cr_assert_str_eq(p.why, q.why);
        cr_assert_eq(p.argc, 3);
        cr_assert_str_eq(p.argv[1], "a b");
        cr_assert_str_eq(p.argv[2], "");
        cr_assert_null(p.argv[3]);
        cr_assert_eq(p.cred_len, sizeof(cred_ok));
        cr_assert_arr_eq(p.cred, cred_ok, sizeof(cred_ok));
        esc_key_public(key, pub);
        cr_assert(esc_request_verify(buf, &p, pub));
        cr_assert_eq(esc_key_generate(opriv, other), 0);
        cr_assert_not(esc_request_verify(buf, &p, other));
        esc_request_done(&p);

        /* One flipped bit anywhere in the signed part breaks the signature (tampering). */
        for (size_t i = 0; i < len; i += 7) {
                char *t = memdup_test(buf, len);
                t[i] ^= 0x01;
                if (esc_request_parse(t, len, &p, NULL) == 0) {
                        cr_assert_not(esc_request_verify(t, &p, pub), "byte %zu flipped still verifies", i);
                        esc_request_done(&p);
                }
                free(t);
        }
        free(buf);
}

static void refuse(const char *text, size_t len, const char *what) {
        EscRequest p = {};
        char *error = NULL;

        cr_assert_lt(esc_request_parse(text, len, &p, &error), 0, "%s accepted", what);
        cr_assert_not_null(error, "%s refused without a message", what);
        cr_assert_null(p.argv);
        free(error);
}

Test(escalation, request_refused) {
        EscRequest q = sample();
        size_t len;
        char *buf = format(&q, &len), *t;

        refuse(buf, len - 1, "truncated");
        refuse(buf, len / 2, "half");
        t = malloc(len + 2);
        memcpy(t, buf, len);
        memcpy(t + len, "x\n", 2);
        refuse(t, len + 2, "trailing bytes");
        free(t);
        refuse("", 0, "empty");
        refuse("garbage", 7, "garbage");

        /* A field out of order, repeated, unknown, a length with a leading zero, NUL inside. */
#define HEAD "lazaret-escalation-request 2\nid 32:0123456789abcdef0123456789abcdef\n"
        refuse(HEAD "id 32:0123456789abcdef0123456789abcdef\n", strlen(HEAD) + 39, "repeated id");
        refuse(HEAD "extra 1:x\n", strlen(HEAD) + 10, "unknown field");
        refuse(HEAD "session 032:fedcba9876543210fedcba9876543210\n", strlen(HEAD) + 45, "leading zero");
        refuse(HEAD "session 99999999999999999999999:x\n", strlen(HEAD) + 35, "huge length");

        q.argc = 0;
        cr_assert_lt(esc_request_format(&q, key, &t, &len), 0);
        q = sample();
        q.cwd = "relative";
        cr_assert_lt(esc_request_format(&q, key, &t, &len), 0);
        q = sample();
        strcpy(q.id, "0123456789ABCDEF0123456789ABCDEF");
        cr_assert_lt(esc_request_format(&q, key, &t, &len), 0);
        /* No credential, or one too large: refused on both sides. */
        q = sample();
        q.cred_len = 0;
        cr_assert_lt(esc_request_format(&q, key, &t, &len), 0);
        q.cred_len = ESC_CRED_MAX + 1;
        cr_assert_lt(esc_request_format(&q, key, &t, &len), 0);
        q = sample();
        t = memdup_test(buf, len);
        {
                /* The same record with an empty cred field (and so a wrong signature). */
                char *c = memmem(t, len, "cred 9:", 7), *rebuilt;
                size_t head;
                int n;
                cr_assert_not_null(c);
                head = (size_t) (c - t);
                n = asprintf(&rebuilt, "%.*scred 0:\n%s", (int) head, t, c + 7 + sizeof(cred_ok) + 1);
                cr_assert_gt(n, 0);
                refuse(rebuilt, (size_t) n, "empty credential");
                free(rebuilt);
        }
        free(t);
        free(buf);
}

Test(escalation, request_nul_refused) {
        EscRequest q = sample();
        size_t len;
        char *buf = format(&q, &len), *at = memmem(buf, len, "a b", 3);

        cr_assert_not_null(at);
        at[1] = 0;
        refuse(buf, len, "NUL in an argument");
        free(buf);
}

Test(escalation, result_roundtrip) {
        EscResult r = { .id = "0123456789abcdef0123456789abcdef", .outcome = ESC_COMPLETED, .status = 3,
                        .message = "", .out = "a\0b\n", .out_len = 4, .err = "e", .err_len = 1 }, p = {};
        char *buf, *error = NULL;
        size_t len;

        cr_assert_eq(esc_result_format(&r, &buf, &len), 0);
        cr_assert_eq(esc_result_parse(buf, len, &p, &error), 0, "%s", error);
        cr_assert_eq(p.outcome, ESC_COMPLETED);
        cr_assert_eq(p.status, 3);
        cr_assert_eq(p.out_len, 4);
        cr_assert_eq(memcmp(p.out, "a\0b\n", 4), 0);
        cr_assert_eq(p.err_len, 1);
        esc_result_done(&p);
        cr_assert_lt(esc_result_parse(buf, len - 1, &p, NULL), 0);
        free(buf);
        r.status = 256;
        cr_assert_lt(esc_result_format(&r, &buf, &len), 0);
        for (int o = 0; o < _ESC_OUTCOME_MAX; o++)
                cr_assert_eq(esc_outcome_from_string(esc_outcome_to_string(o)), o);
        cr_assert_lt(esc_outcome_from_string("approved"), 0);
}

Test(escalation, metachar_rule) {
        static const char *const bad[] = { ";", "a|b", "&", "$(x)", "`x`", ">f", "<f", "a\nb", "a\rb", "a\\b", "\x01", "\x7f" };
        size_t i;

        cr_assert_not(esc_argv_has_metachar((char *[]) { "/usr/bin/make", "test", "a b", "$HOME", "x=$y", NULL }, NULL));
        for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
                cr_assert(esc_argv_has_metachar((char *[]) { "/bin/echo", "ok", (char *) bad[k], NULL }, &i), "%zu", k);
                cr_assert_eq(i, 2);
        }
}

Test(escalation, display) {
        char *s = esc_argv_to_display((char *[]) { "/bin/echo", "a b", "it's", "x\x1b[2J", "\xe2\x80\xae" "abc", "\xff", "", NULL });

        cr_assert_str_eq(s, "/bin/echo 'a b' 'it\\'s' 'x\\u{001b}[2J' '\\u{202e}abc' '\\xff' ''");
        free(s);
        s = esc_string_to_display("zero\xe2\x80\x8bwidth\\");
        cr_assert_str_eq(s, "'zero\\u{200b}width\\\\'");
        free(s);
}

Test(escalation, words) {
        char **w;

        cr_assert_eq(esc_words_parse("  /bin/echo 'a b' \"c\\\"d\" e\\ f  g'h'i ", &w), 0);
        cr_assert_str_eq(w[0], "/bin/echo");
        cr_assert_str_eq(w[1], "a b");
        cr_assert_str_eq(w[2], "c\"d");
        cr_assert_str_eq(w[3], "e f");
        cr_assert_str_eq(w[4], "ghi");
        cr_assert_null(w[5]);
        for (size_t i = 0; w[i]; i++)
                free(w[i]);
        free(w);
        cr_assert_eq(esc_words_parse("'x", &w), -EINVAL);
        cr_assert_eq(esc_words_parse("   ", &w), -EINVAL);
        cr_assert_eq(esc_words_parse("a\\", &w), -EINVAL);
}
