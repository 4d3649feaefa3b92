/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.lazaret.Domain1 (dbus/org.lazaret.Domain1.xml). Bad input from a
 * caller becomes a named error reply and changes nothing; nothing a caller
 * sends is logged above debug.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "escalation-proto.h"
#include "json-util.h"
#include "log.h"
#include "manager.h"
#include "ports.h"
#include "sandbox.h"
#include "session.h"
#include "strv.h"

/*
 * Only the coordinator's own user may talk to it. The caller's credentials
 * come from the bus daemon (GetConnectionCredentials), asked without
 * waiting; the method runs when they arrive and replies then.
 */
typedef int (*VerifiedMethod)(sd_bus_message *msg, Manager *m, pid_t caller_pid, sd_bus_error *error);

typedef struct Verification {
        sd_bus_message *msg;
        Manager *m;
        VerifiedMethod method;
} Verification;

static int on_credentials(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Verification *v = userdata;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        uint32_t uid = UINT32_MAX, pid = 0;
        bool have_uid = false;
        int r;

        if (sd_bus_message_is_method_error(reply, NULL)) {
                r = sd_bus_error_set(&error, LAZARET_ERROR_ACCESS, "The caller's credentials are not known");
                goto reply;
        }
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *key;

                r = sd_bus_message_read(reply, "s", &key);
                if (r < 0)
                        break;
                if (streq(key, "UnixUserID")) {
                        r = sd_bus_message_read(reply, "v", "u", &uid);
                        have_uid = r >= 0;
                } else if (streq(key, "ProcessID"))
                        r = sd_bus_message_read(reply, "v", "u", &pid);
                else
                        r = sd_bus_message_skip(reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0 || !have_uid || uid != (uint32_t) geteuid()) {
                r = sd_bus_error_setf(&error, LAZARET_ERROR_ACCESS, "Only UID %u may use this Domain", (unsigned) geteuid());
                goto reply;
        }
        r = v->method(v->msg, v->m, (pid_t) pid, &error);
reply:
        if (r < 0 || sd_bus_error_is_set(&error)) {
                if (sd_bus_error_is_set(&error))
                        (void) sd_bus_reply_method_error(v->msg, &error);
                else
                        (void) sd_bus_reply_method_errno(v->msg, r, NULL);
        }
        sd_bus_message_unref(v->msg);
        free(v);
        return 0;
}

static int verify_caller_then(sd_bus_message *msg, Manager *m, VerifiedMethod method) {
        Verification *v;
        int r;

        v = calloc(1, sizeof(Verification));
        if (!v)
                return -ENOMEM;
        v->msg = sd_bus_message_ref(msg);
        v->m = m;
        v->method = method;
        r = sd_bus_call_method_async(sd_bus_message_get_bus(msg), NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "GetConnectionCredentials", on_credentials, v, "s",
                                     sd_bus_message_get_sender(msg));
        if (r < 0) {
                sd_bus_message_unref(v->msg);
                free(v);
                return r;
        }
        return 1;       /* answered later */
}

static int property_get_string(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *v = "";

        if (streq(property, "DomainId"))
                v = m->id;
        else if (streq(property, "Profile"))
                v = strempty(m->record.profile);
        else if (streq(property, "Workspace"))
                v = strempty(m->record.workspace);
        else if (streq(property, "State"))
                v = domain_state_to_string(m->state);
        else if (streq(property, "CoordinatorId"))
                v = m->coordinator_id;
        else if (streq(property, "SandboxId"))
                v = sandbox_id(m->sandbox);
        else if (streq(property, "ConfigurationFingerprint"))
                v = m->fingerprint;
        else if (streq(property, "MountPlan"))
                v = sandbox_mount_plan(m->sandbox) ?: "";
        else if (streq(property, "UnenforcedLimits"))
                v = sandbox_unenforced_limits(m->sandbox) ?: "";
        return sd_bus_message_append(reply, "s", v);
}

static int property_get_interface_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                          sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "u", (uint32_t) LAZARET_BUS_INTERFACE_VERSION);
}

