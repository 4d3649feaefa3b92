/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "ports.h"

typedef enum RequestKind {
        REQUEST_PUBLISH,
        REQUEST_UNPUBLISH,
} RequestKind;

typedef struct Request {
        RequestKind kind;
        PortForward forward;            /* UNPUBLISH: host_port only, until it is found */
        int slirp_id;                   /* UNPUBLISH: the forward's ID at slirp4netns */
        PortsDone done;
        void *userdata;
        struct Request *next;
} Request;

typedef struct Published {
        PortForward forward;
        int slirp_id;
} Published;

struct Ports {
        sd_event *event;
        char *api_socket;
        Published items[PORT_PUBLISH_MAX];
        PortForward list[PORT_PUBLISH_MAX];     /* ports_list()'s view of items */
        size_t n;
        Request *queue, *queue_tail;    /* the head is under way once fd >= 0 */
        sd_event_source *kick;          /* runs the head of the queue */
        int fd;
        sd_event_source *io, *timer;
        char reply[SLIRP_API_REPLY_MAX + 1];
        size_t reply_len;
        bool in_done;                   /* a done() runs: ports_free() then only marks us */
        bool freed;
};

static void ports_destroy(Ports *p);

static void rebuild_list(Ports *p) {
        for (size_t i = 0; i < p->n; i++)
                p->list[i] = p->items[i].forward;
}

static ssize_t find(const Ports *p, uint16_t host_port) {
        for (size_t i = 0; i < p->n; i++)
                if (p->items[i].forward.host_port == host_port)
                        return (ssize_t) i;
        return -1;
}

static void connection_close(Ports *p) {
        p->io = sd_event_source_disable_unref(p->io);
        p->timer = sd_event_source_disable_unref(p->timer);
        p->fd = safe_close(p->fd);
        p->reply_len = 0;
}

static void kick(Ports *p);

/* Ends the head request: it leaves the queue first, so that done() may queue more. */
static int finish(Ports *p, int r, const char *why) {
        Request *q = p->queue;

        connection_close(p);
        p->queue = q->next;
        if (!p->queue)
                p->queue_tail = NULL;
        p->in_done = true;
        q->done(p, r, why, &q->forward, q->userdata);
        p->in_done = false;
        free(q);
        if (p->freed)
                ports_destroy(p);
        else
                kick(p);
        return 0;
}

static int finishf(Ports *p, int r, const char *fmt, ...) _printf_(3, 4);
static int finishf(Ports *p, int r, const char *fmt, ...) {
        _cleanup_free_ char *why = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&why, fmt, ap) < 0)
                why = NULL;
        va_end(ap);
        return finish(p, r, why ?: "out of memory");
}

/*
 * Why slirp4netns refused a forward: its answer does not say, so we ask
 * the kernel whether the host port is taken on 127.0.0.1, as slirp4netns
 * bound it (SO_REUSEADDR), from the same network namespace.
 */
static bool host_port_in_use(uint16_t port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;

        if (fd < 0)
                return false;
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        return bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 && errno == EADDRINUSE;
}

static int on_answer(Ports *p) {
        Request *q = p->queue;
        _cleanup_free_ char *desc = NULL;
        int r, id = 0;

        if (q->kind == REQUEST_PUBLISH) {
                r = slirp_api_parse_add_reply(p->reply, p->reply_len, &id, &desc);
                if (r == -ENOMEM)
                        return finish(p, r, "out of memory");
                if (r < 0)
                        return finish(p, r, "slirp4netns answered the forward's request outside its protocol");
                if (r == 0) {
                        if (host_port_in_use(q->forward.host_port))
                                return finishf(p, -EADDRINUSE, "host port %u on " PORT_HOST_ADDRESS " is in use",
                                               (unsigned) q->forward.host_port);
                        return finishf(p, -EIO, "slirp4netns refused to forward host port %u: %s",
                                       (unsigned) q->forward.host_port, desc);
                }
                /* Checked when the request began; nothing else adds. */
                p->items[p->n++] = (Published) { .forward = q->forward, .slirp_id = id };
                rebuild_list(p);
                log_info("Published sandbox port %u on " PORT_HOST_ADDRESS ":%u (slirp4netns forward %d)",
                         (unsigned) q->forward.guest_port, (unsigned) q->forward.host_port, id);
                return finish(p, 0, NULL);
        }

        r = slirp_api_parse_remove_reply(p->reply, p->reply_len, &desc);
        if (r == -ENOMEM)
                return finish(p, r, "out of memory");
        if (r < 0)
                return finish(p, r, "slirp4netns answered the removal outside its protocol");
        if (r == 0)
                return finishf(p, -EIO, "slirp4netns refused to remove the forward of host port %u: %s",
                               (unsigned) q->forward.host_port, desc);
        for (size_t i = 0; i < p->n; i++)
                if (p->items[i].slirp_id == q->slirp_id) {
                        memmove(&p->items[i], &p->items[i + 1], (p->n - i - 1) * sizeof(Published));
                        p->n--;
                        break;
                }
        rebuild_list(p);
        log_info("Unpublished host port %u (sandbox port %u)", (unsigned) q->forward.host_port,
                 (unsigned) q->forward.guest_port);
        return finish(p, 0, NULL);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Ports *p = userdata;
        ssize_t k;

        for (;;) {
                if (p->reply_len >= SLIRP_API_REPLY_MAX)
                        return finish(p, -EMSGSIZE, "slirp4netns' answer is too long");
                k = read(p->fd, p->reply + p->reply_len, SLIRP_API_REPLY_MAX - p->reply_len);
                if (k < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return 0;
                        return finishf(p, -errno, "cannot read slirp4netns' answer: %s", strerror(errno));
                }
                if (k == 0)
                        break;
                p->reply_len += (size_t) k;
        }
        p->reply[p->reply_len] = 0;
        (void) on_answer(p);
        return 0;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Ports *p = userdata;

        return finishf(p, -ETIMEDOUT, "slirp4netns did not answer within %llu s",
                       (unsigned long long) (PORTS_REQUEST_TIMEOUT_USEC / 1000000));
}

