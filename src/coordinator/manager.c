/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-daemon.h>

#include "cleanup.h"
#include "hash.h"
#include "launch-request.h"
#include "log.h"
#include "manager.h"
#include "path-util.h"
#include "sandbox.h"
#include "session.h"

/* A published Domain nobody uses is torn down after this long. */
#define IDLE_TIMEOUT_USEC (30ULL * 1000 * 1000)

static const char *const state_names[] = {
        [DOMAIN_STARTING] = "starting",
        [DOMAIN_RUNNING] = "running",
        [DOMAIN_STOPPING] = "stopping",
        [DOMAIN_FAILED] = "failed",
};

const char *domain_state_to_string(DomainState s) {
        return s < ELEMENTSOF(state_names) ? state_names[s] : "unknown";
}

int random_hex_id(char ret[RANDOM_ID_LEN + 1]) {
        uint8_t b[RANDOM_ID_LEN / 2];

        if (getrandom(b, sizeof(b), 0) != (ssize_t) sizeof(b))
                return -EIO;
        hexify(b, sizeof(b), ret);
        return 0;
}

int manager_new(const char *id, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        if (!domain_id_is_valid(id))
                return -EINVAL;
        m = calloc(1, sizeof(Manager));
        if (!m)
                return -ENOMEM;
        m->lock_fd = -EBADF;
        m->listen_fd = -EBADF;
        memcpy(m->id, id, sizeof(m->id));
        domain_bus_name(id, m->bus_name);
        r = random_hex_id(m->coordinator_id);
        if (r < 0)
                return r;
        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

static void waiter_add(Manager *m, int fd) {
        Waiter *w = calloc(1, sizeof(Waiter));

        if (!w) {
                safe_close(fd);
                return;
        }
        w->fd = fd;
        w->next = m->waiters;
        m->waiters = w;
}

static void waiters_answer(Manager *m) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_free_ char *line = NULL;

        /* A failed coordinator answers the connections it has not accepted
         * yet too: left queued, they would activate it again and again. A
         * stopping one leaves them queued for the coordinator that the
         * socket starts after it. */
        if (m->listen_fd >= 0 && m->state == DOMAIN_FAILED)
                for (unsigned i = 0; i < 256; i++) {
                        int cfd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                        if (cfd < 0)
                                break;
                        waiter_add(m, cfd);
                }

        json_object_object_add(o, "state", json_object_new_string(domain_state_to_string(m->state)));
        json_object_object_add(o, "domain_id", json_object_new_string(m->id));
        json_object_object_add(o, "bus_name", json_object_new_string(m->bus_name));
        json_object_object_add(o, "coordinator_id", json_object_new_string(m->coordinator_id));
        if (m->failure)
                json_object_object_add(o, "error", json_object_new_string(m->failure));
        if (asprintf(&line, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) < 0)
                return;

        while (m->waiters) {
                Waiter *w = m->waiters;
                m->waiters = w->next;
                /* Best effort: a client that left does not matter. */
                (void) send(w->fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
                safe_close(w->fd);
                free(w);
        }
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        while (m->sessions)
                session_free(m->sessions);
        sandbox_free(m->sandbox);
        while (m->waiters) {
                Waiter *w = m->waiters;
                m->waiters = w->next;
                safe_close(w->fd);
                free(w);
        }
        sd_event_source_unref(m->listen_source);
        sd_event_source_unref(m->idle_timer);
        safe_close(m->listen_fd);
        sd_bus_slot_unref(m->object_slot);
        if (m->bus)
                sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        domain_free(m->domain);
        config_free(m->config);
        free(m->runtime_root);
        free(m->runtime_dir);
        free(m->failure);
        safe_close(m->lock_fd);
        free(m);
        return NULL;
}

void manager_update_status(Manager *m) {
        (void) sd_notifyf(false, "STATUS=%s: profile %s, workspace %s, %u session%s",
                          domain_state_to_string(m->state),
                          m->domain ? m->domain->profile->name : "?",
                          m->domain ? m->domain->workspace : "?",
                          m->n_sessions, m->n_sessions == 1 ? "" : "s");
}

/* ------------------------------------------------------ activation socket */

static int on_connection(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        _cleanup_close_ int cfd = -EBADF;
        unsigned n = 0;

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0)
                return 0;

        /* Bounded: a flood of connections is answered "busy" by closing. */
        for (Waiter *w = m->waiters; w; w = w->next)
                n++;
        if (n >= 256)
                return 0;

        waiter_add(m, TAKE_FD(cfd));
        if (m->state != DOMAIN_STARTING)
                waiters_answer(m);
        return 0;
}