static int property_get_sessions(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(ssusbt)");
        if (r < 0)
                return r;
        for (Session *s = m->sessions; s; s = s->next) {
                r = sd_bus_message_append(reply, "(ssusbt)", s->id, s->owner, (uint32_t) s->owner_pid,
                                          s->argv && s->argv[0] ? s->argv[0] : "", s->terminal, s->started_usec);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

/*
 * The network readiness fingerprint of this generation (spec section 4.5):
 * its parts, and "Fingerprint", the SHA-256 of them joined by newlines.
 * Empty until the Domain is published.
 */
static int property_get_network(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const SandboxNetwork *n = sandbox_network(m->sandbox);
        char helper[32], ns[32], fp[SHA256_HEX_LEN + 1];
        _cleanup_free_ char *joined = NULL;
        uint8_t digest[SHA256_DIGEST_LEN];
        int r;

        r = sd_bus_message_open_container(reply, 'a', "{ss}");
        if (r < 0 || !n)
                return r < 0 ? r : sd_bus_message_close_container(reply);
        /* The helper the supervisor started: lazaret-egress for a profile with host rules. */
        snprintf(helper, sizeof(helper), "%s:%d",
                 m->domain->profile->allow_hosts && m->domain->profile->allow_hosts[0] ? "lazaret-egress" : "slirp4netns",
                 n->helper_pid);
        snprintf(ns, sizeof(ns), "net:[%llu]", n->netns);
        if (asprintf(&joined, "%s\n%s\n%s\n%s\n%s\n%s", m->id, sandbox_id(m->sandbox), m->fingerprint, helper,
                     n->policy_digest, ns) < 0)
                return -ENOMEM;
        sha256_buf(joined, strlen(joined), digest);
        hexify(digest, sizeof(digest), fp);
        r = sd_bus_message_append(reply, "{ss}{ss}{ss}{ss}{ss}{ss}{ss}", "DomainId", m->id, "Generation",
                                  sandbox_id(m->sandbox), "ConfigurationFingerprint", m->fingerprint, "HelperId", helper,
                                  "PolicyDigest", n->policy_digest, "Namespace", ns, "Fingerprint", fp);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* The published ports: (host address, host port, sandbox port) each; empty while the sandbox does not run. */
static int property_get_published_ports(sd_bus *bus, const char *path, const char *interface, const char *property,
                                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const PortForward *l;
        size_t n = ports_list(sandbox_ports(m->sandbox), &l);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sqq)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(sqq)", PORT_HOST_ADDRESS, l[i].host_port, l[i].guest_port);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* Bytes in the root overlay's file store; UINT64_MAX while the sandbox does not run. */
static int property_get_root_usage(sd_bus *bus, const char *path, const char *interface, const char *property,
                                   sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        uint64_t used = UINT64_MAX;

        (void) sandbox_root_usage(m->sandbox, &used);
        return sd_bus_message_append(reply, "t", used);
}

/* The profile's limits by their configuration names; UINT64_MAX is "infinity". */
static int property_get_limits(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "{st}");
        if (r < 0)
                return r;
        /* A maintenance coordinator has no profile of its own: none. */
        for (size_t i = 0; m->domain && limit_names[i]; i++) {
                r = sd_bus_message_append(reply, "{st}", limit_names[i], limits_get(&m->domain->profile->limits, i));
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

/* Reads a string array with limits on count and bytes. */
static int read_strv_limited(sd_bus_message *msg, size_t max_count, size_t *total, char ***ret, sd_bus_error *error,
                             const char *what) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "s");
        if (r < 0)
                return r;
        for (;;) {
                const char *s;
                size_t len;

                r = sd_bus_message_read(msg, "s", &s);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                len = strlen(s);
                if (++n > max_count)
                        return sd_bus_error_setf(error, LAZARET_ERROR_LIMIT, "%s has more than %zu entries", what, max_count);
                if (len > SESSION_MAX_ARG_BYTES)
                        return sd_bus_error_setf(error, LAZARET_ERROR_LIMIT, "%s entry %zu is longer than %d bytes",
                                                 what, n - 1, SESSION_MAX_ARG_BYTES);
                *total += len + 1;
                if (*total > SESSION_MAX_TOTAL_BYTES)
                        return sd_bus_error_setf(error, LAZARET_ERROR_LIMIT, "arguments and environment exceed %d bytes",
                                                 SESSION_MAX_TOTAL_BYTES);
                r = strv_extend(&l, s);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

static bool env_entry_is_valid(const char *e) {
        const char *eq = strchr(e, '=');
        _cleanup_free_ char *name = NULL;

        if (!eq || eq == e)
                return false;
        name = strndup(e, eq - e);
        return name && env_name_is_valid(name) && !startswith(name, "LAZARET_");
}

static int open_session(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        SessionParams p = { .fds = { -EBADF, -EBADF, -EBADF } };
        size_t total = 0, nfds = 0;
        const char *fingerprint;
        Session *s = NULL;
        uint16_t rows, cols;
        int terminal, r;

        if (m->state != DOMAIN_RUNNING)
                return sd_bus_error_setf(error, LAZARET_ERROR_STOPPING, "Domain %s is %s", m->id, domain_state_to_string(m->state));
        if (m->n_sessions >= DOMAIN_MAX_SESSIONS)
                return sd_bus_error_setf(error, LAZARET_ERROR_LIMIT, "Domain %s already has %d sessions", m->id, DOMAIN_MAX_SESSIONS);

        r = read_strv_limited(msg, SESSION_MAX_ARGV, &total, &argv, error, "argv");
        if (r < 0)
                return r;
        r = read_strv_limited(msg, SESSION_MAX_ENV, &total, &env, error, "environment");
        if (r < 0)
                return r;
        STRV_FOREACH(e, env)
                if (!env_entry_is_valid(*e))
                        return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS,
                                                 "environment entry \"%.64s\" is not NAME=VALUE with a valid, non-LAZARET_ name", *e);
        STRV_FOREACH(a, argv)
                if (isempty(*a) && a == argv)
                        return sd_bus_error_set(error, LAZARET_ERROR_INVALID_ARGS, "argv[0] is empty");

        r = sd_bus_message_read(msg, "b", &terminal);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(msg, 'a', "h");
        if (r < 0)
                return r;
        for (;;) {
                int fd;
                r = sd_bus_message_read(msg, "h", &fd);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (nfds >= 3)
                        return sd_bus_error_set(error, LAZARET_ERROR_INVALID_ARGS, "at most 3 file descriptors are accepted");
                p.fds[nfds++] = fd;   /* borrowed from the message */
        }
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "qqs", &rows, &cols, &fingerprint);
        if (r < 0)
                return r;

        if (terminal && nfds != 1)
                return sd_bus_error_set(error, LAZARET_ERROR_INVALID_ARGS, "a terminal session takes exactly one fd, the terminal");
        if (!terminal && nfds != 3)
                return sd_bus_error_set(error, LAZARET_ERROR_INVALID_ARGS, "a session without terminal takes exactly three fds: stdin, stdout, stderr");
        if (!streq(fingerprint, m->fingerprint))
                return sd_bus_error_setf(error, LAZARET_ERROR_CONFIG_MISMATCH,
                                         "Domain %s runs with configuration %s, the caller has %.64s; stop the Domain to apply a changed configuration",
                                         m->id, m->fingerprint, fingerprint);

        p.argv = argv;
        p.env = env;
        p.terminal = terminal;
        p.rows = rows;
        p.cols = cols;
        p.owner = sd_bus_message_get_sender(msg);
        p.owner_pid = pid;

        r = manager_open_session(m, &p, &s, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "s", s->id);
}

static int method_open_session(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, open_session);
}

/* Finds the caller's own session; anything else is a named error. */
static int find_own_session(Manager *m, sd_bus_message *msg, const char *sid, Session **ret, sd_bus_error *error) {
        Session *s = manager_find_session(m, sid);

        if (!s)
                return sd_bus_error_setf(error, LAZARET_ERROR_NO_SUCH_SESSION, "No session \"%.64s\" in Domain %s", sid, m->id);
        if (!streq_ptr(sd_bus_message_get_sender(msg), s->owner))
                return sd_bus_error_setf(error, LAZARET_ERROR_NOT_OWNER, "Session %s belongs to another client", s->id);
        *ret = s;
        return 0;
}

static int resize_session(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        const char *sid;
        uint16_t rows, cols;
        Session *s = NULL;
        int r;

        r = sd_bus_message_read(msg, "sqq", &sid, &rows, &cols);
        if (r < 0)
                return r;
        r = find_own_session(m, msg, sid, &s, error);
        if (r < 0)
                return r;
        if (!s->terminal)
                return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "Session %s has no terminal", s->id);
        r = session_resize(s, rows, cols);
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot resize session %s: %m", s->id);
        return sd_bus_reply_method_return(msg, NULL);
}

