/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The per-generation Trust Anchor (trust-anchor.h): an in-memory Ed25519
 * CA issuing and verifying role-bound credentials, with gnutls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <nettle/eddsa.h>

#include "trust-anchor.h"
#include "util.h"

#define CA_LIFETIME_S (366ULL * 24 * 3600)
#define CLOCK_SLACK_S 300               /* a credential is valid from a little before it was issued */

struct TrustAnchor {
        char *domain, *generation;
        gnutls_privkey_t key;
        gnutls_x509_crt_t crt;
        uint64_t serial;
};

static void crtp(gnutls_x509_crt_t *p) {
        if (*p)
                gnutls_x509_crt_deinit(*p);
}
static void pubkeyp(gnutls_pubkey_t *p) {
        if (*p)
                gnutls_pubkey_deinit(*p);
}
static void datump(gnutls_datum_t *d) {
        gnutls_free(d->data);
        d->data = NULL;
}

static int gnutls_to_errno(int g) {
        return g == GNUTLS_E_MEMORY_ERROR ? -ENOMEM : -EIO;
}

/* Appends s, percent-encoded outside [A-Za-z0-9._-] unless raw. */
static int put(char **buf, size_t *len, size_t *cap, const char *s, bool raw) {
        static const char digits[] = "0123456789ABCDEF";

        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                bool plain = raw || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                             *p == '.' || *p == '_' || *p == '-';
                if (*len + 4 > *cap) {
                        size_t c = (*cap + 4) * 2;
                        char *b = realloc(*buf, c);
                        if (!b)
                                return -ENOMEM;
                        *buf = b;
                        *cap = c;
                }
                if (plain)
                        (*buf)[(*len)++] = (char) *p;
                else {
                        (*buf)[(*len)++] = '%';
                        (*buf)[(*len)++] = digits[*p >> 4];
                        (*buf)[(*len)++] = digits[*p & 15];
                }
                (*buf)[*len] = 0;
        }
        return 0;
}

/* An injective encoding: no part can hold a plain ':', so no two bindings encode alike. */
char *trust_binding_uri(const TrustBinding *b) {
        const char *parts[] = { b->role, b->profile, b->domain, b->generation, b->component };
        size_t cap = 128, len = 0;
        char *buf = calloc(1, cap);

        if (!buf || put(&buf, &len, &cap, "lazaret", true) < 0)
                return mfree(buf);
        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                if (!parts[i] || put(&buf, &len, &cap, ":", true) < 0 || put(&buf, &len, &cap, parts[i], false) < 0)
                        return mfree(buf);
        return buf;
}

/* The subject key ID from the key; the issuer's is what a credential's authority key ID names. */
static int set_key_id(gnutls_x509_crt_t crt, gnutls_pubkey_t key) {
        unsigned char id[64];
        size_t n = sizeof(id);
        int g = gnutls_pubkey_get_key_id(key, GNUTLS_KEYID_USE_SHA1, id, &n);

        return g < 0 ? g : gnutls_x509_crt_set_subject_key_id(crt, id, n);
}

static int set_serial(gnutls_x509_crt_t crt, uint64_t n) {
        uint8_t s[9] = { 0x01 };        /* positive, never zero */

        for (int i = 0; i < 8; i++)
                s[1 + i] = (uint8_t) (n >> (56 - 8 * i));
        return gnutls_x509_crt_set_serial(crt, s, sizeof(s));
}

static int set_times(gnutls_x509_crt_t crt, uint64_t lifetime_s) {
        time_t now = time(NULL);
        int g = gnutls_x509_crt_set_activation_time(crt, now - CLOCK_SLACK_S);

        return g < 0 ? g : gnutls_x509_crt_set_expiration_time(crt, now + (time_t) lifetime_s);
}

/* gnutls compares a signer's raw DER names, which only an import sets: a certificate just signed is read back. */
static int reimport(gnutls_x509_crt_t *crt) {
        _cleanup_(datump) gnutls_datum_t der = {};
        gnutls_x509_crt_t fresh = NULL;
        int g = gnutls_x509_crt_export2(*crt, GNUTLS_X509_FMT_DER, &der);

        if (g >= 0)
                g = gnutls_x509_crt_init(&fresh);
        if (g >= 0)
                g = gnutls_x509_crt_import(fresh, &der, GNUTLS_X509_FMT_DER);
        if (g < 0) {
                if (fresh)
                        gnutls_x509_crt_deinit(fresh);
                return g;
        }
        gnutls_x509_crt_deinit(*crt);
        *crt = fresh;
        return 0;
}

