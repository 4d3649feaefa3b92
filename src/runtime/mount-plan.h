/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "oci-spec.h"

/*
 * The mount plan: one ordered list of everything mounted into a sandbox,
 * each entry recording the part of Lazaret that added it. Parts add their
 * entries in mount order; the plan refuses, with one line naming both
 * parts, a mount at the same place as an earlier one or one that would hide
 * an earlier one (lie above it), and a mount below an earlier one unless
 * the later part declared that it nests in the earlier part (the Git
 * Sentry's masks nest in the workspace, /etc/resolv.conf in volumes).
 *
 * The kinds:
 *   MOUNT_BIND        a host file or directory, opened and checked by fd by
 *                     the part that adds it; the plan keeps the identity
 *                     (device, inode, type) of what was checked. The
 *                     Runtime Supervisor opens the source again in its own
 *                     mount namespace without following any symlink, insists
 *                     on that identity, and binds what it opened (a detached
 *                     copy of the mount tree, from the fd) onto a staged
 *                     path below a tmpfs only it can reach. runsc is given
 *                     only staged paths, so no source can change between
 *                     the check and runsc's open (spec C19).
 *   MOUNT_SUPERVISOR  a file system the supervisor mounts itself at a staged
 *                     path (a FUSE view, an overlay, a size-limited tmpfs):
 *                     fstype, source and data as for mount(2); runsc binds
 *                     the staged path like a MOUNT_BIND's.
 *   MOUNT_VIEW        the workspace served through the workspace view
 *                     (lazaret-view, a FUSE file system): the source is the
 *                     host directory, checked and identified as a bind's;
 *                     data holds the view's arguments (JSON: its Domain
 *                     state directory, the protected paths). The supervisor
 *                     opens the source as for a bind, mounts the FUSE
 *                     connection at the staged path and hands both to the
 *                     view, a supervised helper.
 *   MOUNT_SANDBOX     a file system gVisor makes inside (/proc, /dev, /sys,
 *                     /tmp): the OCI builder renders these itself, the plan
 *                     holds them so that nothing else lands on them unasked.
 *
 * Pure: nothing is opened, mounted or executed here.
 */

typedef enum MountPart {
        MOUNT_PART_SYSTEM,              /* /proc, /dev, /sys */
        MOUNT_PART_TMP,                 /* /tmp */
        MOUNT_PART_ROOT,                /* the image's root file system, "/" */
        MOUNT_PART_WORKSPACE,
        MOUNT_PART_GIT_SENTRY,
        MOUNT_PART_CONTROL,             /* /run/lazaret */
        MOUNT_PART_VOLUME,
        MOUNT_PART_RESOLVER,            /* /etc/resolv.conf, /etc/hosts, /etc/hostname */
        MOUNT_PART_WORKSPACE_VIEW,
        MOUNT_PART_STATE_ANCHOR,
        MOUNT_PART_MAILBOX,
        _MOUNT_PART_MAX,
} MountPart;

#define MOUNT_PART_BIT(p) (1u << (p))

typedef enum MountKind {
        MOUNT_BIND,
        MOUNT_SUPERVISOR,
        MOUNT_SANDBOX,
        MOUNT_VIEW,
        _MOUNT_KIND_MAX,
} MountKind;

/* What the part that checked a bind source saw, by fd. */
typedef struct MountIdentity {
        uint64_t dev;
        uint64_t ino;
        bool directory;                 /* else a regular file */
} MountIdentity;

typedef struct MountEntry {
        MountPart part;
        MountKind kind;
        char *destination;              /* inside the sandbox, normalised */
        char *source;                   /* BIND: host path; SUPERVISOR, SANDBOX: mount(2)'s source */
        char *fstype;                   /* SUPERVISOR, SANDBOX */
        char *data;                     /* SUPERVISOR: mount(2)'s data; may be NULL */
        bool read_only;
        MountIdentity id;               /* BIND */
        unsigned nests_in;              /* MOUNT_PART_BIT()s this entry may lie below */
} MountEntry;

