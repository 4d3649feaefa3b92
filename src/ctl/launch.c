/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl launch: validates the configuration and the Domain exactly as
 * the coordinator will, records the launch request, activates
 * lazaret@ID.service through its socket, waits for the coordinator's
 * one-line answer, then opens a session with one D-Bus call and waits for
 * its SessionEnded signal.
 *
 * Every wait runs in one sd-event loop that also watches the signals: while
 * the Domain is starting (socket unit start job, the activation answer, the
 * OpenSession call), SIGINT, SIGTERM, SIGHUP or SIGQUIT cancel the launch at
 * once; once a session is open they go to the session (or end it). Every
 * wait for the coordinator is bounded: its bus calls by the connection's
 * CTL_REPLY_TIMEOUT_USEC, the activation answer by pings while it comes. The
 * open session is not: its command may rightly run and stay silent for
 * days, and a coordinator that dies is noticed by its bus name.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-job.h"
#include "bus-names.h"
#include "bus-util.h"
#include "changes.h"
#include "cleanup.h"
#include "config.h"
#include "ctl.h"
#include "domain.h"
#include "fs-util.h"
#include "git-sentry.h"
#include "json-util.h"
#include "launch-request.h"
#include "launch.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"
#include "util.h"

#define SOCKET_START_TIMEOUT_USEC (30ULL * 1000 * 1000)
#define ACTIVATION_TIMEOUT_SEC 300
/* A cancelled launch whose OpenSession call is in flight waits this long
 * for the reply, to close the session it may have opened. */
#define CANCEL_CLOSE_TIMEOUT_USEC (5ULL * 1000 * 1000)
#define STATUS_LINE_MAX 4096
/* While the activation answer is awaited, the coordinator on the bus is
 * pinged this often; a ping unanswered within CTL_REPLY_TIMEOUT_USEC means
 * it is not responding. */
#define PING_INTERVAL_USEC (3ULL * 1000 * 1000)

typedef enum LaunchPhase {
        PHASE_STARTING,         /* no session yet: a signal cancels the launch */
        PHASE_SESSION,          /* a session is open: signals go to it */
} LaunchPhase;

typedef struct Client {
        sd_event *event;
        sd_bus *bus;
        const char *id;
        char bus_name[BUS_NAME_MAX];
        LaunchPhase phase;
        int cancelled;          /* the signal that cancelled the launch, or 0 */
        bool terminal;

        /* the coordinator did not answer within CTL_REPLY_TIMEOUT_USEC: every wait ends */
        bool not_responding;
        /* the bus refused one of our signal matches (a negative errno): every wait ends */
        int match_error;
        sd_bus_slot *ping;      /* a Ping in flight */

        /* issue 32's notice of commits made inside (changes_launch_notice()): looked
         * for by a child process while this one writes the launch request and
         * waits for the bus and the coordinator's answer (notice_start()), said
         * once the Domain runs */
        pid_t notice_pid;
        int notice_fd;
        bool notice_checked;
        const Config *notice_config;    /* set by notice_start(): a client that never started one looks for nothing */
        char *notice;

        /* the activation answer */
        bool answer_done;
        char answer[STATUS_LINE_MAX];
        size_t answer_len;

        /* the long work before it ({"progress": ...} lines), one updating line on a terminal */
        char *progress;
        uint64_t progress_since;
        sd_event_source *progress_timer;

        /* OpenSession */
        bool open_done;
        sd_bus_error open_error;

        /* the session */
        char *session_id;
        char *coordinator;      /* unique bus name of the coordinator that runs our session */
        char *pending_signal;   /* SessionEnded before OpenSession returned */
        ino_t request_ino;      /* the launch request this client wrote */
        int pending_status;
        int exit_status;
        bool ended;
} Client;

static void notice_reap(Client *c);

static void client_done(Client *c) {
        notice_reap(c);
        free(c->notice);
        sd_event_source_disable_unref(c->progress_timer);
        free(c->progress);
        sd_bus_slot_unref(c->ping);
        sd_bus_error_free(&c->open_error);
        free(c->session_id);
        free(c->coordinator);
        free(c->pending_signal);
}

static const char *signal_name(int sig) {
        switch (sig) {
        case SIGINT:  return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGHUP:  return "SIGHUP";
        case SIGQUIT: return "SIGQUIT";
        default:      return "a signal";
        }
}

