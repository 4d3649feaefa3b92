/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>

#include "checkout.h"
#include "cleanup.h"
#include "hash.h"
#include "launch-request.h"
#include "log.h"
#include "manager.h"
#include "parse-util.h"
#include "path-util.h"
#include "strv.h"
#include "subid.h"
#include "util.h"
#include "view-git-kept.h"
#include "view-policy.h"

/* A published Domain nobody uses is torn down after this long. */
#define IDLE_TIMEOUT_USEC (30ULL * 1000 * 1000)
/* org.freedesktop.DBus.RequestName replies. */
#define DBUS_NAME_PRIMARY_OWNER 1
#define DBUS_NAME_IN_QUEUE 2
#define DBUS_NAME_ALREADY_OWNER 4
/* How long a killed predecessor may still hold the bus name. */
#define NAME_WAIT_USEC (2ULL * 1000 * 1000)

static const char *const state_names[] = {
        [DOMAIN_STARTING] = "starting",
        [DOMAIN_RUNNING] = "running",
        [DOMAIN_STOPPING] = "stopping",
        [DOMAIN_FAILED] = "failed",
        [DOMAIN_MAINTENANCE] = "maintenance",
};

const char *domain_state_to_string(DomainState s) {
        return s < ELEMENTSOF(state_names) ? state_names[s] : "unknown";
}

int manager_new(const char *id, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        sd_id128_t rnd;
        int r;

        if (!domain_id_is_valid(id))
                return -EINVAL;
        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        m->lock_fd = -EBADF;
        memcpy(m->id, id, sizeof(m->id));
        domain_bus_name(id, m->bus_name);
        r = sd_id128_randomize(&rnd);
        if (r < 0)
                return r;
        sd_id128_to_string(rnd, m->coordinator_id);
        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/*
 * The git operations the sandbox left under way, read now from the view's
 * Domain state (view-git-kept.h): a launch into a running Domain says them
 * too, a rebase stopped in an earlier session being the usual case. A
 * bounded walk of a small local tree; what cannot be read says nothing.
 */
static char **git_ops_now(Manager *m) {
        _cleanup_free_ char *state = NULL, *git_state = NULL;
        _cleanup_strv_free_ char **ops = NULL, **host = NULL;
        _cleanup_close_ int sfd = -EBADF, gsfd = -EBADF;
        const char *root = sandbox_git_root(m->sandbox), *key = sandbox_checkout_key(m->sandbox);

        /* The checkout this start serves (checkout.h), not whatever lies at the path now. */
        if (!key || checkout_state_path(m->domain->domain_dir, key, VIEW_STATE_DIR, &state) < 0 ||
            checkout_state_path(m->domain->domain_dir, key, VIEW_GIT_STATE_DIR, &git_state) < 0)
                return NULL;
        sfd = open(state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root)
                gsfd = open(git_state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (view_git_kept_scan(-EBADF, sfd, -EBADF, root, gsfd, &ops, &host) < 0)
                return NULL;
        return TAKE_PTR(ops);
}

/*
 * What the launching clients hear (activation.h). started: they waited for
 * this start, and hear which limits are not enforced here and the start's
 * notices; later ones (the Domain already runs) hear the git operations
 * under way now.
 */
static void waiters_answer(Manager *m, bool started) {
        _cleanup_strv_free_ char **ops = NULL;
        ActivationAnswer a = {
                .state = domain_state_to_string(m->state),
                .domain_id = m->id,
                .bus_name = m->bus_name,
                .coordinator_id = m->coordinator_id,
                .error = m->failure,
        };
        int r;

        if (started) {
                a.unenforced_limits = sandbox_unenforced_limits(m->sandbox);
                a.state_notice = sandbox_state_notice(m->sandbox);
                a.checkout_notice = sandbox_checkout_notice(m->sandbox);
                a.git_notices = sandbox_git_notices(m->sandbox);
        } else if (m->state == DOMAIN_RUNNING && activation_n_waiting(m->activation) > 0)
                a.git_notices = ops = git_ops_now(m);
        r = activation_answer(m->activation, &a);
        if (r < 0)
                log_error("Cannot build the answer to launching clients: %s", strerror(-r));
}

static void sandbox_progress(Sandbox *sb, const char *what, void *userdata) {
        Manager *m = userdata;

        activation_progress(m->activation, what);
}

/* Unlinks s from the Domain's sessions and frees it. */
static void manager_remove_session(Manager *m, Session *s) {
        if (s->prev)
                s->prev->next = s->next;
        else
                m->sessions = s->next;
        if (s->next)
                s->next->prev = s->prev;
        m->n_sessions--;
        manager_egress_session_gone(m, s);
        escalations_session_closed(m->escalations, s);
        session_free(s);
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        while (m->sessions)
                manager_remove_session(m, m->sessions);
        manager_egress_stop(m);
        escalations_free(m->escalations);
        notifier_free(m->notifier);
        strv_free(m->forget_pending);
        sd_event_source_disable_unref(m->forget_timer);
        /* What the trail still queues goes in before the store closes. */
        audit_writer_flush_all(m->audit);
        audit_writer_free(m->audit);
        sandbox_free(m->sandbox);
        activation_free(m->activation);
        sd_event_source_disable_unref(m->idle_timer);
        sd_event_source_disable_unref(m->teardown);
        sd_event_source_disable_unref(m->name_timer);
        sd_bus_slot_unref(m->object_slot);
        sd_bus_slot_unref(m->name_slot);
        sd_bus_slot_unref(m->name_acquired_slot);
        if (m->bus)
                sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        domain_free(m->domain);
        config_free(m->config);
        free(m->runtime_root);
        free(m->runtime_dir);
        free(m->failure);
        free(m->domain_dir);
        domain_record_done(&m->record);
        domain_store_close(m->store);
        safe_close(m->lock_fd);
        free(m);
        return NULL;
}

void manager_update_status(Manager *m) {
        (void) sd_notifyf(false, "STATUS=%s: profile %s, workspace %s, %u session%s",
                          domain_state_to_string(m->state),
                          m->record.profile ?: "?", m->record.workspace ?: "?",
                          m->n_sessions, m->n_sessions == 1 ? "" : "s");
}

/* ------------------------------------------------------ activation socket */

/* A client connected after the start ended: it hears the Domain's state now. */
static void activation_connected(Activation *a, void *userdata) {
        Manager *m = userdata;

        /* A launch (a client that found no coordinator on the bus): maintenance gives way. The
         * teardown tells it "stopping", and its next connection waits for the next coordinator. */
        if (m->state == DOMAIN_MAINTENANCE) {
                log_info("A client connected to the activation socket; leaving maintenance for the next coordinator");
                manager_stop(m, NULL);
                return;
        }
        if (m->state != DOMAIN_STARTING)
                waiters_answer(m, /* started= */ false);
}

/* Every client that asked for a Domain still starting has gone (so no session was ever opened): nobody will use it. */
static void activation_abandoned(Activation *a, void *userdata) {
        Manager *m = userdata;

        if (m->state != DOMAIN_STARTING)
                return;
        log_info("Every client that asked for Domain %s has gone; stopping", m->id);
        manager_stop(m, NULL);
}

static int setup_activation(Manager *m) {
        _cleanup_free_ char *error = NULL;
        int n;

        n = activation_new(m->event,
                           &(ActivationCallbacks) { .connected = activation_connected, .abandoned = activation_abandoned },
                           m, &m->activation, &error);
        if (n < 0)
                return log_error_errno(n, "%s", error ?: "Cannot take the activation socket");
        if (n == 0)
                log_info("Started without an activation socket; clients must use the bus");
        else if (n > 1)
                log_warning("Expected one activation socket, got %d; using the first", n);
        return 0;
}

/* ------------------------------------------------------------- startup */

/*
 * A start-up failure: logged with its errno, and the same line kept for the
 * clients waiting on the activation socket, so that they read what failed
 * rather than "see its log".
 */
static int startup_fail(char **ret_why, int r, const char *fmt, ...) _printf_(3, 4);
static int startup_fail(char **ret_why, int r, const char *fmt, ...) {
        _cleanup_free_ char *line = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&line, fmt, ap) < 0)
                line = NULL;
        va_end(ap);
        (void) log_error_errno(r, "%s", line ?: "Cannot start the Domain");
        return errorf(ret_why, r, "%s", line ?: "the coordinator could not start the Domain");
}