static int signal_session(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        const char *sid, *event;
        Session *s = NULL;
        int r;

        r = sd_bus_message_read(msg, "ss", &sid, &event);
        if (r < 0)
                return r;
        r = find_own_session(m, msg, sid, &s, error);
        if (r < 0)
                return r;
        r = session_signal(s, event);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS,
                                         "\"%.32s\" is not an event; use interrupt, quit, suspend, hangup or terminate", event);
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot signal session %s: %m", s->id);
        return sd_bus_reply_method_return(msg, NULL);
}

static int close_session(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        const char *sid;
        Session *s = NULL;
        int r;

        r = sd_bus_message_read(msg, "s", &sid);
        if (r < 0)
                return r;
        r = find_own_session(m, msg, sid, &s, error);
        if (r < 0)
                return r;
        session_close(s, "closed by its client");
        return sd_bus_reply_method_return(msg, NULL);
}

static int stop(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        int r;

        r = sd_bus_reply_method_return(msg, NULL);
        manager_stop(m, NULL);
        return r;
}

/* A port request's end: its reply, to the message it was asked with (a reference the request held). */
static void on_port_done(Ports *p, int r, const char *why, const PortForward *f, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = userdata;
        const char *name;

        if (r >= 0) {
                if (streq(sd_bus_message_get_member(msg), "PublishPort"))
                        (void) sd_bus_reply_method_return(msg, "q", f->host_port);
                else
                        (void) sd_bus_reply_method_return(msg, NULL);
                return;
        }
        switch (r) {
        case -EADDRINUSE:
        case -EEXIST:
                name = LAZARET_ERROR_PORT_IN_USE;
                break;
        case -E2BIG:
                name = LAZARET_ERROR_LIMIT;
                break;
        case -ENOENT:
                name = LAZARET_ERROR_INVALID_ARGS;
                break;
        case -ECANCELED:
                name = LAZARET_ERROR_STOPPING;
                break;
        default:
                name = LAZARET_ERROR_NETWORK_HELPER;
        }
        (void) sd_bus_reply_method_errorf(msg, name, "%s", why);
}

