/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"

/*
 * The Trust Anchor of one generation (spec section 5.5, SR-9): an
 * ephemeral certificate authority (gnutls, Ed25519) that lives only in the
 * coordinator's memory for as long as the generation's sandbox does, and
 * issues role-bound credentials: X.509 certificates binding one Ed25519
 * public key to a role, a profile, a Domain ID, a generation and a
 * component (the session ID for a session).
 *
 * The binding is one subjectAltName URI that this file writes and that
 * verification compares byte for byte with the URI built from what the
 * coordinator expects; nothing of it is parsed:
 *
 *     lazaret:ROLE:PROFILE:DOMAIN:GENERATION:COMPONENT
 *
 * each part percent-encoded outside [A-Za-z0-9._-], so that no two
 * bindings encode alike.
 *
 * The credential crosses the sandbox as opaque bytes: the static
 * Escalation Client attaches it to its request and never reads it. Only
 * trust_anchor_verify() reads it, as hostile input. Host only: the static
 * client does not link this file.
 */

#define TRUST_ROLE_COORDINATOR "coordinator"
#define TRUST_ROLE_SESSION "session"

#define TRUST_CREDENTIAL_MAX 4096       /* bytes of a DER certificate the host reads */
#define TRUST_KEY_LEN 32                /* Ed25519 */

typedef struct TrustBinding {
        const char *role;
        const char *profile;
        const char *domain;
        const char *generation;         /* the generation's sandbox ID */
        const char *component;          /* session ID, coordinator ID */
} TrustBinding;

typedef struct TrustAnchor TrustAnchor;

/* A fresh CA for (domain, generation), its key from getrandom(). */
int trust_anchor_new(const char *domain, const char *generation, TrustAnchor **ret, char **ret_error);
/* The same from a given private key (the fuzz target's fixed CA). */
int trust_anchor_new_from_key(const char *domain, const char *generation, const uint8_t key[TRUST_KEY_LEN],
                              TrustAnchor **ret, char **ret_error);
TrustAnchor *trust_anchor_free(TrustAnchor *ta);
DEFINE_TRIVIAL_CLEANUP_FUNC(TrustAnchor *, trust_anchor_free);

/* A credential (DER, malloc()ed) binding b to the Ed25519 public key pub, valid for lifetime_s seconds. */
int trust_anchor_issue(TrustAnchor *ta, const TrustBinding *b, const uint8_t pub[TRUST_KEY_LEN], uint64_t lifetime_s,
                       uint8_t **ret, size_t *ret_len, char **ret_error);

typedef enum TrustRefusal {
        TRUST_OK,
        TRUST_MALFORMED,                /* not one canonical DER certificate within the limit */
        TRUST_NOT_ISSUED,               /* not signed by this generation's CA, or not valid now */
        TRUST_WRONG_KIND,               /* a CA certificate, no Ed25519 key, no or several bindings */
        TRUST_WRONG_BINDING,            /* another role, profile, Domain, generation or component */
} TrustRefusal;

/*
 * Whether cred (untrusted bytes) is a credential of this CA for exactly
 * the binding expect; on success the certified public key is in ret_pub.
 * Returns 0 (TRUST_OK) or the refusal, with *ret_error saying why; -ENOMEM.
 */
int trust_anchor_verify(TrustAnchor *ta, const uint8_t *cred, size_t len, const TrustBinding *expect,
                        uint8_t ret_pub[TRUST_KEY_LEN], char **ret_error);

/* The binding's URI (malloc()ed), as the certificate carries it. */
char *trust_binding_uri(const TrustBinding *b);
