/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl status/list/stop: the verbs about running Domains. Each reads
 * the Domain's properties from its coordinator on the user bus (one GetAll
 * call per Domain), or calls its Stop method; nothing is started. Only a
 * coordinator that is not on the bus means "not running", and one without
 * the Domain object "unpublished" (starting or stopping); one that owns the
 * name but does not answer within CTL_REPLY_TIMEOUT_USEC is "not
 * responding" (exit status CTL_EXIT_NOT_RESPONDING); any other error is
 * reported.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "changes.h"
#include "cleanup.h"
#include "config.h"
#include "ctl.h"
#include "domain-lock.h"
#include "domain.h"
#include "domain-store.h"
#include "maintenance.h"
#include "domains.h"
#include "escalation-proto.h"
#include "fs-util.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"
#include "util.h"

/* A dictionary property, a{st} or a{ss}, as an object; LIMIT_INFINITY becomes "infinity". */
static int dict_json(sd_bus_message *m, char value_type, json_object **ret) {
        const char entry[] = { 's', value_type, 0 };
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = sd_bus_message_enter_container(m, 'a', value_type == 't' ? "{st}" : "{ss}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', entry)) > 0) {
                const char *k, *s;
                uint64_t t;

                r = sd_bus_message_read_basic(m, 's', &k);
                if (r >= 0)
                        r = sd_bus_message_read_basic(m, value_type, value_type == 't' ? (void *) &t : (void *) &s);
                if (r < 0)
                        return r;
                if (value_type == 's')
                        r = json_add_string(o, k, s);
                else
                        r = t == LIMIT_INFINITY ? json_add_string(o, k, "infinity") : json_add_uint64(o, k, t);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static int sessions_json(sd_bus_message *m, json_object **ret) {
        _cleanup_json_ json_object *sessions = json_object_new_array();
        int r;

        if (!sessions)
                return -ENOMEM;
        r = sd_bus_message_enter_container(m, 'a', "(ssusbt)");
        if (r < 0)
                return r;
        for (;;) {
                const char *sid, *owner, *cmd;
                uint32_t pid;
                int term;
                uint64_t started;
                _cleanup_json_ json_object *s = NULL;

                r = sd_bus_message_read(m, "(ssusbt)", &sid, &owner, &pid, &cmd, &term, &started);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                s = json_object_new_object();
                r = json_add_string(s, "id", sid);
                if (r >= 0)
                        r = json_add_string(s, "owner", owner);
                if (r >= 0)
                        r = json_add_int64(s, "pid", pid);
                if (r >= 0)
                        r = json_add_string(s, "command", cmd);
                if (r >= 0)
                        r = json_add_bool(s, "terminal", term);
                if (r >= 0)
                        r = json_add_uint64(s, "started_usec", started);
                if (r >= 0)
                        r = json_append(sessions, TAKE_PTR(s));
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(sessions);
        return 0;
}

static const char *jstr(json_object *o, const char *key);
static void out(const char *fmt, ...) _printf_(1, 2);

int published_ports_json(sd_bus_message *m, json_object **ret) {
        _cleanup_json_ json_object *a = json_object_new_array();
        const char *addr;
        uint16_t host_port, port;
        int r;

        if (!a)
                return -ENOMEM;
        r = sd_bus_message_enter_container(m, 'a', "(sqq)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(sqq)", &addr, &host_port, &port)) > 0) {
                _cleanup_json_ json_object *e = json_object_new_object();

                if (!e)
                        return -ENOMEM;
                r = json_add_string(e, "host_address", addr);
                if (r >= 0)
                        r = json_add_uint64(e, "host_port", host_port);
                if (r >= 0)
                        r = json_add_uint64(e, "port", port);
                if (r >= 0)
                        r = json_append(a, TAKE_PTR(e));
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

void published_ports_print(json_object *ports, const char *indent) {
        for (size_t i = 0; ports && i < json_object_array_length(ports); i++) {
                json_object *e = json_object_array_get_idx(ports, i), *hp, *p;

                if (!json_object_object_get_ex(e, "host_port", &hp) || !json_object_object_get_ex(e, "port", &p))
                        continue;
                out("%s%s:%" PRIu64 " -> sandbox port %" PRIu64 "\n", indent, jstr(e, "host_address"),
                    json_object_get_uint64(hp), json_object_get_uint64(p));
        }
}

/* The properties a Domain's coordinator must report, and their types. */
static const struct {
        const char *name;
        const char *signature;
} domain_properties[] = {
        { "DomainId",                 "s"        },
        { "Profile",                  "s"        },
        { "Workspace",                "s"        },
        { "State",                    "s"        },
        { "CoordinatorId",            "s"        },
        { "SandboxId",                "s"        },
        { "ConfigurationFingerprint", "s"        },
        { "Sessions",                 "a(ssusbt)" },
        { "Limits",                   "a{st}"    },
        { "NetworkReadiness",         "a{ss}"    },
        { "MountPlan",                "s"        },
        { "UnenforcedLimits",         "s"        },
        { "RootUsage",                "t"        },
        { "PublishedPorts",           "a(sqq)"   },
};

/* The mount plan is JSON text on the bus: shown as JSON, or null before the sandbox runs. */
static int plan_json(const char *s, json_object **ret) {
        _cleanup_free_ char *why = NULL;

        *ret = NULL;
        if (isempty(s))
                return 0;
        return json_parse_strict(s, strlen(s), ret, &why) < 0 ? -EBADMSG : 0;
}

/*
 * Reads every property of the Domain with one GetAll call. Bus errors are
 * returned in *error; a reply without one of domain_properties[], or with
 * one of another type, is an InconsistentMessage error. Unknown properties
 * are skipped.
 */
static int properties_reply_json(sd_bus_message *reply, json_object **ret, sd_bus_error *error) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return sd_bus_error_set_errno(error, -ENOMEM);
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                goto bad;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *name, *contents;
                json_object *v = NULL;
                bool added = false;
                size_t i;

                r = sd_bus_message_read_basic(reply, 's', &name);
                if (r < 0)
                        goto bad;
                r = sd_bus_message_peek_type(reply, NULL, &contents);
                if (r < 0)
                        goto bad;
                for (i = 0; i < ELEMENTSOF(domain_properties); i++)
                        if (streq(name, domain_properties[i].name))
                                break;
                if (i == ELEMENTSOF(domain_properties)) {
                        r = sd_bus_message_skip(reply, "v");
                        if (r < 0)
                                goto bad;
                        r = sd_bus_message_exit_container(reply);
                        if (r < 0)
                                goto bad;
                        continue;
                }
                if (!streq(contents, domain_properties[i].signature))
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INCONSISTENT_MESSAGE,
                                                 "property %s has type %s, expected %s", name, contents,
                                                 domain_properties[i].signature);
                r = sd_bus_message_enter_container(reply, 'v', contents);
                if (r < 0)
                        goto bad;
                if (streq(name, "MountPlan")) {
                        const char *s;
                        r = sd_bus_message_read_basic(reply, 's', &s);
                        if (r >= 0)
                                r = plan_json(s, &v);
                        /* No sandbox (a maintenance coordinator's): null, not an allocation that failed. */
                        if (r >= 0 && !v) {
                                r = json_add_null(o, name) < 0 ? -ENOMEM : 0;
                                added = true;
                        }
                } else if (streq(contents, "t")) {
                        uint64_t t;
                        r = sd_bus_message_read_basic(reply, 't', &t);
                        /* UINT64_MAX: not known (the sandbox does not run). */
                        if (r >= 0)
                                v = t == UINT64_MAX ? json_object_new_string("unknown") : json_object_new_uint64(t);
                } else if (streq(contents, "s")) {
                        const char *s;
                        r = sd_bus_message_read_basic(reply, 's', &s);
                        if (r >= 0)
                                v = json_object_new_string(s);
                } else if (streq(contents, "a(ssusbt)"))
                        r = sessions_json(reply, &v);
                else if (streq(contents, "a(sqq)"))
                        r = published_ports_json(reply, &v);
                else
                        r = dict_json(reply, contents[3], &v);
                if (r >= 0 && !added)
                        /* A NULL v is the allocation that failed: never a property left out or null. */
                        r = json_add(o, name, v);
                if (r == -ENOMEM)
                        return sd_bus_error_set_errno(error, r);
                if (r < 0)
                        goto bad;
                r = sd_bus_message_exit_container(reply);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        goto bad;
        }
        if (r < 0)
                goto bad;

        for (size_t i = 0; i < ELEMENTSOF(domain_properties); i++)
                if (!json_object_object_get_ex(o, domain_properties[i].name, NULL))
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INCONSISTENT_MESSAGE,
                                                 "the reply lacks the property %s (a coordinator of another Lazaret version?)",
                                                 domain_properties[i].name);
        *ret = TAKE_PTR(o);
        return 0;

