/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The per-generation Trust Anchor: a credential verifies only against the
 * CA that issued it and only for the binding it was issued for; anything
 * else (another role, profile, Domain, generation or session, tampered
 * bytes, trailing bytes, the CA's own certificate) is refused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "escalation-proto.h"
#include "trust-anchor.h"

#define DOMAIN "0123456789ab"
#define GEN "lazaret-0123456789ab-1"
#define SESSION "fedcba9876543210fedcba9876543210"

static const TrustBinding session_binding = {
        .role = TRUST_ROLE_SESSION,
        .profile = "default",
        .domain = DOMAIN,
        .generation = GEN,
        .component = SESSION,
};

typedef struct Fixture {
        TrustAnchor *ta;
        uint8_t priv[ESC_KEY_LEN], pub[ESC_KEY_LEN];
        uint8_t *cred;
        size_t len;
} Fixture;

static Fixture setup(const TrustBinding *b) {
        Fixture f = {};
        char *error = NULL;

        cr_assert_eq(trust_anchor_new(DOMAIN, GEN, &f.ta, &error), 0, "%s", error ?: "");
        cr_assert_eq(esc_key_generate(f.priv, f.pub), 0);
        cr_assert_eq(trust_anchor_issue(f.ta, b, f.pub, 3600, &f.cred, &f.len, &error), 0, "%s", error ?: "");
        return f;
}

static void teardown(Fixture *f) {
        trust_anchor_free(f->ta);
        free(f->cred);
}

static int verify(TrustAnchor *ta, const uint8_t *cred, size_t len, const TrustBinding *b, uint8_t pub[ESC_KEY_LEN]) {
        char *error = NULL;
        int r = trust_anchor_verify(ta, cred, len, b, pub, &error);

        cr_assert((r == 0) == !error, "verdict %d but error \"%s\"", r, error ?: "");
        free(error);
        return r;
}

Test(trust, issued_credential_verifies_and_certifies_the_key) {
        Fixture f = setup(&session_binding);
        uint8_t pub[ESC_KEY_LEN] = {};

        cr_assert_eq(verify(f.ta, f.cred, f.len, &session_binding, pub), TRUST_OK);
        cr_assert_arr_eq(pub, f.pub, ESC_KEY_LEN);
        teardown(&f);
}

Test(trust, another_generation_is_not_issued) {
        Fixture f = setup(&session_binding);
        TrustAnchor *next = NULL;
        uint8_t pub[ESC_KEY_LEN];

        /* The next generation's CA, even for the same Domain and generation name, is another key. */
        cr_assert_eq(trust_anchor_new(DOMAIN, GEN, &next, NULL), 0);
        cr_assert_eq(verify(next, f.cred, f.len, &session_binding, pub), TRUST_NOT_ISSUED);
        trust_anchor_free(next);
        teardown(&f);
}

Test(trust, every_part_of_the_binding_counts) {
        Fixture f = setup(&session_binding);
        uint8_t pub[ESC_KEY_LEN];
        TrustBinding b;

        b = session_binding, b.role = TRUST_ROLE_COORDINATOR;
        cr_assert_eq(verify(f.ta, f.cred, f.len, &b, pub), TRUST_WRONG_BINDING);
        b = session_binding, b.profile = "other";
        cr_assert_eq(verify(f.ta, f.cred, f.len, &b, pub), TRUST_WRONG_BINDING);
        b = session_binding, b.domain = "ba9876543210";
        cr_assert_eq(verify(f.ta, f.cred, f.len, &b, pub), TRUST_WRONG_BINDING);
        b = session_binding, b.generation = GEN "x";
        cr_assert_eq(verify(f.ta, f.cred, f.len, &b, pub), TRUST_WRONG_BINDING);
        b = session_binding, b.component = "00000000000000000000000000000000";
        cr_assert_eq(verify(f.ta, f.cred, f.len, &b, pub), TRUST_WRONG_BINDING);
        teardown(&f);
}

Test(trust, the_encoding_is_injective) {
        TrustBinding a = session_binding, b = session_binding;
        char *ua, *ub;

        /* A separator moved between parts must not encode alike. */
        a.profile = "x:y", a.domain = "z";
        b.profile = "x", b.domain = "y:z";
        ua = trust_binding_uri(&a);
        ub = trust_binding_uri(&b);
        cr_assert_str_neq(ua, ub);
        cr_assert_str_eq(ua, "lazaret:session:x%3Ay:z:" GEN ":" SESSION);
        free(ua);
        free(ub);
}

Test(trust, a_coordinator_credential_is_not_a_session_credential) {
        TrustBinding coord = session_binding;
        Fixture f;
        uint8_t pub[ESC_KEY_LEN];

        coord.role = TRUST_ROLE_COORDINATOR;
        f = setup(&coord);
        cr_assert_eq(verify(f.ta, f.cred, f.len, &session_binding, pub), TRUST_WRONG_BINDING);
        cr_assert_eq(verify(f.ta, f.cred, f.len, &coord, pub), TRUST_OK);
        teardown(&f);
}

Test(trust, tampered_truncated_and_trailing_bytes_are_refused) {
        Fixture f = setup(&session_binding);
        uint8_t pub[ESC_KEY_LEN], *copy = malloc(f.len + 1);
        size_t refused = 0;

        cr_assert_not_null(copy);
        /* Every single flipped bit refuses the credential (malformed or not issued). */
        for (size_t i = 0; i < f.len; i++)
                for (int bit = 0; bit < 8; bit += 3) {
                        memcpy(copy, f.cred, f.len);
                        copy[i] ^= (uint8_t) (1u << bit);
                        cr_assert_neq(verify(f.ta, copy, f.len, &session_binding, pub), TRUST_OK,
                                      "byte %zu bit %d flipped still verifies", i, bit);
                        refused++;
                }
        cr_assert_gt(refused, 0);
        memcpy(copy, f.cred, f.len);
        copy[f.len] = 0;
        cr_assert_eq(verify(f.ta, copy, f.len + 1, &session_binding, pub), TRUST_MALFORMED);
        cr_assert_eq(verify(f.ta, copy, f.len - 1, &session_binding, pub), TRUST_MALFORMED);
        cr_assert_eq(verify(f.ta, copy, 0, &session_binding, pub), TRUST_MALFORMED);
        free(copy);
        teardown(&f);
}

Test(trust, a_credential_with_an_expired_lifetime_is_refused) {
        TrustAnchor *ta = NULL;
        uint8_t priv[ESC_KEY_LEN], pub[ESC_KEY_LEN], got[ESC_KEY_LEN], *cred = NULL;
        size_t len;

        cr_assert_eq(trust_anchor_new(DOMAIN, GEN, &ta, NULL), 0);
        cr_assert_eq(esc_key_generate(priv, pub), 0);
        /* Valid until the second it was issued in: expired once that second has passed. */
        cr_assert_eq(trust_anchor_issue(ta, &session_binding, pub, 0, &cred, &len, NULL), 0);
        sleep(2);
        cr_assert_eq(verify(ta, cred, len, &session_binding, got), TRUST_NOT_ISSUED);
        free(cred);
        trust_anchor_free(ta);
}

Test(trust, a_fixed_key_gives_the_same_ca) {
        const uint8_t key[ESC_KEY_LEN] = { 1, 2, 3 };
        TrustAnchor *a = NULL, *b = NULL;
        uint8_t priv[ESC_KEY_LEN], pub[ESC_KEY_LEN], got[ESC_KEY_LEN], *cred = NULL;
        size_t len;

        /* What the fuzz target relies on: a credential of one CA object verifies with another of the same key. */
        cr_assert_eq(trust_anchor_new_from_key(DOMAIN, GEN, key, &a, NULL), 0);
        cr_assert_eq(trust_anchor_new_from_key(DOMAIN, GEN, key, &b, NULL), 0);
        cr_assert_eq(esc_key_generate(priv, pub), 0);
        cr_assert_eq(trust_anchor_issue(a, &session_binding, pub, 3600, &cred, &len, NULL), 0);
        cr_assert_eq(verify(b, cred, len, &session_binding, got), TRUST_OK);
        free(cred);
        trust_anchor_free(a);
        trust_anchor_free(b);
}
