/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "egress-util.h"
#include "tls-hello.h"
#include "util.h"

#define TLS_RECORD_HANDSHAKE 22
#define TLS_RECORD_HEADER 5
/* RFC 8446 section 5.1: a plaintext record carries at most 2^14 bytes. */
#define TLS_RECORD_MAX 16384
#define TLS_HANDSHAKE_CLIENT_HELLO 1
#define TLS_SNI_HOST_NAME 0

/* A bounded reader over the handshake message: every take checks what is left. */
typedef struct Cursor {
        const uint8_t *p;
        size_t left;
} Cursor;

static bool take(Cursor *c, size_t n, const uint8_t **ret) {
        if (c->left < n)
                return false;
        if (ret)
                *ret = c->p;
        c->p += n;
        c->left -= n;
        return true;
}

static bool take_u8(Cursor *c, size_t *ret) {
        const uint8_t *p;
        if (!take(c, 1, &p))
                return false;
        *ret = p[0];
        return true;
}

static bool take_u16(Cursor *c, size_t *ret) {
        const uint8_t *p;
        if (!take(c, 2, &p))
                return false;
        *ret = get_be16(p);
        return true;
}

/* A vector with a length prefix of 1 or 2 bytes, as a cursor of its own. */
static bool take_vector(Cursor *c, size_t prefix, Cursor *ret) {
        size_t n;

        if (!(prefix == 1 ? take_u8(c, &n) : take_u16(c, &n)))
                return false;
        ret->p = c->p;
        ret->left = n;
        return take(c, n, NULL);
}

static int read_sni(Cursor ext, TlsHello *h, char **ret_error) {
        Cursor list, name;
        size_t type;
        int r;

        if (!take_vector(&ext, 2, &list) || ext.left != 0)
                return errorf(ret_error, -EBADMSG, "the server_name extension's list does not fill it");
        if (list.left == 0)
                return errorf(ret_error, -EBADMSG, "an empty server_name list");
        /* RFC 6066: one name per type, and host_name is the only type there is. */
        if (!take_u8(&list, &type) || !take_vector(&list, 2, &name))
                return errorf(ret_error, -EBADMSG, "a server_name entry cut short");
        if (type != TLS_SNI_HOST_NAME || list.left != 0)
                return errorf(ret_error, -EBADMSG, "a server_name list that is not exactly one host_name");
        r = host_name_normalize((const char *) name.p, name.left, 0, h->server_name, NULL);
        if (r < 0) {
                char shown[EGRESS_SHOW_MAX];
                return errorf(ret_error, -EBADMSG, "server_name \"%s\" is not a host name",
                              egress_show(name.p, name.left, shown));
        }
        h->has_sni = true;
        return 0;
}