bad:
        return sd_bus_error_setf(error, SD_BUS_ERROR_INCONSISTENT_MESSAGE, "malformed reply: %s", strerror(-r));
}

static int domain_properties_json(sd_bus *bus, const char *bus_name, json_object **ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, bus_name, LAZARET_BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll", error,
                               &reply, "s", LAZARET_BUS_INTERFACE);
        if (r < 0)
                return r;
        return properties_reply_json(reply, ret, error);
}

/* The Domain's coordinator is not on the bus: the Domain is not running. */
static bool error_is_not_running(const sd_bus_error *error) {
        return sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

/* A coordinator holds the Domain's name but exports no Domain object: it
 * has not published the Domain yet (starting) or has withdrawn it (stopping). */
static bool error_is_unpublished(const sd_bus_error *error) {
        return sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_OBJECT);
}

static const char *jstr(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

/*
 * One line of human output: whatever the values hold (a workspace path, a
 * command, a mount source), a control byte in them is shown as \xNN and
 * cannot begin a line of its own.
 */
static void out(const char *fmt, ...) _printf_(1, 2);
static void out(const char *fmt, ...) {
        _cleanup_free_ char *line = NULL, *esc = NULL;
        va_list ap;
        size_t n;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        n = strlen(line);
        if (n > 0 && line[n - 1] == '\n')
                line[--n] = 0;
        esc = escape_control(line);
        if (esc)
                printf("%s\n", esc);
}

static void print_domain(json_object *o) {
        json_object *sessions = NULL, *limits, *network, *plan, *entries, *root, *root_size, *ports;

        out("Domain %s\n", jstr(o, "DomainId"));
        out("  %-16s%s\n", "Profile:", jstr(o, "Profile"));
        out("  %-16s%s\n", "Workspace:", jstr(o, "Workspace"));
        out("  %-16s%s\n", "State:", jstr(o, "State"));
        out("  %-16s%s\n", "Sandbox:", jstr(o, "SandboxId"));
        out("  %-16s%s\n", "Coordinator:", jstr(o, "CoordinatorId"));
        out("  %-16s%s\n", "Configuration:", jstr(o, "ConfigurationFingerprint"));
        if (json_object_object_get_ex(o, "Limits", &limits)) {
                printf("  %-16s", "Limits:");
                for (size_t i = 0; limit_names[i]; i++) {
                        json_object *v;
                        char b[LIMIT_STRING_MAX];

                        if (!json_object_object_get_ex(limits, limit_names[i], &v))
                                continue;
                        if (json_object_get_type(v) == json_type_string)
                                snprintf(b, sizeof(b), "%s", json_object_get_string(v));
                        else if (limit_is_size(i))
                                limit_format_size(json_object_get_uint64(v), b);
                        else
                                limit_format_count(json_object_get_uint64(v), b);
                        printf("%s%s=%s", i == 0 ? "" : i % 4 == 0 ? "\n                  " : " ", limit_names[i], b);
                }
                printf("\n");
                if (!isempty(jstr(o, "UnenforcedLimits")))
                        out("  %-16snot enforced here (no cgroup controller): %s\n", "", jstr(o, "UnenforcedLimits"));
        }
        if (json_object_object_get_ex(o, "RootUsage", &root) && json_object_is_type(root, json_type_int) &&
            json_object_object_get_ex(o, "Limits", &limits) &&
            json_object_object_get_ex(limits, "root_size", &root_size)) {
                char b[LIMIT_STRING_MAX];
                uint64_t used = json_object_get_uint64(root);

                out("  %-16s%.1f MiB used of %s (root_size)\n", "Root overlay:", (double) used / (1024.0 * 1024.0),
                    json_object_is_type(root_size, json_type_int) ? limit_format_size(json_object_get_uint64(root_size), b)
                                                                   : json_object_get_string(root_size));
        }
        if (json_object_object_get_ex(o, "NetworkReadiness", &network) && json_object_object_length(network) > 0) {
                out("  %-16s%s\n", "Network:", jstr(network, "Fingerprint"));
                out("    %-14s%s\n", "policy", jstr(network, "PolicyDigest"));
                out("    %-14s%s\n", "helper", jstr(network, "HelperId"));
                out("    %-14s%s\n", "namespace", jstr(network, "Namespace"));
                out("    %-14s%s\n", "generation", jstr(network, "Generation"));
        }
        if (json_object_object_get_ex(o, "PublishedPorts", &ports) && json_object_array_length(ports) > 0) {
                out("  %-16s\n", "Published ports:");
                published_ports_print(ports, "    ");
        }
        if (json_object_object_get_ex(o, "MountPlan", &plan) && json_object_object_get_ex(plan, "entries", &entries)) {
                out("  %-16s\n", "Mounts:");
                for (size_t i = 0; i < json_object_array_length(entries); i++) {
                        json_object *e = json_object_array_get_idx(entries, i);
                        json_object *ro = json_object_object_get(e, "read_only");

                        if (streq(jstr(e, "kind"), "sandbox"))
                                continue;       /* /proc, /dev, /sys, /tmp: gVisor's own */
                        out("    %-24s %s %-10s %s\n", jstr(e, "destination"), json_object_get_boolean(ro) ? "ro" : "rw",
                               jstr(e, "part"), jstr(e, "source"));
                }
        }
        json_object_object_get_ex(o, "Sessions", &sessions);
        out("  %-16s%zu\n", "Sessions:", sessions ? json_object_array_length(sessions) : 0);
        for (size_t i = 0; sessions && i < json_object_array_length(sessions); i++) {
                json_object *s = json_object_array_get_idx(sessions, i);
                out("    %s  pid %s  %s%s\n", jstr(s, "id"), jstr(s, "pid"), jstr(s, "command"),
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

/* The Domain a verb is about, its bus name, and a bus connection to ask it. */
int domain_open_target(int argc, char *argv[], const Config *config, sd_bus **ret_bus,
                       char ret_id[DOMAIN_ID_LEN + 1], char ret_name[BUS_NAME_MAX]) {
        int r;

        r = target_domain_id(argc, argv, config, ret_id);
        if (r < 0)
                return r;
        r = ctl_bus_open(ret_bus);
        if (r < 0)
                return r;
        domain_bus_name(ret_id, ret_name);
        return 0;
}

int verb_status(int argc, char *argv[], const Config *config) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_json_ json_object *o = NULL;
        char name[BUS_NAME_MAX], id[DOMAIN_ID_LEN + 1];
        int r;

        r = domain_open_target(argc, argv, config, &bus, id, name);
        if (r < 0)
                return r;
        r = domain_properties_json(bus, name, &o, &error);
        if (r < 0 && (error_is_not_running(&error) || error_is_unpublished(&error))) {
                bool unpublished = error_is_unpublished(&error);

                if (arg_json) {
                        _cleanup_json_ json_object *n = json_object_new_object();
                        r = json_add_string(n, "DomainId", id);
                        if (r >= 0)
                                r = json_add_string(n, "State", unpublished ? "unpublished" : "inactive");
                        if (r >= 0)
                                r = changes_status(config, argc > 1 ? id : NULL, n, NULL);
                        return r < 0 ? ctl_json_failed(r) : ctl_print_json(n);
                } else if (unpublished)
                        printf("Domain %s is not published: its coordinator is starting or stopping it.\n", id);
                else
                        printf("Domain %s is not running.\n", id);
                return changes_status(config, argc > 1 ? id : NULL, NULL, NULL);
        }
        if (r < 0 && ctl_bus_not_responding(bus, name, &error))
                return ctl_not_responding(id);
        if (r < 0) {
                fprintf(stderr, "Cannot read the status of Domain %s: %s\n", id, error.message ?: strerror(-r));
                return r;
        }
        /* The workspace view's protections and pending changes (§4.6). */
        if (arg_json) {
                r = changes_status(config, argc > 1 ? id : NULL, o, o);
                return r < 0 ? ctl_json_failed(r) : ctl_print_json(o);
        }
        print_domain(o);
        return changes_status(config, argc > 1 ? id : NULL, NULL, o);
}

/* One Domain's GetAll, asked together with all the others by `list`. */
typedef struct ListQuery {
        const char *name;
        bool done;
        int r;
        json_object *o;
        sd_bus_error error;
        sd_bus_slot *slot;
} ListQuery;

static int on_list_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        ListQuery *q = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        q->done = true;
        if (e) {
                q->r = -sd_bus_error_get_errno(e) ?: -EIO;
                (void) sd_bus_error_copy(&q->error, e);
        } else
                q->r = properties_reply_json(reply, &q->o, &q->error);
        return 0;
}

/* With its bound named: sd_bus_call_method_async() would wait for ever. */
static int list_query_start(sd_bus *bus, ListQuery *q) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, q->name, LAZARET_BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", LAZARET_BUS_INTERFACE);
        if (r >= 0)
                r = sd_bus_call_async(bus, &q->slot, m, on_list_reply, q, CTL_REPLY_TIMEOUT_USEC);
        return r;
}

/*
 * The properties of every Domain on the bus, asked all at once: a
 * coordinator that is stuck costs one CTL_REPLY_TIMEOUT_USEC for the whole
 * list, not one each. *ret_queries holds one entry per Domain bus name, in
 * the order of the bus's list.
 */
static int list_query_all(sd_bus *bus, char **names, ListQuery **ret_queries, size_t *ret_n) {
        ListQuery *qs;
        uint64_t deadline;
        size_t n = 0;
        int r = 0;

        qs = calloc(strv_length(names) + 1, sizeof(ListQuery));
        if (!qs)
                return -ENOMEM;
        STRV_FOREACH(name, names) {
                ListQuery *q = &qs[n];

                if (!domain_id_from_bus_name(*name))
                        continue;
                *q = (ListQuery) { .name = *name, .error = SD_BUS_ERROR_NULL };
                n++;
                r = list_query_start(bus, q);
                if (r < 0) {
                        q->done = true;
                        q->r = r;
                        (void) sd_bus_error_set_errno(&q->error, r);
                }
        }
        /* Each call has its own timeout; the loop keeps a deadline of its own
         * too, a little later, so that it ends whatever sd-bus does. */
        deadline = now_msec() + CTL_REPLY_TIMEOUT_USEC / 1000 + 1000;
        for (;;) {
                bool all = true;
                uint64_t now = now_msec();

                for (size_t i = 0; i < n; i++)
                        all = all && qs[i].done;
                if (all)
                        break;
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        break;
                if (r == 0)
                        r = sd_bus_wait(bus, (deadline - now) * 1000);
                if (r == -EINTR)
                        r = 0;
                if (r < 0)
                        break;
        }
        for (size_t i = 0; r < 0 && i < n; i++)
                if (!qs[i].done) {
                        qs[i].done = true;
                        qs[i].r = r;
                        qs[i].slot = sd_bus_slot_unref(qs[i].slot);
                        if (r == -ETIMEDOUT)
                                (void) sd_bus_error_set_const(&qs[i].error, SD_BUS_ERROR_TIMEOUT, "Method call timed out");
                        else
                                (void) sd_bus_error_set_errno(&qs[i].error, r);
                }
        *ret_queries = qs;
        *ret_n = n;
        return 0;
}

static void list_queries_free(ListQuery *qs, size_t n) {
        for (size_t i = 0; qs && i < n; i++) {
                sd_bus_slot_unref(qs[i].slot);
                sd_bus_error_free(&qs[i].error);
                json_object_put(qs[i].o);
        }
        free(qs);
}

int verb_list(int argc, char *argv[], const Config *config) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_json_ json_object *arr = json_object_new_array();
        ListQuery *qs = NULL;
        size_t n = 0, n_qs = 0;
        int r, ret = 0;

        if (!arr)
                return ctl_json_failed(-ENOMEM);
        r = ctl_bus_open(&bus);
        if (r < 0)
                return r;
        r = sd_bus_list_names(bus, &names, NULL);
        if (r < 0) {
                fprintf(stderr, "Cannot list bus names: %s\n", strerror(-r));
                return r;
        }
        r = list_query_all(bus, names, &qs, &n_qs);
        if (r < 0)
                return ctl_json_failed(r);
        if (!arg_json)
                printf("%-14s %-10s %-9s %-16s %s\n", "DOMAIN", "STATE", "SESSIONS", "PROFILE", "WORKSPACE");
        for (size_t i = 0; i < n_qs; i++) {
                sd_bus_error error = qs[i].error;
                json_object *o = TAKE_PTR(qs[i].o), *sessions = NULL;
                const char *id = domain_id_from_bus_name(qs[i].name);

                r = qs[i].r;
                /* Gone since the names were listed, or not published (yet):
                 * not running. */
                if (r < 0 && (error_is_not_running(&error) || error_is_unpublished(&error)))
                        continue;
                if (r < 0 && ctl_bus_not_responding(bus, qs[i].name, &error)) {
                        ret = ctl_not_responding(id);
                        continue;
                }
                if (r < 0) {
                        fprintf(stderr, "Cannot read the status of Domain %s: %s\n", id, error.message ?: strerror(-r));
                        ret = ret ?: r;
                        continue;
                }
                /* o stays valid: arr owns it now. */
                r = json_append(arr, o);
                if (r < 0) {
                        list_queries_free(qs, n_qs);
                        return ctl_json_failed(r);
                }
                n++;
                if (!arg_json) {
                        json_object_object_get_ex(o, "Sessions", &sessions);
                        out("%-14s %-10s %-9zu %-16s %s\n", jstr(o, "DomainId"), jstr(o, "State"),
                               sessions ? json_object_array_length(sessions) : 0, jstr(o, "Profile"), jstr(o, "Workspace"));
                }
        }
        list_queries_free(qs, n_qs);
        if (arg_json) {
                r = ctl_print_json(arr);
                if (r < 0)
                        return r;
        } else
                printf("\n%zu Domain%s running.\n", n, n == 1 ? "" : "s");
        return ret;
}

