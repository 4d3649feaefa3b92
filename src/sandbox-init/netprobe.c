/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The network attestation's probe, run by lazaret-init as the sandbox's
 * first act when the supervisor asks for it (spec section 4.5). It reports
 * what the sandbox's own network stack (gVisor's netstack) does and holds,
 * one fact per line, and judges nothing itself; the supervisor compares:
 *
 *   allowed <challenge>           the allowed canary answered this line
 *   allowed-failed <error>        it did not (neither line with host rules:
 *                                 below)
 *   route <iface> <dst> <gw> <flags> <mask> <metric>
 *                                 one line of /proc/net/route (hex as there)
 *   ipv6 <line>                   a line of /proc/net/if_inet6 or ipv6_route
 *   denied pending                the connection to the denied canary,
 *                                 started first, is still unanswered
 *   denied reached connected      it was established (a hole)
 *   denied unreachable <error>    it failed at once
 *
 * and, with host rules (NetprobeNames), the name canaries, each as
 * "KEY OK" or "KEY-failed <why>":
 *   name-allowed <challenge>      the allowed name resolved to the address
 *                                 bound to it, and a connection there, a
 *                                 ClientHello naming it on
 *                                 NET_CANARY_NAME_PORT, was answered so
 *   name-denied nxdomain          the resolver refused the denied name
 *   name-direct refused           a connection to the unbound address was
 *                                 refused at once
 *   name-sni closed               a ClientHello naming the denied name on
 *                                 the allowed name's address was closed
 *                                 before any byte came back
 *   end
 *
 * The allowed name's address is known beforehand (the helper binds it
 * when it starts, NET_EGRESS_CANARY_BOUND): the two ClientHello canaries
 * go there while the name is resolved, not after, and the answer must be
 * that address.
 *
 * With host rules the allowed address canary is not run: the allowed name
 * canary is the positive observation, on the egress link itself, and
 * carries the same challenge. Frames coming back on two of gVisor's links
 * (canary0 and tap0) within a few milliseconds strand the second link's
 * packet processing until Go's sysmon retakes a processor, 10 to 20 ms on
 * two CPUs (spec 4.5, "One link answers").
 *
 * The canaries run at once (run_canaries()); the lines come in one order
 * whatever order they ended in: allowed (with host rules the name
 * canaries instead), route and ipv6, denied, end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "dns-codec.h"
#include "macro.h"
#include "net-policy.h"
#include "netprobe.h"
#include "parse-util.h"
#include "tls-hello.h"

/* How long each name canary waits for the egress helper, a local process: a fault, not load, if exceeded. */
#define NAME_TIMEOUT_MS 2000
/* How long the allowed address canary waits for its responder. */
#define ALLOWED_TIMEOUT_MS 5000

/* Starts a connection to addr:port without waiting for it; the fd or -errno. */
static int start_connect(const char *addr, int port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((unsigned short) port) };
        int fd;

        if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
                return -EINVAL;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

/*
 * The canaries run at once, each a small state machine on a nonblocking
 * socket driven by one poll loop (run_canaries()): each is a round trip
 * through the sandbox's network stack and, for the name canaries, the
 * egress helper, and one after another they added their latencies to
 * every cold start (spec 4.5, the attestation's step 5). Each
 * keeps the timeout it had alone, counted from its own start and again
 * after each step forward, and reports as it did alone.
 */
typedef enum CanaryKind {
        CANARY_EXCHANGE,        /* connect, send msg (if any), read one line */
        CANARY_RESOLVE,         /* one A question over UDP, one answer */
        CANARY_CONNECT,         /* connect, nothing sent: refused or not */
} CanaryKind;

typedef struct Canary {
        CanaryKind kind;
        bool started, done;
        int fd;
        int timeout_ms;
        uint64_t deadline;
        int r;                          /* once done: 0 or -errno */
        /* CANARY_EXCHANGE: the message and the line read back ("" when closed unanswered). */
        uint8_t msg[512];
        size_t n_msg;
        bool connected;
        char buf[256];
        size_t n_buf;
        /* CANARY_RESOLVE: the name asked, its question's ID, the rcode and first address answered. */
        const char *name;
        uint16_t id;
        uint8_t rcode;
        char addr[INET_ADDRSTRLEN];
} Canary;

