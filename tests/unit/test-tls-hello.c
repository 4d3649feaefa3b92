/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "egress-vectors.h"
#include "tls-hello.h"

/* The real ClientHellos (tests/fuzz/make-egress-corpus) and the name each asked for. */
static const struct {
        const char *file, *sni;
} captures[] = {
        { "accept-openssl-sni", "registry.example.org" },
        { "accept-openssl-nosni", NULL },
        { "accept-openssl-tls12", "git.example.org" },
        { "accept-gnutls-sni", "mirror.example.net" },
        { "accept-curl-sni", "api.example.com" },
        { "accept-python-sni", "pypi.example.org" },
};

Test(tls_hello, real_clients) {
        for (size_t i = 0; i < sizeof captures / sizeof captures[0]; i++) {
                _cleanup_free_ uint8_t *b = NULL;
                _cleanup_free_ char *why = NULL;
                TlsHello h;
                size_t n;
                int r;

                b = vector_load("tls-hello", captures[i].file, &n);
                r = tls_hello_parse(b, n, &h, &why);
                cr_assert_eq(r, captures[i].sni ? TLS_HELLO_SNI : TLS_HELLO_NO_SNI, "%s: %d %s", captures[i].file, r,
                             why);
                cr_assert_eq(h.has_sni, !!captures[i].sni);
                cr_assert_str_eq(h.server_name, captures[i].sni ?: "");
                cr_assert_not(h.has_ech, "%s", captures[i].file);
                cr_assert_eq(h.consumed, n, "%s", captures[i].file);
                cr_assert_eq(h.legacy_version, 0x0303);

                /* Every prefix asks for more, and reads no further than it is given. */
                for (size_t k = 0; k < n; k++) {
                        uint8_t *copy = malloc(k ?: 1);
                        memcpy(copy, b, k);
                        r = tls_hello_parse(copy, k, &h, NULL);
                        cr_assert_eq(r, -EAGAIN, "%s: prefix of %zu bytes: %d", captures[i].file, k, r);
                        free(copy);
                }
        }
}

/*
 * A hello rebuilt from a capture: its extension block with `extra` appended
 * (the record, handshake and extension lengths fixed up), split into
 * records of at most `split` bytes of handshake each.
 */
typedef struct Hello {
        uint8_t b[20000];
        size_t n;
} Hello;

static void rebuild(Hello *out, const char *file, const void *extra, size_t n_extra, size_t split) {
        _cleanup_free_ uint8_t *c = NULL;
        uint8_t hs[18000];
        size_t n, hn, p, ext_at, o = 0;

        c = vector_load("tls-hello", file, &n);
        /* One record in the captures: header, then the handshake message. */
        cr_assert_eq(5 + (c[3] << 8 | c[4]), n);
        hn = n - 5;
        memcpy(hs, c + 5, hn);
        p = 4 + 2 + 32;
        p += 1 + hs[p];
        p += 2 + (hs[p] << 8 | hs[p + 1]);
        p += 1 + hs[p];
        ext_at = p;
        cr_assert_leq(hn + n_extra, sizeof hs);
        memcpy(hs + hn, extra, n_extra);
        hn += n_extra;
        {
                size_t el = (hs[ext_at] << 8 | hs[ext_at + 1]) + n_extra, ml = hn - 4;
                hs[ext_at] = (uint8_t) (el >> 8);
                hs[ext_at + 1] = (uint8_t) el;
                hs[1] = (uint8_t) (ml >> 16);
                hs[2] = (uint8_t) (ml >> 8);
                hs[3] = (uint8_t) ml;
        }
        for (size_t at = 0; at < hn; at += split) {
                size_t l = hn - at < split ? hn - at : split;
                out->b[o++] = 22;
                out->b[o++] = 3;
                out->b[o++] = 1;
                out->b[o++] = (uint8_t) (l >> 8);
                out->b[o++] = (uint8_t) l;
                memcpy(out->b + o, hs + at, l);
                o += l;
        }
        out->n = o;
}

static int parse(const Hello *h, TlsHello *ret, char **why) {
        free(*why);
        *why = NULL;
        return tls_hello_parse(h->b, h->n, ret, why);
}