/*
 * lazaretctl stop: asks the coordinator to stop, then returns when the
 * Domain lock is free, i.e. when the coordinator has exited after its
 * sessions, sandbox, helpers and mounts were gone (domain-lock.c). A Domain
 * already going down (no bus name, its lock still held) is waited for the
 * same way, so that a verb that needs it stopped can follow at once.
 */
int verb_stop(int argc, char *argv[], const Config *config) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *domains = NULL, *dir = NULL;
        char name[BUS_NAME_MAX], id[DOMAIN_ID_LEN + 1];
        bool was_running = true;
        int r;

        r = domain_open_target(argc, argv, config, &bus, id, name);
        if (r < 0)
                return r;
        domains = path_join(config->data_root, "domains");
        dir = domains ? path_join(domains, id) : NULL;
        if (!dir)
                return -ENOMEM;
        r = sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "Stop", &error, NULL, "");
        if (r < 0) {
                /* No owner, an owner that withdrew the Domain object, or one that left without answering
                 * (killed): it is going down, or gone. */
                bool gone = sd_bus_error_has_names(&error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                                                   SD_BUS_ERROR_UNKNOWN_OBJECT);
                if (!gone && ctl_bus_not_responding(bus, name, &error))
                        return ctl_not_responding(id);
                if (!gone && sd_bus_error_has_name(&error, SD_BUS_ERROR_NO_REPLY))
                        gone = true;    /* not "not responding": the name has no owner any more */
                if (!gone) {
                        fprintf(stderr, "Cannot stop Domain %s: %s\n", id, error.message ?: strerror(-r));
                        return r;
                }
                was_running = false;
        }
        r = ctl_domain_wait_stopped(dir, id, CTL_STOP_WAIT_SEC, !was_running);
        if (r < 0)
                return r;
        if (arg_json)
                printf("{\"DomainId\":\"%s\",\"stopped\":true}\n", id);
        else if (was_running || r > 0)
                printf("Domain %s stopped.\n", id);
        else
                printf("Domain %s is not running.\n", id);
        return 0;
}