static void canary_end(Canary *c, int r) {
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
        c->r = r;
        c->done = true;
        if (c->kind == CANARY_EXCHANGE) {
                c->buf[c->n_buf] = 0;
                c->buf[strcspn(c->buf, "\r\n")] = 0;
        }
}

static void canary_wait(Canary *c) {
        c->deadline = now_ms() + (uint64_t) c->timeout_ms;
}

/* A connection to addr:port that sends the n_msg bytes at msg and reads one line back. */
static void exchange_start(Canary *c, const char *addr, int port, const void *msg, size_t n_msg, int timeout_ms) {
        *c = (Canary) { .kind = CANARY_EXCHANGE, .started = true, .fd = -1, .timeout_ms = timeout_ms };
        canary_wait(c);
        if (n_msg > sizeof(c->msg)) {
                canary_end(c, -EMSGSIZE);
                return;
        }
        if (n_msg > 0)
                memcpy(c->msg, msg, n_msg);
        c->n_msg = n_msg;
        c->fd = start_connect(addr, port);
        if (c->fd < 0)
                canary_end(c, c->fd);
}

/* A connection to addr:port, nothing sent: its outcome is the canary's. */
static void connect_start(Canary *c, const char *addr, int port, int timeout_ms) {
        *c = (Canary) { .kind = CANARY_CONNECT, .started = true, .fd = -1, .timeout_ms = timeout_ms };
        canary_wait(c);
        c->fd = start_connect(addr, port);
        if (c->fd < 0)
                canary_end(c, c->fd);
}

/*
 * Asks resolver for name's A record over UDP, as a program inside would;
 * the answer is read with the egress helper's own reader (resolve_step()).
 */
static void resolve_start(Canary *c, const char *resolver, const char *name) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(DNS_PORT) };
        uint8_t q[DNS_NAME_WIRE_MAX + 64];
        size_t len;
        int r;

        *c = (Canary) { .kind = CANARY_RESOLVE, .started = true, .fd = -1, .timeout_ms = NAME_TIMEOUT_MS, .name = name };
        canary_wait(c);
        if (inet_pton(AF_INET, resolver, &sa.sin_addr) != 1) {
                canary_end(c, -EINVAL);
                return;
        }
        if (getrandom(&c->id, sizeof(c->id), 0) != sizeof(c->id)) {
                canary_end(c, -EIO);
                return;
        }
        r = dns_query_build(c->id, name, DNS_TYPE_A, q, sizeof(q), &len);
        if (r < 0) {
                canary_end(c, r);
                return;
        }
        c->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0) {
                canary_end(c, -errno);
                return;
        }
        if (connect(c->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || send(c->fd, q, len, 0) != (ssize_t) len)
                canary_end(c, -errno ?: -EIO);
}

static short canary_events(const Canary *c) {
        switch (c->kind) {
        case CANARY_EXCHANGE:
                return c->connected ? POLLIN : POLLOUT;
        case CANARY_CONNECT:
                return POLLOUT;
        case CANARY_RESOLVE:
        default:
                return POLLIN;
        }
}

/* The connection's outcome once it is writable or failed: 0 when established, or -errno. */
static int connect_result(int fd) {
        int err = 0;
        socklen_t len = sizeof(err);

        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                return -errno;
        return -err;
}

static void exchange_step(Canary *c) {
        ssize_t k;
        int r;

        if (!c->connected) {
                r = connect_result(c->fd);
                if (r < 0) {
                        canary_end(c, r);
                        return;
                }
                c->connected = true;
                /* A ClientHello is far below a socket buffer: one send takes it whole, or it is an error. */
                if (c->n_msg > 0 && send(c->fd, c->msg, c->n_msg, MSG_NOSIGNAL) != (ssize_t) c->n_msg) {
                        canary_end(c, -errno ?: -EIO);
                        return;
                }
                canary_wait(c);
                return;
        }
        k = read(c->fd, c->buf + c->n_buf, sizeof(c->buf) - 1 - c->n_buf);
        if (k < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                canary_end(c, -errno);
                return;
        }
        /* Closed (the line so far, "" when none), a whole line, or the buffer full. */
        if (k > 0)
                c->n_buf += (size_t) k;
        if (k == 0 || memchr(c->buf, '\n', c->n_buf) || c->n_buf == sizeof(c->buf) - 1) {
                canary_end(c, 0);
                return;
        }
        canary_wait(c);
}