/* Refused before anything is created or started: the coordinator's Git Sentry would refuse it. */
static int check_git(const Domain *d, char **ret_error) {
        _cleanup_close_ int fd = open(d->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0)
                return errorf(ret_error, -errno, "cannot open the workspace %s: %m", d->workspace);
        return git_sentry_check_workspace(fd, d->workspace, ret_error);
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
                r = check_git(d, &error);
        if (r >= 0)
                r = domain_storage_prepare(d, &error);
        if (r >= 0)
                r = runtime_dir_prepare(&arg_host, &runtime, &error);
        if (r < 0) {
                _cleanup_free_ char *esc = error ? escape_control(error) : NULL;
                fprintf(stderr, "%s\n", esc ?: strerror(-r));
                return r;
        }
        *ret_domain = TAKE_PTR(d);
        *ret_runtime = TAKE_PTR(runtime);
        return 0;
}

/* ------------------------------------------------------------- waiting */

static int on_wait_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        *(bool *) userdata = true;
        return 0;
}

/*
 * Runs the event loop until *done, a cancelling signal (-ECANCELED), the
 * timeout (-ETIMEDOUT; UINT64_MAX: none) or a coordinator found not
 * responding (-EHOSTDOWN). With ignore_cancel, a cancelled launch still
 * waits for *done.
 */
static int client_wait(Client *c, const bool *done, uint64_t timeout_usec, bool ignore_cancel) {
        _cleanup_(sd_event_source_unrefp) sd_event_source *timer = NULL;
        bool timed_out = false;
        int r;

        if (timeout_usec != UINT64_MAX) {
                r = sd_event_add_time_relative(c->event, &timer, CLOCK_MONOTONIC, timeout_usec, 0,
                                               on_wait_timeout, &timed_out);
                if (r < 0)
                        return r;
        }
        for (;;) {
                if (c->cancelled && !ignore_cancel)
                        return -ECANCELED;
                if (*done)
                        return 0;
                if (c->not_responding)
                        return -EHOSTDOWN;
                if (c->match_error < 0)
                        return c->match_error;
                if (timed_out)
                        return -ETIMEDOUT;
                r = sd_event_run(c->event, UINT64_MAX);
                if (r < 0)
                        return r;
        }
}

/* ------------------------------------------------------ the socket unit */

/* One start job of the socket unit, as bus_job_start() reports it. */
typedef struct SocketJob {
        bool done;
        char *result;           /* "done", "failed", "timeout", "no-such-unit", "error", ... */
        sd_bus_error error;
} SocketJob;

static void socket_job_done(SocketJob *j) {
        free(j->result);
        sd_bus_error_free(&j->error);
}

static void on_socket_job_done(BusJob *job, const char *result, const sd_bus_error *error, void *userdata) {
        SocketJob *j = userdata;

        j->result = strdup(result);
        if (error)
                (void) sd_bus_error_copy(&j->error, error);
        j->done = true;
}

/*
 * Starts lazaret@ID.socket and waits for its job: then the socket listens.
 * Each call follows a job of its own (bus_job_start(): JobRemoved matched
 * before the call, bounded by a timer) in our event loop, so that a signal
 * can cancel the wait.
 */
static int start_socket_unit(Client *c) {
        _cleanup_(socket_job_done) SocketJob j = { .error = SD_BUS_ERROR_NULL };
        _cleanup_(bus_job_freep) BusJob *job = NULL;
        char unit[UNIT_NAME_MAX];
        int r;

        domain_unit_name(c->id, "socket", unit);

        r = bus_job_start(c->bus, "StartUnit", bus_append_unit_replace, unit, SOCKET_START_TIMEOUT_USEC,
                          on_socket_job_done, &j, &job);
        if (r < 0) {
                fprintf(stderr, "Cannot start %s: %s\n", unit, strerror(-r));
                return r;
        }

        r = client_wait(c, &j.done, UINT64_MAX, false);
        if (r == -ECANCELED)
                return r;
        if (r < 0) {
                fprintf(stderr, "Cannot start %s: %s\n", unit, strerror(-r));
                return r;
        }
        if (!j.result)
                return -ENOMEM;
        if (streq(j.result, "timeout")) {
                fprintf(stderr, "Starting %s did not finish within %llu s; see: systemctl --user status %s\n", unit,
                        SOCKET_START_TIMEOUT_USEC / 1000000ULL, unit);
                return -ETIMEDOUT;
        }
        if (streq(j.result, "no-such-unit")) {
                fprintf(stderr, "%s is not known to the user manager. Are the Lazaret user units installed? "
                        "Then try: systemctl --user daemon-reload\n", unit);
                return -ENOENT;
        }
        if (streq(j.result, "error")) {
                fprintf(stderr, "Cannot start %s: %s\n", unit, j.error.message ?: strna(j.error.name));
                return -sd_bus_error_get_errno(&j.error) ?: -EIO;
        }
        if (!streq(j.result, "done")) {
                fprintf(stderr, "Starting %s ended with \"%s\"; see: systemctl --user status %s\n", unit,
                        j.result, unit);
                return -EIO;
        }
        return 0;
}