/* How much of a Domain's log `lazaretctl log` shows by default, and reads at most. */
#define LOG_SHOW_LINES 50
#define LOG_READ_MAX (1024 * 1024)

static unsigned arg_lines = LOG_SHOW_LINES;

void log_set_lines(unsigned n) {
        arg_lines = n;
}

/* The file's text, or NULL when it does not exist. */
static int read_log(const char *path, char **ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);

        *ret = NULL;
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        return read_full_fd(fd, LOG_READ_MAX, ret, NULL);
}

/*
 * The last lines the Domain's coordinator logged, from the file it keeps in
 * the runtime directory (and the one it rotated away), with or without a
 * journal and whether or not the Domain runs.
 */
int verb_log(int argc, char *argv[], const Config *config) {
        _cleanup_free_ char *root = NULL, *path = NULL, *old = NULL, *a = NULL, *b = NULL, *all = NULL;
        char id[DOMAIN_ID_LEN + 1];
        char *start;
        size_t lines = 0;
        int r;

        r = target_domain_id(argc, argv, config, id);
        if (r < 0)
                return r;
        r = runtime_dir_path(&arg_host, &root);
        if (r < 0) {
                fprintf(stderr, "Cannot find the runtime directory ($XDG_RUNTIME_DIR is not set or not absolute).\n");
                return r;
        }
        if (asprintf(&path, "%s/%s.log", root, id) < 0 || asprintf(&old, "%s.1", path) < 0)
                return -ENOMEM;
        r = read_log(old, &a);
        if (r >= 0)
                r = read_log(path, &b);
        if (r < 0) {
                fprintf(stderr, "Cannot read the log of Domain %s (%s): %s\n", id, path, strerror(-r));
                return r;
        }
        if (!a && !b) {
                fprintf(stderr, "No log for Domain %s: it has not started since this user's runtime directory was made (%s).\n",
                        id, path);
                return -ENOENT;
        }
        if (asprintf(&all, "%s%s", strempty(a), strempty(b)) < 0)
                return -ENOMEM;
        /* From the end back to the start of the last arg_lines lines (all of them for 0). */
        start = all + strlen(all);
        if (start > all && start[-1] == '\n')
                start--;
        while (start > all && (arg_lines == 0 || lines < arg_lines)) {
                start--;
                if (*start == '\n' && ++lines == arg_lines) {
                        start++;
                        break;
                }
        }
        /* Each line with its control bytes escaped: helpers log what the sandbox named (paths, host names). */
        for (char *l = start; *l;) {
                char *nl = strchrnul(l, '\n'), *next = *nl ? nl + 1 : nl;
                _cleanup_free_ char *esc = NULL;

                *nl = 0;
                esc = escape_control(l);
                if (!esc)
                        return -ENOMEM;
                puts(esc);
                l = next;
        }
        return 0;
}

