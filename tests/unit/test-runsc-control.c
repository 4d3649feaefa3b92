/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * runsc's control protocol as lazaret-runsc speaks it (src/runtime/runsc-control.c):
 * where a reply ends, what a reply may be, which refusals are the
 * protocol's, capability names, the state file, and the calls written.
 * tests/cli/test-runsc-client.sh runs the client against a server;
 * tests/integration/test-runsc-client.sh against the real runsc.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cleanup.h"
#include "json-util.h"
#include "runsc-control.h"

static ssize_t len_of(const char *s) {
        return runsc_reply_length(s, strlen(s));
}

Test(runsc_control, reply_length) {
        cr_assert_eq(len_of(""), 0);
        cr_assert_eq(len_of("  \n"), 0);
        cr_assert_eq(len_of("{"), 0);
        cr_assert_eq(len_of("{\"err\":\"}\""), 0);
        cr_assert_eq(len_of("{}"), 2);
        cr_assert_eq(len_of(" {} trailing"), 3);
        cr_assert_eq(len_of("{\"a\":{\"b\":[1,{}]}}{}"), 18);
        /* Braces and escaped quotes inside strings do not count. */
        cr_assert_eq(len_of("{\"err\":\"a } \\\" { ]\"}"), 20);
        cr_assert_eq(len_of("{\"err\":\"\\\\\"}"), 12);
        cr_assert_eq(len_of("[1]"), -EBADMSG);
        cr_assert_eq(len_of("null"), -EBADMSG);
        /* Only where the object ends is measured; the parser refuses a mismatch. */
        cr_assert_eq(len_of("{]"), 2);
        cr_assert_eq(runsc_reply_length("{\0}", 3), -EBADMSG);
}

Test(runsc_control, reply_depth_bounded) {
        char deep[200];

        memset(deep, '[', sizeof(deep));
        deep[0] = '{';
        cr_assert_eq(runsc_reply_length(deep, sizeof(deep)), -EBADMSG);
}

static int parse(const char *s, RunscReply *r, char **why) {
        free(*why);
        *why = NULL;
        runsc_reply_done(r);
        return runsc_reply_parse(s, strlen(s), r, why);
}

