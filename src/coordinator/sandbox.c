/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox's start, supervision and stop; see sandbox.h for the steps.
 */
#include <errno.h>
#include <time.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>
#include <systemd/sd-id128.h>

#include "anchor.h"
#include "storage-catalog.h"
#include "bundle.h"
#include "checkout.h"
#include "bus-job.h"
#include "bus-names.h"
#include "cgroup-util.h"
#include "cleanup.h"
#include "escalation-proto.h"
#include "fs-util.h"
#include "image.h"
#include "log.h"
#include "net-policy.h"
#include "path-util.h"
#include "ports.h"
#include "fsmonitor-proto.h"
#include "view-policy.h"
#include "sandbox.h"
#include "strv.h"
#include "subid.h"
#include "supervisor-link.h"
#include "test-hooks.h"
#include "userns.h"
#include "util.h"

#define SCOPE_JOB_TIMEOUT_USEC (20ULL * 1000 * 1000)
/* After this long a stop job is helped along with SIGKILL. */
#define SCOPE_STOP_KILL_USEC (10ULL * 1000 * 1000)

/* In the order a start goes through them: comparisons rely on it. */
typedef enum SandboxState {
        SANDBOX_NEW,
        SANDBOX_RECOVERING,
        SANDBOX_PREPARING,
        SANDBOX_MAPPING,
        SANDBOX_SCOPING,
        SANDBOX_STARTING,
        SANDBOX_RUNNING,
        SANDBOX_STOPPING,
        SANDBOX_STOPPED,
} SandboxState;

#if ENABLE_TEST_HOOKS
/*
 * Test hooks for the network attestation, in test builds only (test-hooks.h):
 * LAZARET_TEST_NETWORK_FAULT in the coordinator's environment (the user
 * manager's), which nothing in the sandbox can reach. Each can only make the
 * attestation fail:
 *   deny-on-lo        the supervisor moves the deny routes to lo after
 *                     Linux's read-back (gVisor does not import them);
 *   denied-elsewhere  the probe's "denied" connection goes to the helper's
 *                     gateway instead of the denied canary, so it never
 *                     reaches the deny link (the witness must refuse);
 *   no-name-canary    with host rules, the supervisor starts lazaret-egress
 *                     without the name canary's socket, so the helper
 *                     refuses the allowed name canary as any name no rule
 *                     allows (the probe's report must refuse);
 *   name-bound-elsewhere  with host rules, the probe is told that the
 *                     allowed name canary is bound to the pool's second
 *                     address, not its first (the probe must find that
 *                     the name resolved elsewhere, its report refuse).
 */
typedef enum NetworkFault {
        NETWORK_FAULT_NONE,
        NETWORK_FAULT_DENY_ON_LO,
        NETWORK_FAULT_DENIED_ELSEWHERE,
        NETWORK_FAULT_NO_NAME_CANARY,
        NETWORK_FAULT_NAME_BOUND_ELSEWHERE,
} NetworkFault;
#endif

struct Sandbox {
        sd_event *event;
        sd_bus *bus;
        const Domain *domain;
        SandboxCallbacks cb;
        void *userdata;

        char id[DOMAIN_ID_LEN + 24];    /* runsc container ID: lz-ID-RANDOM */
        char scope[UNIT_NAME_MAX];
        char *scope_path;               /* its object path on the user manager */
        char service[UNIT_NAME_MAX];
        char *runsc;
        char *runtime_dir;
        char *runsc_root;               /* runsc state (its control sockets too) */
        char *runsc_client;             /* lazaret-runsc */
        char *bundle;
        char *control_dir;              /* mounted read-only at /run/lazaret */
        char *mount_plan;               /* JSON (mount-plan.h), from the bundle */
        unsigned limits_enforced;       /* LimitControl bits in force for the scope (cgroup-util.h) */
        char *sessions_dir;             /* process specs of sessions */
        bool escalation;                /* escalation.enabled: the plan has the Escalation Mailbox */
        int mailbox_fd;                 /* its root directory, from the supervisor (MAILBOX); -EBADF before */
        char *overlay_dir;              /* the root overlay's file store */
        char *state_notice;             /* what the State Anchor had to say at this start, or NULL */
        char **git_notices;             /* what the view's git state had to say at this start (view-git-kept.h), or NULL */
        char *git_root;                 /* a linked workspace's git dir view's root at this start, or NULL */
        char checkout_key[CHECKOUT_KEY_MAX]; /* the checkout whose Domain state this start serves (checkout.h), or "" */
        char *checkout_notice;          /* another checkout's state was set aside at this start, or NULL */
        DomainStore *store;             /* borrowed */
        char *coordinator_id;
        uint64_t generation;            /* in the Domain Store; 0 before it is recorded */
        char *netns_path;               /* the enforcement namespace, bound by the supervisor */
        char *policy_path;              /* the derived policy's canonical bytes */
        char *slirp4netns;
        char *slirp_api;                /* slirp4netns --api-socket, ours to ask (published ports) */
        Ports *ports;                   /* the published ports; while running */
        size_t profile_ports_left;      /* the profile's publish_ports still under way before ready() */
        SubidRange subuids, subgids;
        char policy_digest[SHA256_HEX_LEN + 1];
        unsigned canary_port;           /* the attestation canaries' port, random per generation */
        bool network_attested;
#if ENABLE_TEST_HOOKS
        NetworkFault network_fault;     /* read once, in step_bundle() */
#endif
        SandboxNetwork network;
        PreparedImage image;
        SandboxRuntime runtime;

        SandboxState state;
        bool failed;                    /* failed() was reported */
        /* The supervisor's process is released once both are done (maybe_release()). */
        bool mapped;                    /* its user namespace has our ID maps */
        bool scoped;                    /* it is in the sandbox scope */
        ImagePrep *image_prep;
        UsernsChild *child;
        SupervisorLink *link;
        BusJob *job;
        sd_event_source *kill_timer;
        sd_bus_slot *scope_match;       /* PropertiesChanged of the scope unit */
        sd_bus_slot *result_query;      /* Get Result, after the sandbox ended by itself */
        char *pending_why;              /* the failure reported unless the scope's Result says OOM */
};

int sandbox_mailbox_fd(const Sandbox *sb) {
        return sb ? sb->mailbox_fd : -EBADF;
}

const char *sandbox_id(const Sandbox *sb) {
        return sb ? sb->id : "";
}

char **sandbox_default_command(const Sandbox *sb) {
        return sb && sb->image.cmd && sb->image.cmd[0] ? sb->image.cmd : NULL;
}

