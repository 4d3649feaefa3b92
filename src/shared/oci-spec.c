/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cleanup.h"
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

static json_object *strv_json(const char *const *l) {
        json_object *a = json_object_new_array();
        for (; l && *l; l++)
                json_object_array_add(a, json_object_new_string(*l));
        return a;
}

static json_object *capabilities_json(void) {
        json_object *o = json_object_new_object();
        static const char *const sets[] = { "bounding", "effective", "permitted", NULL };

        for (size_t i = 0; sets[i]; i++)
                json_object_object_add(o, sets[i], strv_json(oci_capabilities));
        /* inheritable and ambient stay empty: exec'd programs get nothing extra. */
        json_object_object_add(o, "inheritable", json_object_new_array());
        json_object_object_add(o, "ambient", json_object_new_array());
        return o;
}

static bool strv_has_entries(char **l) {
        return l && l[0];
}

static void rlimit_add(json_object *a, const char *type, uint64_t v) {
        json_object *l;

        if (v == 0 || v == LIMIT_INFINITY)
                return;
        l = json_object_new_object();
        json_object_object_add(l, "type", json_object_new_string(type));
        json_object_object_add(l, "hard", json_object_new_uint64(v));
        json_object_object_add(l, "soft", json_object_new_uint64(v));
        json_object_array_add(a, l);
}

static json_object *rlimits_json(const OciRlimits *rl) {
        json_object *a = json_object_new_array();
        rlimit_add(a, "RLIMIT_NPROC", rl->nproc);
        rlimit_add(a, "RLIMIT_AS", rl->as);
        return a;
}

static json_object *process_json(char **args, char **env, const char *cwd, bool terminal, uint16_t rows, uint16_t cols,
                                 const OciRlimits *rl) {
        json_object *p = json_object_new_object(), *user = json_object_new_object();

        json_object_object_add(p, "terminal", json_object_new_boolean(terminal));
        if (terminal && rows > 0 && cols > 0) {
                json_object *size = json_object_new_object();
                json_object_object_add(size, "height", json_object_new_int(rows));
                json_object_object_add(size, "width", json_object_new_int(cols));
                json_object_object_add(p, "consoleSize", size);
        }
        json_object_object_add(user, "uid", json_object_new_int(0));
        json_object_object_add(user, "gid", json_object_new_int(0));
        json_object_object_add(p, "user", user);
        json_object_object_add(p, "args", strv_json((const char *const *) args));
        json_object_object_add(p, "env", strv_json((const char *const *) env));
        json_object_object_add(p, "cwd", json_object_new_string(cwd ?: "/"));
        json_object_object_add(p, "capabilities", capabilities_json());
        json_object_object_add(p, "rlimits", rlimits_json(rl));
        json_object_object_add(p, "noNewPrivileges", json_object_new_boolean(true));
        return p;
}

static json_object *mount_json(const char *dest, const char *type, const char *source, const char *const *options) {
        json_object *m = json_object_new_object();
        json_object_object_add(m, "destination", json_object_new_string(dest));
        json_object_object_add(m, "type", json_object_new_string(type));
        json_object_object_add(m, "source", json_object_new_string(source));
        if (options)
                json_object_object_add(m, "options", strv_json(options));
        return m;
}

static char *to_string(json_object *o) {
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        return s ? strdup(s) : NULL;
}

int oci_process_json(const OciProcess *p, char **ret) {
        _cleanup_json_ json_object *o = NULL;
        char *s;

        if (!strv_has_entries(p->args) || (p->cwd && !path_is_absolute(p->cwd)))
                return -EINVAL;
        o = process_json(p->args, p->env, p->cwd, p->terminal, p->rows, p->cols, &p->rlimits);
        s = to_string(o);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int oci_container_json(const OciContainer *c, char **ret) {
        static const char *const dev_opts[] = { "nosuid", "strictatime", "mode=755", "size=65536k", NULL };
        static const char *const sys_opts[] = { "nosuid", "noexec", "nodev", "ro", NULL };
        const char *tmp_opts[] = { "nosuid", "nodev", "mode=1777", NULL, NULL };
        char tmp_size[40];
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *root, *mounts, *linux_, *ns;
        char *s;

        if (!path_is_absolute(c->rootfs) || !strv_has_entries(c->args))
                return -EINVAL;
        if (c->netns_path && !path_is_absolute(c->netns_path))
                return -EINVAL;
        for (size_t i = 0; i < c->n_mounts; i++)
                if (!path_is_absolute(c->mounts[i].destination) || path_has_dotdot(c->mounts[i].destination) ||
                    isempty(c->mounts[i].type) || isempty(c->mounts[i].source) ||
                    (streq(c->mounts[i].type, "bind") && !path_is_absolute(c->mounts[i].source)))
                        return -EINVAL;

        json_object_object_add(o, "ociVersion", json_object_new_string("1.0.2"));
        json_object_object_add(o, "process", process_json(c->args, c->env, c->cwd, false, 0, 0, &c->rlimits));

        root = json_object_new_object();
        json_object_object_add(root, "path", json_object_new_string(c->rootfs));
        json_object_object_add(root, "readonly", json_object_new_boolean(c->rootfs_readonly));
        json_object_object_add(o, "root", root);
        json_object_object_add(o, "hostname", json_object_new_string(c->hostname ?: "lazaret"));

        mounts = json_object_new_array();
        json_object_array_add(mounts, mount_json("/proc", "proc", "proc", NULL));
        json_object_array_add(mounts, mount_json("/dev", "tmpfs", "tmpfs", dev_opts));
        json_object_array_add(mounts, mount_json("/sys", "sysfs", "sysfs", sys_opts));
        /* gVisor's tmpfs refuses writes past size= with ENOSPC. */
        if (c->tmp_size > 0 && c->tmp_size != LIMIT_INFINITY) {
                snprintf(tmp_size, sizeof(tmp_size), "size=%llu", (unsigned long long) c->tmp_size);
                tmp_opts[3] = tmp_size;
        }
        json_object_array_add(mounts, mount_json("/tmp", "tmpfs", "tmpfs", tmp_opts));
        for (size_t i = 0; i < c->n_mounts; i++)
                json_object_array_add(mounts, mount_json(c->mounts[i].destination, c->mounts[i].type,
                                                         c->mounts[i].source, c->mounts[i].options));
        json_object_object_add(o, "mounts", mounts);

        linux_ = json_object_new_object();
        ns = json_object_new_array();
        static const char *const types[] = { "pid", "ipc", "uts", "mount", NULL };
        for (size_t i = 0; types[i]; i++) {
                json_object *n = json_object_new_object();
                json_object_object_add(n, "type", json_object_new_string(types[i]));
                json_object_array_add(ns, n);
        }
        {
                json_object *n = json_object_new_object();
                json_object_object_add(n, "type", json_object_new_string("network"));
                if (c->netns_path)
                        json_object_object_add(n, "path", json_object_new_string(c->netns_path));
                json_object_array_add(ns, n);
        }
        json_object_object_add(linux_, "namespaces", ns);
        json_object_object_add(o, "linux", linux_);

        s = to_string(o);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
