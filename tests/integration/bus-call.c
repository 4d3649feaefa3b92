/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bus-call: a test client for org.lazaret.Domain1 that can pass file
 * descriptors (busctl cannot). Prints "OK <reply>" or "ERROR <name>: <msg>".
 *
 *   bus-call open BUS FINGERPRINT TERMINAL(0|1) NFDS [-e NAME=VALUE]... -- ARGV...
 *            (an argument "@big:N" is sent as N times 'x')
 *   bus-call stop-open PID BUS FINGERPRINT ...
 *            as open, for a coordinator PID that the caller stopped with
 *            SIGSTOP: sends Stop(), then the OpenSession, asks the bus
 *            daemon for its ID (once it answers, it has queued both for
 *            the coordinator, in that order), then sends PID SIGCONT;
 *            prints OpenSession's answer
 *   bus-call resize BUS SESSION ROWS COLS
 *   bus-call signal BUS SESSION EVENT
 *   bus-call close BUS SESSION
 *
 * Built by the test that uses it, with cc and libsystemd.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#define PATH "/org/lazaret/Domain"
#define IFACE "org.lazaret.Domain1"

static sd_bus_message *async_reply;

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        async_reply = sd_bus_message_ref(m);
        return 0;
}

int main(int argc, char *argv[]) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *m = NULL, *reply = NULL;
        sd_bus *bus = NULL;
        int stopped_pid = 0;
        int r;

        if (argc >= 3 && strcmp(argv[1], "stop-open") == 0) {
                stopped_pid = atoi(argv[2]);
                if (stopped_pid <= 0)
                        return 2;
                argv++;
                argc--;
                argv[1] = "open";
        }
        if (argc < 4)
                return 2;
        if (sd_bus_open_user(&bus) < 0)
                return 2;

        if (strcmp(argv[1], "open") == 0) {
                int terminal, nfds, i = 6;
                if (argc < 7)
                        return 2;
                terminal = atoi(argv[4]);
                nfds = atoi(argv[5]);
                sd_bus_message_new_method_call(bus, &m, argv[2], PATH, IFACE, "OpenSession");
                /* environment entries come first on the command line, argv after "--" */
                char **env = calloc(argc, sizeof(char *));
                int nenv = 0;
                for (; i < argc && strcmp(argv[i], "--") != 0; i++)
                        if (strcmp(argv[i], "-e") == 0 && i + 1 < argc)
                                env[nenv++] = argv[++i];
                if (i < argc)
                        i++;
                /* "@big:N" stands for N times 'x' (longer than exec allows). */
                for (int j = i; j < argc; j++)
                        if (strncmp(argv[j], "@big:", 5) == 0) {
                                size_t n = strtoul(argv[j] + 5, NULL, 10);
                                char *b = malloc(n + 1);
                                memset(b, 'x', n);
                                b[n] = 0;
                                argv[j] = b;
                        }
                r = sd_bus_message_append_strv(m, argv + i);
                if (r >= 0)
                        r = sd_bus_message_append_strv(m, env);
                if (r >= 0)
                        r = sd_bus_message_append(m, "b", terminal);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, 'a', "h");
                for (int fd = 0; r >= 0 && fd < nfds; fd++)
                        r = sd_bus_message_append(m, "h", fd % 3);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_append(m, "qqs", 24, 80, argv[3]);
                if (r < 0) {
                        fprintf(stderr, "cannot build the message: %s\n", strerror(-r));
                        return 2;
                }
        } else if (strcmp(argv[1], "resize") == 0 && argc == 6) {
                sd_bus_message_new_method_call(bus, &m, argv[2], PATH, IFACE, "ResizeSession");
                sd_bus_message_append(m, "sqq", argv[3], atoi(argv[4]), atoi(argv[5]));
        } else if (strcmp(argv[1], "signal") == 0 && argc == 5) {
                sd_bus_message_new_method_call(bus, &m, argv[2], PATH, IFACE, "SignalSession");
                sd_bus_message_append(m, "ss", argv[3], argv[4]);
        } else if (strcmp(argv[1], "close") == 0 && argc == 4) {
                sd_bus_message_new_method_call(bus, &m, argv[2], PATH, IFACE, "CloseSession");
                sd_bus_message_append(m, "s", argv[3]);
        } else
                return 2;

        if (stopped_pid > 0) {
                sd_bus_message *stop = NULL;
                sd_bus_message_new_method_call(bus, &stop, argv[2], PATH, IFACE, "Stop");
                if (!stop || sd_bus_send(bus, stop, NULL) < 0 || sd_bus_call_async(bus, NULL, m, on_reply, NULL, 0) < 0 ||
                    sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                       "GetId", &error, NULL, "") < 0 ||
                    kill(stopped_pid, SIGCONT) < 0) {
                        fprintf(stderr, "cannot send Stop and OpenSession to the stopped coordinator\n");
                        return 2;
                }
                while (!async_reply) {
                        r = sd_bus_process(bus, NULL);
                        if (r < 0)
                                return 2;
                        if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
                                return 2;
                }
                reply = async_reply;
                r = sd_bus_message_get_errno(reply);
                if (sd_bus_message_is_method_error(reply, NULL)) {
                        sd_bus_error_copy(&error, sd_bus_message_get_error(reply));
                        r = -(r ?: EIO);
                }
        } else
                r = sd_bus_call(bus, m, 0, &error, &reply);
        if (r < 0) {
                printf("ERROR %s: %s\n", error.name ? error.name : "?", error.message ? error.message : strerror(-r));
                return 1;
        }
        if (strcmp(argv[1], "open") == 0) {
                const char *sid = NULL;
                sd_bus_message_read(reply, "s", &sid);
                printf("OK %s\n", sid ? sid : "");
        } else
                printf("OK\n");
        return 0;
}