const SandboxNetwork *sandbox_network(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? &sb->network : NULL;
}

const char *sandbox_state_notice(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? sb->state_notice : NULL;
}

char *const *sandbox_git_notices(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? sb->git_notices : NULL;
}

const char *sandbox_git_root(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? sb->git_root : NULL;
}

const char *sandbox_checkout_key(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING && sb->checkout_key[0] ? sb->checkout_key : NULL;
}

const char *sandbox_checkout_notice(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? sb->checkout_notice : NULL;
}

const char *sandbox_unenforced_limits(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? limit_control_unenforced_names(sb->limits_enforced) : NULL;
}

/*
 * Which of the scope's limits the kernel enforces here, from the
 * supervisor's cgroups (it runs in the scope); one warning line for what
 * it does not, naming the limits and why.
 */
static void judge_limits(Sandbox *sb) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        const char *missing;
        int r;

        sb->limits_enforced = 0;
        if (asprintf(&path, "/proc/%d/cgroup", (int) userns_child_pid(sb->child)) < 0)
                return;
        r = read_full_file(path, 64 * 1024, &text, NULL);
        if (r >= 0)
                r = cgroup_limits_enforced(text, "/sys/fs/cgroup", sb->scope, &sb->limits_enforced);
        if (r < 0)
                log_warning_errno(r, "Cannot tell which limits the kernel enforces for %s", sb->scope);
        missing = limit_control_unenforced_names(sb->limits_enforced);
        if (!isempty(missing))
                log_warning("Not enforced on this machine (the user manager's cgroups lack the controller): %s; "
                            "tmp_size, processes, address_space and root_size are, inside the sandbox", missing);
}

const char *sandbox_mount_plan(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? sb->mount_plan : NULL;
}

/*
 * What the root overlay's file store holds: the tmpfs the supervisor put
 * over the overlay directory in its own mount namespace, reached through
 * its /proc/PID/root (on the host the directory is empty, and runsc's file
 * in it is unlinked).
 */
int sandbox_root_usage(const Sandbox *sb, uint64_t *ret_used) {
        _cleanup_free_ char *path = NULL;
        struct statfs st;

        if (!sb || sb->state != SANDBOX_RUNNING || !sb->child)
                return -ESRCH;
        if (asprintf(&path, "/proc/%d/root%s", (int) userns_child_pid(sb->child), sb->overlay_dir) < 0)
                return -ENOMEM;
        if (statfs(path, &st) < 0)
                return -errno;
        if (st.f_type != TMPFS_MAGIC)
                return -ENOMEDIUM;
        *ret_used = (uint64_t) (st.f_blocks - st.f_bfree) * (uint64_t) st.f_bsize;
        return 0;
}

const SandboxRuntime *sandbox_runtime(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? &sb->runtime : NULL;
}

Sandbox *sandbox_free(Sandbox *sb) {
        if (!sb)
                return NULL;
        image_prep_free(sb->image_prep);
        supervisor_link_free(sb->link);
        userns_child_free(sb->child);
        bus_job_free(sb->job);
        sd_event_source_disable_unref(sb->kill_timer);
        sd_bus_slot_unref(sb->scope_match);
        sd_bus_slot_unref(sb->result_query);
        free(sb->pending_why);
        prepared_image_done(&sb->image);
        free(sb->runsc);
        free(sb->scope_path);
        free(sb->runtime_dir);
        free(sb->runsc_root);
        free(sb->runsc_client);
        free(sb->bundle);
        free(sb->control_dir);
        free(sb->mount_plan);
        free(sb->sessions_dir);
        safe_close(sb->mailbox_fd);
        free(sb->overlay_dir);
        free(sb->state_notice);
        strv_free(sb->git_notices);
        free(sb->git_root);
        free(sb->checkout_notice);
        free(sb->coordinator_id);
        free(sb->netns_path);
        free(sb->policy_path);
        free(sb->slirp4netns);
        free(sb->slirp_api);
        ports_free(sb->ports);
        free(sb);
        return NULL;
}

int sandbox_new(const SandboxParams *p, Sandbox **ret, char **ret_why) {
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        sd_id128_t rnd;
        int r;

        sb = calloc(1, sizeof(Sandbox));
        if (!sb)
                return -ENOMEM;
        sb->event = p->event;
        sb->bus = p->bus;
        sb->domain = p->domain;
        sb->cb = p->cb;
        sb->userdata = p->userdata;
        sb->mailbox_fd = -EBADF;

        r = sd_id128_randomize(&rnd);
        if (r < 0)
                return r;
        /* A fresh container ID per generation: stale runsc state never collides. */
        snprintf(sb->id, sizeof(sb->id), "lz-%s-%.16s", p->domain->id, SD_ID128_TO_STRING(rnd));
        sb->canary_port = 20000 + (unsigned) (rnd.qwords[1] % 20000);
        domain_scope_name(p->domain->id, sb->scope);
        r = sd_bus_path_encode("/org/freedesktop/systemd1/unit", sb->scope, &sb->scope_path);
        if (r < 0)
                return r;
        domain_unit_name(p->domain->id, "service", sb->service);

        if (p->domain->config->runsc) {
                sb->runsc = strdup(p->domain->config->runsc);
                if (!sb->runsc)
                        return -ENOMEM;
        } else {
                r = find_program("runsc", &sb->runsc);
                if (r == -ENOENT)
                        return errorf(ret_why, r, "runsc (gVisor) is not installed; install the runsc package");
                if (r < 0)
                        return r;
        }
        sb->store = p->store;
        sb->coordinator_id = p->coordinator_id ? strdup(p->coordinator_id) : NULL;
        sb->subuids = p->subuids;
        sb->subgids = p->subgids;
        sb->runtime_dir = strdup(p->runtime_dir);
        sb->runsc_root = path_join(p->runtime_dir, "runsc");
        sb->runsc_client = path_join(LIBEXECDIR, "lazaret-runsc");
        sb->bundle = path_join(p->runtime_dir, "bundle");
        sb->control_dir = path_join(p->runtime_dir, "control");
        sb->sessions_dir = path_join(p->runtime_dir, "sessions");
        sb->overlay_dir = path_join(p->domain->domain_dir, "overlay");
        sb->netns_path = path_join(p->runtime_dir, "netns");
        sb->slirp_api = path_join(p->runtime_dir, "slirp4netns.sock");
        sb->escalation = p->domain->config->escalation_enabled;
        sb->policy_path = path_join(sb->bundle ?: "", "network-policy");
        if (!sb->runtime_dir || !sb->runsc_root || !sb->runsc_client || !sb->bundle || !sb->control_dir || !sb->sessions_dir || !sb->overlay_dir ||
            !sb->netns_path || !sb->policy_path || !sb->slirp_api)
                return -ENOMEM;
        r = find_program("slirp4netns", &sb->slirp4netns);
        if (r == -ENOENT)
                return errorf(ret_why, r, "slirp4netns is not installed; install the slirp4netns package");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(sb);
        return 0;
}

