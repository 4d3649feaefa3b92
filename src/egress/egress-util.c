/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "egress-util.h"

const char *egress_show(const void *s, size_t n, char buf[static EGRESS_SHOW_MAX]) {
        const uint8_t *p = s;
        size_t o = 0;

        for (size_t i = 0; i < n && i < EGRESS_SHOW_BYTES; i++) {
                uint8_t c = p[i];

                if (c == '"' || c == '\\') {
                        buf[o++] = '\\';
                        buf[o++] = (char) c;
                } else if (c >= 0x20 && c < 0x7f)
                        buf[o++] = (char) c;
                else {
                        snprintf(buf + o, 5, "\\x%02x", c);
                        o += 4;
                }
        }
        if (n > EGRESS_SHOW_BYTES) {
                buf[o++] = '.';
                buf[o++] = '.';
                buf[o++] = '.';
        }
        buf[o] = 0;
        return buf;
}