/* ------------------------------------------------ the progress line */

#define PROGRESS_PREFIX "{\"progress\":"

static void progress_draw(Client *c) {
        uint64_t now;

        if (!c->progress || sd_event_now(c->event, CLOCK_MONOTONIC, &now) < 0)
                return;
        fprintf(stderr, "\r\033[K%s (%llu s)", c->progress, (unsigned long long) ((now - c->progress_since) / 1000000));
        fflush(stderr);
}

/* The line goes, whatever is printed next starts at the left. */
static void progress_clear(Client *c) {
        if (c->progress) {
                fputs("\r\033[K", stderr);
                fflush(stderr);
        }
        c->progress = mfree(c->progress);
        c->progress_timer = sd_event_source_disable_unref(c->progress_timer);
}

static int on_progress_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Client *c = userdata;

        progress_draw(c);
        return sd_event_source_set_time_relative(s, 1000000);
}

/* One {"progress": TEXT} line: shown (TEXT) or cleared (""), and only to a person. */
static void progress_update(Client *c, const char *line, size_t n) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *why = NULL;
        json_object *what;
        const char *text;

        if (json_parse_strict(line, n, &o, &why) < 0 || !json_object_object_get_ex(o, "progress", &what) ||
            !json_object_is_type(what, json_type_string))
                return;
        text = json_object_get_string(what);
        if (isempty(text) || !isatty(STDERR_FILENO)) {
                progress_clear(c);
                return;
        }
        free(c->progress);
        c->progress = escape_control(text);
        if (!c->progress)
                return;
        if (!c->progress_timer) {
                if (sd_event_now(c->event, CLOCK_MONOTONIC, &c->progress_since) < 0 ||
                    sd_event_add_time_relative(c->event, &c->progress_timer, CLOCK_MONOTONIC, 1000000, 0,
                                               on_progress_timer, c) < 0 ||
                    sd_event_source_set_enabled(c->progress_timer, SD_EVENT_ON) < 0)
                        c->progress_timer = sd_event_source_disable_unref(c->progress_timer);
        }
        progress_draw(c);
}

/* ------------------------------------------------ the activation answer */

static int on_answer_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Client *c = userdata;
        ssize_t k;
        char *nl;

        k = read(fd, c->answer + c->answer_len, sizeof(c->answer) - 1 - c->answer_len);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                return 0;
        if (k > 0)
                c->answer_len += (size_t) k;
        /* Progress lines come before the answer: each one is taken out. */
        while ((nl = memchr(c->answer, '\n', c->answer_len)) &&
               c->answer_len >= strlen(PROGRESS_PREFIX) && memcmp(c->answer, PROGRESS_PREFIX, strlen(PROGRESS_PREFIX)) == 0) {
                size_t n = (size_t) (nl - c->answer);

                progress_update(c, c->answer, n);
                c->answer_len -= n + 1;
                memmove(c->answer, nl + 1, c->answer_len);
        }
        /* A line, the end of the stream, an error, or a full buffer: done. */
        if (k <= 0 || memchr(c->answer, '\n', c->answer_len) || c->answer_len == sizeof(c->answer) - 1) {
                c->answer_done = true;
                return sd_event_source_set_enabled(s, SD_EVENT_OFF);
        }
        return 0;
}

/* ------------------------------------------------ is anybody there? */

static int on_ping_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = userdata;

        c->ping = sd_bus_slot_unref(c->ping);
        /* No owner (yet) is fine: a coordinator that is starting takes the
         * name early, one that has not yet cannot be asked. */
        if (sd_bus_message_is_method_error(m, NULL) &&
            ctl_bus_not_responding(c->bus, c->bus_name, sd_bus_message_get_error(m)))
                c->not_responding = true;
        return 0;
}

/* Pings the Domain's coordinator unless a ping is in flight; then again in PING_INTERVAL_USEC. */
static int on_ping_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Client *c = userdata;
        int r;

        if (!c->ping) {
                r = sd_bus_call_method_async(c->bus, &c->ping, c->bus_name, "/", "org.freedesktop.DBus.Peer", "Ping",
                                             on_ping_reply, c, "");
                if (r < 0)
                        return r;
        }
        r = sd_event_source_set_time_relative(s, PING_INTERVAL_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return r;
}

