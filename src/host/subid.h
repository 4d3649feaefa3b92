/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Subordinate IDs the sandbox's user namespace maps to IDs 1..65536. */
#define SUBID_COUNT 65536U

typedef struct SubidRange {
        uint32_t start;
        uint32_t count;
} SubidRange;

/* One range as a subid source lists it (libsubid's unsigned longs). */
typedef struct SubidSpan {
        uint64_t start;
        uint64_t count;
} SubidSpan;

/*
 * Picks, from the ranges a subid source lists for a user, the
 * lowest-starting one of at least SUBID_COUNT IDs whose first SUBID_COUNT
 * IDs fit in 32 bits. -ENOENT when there is none.
 */
int subid_pick(const SubidSpan *spans, size_t n_spans, SubidRange *ret);

#define SUBID_UID_FILE "/etc/subuid"
#define SUBID_GID_FILE "/etc/subgid"
#define SUBID_NSSWITCH_FILE "/etc/nsswitch.conf"

/*
 * The subid source that nsswitch.conf text names, read as libsubid reads
 * it: the first entry of the first "subid:" line. *ret is NULL when that is
 * "files" or there is no such line (libsubid then reads SUBID_UID_FILE and
 * SUBID_GID_FILE), else the module name ("sss" for libsubid_sss.so). Only
 * for messages: the lookup itself is libsubid's.
 */
int subid_nss_source(const char *nsswitch_text, char **ret);

/*
 * The one line that says a user has no range (uids, gids: which one is
 * missing), where it was looked for (nss_source as subid_nss_source()
 * returns it) and how to add one (usermod --add-subuids/--add-subgids).
 */
int subid_missing_message(const char *who, const char *nss_source, bool uids, bool gids, char **ret);

/*
 * The user's name from the passwd database, for subid_pick_for_user():
 * subordinate IDs are looked up by name. -ESRCH when UID has none.
 */
int subid_user_name(uid_t uid, char **ret);

/*
 * The ranges a user's namespace maps to: subid_pick() on what libsubid
 * lists for the user (subid_get_uid_ranges(), subid_get_gid_ranges()), so
 * that an nsswitch "subid:" source such as SSSD is asked as newuidmap asks
 * it. user NULL: the numeric UID is the owner (shadow's files accept it).
 * On failure, *ret_why (optional, set on failure only) is one line that
 * says what is missing, where it was looked for and how to add it.
 * -ENOENT: no sufficient range. libsubid keeps global state: call from one
 * thread.
 */
int subid_pick_for_user(const char *user, uid_t uid, SubidRange *ret_uids, SubidRange *ret_gids, char **ret_why);

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
