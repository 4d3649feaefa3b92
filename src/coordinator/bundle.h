/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "checkout.h"
#include "domain.h"

#define SANDBOX_CONTROL_MOUNT "/run/lazaret"

/*
 * The runsc bundle of one generation: config.json in bundle_dir, the mount
 * plan (mounts.json, see mount-plan.h) and the empty staging directory the
 * supervisor mounts it on (config.json names only staged sources), and the
 * control directory (mounted read-only at /run/lazaret: the container's
 * init, terminfo entries). Plain file work, no children. *ret_plan (when
 * not NULL) is the plan as JSON, for lazaretctl status.
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
        const char *probe_bound;        /* the allowed name canary's (a test hook may change it) */
        char **ret_state_notice;        /* optional: what the State Anchor has to say at launch (anchor.h) */
        char ***ret_git_notices;        /* optional: git operations under way inside, kept names the host holds (view-git-kept.h) */
        char **ret_git_root;            /* optional: a linked workspace's git dir view's root (its host path), else NULL */
        char *ret_checkout_key;         /* optional, CHECKOUT_KEY_MAX bytes: the current checkout's key (checkout.h); "" without the view */
        char **ret_checkout_notice;     /* optional: another checkout's state at this path was set aside (checkout-state.h) */
        bool mailbox;                   /* the Escalation Mailbox's mounts (escalation.enabled) */
} BundleParams;

int bundle_write(const BundleParams *p, char **ret_plan, char **ret_error);

/*
 * Finds the host user's core.excludesFile once, by running git config and
 * waiting for it: called before the coordinator's event loop runs, so that
 * no Domain start waits for a process. A failure is kept and fails each
 * start that isolates ignored paths, with its message.
 */
void bundle_find_host_excludes(void);
