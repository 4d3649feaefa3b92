/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "oci-spec.h"
#include "resource-limits.h"

static json_object *parse(const char *s) {
        json_object *o = json_tokener_parse(s);
        cr_assert_not_null(o, "not JSON: %s", s);
        return o;
}

static json_object *get(json_object *o, const char *key) {
        json_object *v = NULL;
        cr_assert(json_object_object_get_ex(o, key, &v), "missing key %s", key);
        return v;
}

Test(oci, container_has_private_namespaces_and_no_user_namespace) {
        static const char *const ro[] = { "rbind", "ro", NULL };
        OciMount mounts[] = {
                { "/workspace", "bind", "/home/u/proj", (const char *const[]) { "rbind", "rw", NULL } },
                { "/run/lazaret", "bind", "/run/user/1000/lazaret/x/control", ro },
        };
        OciContainer c = {
                .rootfs = "/data/rootfs", .rootfs_readonly = true, .hostname = "lz",
                .args = (char *[]) { "/run/lazaret/init", NULL }, .env = (char *[]) { "PATH=/bin", NULL },
                .cwd = "/", .mounts = mounts, .n_mounts = 2,
        };
        _cleanup_free_ char *s = NULL;
        _cleanup_json_ json_object *o = NULL;
        json_object *ns, *proc, *caps, *bounding;
        bool seen[5] = {};

        cr_assert_eq(oci_container_json(&c, &s), 0);
        o = parse(s);
        ns = get(get(o, "linux"), "namespaces");
        for (size_t i = 0; i < json_object_array_length(ns); i++) {
                json_object *n = json_object_array_get_idx(ns, i), *path;
                const char *t = json_object_get_string(get(n, "type"));
                cr_assert_str_neq(t, "user", "no nested user namespace (SR-12)");
                cr_assert_str_neq(t, "cgroup", "no cgroup namespace entry");
                cr_assert_not(json_object_object_get_ex(n, "path", &path), "no host namespace path (SR-12)");
                if (strcmp(t, "pid") == 0) seen[0] = true;
                if (strcmp(t, "ipc") == 0) seen[1] = true;
                if (strcmp(t, "uts") == 0) seen[2] = true;
                if (strcmp(t, "mount") == 0) seen[3] = true;
                if (strcmp(t, "network") == 0) seen[4] = true;
        }
        for (size_t i = 0; i < 5; i++)
                cr_assert(seen[i], "namespace %zu missing", i);
        cr_assert_not(json_object_object_get_ex(get(o, "linux"), "uidMappings", NULL));
        cr_assert_not(json_object_object_get_ex(get(o, "linux"), "gidMappings", NULL));

        proc = get(o, "process");
        cr_assert(json_object_get_boolean(get(proc, "noNewPrivileges")));
        caps = get(proc, "capabilities");
        bounding = get(caps, "bounding");
        for (size_t i = 0; i < json_object_array_length(bounding); i++) {
                const char *cap = json_object_get_string(json_object_array_get_idx(bounding, i));
                cr_assert(strcmp(cap, "CAP_NET_ADMIN") && strcmp(cap, "CAP_SYS_ADMIN") && strcmp(cap, "CAP_NET_RAW") &&
                          strcmp(cap, "CAP_SYS_PTRACE") && strcmp(cap, "CAP_MKNOD") && strcmp(cap, "CAP_SYS_MODULE"),
                          "capability %s must not be granted", cap);
        }
        cr_assert_eq(json_object_array_length(get(caps, "ambient")), 0);
        cr_assert(json_object_get_boolean(get(get(o, "root"), "readonly")));
        cr_assert_str_eq(json_object_get_string(get(get(o, "root"), "path")), "/data/rootfs");
        cr_assert_eq(json_object_array_length(get(o, "mounts")), 7);
}

Test(oci, network_namespace_path_when_given) {
        OciContainer c = {
                .rootfs = "/r", .args = (char *[]) { "/init", NULL }, .netns_path = "/proc/123/ns/net",
        };
        _cleanup_free_ char *s = NULL;
        cr_assert_eq(oci_container_json(&c, &s), 0);
        cr_assert_not_null(strstr(s, "\"path\":\"/proc/123/ns/net\""), "%s", s);
}

Test(oci, refuses_bad_input) {
        _cleanup_free_ char *s = NULL;
        OciMount bad = { "relative", "bind", "/x", NULL };
        OciMount dotdot = { "/a/../etc", "bind", "/x", NULL };
        OciMount relsrc = { "/a", "bind", "x", NULL };
        OciContainer c = { .rootfs = "/r", .args = (char *[]) { "/init", NULL } };

        c.mounts = &bad, c.n_mounts = 1;
        cr_assert_eq(oci_container_json(&c, &s), -EINVAL);
        c.mounts = &dotdot;
        cr_assert_eq(oci_container_json(&c, &s), -EINVAL);
        c.mounts = &relsrc;
        cr_assert_eq(oci_container_json(&c, &s), -EINVAL);
        c.n_mounts = 0;
        c.rootfs = "r";
        cr_assert_eq(oci_container_json(&c, &s), -EINVAL);
        c.rootfs = "/r";
        c.args = (char *[]) { NULL };
        cr_assert_eq(oci_container_json(&c, &s), -EINVAL);
        cr_assert_null(s);
}