/*
 * The configuration the launching client validated (its launch request
 * names the file and the fingerprint it saw), loaded again: the very file,
 * and refused if it changed since.
 */
static int load_config(Manager *m, const HostContext *host, const char *runtime_root, char **ret_why) {
        _cleanup_free_ char *error = NULL;
        LaunchRequest req = {};
        char fp[SHA256_HEX_LEN + 1];
        int r;

        r = launch_request_read(runtime_root, m->id, &req, &error);
        if (r < 0)
                return startup_fail(ret_why, r, "%s", error ?: "Cannot read the launch request");
        if (req.config_path)
                r = config_load(host, req.config_path, &m->config, &error);
        else
                r = config_load_builtin(host, &m->config, &error);
        if (r < 0) {
                launch_request_done(&req);
                return startup_fail(ret_why, r, "%s", error ?: "Cannot load the configuration");
        }
        config_fingerprint_hex(m->config, fp);
        if (!streq(fp, req.fingerprint)) {
                r = startup_fail(ret_why, -ESTALE,
                                 "The configuration %s changed between lazaretctl's check and the coordinator's start (fingerprint %s, expected %s)",
                                 m->config->path ?: "(built-in)", fp, req.fingerprint);
                launch_request_done(&req);
                return r;
        }
        memcpy(m->fingerprint, fp, sizeof(fp));
        m->maintenance = req.maintenance;
        launch_request_done(&req);
        return 0;
}

