/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/*
 * The Escalation Mailbox's records (spec section 5.6): a request the
 * Escalation Client writes, a result the coordinator writes back. A record
 * is a sequence of fields in a fixed order, each
 *
 *     NAME SP LENGTH ":" BYTES LF
 *
 * where LENGTH is the decimal byte count of BYTES (no leading zeros, no
 * sign). A request's "cred" field is the session's credential, opaque
 * bytes here: only the host's Trust Anchor reads it (trust-anchor.h).
 * A request's last field is "sig", an Ed25519 signature (hex) over
 * every byte before that field: the exact bytes, never a re-serialisation.
 * Nothing may follow it. The reader is strict: a wrong name, order, length,
 * value, a missing or repeated field, or trailing bytes refuse the record.
 *
 * This file is linked into the static lazaret-escalate: it needs only libc
 * and nettle.
 */

#define ESC_ID_LEN 32                   /* hex digits of a request or session ID */
#define ESC_SANDBOX_ID_MAX 64
#define ESC_REQUEST_MAX (64 * 1024)     /* a request file's size */
#define ESC_ARGC_MAX 256
#define ESC_ARG_MAX 4096
#define ESC_WHY_MAX 1024
#define ESC_CWD_MAX 4096
#define ESC_MESSAGE_MAX 1024
#define ESC_OUTPUT_MAX (256 * 1024)     /* captured bytes per stream */
#define ESC_RESULT_MAX (2 * ESC_OUTPUT_MAX + 8192)
#define ESC_TIMEOUT_MAX 86400
#define ESC_CRED_MAX 4096               /* the attached credential (= TRUST_CREDENTIAL_MAX) */

#define ESC_KEY_LEN 32                  /* Ed25519 private and public keys */
#define ESC_SIG_LEN 64

/* Where the sandbox sees the mailbox, and what its files are called. */
#define ESC_MAILBOX_SANDBOX "/run/lazaret/mailbox"
#define ESC_REQUESTS_DIR "requests"
#define ESC_RESULTS_DIR "results"
#define ESC_BELL_SUFFIX ".bell"         /* results/<session-id>.bell: the session's doorbell FIFO */
#define ESC_RESULT_SUFFIX ".result"     /* results/<session-id>.result: the session's latest result */
#define ESC_TRUST_DIR "trust"           /* read-only inside: trust/<session-id>.cred, each session's credential */
#define ESC_CRED_SUFFIX ".cred"

/*
 * The mailbox's own file systems (SR-10), made by the Runtime Supervisor in
 * its mount namespace, never on the session-wide $XDG_RUNTIME_DIR: a tmpfs
 * for results/ and trust/ (written by the coordinator only: each session's
 * bell, one result and credential, so DOMAIN_MAX_SESSIONS results of
 * ESC_RESULT_MAX always fit) with requests/, the one directory the sandbox
 * writes, a smaller tmpfs of its own mounted on it (64 records of the
 * largest size, ESC_REQUEST_MAX, and 256 names). Fixed bounds, not
 * configuration. The mount plan's mailbox entries are MOUNT_SUPERVISOR
 * entries of type ESC_MAILBOX_FSTYPE whose source names the directory and
 * whose data is the options of the file system it is on.
 *
 * Names: the mailbox tmpfs spends ESC_MAILBOX_DIRS on its root and its
 * three directories, and each open session ESC_SESSION_NAMES (its bell,
 * result and credential, all made when it opens), plus one more while its
 * result is replaced (the new one is written beside it, and gVisor may
 * still hold the one the client read until its next lookup). An ended
 * session's names come back once gVisor has forgotten them
 * (lazaret-init --forget-mailbox). A session opens only while that leaves
 * room for every open session's replacement (escalations_session_opened()),
 * so an accepted request's result always finds a name.
 */
#define ESC_MAILBOX_FSTYPE "lazaret-mailbox"
#define ESC_MAILBOX_FS_OPTIONS "mode=0700,size=40m,nr_inodes=65536"
#define ESC_MAILBOX_DIRS 4              /* the tmpfs root, requests/ (a mount point), results/, trust/ */
#define ESC_SESSION_NAMES 3             /* bell, result, credential */
#define ESC_REQUESTS_FS_OPTIONS "mode=0700,size=4m,nr_inodes=256"

/* The environment a session's processes get (sandbox-exec.c). */
#define ESC_ENV_SESSION_KEY "LAZARET_SESSION_KEY"      /* the Session Anchor's private half, hex */
#define ESC_ENV_SANDBOX_ID "LAZARET_SANDBOX_ID"

