/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The fixed identities of the escalation seed corpora (make-escalation-corpus
 * writes them, fuzz-escalation-request and fuzz-trust-credential replay them):
 * the Session Anchor is 32 bytes of 0x11, the generation's CA key 32 bytes
 * of 0x22, and the credential binds this session of this generation.
 */
#define CORPUS_SESSION_KEY_BYTE 0x11
#define CORPUS_CA_KEY_BYTE 0x22
#define CORPUS_PROFILE "default"
#define CORPUS_DOMAIN "0123456789ab"
#define CORPUS_GENERATION "lazaret-abc"
#define CORPUS_SESSION "fedcba9876543210fedcba9876543210"