static void resolve_step(Canary *c) {
        uint8_t a[4096];
        DnsAnswer ans;
        ssize_t k;
        int r;

        k = recv(c->fd, a, sizeof(a), 0);
        if (k < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                canary_end(c, -errno);
                return;
        }
        r = dns_answer_parse(a, (size_t) k, c->id, c->name, DNS_TYPE_A, &ans, NULL);
        if (r < 0) {
                canary_end(c, r);
                return;
        }
        c->rcode = ans.rcode;
        if (ans.rcode == DNS_RCODE_NOERROR && ans.n_records > 0) {
                struct in_addr in = { htonl(dns_record_a(&ans.records[0])) };
                inet_ntop(AF_INET, &in, c->addr, sizeof(c->addr));
        }
        canary_end(c, 0);
}

static void canary_step(Canary *c) {
        switch (c->kind) {
        case CANARY_EXCHANGE:
                exchange_step(c);
                return;
        case CANARY_CONNECT:
                canary_end(c, connect_result(c->fd));
                return;
        case CANARY_RESOLVE:
                resolve_step(c);
                return;
        }
}

/* The canaries, in the order they are reported. */
enum {
        PROBE_ALLOWED,          /* the allowed address canary */
        PROBE_NAME_ALLOWED,     /* resolving the allowed name */
        PROBE_NAME_HELLO,       /* a ClientHello naming it on the address bound to it */
        PROBE_NAME_DENIED,      /* resolving the denied name */
        PROBE_NAME_DIRECT,      /* a connection to the unbound address */
        PROBE_NAME_SNI,         /* a ClientHello naming the denied name on the allowed name's address */
        _PROBE_MAX,
};

/* A ClientHello naming name to addr:NET_CANARY_NAME_PORT. */
static void hello_start(Canary *c, const char *addr, const char *name) {
        uint8_t hello[sizeof(c->msg)];
        size_t len;
        int r;

        r = tls_hello_build(name, hello, sizeof(hello), &len);
        if (r < 0) {
                *c = (Canary) { .kind = CANARY_EXCHANGE, .started = true, .fd = -1 };
                canary_end(c, r);
                return;
        }
        exchange_start(c, addr, NET_CANARY_NAME_PORT, hello, len, NAME_TIMEOUT_MS);
}

/* Drives every started canary until each is done. */
static void run_canaries(Canary c[static _PROBE_MAX]) {
        for (;;) {
                struct pollfd p[_PROBE_MAX];
                size_t idx[_PROBE_MAX], n = 0;
                uint64_t now, next = UINT64_MAX;
                int r;

                for (size_t i = 0; i < _PROBE_MAX; i++)
                        if (c[i].started && !c[i].done) {
                                p[n] = (struct pollfd) { .fd = c[i].fd, .events = canary_events(&c[i]) };
                                idx[n++] = i;
                                if (c[i].deadline < next)
                                        next = c[i].deadline;
                        }
                if (n == 0)
                        return;
                now = now_ms();
                r = poll(p, (nfds_t) n, next > now ? (int) (next - now) : 0);
                if (r < 0 && errno != EINTR) {
                        r = -errno;
                        for (size_t k = 0; k < n; k++)
                                canary_end(&c[idx[k]], r);
                        return;
                }
                now = now_ms();
                for (size_t k = 0; k < n; k++) {
                        Canary *x = &c[idx[k]];

                        if (r > 0 && p[k].revents)
                                canary_step(x);
                        if (!x->done && now >= x->deadline)
                                canary_end(x, -ETIMEDOUT);
                }
        }
}