Test(runsc_control, reply_parse) {
        _cleanup_(runsc_reply_done) RunscReply r = {};
        _cleanup_free_ char *why = NULL;

        cr_assert_eq(parse("{\"success\":true,\"err\":\"\",\"result\":42}", &r, &why), 0);
        cr_assert(r.success && r.has_result && r.result == 42 && !r.err);
        cr_assert_eq(parse("{\"success\":false,\"err\":\"unknown method\",\"result\":null}", &r, &why), 0);
        cr_assert(!r.success && !r.has_result);
        cr_assert_str_eq(r.err, "unknown method");
        cr_assert_eq(parse("{\"success\":true,\"err\":\"\",\"result\":{}}", &r, &why), 0);
        cr_assert(r.success && !r.has_result);
        /* Controls in the server's words come back escaped, never raw. */
        cr_assert_eq(parse("{\"success\":false,\"err\":\"a\\u001b[2Jb\\nc\"}", &r, &why), 0);
        cr_assert_null(strchr(r.err, '\x1b'));
        cr_assert_null(strchr(r.err, '\n'));

        static const char *const bad[] = {
                "{}", "{\"success\":1}", "{\"success\":\"true\"}", "{\"success\":true,\"err\":3}",
                "{\"success\":true,\"result\":\"42\"}", "{\"success\":true,\"result\":[1]}",
                "{\"success\":true,\"result\":1.5}", "{\"success\":true,\"success\":false}", "[]", "{",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_assert_eq(parse(bad[i], &r, &why), -EBADMSG, "accepted %s", bad[i]);
}

Test(runsc_control, protocol_refusals) {
        cr_assert(runsc_err_is_protocol("unknown method"));
        cr_assert(runsc_err_is_protocol("json: cannot unmarshal string into Go struct field ExecArgs.KUID"));
        cr_assert(runsc_err_is_protocol("invalid character 'x' looking for beginning of value"));
        cr_assert(runsc_err_is_protocol("unexpected end of JSON input"));
        cr_assert(!runsc_err_is_protocol(NULL));
        cr_assert(!runsc_err_is_protocol("failed to load /x: no such file or directory"));
        cr_assert(!runsc_err_is_protocol("container \"c1\" not started"));
        cr_assert(!runsc_err_is_protocol("unknown methods"));
}

Test(runsc_control, capabilities) {
        cr_assert_eq(runsc_capability_from_name("CAP_CHOWN"), 0);
        cr_assert_eq(runsc_capability_from_name("CAP_NET_RAW"), 13);
        cr_assert_eq(runsc_capability_from_name("CAP_SYS_CHROOT"), 18);
        cr_assert_eq(runsc_capability_from_name("CAP_AUDIT_WRITE"), 29);
        cr_assert_eq(runsc_capability_from_name("CAP_CHECKPOINT_RESTORE"), 40);
        cr_assert_eq(runsc_capability_from_name("CAP_BOGUS"), -EINVAL);
        cr_assert_eq(runsc_capability_from_name("cap_chown"), -EINVAL);
        cr_assert_eq(runsc_capability_from_name(""), -EINVAL);
}

Test(runsc_control, state) {
        static const char good[] =
                "{\"id\":\"c\",\"status\":\"running\",\"sandbox\":{\"controlSocketPath\":\"/run/x.sock\"},"
                "\"spec\":{\"process\":{\"env\":[\"A=1\"]}}}";
        _cleanup_free_ char *why = NULL;
        RunscState s = {};

        cr_assert_eq(runsc_state_parse(good, strlen(good), &s, &why), 0);
        cr_assert_str_eq(s.status, "running");
        cr_assert_str_eq(s.control_socket, "/run/x.sock");
        cr_assert_not_null(s.process);
        runsc_state_done(&s);

        static const char *const bad[] = {
                "{\"status\":\"running\"}",
                "{\"status\":\"running\",\"sandbox\":{\"controlSocketPath\":\"relative.sock\"}}",
                "{\"status\":\"running\",\"sandbox\":{\"controlSocketPath\":\"\"}}",
                "{\"status\":1,\"sandbox\":{\"controlSocketPath\":\"/x\"}}",
                "{\"sandbox\":{\"controlSocketPath\":\"/x\"}}",
                "[]",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                free(why);
                why = NULL;
                cr_assert_eq(runsc_state_parse(bad[i], strlen(bad[i]), &s, &why), -EBADMSG, "accepted %s", bad[i]);
                cr_assert_not_null(why);
        }
}

static json_object *obj(const char *text) {
        json_object *o = NULL;

        cr_assert_eq(json_parse_strict(text, strlen(text), &o, NULL), 0, "%s", text);
        return o;
}

Test(runsc_control, exec_call) {
        _cleanup_json_ json_object *p = obj("{\"args\":[\"/bin/sh\"],\"user\":{\"uid\":1000,\"gid\":100,"
                                            "\"additionalGids\":[5,6]},\"terminal\":true,\"noNewPrivileges\":true,"
                                            "\"capabilities\":{\"bounding\":[\"CAP_NET_RAW\",\"CAP_KILL\"]}}");
        _cleanup_json_ json_object *c = obj("{\"env\":[\"FROM=container\"],\"cwd\":\"/home\"}");
        _cleanup_free_ char *call = NULL, *why = NULL;
        const int fds[] = { 0, 1, 2, 7 };

        cr_assert_eq(runsc_exec_call(p, c, "c1", fds, 4, &call, &why), 0, "%s", why);
        cr_assert_str_eq(call,
                         "{\"method\":\"containerManager.ExecuteAsync\",\"arg\":{\"filename\":\"\",\"argv\":[\"/bin/sh\"],"
                         "\"envv\":[\"FROM=container\"],\"wd\":\"/home\",\"KUID\":1000,\"KGID\":100,\"ExtraKGIDs\":[5,6],"
                         "\"Capabilities\":{\"BoundingCaps\":32,\"EffectiveCaps\":0,\"InheritableCaps\":0,"
                         "\"PermittedCaps\":0,\"AmbientCaps\":0},\"StdioIsPty\":true,\"NoNewPrivileges\":true,"
                         "\"SupportTTYs\":true,\"GuestFDs\":[0,1,2,7],\"ContainerID\":\"c1\"}}");

        /* No capabilities anywhere: null, as runsc sends it. */
        _cleanup_json_ json_object *bare = obj("{\"args\":[\"x\"]}");
        free(call);
        call = NULL;
        cr_assert_eq(runsc_exec_call(bare, NULL, "c1", fds, 3, &call, &why), 0);
        cr_assert_not_null(strstr(call, "\"Capabilities\":null"));
        cr_assert_not_null(strstr(call, "\"envv\":[]"));
}

Test(runsc_control, exec_call_refusals) {
        static const char *const bad[] = {
                "{}", "{\"args\":[]}", "{\"args\":\"/bin/sh\"}", "{\"args\":[1]}", "{\"args\":[\"x\"],\"env\":\"A=1\"}",
                "{\"args\":[\"x\"],\"cwd\":\"relative\"}", "{\"args\":[\"x\"],\"user\":{\"uid\":-1}}",
                "{\"args\":[\"x\"],\"user\":{\"uid\":4294967296}}", "{\"args\":[\"x\"],\"user\":{\"additionalGids\":[\"a\"]}}",
                "{\"args\":[\"x\"],\"capabilities\":{\"bounding\":[\"CAP_BOGUS\"]}}",
                "{\"args\":[\"x\"],\"capabilities\":{\"bounding\":\"CAP_KILL\"}}", "{\"args\":[\"x\"],\"capabilities\":[]}",
                "{\"args\":[\"x\"],\"terminal\":\"false\"}", "{\"args\":[\"x\"],\"noNewPrivileges\":1}",
                "{\"args\":[\"x\"],\"user\":{\"additionalGids\":5}}",
        };
        const int fds[] = { 0, 1, 2 }, unsorted[] = { 1, 0 };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_json_ json_object *p = obj(bad[i]);
                _cleanup_free_ char *call = NULL, *why = NULL;
                cr_assert_eq(runsc_exec_call(p, NULL, "c1", fds, 3, &call, &why), -EINVAL, "accepted %s", bad[i]);
                cr_assert_null(call);
                cr_assert_not_null(why, "no reason for %s", bad[i]);
        }
        _cleanup_json_ json_object *p = obj("{\"args\":[\"x\"]}");
        _cleanup_free_ char *call = NULL;
        cr_assert_eq(runsc_exec_call(p, NULL, "c1", unsorted, 2, &call, NULL), -EINVAL);
}

Test(runsc_control, wait_and_signal_calls) {
        _cleanup_free_ char *w = NULL, *k = NULL;

        cr_assert_eq(runsc_wait_call("c1", 42, &w), 0);
        cr_assert_str_eq(w, "{\"method\":\"containerManager.WaitPID\",\"arg\":{\"PID\":42,\"CID\":\"c1\"}}");
        cr_assert_eq(runsc_signal_call("c1", 42, 2, RUNSC_SIGNAL_TO_FOREGROUND_GROUP, &k), 0);
        cr_assert_str_eq(k, "{\"method\":\"containerManager.Signal\",\"arg\":{\"CID\":\"c1\",\"Signo\":2,\"PID\":42,\"Mode\":2}}");
}