Test(oci, process_with_terminal) {
        OciProcess p = { .args = (char *[]) { "/bin/sh", "-l", NULL }, .env = (char *[]) { "TERM=xterm", NULL },
                         .cwd = "/workspace", .terminal = true, .rows = 40, .cols = 120 };
        _cleanup_free_ char *s = NULL;
        _cleanup_json_ json_object *o = NULL;

        cr_assert_eq(oci_process_json(&p, &s), 0);
        o = parse(s);
        cr_assert(json_object_get_boolean(get(o, "terminal")));
        cr_assert_eq(json_object_get_int(get(get(o, "consoleSize"), "height")), 40);
        cr_assert_str_eq(json_object_get_string(get(o, "cwd")), "/workspace");
        cr_assert_eq(json_object_get_int(get(get(o, "user"), "uid")), 0);
}

static json_object *find_mount(json_object *o, const char *dest) {
        json_object *mounts = get(o, "mounts");
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i);
                if (strcmp(json_object_get_string(get(m, "destination")), dest) == 0)
                        return m;
        }
        return NULL;
}

static uint64_t rlimit_of(json_object *proc, const char *type, bool *found) {
        json_object *rl = get(proc, "rlimits");
        *found = false;
        for (size_t i = 0; i < json_object_array_length(rl); i++) {
                json_object *l = json_object_array_get_idx(rl, i);
                if (strcmp(json_object_get_string(get(l, "type")), type) == 0) {
                        cr_assert_eq(json_object_get_uint64(get(l, "soft")), json_object_get_uint64(get(l, "hard")),
                                     "soft and hard %s differ", type);
                        *found = true;
                        return json_object_get_uint64(get(l, "hard"));
                }
        }
        return 0;
}

Test(oci, limits_in_container_spec) {
        OciContainer c = {
                .rootfs = "/r", .args = (char *[]) { "/init", NULL },
                .tmp_size = 8ULL << 20, .rlimits = { .nproc = 64, .as = 1ULL << 30 },
        };
        _cleanup_free_ char *s = NULL;
        _cleanup_json_ json_object *o = NULL;
        json_object *tmp, *opts;
        bool found, has_size = false;

        cr_assert_eq(oci_container_json(&c, &s), 0);
        o = parse(s);
        tmp = find_mount(o, "/tmp");
        cr_assert_not_null(tmp);
        cr_assert_str_eq(json_object_get_string(get(tmp, "type")), "tmpfs");
        opts = get(tmp, "options");
        for (size_t i = 0; i < json_object_array_length(opts); i++)
                if (strcmp(json_object_get_string(json_object_array_get_idx(opts, i)), "size=8388608") == 0)
                        has_size = true;
        cr_assert(has_size, "%s", s);
        /* /dev/shm is a tmpfs of its own with the same bound, not gVisor's /dev. */
        tmp = find_mount(o, "/dev/shm");
        cr_assert_not_null(tmp, "%s", s);
        cr_assert_str_eq(json_object_get_string(get(tmp, "type")), "tmpfs");
        cr_assert_not_null(strstr(json_object_to_json_string(get(tmp, "options")), "\"size=8388608\""), "%s", s);
        cr_assert_eq(rlimit_of(get(o, "process"), "RLIMIT_NPROC", &found), 64);
        cr_assert(found);
        cr_assert_eq(rlimit_of(get(o, "process"), "RLIMIT_AS", &found), 1ULL << 30);
        cr_assert(found);
}

Test(oci, infinite_limits_are_left_out) {
        OciContainer c = {
                .rootfs = "/r", .args = (char *[]) { "/init", NULL },
                .tmp_size = LIMIT_INFINITY, .rlimits = { .nproc = LIMIT_INFINITY, .as = LIMIT_INFINITY },
        };
        OciProcess p = { .args = (char *[]) { "/bin/sh", NULL }, .rlimits = { .nproc = 100, .as = LIMIT_INFINITY } };
        _cleanup_free_ char *s = NULL, *ps = NULL;
        _cleanup_json_ json_object *o = NULL, *po = NULL;
        bool found;

        cr_assert_eq(oci_container_json(&c, &s), 0);
        o = parse(s);
        cr_assert_null(strstr(json_object_to_json_string(get(find_mount(o, "/tmp"), "options")), "size="), "%s", s);
        (void) rlimit_of(get(o, "process"), "RLIMIT_NPROC", &found);
        cr_assert_not(found);

        /* Every session's process gets the same limits as the init. */
        cr_assert_eq(oci_process_json(&p, &ps), 0);
        po = parse(ps);
        cr_assert_eq(rlimit_of(po, "RLIMIT_NPROC", &found), 100);
        cr_assert(found);
        (void) rlimit_of(po, "RLIMIT_AS", &found);
        cr_assert_not(found);
}
