/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON builders and the reader under injected allocation failure. This
 * binary is linked with --wrap for every json-c call (and strdup, strndup,
 * realloc) the libraries make (tests/unit/meson.build), so each one can
 * be made to fail as json-c reports it: NULL for a new value or a string, -1
 * for an insertion that did not happen. Failing the nth call, for every n up
 * to the number of calls a build makes, must give -ENOMEM and no document:
 * never a document with a member missing or turned into null.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bus-names.h"
#include "cleanup.h"
#include "json-util.h"
#include "launch-request.h"
#include "mount-plan.h"
#include "oci-spec.h"
#include "resource-limits.h"

static long fail_at = -1;       /* the call (from 0) that fails; -1: none */
static long calls;              /* counted while armed */
static bool failed;             /* the armed call was reached */

static bool inject(void) {
        if (fail_at < 0)
                return false;
        if (calls++ != fail_at)
                return false;
        failed = true;
        return true;
}

static void arm(long n) {
        fail_at = n;
        calls = 0;
        failed = false;
}

static void disarm(void) {
        fail_at = -1;
}

#define WRAP(ret, name, params, args, failure)                  \
        ret __real_##name params;                               \
        ret __wrap_##name params;                               \
        ret __wrap_##name params {                              \
                if (inject())                                   \
                        return failure;                         \
                return __real_##name args;                      \
        }

WRAP(json_object *, json_object_new_object, (void), (), NULL)
WRAP(json_object *, json_object_new_array, (void), (), NULL)
WRAP(json_object *, json_object_new_string, (const char *s), (s), NULL)
WRAP(json_object *, json_object_new_string_len, (const char *s, int n), (s, n), NULL)
WRAP(json_object *, json_object_new_boolean, (json_bool b), (b), NULL)
WRAP(json_object *, json_object_new_int, (int32_t v), (v), NULL)
WRAP(json_object *, json_object_new_int64, (int64_t v), (v), NULL)
WRAP(json_object *, json_object_new_uint64, (uint64_t v), (v), NULL)
WRAP(json_object *, json_object_new_double_s, (double v, const char *s), (v, s), NULL)
WRAP(int, json_object_object_add, (json_object *o, const char *k, json_object *v), (o, k, v), -1)
WRAP(int, json_object_object_add_ex, (json_object *o, const char *k, json_object *v, unsigned opts), (o, k, v, opts), -1)
WRAP(int, json_object_array_add, (json_object *a, json_object *v), (a, v), -1)
WRAP(const char *, json_object_to_json_string_ext, (json_object *o, int flags), (o, flags), NULL)
WRAP(char *, strdup, (const char *s), (s), NULL)
WRAP(char *, strndup, (const char *s, size_t n), (s, n), NULL)
WRAP(void *, realloc, (void *p, size_t n), (p, n), NULL)

/*
 * Builds with each call failing in turn until one build reaches no failure
 * point; returns how many points there were. Every failed build must
 * return -ENOMEM and leave *ret alone; the full build must equal expected.
 */
static long each_failure(int (*build)(const void *input, char **ret), const void *input, const char *expected) {
        for (long n = 0;; n++) {
                char *s = NULL;
                int r;

                arm(n);
                r = build(input, &s);
                disarm();
                if (!failed) {
                        cr_assert_eq(r, 0, "the build without a failure failed: %d", r);
                        cr_assert_str_eq(s, expected);
                        free(s);
                        return n;
                }
                cr_assert_eq(r, -ENOMEM, "failure point %ld: returned %d instead of -ENOMEM%s%s", n, r,
                             s ? ", with the document:\n" : "", s ?: "");
                cr_assert_null(s, "failure point %ld: a document was returned", n);
        }
}

static int build_container(const void *input, char **ret) {
        return oci_container_json(input, ret);
}

static int build_process(const void *input, char **ret) {
        return oci_process_json(input, ret);
}

Test(json_alloc, oci_container_fails_closed) {
        static const char *const opts[] = { "rbind", "ro", NULL };
        char *args[] = { (char *) "/run/lazaret/init", (char *) "--", (char *) "/bin/sh", NULL };
        char *env[] = { (char *) "PATH=/usr/bin:/bin", (char *) "HOME=/root", NULL };
        const OciMount mounts[] = {
                { .destination = "/workspace", .type = "bind", .source = "/home/u/w", .options = opts },
                { .destination = "/cache", .type = "tmpfs", .source = "tmpfs" },
        };
        const OciContainer c = {
                .rootfs = "/data/rootfs", .rootfs_readonly = true, .args = args, .env = env, .cwd = "/workspace",
                .mounts = mounts, .n_mounts = 2, .netns_path = "/proc/self/ns/net", .tmp_size = 1 << 20,
                .rlimits = { .nproc = 4096, .as = 1ULL << 33 },
        };
        _cleanup_free_ char *expected = NULL;

        cr_assert_eq(oci_container_json(&c, &expected), 0);
        /* What must not go missing is there. */
        cr_assert_not_null(strstr(expected, "\"noNewPrivileges\":true"));
        cr_assert_not_null(strstr(expected, "\"bounding\":["));
        cr_assert_not_null(strstr(expected, "\"path\":\"/proc/self/ns/net\""));
        cr_assert_null(strstr(expected, "null"));

        long points = each_failure(build_container, &c, expected);
        /* Each capability of three sets is an allocation and an insertion. */
        cr_assert_gt(points, 6 * 11, "only %ld failure points: is the json-c wrapping in effect?", points);
}

