/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Asking a Domain's coordinator, or a maintenance coordinator started for
 * the question (maintenance.h). The start is a launch's, with a request
 * that says "maintenance": the activation socket (started when it does not
 * listen), one JSON answer line ({"state":"maintenance"}, or "running"
 * when a launch came first and the Domain runs: its coordinator answers
 * too). "stopping" (the coordinator goes, because a launch connected or it
 * was idle) is asked again; every wait is bounded.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "bus-job.h"
#include "bus-names.h"
#include "bus-util.h"
#include "cleanup.h"
#include "ctl.h"
#include "domain.h"
#include "json-util.h"
#include "launch-request.h"
#include "maintenance.h"
#include "path-util.h"
#include "util.h"

/* Calls before giving up: each one may meet a coordinator that just left. */
#define CALL_ATTEMPTS 8
/* How long a maintenance start may take (no sandbox: a configuration load, the lock, the store, the bus name). */
#define ANSWER_TIMEOUT_MSEC (60 * 1000)
#define SOCKET_START_TIMEOUT_USEC (30ULL * 1000 * 1000)
#define ANSWER_MAX 4096

typedef struct JobWait {
        bool done;
        char *result;
} JobWait;

static void on_job_done(BusJob *job, const char *result, const sd_bus_error *error, void *userdata) {
        JobWait *w = userdata;

        w->result = strdup(result);
        w->done = true;
}

/* Starts lazaret@ID.socket and waits for its job, on a loop of its own. */
static int start_socket_unit(sd_bus *bus, const char *id) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(bus_job_freep) BusJob *job = NULL;
        char unit[UNIT_NAME_MAX];
        JobWait w = {};
        int r;

        domain_unit_name(id, "socket", unit);
        r = sd_event_new(&event);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, 0);
        if (r < 0)
                return r;
        r = bus_job_start(bus, "StartUnit", bus_append_unit_replace, unit, SOCKET_START_TIMEOUT_USEC, on_job_done, &w,
                          &job);
        while (r >= 0 && !w.done)
                r = sd_event_run(event, UINT64_MAX);
        job = bus_job_free(job);
        (void) sd_bus_detach_event(bus);
        if (r < 0) {
                fprintf(stderr, "Cannot start %s: %s\n", unit, strerror(-r));
                return r;
        }
        r = streq_ptr(w.result, "done") ? 0 : -EIO;
        if (r < 0)
                fprintf(stderr, "Starting %s ended with \"%s\"; see: systemctl --user status %s\n", unit,
                        strna(w.result), unit);
        free(w.result);
        return r;
}

static int connect_activation(const char *runtime, const char *id, int *ret_fd) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        if ((size_t) snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", runtime, id) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The first line that is not progress, within ANSWER_TIMEOUT_MSEC; "" when the coordinator closed unanswered. */
static int read_answer(int fd, char buf[static ANSWER_MAX]) {
        size_t n = 0;
        char *nl;

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                ssize_t k;

                while ((nl = memchr(buf, '\n', n))) {
                        if (!startswith(buf, "{\"progress\":")) {
                                *nl = 0;
                                return 0;
                        }
                        n -= (size_t) (nl + 1 - buf);
                        memmove(buf, nl + 1, n);
                }
                if (n >= ANSWER_MAX - 1)
                        return -EBADMSG;
                buf[n] = 0;
                k = poll(&p, 1, ANSWER_TIMEOUT_MSEC);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k == 0 ? -ETIMEDOUT : -errno;
                k = read(fd, buf + n, ANSWER_MAX - 1 - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0) {
                        buf[0] = 0;
                        return 0;
                }
                n += (size_t) k;
                buf[n] = 0;
        }
}

/*
 * Activates the Domain's coordinator in maintenance: 0 when one answers
 * (maintenance, or running), -EAGAIN when it was going (ask again),
 * -ENOENT when the Domain has no record here, else an error said.
 */
