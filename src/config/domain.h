/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "host-context.h"

/*
 * Domain identity and layout (FR-1, SR-10, SR-11).
 *
 *   Domain ID    = first 12 hex digits of SHA-256("<profile>:<canonical workspace>")
 *   Storage Root = data_root                                  0700
 *   profile dir  = <data_root>/profiles/<profile>             0700  {profile_dir}
 *   Domain Root  = <data_root>/domains/<id>                   0700  {domain_dir}
 *   record       = <Domain Root>/domain.json                  0600
 *   runtime dir  = $XDG_RUNTIME_DIR/lazaret/<id>              0700
 */

/* Below the Storage Root: images (the built-in one, and prepared lowers). */
#define STORAGE_IMAGES_DIR "images"
#define STORAGE_BUILTIN_IMAGE_DIR STORAGE_IMAGES_DIR "/default"
#define STORAGE_PREPARED_DIR STORAGE_IMAGES_DIR "/prepared"

#define DOMAIN_ID_LEN 12
#define DOMAIN_RECORD_NAME "domain.json"
#define DOMAIN_RECORD_MAX 65536
/* In the Domain Root: the State Anchor's layers (state-anchor.h), and where a reset moves them before they are deleted (<Domain Root>/state-trash/<random>/). */
#define STATE_ANCHOR_DIR "state"
#define STATE_ANCHOR_TRASH_DIR "state-trash"

int domain_id_compute(const char *profile, const char *canonical_workspace, char ret[DOMAIN_ID_LEN + 1]);
bool domain_id_is_valid(const char *s);

/*
 * The default workspace: the top level of the git working tree containing dir
 * (the nearest ancestor holding a ".git" entry), else dir itself. Canonical.
 */
int workspace_discover(const char *dir, char **ret);

/* realpath(3) of an existing directory. */
int workspace_canonicalize(const char *path, char **ret);

typedef struct Domain {
        const Config *config;   /* borrowed */
        const Profile *profile; /* borrowed */
        char *workspace;        /* canonical */
        char id[DOMAIN_ID_LEN + 1];
        HostContext host;       /* a copy of what the caller collected */
        char *profile_dir;
        char *domain_dir;
} Domain;

Domain *domain_free(Domain *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Domain *, domain_free);
#define _cleanup_domain_ _cleanup_(domain_freep)

/*
 * Binds a profile of c, which must be resolved (config_resolve(); -ESTALE
 * otherwise), to a workspace. workspace NULL means the default
 * (workspace_discover() of hc->cwd). Keeps a copy of hc: the exposure checks
 * judge with the same inputs. Creates nothing.
 */
int domain_new(const Config *c, const HostContext *hc, const char *profile, const char *workspace,
               Domain **ret, char **ret_error);

typedef struct ResolvedVolume {
        char *host;             /* expanded and normalised; domain_check_sources() proves it has no symlink */
        char *container;
        VolumeMode mode;
        bool force;
        int fd;                 /* O_PATH, from domain_check_sources()'s walk; -EBADF before it or when missing */
} ResolvedVolume;

void resolved_volumes_free(ResolvedVolume *v, size_t n);

/* Expands the profile's volume host paths for this Domain. */
int domain_resolve_volumes(const Domain *d, ResolvedVolume **ret, size_t *ret_n, char **ret_error);

/* The image layout directory for the Domain's profile (oci: path expanded). */
int domain_resolve_image(const Domain *d, char **ret_dir, char **ret_tag, char **ret_error);

/*
 * SR-2/SR-3/SR-11: refuses a Domain whose mounts would expose Lazaret's own
 * trusted state to the sandbox: the configuration file (and the default
 * configuration location, where a sandbox could plant one), the Storage Root
 * outside this Domain's own directories, and the runtime directory. Also
 * refuses a configured runsc binary inside the workspace or any volume, a
 * volume inside or around the workspace or another volume, and (unless the
 * volume says "force": true) one at, in or around a location that holds
 * credentials or starts programs on the host: ~/.ssh, ~/.gnupg, systemd and
 * autostart directories, shell start-up files, $XDG_RUNTIME_DIR and the bus
 * socket (from the HostContext).
 * Compares paths as strings; domain_check_sources() proves they are real.
 */
int domain_check_exposure(const Domain *d, const ResolvedVolume *v, size_t n, char **ret_error);

/*
 * Holes 3 and 4: opens the workspace, the data root and every volume source
 * from "/" one component at a time without following anything (path_walk()),
 * refusing a symbolic link anywhere on the way (naming the resolved path to
 * use instead) and any component that another user could change: each must
 * belong to root or to the caller and be writable by nobody else, except a
 * sticky directory above the source. A missing data root is fine (it is
 * created 0700). With create, missing volume sources inside {profile_dir} or
 * {domain_dir} are created 0700 on the way; without, they are fine.
 * The walk's O_PATH fds are what is mounted (the mount plan records their
 * identity): each volume's in v[i].fd, the workspace's in
 * *ret_workspace_fd (when not NULL).
 */
int domain_check_sources(const Domain *d, ResolvedVolume *v, size_t n, bool create, int *ret_workspace_fd,
                         char **ret_error);

/* domain_resolve_volumes(), domain_check_exposure() and domain_check_sources(). */
int domain_resolve_mounts(const Domain *d, bool create, ResolvedVolume **ret, size_t *ret_n, int *ret_workspace_fd,
                          char **ret_error);

/* Everything above in order: the check every Domain passes before it starts. */
int domain_validate(const Domain *d, char **ret_error);

/*
 * Creates the Storage Root, profile dir and Domain Root (0700, owned by the
 * caller, no symlinks followed), then writes the domain record atomically or
 * verifies the one that is there (a record naming another profile or
 * workspace is an error: -EBADMSG).
 */
int domain_storage_prepare(const Domain *d, char **ret_error);

typedef struct DomainRecord {
        char id[DOMAIN_ID_LEN + 1];
        char *profile;
        char *workspace;
} DomainRecord;

void domain_record_done(DomainRecord *r);

/* Reads and checks <data_root>/domains/<id>/domain.json (the ID must match its contents). */
int domain_record_load(const char *data_root, const char *id, DomainRecord *ret, char **ret_error);

/* $XDG_RUNTIME_DIR/lazaret (from hc), created 0700 after checking $XDG_RUNTIME_DIR is ours. */
int runtime_dir_prepare(const HostContext *hc, char **ret, char **ret_error);
/* The same path without creating anything. */
int runtime_dir_path(const HostContext *hc, char **ret);
