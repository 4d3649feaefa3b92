/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "supervisor-proto.h"

int parse_uint_strict(const char *s, int max, int *ret) {
        long v = 0;

        if (!s || !*s)
                return -EINVAL;
        if (s[0] == '0' && s[1])
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (*p - '0');
                if (v > max)
                        return -ERANGE;
        }
        *ret = (int) v;
        return 0;
}

static void sanitize_copy(char *dst, size_t dstsize, const char *src) {
        size_t i = 0;

        for (; src && src[i] && i < dstsize - 1; i++)
                dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
        dst[i] = 0;
}

int supervisor_msg_encode(const SupervisorMsg *msg, char buf[static SUPERVISOR_MSG_MAX]) {
        char reason[SUPERVISOR_REASON_MAX + 1];
        int n;

        switch (msg->type) {
        case SUPERVISOR_READY:
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "READY");
                break;
        case SUPERVISOR_FAILED:
                sanitize_copy(reason, sizeof(reason), msg->reason);
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "FAILED %s", reason[0] ? reason : "unknown error");
                break;
        case SUPERVISOR_EXITED:
                if (msg->status < 0 || msg->status > 255)
                        return -EINVAL;
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "EXITED %d", msg->status);
                break;
        default:
                return -EINVAL;
        }
        return n < 0 || n >= SUPERVISOR_MSG_MAX ? -EINVAL : n;
}

int supervisor_msg_decode(const char *buf, size_t n, SupervisorMsg *ret) {
        char s[SUPERVISOR_MSG_MAX + 1];
        const char *arg;
        SupervisorMsg m = {};

        if (n == 0 || n > SUPERVISOR_MSG_MAX)
                return -EBADMSG;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) buf[i] < 0x20 || (unsigned char) buf[i] >= 0x7f)
                        return -EBADMSG;
        memcpy(s, buf, n);
        s[n] = 0;

        if (streq(s, "READY"))
                m.type = SUPERVISOR_READY;
        else if ((arg = startswith(s, "FAILED "))) {
                if (!*arg || strlen(arg) > SUPERVISOR_REASON_MAX)
                        return -EBADMSG;
                m.type = SUPERVISOR_FAILED;
                memcpy(m.reason, arg, strlen(arg) + 1);
        } else if ((arg = startswith(s, "EXITED "))) {
                m.type = SUPERVISOR_EXITED;
                if (parse_uint_strict(arg, 255, &m.status) < 0)
                        return -EBADMSG;
        } else
                return -EBADMSG;
        *ret = m;
        return 0;
}