/* The Domain's own log file, in the runtime directory (lazaretctl log), beside the journal. */
static void open_log_file(Manager *m, const char *runtime_root) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (asprintf(&path, "%s/%s.log", runtime_root, m->id) < 0)
                return;
        r = log_open_file(path);
        if (r < 0)
                log_warning_errno(r, "Cannot open the Domain's log file %s; logging to standard error only", path);
}

static int load_domain(Manager *m, char **ret_why) {
        _cleanup_(host_context_done) HostContext host = {};
        _cleanup_free_ char *error = NULL, *runtime_root = NULL, *user_name = NULL, *why = NULL, *domains = NULL;
        int r;

        /* The user manager's environment, read once; nothing below reads it again. */
        r = host_context_from_environment(&host);
        if (r < 0)
                return startup_fail(ret_why, r, "Cannot collect the environment");
        r = runtime_dir_prepare(&host, &runtime_root, &error);
        if (r < 0)
                return startup_fail(ret_why, r, "%s", error ?: "Cannot prepare the runtime directory");
        open_log_file(m, runtime_root);
        r = load_config(m, &host, runtime_root, ret_why);
        if (r < 0)
                return r;

        r = domain_record_load(m->config->data_root, m->id, &m->record, &error);
        if (r < 0)
                return startup_fail(ret_why, r, "%s", error ?: "Cannot load the Domain record");
        domains = path_join(m->config->data_root, "domains");
        m->domain_dir = domains ? path_join(domains, m->id) : NULL;
        if (!m->domain_dir)
                return -ENOMEM;
        /* Maintenance needs the Domain's directory only: its workspace may be gone, its profile renamed.
         * The directory must be one of ours, not a link elsewhere (the record in it was read already). */
        if (m->maintenance) {
                struct stat st;

                if (lstat(m->domain_dir, &st) < 0)
                        return startup_fail(ret_why, -errno, "Cannot find the Domain directory %s", m->domain_dir);
                if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
                        return startup_fail(ret_why, -EPERM, "%s is not a private directory of yours", m->domain_dir);
                m->runtime_root = TAKE_PTR(runtime_root);
                m->runtime_dir = path_join(m->runtime_root, m->id);
                return m->runtime_dir ? 0 : -ENOMEM;
        }

        /* Recompute the identity from the record: the instance name must match (SR-11). */
        r = domain_new(m->config, &host, m->record.profile, m->record.workspace, &m->domain, &error);
        if (r < 0)
                return startup_fail(ret_why, r, "%s", error ?: "Invalid Domain");
        if (!streq(m->domain->id, m->id))
                return startup_fail(ret_why, -EBADMSG, "Domain record for %s resolves to Domain %s", m->id, m->domain->id);
        /* The directory the Domain's checks judged. */
        free(m->domain_dir);
        m->domain_dir = strdup(m->domain->domain_dir);
        if (!m->domain_dir)
                return -ENOMEM;
        r = domain_validate(m->domain, &error);
        if (r >= 0)
                r = domain_storage_prepare(m->domain, &error);
        if (r < 0)
                return startup_fail(ret_why, r, "%s", error ?: "Domain validation failed");

        /*
         * Once, before the loop runs: the passwd database and an nsswitch
         * "subid:" source such as SSSD may be slow to ask.
         */
        r = subid_user_name(getuid(), &user_name);
        if (r < 0 && r != -ESRCH)
                return startup_fail(ret_why, r, "Cannot look up the name of UID %u", (unsigned) getuid());
        r = subid_pick_for_user(user_name, getuid(), &m->subuids, &m->subgids, &why);
        if (r < 0)
                return startup_fail(ret_why, r, "%s", why ?: "Cannot look up the subordinate IDs");

        m->runtime_root = TAKE_PTR(runtime_root);
        m->runtime_dir = path_join(m->runtime_root, m->id);
        if (!m->runtime_dir)
                return -ENOMEM;
        return 0;
}

/* OR-1: the Domain lock, held for the coordinator's whole life. */
static int take_lock(Manager *m, char **ret_why) {
        _cleanup_free_ char *path = path_join(m->domain_dir, "coordinator.lock");

        if (!path)
                return -ENOMEM;
        m->lock_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (m->lock_fd < 0)
                return startup_fail(ret_why, -errno, "Cannot open %s", path);
        if (flock(m->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno == EWOULDBLOCK)
                        return startup_fail(ret_why, -EBUSY, "Another coordinator holds %s; refusing to run a second one", path);
                return startup_fail(ret_why, -errno, "Cannot lock %s", path);
        }
        return 0;
}

/* FR-17: the Domain Store, only ever opened by the lock's holder; a few rows per call. */
static int open_store(Manager *m, char **ret_why) {
        _cleanup_free_ char *path = path_join(m->domain_dir, DOMAIN_STORE_FILE), *why = NULL;
        int r;

        if (!path)
                return -ENOMEM;
        r = domain_store_open(path, &m->store, &why);
        if (r < 0)
                return startup_fail(ret_why, r, "%s", why ?: "Cannot open the Domain Store");
        r = audit_writer_new(m->event, m->store, &m->audit);
        if (r < 0)
                return startup_fail(ret_why, r, "Cannot set up the audit trail's queue");
        return 0;
}