int trust_anchor_new_from_key(const char *domain, const char *generation, const uint8_t key[TRUST_KEY_LEN],
                              TrustAnchor **ret, char **ret_error) {
        _cleanup_(trust_anchor_freep) TrustAnchor *ta = calloc(1, sizeof(TrustAnchor));
        _cleanup_(pubkeyp) gnutls_pubkey_t pub = NULL;
        _cleanup_free_ char *cn = NULL;
        uint8_t pubraw[TRUST_KEY_LEN];
        gnutls_datum_t x = { pubraw, sizeof(pubraw) }, k = { (unsigned char *) key, TRUST_KEY_LEN };
        int g;

        if (!ta)
                return -ENOMEM;
        ta->domain = strdup(domain);
        ta->generation = strdup(generation);
        if (!ta->domain || !ta->generation || asprintf(&cn, "Lazaret Trust Anchor %s %s", domain, generation) < 0)
                return -ENOMEM;
        ed25519_sha512_public_key(pubraw, key);
        g = gnutls_privkey_init(&ta->key);
        if (g >= 0)
                g = gnutls_privkey_import_ecc_raw(ta->key, GNUTLS_ECC_CURVE_ED25519, &x, NULL, &k);
        if (g >= 0)
                g = gnutls_pubkey_init(&pub);
        if (g >= 0)
                g = gnutls_pubkey_import_privkey(pub, ta->key, 0, 0);
        if (g >= 0)
                g = gnutls_x509_crt_init(&ta->crt);
        if (g >= 0)
                g = gnutls_x509_crt_set_version(ta->crt, 3);
        if (g >= 0)
                g = set_serial(ta->crt, ta->serial++);
        if (g >= 0)
                g = set_times(ta->crt, CA_LIFETIME_S);
        if (g >= 0)
                g = gnutls_x509_crt_set_dn_by_oid(ta->crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn));
        if (g >= 0)
                g = gnutls_x509_crt_set_pubkey(ta->crt, pub);
        if (g >= 0)
                g = set_key_id(ta->crt, pub);
        if (g >= 0)
                g = gnutls_x509_crt_set_basic_constraints(ta->crt, 1, 0);
        if (g >= 0)
                g = gnutls_x509_crt_set_key_usage(ta->crt, GNUTLS_KEY_KEY_CERT_SIGN);
        if (g >= 0)
                g = gnutls_x509_crt_privkey_sign(ta->crt, ta->crt, ta->key, GNUTLS_DIG_UNKNOWN, 0);
        if (g >= 0)
                g = reimport(&ta->crt);
        if (g < 0)
                return errorf(ret_error, gnutls_to_errno(g), "cannot create the Trust Anchor: %s", gnutls_strerror(g));
        *ret = TAKE_PTR(ta);
        return 0;
}

int trust_anchor_new(const char *domain, const char *generation, TrustAnchor **ret, char **ret_error) {
        uint8_t key[TRUST_KEY_LEN];
        size_t n = 0;
        int r;

        while (n < sizeof(key)) {
                ssize_t k = getrandom(key + n, sizeof(key) - n, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errorf(ret_error, -errno, "no random bytes for the Trust Anchor: %m");
                n += (size_t) k;
        }
        r = trust_anchor_new_from_key(domain, generation, key, ret, ret_error);
        explicit_bzero(key, sizeof(key));
        return r;
}

TrustAnchor *trust_anchor_free(TrustAnchor *ta) {
        if (!ta)
                return NULL;
        if (ta->crt)
                gnutls_x509_crt_deinit(ta->crt);
        if (ta->key)
                gnutls_privkey_deinit(ta->key);
        free(ta->domain);
        free(ta->generation);
        free(ta);
        return NULL;
}

int trust_anchor_issue(TrustAnchor *ta, const TrustBinding *b, const uint8_t pub[TRUST_KEY_LEN], uint64_t lifetime_s,
                       uint8_t **ret, size_t *ret_len, char **ret_error) {
        _cleanup_(crtp) gnutls_x509_crt_t crt = NULL;
        _cleanup_(pubkeyp) gnutls_pubkey_t key = NULL;
        _cleanup_(datump) gnutls_datum_t der = {};
        _cleanup_free_ char *uri = trust_binding_uri(b);
        gnutls_datum_t x = { (unsigned char *) pub, TRUST_KEY_LEN };
        uint8_t *copy;
        int g;

        if (!uri)
                return -ENOMEM;
        g = gnutls_pubkey_init(&key);
        if (g >= 0)
                g = gnutls_pubkey_import_ecc_raw(key, GNUTLS_ECC_CURVE_ED25519, &x, NULL);
        if (g >= 0)
                g = gnutls_x509_crt_init(&crt);
        if (g >= 0)
                g = gnutls_x509_crt_set_version(crt, 3);
        if (g >= 0)
                g = set_serial(crt, ta->serial++);
        if (g >= 0)
                g = set_times(crt, lifetime_s);
        if (g >= 0)
                g = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, b->component, strlen(b->component));
        if (g >= 0)
                g = gnutls_x509_crt_set_pubkey(crt, key);
        if (g >= 0)
                g = set_key_id(crt, key);
        if (g >= 0) {
                unsigned char id[64];
                size_t n = sizeof(id);
                g = gnutls_x509_crt_get_subject_key_id(ta->crt, id, &n, NULL);
                if (g >= 0)
                        g = gnutls_x509_crt_set_authority_key_id(crt, id, n);
        }
        if (g >= 0)
                g = gnutls_x509_crt_set_basic_constraints(crt, 0, -1);
        if (g >= 0)
                g = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
        if (g >= 0)
                g = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_URI, uri, strlen(uri), GNUTLS_FSAN_SET);
        if (g >= 0)
                g = gnutls_x509_crt_privkey_sign(crt, ta->crt, ta->key, GNUTLS_DIG_UNKNOWN, 0);
        if (g >= 0)
                g = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, &der);
        if (g < 0)
                return errorf(ret_error, gnutls_to_errno(g), "cannot issue a %s credential: %s", b->role, gnutls_strerror(g));
        copy = malloc(der.size);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, der.data, der.size);
        *ret = copy;
        *ret_len = der.size;
        return 0;
}

