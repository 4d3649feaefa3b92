/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "egress-util.h"
#include "egress-watch.h"
#include "json-util.h"
#include "log.h"
#include "macro.h"
#include "util.h"

#define WATCH_BUF 4096
#define ALLOW_REPLY_MAX 1024

typedef struct Allow Allow;
struct Allow {
        EgressWatch *w;
        Allow *next;
        int fd;
        sd_event_source *io, *timer, *defer;
        char reply[ALLOW_REPLY_MAX + 1];
        size_t reply_len;
        int early;                      /* a failure before anything was sent: said from the defer */
        char *early_why;
        EgressAllowDone done;
        void *userdata;
};

struct EgressWatch {
        sd_event *event;
        char *api_socket;
        EgressWatchCallbacks cb;
        void *userdata;

        int fd;
        sd_event_source *io;
        char buf[WATCH_BUF];
        size_t len;
        bool skipping;                  /* a line longer than any event: dropped up to its newline */
        bool answered;                  /* the helper's {"return":{}} came */

        EgressDenial denials[EGRESS_DENIALS_MAX];
        size_t n_denials;
        uint64_t window_start;          /* CLOCK_MONOTONIC */
        unsigned window_reports, withheld;

        Allow *allows;
};

/* CLOCK_REALTIME in microseconds, for the times a report shows; intervals use now_usec(). */
static uint64_t realtime_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

static int connect_api(const char *path, int *ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* A listening Unix socket takes the connection at once, or says EAGAIN. */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        *ret = TAKE_FD(fd);
        return 0;
}

/* ---------------------------------------------------------------- denials */

static EgressDenial *denial_slot(EgressWatch *w, const char *rule) {
        size_t oldest = 0;

        for (size_t i = 0; i < w->n_denials; i++)
                if (streq(w->denials[i].rule, rule))
                        return &w->denials[i];
        if (w->n_denials < EGRESS_DENIALS_MAX) {
                w->denials[w->n_denials] = (EgressDenial) {};
                return &w->denials[w->n_denials++];
        }
        for (size_t i = 1; i < w->n_denials; i++)
                if (w->denials[i].last_usec < w->denials[oldest].last_usec)
                        oldest = i;
        w->denials[oldest] = (EgressDenial) {};
        return &w->denials[oldest];
}

static void on_event(EgressWatch *w, const EgressEvent *ev) {
        char rule[HOST_RULE_STRING_MAX];
        uint64_t now = now_usec(), real = realtime_usec();
        unsigned withheld = 0;
        bool report = false;
        EgressDenial *d;

        if (ev->kind == EGRESS_EVENT_DROPPED) {
                w->cb.dropped(ev->dropped, w->userdata);
                return;
        }
        egress_event_rule(ev, rule);
        d = denial_slot(w, rule);
        if (d->count == 0) {
                snprintf(d->rule, sizeof(d->rule), "%s", rule);
                d->ev = *ev;
                d->first_usec = real;
        }
        d->last_usec = real;
        if (d->count < UINT32_MAX)
                d->count++;
        if (d->reported_usec == 0 || now - d->reported_usec >= EGRESS_REPORT_REPEAT_USEC) {
                if (now - w->window_start >= EGRESS_REPORT_WINDOW_USEC) {
                        w->window_start = now;
                        w->window_reports = 0;
                }
                if (w->window_reports < EGRESS_REPORTS_PER_WINDOW) {
                        w->window_reports++;
                        d->reported_usec = now;
                        report = true;
                        withheld = w->withheld;
                        w->withheld = 0;
                } else
                        w->withheld++;
        }
        w->cb.denied(d, report, withheld, w->userdata);
}

static void watch_close(EgressWatch *w) {
        w->io = sd_event_source_disable_unref(w->io);
        w->fd = safe_close(w->fd);
}

static void watch_lost(EgressWatch *w, const char *why) {
        watch_close(w);
        w->cb.lost(why, w->userdata);
}