typedef struct MountPlan {
        MountEntry *entries;
        size_t n_entries;
} MountPlan;

/* The limits of a plan the supervisor accepts (a peer's input). */
#define MOUNT_PLAN_MAX_ENTRIES 256
#define MOUNT_PLAN_DOC_MAX (1024 * 1024)

/* In the runsc bundle: the plan the coordinator writes and the supervisor
 * stages from, and the directory it stages on. */
#define MOUNT_PLAN_FILE "mounts.json"
#define MOUNT_PLAN_STAGE_DIR "stage"

/* Its staged path below the staging directory: "<stage>/<index>". */
#define MOUNT_PLAN_STAGE_NAME_MAX 24

const char *mount_part_to_string(MountPart p);
int mount_part_from_string(const char *s);
const char *mount_kind_to_string(MountKind k);
int mount_kind_from_string(const char *s);

/* An empty plan that already holds the MOUNT_SANDBOX entries the OCI builder renders. */
int mount_plan_init(MountPlan *p);
void mount_plan_done(MountPlan *p);

/*
 * Adds e (copied) at the end, after the checks above. destination must be
 * absolute without ".."; it is normalised. MOUNT_PART_ROOT is "/" only,
 * at most once, and nothing is judged against it. -EEXIST (same place),
 * -EPERM (hides, or nests undeclared), -EINVAL (malformed) with a message.
 */
int mount_plan_add(MountPlan *p, const MountEntry *e, char **ret_error);

/* A MOUNT_BIND entry for a source checked as fd (its identity is read with fstat()). */
int mount_plan_add_bind_fd(MountPlan *p, MountPart part, const char *destination, const char *source, int fd,
                           bool read_only, unsigned nests_in, char **ret_error);

/* Drops the entries from n on (a part's half-added mounts). */
void mount_plan_truncate(MountPlan *p, size_t n);

/* The entry at destination, or NULL. */
const MountEntry *mount_plan_find(const MountPlan *p, const char *destination);

/*
 * Whether entry i's mount point, when runsc makes it, may land in the
 * image's own tree. runsc's gofer binds every MOUNT_BIND, MOUNT_SUPERVISOR
 * and MOUNT_VIEW entry onto the root on the host, in plan order, making a
 * missing destination (and its parents) first in whatever is mounted there
 * by then, following symbolic links inside the root. That is the root
 * unless an earlier such entry holds the destination; gVisor's own mounts
 * (/tmp, /proc, ...) are made inside the sandbox and hold nothing on the
 * host. A State Anchor's overlay holds its points in its upper, but its
 * lower is the image's own directory, where a symbolic link can lead runsc
 * back into the root: those count too. False for the root and gVisor's
 * own entries.
 */
bool mount_plan_point_in_image(const MountPlan *p, size_t i);

/* The staged path of entry i: "<stage_dir>/<i>". NULL on OOM. */
char *mount_plan_staged_path(const char *stage_dir, size_t i);

/*
 * The OCI mounts for runsc, in order: MOUNT_BIND and MOUNT_SUPERVISOR
 * entries as binds of their staged paths (rbind plus ro or rw). The
 * MOUNT_SANDBOX and MOUNT_PART_ROOT entries are not among them (the
 * builder renders those). *ret_strings owns what the mounts point to.
 */
int mount_plan_oci_mounts(const MountPlan *p, const char *stage_dir, OciMount **ret, size_t *ret_n,
                          char ***ret_strings);

/*
 * The plan as JSON: {"entries":[{"part","kind","destination","source",
 * "fstype","data","read_only","type","dev","ino","nests_in":[...]}...]}.
 * It is what the supervisor stages from and what lazaretctl status --json
 * shows. mount_plan_from_json() reads it back strictly (every key known,
 * each once, every value of its type and range) and re-applies the
 * checks of mount_plan_add().
 */
int mount_plan_to_json(const MountPlan *p, json_object **ret);
int mount_plan_to_string(const MountPlan *p, char **ret);
int mount_plan_from_json(const char *text, size_t len, MountPlan *ret, char **ret_error);