Test(json_alloc, oci_process_fails_closed) {
        char *args[] = { (char *) "/bin/bash", (char *) "-l", NULL };
        char *env[] = { (char *) "TERM=xterm", NULL };
        const OciProcess p = {
                .args = args, .env = env, .cwd = "/w", .terminal = true, .rows = 24, .cols = 80,
                .rlimits = { .nproc = 100 },
        };
        _cleanup_free_ char *expected = NULL;

        cr_assert_eq(oci_process_json(&p, &expected), 0);
        cr_assert_not_null(strstr(expected, "\"noNewPrivileges\":true"));
        cr_assert_not_null(strstr(expected, "\"consoleSize\":{"));
        cr_assert_gt(each_failure(build_process, &p, expected), 6 * 11);
}

/* The reader too: a failed allocation is -ENOMEM, never a tree with something left out. */
static int build_parsed(const void *input, char **ret) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        r = json_parse_strict(input, strlen(input), &o, &err);
        /* What the test does with the result is not under test. */
        disarm();
        if (r < 0) {
                cr_assert_null(o);
                return r;
        }
        cr_assert_not_null(o);
        *ret = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        return *ret ? 0 : -ENOMEM;
}

Test(json_alloc, reader_fails_closed) {
        const char *doc =
                "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"command\": [\"/bin/sh\", \"-c\", \"x\"],\n"
                "  \"env\": {\"A\": \"caf\\u00e9\"}, \"directfs\": true, \"limits\": {\"tasks\": 512, \"cpu\": 1.5}}},\n"
                "  \"a long key that makes the path buffer grow past its first allocation, and then some more\": [null, false]}";
        const char *expected =
                "{\"profiles\":{\"dev\":{\"image\":\"builtin:default\",\"command\":[\"/bin/sh\",\"-c\",\"x\"],"
                "\"env\":{\"A\":\"caf\xc3\xa9\"},\"directfs\":true,\"limits\":{\"tasks\":512,\"cpu\":1.5}}},"
                "\"a long key that makes the path buffer grow past its first allocation, and then some more\":[null,false]}";

        cr_assert_gt(each_failure(build_parsed, doc, expected), 30);
}

static const char *runtime_dir;

static int build_launch_request(const void *input, char **ret) {
        _cleanup_free_ char *err = NULL, *path = NULL;
        char buf[512];
        ssize_t n;
        int r, fd;

        r = launch_request_write(runtime_dir, "0123456789ab", input, NULL, &err);
        disarm();
        if (r < 0) {
                cr_assert_not_null(err, "a failure without a message");
                return r;
        }
        cr_assert(asprintf(&path, "%s/0123456789ab%s", runtime_dir, LAUNCH_REQUEST_SUFFIX) > 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        cr_assert_gt(n, 0);
        buf[n] = 0;
        cr_assert_eq(unlink(path), 0);
        *ret = strdup(buf);
        return 0;
}

Test(json_alloc, launch_request_fails_closed) {
        char dir[] = "/tmp/test-json-alloc.XXXXXX";
        const LaunchRequest with = { .config_path = (char *) "/etc/lazaret.json",
                                     .fingerprint = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" };
        const LaunchRequest without = { .fingerprint = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff" };

        cr_assert_not_null(mkdtemp(dir));
        runtime_dir = dir;
        cr_assert_gt(each_failure(build_launch_request, &with,
                                  "{\"version\":1,\"config\":\"/etc/lazaret.json\",\"fingerprint\":"
                                  "\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}"), 4);
        cr_assert_gt(each_failure(build_launch_request, &without,
                                  "{\"version\":1,\"config\":null,\"fingerprint\":"
                                  "\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}"), 3);
        cr_assert_eq(rmdir(dir), 0, "a temporary file was left behind");
}

static int build_mount_plan(const void *input, char **ret) {
        return mount_plan_to_string(input, ret);
}

/* The plan the coordinator hands the supervisor: a lost "read_only" would make a mount writable. */
Test(json_alloc, mount_plan_fails_closed) {
        _cleanup_(mount_plan_done) MountPlan p = {};
        _cleanup_free_ char *expected = NULL, *error = NULL;
        const MountEntry entries[] = {
                { .part = MOUNT_PART_ROOT, .kind = MOUNT_BIND, .destination = (char *) "/", .source = (char *) "/img/rootfs",
                  .id = { .dev = 1, .ino = 2, .directory = true } },
                { .part = MOUNT_PART_WORKSPACE, .kind = MOUNT_BIND, .destination = (char *) "/workspace",
                  .source = (char *) "/home/u/p", .id = { .dev = 1, .ino = 3, .directory = true } },
                { .part = MOUNT_PART_CONTROL, .kind = MOUNT_BIND, .destination = (char *) "/run/lazaret",
                  .source = (char *) "/run/user/1/lazaret/x/control", .read_only = true,
                  .id = { .dev = 4, .ino = 5, .directory = true } },
        };

        cr_assert_eq(mount_plan_init(&p), 0);
        for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
                cr_assert_eq(mount_plan_add(&p, &entries[i], &error), 0, "%s", error ?: "");
        cr_assert_eq(mount_plan_to_string(&p, &expected), 0);
        cr_assert_not_null(strstr(expected, "\"read_only\":true"));
        cr_assert_gt(each_failure(build_mount_plan, &p, expected), 7 * 5);
}
