/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl launch/status/list/stop: the Domain verbs. `launch` validates
 * the configuration and the Domain exactly as the coordinator will, records
 * the launch request, activates lazaret@ID.service through its socket, waits
 * for the coordinator's one-line answer, then opens a session with one
 * D-Bus call and waits for its SessionEnded signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-names.h"
#include "bus-util.h"
#include "cleanup.h"
#include "config.h"
#include "ctl.h"
#include "domain.h"
#include "json-util.h"
#include "launch-request.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"

#define ACTIVATION_TIMEOUT_SEC 300
#define STATUS_LINE_MAX 4096

static void sd_bus_unrefp_(sd_bus **b) {
        if (*b)
                sd_bus_flush_close_unref(*b);
}
#define _cleanup_bus_ _cleanup_(sd_bus_unrefp_)

static int bus_open(sd_bus **ret) {
        int r = sd_bus_open_user(ret);
        if (r < 0)
                fprintf(stderr, "Cannot connect to the user bus: %s\n"
                        "Lazaret needs a systemd user session (is $DBUS_SESSION_BUS_ADDRESS or $XDG_RUNTIME_DIR set?).\n",
                        strerror(-r));
        return r;
}

/* Validates everything launch would validate; prints the reason on failure. */
static int prepare_domain(const Config *c, Domain **ret_domain, char **ret_runtime) {
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *error = NULL, *runtime = NULL;
        int r;

        r = domain_new(c, &arg_host, arg_profile, arg_workspace, &d, &error);
        if (r >= 0)
                r = domain_validate(d, &error);
        if (r >= 0)
                r = domain_storage_prepare(d, &error);
        if (r >= 0)
                r = runtime_dir_prepare(&arg_host, &runtime, &error);
        if (r < 0) {
                fprintf(stderr, "%s\n", error ?: strerror(-r));
                return r;
        }
        *ret_domain = TAKE_PTR(d);
        if (ret_runtime)
                *ret_runtime = TAKE_PTR(runtime);
        return 0;
}

/* Starts lazaret@ID.socket and waits for its job: then the socket listens. */
static int start_socket_unit(const char *id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *result = NULL;
        char unit[UNIT_NAME_MAX];
        int r;

        domain_unit_name(id, "socket", unit);
        r = bus_manager_job_wait("StartUnit", bus_append_unit_replace, unit, 30ULL * 1000 * 1000, &result, &error);
        if (r == -ENOENT) {
                fprintf(stderr, "%s is not known to the user manager. Are the Lazaret user units installed? "
                        "Then try: systemctl --user daemon-reload\n", unit);
                return r;
        }
        if (r < 0) {
                fprintf(stderr, "Cannot start %s: %s\n", unit, error.message ?: strerror(-r));
                return r;
        }
        if (!streq(result, "done")) {
                fprintf(stderr, "Starting %s ended with \"%s\"; see: systemctl --user status %s\n", unit, result, unit);
                return -EIO;
        }
        return 0;
}
/*
 * Connects to the activation socket and reads the coordinator's answer: one
 * JSON line, sent once the Domain is published (or has failed). Returns 0
 * with *ret_running set, or a negative errno after printing why.
 */
static int await_domain(const char *runtime_dir, const char *id, bool *ret_running) {
        _cleanup_free_ char *path = NULL, *why = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_json_ json_object *o = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char buf[STATUS_LINE_MAX];
        size_t n = 0;
        json_object *state, *err;
        int r;

        if (asprintf(&path, "%s/%s.sock", runtime_dir, id) < 0)
                return -ENOMEM;
        if (strlen(path) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "Socket path %s is too long.\n", path);
                return -ENAMETOOLONG;
        }
        strcpy(sa.sun_path, path);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                r = -errno;
                fprintf(stderr, "Cannot connect to %s: %s\n", path, strerror(-r));
                return r;
        }

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t k;

                r = poll(&p, 1, ACTIVATION_TIMEOUT_SEC * 1000);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r == 0) {
                        fprintf(stderr, "Domain %s did not become ready within %d s; see: journalctl --user -u lazaret@%s.service\n",
                                id, ACTIVATION_TIMEOUT_SEC, id);
                        return -ETIMEDOUT;
                }
                k = read(fd, buf + n, sizeof(buf) - 1 - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                n += (size_t) k;
                if (memchr(buf, '\n', n) || n == sizeof(buf) - 1)
                        break;
        }
        buf[n] = 0;
        if (n == 0 || !memchr(buf, '\n', n)) {
                fprintf(stderr, "Domain %s stopped before it was ready; see: journalctl --user -u lazaret@%s.service\n", id, id);
                return -ECONNRESET;
        }
        *strchr(buf, '\n') = 0;

        r = json_parse_strict(buf, strlen(buf), &o, &why);
        if (r < 0 || !json_object_object_get_ex(o, "state", &state) || !json_object_is_type(state, json_type_string)) {
                fprintf(stderr, "Domain %s answered something unexpected: %s\n", id, why ?: buf);
                return -EBADMSG;
        }
        if (streq(json_object_get_string(state), "running")) {
                *ret_running = true;
                return 0;
        }
        if (streq(json_object_get_string(state), "stopping")) {
                *ret_running = false;
                return 0;
        }
        if (json_object_object_get_ex(o, "error", &err) && json_object_is_type(err, json_type_string))
                fprintf(stderr, "Domain %s failed to start: %s\n", id, json_object_get_string(err));
        else
                fprintf(stderr, "Domain %s failed to start.\n", id);
        fprintf(stderr, "Details: journalctl --user -u lazaret@%s.service\n", id);
        return -EIO;
}