/* The name canaries' lines, in the order the supervisor judges them. */
static void report_names(FILE *out, const NetprobeNames *names, const Canary c[static _PROBE_MAX]) {
        const Canary *res = &c[PROBE_NAME_ALLOWED], *hello = &c[PROBE_NAME_HELLO], *den = &c[PROBE_NAME_DENIED],
                     *direct = &c[PROBE_NAME_DIRECT], *sni = &c[PROBE_NAME_SNI];
        /* A reset before any byte is a refusal as much as a close. */
        int sni_r = sni->r == -ECONNRESET ? 0 : sni->r, hello_r = hello->r == -ECONNRESET ? 0 : hello->r;

        if (res->r < 0)
                fprintf(out, "name-allowed-failed no answer from the resolver %s: %s\n", names->resolver, strerror(-res->r));
        else if (res->rcode != DNS_RCODE_NOERROR || !res->addr[0])
                fprintf(out, "name-allowed-failed the resolver answered rcode %u without an address\n", res->rcode);
        else if (!streq(res->addr, names->bound))
                /* Within the 60 characters the supervisor quotes of a failure. */
                fprintf(out, "name-allowed-failed it resolved to %s, not to %s\n", res->addr, names->bound);
        else if (hello_r < 0)
                fprintf(out, "name-allowed-failed its connection to %s: %s\n", names->bound, strerror(-hello_r));
        else if (hello->r == -ECONNRESET || !hello->buf[0])
                fprintf(out, "name-allowed-failed its connection to %s was closed unanswered\n", names->bound);
        else
                fprintf(out, "name-allowed %s\n", hello->buf);

        if (den->r < 0)
                fprintf(out, "name-denied-failed no answer from the resolver %s: %s\n", names->resolver, strerror(-den->r));
        else if (den->rcode == DNS_RCODE_NXDOMAIN)
                fprintf(out, "name-denied nxdomain\n");
        else if (den->addr[0])
                fprintf(out, "name-denied-failed it resolved to %s\n", den->addr);
        else
                fprintf(out, "name-denied-failed the resolver answered rcode %u, not NXDOMAIN\n", den->rcode);

        if (direct->r == -ECONNREFUSED)
                fprintf(out, "name-direct refused\n");
        else if (direct->r == 0)
                fprintf(out, "name-direct-failed a connection to %s was established\n", names->unbound);
        else
                fprintf(out, "name-direct-failed a connection to %s: %s\n", names->unbound, strerror(-direct->r));

        if (sni_r < 0)
                fprintf(out, "name-sni-failed its connection to %s: %s\n", names->bound, strerror(-sni_r));
        else if (sni->r == 0 && sni->buf[0])
                fprintf(out, "name-sni-failed it was answered \"%.60s\"\n", sni->buf);
        else
                fprintf(out, "name-sni closed\n");
}

static void dump_lines(FILE *out, const char *path, const char *prefix) {
        FILE *f = fopen(path, "re");
        char line[512];

        while (f && fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = 0;
                if (line[strspn(line, " \t")])
                        fprintf(out, "%s %s\n", prefix, line);
        }
        if (f)
                fclose(f);
}

/* One line of /proc/net/route, whose eleven columns Linux and gVisor both print. */
typedef struct RouteLine {
        const char *iface;
        uint64_t dst, gw, flags, mask, metric;
} RouteLine;

static int hex_field(const char *s, size_t digits, uint64_t *ret) {
        if (strlen(s) != digits)
                return -EINVAL;
        return parse_unsigned(s, PARSE_HEX | PARSE_LEADING_ZEROS, 0, UINT32_MAX, ret);
}

static int parse_route_line(char *line, RouteLine *ret) {
        char *f[11];
        uint64_t ignored;

        /* Iface Destination Gateway Flags RefCnt Use Metric Mask MTU Window IRTT */
        if (split_fields(line, " \t\n", f, ELEMENTSOF(f)) != (int) ELEMENTSOF(f) || strlen(f[0]) >= 16)
                return -EINVAL;
        for (size_t i = 4; i < ELEMENTSOF(f); i++)
                if (i != 7 && parse_unsigned(f[i], 0, 0, UINT32_MAX, i == 6 ? &ret->metric : &ignored) < 0)
                        return -EINVAL;
        if (hex_field(f[1], 8, &ret->dst) < 0 || hex_field(f[2], 8, &ret->gw) < 0 ||
            hex_field(f[3], 4, &ret->flags) < 0 || hex_field(f[7], 8, &ret->mask) < 0)
                return -EINVAL;
        ret->iface = f[0];
        return 0;
}

