/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "json-util.h"
#include "macro.h"
#include "oci-spec.h"
#include "path-util.h"
#include "resource-limits.h"

/*
 * What a developer's tools need as root inside the sandbox (package managers
 * change ownership, drop to service users, bind low ports) and nothing that
 * administers the network, the system or devices.
 */
const char *const oci_capabilities[] = {
        "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
        "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_AUDIT_WRITE",
        NULL
};

/*
 * Every builder below returns -ENOMEM rather than a document with a member
 * missing: json-c would write a NULL value as null, and a failed insertion
 * leaves the member out (json-util.h). Each *_add() builds one member and
 * adds it to the object or array it is given.
 */
static int capabilities_add(json_object *p) {
        static const char *const sets[] = { "bounding", "effective", "permitted", NULL };
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        for (size_t i = 0; sets[i]; i++) {
                r = json_add_strv(o, sets[i], oci_capabilities);
                if (r < 0)
                        return r;
        }
        /* inheritable and ambient stay empty: exec'd programs get nothing extra. */
        r = json_add(o, "inheritable", json_object_new_array());
        if (r < 0)
                return r;
        r = json_add(o, "ambient", json_object_new_array());
        if (r < 0)
                return r;
        return json_add(p, "capabilities", TAKE_PTR(o));
}

static bool strv_has_entries(char **l) {
        return l && l[0];
}

static int rlimit_add(json_object *a, const char *type, uint64_t v) {
        _cleanup_json_ json_object *l = NULL;
        int r;

        if (v == 0 || v == LIMIT_INFINITY)
                return 0;
        l = json_object_new_object();
        if (!l)
                return -ENOMEM;
        r = json_add_string(l, "type", type);
        if (r < 0)
                return r;
        r = json_add_uint64(l, "hard", v);
        if (r < 0)
                return r;
        r = json_add_uint64(l, "soft", v);
        if (r < 0)
                return r;
        return json_append(a, TAKE_PTR(l));
}

static int rlimits_add(json_object *p, const OciRlimits *rl) {
        _cleanup_json_ json_object *a = json_object_new_array();
        int r;

        if (!a)
                return -ENOMEM;
        r = rlimit_add(a, "RLIMIT_NPROC", rl->nproc);
        if (r < 0)
                return r;
        r = rlimit_add(a, "RLIMIT_AS", rl->as);
        if (r < 0)
                return r;
        return json_add(p, "rlimits", TAKE_PTR(a));
}

static int user_add(json_object *p) {
        _cleanup_json_ json_object *u = json_object_new_object();
        int r;

        if (!u)
                return -ENOMEM;
        r = json_add_int64(u, "uid", 0);
        if (r < 0)
                return r;
        r = json_add_int64(u, "gid", 0);
        if (r < 0)
                return r;
        return json_add(p, "user", TAKE_PTR(u));
}

