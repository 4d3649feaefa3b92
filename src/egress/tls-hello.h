/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host-rule.h"

/*
 * The TLS ClientHello reader of the egress helper (spec section 4.5,
 * "Egress by name"): from the first bytes a connection sends, the
 * server_name the client asks for, without decrypting anything. Pure and
 * bounded: it reads buf[0..len) only and never more than TLS_HELLO_MAX.
 */

/* The longest ClientHello handshake message read (several records may carry it). */
#define TLS_HELLO_MAX 16384
/* The most extensions one ClientHello may carry here. */
#define TLS_HELLO_MAX_EXTENSIONS 128

#define TLS_EXT_SERVER_NAME 0x0000
#define TLS_EXT_ECH 0xfe0d

typedef struct TlsHello {
        /* server_name's host_name, normalised (host_name_normalize()); "" without one. */
        char server_name[DNS_NAME_TEXT_MAX + 1];
        bool has_sni;
        /* An encrypted_client_hello extension: real or GREASE, the outer name is the one read. */
        bool has_ech;
        uint16_t legacy_version;
        /* Bytes of buf the records holding the ClientHello take. */
        size_t consumed;
} TlsHello;

/*
 * Reads the ClientHello at the start of buf:
 *   1        parsed, with a server_name (TLS_HELLO_SNI)
 *   0        parsed, without one (TLS_HELLO_NO_SNI)
 *   -EAGAIN  the bytes so far are a ClientHello's beginning; wait for more
 *   -ENOMSG  not TLS (not a handshake record of TLS 1.x)
 *   -EBADMSG a malformed ClientHello: lengths that do not add up, a record
 *            of another type inside it, a repeated extension, a server_name
 *            that is not exactly one host name
 *   -E2BIG   a ClientHello longer than TLS_HELLO_MAX
 * with a sentence in *ret_error (not for -EAGAIN); *ret written only for 0 and 1.
 */
#define TLS_HELLO_SNI 1
#define TLS_HELLO_NO_SNI 0
int tls_hello_parse(const uint8_t *buf, size_t len, TlsHello *ret, char **ret_error);

/*
 * A minimal ClientHello naming server_name (a normalised host name), as one
 * handshake record: legacy version TLS 1.2, a zero random, no session ID,
 * one cipher suite, no compression, and the server_name and
 * supported_versions (TLS 1.3 only) extensions. It is what the network
 * attestation's probe sends the egress helper, whose reader above must
 * read its name; no server would finish a handshake with it. 0 and the
 * record's length in *ret_len; -EINVAL for a name too long, -ENOBUFS when
 * size is too small.
 */
int tls_hello_build(const char *server_name, uint8_t *buf, size_t size, size_t *ret_len);