/*
 * The Domain's activation socket, connected, non-blocking from the start:
 * a full backlog (nobody accepts) must not block connect() either.
 * -ENOTCONN when the Domain must be activated again; any other error
 * after printing why.
 */
static int connect_activation(const char *runtime_dir, const char *id, int *ret_fd) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int r;

        if (asprintf(&path, "%s/%s.sock", runtime_dir, id) < 0)
                return -ENOMEM;
        if (strlen(path) >= sizeof(sa.sun_path)) {
                fprintf(stderr, "Socket path %s is too long.\n", path);
                return -ENAMETOOLONG;
        }
        strcpy(sa.sun_path, path);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                r = -errno;
                /* The socket unit was stopped by a coordinator that just
                 * finished: activate again. */
                if (r == -ENOENT || r == -ECONNREFUSED)
                        return -ENOTCONN;
                if (r == -EAGAIN) {
                        fprintf(stderr, "The activation socket %s accepts no more connections.\n", path);
                        (void) ctl_not_responding(id);
                        return -EHOSTDOWN;
                }
                fprintf(stderr, "Cannot connect to %s: %s\n", path, strerror(-r));
                return r;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/*
 * The coordinator's answer on fd, its first line in c->answer without the
 * newline, waited for while the coordinator is pinged. -ENOTCONN when the
 * connection closed unanswered (activate again), -ECANCELED when a signal
 * cancelled the wait, any other error after printing why.
 */
static int read_answer(Client *c, int fd) {
        _cleanup_(sd_event_source_unrefp) sd_event_source *source = NULL, *pinger = NULL;
        const char *id = c->id;
        char *nl;
        int r;

        c->answer_done = false;
        c->answer_len = 0;
        r = sd_event_add_io(c->event, &source, fd, EPOLLIN, on_answer_readable, c);
        if (r < 0)
                return r;
        /* A coordinator that runs answers a ping even while it starts the
         * Domain; one that does not is stuck, and its answer would never come. */
        r = sd_event_add_time_relative(c->event, &pinger, CLOCK_MONOTONIC, 0, 0, on_ping_timer, c);
        if (r < 0)
                return r;
        /* Cancelled: closing our connection is all that is left to do. The
         * coordinator it activated publishes the Domain and, when no
         * session comes, stops after its idle timeout. */
        r = client_wait(c, &c->answer_done, ACTIVATION_TIMEOUT_SEC * 1000000ULL, false);
        progress_clear(c);
        c->ping = sd_bus_slot_unref(c->ping);
        if (r == -ECANCELED)
                return r;
        if (r == -EHOSTDOWN) {
                (void) ctl_not_responding(id);
                return r;
        }
        if (r == -ETIMEDOUT) {
                fprintf(stderr, "Domain %s did not become ready within %d s; see: lazaretctl log %s\n",
                        id, ACTIVATION_TIMEOUT_SEC, id);
                return r;
        }
        if (r < 0)
                return r;

        c->answer[c->answer_len] = 0;
        /* Closed unanswered: the socket unit went away with our connection
         * queued, or its coordinator died before answering; activate again. */
        if (c->answer_len == 0)
                return -ENOTCONN;
        nl = memchr(c->answer, '\n', c->answer_len);
        if (!nl) {
                fprintf(stderr, "Domain %s stopped before it was ready; see: lazaretctl log %s\n", id, id);
                return -ECONNRESET;
        }
        *nl = 0;
        return 0;
}