/* Judges the head request against the table, then sends it. */
static int begin(Ports *p) {
        Request *q = p->queue;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_free_ char *text = NULL;
        ssize_t i, k;
        int r;

        if (q->kind == REQUEST_PUBLISH) {
                i = find(p, q->forward.host_port);
                if (i >= 0)
                        return finishf(p, -EEXIST, "host port %u is published already (to sandbox port %u)",
                                       (unsigned) q->forward.host_port, (unsigned) p->items[i].forward.guest_port);
                if (p->n >= PORT_PUBLISH_MAX)
                        return finishf(p, -E2BIG, "the Domain publishes %d ports already, the most it may",
                                       PORT_PUBLISH_MAX);
                r = slirp_api_add_request(&q->forward, &text);
        } else {
                i = find(p, q->forward.host_port);
                if (i < 0)
                        return finishf(p, -ENOENT, "host port %u is not published", (unsigned) q->forward.host_port);
                q->forward = p->items[i].forward;
                q->slirp_id = p->items[i].slirp_id;
                r = slirp_api_remove_request(q->slirp_id, &text);
        }
        if (r < 0)
                return finish(p, r, "out of memory");

        if (strlen(p->api_socket) >= sizeof(sa.sun_path))
                return finish(p, -ENAMETOOLONG, "the slirp4netns API socket's path is too long");
        strcpy(sa.sun_path, p->api_socket);
        p->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (p->fd < 0)
                return finishf(p, -errno, "cannot create a socket: %s", strerror(errno));
        /* A listening Unix socket takes the connection at once, or says EAGAIN. */
        if (connect(p->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return finishf(p, -errno, "cannot reach slirp4netns' API socket: %s", strerror(errno));
        /* One write: slirp4netns takes the request from one read(). */
        k = send(p->fd, text, strlen(text), MSG_NOSIGNAL);
        if (k < 0 || (size_t) k != strlen(text))
                return finishf(p, k < 0 ? -errno : -EIO, "cannot send the request to slirp4netns: %s",
                               k < 0 ? strerror(errno) : "short write");
        r = sd_event_add_io(p->event, &p->io, p->fd, EPOLLIN, on_io, p);
        if (r >= 0)
                r = sd_event_add_time_relative(p->event, &p->timer, CLOCK_MONOTONIC, PORTS_REQUEST_TIMEOUT_USEC, 0,
                                               on_timeout, p);
        if (r < 0)
                return finishf(p, r, "cannot wait for slirp4netns' answer: %s", strerror(-r));
        return 0;
}

static int on_kick(sd_event_source *s, void *userdata) {
        Ports *p = userdata;

        if (p->queue && p->fd < 0)
                (void) begin(p);
        return 0;
}

static void kick(Ports *p) {
        if (p->queue && p->fd < 0)
                (void) sd_event_source_set_enabled(p->kick, SD_EVENT_ONESHOT);
}

int ports_new(sd_event *e, const char *api_socket, Ports **ret) {
        _cleanup_(ports_freep) Ports *p = NULL;
        int r;

        p = calloc(1, sizeof(Ports));
        if (!p)
                return -ENOMEM;
        p->fd = -EBADF;
        p->event = sd_event_ref(e);
        p->api_socket = strdup(api_socket);
        if (!p->api_socket)
                return -ENOMEM;
        r = sd_event_add_defer(e, &p->kick, on_kick, p);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(p->kick, SD_EVENT_OFF);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

Ports *ports_free(Ports *p) {
        if (!p)
                return NULL;
        if (p->in_done)
                p->freed = true;        /* finish() destroys us once done() returned */
        else
                ports_destroy(p);
        return NULL;
}

static void ports_destroy(Ports *p) {
        connection_close(p);
        p->kick = sd_event_source_disable_unref(p->kick);
        while (p->queue) {
                Request *q = p->queue;

                p->queue = q->next;
                q->done(p, -ECANCELED, "the Domain is stopping", &q->forward, q->userdata);
                free(q);
        }
        free(p->api_socket);
        sd_event_unref(p->event);
        free(p);
}

static int enqueue(Ports *p, RequestKind kind, const PortForward *f, PortsDone done, void *userdata) {
        Request *q;

        q = calloc(1, sizeof(Request));
        if (!q)
                return -ENOMEM;
        *q = (Request) { .kind = kind, .forward = *f, .done = done, .userdata = userdata };
        if (p->queue_tail)
                p->queue_tail->next = q;
        else
                p->queue = q;
        p->queue_tail = q;
        kick(p);
        return 0;
}

int ports_publish(Ports *p, const PortForward *f, PortsDone done, void *userdata) {
        return enqueue(p, REQUEST_PUBLISH, f, done, userdata);
}

int ports_unpublish(Ports *p, uint16_t host_port, PortsDone done, void *userdata) {
        return enqueue(p, REQUEST_UNPUBLISH, &(PortForward) { .host_port = host_port }, done, userdata);
}

size_t ports_list(const Ports *p, const PortForward **ret) {
        *ret = p ? p->list : NULL;
        return p ? p->n : 0;
}