/* One line without its newline: the helper's answer first, then events. */
static void on_line(EgressWatch *w, const char *line, size_t n) {
        _cleanup_free_ char *err = NULL;
        char shown[EGRESS_SHOW_MAX];
        EgressEvent ev;

        if (!w->answered) {
                if (n == strlen("{\"return\":{}}") && memcmp(line, "{\"return\":{}}", n) == 0) {
                        w->answered = true;
                        return;
                }
                log_warning("The egress helper refused to report denied names: %s", egress_show(line, n, shown));
                return;
        }
        if (egress_event_parse(line, n, &ev, &err) < 0) {
                /* The names come from the sandbox: judged again here, never shown raw. */
                log_warning("The egress helper sent an event outside its protocol, dropped: %s", strna(err));
                return;
        }
        on_event(w, &ev);
}

static int on_watch_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        EgressWatch *w = userdata;
        ssize_t k;

        k = read(w->fd, w->buf + w->len, sizeof(w->buf) - w->len);
        if (k < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                watch_lost(w, "cannot read the egress helper's events");
                return 0;
        }
        if (k == 0) {
                watch_lost(w, "the egress helper closed its events");
                return 0;
        }
        w->len += (size_t) k;
        for (;;) {
                char *nl = memchr(w->buf, '\n', w->len);
                size_t n;

                if (!nl) {
                        if (w->len == sizeof(w->buf)) {
                                /* No event is this long: drop it to its end. */
                                log_warning("The egress helper sent a line longer than %zu bytes, dropped", sizeof(w->buf));
                                w->skipping = true;
                                w->len = 0;
                        }
                        return 0;
                }
                n = (size_t) (nl - w->buf);
                if (w->skipping)
                        w->skipping = false;
                else
                        on_line(w, w->buf, n);
                memmove(w->buf, nl + 1, w->len - n - 1);
                w->len -= n + 1;
        }
}

int egress_watch_new(sd_event *e, const char *api_socket, const EgressWatchCallbacks *cb, void *userdata,
                     EgressWatch **ret) {
        _cleanup_(egress_watch_freep) EgressWatch *w = NULL;
        static const char request[] = "{\"execute\":\"watch_denied\",\"arguments\":{}}";
        ssize_t k;
        int r;

        w = calloc(1, sizeof(EgressWatch));
        if (!w)
                return -ENOMEM;
        w->fd = -EBADF;
        w->event = sd_event_ref(e);
        w->cb = *cb;
        w->userdata = userdata;
        w->api_socket = strdup(api_socket);
        if (!w->api_socket)
                return -ENOMEM;
        r = connect_api(api_socket, &w->fd);
        if (r < 0)
                return r;
        /* One write: the helper takes a request from one read (slirp4netns' protocol). */
        k = send(w->fd, request, sizeof(request) - 1, MSG_NOSIGNAL);
        if (k != (ssize_t) sizeof(request) - 1)
                return k < 0 ? -errno : -EIO;
        r = sd_event_add_io(e, &w->io, w->fd, EPOLLIN, on_watch_io, w);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

/* ------------------------------------------------------------------ allows */

static void allow_free(Allow *a) {
        EgressWatch *w = a->w;

        for (Allow **p = &w->allows; *p; p = &(*p)->next)
                if (*p == a) {
                        *p = a->next;
                        break;
                }
        sd_event_source_disable_unref(a->io);
        sd_event_source_disable_unref(a->timer);
        sd_event_source_disable_unref(a->defer);
        safe_close(a->fd);
        free(a->early_why);
        free(a);
}

/* The request's end: it leaves the list before done() runs, so that done() may free the watch. */
static void allow_finish(Allow *a, int r, const char *why) {
        EgressAllowDone done = a->done;
        void *userdata = a->userdata;
        _cleanup_free_ char *copy = why ? strdup(why) : NULL;

        allow_free(a);
        done(r, why ? (copy ?: "out of memory") : NULL, userdata);
}

/* The helper's answer, judged by egress_reply_parse(): 1 (removed), 0, or why not. */
static void allow_answer(Allow *a) {
        _cleanup_free_ char *why = NULL;
        int r;

        r = egress_reply_parse(a->reply, a->reply_len, &why);
        allow_finish(a, r, r < 0 ? why ?: "out of memory" : NULL);
}

static int on_allow_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Allow *a = userdata;

        for (;;) {
                ssize_t k = read(a->fd, a->reply + a->reply_len, ALLOW_REPLY_MAX - a->reply_len);

                if (k < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        allow_finish(a, -errno, "cannot read the egress helper's answer");
                        return 0;
                }
                if (k == 0)
                        break;
                a->reply_len += (size_t) k;
                if (a->reply_len == ALLOW_REPLY_MAX) {
                        allow_finish(a, -EBADMSG, "the egress helper's answer is too long");
                        return 0;
                }
        }
        a->reply[a->reply_len] = 0;
        allow_answer(a);
        return 0;
}