/* ------------------------------------------------------------- session */

typedef struct Client {
        sd_event *event;
        sd_bus *bus;
        char bus_name[BUS_NAME_MAX];
        char *session_id;
        int exit_status;
        bool ended;
        bool terminal;
        char *pending_signal;   /* SessionEnded before OpenSession returned */
        char *coordinator;      /* unique bus name of the coordinator that runs our session */
        int pending_status;
} Client;

static int on_session_ended(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = userdata;
        const char *sid, *reason;
        int status, r;

        r = sd_bus_message_read(m, "sis", &sid, &status, &reason);
        if (r < 0)
                return 0;
        if (!c->session_id) {
                /* Our OpenSession reply has not been processed yet; keep it. */
                free(c->pending_signal);
                c->pending_signal = strdup(sid);
                c->pending_status = status;
                return 0;
        }
        if (!streq(sid, c->session_id))
                return 0;
        if (status < 0 && !isempty(reason))
                fprintf(stderr, "Session failed: %s\n", reason);
        c->exit_status = status < 0 ? 1 : status;
        c->ended = true;
        return sd_event_exit(c->event, 0);
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = userdata;
        const char *name, *old, *new;

        if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0)
                return 0;
        /* Only the coordinator we talk to counts: a predecessor that died
         * while starting may lose the name only now. */
        if (streq(name, c->bus_name) && isempty(new) && !c->ended && c->coordinator && streq(old, c->coordinator)) {
                fprintf(stderr, "The Domain's coordinator went away.\n");
                c->exit_status = 1;
                c->ended = true;
                return sd_event_exit(c->event, 0);
        }
        return 0;
}

static int send_resize(Client *c) {
        struct winsize ws = {};

        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
                return -errno;
        return sd_bus_call_method_async(c->bus, NULL, c->bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE,
                                        "ResizeSession", NULL, NULL, "sqq", c->session_id, ws.ws_row, ws.ws_col);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Client *c = userdata;

        if (si->ssi_signo == SIGWINCH) {
                if (c->terminal && c->session_id)
                        (void) send_resize(c);
                return 0;
        }
        /* SIGINT without a terminal is the user's Ctrl-C on our terminal: pass
         * it on as an interrupt, the way the command would see it on the host. */
        if (si->ssi_signo == SIGINT && !c->terminal && c->session_id) {
                (void) sd_bus_call_method_async(c->bus, NULL, c->bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE,
                                                "SignalSession", NULL, NULL, "ss", c->session_id, "interrupt");
                return 0;
        }
        /* Anything else ends our session. */
        if (c->session_id)
                (void) sd_bus_call_method(c->bus, c->bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE,
                                          "CloseSession", NULL, NULL, "s", c->session_id);
        c->exit_status = 128 + (int) si->ssi_signo;
        c->ended = true;
        return sd_event_exit(c->event, 0);
}

static int append_env(char ***env, const Profile *p) {
        int r;

        for (size_t i = 0; i < p->n_env; i++) {
                _cleanup_free_ char *kv = NULL;
                const char *v = p->env[i].value;

                if (p->env[i].from_host) {
                        v = getenv(p->env[i].value);
                        if (!v) {
                                fprintf(stderr, "Note: host variable $%s is not set; %s is left unset in the sandbox.\n",
                                        p->env[i].value, p->env[i].name);
                                continue;
                        }
                }
                if (asprintf(&kv, "%s=%s", p->env[i].name, v) < 0)
                        return -ENOMEM;
                r = strv_push(env, kv);
                if (r < 0)
                        return r;
                TAKE_PTR(kv);
        }
        return 0;
}

