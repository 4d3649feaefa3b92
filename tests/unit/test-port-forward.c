/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "port-forward.h"

static int parse(const char *s, PortForward *f, char **why) {
        free(*why);
        *why = NULL;
        return port_forward_parse(s, f, why);
}

Test(port_forward, parse_forms) {
        _cleanup_free_ char *why = NULL;
        char b[PORT_FORWARD_STRING_MAX];
        PortForward f;

        cr_assert_eq(parse("8080", &f, &why), 0);
        cr_assert_eq(f.host_port, 8080);
        cr_assert_eq(f.guest_port, 8080);
        cr_assert_eq(parse("18080:80", &f, &why), 0);
        cr_assert_eq(f.host_port, 18080);
        cr_assert_eq(f.guest_port, 80);
        port_forward_format(&f, b);
        cr_assert_str_eq(b, "18080:80");
        cr_assert_eq(parse("65535:65535", &f, &why), 0);
        port_forward_format(&f, b);
        cr_assert_str_eq(b, "65535:65535");
        cr_assert_eq(parse("1024:1", &f, &why), 0);
}

Test(port_forward, parse_refusals) {
        static const char *const bad[] = {
                "", ":", "8080:", ":8080", "0", "65536", "-1", "+8080", " 8080", "8080 ", "08080", "0x1f90",
                "1:2:3", "80a", "http", "18080:0", "18080:65536", "8080:80:", "1e4",
        };
        _cleanup_free_ char *why = NULL;
        PortForward f = { 1, 2 };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                cr_assert_lt(parse(bad[i], &f, &why), 0, "\"%s\" was accepted", bad[i]);
                cr_assert_not_null(why);
                cr_assert_eq(f.host_port, 1, "written on failure");
        }
        cr_assert_eq(parse("8080:80:", &f, &why), -EINVAL);
}

Test(port_forward, below_1024) {
        _cleanup_free_ char *why = NULL;
        PortForward f;

        cr_assert_eq(parse("80", &f, &why), -EPERM);
        cr_assert(strstr(why, "host port 80 is below 1024"), "%s", why);
        cr_assert(strstr(why, "8080:80"), "no example in: %s", why);
        cr_assert_eq(parse("1023:8080", &f, &why), -EPERM);
        /* Guest ports below 1024 are fine: root inside may listen there. */
        cr_assert_eq(parse("8080:80", &f, &why), 0);
        cr_assert_eq(port_forward_check(1024, 1, NULL), 0);
        cr_assert_eq(port_forward_check(1024, 0, NULL), -EINVAL);
        cr_assert_eq(port_forward_check(70000, 80, NULL), -EINVAL);
}

Test(port_forward, requests) {
        _cleanup_free_ char *add = NULL, *rm = NULL;

        cr_assert_eq(slirp_api_add_request(&(PortForward) { 18080, 80 }, &add), 0);
        cr_assert_str_eq(add, "{\"execute\":\"add_hostfwd\",\"arguments\":{\"proto\":\"tcp\",\"host_addr\":\"127.0.0.1\","
                              "\"host_port\":18080,\"guest_port\":80}}");
        cr_assert_eq(slirp_api_remove_request(3, &rm), 0);
        cr_assert_str_eq(rm, "{\"execute\":\"remove_hostfwd\",\"arguments\":{\"id\":3}}");
        cr_assert_eq(slirp_api_remove_request(0, &rm), -EINVAL);
}

static int add_reply(const char *s, int *id, char **desc) {
        free(*desc);
        *desc = NULL;
        return slirp_api_parse_add_reply(s, strlen(s), id, desc);
}

Test(port_forward, replies) {
        _cleanup_free_ char *desc = NULL;
        int id = -1;

        cr_assert_eq(add_reply("{\"return\":{\"id\":7}}", &id, &desc), 1);
        cr_assert_eq(id, 7);
        cr_assert_eq(add_reply("{\"error\":{\"desc\":\"bad request: add_hostfwd: slirp_add_hostfwd failed\"}}", &id, &desc), 0);
        cr_assert_str_eq(desc, "bad request: add_hostfwd: slirp_add_hostfwd failed");
        cr_assert_eq(add_reply("{\"error\":{\"desc\":\"a\\nb\"}}", &id, &desc), 0);
        cr_assert_str_eq(desc, "a?b");

        id = -1;
        cr_assert_eq(add_reply("", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{}", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{\"return\":{}}", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{\"return\":{\"id\":0}}", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{\"return\":{\"id\":1.5}}", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{\"return\":{\"id\":\"1\"}}", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{\"return\":{\"id\":2147483648}}", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{\"return\":{\"id\":1},\"error\":{\"desc\":\"x\"}}", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{\"return\":{\"id\":1,\"x\":2}}", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{\"error\":{}}", &id, &desc), -EBADMSG);
        cr_assert_eq(add_reply("{\"return\":{\"id\":1}} x", &id, &desc), -EBADMSG);
        cr_assert_eq(id, -1, "written on failure");

        cr_assert_eq(slirp_api_parse_remove_reply("{\"return\":{}}", 13, NULL), 1);
        cr_assert_eq(slirp_api_parse_remove_reply("{\"return\":{\"id\":1}}", 19, NULL), -EBADMSG);
        {
                const char *e = "{\"error\":{\"desc\":\"bad request: remove_hostfwd: bad arguments.id\"}}";
                cr_assert_eq(slirp_api_parse_remove_reply(e, strlen(e), NULL), 0);
        }
}
