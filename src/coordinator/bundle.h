/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "domain.h"

#define SANDBOX_CONTROL_MOUNT "/run/lazaret"

/*
 * The runsc bundle of one generation: config.json in bundle_dir, and the
 * control directory (mounted read-only at /run/lazaret: the container's
 * init, terminfo entries) that it refers to. Plain file work, no children.
 */
typedef struct BundleParams {
        const Domain *domain;
        const char *bundle_dir;
        const char *control_dir;
        const char *rootfs;
        const char *netns_path;         /* the enforcement namespace the supervisor binds there */
        char **env;
        unsigned canary_port;           /* where the init's attestation probe finds the canaries */
        const char *probe_denied;       /* the denied canary's address (a test hook may change it) */
} BundleParams;

int bundle_write(const BundleParams *p, char **ret_error);