/* ------------------------------------------------------------ reporting */

/* Only from event handlers. */
static void sandbox_fail(Sandbox *sb, const char *why) {
        if (sb->failed || sb->state >= SANDBOX_STOPPING)
                return;
        sb->failed = true;
        log_error("Sandbox failed: %s", why);
        sb->cb.failed(sb, why, sb->userdata);
}

/* ----------------------------------------------------------------- scope */

typedef struct ScopeArgs {
        const char *scope;
        const char *description;
        const char *service;
        pid_t pid;
        const Limits *limits;
} ScopeArgs;

static int append_scope(sd_bus_message *m, void *userdata) {
        const ScopeArgs *a = userdata;
        int r;

        /* KillSignal=SIGKILL among them: a runsc-sandbox may leave SIGTERM
         * pending for the whole stop timeout. */
        r = bus_append_scope_begin(m, a->scope, a->description, a->pid);
        /* If the coordinator's service goes, for whatever reason, the sandbox
         * goes too, once the service's own stop is over. (No After=: the
         * service is still activating, and the scope's start job would wait
         * for it.) */
        if (r >= 0)
                r = bus_append_scope_bound_to(m, a->service);
        /* The limits gVisor cannot enforce (C18). UINT64_MAX is systemd's
         * "infinity" too. Enforced where the host delegates the memory, pids
         * and cpu controllers to the user manager; set either way. */
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "MemoryHigh", "t", a->limits->memory_high);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "MemoryMax", "t", a->limits->memory_max);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "TasksMax", "t", a->limits->tasks_max);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "CPUWeight", "t", a->limits->cpu_weight);
        if (r >= 0)
                r = bus_append_scope_end(m);
        return r;
}

/* ------------------------------------------------------------ memory limit */

static const char *oom_reason(Sandbox *sb, char *buf, size_t size) {
        char b[LIMIT_STRING_MAX];

        snprintf(buf, size, "the sandbox exceeded its memory limit (MemoryMax=%s)",
                 limit_format_size(sb->domain->profile->limits.memory_max, b));
        return buf;
}

/* The scope's Result, as systemd reports it: "oom-kill" when the kernel killed in it for MemoryMax. */
static void scope_result(Sandbox *sb, const char *result) {
        char buf[128];

        if (streq_ptr(result, "oom-kill")) {
                free(TAKE_PTR(sb->pending_why));
                /* Logged even when a teardown is already under way (the sessions may have ended first). */
                if (sb->failed || sb->state >= SANDBOX_STOPPING)
                        log_error("%s: %s", sb->scope, oom_reason(sb, buf, sizeof(buf)));
                sandbox_fail(sb, oom_reason(sb, buf, sizeof(buf)));
        }
}

static int on_scope_properties(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Sandbox *sb = userdata;
        const char *iface;
        int r;

        r = sd_bus_message_read(m, "s", &iface);
        if (r < 0 || !streq(iface, "org.freedesktop.systemd1.Scope"))
                return 0;
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *key, *v = NULL;

                r = sd_bus_message_read(m, "s", &key);
                if (r < 0)
                        break;
                if (streq(key, "Result")) {
                        r = sd_bus_message_read(m, "v", "s", &v);
                        if (r >= 0)
                                scope_result(sb, v);
                        return 0;       /* sb may be failed now; read nothing more */
                }
                r = sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        return 0;
}

static int watch_scope(Sandbox *sb) {
        return sd_bus_match_signal_async(sb->bus, &sb->scope_match, "org.freedesktop.systemd1", sb->scope_path,
                                         "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                         on_scope_properties, NULL, sb);
}

static int on_result_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Sandbox *sb = userdata;
        _cleanup_free_ char *why = TAKE_PTR(sb->pending_why);
        const char *v = NULL;

        sb->result_query = sd_bus_slot_unref(sb->result_query);
        if (!sd_bus_message_is_method_error(reply, NULL) && sd_bus_message_read(reply, "v", "s", &v) >= 0)
                scope_result(sb, v);
        if (why)
                sandbox_fail(sb, why);
        return 0;
}

/*
 * The sandbox ended by itself: before reporting why, ask the scope whether
 * the kernel killed in it for its memory limit, so that the reason says so.
 */
static void sandbox_ended(Sandbox *sb, const char *why) {
        int r = 0;

        if (sb->failed || sb->state >= SANDBOX_STOPPING || sb->result_query)
                return;
        if (!(sb->pending_why = strdup(why)))
                r = -ENOMEM;
        if (r >= 0)
                r = sd_bus_call_method_async(sb->bus, &sb->result_query, "org.freedesktop.systemd1", sb->scope_path,
                                             "org.freedesktop.DBus.Properties", "Get", on_result_reply, sb, "ss",
                                             "org.freedesktop.systemd1.Scope", "Result");
        if (r < 0) {
                free(TAKE_PTR(sb->pending_why));
                sandbox_fail(sb, why);
        }
}

/* ----------------------------------------------------------------- steps */

static void step_image(Sandbox *sb);
static void step_userns(Sandbox *sb);
static void finish_stop(Sandbox *sb);

static void on_recovered(BusJob *j, const char *result, const sd_bus_error *error, void *userdata) {
        Sandbox *sb = userdata;
        int r;

        sb->job = bus_job_free(sb->job);
        /* Only a scope that is gone may be followed by a new generation. */
        if (!streq(result, "done") && !streq(result, "no-such-unit")) {
                log_error("Stopping the previous %s ended with \"%s\"%s%s", sb->scope, result,
                          error ? ": " : "", error ? strempty(error->message) : "");
                sandbox_fail(sb, "cannot stop the sandbox scope of a previous run (see the log)");
                return;
        }
        /* FR-7: whatever a killed predecessor left is removed before anything new starts. */
        r = rm_rf(sb->runtime_dir);
        if (r < 0 && r != -ENOENT) {
                log_error_errno(r, "Cannot remove stale runtime files in %s", sb->runtime_dir);
                sandbox_fail(sb, "cannot remove the runtime files of a previous run (see the log)");
                return;
        }
        (void) rm_rf(sb->overlay_dir);
        anchor_release(sb->domain);
        step_image(sb);
}

