/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "egress-vectors.h"
#include "http-head.h"

static int parse(const char *s, HttpHead *h, char **why) {
        free(*why);
        *why = NULL;
        return http_head_parse((const uint8_t *) s, strlen(s), h, why);
}

/* The real requests (tests/fuzz/make-egress-corpus). */
Test(http_head, real_clients) {
        static const struct {
                const char *file, *method;
                unsigned port;
        } captures[] = {
                { "accept-curl", "GET", 8080 },
                { "accept-curl-proxy-form", "GET", 0 },
                { "accept-python-urllib", "GET", 8080 },
        };

        for (size_t i = 0; i < sizeof captures / sizeof captures[0]; i++) {
                _cleanup_free_ uint8_t *b = NULL;
                _cleanup_free_ char *why = NULL;
                HttpHead h;
                size_t n;
                int r;

                b = vector_load("http-head", captures[i].file, &n);
                r = http_head_parse(b, n, &h, &why);
                cr_assert_eq(r, 0, "%s: %s", captures[i].file, why);
                cr_assert_str_eq(h.host, "deb.example.org");
                cr_assert_str_eq(h.method, captures[i].method);
                cr_assert_eq(h.port, captures[i].port, "%s", captures[i].file);
                cr_assert_eq(h.minor, 1);
                cr_assert_eq(h.length, n);
                for (size_t k = 0; k < n; k++) {
                        uint8_t *copy = malloc(k ?: 1);
                        memcpy(copy, b, k);
                        cr_assert_eq(http_head_parse(copy, k, &h, NULL), -EAGAIN, "%s: prefix %zu", captures[i].file, k);
                        free(copy);
                }
        }
}

Test(http_head, forms) {
        _cleanup_free_ char *why = NULL;
        HttpHead h;

        cr_assert_eq(parse("GET / HTTP/1.1\r\nHost: Deb.Example.ORG.\r\n\r\nbody", &h, &why), 0, "%s", why);
        cr_assert_str_eq(h.host, "deb.example.org");
        cr_assert_eq(h.port, 0);
        cr_assert_eq(h.length, strlen("GET / HTTP/1.1\r\nHost: Deb.Example.ORG.\r\n\r\n"));
        cr_assert_eq(parse("POST /x?y HTTP/1.0\r\nhOsT:\tapi.example.com:8080 \t\r\nX-A: b\r\n\r\n", &h, &why), 0, "%s", why);
        cr_assert_str_eq(h.method, "POST");
        cr_assert_str_eq(h.host, "api.example.com");
        cr_assert_eq(h.port, 8080);
        cr_assert_eq(h.minor, 0);
        cr_assert_eq(parse("OPTIONS * HTTP/1.1\r\nHost: a.example\r\n\r\n", &h, &why), 0);
        /* HTTP/1.0 in absolute form needs no Host. */
        cr_assert_eq(parse("GET HTTP://a.example:81/p HTTP/1.0\r\n\r\n", &h, &why), 0, "%s", why);
        cr_assert_str_eq(h.host, "a.example");
        cr_assert_eq(h.port, 81);
        /* Absolute form and Host agree, ports 80 and none alike. */
        cr_assert_eq(parse("GET http://a.example/ HTTP/1.1\r\nHost: a.example:80\r\n\r\n", &h, &why), 0, "%s", why);
        cr_assert_eq(parse("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", &h, &why), 0, "%s", why);
        cr_assert_str_eq(h.method, "CONNECT");
        cr_assert_eq(h.port, 443);
        /* Field values may carry obs-text. */
        cr_assert_eq(parse("GET / HTTP/1.1\r\nX: caf\xc3\xa9\r\nHost: a.example\r\n\r\n", &h, &why), 0, "%s", why);
}

static void check_refused(const char *s, int want, const char *why_part) {
        _cleanup_free_ char *why = NULL;
        HttpHead h = { .port = 4242 };

        cr_assert_eq(parse(s, &h, &why), want, "\"%s\"", s);
        cr_assert(why && strstr(why, why_part), "\"%s\": \"%s\" does not say \"%s\"", s, why, why_part);
        cr_assert_eq(h.port, 4242, "written on failure");
}