Test(tls_hello, ech_is_reported) {
        static const uint8_t ech[] = { 0xfe, 0x0d, 0x00, 0x08, 0, 0, 1, 0, 1, 0x42, 0, 0 };
        _cleanup_free_ char *why = NULL;
        TlsHello t;
        Hello h;

        rebuild(&h, "accept-openssl-sni", ech, sizeof ech, 16384);
        cr_assert_eq(parse(&h, &t, &why), TLS_HELLO_SNI, "%s", why);
        cr_assert(t.has_ech);
        cr_assert_str_eq(t.server_name, "registry.example.org", "the outer name is the one read");
        rebuild(&h, "accept-openssl-nosni", ech, sizeof ech, 16384);
        cr_assert_eq(parse(&h, &t, &why), TLS_HELLO_NO_SNI);
        cr_assert(t.has_ech);
}

Test(tls_hello, split_over_records) {
        _cleanup_free_ char *why = NULL;
        TlsHello t;
        Hello h;

        for (size_t split = 1; split <= 300; split += 37) {
                rebuild(&h, "accept-gnutls-sni", NULL, 0, split);
                cr_assert_eq(parse(&h, &t, &why), TLS_HELLO_SNI, "split %zu: %s", split, why);
                cr_assert_str_eq(t.server_name, "mirror.example.net");
                cr_assert_eq(t.consumed, h.n);
                for (size_t k = 0; k < h.n; k += 7)
                        cr_assert_eq(tls_hello_parse(h.b, k, &t, NULL), -EAGAIN, "split %zu, prefix %zu", split, k);
        }
}

static void sni_ext(uint8_t *e, size_t *n, const char *name, size_t len) {
        e[0] = 0;
        e[1] = 0;
        e[2] = (uint8_t) ((len + 5) >> 8);
        e[3] = (uint8_t) (len + 5);
        e[4] = (uint8_t) ((len + 3) >> 8);
        e[5] = (uint8_t) (len + 3);
        e[6] = 0;
        e[7] = (uint8_t) (len >> 8);
        e[8] = (uint8_t) len;
        memcpy(e + 9, name, len);
        *n = 9 + len;
}

Test(tls_hello, server_name_forms) {
        _cleanup_free_ char *why = NULL;
        uint8_t e[600];
        TlsHello t;
        Hello h;
        size_t n;

        sni_ext(e, &n, "Mixed.Example.COM", 17);
        rebuild(&h, "accept-openssl-nosni", e, n, 16384);
        cr_assert_eq(parse(&h, &t, &why), TLS_HELLO_SNI, "%s", why);
        cr_assert_str_eq(t.server_name, "mixed.example.com");

        /* A second server_name: two readers could take two names. */
        rebuild(&h, "accept-openssl-sni", e, n, 16384);
        cr_assert_eq(parse(&h, &t, &why), -EBADMSG);
        cr_assert(strstr(why, "appears twice"), "%s", why);

        static const char *const bad[] = { "trailing.dot.", "under_score.example", "sp ace.example", "", "a..b" };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                sni_ext(e, &n, bad[i], strlen(bad[i]));
                rebuild(&h, "accept-openssl-nosni", e, n, 16384);
                cr_assert_eq(parse(&h, &t, &why), -EBADMSG, "\"%s\" was read", bad[i]);
        }
        /* A NUL inside the name. */
        sni_ext(e, &n, "evil.example\0good.example", 25);
        rebuild(&h, "accept-openssl-nosni", e, n, 16384);
        cr_assert_eq(parse(&h, &t, &why), -EBADMSG);
        cr_assert(strstr(why, "\\x00"), "%s", why);

        /* Two names in one list. */
        static const uint8_t two[] = { 0, 0, 0, 14, 0, 12, 0, 0, 3, 'a', '.', 'b', 0, 0, 3, 'c', '.', 'd' };
        rebuild(&h, "accept-openssl-nosni", two, sizeof two, 16384);
        cr_assert_eq(parse(&h, &t, &why), -EBADMSG);
        /* A name of another type. */
        static const uint8_t other[] = { 0, 0, 0, 8, 0, 6, 1, 0, 3, 'a', '.', 'b' };
        rebuild(&h, "accept-openssl-nosni", other, sizeof other, 16384);
        cr_assert_eq(parse(&h, &t, &why), -EBADMSG);
        /* An empty list. */
        static const uint8_t empty[] = { 0, 0, 0, 2, 0, 0 };
        rebuild(&h, "accept-openssl-nosni", empty, sizeof empty, 16384);
        cr_assert_eq(parse(&h, &t, &why), -EBADMSG);
        /* An extension longer than what is left. */
        static const uint8_t longer[] = { 0x12, 0x34, 0x00, 0x10, 0 };
        rebuild(&h, "accept-openssl-nosni", longer, sizeof longer, 16384);
        cr_assert_eq(parse(&h, &t, &why), -EBADMSG);
}