int sandbox_start(Sandbox *sb) {
        int r;

        if (sb->state != SANDBOX_NEW)
                return -EBUSY;
        /* A predecessor's scope: its processes are not assumed gone. */
        sb->state = SANDBOX_RECOVERING;
        r = bus_job_start(sb->bus, "StopUnit", bus_append_unit_replace, sb->scope, SCOPE_JOB_TIMEOUT_USEC,
                          on_recovered, sb, &sb->job);
        if (r < 0)
                return log_error_errno(r, "Cannot ask the user manager to stop %s", sb->scope);
        return 0;
}

static int write_control_files(Sandbox *sb, char **ret_why) {
        static const char gitconfig[] =
                "# Written by Lazaret for sessions in this sandbox (GIT_CONFIG_SYSTEM).\n"
                "# gVisor shows its own inode numbers and owners: compare only what both\n"
                "# sides agree on, so that host and sandbox do not re-hash each other's index.\n"
                "[core]\n"
                "\tcheckStat = minimal\n"
                "# The host user's core.excludesFile, copied (git-excludes): git inside\n"
                "# ignores what the workspace view keeps in ignored state.\n"
                "\texcludesFile = " SANDBOX_CONTROL_MOUNT "/" VIEW_EXCLUDES_FILE "\n"
                "# git's fsmonitor, for repositories in the workspace: the view's change\n"
                "# journal answers (spec 4.6). Absent when the profile's git_fsmonitor is\n"
                "# off or the workspace is not served by the view.\n"
                "[includeIf \"gitdir:" SANDBOX_WORKSPACE "/\"]\n"
                "\tpath = " SANDBOX_CONTROL_MOUNT "/" FSMON_CONFIG_FILE "\n"
                "# The image's own system configuration comes after, and wins.\n"
                "[include]\n"
                "\tpath = /etc/gitconfig\n";
        _cleanup_free_ char *path = path_join(sb->control_dir, "gitconfig");
        int r;

        if (!path)
                return -ENOMEM;
        r = write_file(path, gitconfig, 0644);
        if (r < 0)
                return errorf(ret_why, r, "cannot write %s: %s", path, strerror(-r));
        return 0;
}

/* The generation's derived policy (spec section 4.5), for the supervisor to install. */
static int write_policy(Sandbox *sb, char **ret_why) {
        _cleanup_net_policy_ NetPolicy *policy = NULL;
        _cleanup_free_ uint8_t *bytes = NULL;
        uint8_t digest[SHA256_DIGEST_LEN];
        size_t len;
        int r;

        r = net_policy_derive_for_profile(sb->domain->config, sb->domain->profile, &policy);
        if (r >= 0)
                r = net_policy_encode(policy, &bytes, &len);
        if (r < 0)
                return errorf(ret_why, r, "cannot derive the network policy of profile %s: %s", sb->domain->profile->name,
                              strerror(-r));
        sha256_buf(bytes, len, digest);
        hexify(digest, sizeof(digest), sb->policy_digest);
        r = write_file_bytes(sb->policy_path, bytes, len, 0600);
        if (r < 0)
                return errorf(ret_why, r, "cannot write %s: %s", sb->policy_path, strerror(-r));
        log_info("Network policy of profile %s: %zu routes, digest %s", sb->domain->profile->name, policy->n_routes,
                 sb->policy_digest);
        return 0;
}

#if ENABLE_TEST_HOOKS
static int network_fault(void) {
        const char *f = getenv("LAZARET_TEST_NETWORK_FAULT");

        if (!f)
                return NETWORK_FAULT_NONE;
        if (streq(f, "deny-on-lo"))
                return NETWORK_FAULT_DENY_ON_LO;
        if (streq(f, "denied-elsewhere"))
                return NETWORK_FAULT_DENIED_ELSEWHERE;
        if (streq(f, "no-name-canary"))
                return NETWORK_FAULT_NO_NAME_CANARY;
        if (streq(f, "name-bound-elsewhere"))
                return NETWORK_FAULT_NAME_BOUND_ELSEWHERE;
        return -EINVAL;
}

static const char *const network_fault_names[] = {
        [NETWORK_FAULT_DENY_ON_LO] = "deny-on-lo",
        [NETWORK_FAULT_DENIED_ELSEWHERE] = "denied-elsewhere",
        [NETWORK_FAULT_NO_NAME_CANARY] = "no-name-canary",
        [NETWORK_FAULT_NAME_BOUND_ELSEWHERE] = "name-bound-elsewhere",
};

#define NETWORK_FAULT_INVALID "LAZARET_TEST_NETWORK_FAULT is set to something other than deny-on-lo, denied-elsewhere, " \
        "no-name-canary or name-bound-elsewhere"
#endif

static uint64_t realtime_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* The prepared lower's artifact ID: the name of the directory holding its rootfs. */
static int lower_id(const Sandbox *sb, char **ret) {
        const char *rootfs = sb->image.rootfs, *end, *start;

        if (!rootfs || !(end = strrchr(rootfs, '/')) || end == rootfs)
                return -EINVAL;
        for (start = end; start > rootfs && start[-1] != '/'; start--)
                ;
        *ret = strndup(start, (size_t) (end - start));
        return *ret ? 0 : -ENOMEM;
}

static char *catalog_path(const Sandbox *sb) {
        char *p;

        return asprintf(&p, "%s/" STORAGE_IMAGES_DIR "/" STORAGE_CATALOG_FILE, sb->domain->config->data_root) < 0 ? NULL : p;
}

/*
 * The generation's lease in the Storage Catalog shared by every Domain: one
 * short transaction (open, lease, close). Then the lower must still be
 * there: `lazaretctl state gc` moves a lower out of use only inside its
 * own transaction and only when no lease holds it, so a lower seen after
 * the lease is safe until the lease ends (spec §4.6, LeaseProtectsLower).
 */
static int lease_lower(Sandbox *sb, const char *lower, char **ret_why) {
        _cleanup_free_ char *path = catalog_path(sb), *why = NULL;
        StorageCatalog *c = NULL;
        struct stat st;
        int r;

        if (!path)
                return -ENOMEM;
        r = storage_catalog_open(path, &c, &why);
        if (r >= 0) {
                r = storage_catalog_lease(c, lower, sb->domain->id, sb->generation, realtime_usec(), &why);
                storage_catalog_close(c);
        }
        if (r < 0)
                return errorf(ret_why, r, "%s", why ?: "cannot lease the prepared lower in the Storage Catalog");
        if (stat(sb->image.rootfs, &st) < 0)
                return errorf(ret_why, -ESTALE, "the prepared lower %s was removed (lazaretctl state gc) while this launch "
                              "prepared it; launch again", sb->image.rootfs);
        return 0;
}