/* An ay of the reply as a string; an embedded NUL, which no argument or path has, is refused. */
static int read_bytes(sd_bus_message *reply, char **ret) {
        const void *p;
        size_t n;
        char *s;
        int r;

        r = sd_bus_message_read_array(reply, 'y', &p, &n);
        if (r < 0)
                return r;
        if (memchr(p, 0, n))
                return -EBADMSG;
        s = strndup(p ?: "", n);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/*
 * One pending request (interface version 2), as a human line or a JSON
 * object. What the sandbox wrote is shown escaped to a human; in JSON each
 * value is a string when it is UTF-8 and an array of byte values when it
 * is not (json_new_bytes()), with the display form beside it.
 */
static int escalation_show(sd_bus_message *reply, json_object *list) {
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *why = NULL, *cwd = NULL;
        const char *id, *session, *state, *kind, *argv_shown, *why_shown, *cwd_shown;
        int r;

        r = sd_bus_message_enter_container(reply, 'r', ESCALATION_REQUEST_V2_SIGNATURE);
        if (r <= 0)
                return r;
        r = sd_bus_message_read(reply, "ssss", &id, &session, &state, &kind);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "ay");
        while (r >= 0) {
                _cleanup_free_ char *a = NULL;
                r = sd_bus_message_at_end(reply, false);
                if (r != 0)
                        break;
                r = read_bytes(reply, &a);
                if (r >= 0)
                        r = strv_consume(&argv, TAKE_PTR(a));
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_read(reply, "s", &argv_shown);
        if (r >= 0)
                r = read_bytes(reply, &why);
        if (r >= 0)
                r = sd_bus_message_read(reply, "s", &why_shown);
        if (r >= 0)
                r = read_bytes(reply, &cwd);
        if (r >= 0)
                r = sd_bus_message_read(reply, "s", &cwd_shown);
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        if (list) {
                _cleanup_json_ json_object *o = json_object_new_object();
                if (!o || json_add_string(o, "RequestId", id) < 0 || json_add_string(o, "SessionId", session) < 0 ||
                    json_add_string(o, "State", state) < 0 || json_add_string(o, "Kind", kind) < 0 ||
                    json_add_bytes(o, "Why", why) < 0 || json_add_bytes_strv(o, "Argv", (const char *const *) argv) < 0 ||
                    json_add_string(o, "ArgvDisplay", argv_shown) < 0 || json_add_bytes(o, "Cwd", cwd) < 0 ||
                    json_append(list, o) < 0)
                        return -ENOMEM;
                TAKE_PTR(o);
                return 1;
        }
        /* The coordinator's display forms, escaped once more: a server of another version is no more trusted. */
        {
                _cleanup_free_ char *a = utf8_escape_invalid(argv_shown), *w = utf8_escape_invalid(why_shown);
                if (!a || !w)
                        return -ENOMEM;
                printf("%s  %-9s  session %.8s  %s\n", id, state, session, a);
                if (why[0])
                        printf("%34s why: %s\n", "", w);
        }
        return 1;
}

#define ESCALATION_HISTORY_SHOWN 200    /* audit events lazaretctl escalations history shows */

/* One audit event, as a human line or a JSON object. */
static int history_show(const EscalationEvent *ev, void *userdata) {
        json_object *list = userdata;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *shown = NULL, *detail = NULL;
        char stamp[32];
        time_t t = (time_t) (ev->time_usec / 1000000);
        struct tm tm;

        if (ev->argv_json) {
                /* Each argument a string, or an array of byte values where it was not UTF-8 (json_new_bytes()),
                 * read by the one JSON reader; a record it refuses shows no command. */
                _cleanup_json_ json_object *a = NULL;
                _cleanup_free_ char *why = NULL;       /* json_parse_strict() always writes it */
                if (json_parse_strict(ev->argv_json, strlen(ev->argv_json), &a, &why) == -ENOMEM)
                        return -ENOMEM;
                for (size_t i = 0; a && json_object_is_type(a, json_type_array) && i < json_object_array_length(a); i++) {
                        char *arg = NULL;
                        if (json_get_bytes(json_object_array_get_idx(a, i), &arg) < 0 && !(arg = strdup("?")))
                                return -ENOMEM;
                        if (strv_consume(&argv, arg) < 0)
                                return -ENOMEM;
                }
        }
        if (list) {
                _cleanup_json_ json_object *o = json_object_new_object();
                if (!o || json_add_uint64(o, "TimeUSec", ev->time_usec) < 0 ||
                    (ev->request && json_add_string(o, "RequestId", ev->request) < 0) ||
                    (ev->session && json_add_string(o, "SessionId", ev->session) < 0) ||
                    json_add_string(o, "Event", ev->event) < 0 || (ev->by && json_add_string(o, "By", ev->by) < 0) ||
                    (argv && json_add_bytes_strv(o, "Argv", (const char *const *) argv) < 0) ||
                    (ev->cwd && json_add_bytes(o, "Cwd", ev->cwd) < 0) || (ev->why && json_add_bytes(o, "Why", ev->why) < 0) ||
                    (ev->outcome && (json_add_string(o, "Outcome", ev->outcome) < 0 || json_add_int64(o, "Status", ev->status) < 0)) ||
                    (ev->detail && json_add_bytes(o, "Detail", ev->detail) < 0) || json_append(list, o) < 0)
                        return -ENOMEM;
                TAKE_PTR(o);
                return 0;
        }
        if (!localtime_r(&t, &tm) || strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm) == 0)
                stamp[0] = 0;
        /* What the sandbox wrote is escaped before it reaches the terminal. */
        shown = argv ? esc_argv_to_display(argv) : strdup("");
        detail = esc_string_to_display(ev->detail ?: "");
        if (!shown || !detail)
                return -ENOMEM;
        printf("%s  %.8s  %-13s %-10s %s%s%s%s%s\n", stamp, ev->request ?: "-", ev->event, ev->by ?: "", shown,
               ev->outcome ? "  -> " : "", strempty(ev->outcome), ev->detail ? "  " : "", ev->detail ? detail : "");
        return 0;
}

