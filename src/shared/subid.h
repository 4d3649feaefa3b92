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

#define SUBID_UID_FILE "/etc/subuid"
#define SUBID_GID_FILE "/etc/subgid"

/*
 * The user's name from the passwd database, for subid_pick_ranges(): shadow
 * utils look ranges up by name. -ESRCH when UID has none.
 */
int subid_user_name(uid_t uid, char **ret);

/*
 * The ranges a user's namespace maps to: subid_pick() on the text of
 * uid_path for uid and of gid_path for gid, user naming both (NULL: only the
 * numeric IDs match); a missing file has no range. On failure, *ret_why
 * (optional, set on failure only) says what is missing and how to add it.
 */
int subid_pick_ranges(const char *uid_path, const char *gid_path, const char *user, uid_t uid, gid_t gid,
                      SubidRange *ret_uids, SubidRange *ret_gids, char **ret_why);

/* subid_pick_ranges() on SUBID_UID_FILE and SUBID_GID_FILE. */
int subid_pick_for_user(const char *user, uid_t uid, gid_t gid, SubidRange *ret_uids, SubidRange *ret_gids,
                        char **ret_why);

/*
 * The argv of TOOL (newuidmap or newgidmap, found with find_program()) that
 * writes our mapping into the user namespace of pid:
 *     TOOL PID 0 ID 1 1 START SUBID_COUNT
 * -ENOENT when TOOL is not installed.
 */
int subid_mapper_argv(const char *tool, pid_t pid, uint32_t id, const SubidRange *range, char ***ret);

/*
 * SR-12: checks the text of /proc/PID/uid_map or gid_map, as the kernel
 * reports it, against the one mapping Lazaret asks for: exactly the lines
 * "0 ID 1" and "1 START SUBID_COUNT", in any order. -EPERM otherwise.
 */
int subid_map_check(const char *text, uint32_t id, const SubidRange *range);

/* Reads /proc/PID/FILE ("uid_map" or "gid_map") and checks it. */
int subid_map_check_pid(pid_t pid, const char *file, uint32_t id, const SubidRange *range);

/*
 * A child hook for a process in a caller-configured user namespace: it
 * unshares CLONE_NEWUSER, writes 'u' to sync_fd, waits for 'g' on go_fd
 * (the parent writes the maps in between), closes both, and becomes root of
 * the namespace with no supplementary groups. userdata: a UsernsHook. It
 * waits for the parent, so its child is started with spawn_async().
 */
typedef struct UsernsHook {
        int sync_fd;
        int go_fd;
} UsernsHook;

int userns_child_hook(void *userdata);