typedef struct EscRequest {
        char id[ESC_ID_LEN + 1];
        char session[ESC_ID_LEN + 1];
        char sandbox[ESC_SANDBOX_ID_MAX + 1];
        uint64_t time_usec;             /* CLOCK_REALTIME when written */
        unsigned timeout_s;             /* how long the client waits; 0: the Domain's default */
        char *cwd;
        char *why;
        char **argv;                    /* argc >= 1 entries, NULL-terminated */
        size_t argc;
        uint8_t *cred;                  /* the session's credential, never read by the client */
        size_t cred_len;                /* 1..ESC_CRED_MAX */
        /* Set by esc_request_parse(): */
        size_t signed_len;              /* bytes covered by the signature */
        uint8_t sig[ESC_SIG_LEN];
} EscRequest;

void esc_request_done(EscRequest *r);

/* Every field valid (what esc_request_parse() also checks); -EINVAL otherwise. */
int esc_request_validate(const EscRequest *r, char **ret_error);

/* The signed record, in a malloc()ed buffer of *ret_len bytes (plus a NUL). */
int esc_request_format(const EscRequest *r, const uint8_t key[ESC_KEY_LEN], char **ret, size_t *ret_len);

/*
 * Reads a record of exactly len bytes. The signature is not checked here:
 * esc_request_verify() does that with the session's public key.
 */
int esc_request_parse(const char *buf, size_t len, EscRequest *ret, char **ret_error);
bool esc_request_verify(const char *buf, const EscRequest *r, const uint8_t pub[ESC_KEY_LEN]);

typedef enum EscOutcome {
        ESC_COMPLETED,
        ESC_DENIED,
        ESC_TIMEOUT,
        ESC_CANCELLED,
        ESC_FAILED,
        _ESC_OUTCOME_MAX,
} EscOutcome;

const char *esc_outcome_to_string(EscOutcome o);
int esc_outcome_from_string(const char *s);

typedef struct EscResult {
        char id[ESC_ID_LEN + 1];
        EscOutcome outcome;
        int status;                     /* COMPLETED: the exit status (128+N for signal N) */
        char *message;                  /* one line for the client's stderr; may be "" */
        char *out, *err;                /* COMPLETED: what the command printed (bounded) */
        size_t out_len, err_len;
} EscResult;

void esc_result_done(EscResult *r);
int esc_result_format(const EscResult *r, char **ret, size_t *ret_len);
int esc_result_parse(const char *buf, size_t len, EscResult *ret, char **ret_error);

/* Key handling (nettle's Ed25519). */
int esc_key_generate(uint8_t priv[ESC_KEY_LEN], uint8_t pub[ESC_KEY_LEN]);
void esc_key_public(const uint8_t priv[ESC_KEY_LEN], uint8_t pub[ESC_KEY_LEN]);

/* Lowercase hex of exactly 2*n digits into n bytes: 0, or -EINVAL. */
int esc_unhex(const char *s, uint8_t *ret, size_t n);
/* A fresh random ID of ESC_ID_LEN hex digits. */
int esc_random_id(char ret[ESC_ID_LEN + 1]);

/*
 * The metacharacter rule (001 section 5, SR-8): whether any argument holds
 * a shell metacharacter (; | & $( ` > <), a backslash, or a control byte
 * (newline, carriage return, every byte below 0x20, DEL). Such a request
 * always goes to a human. *ret_index (optional) is the first such argument.
 */
bool esc_argv_has_metachar(char *const *argv, size_t *ret_index);

/*
 * argv as one line a human can read unambiguously: each argument in single
 * quotes when it holds anything but [A-Za-z0-9_./:=@%+,-], a quote as '\'',
 * control bytes, bidirectional and zero-width characters, invalid UTF-8
 * and non-ASCII space as \xNN or \u{XXXX} outside the quotes ($'...' style
 * is not used: the text is for reading, not pasting into a shell).
 */
char *esc_argv_to_display(char *const *argv);
/* One string, escaped the same way (for cwd and the justification). */
char *esc_string_to_display(const char *s);

/*
 * The edit syntax of the prompt (lazaret-escalate(1)): words separated by
 * blanks; '...' takes everything literally up to the next quote; "..."
 * likewise but a backslash escapes " and \; outside quotes a backslash
 * escapes the next character. No expansion of any kind. -EINVAL for an
 * unterminated quote, an empty result, or more than ESC_ARGC_MAX words.
 */
int esc_words_parse(const char *line, char ***ret);