static uint64_t realtime_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

/*
 * lazaret.conf(5) "retention", at each start of the Domain: one
 * transaction, before this generation begins (a generation still open or
 * leasing is kept). A store that cannot be trimmed is said, not fatal.
 */
static void apply_retention(Manager *m) {
        const StoreRetention keep = { .audit_days = m->config->retention.audit_days,
                                      .audit_events = m->config->retention.audit_events,
                                      .generations = m->config->retention.generations };
        _cleanup_free_ char *why = NULL;
        StoreRemoved removed = {};
        int r;

        r = domain_store_apply_retention(m->store, &keep, realtime_usec(), &removed, &why);
        if (r < 0)
                log_warning("Cannot apply the retention to the Domain Store: %s", why ?: strerror(-r));
        else if (removed.events > 0 || removed.generations > 0)
                log_info("Retention: removed %llu audit events and %llu generations from the Domain Store",
                         (unsigned long long) removed.events, (unsigned long long) removed.generations);
}

/*
 * Maintenance (launch-request.h): published with the store's methods
 * only, the launching clients told "maintenance", and stopped when idle.
 */
static void enter_maintenance(Manager *m) {
        int r;

        m->name_timer = sd_event_source_disable_unref(m->name_timer);
        m->name_acquired_slot = sd_bus_slot_unref(m->name_acquired_slot);
        r = manager_publish(m);
        if (r < 0) {
                manager_stop(m, "cannot publish the Domain on the bus");
                return;
        }
        m->state = DOMAIN_MAINTENANCE;
        (void) sd_notify(false, "READY=1");
        manager_update_status(m);
        log_info("Coordinator %s serves Domain %s's store in maintenance (no sandbox); it stops when idle",
                 m->coordinator_id, m->id);
        waiters_answer(m, /* started= */ false);
        manager_maintenance_touch(m);
}

static void sandbox_ready(Sandbox *sb, void *userdata);
static void sandbox_failed(Sandbox *sb, const char *why, void *userdata);
static void sandbox_stopped(Sandbox *sb, void *userdata);

/* The bus name is ours: the Domain can start (OR-1). */
static void name_owned(Manager *m) {
        _cleanup_free_ char *why = NULL;
        int r;

        if (m->state != DOMAIN_STARTING || m->sandbox)
                return;
        if (m->maintenance) {
                enter_maintenance(m);
                return;
        }
        m->name_timer = sd_event_source_disable_unref(m->name_timer);
        m->name_acquired_slot = sd_bus_slot_unref(m->name_acquired_slot);

        log_info("Coordinator %s starting Domain %s (profile %s, workspace %s)", m->coordinator_id, m->id,
                 m->domain->profile->name, m->domain->workspace);
        r = sandbox_new(&(SandboxParams) {
                                .event = m->event,
                                .bus = m->bus,
                                .domain = m->domain,
                                .runtime_dir = m->runtime_dir,
                                .subuids = m->subuids,
                                .subgids = m->subgids,
                                .store = m->store,
                                .coordinator_id = m->coordinator_id,
                                .cb = { .ready = sandbox_ready, .failed = sandbox_failed, .stopped = sandbox_stopped,
                                        .progress = sandbox_progress },
                                .userdata = m,
                        }, &m->sandbox, &why);
        if (r >= 0)
                r = sandbox_start(m->sandbox);
        if (r < 0) {
                if (!why)
                        log_error_errno(r, "Cannot start the sandbox");
                manager_stop(m, why ?: "the coordinator could not start the sandbox (see its log)");
        }
}

static int on_name_acquired(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *name;

        /* The bus also announces our unique name: only ours counts. */
        if (sd_bus_message_read(msg, "s", &name) >= 0 && streq(name, m->bus_name))
                name_owned(m);
        return 0;
}

static int on_name_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        m->name_timer = sd_event_source_disable_unref(m->name_timer);
        (void) sd_bus_release_name_async(m->bus, NULL, m->bus_name, NULL, NULL);
        log_error("Bus name %s is held by another process", m->bus_name);
        manager_stop(m, "the Domain's bus name is held by another process");
        return 0;
}

static int on_request_name(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        uint32_t ret = 0;
        int r;

        m->name_slot = sd_bus_slot_unref(m->name_slot);
        if (e || sd_bus_message_read(reply, "u", &ret) < 0) {
                log_error("Cannot own the bus name %s: %s", m->bus_name, e ? e->message : "bad reply");
                manager_stop(m, "the coordinator could not own the Domain's bus name (see its log)");
                return 0;
        }
        switch (ret) {
        case DBUS_NAME_PRIMARY_OWNER:
        case DBUS_NAME_ALREADY_OWNER:
                name_owned(m);
                return 0;
        case DBUS_NAME_IN_QUEUE:
                /* We hold the Domain lock, so no live coordinator owns the
                 * name; a predecessor killed a moment ago may, until the
                 * bus daemon notices. Wait for NameAcquired, bounded. */
                log_info("Bus name %s is still held; waiting for its previous owner to go", m->bus_name);
                r = sd_event_add_time_relative(m->event, &m->name_timer, CLOCK_MONOTONIC, NAME_WAIT_USEC, 0,
                                               on_name_timeout, m);
                if (r < 0)
                        manager_stop(m, "the coordinator could not wait for its bus name");
                return 0;
        default:
                log_error("Bus name %s is held by another process", m->bus_name);
                manager_stop(m, "the Domain's bus name is held by another process");
                return 0;
        }
}