static int process_json(char **args, char **env, const char *cwd, bool terminal, uint16_t rows, uint16_t cols,
                        const OciRlimits *rl, json_object **ret) {
        _cleanup_json_ json_object *p = json_object_new_object();
        int r;

        if (!p)
                return -ENOMEM;
        r = json_add_bool(p, "terminal", terminal);
        if (r < 0)
                return r;
        if (terminal && rows > 0 && cols > 0) {
                _cleanup_json_ json_object *size = json_object_new_object();
                if (!size)
                        return -ENOMEM;
                r = json_add_int64(size, "height", rows);
                if (r < 0)
                        return r;
                r = json_add_int64(size, "width", cols);
                if (r < 0)
                        return r;
                r = json_add(p, "consoleSize", TAKE_PTR(size));
                if (r < 0)
                        return r;
        }
        r = user_add(p);
        if (r < 0)
                return r;
        r = json_add_strv(p, "args", (const char *const *) args);
        if (r < 0)
                return r;
        r = json_add_strv(p, "env", (const char *const *) env);
        if (r < 0)
                return r;
        r = json_add_string(p, "cwd", cwd ?: "/");
        if (r < 0)
                return r;
        r = capabilities_add(p);
        if (r < 0)
                return r;
        r = rlimits_add(p, rl);
        if (r < 0)
                return r;
        r = json_add_bool(p, "noNewPrivileges", true);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

static int mount_add(json_object *mounts, const char *dest, const char *type, const char *source, const char *const *options) {
        _cleanup_json_ json_object *m = json_object_new_object();
        int r;

        if (!m)
                return -ENOMEM;
        r = json_add_string(m, "destination", dest);
        if (r < 0)
                return r;
        r = json_add_string(m, "type", type);
        if (r < 0)
                return r;
        r = json_add_string(m, "source", source);
        if (r < 0)
                return r;
        if (options) {
                r = json_add_strv(m, "options", options);
                if (r < 0)
                        return r;
        }
        return json_append(mounts, TAKE_PTR(m));
}

static int namespace_add(json_object *ns, const char *type, const char *path) {
        _cleanup_json_ json_object *n = json_object_new_object();
        int r;

        if (!n)
                return -ENOMEM;
        r = json_add_string(n, "type", type);
        if (r < 0)
                return r;
        if (path) {
                r = json_add_string(n, "path", path);
                if (r < 0)
                        return r;
        }
        return json_append(ns, TAKE_PTR(n));
}

static int to_string(json_object *o, char **ret) {
        return json_to_string(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, ret);
}

int oci_process_json(const OciProcess *p, char **ret) {
        _cleanup_json_ json_object *o = NULL;
        int r;

        if (!strv_has_entries(p->args) || (p->cwd && !path_is_absolute(p->cwd)))
                return -EINVAL;
        r = process_json(p->args, p->env, p->cwd, p->terminal, p->rows, p->cols, &p->rlimits, &o);
        if (r < 0)
                return r;
        return to_string(o, ret);
}

static int root_add(json_object *o, const OciContainer *c) {
        _cleanup_json_ json_object *root = json_object_new_object();
        int r;

        if (!root)
                return -ENOMEM;
        r = json_add_string(root, "path", c->rootfs);
        if (r < 0)
                return r;
        r = json_add_bool(root, "readonly", c->rootfs_readonly);
        if (r < 0)
                return r;
        return json_add(o, "root", TAKE_PTR(root));
}

static int mounts_add(json_object *o, const OciContainer *c) {
        static const char *const dev_opts[] = { "nosuid", "strictatime", "mode=755", "size=65536k", NULL };
        static const char *const sys_opts[] = { "nosuid", "noexec", "nodev", "ro", NULL };
        const char *tmp_opts[] = { "nosuid", "nodev", "mode=1777", NULL, NULL };
        _cleanup_json_ json_object *mounts = json_object_new_array();
        char tmp_size[40];
        int r;

        if (!mounts)
                return -ENOMEM;
        r = mount_add(mounts, "/proc", "proc", "proc", NULL);
        if (r < 0)
                return r;
        r = mount_add(mounts, "/dev", "tmpfs", "tmpfs", dev_opts);
        if (r < 0)
                return r;
        r = mount_add(mounts, "/sys", "sysfs", "sysfs", sys_opts);
        if (r < 0)
                return r;
        /* gVisor's tmpfs refuses writes past size= with ENOSPC. */
        if (c->tmp_size > 0 && c->tmp_size != LIMIT_INFINITY) {
                snprintf(tmp_size, sizeof(tmp_size), "size=%llu", (unsigned long long) c->tmp_size);
                tmp_opts[3] = tmp_size;
        }
        r = mount_add(mounts, "/tmp", "tmpfs", "tmpfs", tmp_opts);
        if (r < 0)
                return r;
        /* gVisor's /dev is its own tmpfs of half the host's memory: /dev/shm
         * gets a tmpfs of its own, bounded like /tmp. */
        r = mount_add(mounts, "/dev/shm", "tmpfs", "shm", tmp_opts);
        if (r < 0)
                return r;
        for (size_t i = 0; i < c->n_mounts; i++) {
                r = mount_add(mounts, c->mounts[i].destination, c->mounts[i].type, c->mounts[i].source,
                              c->mounts[i].options);
                if (r < 0)
                        return r;
        }
        return json_add(o, "mounts", TAKE_PTR(mounts));
}

static int linux_add(json_object *o, const OciContainer *c) {
        static const char *const types[] = { "pid", "ipc", "uts", "mount", NULL };
        _cleanup_json_ json_object *linux_ = json_object_new_object(), *ns = json_object_new_array();
        int r;

        if (!linux_ || !ns)
                return -ENOMEM;
        for (size_t i = 0; types[i]; i++) {
                r = namespace_add(ns, types[i], NULL);
                if (r < 0)
                        return r;
        }
        r = namespace_add(ns, "network", c->netns_path);
        if (r < 0)
                return r;
        r = json_add(linux_, "namespaces", TAKE_PTR(ns));
        if (r < 0)
                return r;
        return json_add(o, "linux", TAKE_PTR(linux_));
}

int oci_container_json(const OciContainer *c, char **ret) {
        _cleanup_json_ json_object *o = NULL;
        json_object *v = NULL;
        int r;

        if (!path_is_absolute(c->rootfs) || !strv_has_entries(c->args))
                return -EINVAL;
        if (c->netns_path && !path_is_absolute(c->netns_path))
                return -EINVAL;
        for (size_t i = 0; i < c->n_mounts; i++)
                if (!path_is_absolute(c->mounts[i].destination) || path_has_dotdot(c->mounts[i].destination) ||
                    isempty(c->mounts[i].type) || isempty(c->mounts[i].source) ||
                    (streq(c->mounts[i].type, "bind") && !path_is_absolute(c->mounts[i].source)))
                        return -EINVAL;

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        r = json_add_string(o, "ociVersion", "1.0.2");
        if (r < 0)
                return r;
        r = process_json(c->args, c->env, c->cwd, false, 0, 0, &c->rlimits, &v);
        if (r < 0)
                return r;
        r = json_add(o, "process", v);
        if (r < 0)
                return r;
        r = root_add(o, c);
        if (r < 0)
                return r;
        r = json_add_string(o, "hostname", c->hostname ?: "lazaret");
        if (r < 0)
                return r;
        r = mounts_add(o, c);
        if (r < 0)
                return r;
        r = linux_add(o, c);
        if (r < 0)
                return r;
        return to_string(o, ret);
}
