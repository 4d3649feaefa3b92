/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "domain.h"
#include "hash.h"
#include "cleanup.h"
#include "domain-store.h"
#include "subid.h"

typedef struct Ports Ports;

/*
 * The Domain's Agent Sandbox as the coordinator sees it. Starting runs, each
 * step from the event loop, never waiting:
 *
 *   recover   stop a predecessor's scope (a user manager job), remove its
 *             runtime files (FR-7)
 *   image     the prepared lower (image.c; umoci unpack when new)
 *   bundle    config.json and the control directory (bundle.c)
 *   userns    the supervisor child in its mapped user namespace (userns.c)
 *   scope     StartTransientUnit lazaret-ID-sandbox.scope {PIDs=[child]}
 *   go        the child execs lazaret-supervisor, which starts runsc and
 *             reports READY over its control socket (supervisor-link.c)
 *
 * It reports to its owner through SandboxCallbacks, always from the loop and
 * never from inside a call the owner made: ready() once, failed() at most
 * once (before or after ready), stopped() once after sandbox_stop() returned 1.
 */
typedef struct Sandbox Sandbox;

typedef struct SandboxCallbacks {
        void (*ready)(Sandbox *sb, void *userdata);
        void (*failed)(Sandbox *sb, const char *why, void *userdata);
        void (*stopped)(Sandbox *sb, void *userdata);
        /* Optional: long work began (what, for a person), or ended (NULL). */
        void (*progress)(Sandbox *sb, const char *what, void *userdata);
} SandboxCallbacks;

typedef struct SandboxParams {
        sd_event *event;
        sd_bus *bus;
        const Domain *domain;           /* borrowed; outlives the sandbox */
        const char *runtime_dir;        /* $XDG_RUNTIME_DIR/lazaret/ID */
        SubidRange subuids, subgids;    /* what the user namespace maps to (subid_pick_for_user()) */
        DomainStore *store;             /* borrowed: the Domain Store, where each generation is recorded */
        const char *coordinator_id;     /* borrowed: who records it */
        SandboxCallbacks cb;
        void *userdata;
} SandboxParams;

/* What `runsc exec` and `runsc kill` of a session need (sandbox-exec.c). */
typedef struct SandboxRuntime {
        sd_event *event;
        const char *domain_id;
        const char *runsc;
        const char *client;             /* lazaret-runsc: runsc's exec and kill without its start-up */
        const char *root;               /* runsc --root */
        const char *container;
        const char *sessions_dir;
        const char *control_dir;
        char *const *image_env;
        const Limits *limits;           /* the profile's: every session's process gets its rlimits */
} SandboxRuntime;

/*
 * The network readiness the supervisor attested for this generation (spec
 * section 4.5), with what the coordinator derived: valid once the sandbox
 * is ready, gone with it.
 */
typedef struct SandboxNetwork {
        char policy_digest[SHA256_HEX_LEN + 1];
        int helper_pid;                 /* slirp4netns, in the supervisor's PID namespace */
        unsigned long long netns;       /* the enforcement namespace's inode */
} SandboxNetwork;

/* On failure, *ret_why (optional) may say why, for clients (e.g. runsc is not installed). */
int sandbox_new(const SandboxParams *p, Sandbox **ret, char **ret_why);
Sandbox *sandbox_free(Sandbox *sb);
DEFINE_TRIVIAL_CLEANUP_FUNC(Sandbox *, sandbox_free);

/* Begins recovery and start. < 0 only when nothing could begin. */
int sandbox_start(Sandbox *sb);
/* 1: stopping, stopped() follows; 0: nothing was left to stop (runtime files removed). */
int sandbox_stop(Sandbox *sb);

const char *sandbox_id(const Sandbox *sb);
/* The Escalation Mailbox's root directory (a tmpfs the Runtime Supervisor made, SR-10),
 * borrowed; -EBADF when escalation is disabled or the sandbox is not (yet) running. */
int sandbox_mailbox_fd(const Sandbox *sb);
/* The image's default command, or NULL when it has none. */
char **sandbox_default_command(const Sandbox *sb);
/* Valid while the sandbox runs. */
const SandboxRuntime *sandbox_runtime(const Sandbox *sb);
/* Valid while the sandbox runs. */
const SandboxNetwork *sandbox_network(const Sandbox *sb);
/* The published ports (ports.h); NULL unless the sandbox runs. */
Ports *sandbox_ports(const Sandbox *sb);
/* The network helper's API socket, which the coordinator chose (ports, denied names); NULL unless it runs. */
const char *sandbox_helper_api_socket(const Sandbox *sb);
/* The names of the profile's scope limits the kernel does not enforce here ("" for none); NULL unless it runs. */
const char *sandbox_unenforced_limits(const Sandbox *sb);
/* Bytes held by the root overlay's file store (at most the profile's root_size); -ESRCH unless it runs. */
int sandbox_root_usage(const Sandbox *sb, uint64_t *ret_used);
/* What the State Anchor had to say when this sandbox started (a persisted package database over a changed image), or NULL. */
const char *sandbox_state_notice(const Sandbox *sb);
/* What the workspace's git dirs had to say when it started (a git operation under way inside, kept names the host holds), or NULL. */
char *const *sandbox_git_notices(const Sandbox *sb);
/* The host path of a linked workspace's git dir view, as this start served it, or NULL. */
const char *sandbox_git_root(const Sandbox *sb);
/* The key of the checkout whose Domain state the running sandbox serves (checkout.h), or NULL. */
const char *sandbox_checkout_key(const Sandbox *sb);
/* Once, at the start that set another checkout's state aside: the launch's line (checkout-state.h), or NULL. */
const char *sandbox_checkout_notice(const Sandbox *sb);
/* The mount plan the sandbox was started with, as JSON (mount-plan.h); NULL unless it runs. */
const char *sandbox_mount_plan(const Sandbox *sb);
