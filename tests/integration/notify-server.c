/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A test notification server (org.freedesktop.Notifications) on the user
 * bus, for test-escalation.sh: it logs every Notify and CloseNotification
 * to LOGFILE, one line each ("notify ID<TAB>SUMMARY<TAB>BODY<TAB>ACTIONS",
 * newlines in the body as "\n"; "close ID"), and emits ActionInvoked when
 * a line "invoke ID ACTION" arrives on its standard input. It offers the
 * capabilities actions, body and body-markup. "ready" is logged once the
 * name is owned.
 *
 *     notify-server LOGFILE
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

static FILE *logf;
static uint32_t next_id = 1;
static sd_bus *bus;

static int method_notify(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *app, *icon, *summary, *body;
        uint32_t replaces, id = next_id++;
        char **actions = NULL;
        int r;

        r = sd_bus_message_read(m, "susss", &app, &replaces, &icon, &summary, &body);
        if (r >= 0)
                r = sd_bus_message_read_strv(m, &actions);
        if (r < 0)
                return r;
        fprintf(logf, "notify %u\t%s\t", id, summary);
        for (const char *c = body; *c; c++)
                if (*c == '\n')
                        fputs("\\n", logf);
                else
                        fputc(*c, logf);
        fputc('\t', logf);
        for (char **a = actions; a && *a; a += 2)
                fprintf(logf, "%s%s", a == actions ? "" : ",", *a);
        fputc('\n', logf);
        fflush(logf);
        for (char **a = actions; a && *a; a++)
                free(*a);
        free(actions);
        return sd_bus_reply_method_return(m, "u", id);
}

static int method_close(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        uint32_t id;
        int r = sd_bus_message_read(m, "u", &id);

        if (r < 0)
                return r;
        fprintf(logf, "close %u\n", id);
        fflush(logf);
        (void) sd_bus_emit_signal(bus, "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
                                  "NotificationClosed", "uu", id, 3);
        return sd_bus_reply_method_return(m, "");
}

static int method_caps(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return sd_bus_reply_method_return(m, "as", 3, "actions", "body", "body-markup");
}

static int method_info(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return sd_bus_reply_method_return(m, "ssss", "lt-notify", "lazaret-test", "1", "1.2");
}

static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("Notify",
                SD_BUS_ARGS("s", app_name, "u", replaces_id, "s", app_icon, "s", summary, "s", body, "as", actions,
                            "a{sv}", hints, "i", expire_timeout),
                SD_BUS_RESULT("u", id), method_notify, 0),
        SD_BUS_METHOD_WITH_ARGS("CloseNotification", SD_BUS_ARGS("u", id), SD_BUS_NO_RESULT, method_close, 0),
        SD_BUS_METHOD_WITH_ARGS("GetCapabilities", SD_BUS_NO_ARGS, SD_BUS_RESULT("as", capabilities), method_caps, 0),
        SD_BUS_METHOD_WITH_ARGS("GetServerInformation", SD_BUS_NO_ARGS,
                SD_BUS_RESULT("s", name, "s", vendor, "s", version, "s", spec_version), method_info, 0),
        SD_BUS_SIGNAL_WITH_ARGS("ActionInvoked", SD_BUS_ARGS("u", id, "s", action_key), 0),
        SD_BUS_SIGNAL_WITH_ARGS("NotificationClosed", SD_BUS_ARGS("u", id, "u", reason), 0),
        SD_BUS_VTABLE_END
};

static int on_stdin(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        static char line[512];
        static size_t len;
        ssize_t k = read(fd, line + len, sizeof(line) - 1 - len);
        char *nl;

        if (k <= 0)
                return sd_event_exit(sd_event_source_get_event(s), 0);
        len += (size_t) k;
        line[len] = 0;
        while ((nl = strchr(line, '\n'))) {
                unsigned id;
                char action[64];

                *nl = 0;
                if (sscanf(line, "invoke %u %63s", &id, action) == 2)
                        (void) sd_bus_emit_signal(bus, "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
                                                  "ActionInvoked", "us", (uint32_t) id, action);
                memmove(line, nl + 1, len - (size_t) (nl + 1 - line) + 1);
                len -= (size_t) (nl + 1 - line);
        }
        return 0;
}

int main(int argc, char **argv) {
        sd_event *event = NULL;
        int r;

        if (argc != 2)
                return 2;
        logf = fopen(argv[1], "ae");
        if (!logf)
                return 1;
        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_bus_open_user(&bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
                                             vtable, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, "org.freedesktop.Notifications", 0);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, 0);
        if (r >= 0)
                r = sd_event_add_io(event, NULL, STDIN_FILENO, EPOLLIN, on_stdin, NULL);
        if (r < 0) {
                fprintf(stderr, "notify-server: %s\n", strerror(-r));
                return 1;
        }
        fprintf(logf, "ready\n");
        fflush(logf);
        r = sd_event_loop(event);
        return r < 0 ? 1 : 0;
}