static const char *empty_to_null(const char *s) {
        return s && *s ? s : NULL;
}

/* One event of EscalationHistory's reply (ESCALATION_EVENT_SIGNATURE); 0 at the array's end. */
static int history_read(sd_bus_message *reply, json_object *list) {
        _cleanup_free_ char *cwd = NULL, *why = NULL, *detail = NULL;
        const char *request, *session, *event, *by, *argv_json, *outcome;
        uint64_t t;
        int32_t status;
        int r;

        r = sd_bus_message_enter_container(reply, 'r', ESCALATION_EVENT_SIGNATURE);
        if (r <= 0)
                return r;
        r = sd_bus_message_read(reply, "tsssss", &t, &request, &session, &event, &by, &argv_json);
        if (r >= 0)
                r = read_bytes(reply, &cwd);
        if (r >= 0)
                r = read_bytes(reply, &why);
        if (r >= 0)
                r = sd_bus_message_read(reply, "si", &outcome, &status);
        if (r >= 0)
                r = read_bytes(reply, &detail);
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        /* Empty is absent (the store's NULL). */
        r = history_show(&(EscalationEvent) {
                                 .time_usec = t,
                                 .request = empty_to_null(request),
                                 .session = empty_to_null(session),
                                 .event = event,
                                 .by = empty_to_null(by),
                                 .argv_json = empty_to_null(argv_json),
                                 .cwd = empty_to_null(cwd),
                                 .why = empty_to_null(why),
                                 .outcome = empty_to_null(outcome),
                                 .status = status,
                                 .detail = empty_to_null(detail),
                         }, list);
        return r < 0 ? r : 1;
}