static int setup_listen_socket(Manager *m) {
        int n, r;

        n = sd_listen_fds(true);
        if (n < 0)
                return log_error_errno(n, "Failed to read passed file descriptors");
        if (n == 0) {
                log_info("Started without an activation socket; clients must use the bus");
                return 0;
        }
        if (n > 1)
                log_warning("Expected one activation socket, got %d; using the first", n);
        for (int i = 1; i < n; i++)
                safe_close(SD_LISTEN_FDS_START + i);
        m->listen_fd = SD_LISTEN_FDS_START;
        r = sd_is_socket_unix(m->listen_fd, SOCK_STREAM, 1, NULL, 0);
        if (r <= 0)
                return log_error_errno(r < 0 ? r : -EINVAL, "The passed fd is not a listening stream socket");
        (void) fcntl(m->listen_fd, F_SETFL, O_NONBLOCK);
        r = sd_event_add_io(m->event, &m->listen_source, m->listen_fd, EPOLLIN, on_connection, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the activation socket");
        return 0;
}

/* ------------------------------------------------------------- startup */

static int load_domain(Manager *m) {
        _cleanup_(host_context_done) HostContext host = {};
        _cleanup_free_ char *error = NULL, *runtime_root = NULL;
        LaunchRequest req = {};
        DomainRecord rec = {};
        char fp[SHA256_HEX_LEN + 1];
        int r;

        /* The user manager's environment, read once; nothing below reads it again. */
        r = host_context_from_environment(&host);
        if (r < 0)
                return log_error_errno(r, "Cannot collect the environment");
        r = runtime_dir_prepare(&host, &runtime_root, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Cannot prepare the runtime directory");

        r = launch_request_read(runtime_root, m->id, &req, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Cannot read the launch request");

        /* The very file the client validated, and nothing else. */
        if (req.config_path)
                r = config_load(&host, req.config_path, &m->config, &error);
        else
                r = config_load_builtin(&host, &m->config, &error);
        if (r < 0) {
                launch_request_done(&req);
                return log_error_errno(r, "%s", error ?: "Cannot load the configuration");
        }
        config_fingerprint_hex(m->config, fp);
        if (!streq(fp, req.fingerprint)) {
                launch_request_done(&req);
                return log_error_errno(-ESTALE,
                                       "The configuration %s changed between lazaretctl's check and the coordinator's start (fingerprint %s, expected %s)",
                                       m->config->path ?: "(built-in)", fp, req.fingerprint);
        }
        memcpy(m->fingerprint, fp, sizeof(fp));
        launch_request_done(&req);

        r = domain_record_load(m->config->data_root, m->id, &rec, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Cannot load the Domain record");

        /* Recompute the identity from the record: the instance name must match (SR-11). */
        r = domain_new(m->config, &host, rec.profile, rec.workspace, &m->domain, &error);
        domain_record_done(&rec);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Invalid Domain");
        if (!streq(m->domain->id, m->id))
                return log_error_errno(-EBADMSG, "Domain record for %s resolves to Domain %s", m->id, m->domain->id);
        r = domain_validate(m->domain, &error);
        if (r >= 0)
                r = domain_storage_prepare(m->domain, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Domain validation failed");

        m->runtime_root = TAKE_PTR(runtime_root);
        m->runtime_dir = path_join(m->runtime_root, m->id);
        if (!m->runtime_dir)
                return -ENOMEM;
        return 0;
}

/* OR-1: the Domain lock, held for the coordinator's whole life. */
static int take_lock(Manager *m) {
        _cleanup_free_ char *path = path_join(m->domain->domain_dir, "coordinator.lock");

        if (!path)
                return -ENOMEM;
        m->lock_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (m->lock_fd < 0)
                return log_error_errno(-errno, "Cannot open %s", path);
        if (flock(m->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno == EWOULDBLOCK)
                        return log_error_errno(-EBUSY, "Another coordinator holds %s; refusing to run a second one", path);
                return log_error_errno(-errno, "Cannot lock %s", path);
        }
        return 0;
}

typedef struct NameWait {
        const char *name;
        bool acquired;
} NameWait;

static int on_name_acquired(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        NameWait *w = userdata;
        const char *name;

        /* The bus also announces our unique name: only ours counts. */
        if (sd_bus_message_read(msg, "s", &name) >= 0 && streq(name, w->name))
                w->acquired = true;
        return 0;
}

static uint64_t now_monotonic(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static int take_bus_name(Manager *m) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        NameWait w = { .name = m->bus_name };
        uint64_t deadline;
        int r;

        r = sd_bus_open_user(&m->bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the user bus");

        /* We hold the Domain lock, so no live coordinator owns the name. A
         * predecessor killed a moment ago may still hold it until the bus
         * daemon notices its death: queue for the name, and wait (bounded)
         * for NameAcquired. Anyone else holding it is an error (OR-1). */
        r = sd_bus_match_signal(m->bus, &slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                "org.freedesktop.DBus", "NameAcquired", on_name_acquired, &w);
        if (r < 0)
                return log_error_errno(r, "Cannot watch for the bus name");
        r = sd_bus_request_name(m->bus, m->bus_name, SD_BUS_NAME_QUEUE);
        if (r < 0)
                return log_error_errno(r, "Cannot own the bus name %s", m->bus_name);
        if (r == 0) {
                log_info("Bus name %s is still held; waiting for its previous owner to go", m->bus_name);
                deadline = now_monotonic() + 2ULL * 1000 * 1000;
                while (!w.acquired) {
                        uint64_t n = now_monotonic();

                        r = sd_bus_process(m->bus, NULL);
                        if (r < 0)
                                return log_error_errno(r, "Bus connection failed");
                        if (r > 0)
                                continue;
                        if (n >= deadline) {
                                (void) sd_bus_release_name(m->bus, m->bus_name);
                                return log_error_errno(-EEXIST, "Bus name %s is held by another process", m->bus_name);
                        }
                        r = sd_bus_wait(m->bus, deadline - n);
                        if (r < 0)
                                return log_error_errno(r, "Bus connection failed");
                }
        }

        r = sd_bus_attach_event(m->bus, m->event, 0);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus to the event loop");
        /* Without the bus nobody can reach the Domain: end the process; the
         * sandbox scope is bound to the service and goes with it. */
        (void) sd_bus_set_exit_on_disconnect(m->bus, true);
        return 0;
}
int manager_startup(Manager *m) {
        int r;

        log_set_domain(m->id);
        m->state = DOMAIN_STARTING;

        r = setup_listen_socket(m);
        if (r < 0)
                return r;
        r = load_domain(m);
        if (r < 0)
                return r;
        manager_update_status(m);
        r = take_lock(m);
        if (r < 0)
                return r;
        r = take_bus_name(m);
        if (r < 0)
                return r;

        log_info("Coordinator %s starting Domain %s (profile %s, workspace %s)", m->coordinator_id, m->id,
                 m->domain->profile->name, m->domain->workspace);

        r = sandbox_new(m, &m->sandbox);
        if (r < 0)
                return log_error_errno(r, "Cannot set up the sandbox");
        /* FR-7: whatever a killed predecessor left is removed before anything new starts. */
        r = sandbox_recover(m->sandbox);
        if (r < 0)
                return log_error_errno(r, "Cannot recover from a previous run");
        r = sandbox_start(m->sandbox);
        if (r < 0)
                return log_error_errno(r, "Cannot start the sandbox");
        return 0;
}

/* ------------------------------------------------------------ lifecycle */

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        if (m->n_sessions == 0 && m->state == DOMAIN_RUNNING) {
                log_info("No session for %llu s; stopping", (unsigned long long) (IDLE_TIMEOUT_USEC / 1000000));
                manager_stop(m, NULL);
        }
        return 0;
}

static void arm_idle_timer(Manager *m) {
        m->idle_timer = sd_event_source_unref(m->idle_timer);
        (void) sd_event_add_time_relative(m->event, &m->idle_timer, CLOCK_MONOTONIC, IDLE_TIMEOUT_USEC, 0, on_idle, m);
}

void manager_sandbox_ready(Manager *m) {
        int r;

        if (m->state != DOMAIN_STARTING)
                return;
        r = manager_publish(m);
        if (r < 0) {
                manager_stop(m, "cannot publish the Domain on the bus");
                return;
        }
        m->state = DOMAIN_RUNNING;
        (void) sd_notifyf(false, "READY=1\nSTATUS=running: profile %s, workspace %s, 0 sessions",
                          m->domain->profile->name, m->domain->workspace);
        log_info("Domain %s published", m->id);
        waiters_answer(m);
        arm_idle_timer(m);
}

void manager_sandbox_failed(Manager *m, const char *why) {
        log_error("Sandbox failed: %s", why);
        manager_stop(m, why);
}

static void finish(Manager *m) {
        /* The launch request stays: a client may already have written the
         * next one, for the coordinator that the socket starts after us. */
        waiters_answer(m);
        (void) sd_event_exit(m->event, m->exit_code);
}

void manager_sandbox_stopped(Manager *m) {
        if (m->state == DOMAIN_STOPPING || m->state == DOMAIN_FAILED) {
                log_info("Sandbox stopped; Domain %s torn down", m->id);
                finish(m);
                return;
        }
        /* The sandbox went away on its own: the Domain has failed. */
        manager_stop(m, "the sandbox stopped unexpectedly");
}

void manager_stop(Manager *m, const char *failure) {
        if (m->state == DOMAIN_STOPPING || m->state == DOMAIN_FAILED)
                return;

        if (failure) {
                m->state = DOMAIN_FAILED;
                m->exit_code = 1;
                free(m->failure);
                m->failure = strdup(failure);
                log_error("Domain %s failed: %s", m->id, failure);
        } else {
                m->state = DOMAIN_STOPPING;
                log_info("Domain %s stopping", m->id);
        }
        (void) sd_notifyf(false, "STOPPING=1\nSTATUS=%s", failure ? failure : "stopping");
        m->idle_timer = sd_event_source_unref(m->idle_timer);

        /* No new sessions from here on (OpenSession checks the state). End
         * the sessions while the bus name is still ours, so their clients
         * get SessionEnded; then withdraw publication; then the sandbox. */
        while (m->sessions)
                session_end(m->sessions, -1, failure ? failure : "the Domain is stopping");

        m->object_slot = sd_bus_slot_unref(m->object_slot);
        if (m->bus) {
                (void) sd_bus_flush(m->bus);
                (void) sd_bus_release_name(m->bus, m->bus_name);
        }
        /* Waiting clients are told; new ones wait for the next coordinator. */
        waiters_answer(m);
        m->listen_source = sd_event_source_unref(m->listen_source);

        if (!m->sandbox || sandbox_stop(m->sandbox) <= 0)
                finish(m);
        /* else: manager_sandbox_stopped() finishes. */
}

void manager_session_added(Manager *m) {
        m->n_sessions++;
        m->sessions_ever++;
        m->idle_timer = sd_event_source_unref(m->idle_timer);
        manager_update_status(m);
        manager_emit_sessions_changed(m);
}

void manager_session_removed(Manager *m) {
        m->n_sessions--;
        manager_update_status(m);
        manager_emit_sessions_changed(m);
        /* FR-6: the last session leaving tears the Domain down. */
        if (m->n_sessions == 0 && m->state == DOMAIN_RUNNING)
                manager_stop(m, NULL);
}
