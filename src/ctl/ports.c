/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl ports [list] | publish [HOST_PORT:]PORT | unpublish HOST_PORT:
 * the published ports of the selected profile and workspace's Domain (spec
 * section 4.5), a TCP port of the sandbox forwarded to 127.0.0.1 of the
 * host. One bus call each: the PublishedPorts property, PublishPort,
 * UnpublishPort. The argument is judged here by the same rule as the
 * coordinator's (port-forward.h) before anything is asked.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "cleanup.h"
#include "ctl.h"
#include "domains.h"
#include "json-util.h"
#include "macro.h"
#include "parse-util.h"
#include "port-forward.h"

static int forward_json(const PortForward *f, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add_string(o, "host_address", PORT_HOST_ADDRESS);
        if (r >= 0)
                r = json_add_uint64(o, "host_port", f->host_port);
        /* unpublish names the host port only. */
        if (r >= 0 && f->guest_port > 0)
                r = json_add_uint64(o, "port", f->guest_port);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static int report_call_error(sd_bus *bus, const char *name, const char *id, const sd_bus_error *error, int r,
                             const char *what) {
        if (sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                fprintf(stderr, "Domain %s is not running.\n", id);
                return -ESRCH;
        }
        if (ctl_bus_not_responding(bus, name, error))
                return ctl_not_responding(id);
        fprintf(stderr, "Cannot %s: %s\n", what, error->message ?: strerror(-r));
        return r;
}

static int ports_list_show(sd_bus *bus, const char *name, const char *id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_json_ json_object *list = NULL;
        int r;

        r = sd_bus_get_property(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "PublishedPorts", &error, &reply,
                                "a(sqq)");
        if (r < 0 && sd_bus_error_has_names(&error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                if (arg_json)
                        printf("[]\n");
                else
                        printf("Domain %s is not running.\n", id);
                return 0;
        }
        if (r < 0)
                return report_call_error(bus, name, id, &error, r, "list the published ports");
        r = published_ports_json(reply, &list);
        if (r < 0) {
                fprintf(stderr, "Cannot read the published ports: %s\n", strerror(-r));
                return r;
        }
        if (arg_json)
                return ctl_print_json(list);
        if (json_object_array_length(list) == 0)
                printf("Domain %s publishes no port.\n", id);
        else
                published_ports_print(list, "");
        return 0;
}

int verb_ports(int argc, char *argv[], const Config *config) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *why = NULL, *what = NULL;
        const char *action = argc > 1 ? argv[1] : "list";
        char name[BUS_NAME_MAX], id[DOMAIN_ID_LEN + 1];
        PortForward f = {};
        int r;

        if (streq(action, "list")) {
                if (argc > 2) {
                        fprintf(stderr, "\"ports list\" takes no arguments.\n");
                        return -EINVAL;
                }
        } else if (streq(action, "publish")) {
                if (argc != 3) {
                        fprintf(stderr, "Usage: lazaretctl ports publish [HOST_PORT:]PORT\n");
                        return -EINVAL;
                }
                r = port_forward_parse(argv[2], &f, &why);
                if (r < 0) {
                        fprintf(stderr, "Cannot publish \"%s\": %s.\n", argv[2], why ?: strerror(-r));
                        return r;
                }
        } else if (streq(action, "unpublish")) {
                uint64_t v;

                if (argc != 3) {
                        fprintf(stderr, "Usage: lazaretctl ports unpublish HOST_PORT\n");
                        return -EINVAL;
                }
                if (parse_unsigned(argv[2], 0, 1, 65535, &v) < 0) {
                        fprintf(stderr, "\"%s\" is not a host port (a decimal TCP port, 1 to 65535).\n", argv[2]);
                        return -EINVAL;
                }
                f.host_port = (uint16_t) v;
        } else {
                fprintf(stderr, "Unknown ports action \"%s\"; use list, publish [HOST_PORT:]PORT or unpublish HOST_PORT.\n",
                        action);
                return -EINVAL;
        }

        r = domain_open_target(1, argv, config, &bus, id, name);
        if (r < 0)
                return r;
        if (streq(action, "list"))
                return ports_list_show(bus, name, id);

        if (streq(action, "publish")) {
                uint16_t host_port;

                r = sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "PublishPort", &error, &reply,
                                       "qq", f.host_port, f.guest_port);
                if (r >= 0)
                        r = sd_bus_message_read(reply, "q", &host_port);
                if (r < 0) {
                        if (asprintf(&what, "publish sandbox port %u on " PORT_HOST_ADDRESS ":%u", (unsigned) f.guest_port,
                                     (unsigned) f.host_port) < 0)
                                return -ENOMEM;
                        return report_call_error(bus, name, id, &error, r, what);
                }
        } else {
                r = sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "UnpublishPort", &error, NULL,
                                       "q", f.host_port);
                if (r < 0) {
                        if (asprintf(&what, "unpublish host port %u", (unsigned) f.host_port) < 0)
                                return -ENOMEM;
                        return report_call_error(bus, name, id, &error, r, what);
                }
        }
        if (arg_json) {
                _cleanup_json_ json_object *o = NULL;

                r = forward_json(&f, &o);
                if (r >= 0)
                        r = json_add_bool(o, "published", streq(action, "publish"));
                return r < 0 ? ctl_json_failed(r) : ctl_print_json(o);
        }
        if (streq(action, "publish"))
                printf("Published sandbox port %u on " PORT_HOST_ADDRESS ":%u.\n", (unsigned) f.guest_port,
                       (unsigned) f.host_port);
        else
                printf("Unpublished host port %u.\n", (unsigned) f.host_port);
        return 0;
}