static int open_session(Client *c, const Domain *d, const char *fingerprint, char **argv) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_strv_free_ char **env = NULL;
        struct winsize ws = {};
        const char *sid;
        int r;

        r = append_env(&env, d->profile);
        if (r < 0)
                return r;
        if (c->terminal) {
                const char *term = getenv("TERM");
                _cleanup_free_ char *kv = NULL;
                if (!isempty(term) && asprintf(&kv, "TERM=%s", term) >= 0 && strv_push(&env, kv) >= 0)
                        TAKE_PTR(kv);
                (void) ioctl(STDIN_FILENO, TIOCGWINSZ, &ws);
        }

        r = sd_bus_message_new_method_call(c->bus, &m, c->bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "OpenSession");
        if (r < 0)
                return r;
        r = sd_bus_message_append_strv(m, argv);
        if (r >= 0)
                r = sd_bus_message_append_strv(m, env ?: (char *[]) { NULL });
        if (r >= 0)
                r = sd_bus_message_append(m, "b", c->terminal);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "h");
        if (r >= 0) {
                if (c->terminal)
                        r = sd_bus_message_append(m, "h", STDIN_FILENO);
                else
                        for (int fd = 0; fd < 3 && r >= 0; fd++)
                                r = sd_bus_message_append(m, "h", fd);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "qqs", (uint16_t) ws.ws_row, (uint16_t) ws.ws_col, fingerprint);
        if (r < 0) {
                fprintf(stderr, "Cannot build the OpenSession call: %s\n", strerror(-r));
                return r;
        }

        r = sd_bus_call(c->bus, m, 0, &error, &reply);
        if (r < 0) {
                if (sd_bus_error_has_names(&error, LAZARET_ERROR_STOPPING, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                           SD_BUS_ERROR_NAME_HAS_NO_OWNER, SD_BUS_ERROR_UNKNOWN_OBJECT))
                        return -EAGAIN;
                fprintf(stderr, "Cannot open a session: %s\n", error.message ?: strerror(-r));
                return r;
        }
        r = sd_bus_message_read(reply, "s", &sid);
        if (r < 0)
                return r;
        c->session_id = strdup(sid);
        c->coordinator = strdup(strempty(sd_bus_message_get_sender(reply)));
        if (!c->session_id || !c->coordinator)
                return -ENOMEM;
        if (c->pending_signal && streq(c->pending_signal, sid)) {
                c->exit_status = c->pending_status < 0 ? 1 : c->pending_status;
                c->ended = true;
        }
        return 0;
}

static struct termios saved_termios;
static bool termios_saved;

static void restore_terminal(void) {
        if (termios_saved)
                (void) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_termios);
}

static int launch(int argc, char *argv[], const Config *config);

int verb_launch(int argc, char *argv[], const Config *config) {
        int r = launch(argc, argv, config);
        restore_terminal();
        return r;
}

