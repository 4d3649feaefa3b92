/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl egress [denied] | allow RULE [--once|--domain|--keep] | kept |
 * forget RULE: the names the sandbox of the selected Domain was refused
 * (spec section 4.5, "A denied name") and the developer's allows, one bus
 * call each: ListDeniedEgress, AllowEgress, and the Domain Store's
 * KeptEgress and ForgetEgress (a stopped Domain's are answered by a
 * maintenance coordinator, maintenance.h). The rule is judged here by the
 * same reader as the coordinator's (host-rule.h) before anything is asked.
 * What the sandbox chose (the names) is printed escaped.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "cleanup.h"
#include "ctl.h"
#include "domains.h"
#include "egress-proto.h"
#include "escalation-proto.h"
#include "json-util.h"
#include "macro.h"
#include "maintenance.h"
#include "strv.h"

static EgressScope arg_scope = EGRESS_SCOPE_ONCE;
static const char *arg_scope_option = NULL;

void egress_set_scope(EgressScope s, const char *option) {
        arg_scope = s;
        arg_scope_option = option;
}

static bool not_running(const sd_bus_error *error) {
        return sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER);
}

static int call_failed(sd_bus *bus, const char *name, const char *id, const sd_bus_error *error, int r,
                       const char *what) {
        if (not_running(error)) {
                fprintf(stderr, "Domain %s is not running.\n", id);
                return -ESRCH;
        }
        if (ctl_bus_not_responding(bus, name, error))
                return ctl_not_responding(id);
        fprintf(stderr, "Cannot %s: %s\n", what, error->message ?: strerror(-r));
        return r;
}

static void stamp(uint64_t usec, char buf[static 32]) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;

        if (!localtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, 32, "-");
}

static int denied_show(sd_bus *bus, const char *name, const char *id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_json_ json_object *list = NULL;
        unsigned n = 0;
        int r;

        r = sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "ListDeniedEgress", &error, &reply, "");
        if (r < 0 && not_running(&error)) {
                printf(arg_json ? "[]\n" : "Domain %s is not running.\n", id);
                return 0;
        }
        if (r < 0)
                return call_failed(bus, name, id, &error, r, "list the denied names");
        if (arg_json && !(list = json_object_new_array()))
                return ctl_json_failed(-ENOMEM);
        r = sd_bus_message_enter_container(reply, 'a', "(" EGRESS_DENIAL_SIGNATURE ")");
        while (r >= 0) {
                const char *rule, *host, *kind;
                uint64_t first, last;
                uint32_t count;
                uint16_t port;

                r = sd_bus_message_read(reply, "(" EGRESS_DENIAL_SIGNATURE ")", &rule, &host, &port, &kind, &first, &last,
                                        &count);
                if (r <= 0)
                        break;
                n++;
                if (list) {
                        _cleanup_json_ json_object *o = json_object_new_object();
                        if (!o || json_add_string(o, "rule", rule) < 0 || json_add_string(o, "name", host) < 0 ||
                            json_add_uint64(o, "port", port) < 0 || json_add_string(o, "kind", kind) < 0 ||
                            json_add_uint64(o, "first_usec", first) < 0 || json_add_uint64(o, "last_usec", last) < 0 ||
                            json_add_uint64(o, "count", count) < 0 || json_append(list, o) < 0)
                                return ctl_json_failed(-ENOMEM);
                        TAKE_PTR(o);
                } else {
                        _cleanup_free_ char *shown = esc_string_to_display(rule);
                        char when[32];

                        if (!shown)
                                return -ENOMEM;
                        stamp(last, when);
                        printf("%-40s %-5s %6u  last %s\n", shown, kind, (unsigned) count, when);
                }
        }
        if (r < 0) {
                fprintf(stderr, "Cannot read the denied names: %s\n", strerror(-r));
                return r;
        }
        if (list)
                return ctl_print_json(list);
        if (n == 0)
                printf("The sandbox of Domain %s was refused no name.\n", id);
        else
                printf("\nAllow one: lazaretctl egress allow RULE [--once|--domain|--keep]\n");
        return 0;
}

