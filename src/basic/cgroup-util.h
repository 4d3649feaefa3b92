/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Which of a profile's scope limits the kernel enforces for the sandbox:
 * systemd sets MemoryMax=, TasksMax= and CPUWeight= on every host, but they
 * take effect only where the user manager's cgroups have the memory, pids
 * and cpu controllers (on a cgroup v1 or hybrid host without delegation
 * they do not: systemd reports MemoryCurrent=[not set]).
 *
 * A controller counts when the process's cgroup for it (from
 * /proc/PID/cgroup) is the sandbox scope itself and the scope's directory
 * has the controller's limit file: memory.max / memory.limit_in_bytes,
 * pids.max, cpu.weight / cpu.shares, under cgroup_root (the cgroup2
 * mount at cgroup_root or cgroup_root/unified, the v1 hierarchies at
 * cgroup_root/NAME).
 */
typedef enum LimitControl {
        LIMIT_CONTROL_MEMORY = 1 << 0,   /* memory_max, memory_high */
        LIMIT_CONTROL_TASKS  = 1 << 1,   /* tasks_max */
        LIMIT_CONTROL_CPU    = 1 << 2,   /* cpu_weight */
        _LIMIT_CONTROL_ALL   = (1 << 3) - 1,
} LimitControl;

/* proc_cgroup: the text of /proc/PID/cgroup. *ret: the LimitControl bits in force. */
int cgroup_limits_enforced(const char *proc_cgroup, const char *cgroup_root, const char *scope, unsigned *ret);

/* The configuration names of the limits a missing control leaves unenforced, space-separated ("" for none). */
const char *limit_control_unenforced_names(unsigned enforced);