int tls_hello_parse(const uint8_t *buf, size_t len, TlsHello *ret, char **ret_error) {
        uint8_t msg[TLS_HELLO_MAX];
        size_t have = 0, need = SIZE_MAX, pos = 0, v, n_ext = 0;
        uint16_t seen[TLS_HELLO_MAX_EXTENSIONS];
        Cursor c, skip, exts;
        TlsHello h = {};
        int r;

        if (len >= 1 && buf[0] != TLS_RECORD_HANDSHAKE)
                return errorf(ret_error, -ENOMSG, "not TLS: the first byte is 0x%02x, not a handshake record", buf[0]);
        if (len >= 2 && buf[1] != 3)
                return errorf(ret_error, -ENOMSG, "not TLS: record version %u.x", buf[1]);

        /*
         * Gather the handshake message from as many handshake records as carry
         * it. Records must end with the message; a record not yet whole is
         * read again, from the start, once more bytes have come.
         */
        while (need == SIZE_MAX || have < need) {
                size_t rlen, avail, before = have;

                if (len - pos < TLS_RECORD_HEADER)
                        return -EAGAIN;
                if (buf[pos] != TLS_RECORD_HANDSHAKE || buf[pos + 1] != 3)
                        return errorf(ret_error, pos == 0 ? -ENOMSG : -EBADMSG,
                                      "a record of type %u inside the ClientHello", buf[pos]);
                if (buf[pos + 2] > 4)
                        return errorf(ret_error, -ENOMSG, "not TLS: record version 3.%u", buf[pos + 2]);
                rlen = get_be16(buf + pos + 3);
                if (rlen == 0 || rlen > TLS_RECORD_MAX)
                        return errorf(ret_error, -EBADMSG, "a handshake record of %zu bytes", rlen);
                pos += TLS_RECORD_HEADER;
                avail = MIN(rlen, len - pos);
                /* Never more than the buffer; the length check below refuses what would not fit. */
                have += MIN(avail, sizeof(msg) - have);
                memcpy(msg + before, buf + pos, have - before);
                if (need == SIZE_MAX && have >= 4) {
                        if (msg[0] != TLS_HANDSHAKE_CLIENT_HELLO)
                                return errorf(ret_error, -EBADMSG, "handshake message type %u, not a ClientHello", msg[0]);
                        need = 4 + (size_t) get_be24(msg + 1);
                        if (need > TLS_HELLO_MAX)
                                return errorf(ret_error, -E2BIG, "a ClientHello of %zu bytes; at most %d are read", need,
                                              TLS_HELLO_MAX);
                }
                if (need != SIZE_MAX && before + rlen > need)
                        return errorf(ret_error, -EBADMSG, "%zu bytes after the ClientHello in its records",
                                      before + rlen - need);
                if (avail < rlen)
                        return -EAGAIN;
                pos += rlen;
        }

        c = (Cursor) { msg + 4, need - 4 };
        if (!take_u16(&c, &v))
                return errorf(ret_error, -EBADMSG, "a ClientHello without a version");
        h.legacy_version = (uint16_t) v;
        if (!take(&c, 32, NULL) || !take_vector(&c, 1, &skip) || skip.left > 32)
                return errorf(ret_error, -EBADMSG, "a ClientHello's random or session ID is malformed");
        if (!take_vector(&c, 2, &skip) || skip.left < 2 || skip.left % 2)
                return errorf(ret_error, -EBADMSG, "a ClientHello's cipher suites are malformed");
        if (!take_vector(&c, 1, &skip) || skip.left < 1)
                return errorf(ret_error, -EBADMSG, "a ClientHello's compression methods are malformed");
        if (c.left > 0) {
                if (!take_vector(&c, 2, &exts) || c.left != 0)
                        return errorf(ret_error, -EBADMSG, "a ClientHello's extensions do not fill it");
                while (exts.left > 0) {
                        size_t type;
                        Cursor ext;

                        if (!take_u16(&exts, &type) || !take_vector(&exts, 2, &ext))
                                return errorf(ret_error, -EBADMSG, "an extension cut short");
                        if (n_ext == TLS_HELLO_MAX_EXTENSIONS)
                                return errorf(ret_error, -EBADMSG, "more than %d extensions", TLS_HELLO_MAX_EXTENSIONS);
                        /* RFC 8446 4.2: one of each; a second server_name is the classic way to show two readers two names. */
                        for (size_t i = 0; i < n_ext; i++)
                                if (seen[i] == type)
                                        return errorf(ret_error, -EBADMSG, "extension 0x%04zx appears twice", type);
                        seen[n_ext++] = (uint16_t) type;
                        if (type == TLS_EXT_SERVER_NAME) {
                                r = read_sni(ext, &h, ret_error);
                                if (r < 0)
                                        return r;
                        } else if (type == TLS_EXT_ECH)
                                h.has_ech = true;
                }
        }
        h.consumed = pos;
        *ret = h;
        return h.has_sni ? TLS_HELLO_SNI : TLS_HELLO_NO_SNI;
}

int tls_hello_build(const char *server_name, uint8_t *buf, size_t size, size_t *ret_len) {
        static const uint8_t tail_fixed[] = {
                /* supported_versions: a list of one, TLS 1.3 */
                0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04,
        };
        size_t n = strlen(server_name), sni, exts, body, total;
        uint8_t *p = buf;

        if (n == 0 || n > DNS_NAME_TEXT_MAX)
                return -EINVAL;
        sni = 4 + 2 + 1 + 2 + n;
        exts = sni + sizeof(tail_fixed);
        body = 2 + 32 + 1 + 2 + 2 + 1 + 1 + 2 + exts;
        total = TLS_RECORD_HEADER + 4 + body;
        if (size < total)
                return -ENOBUFS;
        /* the record */
        *p++ = TLS_RECORD_HANDSHAKE;
        *p++ = 3;
        *p++ = 1;
        put_be16(p, (uint16_t) (4 + body));
        p += 2;
        /* the handshake message */
        *p++ = TLS_HANDSHAKE_CLIENT_HELLO;
        *p++ = 0;
        put_be16(p, (uint16_t) body);
        p += 2;
        *p++ = 3;
        *p++ = 3;
        memset(p, 0, 32);
        p += 32;
        *p++ = 0;                       /* session ID */
        put_be16(p, 2);                 /* cipher suites: TLS_AES_128_GCM_SHA256 */
        p[2] = 0x13;
        p[3] = 0x01;
        p += 4;
        *p++ = 1;                       /* compression: null */
        *p++ = 0;
        put_be16(p, (uint16_t) exts);
        p += 2;
        /* server_name: one host_name */
        put_be16(p, TLS_EXT_SERVER_NAME);
        put_be16(p + 2, (uint16_t) (sni - 4));
        put_be16(p + 4, (uint16_t) (sni - 6));
        p[6] = TLS_SNI_HOST_NAME;
        put_be16(p + 7, (uint16_t) n);
        memcpy(p + 9, server_name, n);
        p += sni;
        memcpy(p, tail_fixed, sizeof(tail_fixed));
        p += sizeof(tail_fixed);
        *ret_len = (size_t) (p - buf);
        return 0;
}