static int connect_bus(Manager *m) {
        int r;

        r = sd_bus_open_user(&m->bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the user bus");
        r = sd_bus_attach_event(m->bus, m->event, 0);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop");
        /* Without the bus nobody can reach the Domain: end the process; the
         * sandbox scope is bound to the service and goes with it. */
        (void) sd_bus_set_exit_on_disconnect(m->bus, true);

        /* The match is installed before the request: on one connection the
         * bus daemon handles them in order. */
        r = sd_bus_match_signal_async(m->bus, &m->name_acquired_slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                      "org.freedesktop.DBus", "NameAcquired", on_name_acquired, NULL, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch for the bus name");
        r = sd_bus_call_method_async(m->bus, &m->name_slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "RequestName", on_request_name, m, "su", m->bus_name,
                                     (uint32_t) 0 /* queue; neither replace nor be replaced */);
        if (r < 0)
                return log_error_errno(r, "Cannot ask for the bus name %s", m->bus_name);
        return 0;
}

int manager_startup(Manager *m, char **ret_why) {
        int r;

        log_set_domain(m->id);
        m->state = DOMAIN_STARTING;
        m->startup_usec = now_usec();

        r = setup_activation(m);
        if (r < 0)
                return r;
        r = load_domain(m, ret_why);
        if (r < 0)
                return r;
        manager_update_status(m);
        r = take_lock(m, ret_why);
        if (r < 0)
                return r;
        r = open_store(m, ret_why);
        if (r < 0)
                return r;
        if (!m->maintenance)
                apply_retention(m);
        return connect_bus(m);
}

/* ------------------------------------------------------------ lifecycle */

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        m->idle_timer = sd_event_source_disable_unref(m->idle_timer);
        if (m->n_sessions == 0 && m->state == DOMAIN_RUNNING) {
                log_info("No session for %llu s; stopping", (unsigned long long) (IDLE_TIMEOUT_USEC / 1000000));
                manager_stop(m, NULL);
        }
        return 0;
}

static void arm_idle_timer(Manager *m) {
        m->idle_timer = sd_event_source_disable_unref(m->idle_timer);
        (void) sd_event_add_time_relative(m->event, &m->idle_timer, CLOCK_MONOTONIC, IDLE_TIMEOUT_USEC, 0, on_idle, m);
}

static int on_maintenance_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        m->idle_timer = sd_event_source_disable_unref(m->idle_timer);
        if (m->state == DOMAIN_MAINTENANCE) {
                log_info("No maintenance call for %llu s; stopping", (unsigned long long) (MAINTENANCE_IDLE_USEC / 1000000));
                manager_stop(m, NULL);
        }
        return 0;
}

void manager_maintenance_touch(Manager *m) {
        int r;

        if (m->state != DOMAIN_MAINTENANCE)
                return;
        m->idle_timer = sd_event_source_disable_unref(m->idle_timer);
        r = sd_event_add_time_relative(m->event, &m->idle_timer, CLOCK_MONOTONIC, MAINTENANCE_IDLE_USEC, 0,
                                       on_maintenance_idle, m);
        if (r < 0) {
                log_error_errno(r, "Cannot arm the maintenance idle timer; stopping");
                manager_stop(m, NULL);
        }
}

static void escalation_audit(const EscalationEvent *evs, size_t n, void *userdata) {
        Manager *m = userdata;

        audit_writer_add(m->audit, evs, n);
}

static Session *escalation_find_session(const char *id, void *userdata) {
        return manager_find_session(userdata, id);
}

/*
 * The names an ended session left in the mailbox, forgotten in batches:
 * each forgetting is an exec into the sandbox (a `runsc exec`, a Go
 * start-up of about 50 ms of CPU, until lazaret-runsc took its place),
 * which after every session would compete with the next launch. A batch
 * goes after FORGET_DELAY_USEC, at once when FORGET_BATCH_MAX sessions
 * wait or the mailbox's file systems run short of names.
 */
#define FORGET_DELAY_USEC (2ULL * 1000 * 1000)
#define FORGET_BATCH_MAX 32

static void forget_flush(Manager *m) {
        _cleanup_strv_free_ char **ids = TAKE_PTR(m->forget_pending);
        int r;

        m->forget_timer = sd_event_source_disable_unref(m->forget_timer);
        /* A Domain going down takes its mailbox with it. */
        if (!ids || m->state != DOMAIN_RUNNING || !m->sandbox)
                return;
        r = sandbox_forget_mailbox(sandbox_runtime(m->sandbox), ids);
        if (r < 0)
                log_warning("Cannot have the sandbox forget the mailbox names of %zu sessions: %s", strv_length(ids),
                            strerror(-r));
}