static void release_lower(Sandbox *sb) {
        _cleanup_free_ char *path = catalog_path(sb), *why = NULL;
        StorageCatalog *c = NULL;
        int r;

        if (!path)
                return;
        r = storage_catalog_open(path, &c, &why);
        if (r >= 0) {
                r = storage_catalog_release(c, sb->domain->id, sb->generation, &why);
                storage_catalog_close(c);
        }
        if (r < 0)
                log_warning("Cannot release the lease of generation %" PRIu64 " in the Storage Catalog: %s (the next "
                            "launch or lazaretctl state gc drops it)", sb->generation, strna(why));
}

static int record_generation(Sandbox *sb, char **ret_why) {
        _cleanup_free_ char *lower = NULL, *why = NULL;
        int r;

        if (!sb->store)
                return 0;
        r = lower_id(sb, &lower);
        if (r < 0)
                return r;
        r = domain_store_begin_generation(sb->store, strempty(sb->coordinator_id), realtime_usec(), lower,
                                          sb->domain->profile->persistent_dirs, &sb->generation, &why);
        if (r < 0)
                return errorf(ret_why, r, "%s", why ?: "cannot record the generation in the Domain Store");
        r = lease_lower(sb, lower, ret_why);
        if (r < 0)
                return r;
        log_info("Generation %" PRIu64 " recorded in the Domain Store (lower %.12s leased in the Storage Catalog)",
                 sb->generation, lower);
        return 0;
}

static void end_generation(Sandbox *sb) {
        _cleanup_free_ char *why = NULL;

        if (!sb->store || sb->generation == 0)
                return;
        release_lower(sb);
        if (domain_store_end_generation(sb->store, sb->generation, sb->failed ? "failed" : "stopped", realtime_usec(),
                                        &why) < 0)
                log_warning("Cannot record the end of generation %" PRIu64 ": %s", sb->generation, strna(why));
        sb->generation = 0;
}

static void step_bundle(Sandbox *sb) {
        _cleanup_free_ char *why = NULL;
        const char *probe_denied = NET_CANARY_DENIED_STR, *probe_bound = NET_EGRESS_CANARY_BOUND_STR;
        int r;

        sb->state = SANDBOX_MAPPING;
#if ENABLE_TEST_HOOKS
        int fault = network_fault();
        if (fault < 0) {
                sandbox_fail(sb, NETWORK_FAULT_INVALID);
                return;
        }
        sb->network_fault = fault;
        if (fault != NETWORK_FAULT_NONE)
                log_warning("Test fault %s in effect: the network attestation must fail", network_fault_names[fault]);
        if (fault == NETWORK_FAULT_DENIED_ELSEWHERE)
                probe_denied = NET_GATEWAY_STR;
        if (fault == NETWORK_FAULT_NAME_BOUND_ELSEWHERE)
                probe_bound = "10.137.64.2";
#endif
        r = mkdir_mode(sb->runtime_dir, 0700);
        if (r >= 0)
                r = mkdir_mode(sb->runsc_root, 0700);
        if (r >= 0)
                r = mkdir_mode(sb->bundle, 0700);
        if (r >= 0)
                r = mkdir_mode(sb->sessions_dir, 0700);
        if (r >= 0)
                r = mkdir_mode(sb->overlay_dir, 0700);
        if (r < 0) {
                log_error_errno(r, "Cannot create the runtime directories in %s", sb->runtime_dir);
                sandbox_fail(sb, "cannot create the sandbox's runtime directories (see the log)");
                return;
        }
        /* Lease before mount: the generation, its lower and its layers are on record before anything uses them. */
        r = record_generation(sb, &why);
        if (r < 0) {
                sandbox_fail(sb, why ?: "cannot record the generation in the Domain Store");
                return;
        }
        sb->mount_plan = mfree(sb->mount_plan);
        sb->state_notice = mfree(sb->state_notice);
        sb->git_notices = strv_free(sb->git_notices);
        sb->git_root = mfree(sb->git_root);
        sb->checkout_notice = mfree(sb->checkout_notice);
        sb->checkout_key[0] = 0;
        r = bundle_write(&(BundleParams) {
                                 .domain = sb->domain,
                                 .bundle_dir = sb->bundle,
                                 .control_dir = sb->control_dir,
                                 .rootfs = sb->image.rootfs,
                                 .netns_path = sb->netns_path,
                                 .env = sb->image.env,
                                 .canary_port = sb->canary_port,
                                 .probe_denied = probe_denied,
                                 .probe_bound = probe_bound,
                                 .ret_state_notice = &sb->state_notice,
                                 .ret_git_notices = &sb->git_notices,
                                 .ret_git_root = &sb->git_root,
                                 .ret_checkout_key = sb->checkout_key,
                                 .ret_checkout_notice = &sb->checkout_notice,
                                 .mailbox = sb->escalation,
                         }, &sb->mount_plan, &why);
        if (r >= 0 && sb->state_notice)
                log_warning("State Anchor: %s", sb->state_notice);
        if (r >= 0 && sb->checkout_notice)
                log_warning("%s (this checkout's state: %s/%s/%s)", sb->checkout_notice, sb->domain->domain_dir,
                            CHECKOUTS_DIR, sb->checkout_key);
        STRV_FOREACH(n, sb->git_notices)
                if (r >= 0)
                        log_warning("git: %s", *n);
        if (r >= 0)
                r = write_control_files(sb, &why);
        if (r >= 0)
                r = write_policy(sb, &why);
        if (r < 0) {
                sandbox_fail(sb, why ?: "cannot write the sandbox's bundle");
                return;
        }
        step_userns(sb);
}

static void on_image(ImagePrep *ip, int r, const char *why, void *userdata) {
        Sandbox *sb = userdata;
        _cleanup_free_ char *why2 = NULL;

        if (r >= 0)
                r = image_prep_take(ip, &sb->image, &why2);
        sb->image_prep = image_prep_free(sb->image_prep);
        if (sb->cb.progress)
                sb->cb.progress(sb, NULL, sb->userdata);
        if (r < 0) {
                sandbox_fail(sb, why2 ?: why ?: "cannot prepare the image");
                return;
        }
        step_bundle(sb);
}