static int ports_of(Manager *m, sd_bus_error *error, Ports **ret) {
        *ret = m->state == DOMAIN_RUNNING ? sandbox_ports(m->sandbox) : NULL;
        if (!*ret)
                return sd_bus_error_set(error, LAZARET_ERROR_NOT_READY, "The Domain's sandbox is not running");
        return 0;
}

static int publish_port(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_free_ char *why = NULL;
        uint16_t host_port, port;
        Ports *p;
        int r;

        r = sd_bus_message_read(msg, "qq", &host_port, &port);
        if (r < 0)
                return r;
        if (host_port == 0)
                host_port = port;
        r = port_forward_check(host_port, port, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "%s", why);
        r = ports_of(m, error, &p);
        if (r < 0)
                return r;
        r = ports_publish(p, &(PortForward) { .host_port = host_port, .guest_port = port }, on_port_done,
                          sd_bus_message_ref(msg));
        if (r < 0)
                sd_bus_message_unref(msg);
        return r;       /* answered by on_port_done() */
}

static int unpublish_port(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        uint16_t host_port;
        Ports *p;
        int r;

        r = sd_bus_message_read(msg, "q", &host_port);
        if (r < 0)
                return r;
        if (host_port == 0)
                return sd_bus_error_set(error, LAZARET_ERROR_INVALID_ARGS, "host port 0 is not a TCP port (1 to 65535)");
        r = ports_of(m, error, &p);
        if (r < 0)
                return r;
        r = ports_unpublish(p, host_port, on_port_done, sd_bus_message_ref(msg));
        if (r < 0)
                sd_bus_message_unref(msg);
        return r;
}

static int method_publish_port(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, publish_port);
}

/* ------------------------------------------------- denied names (spec 4.5, "A denied name") */

static void on_egress_allowed(int r, const char *why, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = userdata;

        if (r >= 0)
                (void) sd_bus_reply_method_return(msg, NULL);
        else
                (void) sd_bus_reply_method_errorf(msg, r == -ECANCELED ? LAZARET_ERROR_STOPPING : LAZARET_ERROR_NETWORK_HELPER,
                                                  "%s", why);
}

/* AllowEgress(rule, scope): only from the Domain's own user (verify_caller_then), never from the sandbox, which has no bus. */
static int allow_egress(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_free_ char *why = NULL;
        const char *rule, *scope_s;
        EgressScope scope;
        int r;

        r = sd_bus_message_read(msg, "ss", &rule, &scope_s);
        if (r < 0)
                return r;
        if (egress_scope_from_string(scope_s, &scope) < 0)
                return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "The scope is \"once\", \"domain\" or \"keep\"");
        if (m->state != DOMAIN_RUNNING)
                return sd_bus_error_set(error, LAZARET_ERROR_NOT_READY, "The Domain's sandbox is not running");
        r = manager_egress_allow(m, rule, scope, ESC_BY_BUS, on_egress_allowed, sd_bus_message_ref(msg), &why);
        if (r < 0) {
                sd_bus_message_unref(msg);
                if (r == -ENOMEM)
                        return r;
                return sd_bus_error_setf(error, r == -EINVAL || r == -ENOTCONN ? LAZARET_ERROR_INVALID_ARGS
                                                : r == -E2BIG ? LAZARET_ERROR_LIMIT : LAZARET_ERROR_STORE,
                                         "%s", why ?: strerror(-r));
        }
        return 1;       /* answered by on_egress_allowed() */
}

/* ListDeniedEgress: (rule, name, port, kind, first seen, last seen, count), the table egress-watch.h keeps. */
static int list_denied_egress(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const EgressDenial *d;
        size_t n = egress_watch_denials(m->egress, &d);
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(" EGRESS_DENIAL_SIGNATURE ")");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(reply, "(" EGRESS_DENIAL_SIGNATURE ")", d[i].rule, d[i].ev.name, d[i].ev.port,
                                          d[i].ev.kind == EGRESS_EVENT_DENIED_PORT ? "port" : "dns", d[i].first_usec,
                                          d[i].last_usec, d[i].count);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_allow_egress(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, allow_egress);
}