void netprobe_dump_routes(FILE *in, FILE *out) {
        char line[512];

        if (!fgets(line, sizeof(line), in) || !startswith(line, "Iface")) {
                fprintf(out, "route-error no header in /proc/net/route\n");
                return;
        }
        while (fgets(line, sizeof(line), in)) {
                RouteLine r;

                if (!strchr(line, '\n') || parse_route_line(line, &r) < 0) {
                        fprintf(out, "route-error unreadable line in /proc/net/route\n");
                        return;
                }
                fprintf(out, "route %s %08" PRIX64 " %08" PRIX64 " %04" PRIX64 " %08" PRIX64 " %" PRIu64 "\n",
                        r.iface, r.dst, r.gw, r.flags, r.mask, r.metric);
        }
}

static void dump_routes(FILE *out) {
        FILE *f = fopen("/proc/net/route", "re");

        if (!f) {
                fprintf(out, "route-error %s\n", strerror(errno));
                return;
        }
        netprobe_dump_routes(f, out);
        fclose(f);
}

int netprobe_report(FILE *out, const char *allowed, const char *denied, int port, const NetprobeNames *names) {
        Canary c[_PROBE_MAX] = {};
        _cleanup_free_ char *tables_text = NULL;
        size_t tables_len = 0;
        struct pollfd p;
        FILE *tables;
        int r, fd;

        /* The denied canary first, and without waiting: its packets must
         * leave through deny0 toward the dead-end next hop, where the
         * supervisor watches for them (supnet_witness_denied()). Nothing
         * answers there, so the connection stays pending; had a hole let
         * it through, it would be established by the end of the report,
         * which lasts at least as long as the allowed canary's round trip
         * (with host rules the allowed name canary's, longer: a connection
         * and a ClientHello through the egress helper to the responder;
         * the others run beside it, run_canaries()). */
        fd = start_connect(denied, port);
        if (names) {
                /* The ClientHello canaries first, the longest (a connection,
                 * then a message through the egress helper to the canary
                 * responder). */
                hello_start(&c[PROBE_NAME_HELLO], names->bound, names->allowed);
                hello_start(&c[PROBE_NAME_SNI], names->bound, names->denied);
                resolve_start(&c[PROBE_NAME_ALLOWED], names->resolver, names->allowed);
                resolve_start(&c[PROBE_NAME_DENIED], names->resolver, names->denied);
                /* No byte is sent: a refusal comes at the SYN, from the helper's frame filter. */
                connect_start(&c[PROBE_NAME_DIRECT], names->unbound, NET_CANARY_NAME_PORT, NAME_TIMEOUT_MS);
        } else
                exchange_start(&c[PROBE_ALLOWED], allowed, port, NULL, 0, ALLOWED_TIMEOUT_MS);
        /* The tables while the canaries are on their way, reported in their place below. */
        tables = open_memstream(&tables_text, &tables_len);
        if (tables) {
                dump_routes(tables);
                dump_lines(tables, "/proc/net/if_inet6", "ipv6");
                dump_lines(tables, "/proc/net/ipv6_route", "ipv6");
                if (fclose(tables) != 0)
                        tables_text = mfree(tables_text);
        }
        run_canaries(c);
        if (names)
                report_names(out, names, c);
        else if (c[PROBE_ALLOWED].r == 0)
                fprintf(out, "allowed %s\n", c[PROBE_ALLOWED].buf);
        else
                fprintf(out, "allowed-failed %s\n", strerror(-c[PROBE_ALLOWED].r));
        if (tables_text)
                fputs(tables_text, out);
        else
                fprintf(out, "route-error cannot buffer the tables: %s\n", strerror(ENOMEM));
        if (fd < 0)
                fprintf(out, "denied unreachable %s\n", strerror(-fd));
        else {
                p = (struct pollfd) { .fd = fd, .events = POLLOUT };
                if (poll(&p, 1, 0) == 0)
                        fprintf(out, "denied pending\n");
                else if ((r = connect_result(fd)) == 0)
                        fprintf(out, "denied reached connected\n");
                else
                        fprintf(out, "denied unreachable %s\n", strerror(-r));
                close(fd);
        }
        fprintf(out, "end\n");
        return fflush(out) == 0 ? 0 : -EIO;
}
