/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "supervisor-proto.h"

int parse_ull_strict(const char *s, unsigned long long *ret) {
        unsigned long long v = 0;

        if (!s || !*s)
                return -EINVAL;
        if (s[0] == '0' && s[1])
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                if (v > (~0ULL - (unsigned long long) (*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (unsigned long long) (*p - '0');
        }
        *ret = v;
        return 0;
}

int parse_uint_strict(const char *s, int max, int *ret) {
        unsigned long long v;
        int r;

        r = parse_ull_strict(s, &v);
        if (r < 0)
                return r;
        if (v > (unsigned long long) max)
                return -ERANGE;
        *ret = (int) v;
        return 0;
}

static bool digest_valid(const char *s) {
        size_t n = 0;

        for (; s[n]; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == SUPERVISOR_DIGEST_HEX_LEN;
}

#define PID_MAX_LIMIT 4194304

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
        case SUPERVISOR_NETWORK:
                if (!digest_valid(msg->digest) || msg->helper_pid < 1 || msg->helper_pid > PID_MAX_LIMIT || msg->netns == 0)
                        return -EINVAL;
                n = snprintf(buf, SUPERVISOR_MSG_MAX, "NETWORK %s %d %llu", msg->digest, msg->helper_pid, msg->netns);
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
        } else if ((arg = startswith(s, "NETWORK "))) {
                const char *sp1 = strchr(arg, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
                char pid[16];

                if (!sp1 || !sp2 || (size_t) (sp1 - arg) != SUPERVISOR_DIGEST_HEX_LEN ||
                    (size_t) (sp2 - sp1 - 1) >= sizeof(pid))
                        return -EBADMSG;
                memcpy(m.digest, arg, SUPERVISOR_DIGEST_HEX_LEN);
                m.digest[SUPERVISOR_DIGEST_HEX_LEN] = 0;
                memcpy(pid, sp1 + 1, (size_t) (sp2 - sp1 - 1));
                pid[sp2 - sp1 - 1] = 0;
                if (!digest_valid(m.digest) || parse_uint_strict(pid, PID_MAX_LIMIT, &m.helper_pid) < 0 ||
                    m.helper_pid < 1 || parse_ull_strict(sp2 + 1, &m.netns) < 0 || m.netns == 0)
                        return -EBADMSG;
                m.type = SUPERVISOR_NETWORK;
        } else
                return -EBADMSG;
        *ret = m;
        return 0;
}