static int method_list_denied_egress(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, list_denied_egress);
}

static int method_unpublish_port(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, unpublish_port);
}

/*
 * ListEscalations (interface version 1): a(ssssass). D-Bus strings must be
 * UTF-8, and the sandbox writes bytes: a value that is not UTF-8 is sent in
 * its escaped form (utf8_escape_invalid()), so that one odd request never
 * fails the listing of all. ListEscalationRequests (version 2) carries the
 * bytes themselves and the display form beside them.
 */
static int append_utf8(sd_bus_message *reply, const char *s) {
        _cleanup_free_ char *escaped = NULL;

        if (utf8_is_valid(s))
                return sd_bus_message_append(reply, "s", s);
        escaped = utf8_escape_invalid(s);
        if (!escaped)
                return -ENOMEM;
        return sd_bus_message_append(reply, "s", escaped);
}

static int append_escalation_v1(const char *id, const char *session, const char *state, const char *why,
                                char *const *argv, const char *cwd, void *userdata) {
        sd_bus_message *reply = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'r', "ssssass");
        if (r >= 0)
                r = sd_bus_message_append(reply, "sss", id, session, state);
        if (r >= 0)
                r = append_utf8(reply, why);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "s");
        for (char *const *a = argv; r >= 0 && *a; a++)
                r = append_utf8(reply, *a);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = append_utf8(reply, cwd);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static int append_bytes(sd_bus_message *reply, const char *s) {
        return sd_bus_message_append_array(reply, 'y', s, strlen(s));
}

/* Version 2: (request_id, session_id, state, kind, argv as bytes, argv shown, why, why shown, cwd, cwd shown). */
static int append_escalation_v2(const char *id, const char *session, const char *state, const char *why,
                                char *const *argv, const char *cwd, void *userdata) {
        sd_bus_message *reply = userdata;
        _cleanup_free_ char *argv_shown = esc_argv_to_display(argv), *why_shown = esc_string_to_display(why),
                            *cwd_shown = esc_string_to_display(cwd);
        int r;

        if (!argv_shown || !why_shown || !cwd_shown)
                return -ENOMEM;
        r = sd_bus_message_open_container(reply, 'r', ESCALATION_REQUEST_V2_SIGNATURE);
        if (r >= 0)
                r = sd_bus_message_append(reply, "ssss", id, session, state, "command");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "ay");
        for (char *const *a = argv; r >= 0 && *a; a++)
                r = append_bytes(reply, *a);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", argv_shown);
        if (r >= 0)
                r = append_bytes(reply, why);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", why_shown);
        if (r >= 0)
                r = append_bytes(reply, cwd);
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", cwd_shown);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static int list_escalations_as(sd_bus_message *msg, Manager *m, const char *signature, EscalationVisit append) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', signature);
        if (r >= 0)
                r = escalations_list(m->escalations, append, reply);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int list_escalations(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        return list_escalations_as(msg, m, "(ssssass)", append_escalation_v1);
}

static int list_escalation_requests(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        return list_escalations_as(msg, m, "(" ESCALATION_REQUEST_V2_SIGNATURE ")", append_escalation_v2);
}

static int decide_escalation(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_strv_free_ char **argv = NULL;
        const char *id;
        int approve, r;

        r = sd_bus_message_read(msg, "sb", &id, &approve);
        if (r >= 0)
                r = sd_bus_message_read_strv(msg, &argv);
        if (r < 0)
                return r;
        if (strv_length(argv) > ESC_ARGC_MAX)
                return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "More than %d arguments", ESC_ARGC_MAX);
        STRV_FOREACH(a, argv)
                if (strlen(*a) > ESC_ARG_MAX || (a == argv && (*a)[0] == 0))
                        return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "An argument is empty or too long");
        if (!m->escalations)
                return sd_bus_error_set(error, LAZARET_ERROR_INVALID_ARGS, "Host escalation is disabled in this Domain");
        r = escalations_decide(m->escalations, id, approve, strv_length(argv) > 0 ? argv : NULL, ESC_BY_BUS);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "No escalation request %.32s is pending", id);
        if (r == -EBUSY)
                return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "Escalation request %.32s was decided already", id);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_list_escalations(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, list_escalations);
}

static int method_list_escalation_requests(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, list_escalation_requests);
}

static int method_decide_escalation(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, decide_escalation);
}

static int method_resize_session(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, resize_session);
}

static int method_signal_session(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, signal_session);
}

static int method_close_session(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, close_session);
}