static int on_forget_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        forget_flush(userdata);
        return 0;
}

static void escalation_forget_session(const char *session_id, void *userdata) {
        Manager *m = userdata;
        int r;

        if (m->state != DOMAIN_RUNNING || !m->sandbox)
                return;
        r = strv_extend(&m->forget_pending, session_id);
        if (r < 0 || strv_length(m->forget_pending) >= FORGET_BATCH_MAX || escalations_mailbox_scarce(m->escalations)) {
                forget_flush(m);
                return;
        }
        if (m->forget_timer)
                return;
        r = sd_event_add_time_relative(m->event, &m->forget_timer, CLOCK_MONOTONIC, FORGET_DELAY_USEC, 0,
                                       on_forget_timer, m);
        if (r < 0)
                forget_flush(m);
}

static void escalation_abort_session(Session *s, void *userdata) {
        session_close(s, "the developer aborted it at an escalation prompt");
}

static void escalation_pending(const char *request_id, const char *session_id, char *const *argv, const char *why,
                               void *userdata) {
        Manager *m = userdata;

        manager_emit_escalation_requested(m, request_id, session_id);
        notifier_show(m->notifier, request_id, session_id, argv, why);
}

static void escalation_resolved(const char *request_id, void *userdata) {
        Manager *m = userdata;

        notifier_withdraw(m->notifier, request_id);
}

static void notification_decided(const char *request_id, bool approve, void *userdata) {
        Manager *m = userdata;

        (void) escalations_decide(m->escalations, request_id, approve, NULL, ESC_BY_NOTIFICATION);
}

/* Host escalation (spec section 5.6), when the configuration enables it. */
static int start_escalations(Manager *m) {
        _cleanup_free_ char *error = NULL;
        int r;

        if (sandbox_mailbox_fd(m->sandbox) < 0)
                return 0;
        m->notifier = notifier_new(m->bus, m->domain->profile->name, (NotifierCallbacks) { .decide = notification_decided }, m);
        if (!m->notifier)
                return -ENOMEM;
        r = escalations_new(&(EscalationsParams) {
                                    .event = m->event,
                                    .bus = m->bus,
                                    .dir_fd = sandbox_mailbox_fd(m->sandbox),
                                    .domain_id = m->id,
                                    .profile = m->domain->profile->name,
                                    .workspace = m->domain->workspace,
                                    .config = m->config,
                                    .cb = { .find_session = escalation_find_session,
                                            .abort_session = escalation_abort_session,
                                            .pending = escalation_pending,
                                            .resolved = escalation_resolved,
                                            .forget_session = escalation_forget_session,
                                            .audit = escalation_audit },
                                    .userdata = m,
                            }, &m->escalations, &error);
        if (r < 0)
                return log_error_errno(r, "Cannot start host escalation: %s", error ?: "");
        r = escalations_set_sandbox(m->escalations, sandbox_id(m->sandbox), &error);
        if (r < 0)
                return log_error_errno(r, "Cannot make the generation's Trust Anchor: %s", error ?: "");
        return 0;
}

static void sandbox_ready(Sandbox *sb, void *userdata) {
        Manager *m = userdata;
        int r;

        if (m->state != DOMAIN_STARTING)
                return;
        r = start_escalations(m);
        if (r < 0) {
                manager_stop(m, "cannot start host escalation (see the log)");
                return;
        }
        r = manager_egress_start(m);
        if (r < 0) {
                manager_stop(m, "cannot watch the egress helper's denied names (see the log)");
                return;
        }
        if (r == 0)
                manager_finish_start(m);
}

void manager_finish_start(Manager *m) {
        int r;

        if (m->state != DOMAIN_STARTING)
                return;
        r = manager_publish(m);
        if (r < 0) {
                manager_stop(m, "cannot publish the Domain on the bus");
                return;
        }
        m->state = DOMAIN_RUNNING;
        manager_emit_state_changed(m);
        (void) sd_notify(false, "READY=1");
        manager_update_status(m);
        log_info("Domain %s published %" PRIu64 " ms after the coordinator's start-up began", m->id,
                 (now_usec() - m->startup_usec) / 1000);
        waiters_answer(m, /* started= */ true);
        arm_idle_timer(m);
}

static void sandbox_failed(Sandbox *sb, const char *why, void *userdata) {
        manager_stop(userdata, why);
}

static void finish(Manager *m) {
        waiters_answer(m, /* started= */ false);
        (void) sd_event_exit(m->event, m->exit_code);
}

static void sandbox_stopped(Sandbox *sb, void *userdata) {
        Manager *m = userdata;

        log_info("Sandbox stopped; Domain %s torn down", m->id);
        finish(m);
}