static int launch(int argc, char *argv[], const Config *config) {
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *runtime = NULL, *error = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        char fp[SHA256_HEX_LEN + 1];
        Client c = { .exit_status = 1 };
        sigset_t mask;
        int r;

        r = prepare_domain(config, &d, &runtime);
        if (r < 0)
                return r;

        c.terminal = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
        /* The coordinator restores the terminal when the session ends; this
         * copy covers a coordinator that died without doing so. */
        if (c.terminal && tcgetattr(STDIN_FILENO, &saved_termios) >= 0)
                termios_saved = true;
        config_fingerprint_hex(config, fp);
        {
                LaunchRequest req = { .config_path = config->path };
                memcpy(req.fingerprint, fp, sizeof(fp));
                r = launch_request_write(runtime, d->id, &req, &error);
                if (r < 0) {
                        fprintf(stderr, "%s\n", error ?: strerror(-r));
                        return r;
                }
        }

        r = bus_open(&bus);
        if (r < 0)
                return r;
        c.bus = bus;
        domain_bus_name(d->id, c.bus_name);

        sigemptyset(&mask);
        sigaddset(&mask, SIGWINCH);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGQUIT);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = sd_event_new(&event);
        if (r < 0)
                return r;
        c.event = event;
        r = sd_bus_attach_event(bus, event, 0);
        if (r < 0)
                return r;
        r = sd_bus_match_signal(bus, NULL, c.bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "SessionEnded",
                                on_session_ended, &c);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                        "org.freedesktop.DBus", "NameOwnerChanged", on_name_owner_changed, &c);
        if (r < 0) {
                fprintf(stderr, "Cannot subscribe to Domain signals: %s\n", strerror(-r));
                return r;
        }

        r = start_socket_unit(d->id);
        if (r < 0)
                return r;

        /* A Domain that is tearing down answers "stopping": the next
         * connection waits in the socket's queue for the coordinator that
         * starts after it. Bounded. */
        for (unsigned attempt = 0;; attempt++) {
                bool running = false;

                r = await_domain(runtime, d->id, &running);
                if (r < 0)
                        return r;
                if (running) {
                        r = open_session(&c, d, fp, argc > 1 ? argv + 1 : (char *[]) { NULL });
                        if (r != -EAGAIN)
                                break;
                }
                if (attempt >= 10) {
                        fprintf(stderr, "Domain %s keeps stopping; giving up.\n", d->id);
                        return -EAGAIN;
                }
        }
        if (r < 0)
                return r;

        for (int sig = 1; sig < _NSIG; sig++)
                if (sigismember(&mask, sig) == 1)
                        (void) sd_event_add_signal(event, NULL, sig, on_signal, &c);
        if (c.terminal)
                (void) send_resize(&c);

        if (!c.ended) {
                r = sd_event_loop(event);
                if (r < 0)
                        return r;
        }
        return c.exit_status;
}

/* ------------------------------------------------------ status, list, stop */

static int get_string_property(sd_bus *bus, const char *name, const char *prop, char **ret) {
        return sd_bus_get_property_string(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, prop, NULL, ret);
}