static int on_allow_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        allow_finish(userdata, -ETIMEDOUT, "the egress helper did not answer in time");
        return 0;
}

static int on_allow_early(sd_event_source *s, void *userdata) {
        Allow *a = userdata;

        allow_finish(a, a->early, a->early_why);
        return 0;
}

/* One request on a connection of its own (slirp4netns' protocol), its answer to done() from the loop. */
static int request_send(EgressWatch *w, const char *text, EgressAllowDone done, void *userdata) {
        Allow *a;
        ssize_t k;
        int r;

        a = calloc(1, sizeof(Allow));
        if (!a)
                return -ENOMEM;
        *a = (Allow) { .w = w, .fd = -EBADF, .done = done, .userdata = userdata, .next = w->allows };
        w->allows = a;

        r = connect_api(w->api_socket, &a->fd);
        if (r >= 0) {
                k = send(a->fd, text, strlen(text), MSG_NOSIGNAL);
                if (k != (ssize_t) strlen(text))
                        r = k < 0 ? -errno : -EIO;
        }
        if (r >= 0)
                r = sd_event_add_io(w->event, &a->io, a->fd, EPOLLIN, on_allow_io, a);
        if (r >= 0)
                r = sd_event_add_time_relative(w->event, &a->timer, CLOCK_MONOTONIC, EGRESS_ALLOW_TIMEOUT_USEC, 0,
                                               on_allow_timeout, a);
        if (r < 0) {
                /* Said from the loop, as every answer is. */
                a->io = sd_event_source_disable_unref(a->io);
                a->timer = sd_event_source_disable_unref(a->timer);
                a->fd = safe_close(a->fd);
                a->early = r;
                if (asprintf(&a->early_why, "cannot reach the egress helper: %s", strerror(-r)) < 0)
                        a->early_why = NULL;
                if (sd_event_add_defer(w->event, &a->defer, on_allow_early, a) < 0) {
                        allow_free(a);
                        return r;
                }
        }
        return 0;
}

int egress_watch_allow(EgressWatch *w, const char *rule, EgressScope scope, EgressAllowDone done, void *userdata) {
        _cleanup_free_ char *text = NULL, *why = NULL;
        int r;

        r = egress_allow_request(rule, scope == EGRESS_SCOPE_KEEP ? EGRESS_SCOPE_DOMAIN : scope, &text, &why);
        if (r < 0)
                return r;
        return request_send(w, text, done, userdata);
}

int egress_watch_forget(EgressWatch *w, const char *rule, EgressAllowDone done, void *userdata) {
        _cleanup_free_ char *text = NULL, *why = NULL;
        int r;

        r = egress_remove_request(rule, &text, &why);
        if (r < 0)
                return r;
        return request_send(w, text, done, userdata);
}

/* ------------------------------------------------------------------- the rest */

EgressWatch *egress_watch_free(EgressWatch *w) {
        if (!w)
                return NULL;
        watch_close(w);
        while (w->allows) {
                Allow *a = w->allows;
                EgressAllowDone done = a->done;
                void *userdata = a->userdata;

                allow_free(a);
                done(-ECANCELED, "the Domain is stopping", userdata);
        }
        free(w->api_socket);
        sd_event_unref(w->event);
        free(w);
        return NULL;
}

size_t egress_watch_denials(const EgressWatch *w, const EgressDenial **ret) {
        *ret = w ? w->denials : NULL;
        return w ? w->n_denials : 0;
}

EgressDenial *egress_watch_find(EgressWatch *w, const char *rule) {
        for (size_t i = 0; w && i < w->n_denials; i++)
                if (streq(w->denials[i].rule, rule))
                        return &w->denials[i];
        return NULL;
}