/*
 * lazaretctl escalations history: the audit trail in the Domain Store, told
 * by the Domain's coordinator (only it opens the store), or by a
 * maintenance coordinator when the Domain is stopped (maintenance.h).
 */
static int escalations_history(int argc, char *argv[], const Config *config) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_json_ json_object *list = NULL;
        char id[DOMAIN_ID_LEN + 1];
        unsigned n = 0;
        int r;

        r = target_domain_id(1, argv, config, id);
        if (r < 0)
                return r;
        r = ctl_bus_open(&bus);
        if (r < 0)
                return r;
        r = ctl_domain_call(config, bus, id, &reply, "EscalationHistory", "u", (uint32_t) ESCALATION_HISTORY_SHOWN);
        if (r == -ENOENT) {
                printf(arg_json ? "[]\n" : "Domain %s has no record of escalation requests.\n", id);
                return 0;
        }
        if (r == -EHOSTDOWN)
                return CTL_EXIT_NOT_RESPONDING;
        if (r < 0)
                return r;
        if (arg_json && !(list = json_object_new_array()))
                return ctl_json_failed(-ENOMEM);
        r = sd_bus_message_enter_container(reply, 'a', "(" ESCALATION_EVENT_SIGNATURE ")");
        while (r >= 0 && (r = history_read(reply, list)) > 0)
                n++;
        if (r < 0) {
                fprintf(stderr, "Cannot read the audit trail of Domain %s: %s\n", id, strerror(-r));
                return r;
        }
        if (list)
                return ctl_print_json(list);
        if (n == 0)
                printf("Domain %s has no record of escalation requests.\n", id);
        return 0;
}