static void step_image(Sandbox *sb) {
        _cleanup_free_ char *why = NULL;
        int r;

        sb->state = SANDBOX_PREPARING;
        r = image_prepare(sb->event, sb->domain, &sb->subuids, &sb->subgids, on_image, sb, &sb->image_prep, &sb->image, &why);
        if (r < 0) {
                sandbox_fail(sb, why ?: "cannot prepare the image");
                return;
        }
        if (r > 0) {
                step_bundle(sb);
                return;
        }
        /* on_image() continues; until then, whoever launched it hears why it takes long. */
        if (sb->cb.progress) {
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what, "Preparing image %s for its first use", image_prep_name(sb->image_prep)) >= 0)
                        sb->cb.progress(sb, what, sb->userdata);
        }
}

/*
 * The Escalation Mailbox's root directory, made by the supervisor in its
 * mount namespace (SR-10): a tmpfs directory, once, only while starting.
 */
static int take_mailbox(Sandbox *sb, int fd, const char **ret_why) {
        _cleanup_close_ int owned = fd;
        struct statfs sf;
        struct stat st;

        if (sb->state != SANDBOX_STARTING || !sb->escalation || sb->mailbox_fd >= 0 || sb->network_attested) {
                *ret_why = "the Runtime Supervisor handed over an Escalation Mailbox out of order";
                return -EPROTO;
        }
        if (fstat(fd, &st) < 0 || fstatfs(fd, &sf) < 0 || !S_ISDIR(st.st_mode) || sf.f_type != TMPFS_MAGIC) {
                *ret_why = "the Runtime Supervisor's Escalation Mailbox is not a tmpfs directory";
                return -EPROTO;
        }
        sb->mailbox_fd = TAKE_FD(owned);
        return 0;
}

/* One of the profile's publish_ports answered: the first failure fails the start; the last success makes it ready. */
static void on_profile_port(Ports *p, int r, const char *why, const PortForward *f, void *userdata) {
        Sandbox *sb = userdata;
        char b[PORT_FORWARD_STRING_MAX];

        /* Cancelled, failed already, or the sandbox ended meanwhile: nothing to report. */
        if (r == -ECANCELED || sb->profile_ports_left == 0 || sb->failed || sb->state != SANDBOX_RUNNING)
                return;
        if (r < 0) {
                _cleanup_free_ char *msg = NULL;

                sb->profile_ports_left = 0;
                port_forward_format(f, b);
                if (asprintf(&msg, "profile %s: publish_ports \"%s\": %s", sb->domain->profile->name, b, why) < 0)
                        msg = NULL;
                sandbox_fail(sb, msg ?: why);
                return;
        }
        if (--sb->profile_ports_left == 0)
                sb->cb.ready(sb, sb->userdata);
}

/*
 * The published ports' table (empty), then the profile's publish_ports in
 * their order; ready() once all are in force.
 */
static void publish_profile_ports(Sandbox *sb) {
        const Profile *prof = sb->domain->profile;
        int r;

        r = ports_new(sb->event, sb->slirp_api, &sb->ports);
        if (r < 0) {
                sandbox_fail(sb, "cannot set up the published ports");
                return;
        }
        if (prof->n_publish_ports == 0) {
                sb->cb.ready(sb, sb->userdata);
                return;
        }
        sb->profile_ports_left = prof->n_publish_ports;
        for (size_t i = 0; i < prof->n_publish_ports; i++) {
                r = ports_publish(sb->ports, &prof->publish_ports[i], on_profile_port, sb);
                if (r < 0) {
                        sb->profile_ports_left = 0;
                        sandbox_fail(sb, "cannot publish the profile's ports: out of memory");
                        return;
                }
        }
}

Ports *sandbox_ports(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? sb->ports : NULL;
}

const char *sandbox_helper_api_socket(const Sandbox *sb) {
        return sb && sb->state == SANDBOX_RUNNING ? sb->slirp_api : NULL;
}

static void on_supervisor_message(SupervisorLink *l, const SupervisorMsg *msg, int fd, void *userdata) {
        Sandbox *sb = userdata;

        switch (msg->type) {
        case SUPERVISOR_MAILBOX: {
                const char *refusal = NULL;

                if (take_mailbox(sb, fd, &refusal) < 0)
                        sandbox_fail(sb, refusal);
                return;
        }
        case SUPERVISOR_NETWORK:
                if (sb->state != SANDBOX_STARTING || sb->network_attested) {
                        sandbox_fail(sb, "the Runtime Supervisor reported its network out of order");
                        return;
                }
                if (!streq(msg->digest, sb->policy_digest)) {
                        log_error("Attested policy digest %s, derived %s", msg->digest, sb->policy_digest);
                        sandbox_fail(sb, "the Runtime Supervisor attested a network policy other than the derived one");
                        return;
                }
                sb->network_attested = true;
                memcpy(sb->network.policy_digest, msg->digest, sizeof(sb->network.policy_digest));
                sb->network.helper_pid = msg->helper_pid;
                sb->network.netns = msg->netns;
                log_info("Network attested from inside the sandbox: policy %s, network helper pid %d, namespace %llu",
                         msg->digest, msg->helper_pid, msg->netns);
                return;
        case SUPERVISOR_STARTED:
                log_info("Runtime Supervisor: %s ms", msg->reason);
                return;
        case SUPERVISOR_READY:
                if (sb->state != SANDBOX_STARTING) {
                        sandbox_fail(sb, "the Runtime Supervisor reported READY twice");
                        return;
                }
                /* NetworkReadinessBoundToSandbox: no publication without the attestation. */
                if (!sb->network_attested) {
                        sandbox_fail(sb, "the Runtime Supervisor reported READY without a network attestation");
                        return;
                }
                if (sb->escalation && sb->mailbox_fd < 0) {
                        sandbox_fail(sb, "the Runtime Supervisor reported READY without the Escalation Mailbox");
                        return;
                }
                judge_limits(sb);
                sb->state = SANDBOX_RUNNING;
                if (sb->store && sb->generation > 0) {
                        _cleanup_free_ char *why = NULL;
                        if (domain_store_generation_running(sb->store, sb->generation, sb->network.policy_digest, &why) < 0)
                                log_warning("Cannot record generation %" PRIu64 " as running: %s", sb->generation, strna(why));
                }
                sb->runtime = (SandboxRuntime) {
                        .event = sb->event,
                        .domain_id = sb->domain->id,
                        .runsc = sb->runsc,
                        .client = sb->runsc_client,
                        .root = sb->runsc_root,
                        .container = sb->id,
                        .sessions_dir = sb->sessions_dir,
                        .control_dir = sb->control_dir,
                        .image_env = sb->image.env,
                        .limits = &sb->domain->profile->limits,
                };
                publish_profile_ports(sb);
                return;
        case SUPERVISOR_FAILED:
                sandbox_fail(sb, msg->reason);
                return;
        case SUPERVISOR_EXITED: {
                char why[96];

                log_error("The sandbox's init exited with status %d", msg->status);
                snprintf(why, sizeof(why), "the sandbox stopped: its init exited with status %d", msg->status);
                sandbox_ended(sb, why);
                return;
        }
        }
}

