/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The activation socket: the waiting clients of `lazaretctl launch`, their
 * progress lines and their one answer (activation.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-daemon.h>

#include "activation.h"
#include "json-util.h"
#include "util.h"

/* A flood of connections beyond this is answered "busy" by closing them. */
#define WAITERS_MAX 256U

typedef struct Waiter {
        Activation *activation;
        int fd;
        sd_event_source *source;        /* notices a client that hung up */
        struct Waiter *next;
} Waiter;

struct Activation {
        sd_event *event;
        ActivationCallbacks cb;
        void *userdata;
        int listen_fd;                  /* from socket activation, or -EBADF */
        sd_event_source *listen_source;
        Waiter *waiters;
        unsigned n_waiters;
        char *progress;                 /* the long work of the start under way; NULL: none */
};

static int line_of(json_object *o, char **ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = json_to_string(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &s);
        if (r < 0)
                return r;
        return asprintf(ret, "%s\n", s) < 0 ? -ENOMEM : 0;
}

/* The one JSON line each launching client reads: checked whole, or not built. */
int activation_answer_line(const ActivationAnswer *a, char **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add_string(o, "state", a->state);
        if (r >= 0)
                r = json_add_string(o, "domain_id", a->domain_id);
        if (r >= 0)
                r = json_add_string(o, "bus_name", a->bus_name);
        if (r >= 0)
                r = json_add_string(o, "coordinator_id", a->coordinator_id);
        if (r >= 0 && a->error) {
                r = json_add_string(o, "error", a->error);
                /* Not UTF-8 (it may quote a repository's git configuration):
                 * the clients still hear that it failed, the words are in the log. */
                if (r == -EILSEQ)
                        r = json_add_string(o, "error", "the reason is not valid UTF-8; see: lazaretctl log");
        }
        if (r >= 0 && !isempty(a->unenforced_limits))
                r = json_add_string(o, "unenforced_limits", a->unenforced_limits);
        if (r >= 0 && a->state_notice)
                r = json_add_string(o, "state_notice", a->state_notice);
        if (r >= 0 && a->checkout_notice)
                r = json_add_string(o, "checkout_notice", a->checkout_notice);
        if (r >= 0 && a->git_notices)
                r = json_add_strv(o, "git_notices", (const char *const *) a->git_notices);
        if (r < 0)
                return r;
        return line_of(o, ret);
}

/* {"progress":"Preparing image ..."}, and {"progress":""} when it ended. */
int activation_progress_line(const char *what, char **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add_string(o, "progress", what ?: "");
        if (r < 0)
                return r;
        return line_of(o, ret);
}

static void waiter_send(Waiter *w, const char *line) {
        /* Best effort: a client that left does not matter, and a line fits an empty socket buffer. */
        (void) send(w->fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static Waiter *waiter_free(Waiter *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->source);
        safe_close(w->fd);
        free(w);
        return NULL;
}

static void waiter_unlink(Activation *a, Waiter *w) {
        for (Waiter **p = &a->waiters; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        a->n_waiters--;
                        return;
                }
}

/*
 * A client waiting for the Domain hung up before it was answered (a killed
 * or cancelled `lazaretctl launch`); the owner hears when none is left.
 */
static int on_waiter_hangup(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Waiter *w = userdata;
        Activation *a = w->activation;

        waiter_unlink(a, w);
        waiter_free(w);
        if (!a->waiters && a->cb.abandoned)
                a->cb.abandoned(a, a->userdata);
        return 0;
}

static Waiter *waiter_add(Activation *a, int fd) {
        Waiter *w = calloc(1, sizeof(Waiter));

        if (!w) {
                safe_close(fd);
                return NULL;
        }
        w->activation = a;
        w->fd = fd;
        /* Only the peer's hang-up matters; what it might send is never read. */
        if (sd_event_add_io(a->event, &w->source, fd, EPOLLRDHUP, on_waiter_hangup, w) < 0)
                w->source = NULL;
        w->next = a->waiters;
        a->waiters = w;
        a->n_waiters++;
        return w;
}

static void waiter_tell_progress(Waiter *w, const char *what) {
        _cleanup_free_ char *line = NULL;

        if (activation_progress_line(what, &line) >= 0)
                waiter_send(w, line);
}

static int on_connection(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Activation *a = userdata;
        _cleanup_close_ int cfd = -EBADF;
        Waiter *w;

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0 || a->n_waiters >= WAITERS_MAX)
                return 0;
        w = waiter_add(a, TAKE_FD(cfd));
        if (!w)
                return 0;
        if (a->cb.connected)
                a->cb.connected(a, a->userdata);
        /* Not answered (the start goes on): the work under way, if any, is its first line. */
        if (a->waiters == w && a->progress)
                waiter_tell_progress(w, a->progress);
        return 0;
}

unsigned activation_n_waiting(const Activation *a) {
        return a ? a->n_waiters : 0;
}

void activation_progress(Activation *a, const char *what) {
        if (!a)
                return;
        free(a->progress);
        a->progress = what ? strdup(what) : NULL;
        for (Waiter *w = a->waiters; w; w = w->next)
                waiter_tell_progress(w, what);
}

int activation_answer(Activation *a, const ActivationAnswer *answer) {
        _cleanup_free_ char *line = NULL;
        int r;

        if (!a)
                return 0;
        r = activation_answer_line(answer, &line);
        if (r < 0)
                return r;
        a->progress = mfree(a->progress);
        while (a->waiters) {
                Waiter *w = a->waiters;
                a->waiters = w->next;
                a->n_waiters--;
                waiter_send(w, line);
                waiter_free(w);
        }
        return 0;
}

void activation_take_queued(Activation *a) {
        if (!a || a->listen_fd < 0)
                return;
        for (unsigned i = 0; i < WAITERS_MAX; i++) {
                int cfd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd < 0)
                        break;
                (void) waiter_add(a, cfd);
        }
}