static int method_stop(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, stop);
}

/* ------------------------------------------------- the Domain Store's owner */

/*
 * The methods lazaretctl asks instead of opening the store (only the
 * lock's holder opens it, FR-17): served by a running coordinator and by
 * a maintenance one (manager.h), whose idle timeout each call restarts.
 */

/* One audit event: (time, request, session, event, by, argv as JSON, cwd, why, outcome, status, detail). */
static int append_audit_event(const EscalationEvent *ev, void *userdata) {
        sd_bus_message *reply = userdata;
        int r;

        r = sd_bus_message_open_container(reply, 'r', ESCALATION_EVENT_SIGNATURE);
        if (r >= 0)
                r = sd_bus_message_append(reply, "tssss", ev->time_usec, strempty(ev->request), strempty(ev->session),
                                          strempty(ev->event), strempty(ev->by));
        if (r >= 0)
                r = append_utf8(reply, strempty(ev->argv_json));
        if (r >= 0)
                r = append_bytes(reply, strempty(ev->cwd));
        if (r >= 0)
                r = append_bytes(reply, strempty(ev->why));
        if (r >= 0)
                r = sd_bus_message_append(reply, "si", strempty(ev->outcome), (int32_t) ev->status);
        if (r >= 0)
                r = append_bytes(reply, strempty(ev->detail));
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static int escalation_history(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *why = NULL;
        uint32_t limit;
        int r;

        r = sd_bus_message_read(msg, "u", &limit);
        if (r < 0)
                return r;
        if (limit < 1 || limit > ESCALATION_HISTORY_MAX)
                return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "limit must be 1 to %d events",
                                         ESCALATION_HISTORY_MAX);
        manager_maintenance_touch(m);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(" ESCALATION_EVENT_SIGNATURE ")");
        if (r >= 0)
                r = audit_writer_history(m->audit, limit, append_audit_event, reply, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, LAZARET_ERROR_STORE, "Cannot read the audit trail of Domain %s: %s", m->id,
                                         why ?: strerror(-r));
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int apply_retention(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_free_ char *why = NULL;
        StoreRemoved removed = {};
        struct timespec ts;
        uint32_t days, events, generations;
        int r;

        r = sd_bus_message_read(msg, "uuu", &days, &events, &generations);
        if (r < 0)
                return r;
        if (!retention_is_valid(days, events, generations))
                return sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS,
                                         "a retention is %d to %d days, %d to %d audit events and %d to %d generations",
                                         RETENTION_AUDIT_DAYS_MIN, RETENTION_AUDIT_DAYS_MAX, RETENTION_AUDIT_EVENTS_MIN,
                                         RETENTION_AUDIT_EVENTS_MAX, RETENTION_GENERATIONS_MIN, RETENTION_GENERATIONS_MAX);
        manager_maintenance_touch(m);
        /* The queued events first, so that the bound holds for them too. */
        audit_writer_flush_all(m->audit);
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        r = domain_store_apply_retention(m->store,
                                         &(StoreRetention) { .audit_days = days, .audit_events = events,
                                                             .generations = generations },
                                         (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000, &removed, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, LAZARET_ERROR_STORE, "Cannot apply the retention to the Domain Store of %s: %s",
                                         m->id, why ?: strerror(-r));
        if (removed.events > 0 || removed.generations > 0)
                log_info("Retention asked on the bus: removed %llu audit events and %llu generations from the Domain Store",
                         (unsigned long long) removed.events, (unsigned long long) removed.generations);
        return sd_bus_reply_method_return(msg, "tt", removed.events, removed.generations);
}

static int leased_lowers(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_strv_free_ char **leased = NULL;
        _cleanup_free_ char *why = NULL;
        int r;

        manager_maintenance_touch(m);
        r = domain_store_leased_lowers(m->store, &leased, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, LAZARET_ERROR_STORE, "Cannot read the leases of Domain %s: %s", m->id,
                                         why ?: strerror(-r));
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_append_strv(reply, leased);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* KeptEgress: the rules the Domain Store keeps allowed (a maintenance coordinator answers too). */
static int kept_egress(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_strv_free_ char **kept = NULL;
        _cleanup_free_ char *why = NULL;
        int r;

        manager_maintenance_touch(m);
        r = domain_store_egress_kept(m->store, &kept, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, LAZARET_ERROR_STORE, "Cannot read the kept egress rules of Domain %s: %s",
                                         m->id, why ?: strerror(-r));
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_append_strv(reply, kept);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static void on_egress_forgotten(int r, const char *why, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = userdata;

        if (r >= 0)
                (void) sd_bus_reply_method_return(msg, NULL);
        else
                (void) sd_bus_reply_method_errorf(msg, r == -ENOENT ? LAZARET_ERROR_INVALID_ARGS
                                                  : r == -ECANCELED ? LAZARET_ERROR_STOPPING : LAZARET_ERROR_NETWORK_HELPER,
                                                  "%s", why);
}

/* ForgetEgress(rule): no longer kept, and no longer allowed by a running helper, whatever its scope there. */
static int forget_egress(sd_bus_message *msg, Manager *m, pid_t pid, sd_bus_error *error) {
        _cleanup_free_ char *why = NULL;
        const char *rule;
        int r;

        r = sd_bus_message_read(msg, "s", &rule);
        if (r < 0)
                return r;
        manager_maintenance_touch(m);
        r = manager_egress_forget(m, rule, ESC_BY_BUS, on_egress_forgotten, sd_bus_message_ref(msg), &why);
        if (r > 0)
                return 1;       /* answered by on_egress_forgotten() */
        sd_bus_message_unref(msg);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return sd_bus_error_setf(error, r == -EINVAL || r == -ENOENT ? LAZARET_ERROR_INVALID_ARGS : LAZARET_ERROR_STORE,
                                         "%s", why ?: strerror(-r));
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_kept_egress(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, kept_egress);
}

static int method_forget_egress(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, forget_egress);
}

static int method_escalation_history(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, escalation_history);
}

static int method_apply_retention(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, apply_retention);
}