static void on_supervisor_closed(SupervisorLink *l, const char *why, void *userdata) {
        Sandbox *sb = userdata;

        /* A clean EOF: the supervisor is exiting; its exit decides. */
        if (why)
                sandbox_ended(sb, why);
}

/*
 * The Runtime Supervisor's process runs on once it has its ID maps and is
 * in the sandbox scope, whichever comes last: nothing of runsc exists
 * before both. The scope is asked for as soon as the process exists, so
 * the user manager's job and newuidmap/newgidmap run at the same time (one
 * after the other, they were about 7 and 6 ms of every cold start).
 */
static void maybe_release(Sandbox *sb) {
        int r;

        if (!sb->mapped || !sb->scoped || sb->state != SANDBOX_SCOPING)
                return;
        sb->state = SANDBOX_STARTING;
        r = userns_child_go(sb->child);
        if (r < 0) {
                log_error_errno(r, "Cannot release the Runtime Supervisor");
                sandbox_fail(sb, "cannot start the Runtime Supervisor (see the log)");
                return;
        }
        log_info("Runtime Supervisor %d started in %s (container %s)", (int) userns_child_pid(sb->child), sb->scope, sb->id);
}

static void on_scope_started(BusJob *j, const char *result, const sd_bus_error *error, void *userdata) {
        Sandbox *sb = userdata;

        sb->job = bus_job_free(sb->job);
        if (!streq(result, "done")) {
                log_error("Creating %s: %s", sb->scope, error ? error->message : result);
                sandbox_fail(sb, "cannot create the sandbox's transient scope (see the log)");
                return;
        }
        sb->scoped = true;
        maybe_release(sb);
}

/* The sandbox scope, asked for with the supervisor's process in it: into the scope before anything of runsc exists. */
static int ask_scope(Sandbox *sb) {
        _cleanup_free_ char *desc = NULL;
        int r;

        if (asprintf(&desc, "Lazaret sandbox of Domain %s", sb->domain->id) < 0)
                return -ENOMEM;
        /* Watched from before it exists: a memory-limit kill shows as its Result. */
        r = watch_scope(sb);
        if (r < 0)
                log_warning_errno(r, "Cannot watch %s; a memory-limit kill will not be named", sb->scope);
        sb->state = SANDBOX_SCOPING;
        r = bus_job_start(sb->bus, "StartTransientUnit", append_scope,
                          &(ScopeArgs) { .scope = sb->scope, .description = desc, .service = sb->service,
                                         .pid = userns_child_pid(sb->child), .limits = &sb->domain->profile->limits },
                          SCOPE_JOB_TIMEOUT_USEC, on_scope_started, sb, &sb->job);
        if (r < 0)
                return log_error_errno(r, "Cannot ask the user manager for %s", sb->scope);
        return 0;
}

static void on_mapped(UsernsChild *c, void *userdata) {
        Sandbox *sb = userdata;

        sb->mapped = true;
        maybe_release(sb);
}

static void on_userns_failed(UsernsChild *c, const char *why, void *userdata) {
        sandbox_fail(userdata, why);
}

static void on_supervisor_exit(UsernsChild *c, int status, void *userdata) {
        Sandbox *sb = userdata;
        char why[128];

        if (sb->state >= SANDBOX_STOPPING)
                return;
        log_error("The Runtime Supervisor exited (status %d)", status);
        snprintf(why, sizeof(why), "the Runtime Supervisor exited (status %d)", status);
        sandbox_ended(sb, why);
}

static int supervisor_argv(Sandbox *sb, char ***ret) {
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *def = path_join(LIBEXECDIR, "lazaret-supervisor"), *overlay = NULL,
                            *view = path_join(LIBEXECDIR, "lazaret-view");
        char port[32], root_size[64];

        if (!def || !view)
                return -ENOMEM;
        if (asprintf(&overlay, "root:dir=%s", sb->overlay_dir) < 0)
                return -ENOMEM;
        snprintf(port, sizeof(port), "--canary-port=%u", sb->canary_port);
        snprintf(root_size, sizeof(root_size), "--overlay-size=%" PRIu64, sb->domain->profile->limits.root_size);
        if (strv_extend(&argv, TEST_HOOK_PATH("LAZARET_SUPERVISOR", def)) < 0 ||
            strv_extend(&argv, "--control-fd=3") < 0 ||
            strv_extend(&argv, "--runsc") < 0 || strv_extend(&argv, sb->runsc) < 0 ||
            strv_extend(&argv, "--root") < 0 || strv_extend(&argv, sb->runsc_root) < 0 ||
            strv_extend(&argv, "--bundle") < 0 || strv_extend(&argv, sb->bundle) < 0 ||
            strv_extend(&argv, "--container") < 0 || strv_extend(&argv, sb->id) < 0 ||
            strv_extend(&argv, "--overlay") < 0 || strv_extend(&argv, overlay) < 0 ||
            strv_extend(&argv, root_size) < 0 ||
            strv_extend(&argv, sb->domain->profile->directfs ? "--directfs=true" : "--directfs=false") < 0 ||
            (sb->escalation && strv_extend(&argv, "--host-fifo") < 0) ||
            strv_extend(&argv, "--netns") < 0 || strv_extend(&argv, sb->netns_path) < 0 ||
            strv_extend(&argv, "--slirp4netns") < 0 || strv_extend(&argv, sb->slirp4netns) < 0 ||
            strv_extend(&argv, "--slirp-api-socket") < 0 || strv_extend(&argv, sb->slirp_api) < 0 ||
            strv_extend(&argv, "--policy") < 0 || strv_extend(&argv, sb->policy_path) < 0 ||
            strv_extend(&argv, "--policy-digest") < 0 || strv_extend(&argv, sb->policy_digest) < 0 ||
            strv_extend(&argv, port) < 0 ||
            strv_extend(&argv, "--view") < 0 || strv_extend(&argv, TEST_HOOK_PATH("LAZARET_VIEW", view)) < 0)
                return -ENOMEM;
        /* Host rules: lazaret-egress in slirp4netns' place (spec 4.5, "Egress by name"). The rules
         * themselves travel in the policy, whose digest the supervisor attests. */
        if (sb->domain->profile->allow_hosts && sb->domain->profile->allow_hosts[0]) {
                _cleanup_free_ char *egress = path_join(LIBEXECDIR, "lazaret-egress");

                if (!egress || strv_extend(&argv, "--egress") < 0 || strv_extend(&argv, egress) < 0)
                        return -ENOMEM;
        }
#if ENABLE_TEST_HOOKS
        if ((sb->network_fault == NETWORK_FAULT_DENY_ON_LO || sb->network_fault == NETWORK_FAULT_NO_NAME_CANARY) &&
            strv_extendf(&argv, "--test-fault=%s", network_fault_names[sb->network_fault]) < 0)
                return -ENOMEM;
#endif
        *ret = TAKE_PTR(argv);
        return 0;
}