/* What a running Domain's answer tells this launch's user, on standard error. */
static void print_running_notices(json_object *o) {
        json_object *unenforced, *notices;

        /* Said once, when this launch started the Domain, and only to a
         * person: on a terminal. A command's standard error stays its
         * own; status and the Domain's log say it to everyone. */
        if (isatty(STDERR_FILENO) && json_object_object_get_ex(o, "unenforced_limits", &unenforced) &&
            json_object_is_type(unenforced, json_type_string))
                fprintf(stderr, "lazaretctl: not enforced on this machine (no cgroup controller for the user manager): %s\n",
                        json_object_get_string(unenforced));
        /* The State Anchor's warning is about what the command will find: always said. */
        if (json_object_object_get_ex(o, "state_notice", &unenforced) &&
            json_object_is_type(unenforced, json_type_string)) {
                _cleanup_free_ char *n = escape_control(json_object_get_string(unenforced));
                fprintf(stderr, "lazaretctl: warning: %s\n", n ?: "(unprintable)");
        }
        /* Said once, by the launch that began this checkout's state (checkout-state.h): always. */
        if (json_object_object_get_ex(o, "checkout_notice", &unenforced) &&
            json_object_is_type(unenforced, json_type_string)) {
                _cleanup_free_ char *n = escape_control(json_object_get_string(unenforced));
                fprintf(stderr, "lazaretctl: %s\n", n ?: "(unprintable)");
        }
        /* As the State Anchor's: what git on the host or inside will find (view-git-kept.h). */
        if (json_object_object_get_ex(o, "git_notices", &notices) &&
            json_object_is_type(notices, json_type_array))
                for (size_t i = 0; i < json_object_array_length(notices); i++) {
                        json_object *e = json_object_array_get_idx(notices, i);
                        _cleanup_free_ char *n = NULL;

                        if (!json_object_is_type(e, json_type_string))
                                continue;
                        n = escape_control(json_object_get_string(e));
                        fprintf(stderr, "lazaretctl: git: %s\n", n ?: "(unprintable)");
                }
}

/*
 * Connects to the activation socket and reads the coordinator's answer: one
 * JSON line, sent once the Domain is published (or has failed). Returns 0
 * with *ret_running set, -ECANCELED when a signal cancelled the wait, or
 * another negative errno after printing why.
 */
static int await_domain(Client *c, const char *runtime_dir, bool *ret_running) {
        _cleanup_free_ char *why = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_json_ json_object *o = NULL;
        json_object *state, *err;
        const char *id = c->id;
        int r;

        r = connect_activation(runtime_dir, id, &fd);
        if (r < 0)
                return r;
        r = read_answer(c, fd);
        if (r < 0)
                return r;

        r = json_parse_strict(c->answer, strlen(c->answer), &o, &why);
        if (r < 0 || !json_object_object_get_ex(o, "state", &state) || !json_object_is_type(state, json_type_string)) {
                _cleanup_free_ char *esc = escape_control(why ?: c->answer);
                fprintf(stderr, "Domain %s answered something unexpected: %s\n", id, strna(esc));
                return -EBADMSG;
        }
        if (streq(json_object_get_string(state), "running")) {
                print_running_notices(o);
                *ret_running = true;
                return 0;
        }
        /* "maintenance": a coordinator that serves lazaretctl's questions about the store, started
         * from another request than ours; it leaves when we connect again (lazaretctl(1)). */
        if (streq(json_object_get_string(state), "stopping") || streq(json_object_get_string(state), "maintenance")) {
                *ret_running = false;
                return 0;
        }
        /* The reason may quote the workspace (a path, a repository's git
         * configuration): shown escaped, it cannot forge a line. */
        if (json_object_object_get_ex(o, "error", &err) && json_object_is_type(err, json_type_string)) {
                _cleanup_free_ char *esc = escape_control(json_object_get_string(err));
                fprintf(stderr, "Domain %s failed to start: %s\n", id, strna(esc));
        }
        else
                fprintf(stderr, "Domain %s failed to start.\n", id);
        fprintf(stderr, "Details: lazaretctl log %s\n", id);
        return -EIO;
}

/* The configuration path and fingerprint this launch validated, for the coordinator. */
static int write_launch_request(Client *c, const Config *config, const char *runtime, const char *id, const char *fp) {
        _cleanup_free_ char *error = NULL;
        LaunchRequest req = { .config_path = config->path };
        int r;

        memcpy(req.fingerprint, fp, sizeof(req.fingerprint));
        r = launch_request_write(runtime, id, &req, &c->request_ino, &error);
        if (r < 0)
                fprintf(stderr, "%s\n", error ?: strerror(-r));
        return r;
}

/* ------------------------------------------------------------- session */

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
        else if (!isempty(reason))
                fprintf(stderr, "%s\n", reason);
        c->exit_status = status < 0 ? 1 : status;
        c->ended = true;
        return sd_event_exit(c->event, 0);
}

/*
 * A host escalation request of our session waits for a decision. With a
 * terminal, the coordinator asks on it; without one it never writes into
 * the session's streams, so we say, in one line, how to decide.
 */