static int method_leased_lowers(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return verify_caller_then(msg, userdata, leased_lowers);
}

/* A maintenance coordinator has no sandbox: a session is refused by name, not as an unknown method. */
static int method_open_session_maintenance(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;

        return sd_bus_error_setf(error, LAZARET_ERROR_MAINTENANCE,
                                 "Domain %s is in maintenance: its coordinator serves lazaretctl's questions about its "
                                 "store and runs no sandbox; it stops within %llu s, or at once when lazaretctl launch "
                                 "connects", m->id, (unsigned long long) (MAINTENANCE_IDLE_USEC / 1000000));
}

#define STORE_METHODS                                                                                   \
        SD_BUS_METHOD_WITH_ARGS("EscalationHistory",                                                    \
                                SD_BUS_ARGS("u", limit),                                                \
                                SD_BUS_RESULT("a(" ESCALATION_EVENT_SIGNATURE ")", events),             \
                                method_escalation_history, SD_BUS_VTABLE_UNPRIVILEGED),                 \
        SD_BUS_METHOD_WITH_ARGS("ApplyRetention",                                                       \
                                SD_BUS_ARGS("u", audit_days, "u", audit_events, "u", generations),      \
                                SD_BUS_RESULT("t", events_removed, "t", generations_removed),           \
                                method_apply_retention, SD_BUS_VTABLE_UNPRIVILEGED),                    \
        SD_BUS_METHOD_WITH_ARGS("LeasedLowers",                                                         \
                                SD_BUS_NO_ARGS,                                                         \
                                SD_BUS_RESULT("as", lowers),                                            \
                                method_leased_lowers, SD_BUS_VTABLE_UNPRIVILEGED),                      \
        SD_BUS_METHOD_WITH_ARGS("KeptEgress",                                                           \
                                SD_BUS_NO_ARGS,                                                         \
                                SD_BUS_RESULT("as", rules),                                             \
                                method_kept_egress, SD_BUS_VTABLE_UNPRIVILEGED),                        \
        SD_BUS_METHOD_WITH_ARGS("ForgetEgress",                                                         \
                                SD_BUS_ARGS("s", rule),                                                 \
                                SD_BUS_NO_RESULT,                                                       \
                                method_forget_egress, SD_BUS_VTABLE_UNPRIVILEGED)