static void step_userns(Sandbox *sb) {
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_close_ int ours = -EBADF, theirs = -EBADF;
        int control[2], r;

        sb->mapped = sb->scoped = false;
        r = supervisor_argv(sb, &argv);
        if (r < 0) {
                sandbox_fail(sb, "out of memory");
                return;
        }
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) < 0) {
                log_error_errno(-errno, "Cannot create the supervisor's control socket");
                sandbox_fail(sb, "cannot create the supervisor's control socket");
                return;
        }
        ours = control[0];
        theirs = control[1];
        /* The supervisor's stderr is ours (the Domain's log): for the supervised
         * helpers' own lines, such as lazaret-watch's about its watch bound. */
        r = userns_child_start(sb->event, argv, theirs, STDERR_FILENO, &sb->subuids, &sb->subgids,
                               &(UsernsCallbacks) { .mapped = on_mapped, .failed = on_userns_failed,
                                                    .exited = on_supervisor_exit },
                               sb, &sb->child);
        if (r < 0) {
                log_error_errno(r, "Cannot start the Runtime Supervisor's process");
                sandbox_fail(sb, "cannot start the Runtime Supervisor (see the log)");
                return;
        }
        r = supervisor_link_new(sb->event, TAKE_FD(ours),
                                &(SupervisorLinkCallbacks) { .message = on_supervisor_message, .closed = on_supervisor_closed },
                                sb, &sb->link);
        if (r < 0) {
                log_error_errno(r, "Cannot watch the supervisor's control socket");
                sandbox_fail(sb, "cannot watch the Runtime Supervisor");
                return;
        }
        r = ask_scope(sb);
        if (r < 0)
                sandbox_fail(sb, "cannot create the sandbox's transient scope (see the log)");
}

/* ------------------------------------------------------------------ stop */

static void finish_stop(Sandbox *sb) {
        end_generation(sb);
        anchor_release(sb->domain);
        sb->kill_timer = sd_event_source_disable_unref(sb->kill_timer);
        sb->scope_match = sd_bus_slot_unref(sb->scope_match);
        sb->state = SANDBOX_STOPPED;
        (void) rm_rf(sb->runtime_dir);
        (void) rm_rf(sb->overlay_dir);
}

static void on_stop_done(BusJob *j, const char *result, const sd_bus_error *error, void *userdata) {
        Sandbox *sb = userdata;

        sb->job = bus_job_free(sb->job);
        if (streq(result, "error"))
                log_warning("Stopping %s: %s", sb->scope, error ? error->message : result);
        else
                log_info("Sandbox scope %s stopped (%s)", sb->scope, result);
        finish_stop(sb);
        sb->cb.stopped(sb, sb->userdata);
}

static int on_kill_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Sandbox *sb = userdata;

        sb->kill_timer = sd_event_source_disable_unref(sb->kill_timer);
        log_warning("%s did not stop in %llu s; killing what is left in it", sb->scope,
                    (unsigned long long) (SCOPE_STOP_KILL_USEC / 1000000));
        (void) sd_bus_call_method_async(sb->bus, NULL, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                        "org.freedesktop.systemd1.Manager", "KillUnit", NULL, NULL, "ssi", sb->scope,
                                        "all", SIGKILL);
        return 0;
}

int sandbox_stop(Sandbox *sb) {
        bool scope_may_exist;
        int r;

        if (sb->state == SANDBOX_STOPPING)
                return 1;
        if (sb->state == SANDBOX_STOPPED)
                return 0;
        /* A predecessor's scope while recovering; ours once it was asked for. */
        scope_may_exist = sb->state == SANDBOX_RECOVERING || sb->state >= SANDBOX_SCOPING;
        sb->state = SANDBOX_STOPPING;

        /* Whatever is under way ends here: an unpack is killed (its staging
         * directory removed), EOF on the control socket tells the supervisor
         * to exit. */
        sb->image_prep = image_prep_free(sb->image_prep);
        /* The forwards die with slirp4netns, in the scope; the table goes now. */
        sb->profile_ports_left = 0;
        sb->ports = ports_free(sb->ports);
        sb->link = supervisor_link_free(sb->link);
        /* The mailbox's file system goes with the supervisor's mount namespace and this descriptor. */
        sb->mailbox_fd = safe_close(sb->mailbox_fd);
        sb->job = bus_job_free(sb->job);
        /* scope_match stays until the scope is gone: an OOM kill seen during the stop is still logged. */
        sb->result_query = sd_bus_slot_unref(sb->result_query);
        free(TAKE_PTR(sb->pending_why));

        if (!scope_may_exist) {
                sb->child = userns_child_free(sb->child);
                finish_stop(sb);
                return 0;
        }

        /* The scope holds the supervisor, runsc and the sandbox: stopping it stops them all. */
        r = bus_job_start(sb->bus, "StopUnit", bus_append_unit_replace, sb->scope, SCOPE_JOB_TIMEOUT_USEC,
                          on_stop_done, sb, &sb->job);
        if (r >= 0)
                r = sd_event_add_time_relative(sb->event, &sb->kill_timer, CLOCK_MONOTONIC, SCOPE_STOP_KILL_USEC, 0,
                                               on_kill_timer, sb);
        if (r < 0) {
                log_warning_errno(r, "Cannot ask the user manager to stop %s; killing the supervisor", sb->scope);
                sb->child = userns_child_free(sb->child);
                sb->job = bus_job_free(sb->job);
                finish_stop(sb);
                return 0;
        }
        return 1;
}