/*
 * lazaretctl escalations [list] | approve ID | deny ID: host escalation
 * requests of the current Domain that wait for a decision, decided here
 * instead of (or before) the session's terminal.
 */
int verb_escalations(int argc, char *argv[], const Config *config) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_json_ json_object *list = NULL;
        const char *what = argc > 1 ? argv[1] : "list";
        char name[BUS_NAME_MAX], id[DOMAIN_ID_LEN + 1];
        unsigned n = 0;
        int r;

        if (!streq(what, "list") && !streq(what, "approve") && !streq(what, "deny") && !streq(what, "history")) {
                fprintf(stderr, "Unknown escalations action \"%s\"; use list, history, approve ID or deny ID.\n", what);
                return -EINVAL;
        }
        if (streq(what, "history"))
                return argc > 2 ? (fprintf(stderr, "\"escalations history\" takes no arguments.\n"), -EINVAL)
                                : escalations_history(argc, argv, config);
        if ((streq(what, "list") && argc > 2) || (!streq(what, "list") && argc != 3)) {
                fprintf(stderr, "Usage: lazaretctl escalations [list] | approve ID | deny ID\n");
                return -EINVAL;
        }
        r = domain_open_target(1, argv, config, &bus, id, name);
        if (r < 0)
                return r;
        if (!streq(what, "list")) {
                r = sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "DecideEscalation", &error,
                                       NULL, "sbas", argv[2], (int) streq(what, "approve"), 0);
                if (r < 0) {
                        if (error_is_not_running(&error)) {
                                fprintf(stderr, "Domain %s is not running.\n", id);
                                return -ESRCH;
                        }
                        if (ctl_bus_not_responding(bus, name, &error))
                                return ctl_not_responding(id);
                        fprintf(stderr, "Cannot %s request %s: %s\n", what, argv[2], error.message ?: strerror(-r));
                        return r;
                }
                if (!arg_json)
                        printf("Request %s %s.\n", argv[2], streq(what, "approve") ? "approved" : "denied");
                return 0;
        }
        r = sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "ListEscalationRequests", &error, &reply,
                               "");
        if (r < 0) {
                if (error_is_not_running(&error)) {
                        if (arg_json)
                                printf("[]\n");
                        else
                                printf("Domain %s is not running.\n", id);
                        return 0;
                }
                if (ctl_bus_not_responding(bus, name, &error))
                        return ctl_not_responding(id);
                fprintf(stderr, "Cannot list the escalation requests of Domain %s: %s\n", id, error.message ?: strerror(-r));
                return r;
        }
        if (arg_json) {
                list = json_object_new_array();
                if (!list)
                        return ctl_json_failed(-ENOMEM);
        }
        r = sd_bus_message_enter_container(reply, 'a', "(" ESCALATION_REQUEST_V2_SIGNATURE ")");
        while (r >= 0 && (r = escalation_show(reply, list)) > 0)
                n++;
        if (r < 0) {
                fprintf(stderr, "Cannot read the escalation requests: %s\n", strerror(-r));
                return r;
        }
        if (list)
                return ctl_print_json(list);
        if (n == 0)
                printf("No escalation request of Domain %s waits for a decision.\n", id);
        return 0;
}