Test(tls_hello, not_tls) {
        _cleanup_free_ char *why = NULL;
        TlsHello t;

        cr_assert_eq(tls_hello_parse((const uint8_t *) "GET / HTTP/1.1\r\n", 16, &t, &why), -ENOMSG);
        cr_assert(strstr(why, "not TLS"), "%s", why);
        cr_assert_eq(tls_hello_parse((const uint8_t *) "SSH-2.0-OpenSSH_9.2\r\n", 21, &t, NULL), -ENOMSG);
        cr_assert_eq(tls_hello_parse((const uint8_t *) "\x16\x02", 2, &t, NULL), -ENOMSG);
        cr_assert_eq(tls_hello_parse((const uint8_t *) "\x16\x03\x09\0\1", 5, &t, NULL), -ENOMSG);
        /* SSLv2's hello. */
        cr_assert_eq(tls_hello_parse((const uint8_t *) "\x80\x2e\x01\x03\x01", 5, &t, NULL), -ENOMSG);
        cr_assert_eq(tls_hello_parse((const uint8_t *) "\x16", 1, &t, NULL), -EAGAIN);
        cr_assert_eq(tls_hello_parse((const uint8_t *) "", 0, &t, NULL), -EAGAIN);
}

Test(tls_hello, malformed) {
        _cleanup_free_ uint8_t *c = NULL;
        uint8_t b[64];
        TlsHello t;
        size_t n;

        /* A ServerHello. */
        memcpy(b, "\x16\x03\x03\x00\x04\x02\x00\x00\x00", 9);
        cr_assert_eq(tls_hello_parse(b, 9, &t, NULL), -EBADMSG);
        /* A record of zero bytes, and one beyond 2^14. */
        cr_assert_eq(tls_hello_parse((const uint8_t *) "\x16\x03\x01\x00\x00", 5, &t, NULL), -EBADMSG);
        cr_assert_eq(tls_hello_parse((const uint8_t *) "\x16\x03\x01\x40\x01", 5, &t, NULL), -EBADMSG);
        /* A ClientHello announcing more than is read. */
        cr_assert_eq(tls_hello_parse((const uint8_t *) "\x16\x03\x01\x00\x04\x01\x00\x40\x00", 9, &t, NULL), -E2BIG);
        /* An alert record after the first part of a hello. */
        memcpy(b, "\x16\x03\x01\x00\x04\x01\x00\x00\x30" "\x15\x03\x03\x00\x02\x02\x28", 16);
        cr_assert_eq(tls_hello_parse(b, 16, &t, NULL), -EBADMSG);

        /* A byte more in the record than in the handshake message. */
        c = vector_load("tls-hello", "accept-openssl-sni", &n);
        c = realloc(c, n + 1);
        c[n] = 0;
        c[4]++;
        if (c[4] == 0)
                c[3]++;
        cr_assert_eq(tls_hello_parse(c, n + 1, &t, NULL), -EBADMSG);
        /* A cipher-suite list of odd length. */
        {
                _cleanup_free_ uint8_t *d = vector_load("tls-hello", "accept-openssl-tls12", &n);
                size_t p = 5 + 4 + 2 + 32;
                p += 1 + d[p];
                d[p + 1] ^= 1;
                cr_assert_eq(tls_hello_parse(d, n, &t, NULL), -EBADMSG);
        }
}

/* The probe's ClientHello (tls_hello_build()) is read back by the helper's own reader, whole and in pieces. */
Test(tls_hello, built_hello_reads_back) {
        uint8_t buf[512];
        size_t len;
        TlsHello h;

        cr_assert_eq(tls_hello_build("allowed.canary.lazaret.invalid", buf, sizeof(buf), &len), 0);
        cr_assert_eq(tls_hello_parse(buf, len, &h, NULL), TLS_HELLO_SNI);
        cr_assert_str_eq(h.server_name, "allowed.canary.lazaret.invalid");
        cr_assert_eq(h.consumed, len);
        cr_assert_not(h.has_ech);
        for (size_t cut = 0; cut < len; cut++)
                cr_assert_eq(tls_hello_parse(buf, cut, &h, NULL), -EAGAIN, "cut at %zu", cut);
        cr_assert_eq(tls_hello_build("allowed.canary.lazaret.invalid", buf, len - 1, &len), -ENOBUFS);
        cr_assert_eq(tls_hello_build("", buf, sizeof(buf), &len), -EINVAL);
}
