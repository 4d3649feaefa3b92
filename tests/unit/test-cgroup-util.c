/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-util.h"
#include "cleanup.h"
#include "fs-util.h"
#include "path-util.h"

static char root[] = "/tmp/lazaret-unit-cgroup-XXXXXX";

static void setup(void) {
        cr_assert_not_null(mkdtemp(root));
}

static void teardown(void) {
        cr_assert_eq(rm_rf(root), 0);
}

/* An empty file at root/rel, with the directories above it. */
static void mk(const char *rel) {
        _cleanup_free_ char *p = path_join(root, rel);
        char *slash;

        cr_assert_not_null(p);
        slash = strrchr(p, '/');
        *slash = 0;
        cr_assert_eq(mkdir_parents(p, 0755), 0, "%s", p);
        *slash = '/';
        cr_assert_eq(write_file(p, "", 0644), 0, "%s", p);
}

static unsigned judge(const char *text) {
        unsigned e = 99;
        cr_assert_eq(cgroup_limits_enforced(text, root, "lazaret-x-sandbox.scope", &e), 0, "%s", text);
        return e;
}

#define SCOPE "/user.slice/user-1000.slice/user@1000.service/app.slice/lazaret-x-sandbox.scope"

Test(cgroup, unified_with_delegation, .init = setup, .fini = teardown) {
        mk("cgroup.controllers");
        mk(SCOPE "/memory.max");
        mk(SCOPE "/pids.max");
        mk(SCOPE "/cpu.weight");
        cr_assert_eq(judge("0::" SCOPE "\n"), LIMIT_CONTROL_MEMORY | LIMIT_CONTROL_TASKS | LIMIT_CONTROL_CPU);
        cr_assert_str_eq(limit_control_unenforced_names(_LIMIT_CONTROL_ALL), "");
}

Test(cgroup, unified_without_cpu, .init = setup, .fini = teardown) {
        mk("cgroup.controllers");
        mk(SCOPE "/memory.max");
        mk(SCOPE "/pids.max");
        cr_assert_eq(judge("0::" SCOPE "\n"), LIMIT_CONTROL_MEMORY | LIMIT_CONTROL_TASKS);
        cr_assert_str_eq(limit_control_unenforced_names(LIMIT_CONTROL_MEMORY | LIMIT_CONTROL_TASKS), "cpu_weight");
}

/* The hybrid layout of the test machines: v2 without controllers, v1 not delegated. */
Test(cgroup, hybrid_not_delegated, .init = setup, .fini = teardown) {
        mk("unified/cgroup.controllers");
        mk("memory/process_api/1/memory.limit_in_bytes");
        mk("pids/pids.max");
        mk("cpu/cpu.shares");
        cr_assert_eq(judge("9:name=systemd:" SCOPE "\n8:pids:/\n4:memory:/process_api/1\n1:cpu:/\n0::" SCOPE "\n"), 0);
        cr_assert_str_eq(limit_control_unenforced_names(0), "memory_max memory_high tasks_max cpu_weight");
}

Test(cgroup, v1_delegated, .init = setup, .fini = teardown) {
        mk("memory" SCOPE "/memory.limit_in_bytes");
        mk("pids" SCOPE "/pids.max");
        mk("cpu,cpuacct" SCOPE "/cpu.shares");
        cr_assert_eq(judge("8:pids:" SCOPE "\n4:memory:" SCOPE "\n2:cpu,cpuacct:" SCOPE "\n"),
                     LIMIT_CONTROL_MEMORY | LIMIT_CONTROL_TASKS | LIMIT_CONTROL_CPU);
        /* A cgroup that is not the scope itself does not count, whatever files it has. */
        cr_assert_eq(judge("4:memory:/user.slice\n"), 0);
}

Test(cgroup, malformed, .init = setup, .fini = teardown) {
        unsigned e = 7;
        cr_assert_eq(cgroup_limits_enforced("garbage\n", root, "s.scope", &e), -EBADMSG);
        cr_assert_eq(cgroup_limits_enforced("0::relative\n", root, "s.scope", &e), -EBADMSG);
        cr_assert_eq(cgroup_limits_enforced("0::/a/../s.scope\n", root, "s.scope", &e), -EBADMSG);
        cr_assert_eq(e, 7, "a failure must not write the result");
}