static int start_maintenance(const Config *config, sd_bus *bus, const char *id) {
        _cleanup_free_ char *runtime = NULL, *why = NULL, *domains = NULL;
        _cleanup_(domain_record_done) DomainRecord rec = {};
        _cleanup_json_ json_object *o = NULL;
        _cleanup_close_ int fd = -EBADF;
        LaunchRequest req = { .config_path = config->path, .maintenance = true };
        char answer[ANSWER_MAX];
        json_object *state, *err;
        ino_t ino = 0;
        int r;

        /* A Domain that never ran here has nothing to ask about (and its coordinator could not start). */
        r = domain_record_load(config->data_root, id, &rec, &why);
        if (r == -ENOENT)
                return -ENOENT;
        why = mfree(why);
        r = runtime_dir_prepare(&arg_host, &runtime, &why);
        if (r < 0) {
                fprintf(stderr, "%s\n", why ?: strerror(-r));
                return r;
        }
        config_fingerprint_hex(config, req.fingerprint);
        r = launch_request_write(runtime, id, &req, &ino, &why);
        if (r < 0) {
                fprintf(stderr, "%s\n", why ?: strerror(-r));
                return r;
        }
        r = connect_activation(runtime, id, &fd);
        if (r == -ENOENT || r == -ECONNREFUSED) {
                r = start_socket_unit(bus, id);
                if (r < 0)
                        return r;
                r = connect_activation(runtime, id, &fd);
        }
        if (r < 0) {
                fprintf(stderr, "Cannot connect to the activation socket of Domain %s: %s\n", id, strerror(-r));
                return r;
        }
        r = read_answer(fd, answer);
        if (r == -ETIMEDOUT) {
                fprintf(stderr, "Domain %s's coordinator did not answer within %d s; see: lazaretctl log %s\n", id,
                        ANSWER_TIMEOUT_MSEC / 1000, id);
                return r;
        }
        if (r < 0) {
                fprintf(stderr, "Cannot read the answer of Domain %s's coordinator: %s\n", id, strerror(-r));
                return r;
        }
        if (answer[0] == 0)
                return -EAGAIN;         /* closed unanswered: it went; the request stays for the next one */
        /* Answered: that coordinator read the request, no later one needs it (unless replaced since). */
        (void) launch_request_remove(runtime, id, ino);
        why = mfree(why);
        if (json_parse_strict(answer, strlen(answer), &o, &why) < 0 || !json_object_object_get_ex(o, "state", &state) ||
            !json_object_is_type(state, json_type_string)) {
                _cleanup_free_ char *esc = escape_control(answer);
                fprintf(stderr, "Domain %s answered something unexpected: %s\n", id, strna(esc));
                return -EBADMSG;
        }
        if (streq(json_object_get_string(state), "maintenance") || streq(json_object_get_string(state), "running"))
                return 0;
        if (streq(json_object_get_string(state), "stopping"))
                return -EAGAIN;
        if (json_object_object_get_ex(o, "error", &err) && json_object_is_type(err, json_type_string)) {
                _cleanup_free_ char *esc = escape_control(json_object_get_string(err));
                fprintf(stderr, "Domain %s's coordinator could not start for maintenance: %s\n", id, strna(esc));
        } else
                fprintf(stderr, "Domain %s's coordinator could not start for maintenance.\n", id);
        fprintf(stderr, "Details: lazaretctl log %s\n", id);
        return -EIO;
}

static int call_once(sd_bus *bus, const char *name, const char *method, sd_bus_error *error, sd_bus_message **reply,
                     const char *types, va_list ap) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, method);
        if (r >= 0 && types)
                r = sd_bus_message_appendv(m, types, ap);
        if (r < 0)
                return r;
        return sd_bus_call(bus, m, 0, error, reply);
}

int ctl_domain_call(const Config *config, sd_bus *bus, const char *id, sd_bus_message **ret_reply, const char *method,
                    const char *types, ...) {
        char name[BUS_NAME_MAX];
        int r = -EAGAIN;

        domain_bus_name(id, name);
        for (unsigned attempt = 0; attempt < CALL_ATTEMPTS; attempt++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                va_list ap;

                va_start(ap, types);
                r = call_once(bus, name, method, &error, ret_reply, types, ap);
                va_end(ap);
                if (r >= 0)
                        return 0;
                if (sd_bus_error_has_names(&error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                        /* Nobody owns the Domain: a maintenance coordinator for this call. */
                        r = start_maintenance(config, bus, id);
                        if (r >= 0 || r == -EAGAIN)
                                continue;
                        return r;
                }
                if (sd_bus_error_has_names(&error, SD_BUS_ERROR_UNKNOWN_OBJECT, SD_BUS_ERROR_NO_REPLY) &&
                    !ctl_bus_not_responding(bus, name, &error)) {
                        /* Starting (not published yet) or going (withdrawn, or gone without a reply): again, soon. */
                        (void) usleep(250 * 1000);
                        continue;
                }
                if (ctl_bus_not_responding(bus, name, &error)) {
                        (void) ctl_not_responding(id);
                        return -EHOSTDOWN;
                }
                fprintf(stderr, "Domain %s's coordinator could not answer %s: %s\n", id, method,
                        error.message ?: strerror(-r));
                return r;
        }
        fprintf(stderr, "Domain %s's coordinator kept going away; %s was not answered. Try again.\n", id, method);
        return -EAGAIN;
}

int ctl_domain_end_maintenance(sd_bus *bus, const char *id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *state = NULL;
        char name[BUS_NAME_MAX];

        domain_bus_name(id, name);
        if (sd_bus_get_property_string(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "State", &error, &state) < 0 ||
            !streq(state, "maintenance"))
                return 0;
        (void) sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "Stop", NULL, NULL, "");
        return 1;
}