static int kept_show(const Config *config, sd_bus *bus, const char *id) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_strv_free_ char **kept = NULL;
        int r;

        r = ctl_domain_call(config, bus, id, &reply, "KeptEgress", NULL);
        if (r == -ENOENT) {
                printf(arg_json ? "[]\n" : "Domain %s keeps no allowed name.\n", id);
                return 0;
        }
        if (r == -EHOSTDOWN)
                return CTL_EXIT_NOT_RESPONDING;
        if (r < 0)
                return r;
        r = sd_bus_message_read_strv(reply, &kept);
        if (r < 0) {
                fprintf(stderr, "Cannot read the kept names: %s\n", strerror(-r));
                return r;
        }
        if (arg_json) {
                _cleanup_json_ json_object *list = json_object_new_array();
                STRV_FOREACH(k, kept)
                        if (!list || json_append_string(list, *k) < 0)
                                return ctl_json_failed(-ENOMEM);
                return ctl_print_json(list);
        }
        if (!kept || !kept[0])
                printf("Domain %s keeps no allowed name.\n", id);
        STRV_FOREACH(k, kept) {
                _cleanup_free_ char *shown = esc_string_to_display(*k);
                if (!shown)
                        return -ENOMEM;
                printf("%s\n", shown);
        }
        return 0;
}

static int forget(const Config *config, sd_bus *bus, const char *id, const char *rule) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = ctl_domain_call(config, bus, id, &reply, "ForgetEgress", "s", rule);
        if (r == -ENOENT) {
                fprintf(stderr, "Domain %s keeps no allowed name.\n", id);
                return r;
        }
        if (r == -EHOSTDOWN)
                return CTL_EXIT_NOT_RESPONDING;
        if (r < 0)
                return r;
        if (!arg_json)
                printf("%s is forgotten: no longer kept, and no longer allowed in the running sandbox.\n", rule);
        return 0;
}

int verb_egress(int argc, char *argv[], const Config *config) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *why = NULL, *what = NULL;
        const char *action = argc > 1 ? argv[1] : "denied";
        char name[BUS_NAME_MAX], id[DOMAIN_ID_LEN + 1], canon[HOST_RULE_STRING_MAX];
        HostRule rule;
        int r;

        if (streq(action, "denied") || streq(action, "kept")) {
                if (argc > 2) {
                        fprintf(stderr, "\"egress %s\" takes no arguments.\n", action);
                        return -EINVAL;
                }
        } else if (streq(action, "allow") || streq(action, "forget")) {
                if (argc != 3) {
                        fprintf(stderr, "Usage: lazaretctl egress allow RULE [--once|--domain|--keep] | forget RULE\n");
                        return -EINVAL;
                }
                r = host_rule_parse(argv[2], &rule, &why);
                if (r < 0) {
                        fprintf(stderr, "Cannot %s \"%s\": %s.\n", action, argv[2], why ?: strerror(-r));
                        return r;
                }
                host_rule_format(&rule, canon);
        } else {
                fprintf(stderr, "Unknown egress action \"%s\"; use denied, allow RULE, kept or forget RULE.\n", action);
                return -EINVAL;
        }
        if (arg_scope_option && !streq(action, "allow")) {
                fprintf(stderr, "%s is an option of \"egress allow\" only.\n", arg_scope_option);
                return -EINVAL;
        }

        r = domain_open_target(1, argv, config, &bus, id, name);
        if (r < 0)
                return r;
        if (streq(action, "denied"))
                return denied_show(bus, name, id);
        if (streq(action, "kept"))
                return kept_show(config, bus, id);
        if (streq(action, "forget"))
                return forget(config, bus, id, canon);

        r = sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "AllowEgress", &error, NULL, "ss",
                               canon, egress_scope_to_string(arg_scope));
        if (r < 0) {
                if (asprintf(&what, "allow %s", canon) < 0)
                        return -ENOMEM;
                return call_failed(bus, name, id, &error, r, what);
        }
        if (arg_json) {
                _cleanup_json_ json_object *o = json_object_new_object();
                if (!o || json_add_string(o, "rule", canon) < 0 ||
                    json_add_string(o, "scope", egress_scope_to_string(arg_scope)) < 0)
                        return ctl_json_failed(-ENOMEM);
                return ctl_print_json(o);
        }
        printf("Allowed %s %s.\n", canon,
               arg_scope == EGRESS_SCOPE_ONCE ? "once (its next answer or connection, then 60 s)"
               : arg_scope == EGRESS_SCOPE_DOMAIN ? "for the Domain's life"
                                                  : "and kept in the Domain Store for every start");
        return 0;
}