void activation_stop_listening(Activation *a) {
        if (!a)
                return;
        a->listen_source = sd_event_source_disable_unref(a->listen_source);
}

Activation *activation_free(Activation *a) {
        if (!a)
                return NULL;
        while (a->waiters) {
                Waiter *w = a->waiters;
                a->waiters = w->next;
                waiter_free(w);
        }
        sd_event_source_disable_unref(a->listen_source);
        safe_close(a->listen_fd);
        free(a->progress);
        free(a);
        return NULL;
}

int activation_new(sd_event *event, const ActivationCallbacks *cb, void *userdata, Activation **ret, char **ret_error) {
        _cleanup_(activation_freep) Activation *a = calloc(1, sizeof(Activation));
        int n, r;

        if (!a)
                return -ENOMEM;
        a->event = event;
        a->cb = *cb;
        a->userdata = userdata;
        a->listen_fd = -EBADF;

        n = sd_listen_fds(true);
        if (n < 0)
                return errorf(ret_error, n, "Failed to read passed file descriptors: %s", strerror(-n));
        if (n == 0) {
                *ret = TAKE_PTR(a);
                return 0;
        }
        for (int i = 1; i < n; i++)
                safe_close(SD_LISTEN_FDS_START + i);
        a->listen_fd = SD_LISTEN_FDS_START;
        r = sd_is_socket_unix(a->listen_fd, SOCK_STREAM, 1, NULL, 0);
        if (r <= 0)
                return errorf(ret_error, r < 0 ? r : -EINVAL, "The passed fd is not a listening stream socket");
        (void) fcntl(a->listen_fd, F_SETFL, O_NONBLOCK);
        r = sd_event_add_io(event, &a->listen_source, a->listen_fd, EPOLLIN, on_connection, a);
        if (r < 0)
                return errorf(ret_error, r, "Failed to watch the activation socket: %s", strerror(-r));
        *ret = TAKE_PTR(a);
        return n;
}
