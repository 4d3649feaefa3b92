/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "host-rule.h"

/*
 * The HTTP/1.x request-head reader of the egress helper (spec section 4.5,
 * "Egress by name"): the host a plain-HTTP connection's first request
 * names. Strict, so that the helper and the server cannot read two hosts
 * from one head: CRLF line ends only, no folded lines, no space before a
 * field's colon, exactly one Host (RFC 9112 section 3.2), and an
 * absolute-form target's authority equal to Host when both are there.
 * Pure and bounded: it reads buf[0..len) only and never more than
 * HTTP_HEAD_MAX.
 */

#define HTTP_HEAD_MAX 16384
#define HTTP_METHOD_MAX 16

typedef struct HttpHead {
        char method[HTTP_METHOD_MAX + 1];
        /* Normalised (host_name_normalize(), a trailing dot dropped). */
        char host[DNS_NAME_TEXT_MAX + 1];
        /* The port the head names, 0 when it names none. */
        uint16_t port;
        /* HTTP/1.minor */
        uint8_t minor;
        /* Bytes up to and including the empty line. */
        size_t length;
} HttpHead;

/*
 * Reads the request head at the start of buf:
 *   0        parsed
 *   -EAGAIN  a head's beginning; wait for more
 *   -ENOMSG  not an HTTP/1.x request (its first line is not one)
 *   -EBADMSG a malformed head, or one without exactly one host
 *   -E2BIG   no end of the head within HTTP_HEAD_MAX bytes
 * with a sentence in *ret_error (not for -EAGAIN); *ret written only on success.
 */
int http_head_parse(const uint8_t *buf, size_t len, HttpHead *ret, char **ret_error);