/* Every property, in both vtables: a maintenance coordinator's sandbox ones are empty (UINT64_MAX for RootUsage). */
#define DOMAIN_PROPERTIES \
        SD_BUS_PROPERTY("InterfaceVersion", "u", property_get_interface_version, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("DomainId", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("Profile", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("Workspace", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("State", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE), \
        SD_BUS_PROPERTY("CoordinatorId", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("SandboxId", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("ConfigurationFingerprint", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("Sessions", "a(ssusbt)", property_get_sessions, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE), \
        SD_BUS_PROPERTY("Limits", "a{st}", property_get_limits, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("NetworkReadiness", "a{ss}", property_get_network, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("MountPlan", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("UnenforcedLimits", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST), \
        SD_BUS_PROPERTY("RootUsage", "t", property_get_root_usage, 0, 0), \
        SD_BUS_PROPERTY("PublishedPorts", "a(sqq)", property_get_published_ports, 0, 0)

/* What a maintenance coordinator exports: the properties, the store's methods, Stop; sessions refused by name. */
static const sd_bus_vtable maintenance_vtable[] = {
        SD_BUS_VTABLE_START(0),
        DOMAIN_PROPERTIES,
        SD_BUS_METHOD_WITH_ARGS("OpenSession",
                                SD_BUS_ARGS("as", argv, "as", environment, "b", terminal, "ah", fds,
                                            "q", rows, "q", cols, "s", fingerprint),
                                SD_BUS_RESULT("s", session_id),
                                method_open_session_maintenance, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Stop", NULL, NULL, method_stop, SD_BUS_VTABLE_UNPRIVILEGED),
        STORE_METHODS,
        SD_BUS_VTABLE_END
};

static const sd_bus_vtable domain_vtable[] = {
        SD_BUS_VTABLE_START(0),
        DOMAIN_PROPERTIES,
        SD_BUS_METHOD_WITH_ARGS("OpenSession",
                                SD_BUS_ARGS("as", argv, "as", environment, "b", terminal, "ah", fds,
                                            "q", rows, "q", cols, "s", fingerprint),
                                SD_BUS_RESULT("s", session_id),
                                method_open_session, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResizeSession",
                                SD_BUS_ARGS("s", session_id, "q", rows, "q", cols),
                                SD_BUS_NO_RESULT,
                                method_resize_session, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SignalSession",
                                SD_BUS_ARGS("s", session_id, "s", event),
                                SD_BUS_NO_RESULT,
                                method_signal_session, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CloseSession",
                                SD_BUS_ARGS("s", session_id),
                                SD_BUS_NO_RESULT,
                                method_close_session, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Stop", NULL, NULL, method_stop, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("PublishPort",
                                SD_BUS_ARGS("q", host_port, "q", port),
                                SD_BUS_RESULT("q", host_port),
                                method_publish_port, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("UnpublishPort",
                                SD_BUS_ARGS("q", host_port),
                                SD_BUS_NO_RESULT,
                                method_unpublish_port, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListEscalations",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ssssass)", requests),
                                method_list_escalations, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListEscalationRequests",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(" ESCALATION_REQUEST_V2_SIGNATURE ")", requests),
                                method_list_escalation_requests, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("DecideEscalation",
                                SD_BUS_ARGS("s", request_id, "b", approve, "as", argv),
                                SD_BUS_NO_RESULT,
                                method_decide_escalation, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("AllowEgress",
                                SD_BUS_ARGS("s", rule, "s", scope),
                                SD_BUS_NO_RESULT,
                                method_allow_egress, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListDeniedEgress",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(" EGRESS_DENIAL_SIGNATURE ")", denials),
                                method_list_denied_egress, SD_BUS_VTABLE_UNPRIVILEGED),
        STORE_METHODS,
        SD_BUS_SIGNAL_WITH_ARGS("EscalationRequested",
                                SD_BUS_ARGS("s", request_id, "s", session_id), 0),
        SD_BUS_SIGNAL_WITH_ARGS("SessionEnded",
                                SD_BUS_ARGS("s", session_id, "i", exit_status, "s", reason), 0),
        SD_BUS_SIGNAL_WITH_ARGS("EgressDenied",
                                SD_BUS_ARGS("s", rule, "s", name, "q", port, "s", kind), 0),
        SD_BUS_VTABLE_END
};

int manager_publish(Manager *m) {
        int r;

        r = sd_bus_add_object_vtable(m->bus, &m->object_slot, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE,
                                     m->maintenance ? maintenance_vtable : domain_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Cannot export %s", LAZARET_BUS_PATH);
        return 0;
}

void manager_emit_session_ended(Manager *m, const char *session_id, int exit_status, const char *reason) {
        if (m->bus)
                (void) sd_bus_emit_signal(m->bus, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "SessionEnded", "sis",
                                          session_id, exit_status, strempty(reason));
}

void manager_emit_escalation_requested(Manager *m, const char *request_id, const char *session_id) {
        if (m->bus && m->object_slot)
                (void) sd_bus_emit_signal(m->bus, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "EscalationRequested", "ss",
                                          request_id, session_id);
}

void manager_emit_state_changed(Manager *m) {
        if (m->bus && m->object_slot)
                (void) sd_bus_emit_properties_changed(m->bus, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "State", NULL);
}

void manager_emit_sessions_changed(Manager *m) {
        if (m->bus && m->object_slot)
                (void) sd_bus_emit_properties_changed(m->bus, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "Sessions", NULL);
}

void manager_emit_egress_denied(Manager *m, const EgressDenial *d) {
        if (m->bus && m->object_slot)
                (void) sd_bus_emit_signal(m->bus, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "EgressDenied", "ssqs", d->rule,
                                          d->ev.name, d->ev.port, d->ev.kind == EGRESS_EVENT_DENIED_PORT ? "port" : "dns");
}
