/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * OCI runtime specifications for runsc, built with json-c. Pure: nothing is
 * written or executed here.
 *
 * The container: private PID, IPC, UTS and mount namespaces (and a network
 * namespace: a fresh one, or the prepared one at netns_path); no user
 * namespace entry and no ID mappings, because runsc already runs in the
 * Runtime Supervisor's caller-configured user namespace (SR-12); no host
 * namespace paths other than netns_path; a fixed capability set without
 * network or system administration (SR-5); noNewPrivileges.
 */

/*
 * Limits gVisor enforces inside (soft = hard; the sandbox has no
 * CAP_SYS_RESOURCE to raise them). LIMIT_INFINITY or 0 leaves one out.
 */
typedef struct OciRlimits {
        uint64_t nproc;                 /* RLIMIT_NPROC: tasks per UID */
        uint64_t as;                    /* RLIMIT_AS: bytes of address space per process */
} OciRlimits;

typedef struct OciMount {
        const char *destination;
        const char *type;               /* "bind", "tmpfs", "proc", ... */
        const char *source;
        const char *const *options;     /* NULL-terminated, may be NULL */
} OciMount;

typedef struct OciContainer {
        const char *rootfs;             /* absolute host path */
        bool rootfs_readonly;
        const char *hostname;
        char **args;                    /* the container's init */
        char **env;
        const char *cwd;
        const OciMount *mounts;         /* in addition to /proc, /dev, /sys, /tmp */
        size_t n_mounts;
        const char *netns_path;         /* NULL: a new, empty network namespace */
        uint64_t tmp_size;              /* bytes: size= of the /tmp tmpfs; 0 leaves it unbounded */
        OciRlimits rlimits;
} OciContainer;

typedef struct OciProcess {
        char **args;
        char **env;
        const char *cwd;
        bool terminal;
        uint16_t rows, cols;            /* with terminal */
        OciRlimits rlimits;
} OciProcess;

/* The capabilities every sandboxed process gets (bounding = effective = permitted). */
extern const char *const oci_capabilities[];

int oci_container_json(const OciContainer *c, char **ret);
int oci_process_json(const OciProcess *p, char **ret);