/* From the loop: everything manager_stop() decided, in the order the model checks. */
static int on_teardown(sd_event_source *s, void *userdata) {
        Manager *m = userdata;
        const char *reason = m->failure ?: "the Domain is stopping";

        m->teardown = sd_event_source_disable_unref(m->teardown);

        /* End the sessions while the bus name is still ours, so that their
         * clients get SessionEnded (C9); then withdraw publication. */
        while (m->sessions) {
                Session *x = m->sessions;
                char id[SESSION_ID_LEN + 1];

                memcpy(id, x->id, sizeof(id));
                session_abandon(x);
                manager_remove_session(m, x);
                log_session(LOG_INFO, id, "Session ended by the Domain's teardown: %s", reason);
                manager_emit_session_ended(m, id, -1, reason);
        }
        /* Denied names: the helper goes with the sandbox. */
        manager_egress_stop(m);
        /* Before the sandbox goes: the mailbox's file system goes with it, and what it had to forget. */
        m->escalations = escalations_free(m->escalations);
        m->forget_pending = strv_free(m->forget_pending);
        m->forget_timer = sd_event_source_disable_unref(m->forget_timer);
        m->notifier = notifier_free(m->notifier);
        /* The audit trail's last events are in the store before the Domain is said to be gone. */
        audit_writer_flush_all(m->audit);
        manager_emit_state_changed(m);
        m->object_slot = sd_bus_slot_unref(m->object_slot);
        m->name_slot = sd_bus_slot_unref(m->name_slot);
        m->name_acquired_slot = sd_bus_slot_unref(m->name_acquired_slot);
        m->name_timer = sd_event_source_disable_unref(m->name_timer);
        if (m->bus)
                (void) sd_bus_release_name_async(m->bus, NULL, m->bus_name, NULL, NULL);

        /* Waiting clients are told; new ones wait for the next coordinator. */
        waiters_answer(m, /* started= */ false);
        activation_stop_listening(m->activation);

        /* Only now, with every session ended: the user manager stops the
         * scopes bound to the service (the sandbox's, the host commands')
         * as soon as it hears STOPPING=1. Said earlier, it killed the
         * sandbox under a session whose exec client then printed its own
         * "urpc method containerManager.WaitPID failed: EOF" into the
         * client's standard error before the reason reached it. */
        (void) sd_notify(false, "STOPPING=1");
        if (!m->sandbox || sandbox_stop(m->sandbox) == 0)
                finish(m);
        /* else: sandbox_stopped() finishes. */
        return 0;
}

#if ENABLE_TEST_HOOKS
/*
 * A test hook (test builds only, test-hooks.h): LAZARET_TEST_TEARDOWN_DELAY
 * in the coordinator's environment, a number of milliseconds (1 to 10000)
 * for which the teardown waits after manager_stop() decided it, as it may
 * wait behind other work of a loaded machine. The tests use it to hold a
 * Domain in "stopping" or "failed" with its sessions and sandbox still
 * there (test-session-teardown.sh).
 */
static uint64_t teardown_delay_usec(void) {
        const char *v = getenv("LAZARET_TEST_TEARDOWN_DELAY");
        int ms;

        if (!v)
                return 0;
        if (parse_int(v, 1, 10000, &ms) < 0) {
                log_warning("LAZARET_TEST_TEARDOWN_DELAY is not a number of milliseconds from 1 to 10000; not delayed");
                return 0;
        }
        log_warning("Test fault in effect: the teardown waits %d ms", ms);
        return (uint64_t) ms * 1000;
}

static int on_teardown_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        return on_teardown(s, userdata);
}
#endif

/* The teardown, from the loop: at once, or in a test build as late as the hook says. */
static int schedule_teardown(Manager *m) {
#if ENABLE_TEST_HOOKS
        uint64_t delay = teardown_delay_usec();

        if (delay > 0)
                return sd_event_add_time_relative(m->event, &m->teardown, CLOCK_MONOTONIC, delay, 0, on_teardown_timer, m);
#endif
        return sd_event_add_defer(m->event, &m->teardown, on_teardown, m);
}