static int on_escalation_requested(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = userdata;
        const char *rid, *sid;

        if (sd_bus_message_read(m, "ss", &rid, &sid) < 0 || c->terminal || !c->session_id || !streq(sid, c->session_id))
                return 0;
        fprintf(stderr, "lazaret: the sandbox asks to run a host command: lazaretctl escalations shows it; "
                        "lazaretctl escalations approve|deny %.32s decides\n", rid);
        return 0;
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

/*
 * The bus daemon's answer to one of our AddMatch calls. Without its match
 * the session's end (or the coordinator's) would never be heard: a refusal
 * ends the launch, said in one line, at whatever point it is.
 */
static int on_match_installed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        if (!e || c->match_error < 0)
                return 0;
        c->match_error = -sd_bus_error_get_errno(e) ?: -EIO;
        fprintf(stderr, "Cannot subscribe to Domain signals: %s\n", e->message ?: e->name);
        if (c->phase == PHASE_SESSION) {
                /* The command runs on; the coordinator ends it when we leave the bus. */
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
                if (c->terminal && c->phase == PHASE_SESSION)
                        (void) send_resize(c);
                return 0;
        }

        /* No session yet: the launch is cancelled, at once. The wait in
         * progress returns -ECANCELED. */
        if (c->phase == PHASE_STARTING) {
                if (!c->cancelled) {
                        c->cancelled = (int) si->ssi_signo;
                        fprintf(stderr, "Launch cancelled by %s: no session was opened in Domain %s.\n",
                                signal_name(c->cancelled), c->id);
                }
                return 0;
        }

        /* SIGINT without a terminal is the user's Ctrl-C on our terminal: pass
         * it on as an interrupt, the way the command would see it on the host. */
        if (si->ssi_signo == SIGINT && !c->terminal) {
                (void) sd_bus_call_method_async(c->bus, NULL, c->bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE,
                                                "SignalSession", NULL, NULL, "ss", c->session_id, "interrupt");
                return 0;
        }
        /* Anything else ends our session: the call is sent (flushed at
         * exit), not waited for, so that a stuck coordinator cannot hold us. */
        (void) sd_bus_call_method_async(c->bus, NULL, c->bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE,
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

static int on_open_session_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        Client *c = userdata;
        const char *sid;
        int r;

        c->open_done = true;
        if (sd_bus_message_is_method_error(m, NULL)) {
                (void) sd_bus_error_copy(&c->open_error, sd_bus_message_get_error(m));
                return 0;
        }
        r = sd_bus_message_read(m, "s", &sid);
        if (r >= 0) {
                c->session_id = strdup(sid);
                c->coordinator = strdup(strempty(sd_bus_message_get_sender(m)));
                if (!c->session_id || !c->coordinator)
                        r = -ENOMEM;
        }
        if (r < 0)
                (void) sd_bus_error_set_errno(&c->open_error, r);
        return 0;
}

/*
 * Opens the session. The call is asynchronous, so that a signal cancels
 * the wait; a cancelled launch still takes the reply (bounded) and closes
 * the session it got, so that no command runs for a client that left.
 * Returns -EAGAIN when the Domain is stopping (try the next coordinator).
 */
static int open_session(Client *c, const Domain *d, const char *fingerprint, char **argv) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *call = NULL;
        _cleanup_strv_free_ char **env = NULL;
        struct winsize ws = {};
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

        c->open_done = false;
        sd_bus_error_free(&c->open_error);
        r = sd_bus_call_async(c->bus, &call, m, on_open_session_reply, c, 0);
        if (r < 0) {
                fprintf(stderr, "Cannot open a session: %s\n", strerror(-r));
                return r;
        }
        r = client_wait(c, &c->open_done, UINT64_MAX, false);
        if (r == -ECANCELED) {
                if (client_wait(c, &c->open_done, CANCEL_CLOSE_TIMEOUT_USEC, true) >= 0 && c->session_id)
                        (void) sd_bus_call_method_async(c->bus, NULL, c->bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE,
                                                        "CloseSession", NULL, NULL, "s", c->session_id);
                return -ECANCELED;
        }
        if (r < 0) {
                fprintf(stderr, "Cannot open a session: %s\n", strerror(-r));
                return r;
        }
        if (sd_bus_error_is_set(&c->open_error)) {
                /* The call is bounded by the connection's CTL_REPLY_TIMEOUT_USEC. */
                if (ctl_bus_not_responding(c->bus, c->bus_name, &c->open_error)) {
                        (void) ctl_not_responding(c->id);
                        return -EHOSTDOWN;
                }
                if (sd_bus_error_has_names(&c->open_error, LAZARET_ERROR_STOPPING, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                           SD_BUS_ERROR_NAME_HAS_NO_OWNER, SD_BUS_ERROR_UNKNOWN_OBJECT))
                        return -EAGAIN;
                fprintf(stderr, "Cannot open a session: %s\n", c->open_error.message ?: c->open_error.name);
                return -sd_bus_error_get_errno(&c->open_error) ?: -EIO;
        }
        if (c->pending_signal && streq(c->pending_signal, c->session_id)) {
                c->exit_status = c->pending_status < 0 ? 1 : c->pending_status;
                c->ended = true;
        }
        return 0;
}