static int refuse(char **ret_error, TrustRefusal why, const char *what) {
        (void) errorf(ret_error, -EPERM, "%s", what);
        return (int) why;
}

int trust_anchor_verify(TrustAnchor *ta, const uint8_t *cred, size_t len, const TrustBinding *expect,
                        uint8_t ret_pub[TRUST_KEY_LEN], char **ret_error) {
        _cleanup_(crtp) gnutls_x509_crt_t crt = NULL;
        _cleanup_(datump) gnutls_datum_t again = {}, x = {};
        _cleanup_free_ char *want = trust_binding_uri(expect);
        gnutls_datum_t in = { (unsigned char *) cred, (unsigned) len };
        gnutls_ecc_curve_t curve;
        unsigned status = 0, critical = 0, ca = 0;
        char san[512];
        size_t san_len = sizeof(san) - 1;
        int g, type, pathlen;

        if (!want)
                return -ENOMEM;
        if (len == 0 || len > TRUST_CREDENTIAL_MAX)
                return refuse(ret_error, TRUST_MALFORMED, "the credential is empty or too large");
        g = gnutls_x509_crt_init(&crt);
        if (g < 0)
                return -ENOMEM;
        /* One reader (gnutls); its canonical DER must be exactly the bytes given: nothing unread, nothing reinterpreted. */
        if (gnutls_x509_crt_import(crt, &in, GNUTLS_X509_FMT_DER) < 0 ||
            gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, &again) < 0 || again.size != len ||
            memcmp(again.data, cred, len) != 0)
                return refuse(ret_error, TRUST_MALFORMED, "the credential is not one DER certificate");
        g = gnutls_x509_crt_verify(crt, &ta->crt, 1, 0, &status);
        if (g < 0 || status != 0)
                return refuse(ret_error, TRUST_NOT_ISSUED,
                              "the credential was not issued by this generation's Trust Anchor (or is not valid now)");
        if (gnutls_x509_crt_get_basic_constraints(crt, &critical, &ca, &pathlen) < 0 || ca)
                return refuse(ret_error, TRUST_WRONG_KIND, "the credential is not an end-entity certificate");
        if (gnutls_x509_crt_get_pk_algorithm(crt, NULL) != GNUTLS_PK_EDDSA_ED25519 ||
            gnutls_x509_crt_get_pk_ecc_raw(crt, &curve, &x, NULL) < 0 || curve != GNUTLS_ECC_CURVE_ED25519 ||
            x.size != TRUST_KEY_LEN)
                return refuse(ret_error, TRUST_WRONG_KIND, "the credential does not certify an Ed25519 key");
        type = gnutls_x509_crt_get_subject_alt_name(crt, 0, san, &san_len, &critical);
        if (type != GNUTLS_SAN_URI)
                return refuse(ret_error, TRUST_WRONG_KIND, "the credential carries no binding");
        {
                char other[8];
                size_t other_len = sizeof(other);
                if (gnutls_x509_crt_get_subject_alt_name(crt, 1, other, &other_len, &critical) !=
                    GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
                        return refuse(ret_error, TRUST_WRONG_KIND, "the credential carries more than one binding");
        }
        if (san_len != strlen(want) || memcmp(san, want, san_len) != 0)
                return refuse(ret_error, TRUST_WRONG_BINDING,
                              "the credential is for another role, profile, Domain, generation or session");
        memcpy(ret_pub, x.data, TRUST_KEY_LEN);
        return TRUST_OK;
}
