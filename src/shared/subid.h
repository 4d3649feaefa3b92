/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* Subordinate IDs the sandbox's user namespace maps to IDs 1..65536. */
#define SUBID_COUNT 65536U

typedef struct SubidRange {
        uint32_t start;
        uint32_t count;
} SubidRange;

/*
 * Picks, from the text of /etc/subuid or /etc/subgid, the lowest-starting
 * range of at least SUBID_COUNT IDs that belongs to the user, named either by
 * user name or by numeric ID (as shadow-utils accepts). Malformed lines are
 * skipped. -ENOENT when there is none.
 */
int subid_pick(const char *text, const char *user, uint32_t id, SubidRange *ret);

/* Reads the file and picks; for the calling user. */
int subid_pick_file(const char *path, const char *user, uint32_t id, SubidRange *ret);

/*
 * SR-12: checks the text of /proc/PID/uid_map or gid_map, as the kernel
 * reports it, against the one mapping Lazaret asks for: exactly the lines
 * "0 ID 1" and "1 START SUBID_COUNT", in any order. -EPERM otherwise.
 */
int subid_map_check(const char *text, uint32_t id, const SubidRange *range);

/* Reads /proc/PID/FILE ("uid_map" or "gid_map") and checks it. */
int subid_map_check_pid(pid_t pid, const char *file, uint32_t id, const SubidRange *range);

/*
 * A spawn() child hook for a process in a caller-configured user namespace:
 * it unshares CLONE_NEWUSER, writes 'u' to sync_fd, waits for 'g' on go_fd
 * (the parent writes the maps in between), closes both, and becomes root of
 * the namespace with no supplementary groups. userdata: a UsernsHook.
 */
typedef struct UsernsHook {
        int sync_fd;
        int go_fd;
} UsernsHook;

int userns_child_hook(void *userdata);