/*
 * Issue 32's commit notice (changes_launch_notice(): the Git Sentry's plan
 * again, /proc/self/mountinfo, the checkout's refs; about 2 ms) is looked
 * for by a child process of ours, on the other core, while this one writes
 * the launch request, opens the bus and waits for the coordinator's
 * answer; before, it ran after the answer, in a row with everything else.
 * A child rather than a thread: nothing of what it calls has to be
 * thread-safe, and it leaves with _exit(), touching nothing of ours. What
 * it reads a starting coordinator does not change (it writes the checkout's
 * refs record only where there is none, which reports nothing either way).
 * The child's standard error is /dev/null: why it could not look (the
 * workspace refused by the Git Sentry, say) is what the launch itself
 * checks and says, once and escaped; a second copy from the child came
 * first, unescaped (test-view-mounts, test-git-sentry). A failure to
 * check the commits is in the notice's own text. Without a child (pipe or
 * fork failed), the notice is looked for in place when the Domain runs,
 * as before.
 */
static void notice_start(Client *c, const Config *config) {
        int p[2];
        pid_t pid;

        c->notice_fd = -EBADF;
        c->notice_config = config;
        if (pipe2(p, O_CLOEXEC) < 0)
                return;
        pid = fork();
        if (pid < 0) {
                safe_close(p[0]);
                safe_close(p[1]);
                return;
        }
        if (pid == 0) {
                char *text;

                safe_close(p[0]);
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                if (null < 0 || dup2(null, STDERR_FILENO) < 0)
                        _exit(0);
                text = changes_launch_notice(config);
                if (text)
                        (void) write_all(p[1], text, strlen(text));
                _exit(0);
        }
        safe_close(p[1]);
        c->notice_fd = p[0];
        c->notice_pid = pid;
}

