/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "cleanup.h"
#include "macro.h"

static bool exists(const char *root, const char *hier, const char *path, const char *file) {
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s%s%s/%s", root, hier, path, file) < 0)
                return false;
        return access(p, F_OK) == 0;
}

/* The path names the scope itself: its last component is the scope's name. */
static bool is_scope(const char *path, const char *scope) {
        const char *slash = strrchr(path, '/');
        return slash && streq(slash + 1, scope);
}

static bool has_controller(const char *list, const char *name) {
        size_t n = strlen(name);

        for (const char *c = list; *c;) {
                size_t k = strcspn(c, ",");
                if (k == n && strncmp(c, name, n) == 0)
                        return true;
                c += k + (c[k] == ',');
        }
        return false;
}

int cgroup_limits_enforced(const char *proc_cgroup, const char *cgroup_root, const char *scope, unsigned *ret) {
        static const struct {
                LimitControl bit;
                const char *v1, *v1_file, *v2_file;
        } controls[] = {
                { LIMIT_CONTROL_MEMORY, "memory", "memory.limit_in_bytes", "memory.max" },
                { LIMIT_CONTROL_TASKS,  "pids",   "pids.max",              "pids.max" },
                { LIMIT_CONTROL_CPU,    "cpu",    "cpu.shares",            "cpu.weight" },
        };
        _cleanup_free_ char *text = strdup(proc_cgroup);
        const char *v2_root = NULL;
        unsigned enforced = 0;
        char *save = NULL;

        if (!text)
                return -ENOMEM;
        /* The cgroup2 hierarchy: at the root (unified), or at root/unified (hybrid). */
        if (exists(cgroup_root, "", "", "cgroup.controllers"))
                v2_root = "";
        else if (exists(cgroup_root, "/unified", "", "cgroup.controllers"))
                v2_root = "/unified";
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                const char *ctrls, *path;

                if (!c2)
                        return -EBADMSG;
                *c1 = *c2 = 0;
                ctrls = c1 + 1;
                path = c2 + 1;
                if (path[0] != '/' || strstr(path, "/.."))
                        return -EBADMSG;
                if (!is_scope(path, scope))
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(controls); i++) {
                        _cleanup_free_ char *hier = NULL;

                        if (isempty(ctrls)) {   /* "0::PATH": cgroup2 */
                                if (v2_root && exists(cgroup_root, v2_root, path, controls[i].v2_file))
                                        enforced |= controls[i].bit;
                                continue;
                        }
                        if (!has_controller(ctrls, controls[i].v1) || asprintf(&hier, "/%s", ctrls) < 0)
                                continue;
                        if (exists(cgroup_root, hier, path, controls[i].v1_file))
                                enforced |= controls[i].bit;
                }
        }
        *ret = enforced;
        return 0;
}

const char *limit_control_unenforced_names(unsigned enforced) {
        static const char *const names[_LIMIT_CONTROL_ALL + 1] = {
                [0] = "memory_max memory_high tasks_max cpu_weight",
                [LIMIT_CONTROL_MEMORY] = "tasks_max cpu_weight",
                [LIMIT_CONTROL_TASKS] = "memory_max memory_high cpu_weight",
                [LIMIT_CONTROL_CPU] = "memory_max memory_high tasks_max",
                [LIMIT_CONTROL_MEMORY | LIMIT_CONTROL_TASKS] = "cpu_weight",
                [LIMIT_CONTROL_MEMORY | LIMIT_CONTROL_CPU] = "tasks_max",
                [LIMIT_CONTROL_TASKS | LIMIT_CONTROL_CPU] = "memory_max memory_high",
                [_LIMIT_CONTROL_ALL] = "",
        };
        return names[enforced & _LIMIT_CONTROL_ALL];
}