void manager_stop(Manager *m, const char *failure) {
        bool was_starting = m->state == DOMAIN_STARTING;
        int r;

        if (m->state == DOMAIN_STOPPING || m->state == DOMAIN_FAILED)
                return;
        if (failure) {
                m->state = DOMAIN_FAILED;
                /* The connections queued until now waited for this start and hear that it failed; those
                 * that come later, while it is torn down, and those left by a stopping coordinator or by a
                 * published Domain that failed (its sandbox died) stay queued for the coordinator the
                 * socket starts next: a launch right after a crash gets a new Domain, not the old one's
                 * failure. */
                if (was_starting)
                        activation_take_queued(m->activation);
                m->exit_code = 1;
                free(m->failure);
                m->failure = strdup(failure);
                log_error("Domain %s failed: %s", m->id, failure);
        } else {
                m->state = DOMAIN_STOPPING;
                log_info("Domain %s stopping", m->id);
        }
        /* An orderly stop before publication is not a failed start: the
         * service manager hears READY=1 first, or it would call it one. */
        if (was_starting && !failure)
                (void) sd_notify(false, "READY=1");
        /* STOPPING=1 waits for the teardown's sessions (on_teardown()). */
        (void) sd_notifyf(false, "STATUS=%s%s", failure ? "failed: " : "stopping", strempty(failure));
        m->idle_timer = sd_event_source_disable_unref(m->idle_timer);
        /* No new client from here on either: one that connects now waits for
         * the next coordinator, and so a launch that meets this Domain going
         * down (its OpenSession refused, it launches again) gets a new Domain,
         * not this one's failure as if its own start had failed. Those
         * waiting already hear this one's answer from the teardown. */
        activation_stop_listening(m->activation);
        /* No new sessions from here on (OpenSession checks the state). */
        r = schedule_teardown(m);
        if (r < 0) {
                log_error_errno(r, "Cannot schedule the teardown; exiting");
                (void) sd_event_exit(m->event, 1);
        }
}

/* -------------------------------------------------------------- sessions */

Session *manager_find_session(Manager *m, const char *id) {
        for (Session *s = m->sessions; s; s = s->next)
                if (streq(s->id, id))
                        return s;
        return NULL;
}

static void session_ended(Session *s, int exit_status, const char *reason, void *userdata) {
        Manager *m = userdata;
        _cleanup_free_ char *why = NULL;
        char id[SESSION_ID_LEN + 1];

        /* The exec client lost the sandbox, and the Domain's failure is
         * known already, its teardown still to come: the session ends as
         * the teardown would end it, with that reason, not with the
         * client's status alone. */
        if (exit_status >= 128 && !reason && m->state == DOMAIN_FAILED && m->failure) {
                exit_status = -1;
                reason = m->failure;
        }
        why = reason ? strdup(reason) : NULL;
        memcpy(id, s->id, sizeof(id));
        manager_remove_session(m, s);

        manager_emit_session_ended(m, id, exit_status, why);
        manager_update_status(m);
        manager_emit_sessions_changed(m);
        /* FR-6: the last session leaving tears the Domain down. */
        if (m->n_sessions == 0 && m->state == DOMAIN_RUNNING)
                manager_stop(m, NULL);
}

/* The profile's command, else the image's, else a login shell with the one shell every image has. */
static char **default_command(Manager *m) {
        if (m->domain->profile->command)
                return strv_copy(m->domain->profile->command);
        if (sandbox_default_command(m->sandbox))
                return strv_copy(sandbox_default_command(m->sandbox));
        return strv_copy((char *[]) { (char *) "/bin/sh", (char *) "-l", NULL });
}

/* SessionParams.prepare: the session's escalation mailbox names, before its command starts. */
static int session_prepare(Session *s, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = escalations_session_opened(m->escalations, s);
        if (r == -ENOSPC) {
                /* Every session open holds names, and one that ended holds them until gVisor forgets them. */
                r = sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                      "The Escalation Mailbox of Domain %s is full: its names are held by the "
                                      "sessions open (%u) and, for a moment, by those that just ended; end a "
                                      "session or wait, then launch again, or stop the Domain (lazaretctl stop)",
                                      m->id, m->n_sessions);
                log_warning("Refused a session: %s", error->message);
                return r;
        }
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot create the session's escalation doorbell: %m");
        return 0;
}

/* SessionParams.unprepare: a session refused after its names were made leaves none behind. */
static void session_unprepare(Session *s, void *userdata) {
        Manager *m = userdata;

        escalations_session_closed(m->escalations, s);
}

int manager_open_session(Manager *m, const SessionParams *p, Session **ret, sd_bus_error *error) {
        _cleanup_strv_free_ char **argv = NULL;
        SessionParams q = *p;
        Session *s = NULL;
        int r;

        if (!p->argv || !p->argv[0]) {
                argv = default_command(m);
                if (!argv)
                        return -ENOMEM;
                q.argv = argv;
        }
        q.event = m->event;
        q.bus = m->bus;
        q.runtime = sandbox_runtime(m->sandbox);
        q.cb = (SessionCallbacks) { .ended = session_ended };
        q.userdata = m;
        q.escalation = m->escalations;
        q.prepare = session_prepare;
        q.unprepare = session_unprepare;
        r = session_new(&q, &s, error);
        if (r < 0 || sd_bus_error_is_set(error)) {
                /* A full mailbox was logged as the refusal it is (session_prepare()). */
                if (!sd_bus_error_has_name(error, SD_BUS_ERROR_LIMITS_EXCEEDED))
                        log_warning("Session could not start: %s", error->message ?: strerror(-r));
                return r;
        }
        s->next = m->sessions;
        if (m->sessions)
                m->sessions->prev = s;
        m->sessions = s;
        m->n_sessions++;
        m->idle_timer = sd_event_source_disable_unref(m->idle_timer);
        manager_update_status(m);
        manager_emit_sessions_changed(m);
        *ret = s;
        return 0;
}