/* The child, if any, gone: its pipe closed (a child still writing gets EPIPE) and it reaped. */
static void notice_reap(Client *c) {
        c->notice_fd = safe_close(c->notice_fd);
        if (c->notice_pid > 0)
                while (waitpid(c->notice_pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        c->notice_pid = 0;
}

/* The child's text, once: waited for (it only reads files; a few ms); without a child, looked for now. */
static void notice_finish(Client *c) {
        if (c->notice_checked)
                return;
        c->notice_checked = true;
        if (c->notice_fd >= 0)
                (void) read_full_fd(c->notice_fd, 64 * 1024, &c->notice, NULL);
        else if (c->notice_pid == 0 && c->notice_config)
                c->notice = changes_launch_notice(c->notice_config);
        notice_reap(c);
}

/* ---------------------------------------------------------------- verb */

static struct termios saved_termios;
static bool termios_saved;

static void restore_terminal(void) {
        if (termios_saved)
                (void) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_termios);
}

static const int launch_signals[] = { SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static int launch(Client *c, int argc, char *argv[], const Config *config) {
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *runtime = NULL, *error = NULL;
        char fp[SHA256_HEX_LEN + 1];
        bool commits_said = false;
        int r;

        r = prepare_domain(config, &d, &runtime);
        if (r < 0)
                return r;
        c->id = d->id;
        notice_start(c, config);

        c->terminal = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
        /* The coordinator restores the terminal when the session ends; this
         * copy covers a coordinator that died without doing so. */
        if (c->terminal && tcgetattr(STDIN_FILENO, &saved_termios) >= 0)
                termios_saved = true;
        config_fingerprint_hex(config, fp);
        r = write_launch_request(c, config, runtime, d->id, fp);
        if (r < 0)
                return r;

        r = ctl_bus_open(&c->bus);
        if (r < 0)
                return r;
        domain_bus_name(d->id, c->bus_name);

        r = sd_bus_attach_event(c->bus, c->event, 0);
        if (r < 0)
                return r;
        /* Asked for, not waited for: the bus daemon handles one
         * connection's messages in order, so each match is in place before
         * our OpenSession even reaches the coordinator, and the three
         * round trips overlap the activation answer (a warm launch waited
         * for them one after the other). A match the bus refuses ends
         * every wait (on_match_installed()). */
        r = sd_bus_match_signal_async(c->bus, NULL, c->bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE,
                                      "SessionEnded", on_session_ended, on_match_installed, c);
        if (r >= 0)
                r = sd_bus_match_signal_async(c->bus, NULL, c->bus_name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE,
                                              "EscalationRequested", on_escalation_requested, on_match_installed, c);
        if (r >= 0)
                r = sd_bus_match_signal_async(c->bus, NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                              "org.freedesktop.DBus", "NameOwnerChanged", on_name_owner_changed,
                                              on_match_installed, c);
        if (r < 0) {
                fprintf(stderr, "Cannot subscribe to Domain signals: %s\n", strerror(-r));
                return r;
        }

        /* The socket unit usually listens already (it stays after a Domain
         * stops): connect first, and start it only when the connection is
         * refused. A Domain that is tearing down answers "stopping": the
         * next connection waits in the socket's queue for the coordinator
         * that starts after it. Bounded. */
        for (unsigned attempt = 0;; attempt++) {
                bool running = false;

                r = await_domain(c, runtime, &running);
                if (r == -ENOTCONN && attempt < 10) {
                        r = write_launch_request(c, config, runtime, d->id, fp);
                        if (r >= 0)
                                r = start_socket_unit(c);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (r == -ENOTCONN) {
                        fprintf(stderr, "Domain %s closed every connection without answering; see: lazaretctl log %s\n",
                                d->id, d->id);
                        return -ECONNRESET;
                }
                /* Answered "running" or "failed": that coordinator read the
                 * request at its start, and no later one needs ours (after
                 * "stopping" the next one does). Removed unless another
                 * launch has written one since. */
                if ((r >= 0 && running) || (r < 0 && r != -ENOTCONN && r != -ECANCELED && r != -ETIMEDOUT && r != -EHOSTDOWN))
                        (void) launch_request_remove(runtime, d->id, c->request_ino);
                if (r < 0)
                        return r;
                if (running) {
                        /* Issue 32: commits made inside that change protected paths, said with the git notices. */
                        if (!commits_said) {
                                notice_finish(c);
                                if (c->notice)
                                        fputs(c->notice, stderr);
                                commits_said = true;
                        }
                        r = open_session(c, d, fp, argc > 1 ? argv + 1 : (char *[]) { NULL });
                        if (r != -EAGAIN)
                                break;
                }
                if (attempt >= 10) {
                        fprintf(stderr, "Domain %s keeps stopping; giving up.\n", d->id);
                        return -EAGAIN;
                }
                /* The next coordinator reads the request: ours, again, in case a maintenance one replaced it. */
                r = write_launch_request(c, config, runtime, d->id, fp);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;

        c->phase = PHASE_SESSION;
        if (c->terminal)
                (void) send_resize(c);
        if (!c->ended) {
                r = sd_event_loop(c->event);
                if (r < 0)
                        return r;
        }
        return c->exit_status;
}

int verb_launch(int argc, char *argv[], const Config *config) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(client_done) Client c = {
                .exit_status = 1,
                .open_error = SD_BUS_ERROR_NULL,
                .notice_fd = -EBADF,
        };
        sigset_t mask;
        int r;

        /* From here on the signals arrive through the event loop: a signal
         * before a session is open cancels the launch, later ones go to the
         * session. Blocked first, so that none is lost in between. */
        sigemptyset(&mask);
        for (size_t i = 0; i < ELEMENTSOF(launch_signals); i++)
                sigaddset(&mask, launch_signals[i]);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = sd_event_new(&event);
        if (r < 0)
                return r;
        c.event = event;
        for (size_t i = 0; i < ELEMENTSOF(launch_signals); i++) {
                r = sd_event_add_signal(event, NULL, launch_signals[i], on_signal, &c);
                if (r < 0) {
                        fprintf(stderr, "Cannot watch signal %d: %s\n", launch_signals[i], strerror(-r));
                        return r;
                }
        }

        r = launch(&c, argc, argv, config);
        if (c.bus) {
                /* Flush (the CloseSession of a cancelled launch) and leave
                 * the bus before the terminal is given back. */
                sd_bus_flush_close_unref(c.bus);
                c.bus = NULL;
        }
        restore_terminal();
        if (r == -ECANCELED)
                return 128 + c.cancelled;
        if (r == -EHOSTDOWN)
                return CTL_EXIT_NOT_RESPONDING;
        return r;
}
