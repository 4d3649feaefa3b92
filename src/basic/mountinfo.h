/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/*
 * /proc/self/mountinfo, as far as the Git Sentry needs it (spec C17): which
 * mounts there are, where, and which part of which file system each shows.
 * Mount points are made by whoever may mount in the user's namespace, never
 * by the sandbox, but a mount point below a workspace has a name the
 * sandbox may have chosen: the reader is strict and bounded all the same.
 */
typedef struct HostMount {
        int id;                         /* the mount ID (statx STATX_MNT_ID) */
        unsigned major, minor;          /* the file system's device: equal for every mount of one */
        char *root;                     /* the directory of that file system at the mount's root (or a
                                         * namespace file's name, not a path) */
        char *point;                    /* where it is mounted */
} HostMount;

typedef struct HostMounts {
        HostMount *m;
        size_t n;
} HostMounts;

#define MOUNTINFO_MAX (16u * 1024u * 1024u)
#define MOUNTINFO_LINES_MAX 100000u

/*
 * Parses the text of a mountinfo file into *ret (appended in order). Each
 * line: ID, parent ID, MAJOR:MINOR, root, mount point, then fields up to a
 * lone "-", which must be there. Mount points must be absolute (a root need
 * not be: a namespace file's is "net:[...]"), both with the kernel's octal
 * escapes (\040, \011, \012, \134) decoded and no other backslash.
 * -EBADMSG names nothing: the caller says which file it was.
 */
int mountinfo_parse(const char *text, size_t len, HostMounts *ret);

/* /proc/self/mountinfo, read and parsed. */
int mountinfo_read(HostMounts *ret);

void host_mounts_done(HostMounts *m);

/* The mount of the given ID, or NULL. */
const HostMount *host_mounts_find(const HostMounts *m, int id);

/* The mount ID of the file fd refers to (statx STATX_MNT_ID), or -errno. */
int fd_mount_id(int fd);

/*
 * Where the directory at abs (absolute, simplified, no symbolic link in it)
 * lies in its file system, as a path from that file system's top: the
 * mount's root joined with what abs has below the mount point. -EXDEV when
 * abs is not below the mount point (it was not reached through it).
 */
int host_mount_fs_path(const HostMount *m, const char *abs, char **ret);

/* What path (normalised, absolute) has below dir: "" for dir itself; NULL when it is not at or below it. */
const char *path_below(const char *path, const char *dir);