Test(http_head, refusals) {
        check_refused("\x16\x03\x01\x02\x00\x01", -ENOMSG, "not an HTTP/1.x request");
        check_refused("SSH-2.0-OpenSSH_9.2\r\n", -ENOMSG, "not an HTTP/1.x request");
        check_refused(" GET / HTTP/1.1\r\n", -ENOMSG, "not an HTTP/1.x request");
        check_refused("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", -ENOMSG, "request line");
        check_refused("GET / HTTP/1.1 \r\nHost: a.example\r\n\r\n", -ENOMSG, "request line");
        check_refused("GET  / HTTP/1.1\r\nHost: a.example\r\n\r\n", -ENOMSG, "request line");
        check_refused("GET / HTTP/1.x\r\nHost: a.example\r\n\r\n", -ENOMSG, "request line");
        check_refused("AVERYLONGMETHODNAME / HTTP/1.1\r\n", -ENOMSG, "method of more than");
        check_refused("GET / HTTP/1.1\nHost: a.example\n\n", -EBADMSG, "LF without CR");
        check_refused("GET / HTTP/1.1\r\nHost: a.example\rX: y\r\n\r\n", -EBADMSG, "CR not followed by LF");
        check_refused("GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n", -EBADMSG, "more than one Host");
        check_refused("GET / HTTP/1.1\r\nHost: a.example\r\nhost: a.example\r\n\r\n", -EBADMSG, "more than one Host");
        check_refused("GET / HTTP/1.1\r\nX: a\r\n b\r\nHost: a.example\r\n\r\n", -EBADMSG, "folded");
        check_refused("GET / HTTP/1.1\r\nHost : a.example\r\n\r\n", -EBADMSG, "NAME: VALUE");
        check_refused("GET / HTTP/1.1\r\nX-A: b\r\n\r\n", -EBADMSG, "no Host");
        check_refused("GET / HTTP/1.1\r\nHost:\r\n\r\n", -EBADMSG, "not a host name");
        check_refused("GET / HTTP/1.1\r\nHost: a.example, b.example\r\n\r\n", -EBADMSG, "not a host name");
        check_refused("GET / HTTP/1.1\r\nHost: user@a.example\r\n\r\n", -EBADMSG, "not a host name");
        check_refused("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", -EBADMSG, "not a host name");
        check_refused("GET / HTTP/1.1\r\nHost: a.example:0\r\n\r\n", -EBADMSG, "no valid port");
        check_refused("GET / HTTP/1.1\r\nHost: a.example:\r\n\r\n", -EBADMSG, "no valid port");
        check_refused("GET / HTTP/1.1\r\nX: a\x01" "b\r\nHost: a.example\r\n\r\n", -EBADMSG, "holds byte 0x01");
        check_refused("GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n", -EBADMSG,
                      "the request target names a.example, Host names b.example");
        check_refused("GET http://a.example:8080/ HTTP/1.1\r\nHost: a.example\r\n\r\n", -EBADMSG, "request target names");
        check_refused("GET http://u@a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", -EBADMSG, "authority");
        check_refused("GET https://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", -EBADMSG, "neither a path");
        check_refused("GET a.example HTTP/1.1\r\nHost: a.example\r\n\r\n", -EBADMSG, "neither a path");
}

Test(http_head, bounded) {
        _cleanup_free_ char *why = NULL;
        size_t n = HTTP_HEAD_MAX + 100;
        char *big = malloc(n + 1);
        HttpHead h;

        /* A head that never ends: more is asked for until the limit, then refused. */
        strcpy(big, "GET / HTTP/1.1\r\nX: ");
        memset(big + strlen(big), 'a', n - strlen(big));
        big[n] = 0;
        cr_assert_eq(http_head_parse((const uint8_t *) big, HTTP_HEAD_MAX - 1, &h, NULL), -EAGAIN);
        cr_assert_eq(http_head_parse((const uint8_t *) big, HTTP_HEAD_MAX, &h, &why), -E2BIG);
        cr_assert_eq(http_head_parse((const uint8_t *) big, n, &h, NULL), -E2BIG);
        free(big);
}