static int domain_properties_json(sd_bus *bus, const char *bus_name, json_object **ret) {
        static const char *const props[] = { "DomainId", "Profile", "Workspace", "State", "CoordinatorId",
                                             "SandboxId", "ConfigurationFingerprint", NULL };
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        json_object *sessions;
        int r;

        for (size_t i = 0; props[i]; i++) {
                _cleanup_free_ char *v = NULL;
                r = get_string_property(bus, bus_name, props[i], &v);
                if (r < 0)
                        return r;
                json_object_object_add(o, props[i], json_object_new_string(v));
        }

        r = sd_bus_get_property(bus, bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "Sessions", NULL, &reply, "a(ssusbt)");
        if (r < 0)
                return r;
        sessions = json_object_new_array();
        json_object_object_add(o, "Sessions", sessions);
        r = sd_bus_message_enter_container(reply, 'a', "(ssusbt)");
        if (r < 0)
                return r;
        for (;;) {
                const char *sid, *owner, *cmd;
                uint32_t pid;
                int term;
                uint64_t started;
                json_object *s;

                r = sd_bus_message_read(reply, "(ssusbt)", &sid, &owner, &pid, &cmd, &term, &started);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                s = json_object_new_object();
                json_object_object_add(s, "id", json_object_new_string(sid));
                json_object_object_add(s, "owner", json_object_new_string(owner));
                json_object_object_add(s, "pid", json_object_new_int64(pid));
                json_object_object_add(s, "command", json_object_new_string(cmd));
                json_object_object_add(s, "terminal", json_object_new_boolean(term));
                json_object_object_add(s, "started_usec", json_object_new_uint64(started));
                json_object_array_add(sessions, s);
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static const char *jstr(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

static void print_domain(json_object *o) {
        json_object *sessions = NULL;

        printf("Domain %s\n", jstr(o, "DomainId"));
        printf("  %-16s%s\n", "Profile:", jstr(o, "Profile"));
        printf("  %-16s%s\n", "Workspace:", jstr(o, "Workspace"));
        printf("  %-16s%s\n", "State:", jstr(o, "State"));
        printf("  %-16s%s\n", "Sandbox:", jstr(o, "SandboxId"));
        printf("  %-16s%s\n", "Coordinator:", jstr(o, "CoordinatorId"));
        printf("  %-16s%s\n", "Configuration:", jstr(o, "ConfigurationFingerprint"));
        json_object_object_get_ex(o, "Sessions", &sessions);
        printf("  %-16s%zu\n", "Sessions:", sessions ? json_object_array_length(sessions) : 0);
        for (size_t i = 0; sessions && i < json_object_array_length(sessions); i++) {
                json_object *s = json_object_array_get_idx(sessions, i);
                printf("    %s  pid %s  %s%s\n", jstr(s, "id"), jstr(s, "pid"), jstr(s, "command"),
                       json_object_get_boolean(json_object_object_get(s, "terminal")) ? "  (terminal)" : "");
        }
}

/* The Domain a verb is about: the ID given, or that of the profile and workspace. */
static int target_domain_id(int argc, char *argv[], const Config *config, char ret[DOMAIN_ID_LEN + 1]) {
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        if (argc > 1) {
                if (!domain_id_is_valid(argv[1])) {
                        fprintf(stderr, "\"%s\" is not a Domain ID (12 lowercase hex digits).\n", argv[1]);
                        return -EINVAL;
                }
                memcpy(ret, argv[1], DOMAIN_ID_LEN + 1);
                return 0;
        }
        r = domain_new(config, &arg_host, arg_profile, arg_workspace, &d, &error);
        if (r < 0) {
                fprintf(stderr, "%s\n", error ?: strerror(-r));
                return r;
        }
        memcpy(ret, d->id, DOMAIN_ID_LEN + 1);
        return 0;
}

int verb_status(int argc, char *argv[], const Config *config) {
        _cleanup_bus_ sd_bus *bus = NULL;
        _cleanup_json_ json_object *o = NULL;
        char name[BUS_NAME_MAX], id[DOMAIN_ID_LEN + 1];
        int r;

        r = target_domain_id(argc, argv, config, id);
        if (r < 0)
                return r;
        r = bus_open(&bus);
        if (r < 0)
                return r;
        domain_bus_name(id, name);
        r = domain_properties_json(bus, name, &o);
        if (r < 0) {
                if (arg_json) {
                        _cleanup_json_ json_object *n = json_object_new_object();
                        json_object_object_add(n, "DomainId", json_object_new_string(id));
                        json_object_object_add(n, "State", json_object_new_string("inactive"));
                        puts(json_object_to_json_string_ext(n, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
                } else
                        printf("Domain %s is not running.\n", id);
                return 0;
        }
        if (arg_json)
                puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        else
                print_domain(o);
        return 0;
}

int verb_list(int argc, char *argv[], const Config *config) {
        _cleanup_bus_ sd_bus *bus = NULL;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_json_ json_object *arr = json_object_new_array();
        size_t n = 0;
        int r;

        r = bus_open(&bus);
        if (r < 0)
                return r;
        r = sd_bus_list_names(bus, &names, NULL);
        if (r < 0) {
                fprintf(stderr, "Cannot list bus names: %s\n", strerror(-r));
                return r;
        }
        if (!arg_json)
                printf("%-14s %-10s %-9s %-16s %s\n", "DOMAIN", "STATE", "SESSIONS", "PROFILE", "WORKSPACE");
        STRV_FOREACH(name, names) {
                json_object *o = NULL, *sessions = NULL;
                if (!domain_id_from_bus_name(*name))
                        continue;
                if (domain_properties_json(bus, *name, &o) < 0)
                        continue;
                json_object_array_add(arr, o);
                n++;
                if (!arg_json) {
                        json_object_object_get_ex(o, "Sessions", &sessions);
                        printf("%-14s %-10s %-9zu %-16s %s\n", jstr(o, "DomainId"), jstr(o, "State"),
                               sessions ? json_object_array_length(sessions) : 0, jstr(o, "Profile"), jstr(o, "Workspace"));
                }
        }
        if (arg_json)
                puts(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        else
                printf("\n%zu Domain%s running.\n", n, n == 1 ? "" : "s");
        return 0;
}

int verb_stop(int argc, char *argv[], const Config *config) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        char name[BUS_NAME_MAX], id[DOMAIN_ID_LEN + 1];
        int r;

        r = target_domain_id(argc, argv, config, id);
        if (r < 0)
                return r;
        r = bus_open(&bus);
        if (r < 0)
                return r;
        domain_bus_name(id, name);
        r = sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "Stop", &error, NULL, "");
        if (r < 0) {
                if (sd_bus_error_has_names(&error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                        printf("Domain %s is not running.\n", id);
                        return 0;
                }
                fprintf(stderr, "Cannot stop Domain %s: %s\n", id, error.message ?: strerror(-r));
                return r;
        }
        if (arg_json)
                printf("{\"DomainId\":\"%s\",\"stopped\":true}\n", id);
        else
                printf("Domain %s is stopping.\n", id);
        return 0;
}
