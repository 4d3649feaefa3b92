/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "launch-request.h"

#define FP "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

Test(launch_request, round_trip_and_private_file) {
        char tmpl[] = "/tmp/lazaret-unit-lr-XXXXXX";
        _cleanup_free_ char *err = NULL, *path = NULL;
        LaunchRequest w = { .config_path = (char *) "/home/u/cfg.json" }, r = {};
        struct stat st;

        cr_assert_not_null(mkdtemp(tmpl));
        memcpy(w.fingerprint, FP, sizeof(FP));
        cr_assert_eq(launch_request_write(tmpl, "0123456789ab", &w, NULL, &err), 0, "%s", err ?: "");
        cr_assert(asprintf(&path, "%s/0123456789ab.launch", tmpl) > 0);
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0600);
        cr_assert_eq(launch_request_read(tmpl, "0123456789ab", &r, &err), 0, "%s", err ?: "");
        cr_assert_str_eq(r.config_path, "/home/u/cfg.json");
        cr_assert_str_eq(r.fingerprint, FP);
        launch_request_done(&r);

        chmod(path, 0644);
        cr_assert_eq(launch_request_read(tmpl, "0123456789ab", &r, &err), -EPERM);
        free(err);
        err = NULL;
        cr_assert_eq(launch_request_read(tmpl, "../../etc/x", &r, &err), -EINVAL);
        unlink(path);
        rmdir(tmpl);
}

Test(launch_request, refuses_bad_content) {
        static const char *const bad[] = {
                "{}",
                "{\"version\":2,\"config\":null,\"fingerprint\":\"" FP "\"}",
                "{\"version\":1,\"config\":\"relative\",\"fingerprint\":\"" FP "\"}",
                "{\"version\":1,\"config\":null,\"fingerprint\":\"00\"}",
                "{\"version\":1,\"config\":null,\"fingerprint\":\"" FP "\",\"extra\":1}",
                "{\"version\":1,\"config\":\"/a\\u0000b\",\"fingerprint\":\"" FP "\"}",
                "{\"version\":1,\"config\":null,\"config\":null,\"fingerprint\":\"" FP "\"}",
                /* json-c would read "config\u0000x" as "config", overriding the null before it. */
                "{\"version\":1,\"config\":null,\"config\\u0000x\":\"/evil\",\"fingerprint\":\"" FP "\"}",
                "{\"version\":1,\"config\":null,\"fingerprint\":\"" FP "\",\"fingerprint\\u0000\":\"" FP "\"}",
                "{\"version\":1,\"config\":null,\"fingerprint\":\"" FP "\",\"mode\":\"repair\"}",
                "{\"version\":1,\"config\":null,\"fingerprint\":\"" FP "\",\"mode\":true}",
                "{\"version\":1,\"config\":null,\"mode\":\"maintenance\"}",
                "{\"version\":1,\"config\":null,\"fingerprint\":\"" FP "\",\"mode\":\"maintenance\",\"extra\":1}",
                NULL,
        };
        for (size_t i = 0; bad[i]; i++) {
                _cleanup_free_ char *err = NULL;
                LaunchRequest r = {};
                cr_assert_lt(launch_request_parse(bad[i], strlen(bad[i]), "t", &r, &err), 0, "accepted: %s", bad[i]);
                cr_assert_not_null(err);
                cr_assert_null(r.config_path);
        }
}

/* A maintenance request round-trips; without "mode", or with "launch", it is a launch. */
Test(launch_request, maintenance_mode) {
        char tmpl[] = "/tmp/lazaret-unit-lr-XXXXXX";
        _cleanup_free_ char *err = NULL, *path = NULL;
        LaunchRequest w = { .maintenance = true }, r = {};
        const char *launch = "{\"version\":1,\"config\":null,\"fingerprint\":\"" FP "\",\"mode\":\"launch\"}";

        cr_assert_not_null(mkdtemp(tmpl));
        memcpy(w.fingerprint, FP, sizeof(FP));
        cr_assert_eq(launch_request_write(tmpl, "0123456789ab", &w, NULL, &err), 0, "%s", err ?: "");
        cr_assert_eq(launch_request_read(tmpl, "0123456789ab", &r, &err), 0, "%s", err ?: "");
        cr_assert(r.maintenance);
        cr_assert_null(r.config_path);
        w.maintenance = false;
        cr_assert_eq(launch_request_write(tmpl, "0123456789ab", &w, NULL, &err), 0, "%s", err ?: "");
        cr_assert_eq(launch_request_read(tmpl, "0123456789ab", &r, &err), 0, "%s", err ?: "");
        cr_assert_not(r.maintenance, "a launch's request replaces a maintenance one");
        cr_assert_eq(launch_request_parse(launch, strlen(launch), "t", &r, &err), 0, "%s", err ?: "");
        cr_assert_not(r.maintenance);
        cr_assert(asprintf(&path, "%s/0123456789ab.launch", tmpl) > 0);
        unlink(path);
        rmdir(tmpl);
}

Test(launch_request, nul_key_alias_named) {
        const char *t = "{\"version\":1,\"config\":null,\"config\\u0000x\":\"/evil\",\"fingerprint\":\"" FP "\"}";
        _cleanup_free_ char *err = NULL;
        LaunchRequest r = {};
        cr_assert_eq(launch_request_parse(t, strlen(t), "t", &r, &err), -EBADMSG);
        cr_assert_str_eq(err, "t: line 1, column 35: [\"config\\x00x\"]: key contains a NUL character (\\u0000)");
        cr_assert_null(r.config_path);
}
