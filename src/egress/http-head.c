/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "egress-util.h"
#include "http-head.h"
#include "parse-util.h"
#include "util.h"

/* RFC 9110 5.6.2: the bytes of a token. */
static bool is_tchar(uint8_t c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* RFC 9110 5.5: a field value's bytes (visible, space, tab, obs-text). */
static bool is_field_byte(uint8_t c) {
        return c == ' ' || c == '\t' || (c >= 0x21 && c != 0x7f);
}

/* "host" or "host:port" (no userinfo, no IP literal) into host and port. */
static int parse_authority(const char *s, size_t n, char host[static DNS_NAME_TEXT_MAX + 1], uint16_t *ret_port,
                           const char *what, char **ret_error) {
        char shown[EGRESS_SHOW_MAX];
        const char *colon = memchr(s, ':', n);
        size_t hn = colon ? (size_t) (colon - s) : n;
        uint64_t port = 0;

        if (memchr(s, '@', n) || (n > 0 && s[0] == '['))
                return errorf(ret_error, -EBADMSG, "%s \"%s\" is not a host name with an optional port", what,
                              egress_show(s, n, shown));
        if (colon && parse_unsigned_n(colon + 1, n - hn - 1, 0, 1, 65535, &port) < 0)
                return errorf(ret_error, -EBADMSG, "%s \"%s\" has no valid port after ':'", what, egress_show(s, n, shown));
        if (host_name_normalize(s, hn, HOST_NAME_TRAILING_DOT, host, NULL) < 0)
                return errorf(ret_error, -EBADMSG, "%s \"%s\" is not a host name", what, egress_show(s, n, shown));
        *ret_port = (uint16_t) port;
        return 0;
}

int http_head_parse(const uint8_t *buf, size_t len, HttpHead *ret, char **ret_error) {
        char target_host[DNS_NAME_TEXT_MAX + 1] = "", shown[EGRESS_SHOW_MAX];
        const uint8_t *line, *sp1, *sp2, *end = NULL;
        size_t scan = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX, i, mlen, n_host = 0;
        uint16_t target_port = 0;
        HttpHead h = {};
        int r;

        /* Decide "not HTTP" on the first bytes, before waiting for a whole head. */
        for (i = 0; i < scan && is_tchar(buf[i]); i++)
                ;
        if (i < scan && (buf[i] != ' ' || i == 0))
                return errorf(ret_error, -ENOMSG, "not an HTTP/1.x request: \"%s\"", egress_show(buf, i + 1, shown));
        if (i > HTTP_METHOD_MAX)
                return errorf(ret_error, -ENOMSG, "not an HTTP/1.x request: a method of more than %d bytes",
                              HTTP_METHOD_MAX);
        /* Line ends: CRLF only; a lone CR or LF is where two readers part. */
        for (i = 0; i < scan; i++) {
                if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
                        return errorf(ret_error, -EBADMSG, "a line ends in LF without CR");
                if (buf[i] == '\r' && i + 1 < scan && buf[i + 1] != '\n')
                        return errorf(ret_error, -EBADMSG, "a CR not followed by LF");
                if (i >= 3 && memcmp(buf + i - 3, "\r\n\r\n", 4) == 0) {
                        end = buf + i + 1;
                        break;
                }
        }
        if (!end)
                return len >= HTTP_HEAD_MAX ? errorf(ret_error, -E2BIG, "no end of the request head within %d bytes",
                                                     HTTP_HEAD_MAX) : -EAGAIN;

        /* The request line: METHOD SP target SP HTTP/1.d CRLF */
        line = buf;
        sp1 = memchr(line, ' ', (size_t) (end - line));
        mlen = (size_t) (sp1 - line);
        memcpy(h.method, line, mlen);
        h.method[mlen] = 0;
        for (sp2 = sp1 + 1; sp2 < end && *sp2 > 0x20 && *sp2 < 0x7f; sp2++)
                ;
        if (sp2 == sp1 + 1 || *sp2 != ' ' || end - sp2 < 12 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
            sp2[8] < '0' || sp2[8] > '9' || sp2[9] != '\r')
                return errorf(ret_error, -ENOMSG, "not an HTTP/1.x request line: \"%s\"",
                              egress_show(line, (size_t) ((const uint8_t *) memchr(line, '\r', (size_t) (end - line)) - line),
                                          shown));
        h.minor = (uint8_t) (sp2[8] - '0');
        {
                const char *t = (const char *) sp1 + 1;
                size_t tn = (size_t) (sp2 - sp1 - 1);

                if (tn >= 7 && strncasecmp(t, "http://", 7) == 0) {
                        size_t an = strcspn(t + 7, "/?# ");

                        if (an > tn - 7)
                                an = tn - 7;
                        r = parse_authority(t + 7, an, target_host, &target_port, "the request target's authority", ret_error);
                        if (r < 0)
                                return r;
                } else if (strcmp(h.method, "CONNECT") == 0) {
                        r = parse_authority(t, tn, target_host, &target_port, "CONNECT's target", ret_error);
                        if (r < 0)
                                return r;
                } else if (t[0] != '/' && !(tn == 1 && t[0] == '*'))
                        return errorf(ret_error, -EBADMSG, "request target \"%s\" is neither a path nor an http URL",
                                      egress_show(t, tn, shown));
        }

        /* Fields: name ":" OWS value OWS CRLF, until the empty line. */
        for (line = sp2 + 11; line + 2 < end; ) {
                const uint8_t *eol = memchr(line, '\r', (size_t) (end - line)), *colon, *v, *ve;

                if (line[0] == ' ' || line[0] == '\t')
                        return errorf(ret_error, -EBADMSG, "a folded header line (obsolete line folding)");
                for (colon = line; colon < eol && is_tchar(*colon); colon++)
                        ;
                if (colon == line || colon == eol || *colon != ':')
                        return errorf(ret_error, -EBADMSG, "header line \"%s\" is not NAME: VALUE",
                                      egress_show(line, (size_t) (eol - line), shown));
                for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
                        ;
                for (ve = eol; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--)
                        ;
                for (const uint8_t *p = v; p < ve; p++)
                        if (!is_field_byte(*p))
                                return errorf(ret_error, -EBADMSG, "header %.*s holds byte 0x%02x", (int) (colon - line),
                                              (const char *) line, *p);
                if (colon - line == 4 && strncasecmp((const char *) line, "host", 4) == 0) {
                        if (++n_host > 1)
                                return errorf(ret_error, -EBADMSG, "more than one Host header");
                        r = parse_authority((const char *) v, (size_t) (ve - v), h.host, &h.port, "Host", ret_error);
                        if (r < 0)
                                return r;
                }
                line = eol + 2;
        }

        if (target_host[0]) {
                if (n_host > 0 && (strcmp(h.host, target_host) != 0 || (h.port ?: 80) != (target_port ?: 80)))
                        return errorf(ret_error, -EBADMSG, "the request target names %s, Host names %s", target_host, h.host);
                strcpy(h.host, target_host);
                h.port = target_port;
        } else if (n_host == 0)
                return errorf(ret_error, -EBADMSG, "no Host header, so no host to check");
        h.length = (size_t) (end - buf);
        *ret = h;
        return 0;
}
