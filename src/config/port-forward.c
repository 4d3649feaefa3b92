/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "json-util.h"
#include "macro.h"
#include "parse-util.h"
#include "port-forward.h"
#include "util.h"

int port_forward_check(uint32_t host_port, uint32_t guest_port, char **ret_why) {
        if (guest_port < 1 || guest_port > 65535)
                return errorf(ret_why, -EINVAL, "port %" PRIu32 " is not a TCP port (1 to 65535)", guest_port);
        if (host_port < 1 || host_port > 65535)
                return errorf(ret_why, -EINVAL, "host port %" PRIu32 " is not a TCP port (1 to 65535)", host_port);
        if (host_port < PORT_HOST_MIN)
                return errorf(ret_why, -EPERM,
                              "host port %" PRIu32 " is below %d, which an unprivileged user cannot bind; publish it on "
                              "a host port of %d or above (e.g. %d:%" PRIu32 ")", host_port, PORT_HOST_MIN,
                              PORT_HOST_MIN, host_port + 8000 <= 65535 ? (int) host_port + 8000 : 8080, guest_port);
        return 0;
}

static int parse_port(const char *s, size_t n, uint16_t *ret) {
        uint64_t v;
        int r;

        r = parse_unsigned_n(s, n, 0, 1, 65535, &v);
        if (r < 0)
                return r;
        *ret = (uint16_t) v;
        return 0;
}

int port_forward_parse(const char *s, PortForward *ret, char **ret_why) {
        _cleanup_free_ char *shown = NULL;
        const char *colon;
        PortForward f;
        int r;

        if (!s || !*s)
                return errorf(ret_why, -EINVAL, "an empty port; write PORT or HOST_PORT:PORT");
        shown = utf8_escape_invalid(s);
        if (!shown)
                return -ENOMEM;
        if (strlen(s) >= 64)
                return errorf(ret_why, -EINVAL, "\"%.20s...\" is not PORT or HOST_PORT:PORT", shown);
        colon = strchr(s, ':');
        if (colon) {
                r = parse_port(s, (size_t) (colon - s), &f.host_port);
                if (r >= 0)
                        r = parse_port(colon + 1, strlen(colon + 1), &f.guest_port);
        } else {
                r = parse_port(s, strlen(s), &f.guest_port);
                f.host_port = f.guest_port;
        }
        if (r < 0)
                return errorf(ret_why, -EINVAL, "\"%s\" is not PORT or HOST_PORT:PORT (decimal TCP ports, 1 to 65535)",
                              shown);
        r = port_forward_check(f.host_port, f.guest_port, ret_why);
        if (r < 0)
                return r;
        *ret = f;
        return 0;
}

void port_forward_format(const PortForward *f, char buf[static PORT_FORWARD_STRING_MAX]) {
        snprintf(buf, PORT_FORWARD_STRING_MAX, "%u:%u", (unsigned) f->host_port, (unsigned) f->guest_port);
}

int slirp_api_add_request(const PortForward *f, char **ret) {
        char *s;

        /* No guest_addr: slirp4netns' own guest address, the sandbox's (10.137.54.100). */
        if (asprintf(&s, "{\"execute\":\"add_hostfwd\",\"arguments\":{\"proto\":\"tcp\",\"host_addr\":\"" PORT_HOST_ADDRESS
                         "\",\"host_port\":%u,\"guest_port\":%u}}", (unsigned) f->host_port, (unsigned) f->guest_port) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int slirp_api_remove_request(int id, char **ret) {
        char *s;

        if (id < 1)
                return -EINVAL;
        if (asprintf(&s, "{\"execute\":\"remove_hostfwd\",\"arguments\":{\"id\":%d}}", id) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* The answer's one member, "return" (1, its object in *ret_obj) or "error" (0, its description). */
static int parse_reply(const char *buf, size_t n, json_object **ret_doc, json_object **ret_obj, char **ret_desc) {
        _cleanup_json_ json_object *doc = NULL;
        _cleanup_free_ char *why = NULL;
        json_object *v, *d;
        char desc[201];
        const char *s;
        size_t i;

        if (n == 0 || n > SLIRP_API_REPLY_MAX)
                return -EBADMSG;
        if (json_parse_strict(buf, n, &doc, &why) < 0 || !json_object_is_type(doc, json_type_object) ||
            json_object_object_length(doc) != 1)
                return -EBADMSG;
        if (json_object_object_get_ex(doc, "return", &v)) {
                if (!json_object_is_type(v, json_type_object))
                        return -EBADMSG;
                *ret_obj = v;
                *ret_doc = TAKE_PTR(doc);
                return 1;
        }
        if (!json_object_object_get_ex(doc, "error", &v) || !json_object_is_type(v, json_type_object) ||
            !json_object_object_get_ex(v, "desc", &d) || !json_object_is_type(d, json_type_string))
                return -EBADMSG;
        s = json_object_get_string(d);
        for (i = 0; s[i] && i < sizeof(desc) - 1; i++)
                desc[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
        desc[i] = 0;
        if (ret_desc) {
                *ret_desc = strdup(desc);
                if (!*ret_desc)
                        return -ENOMEM;
        }
        return 0;
}

int slirp_api_parse_add_reply(const char *buf, size_t n, int *ret_id, char **ret_desc) {
        _cleanup_json_ json_object *doc = NULL;
        json_object *ret = NULL, *id;
        int64_t v;
        int r;

        r = parse_reply(buf, n, &doc, &ret, ret_desc);
        if (r <= 0)
                return r;
        if (json_object_object_length(ret) != 1 || !json_object_object_get_ex(ret, "id", &id) ||
            !json_object_is_type(id, json_type_int))
                return -EBADMSG;
        v = json_object_get_int64(id);
        if (v < 1 || v > INT32_MAX)
                return -EBADMSG;
        *ret_id = (int) v;
        return 1;
}

int slirp_api_parse_remove_reply(const char *buf, size_t n, char **ret_desc) {
        _cleanup_json_ json_object *doc = NULL;
        json_object *ret = NULL;
        int r;

        r = parse_reply(buf, n, &doc, &ret, ret_desc);
        if (r <= 0)
                return r;
        return json_object_object_length(ret) == 0 ? 1 : -EBADMSG;
}
