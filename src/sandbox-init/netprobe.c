/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The network attestation's probe, run by lazaret-init as the sandbox's
 * first act when the supervisor asks for it (spec section 4.5). It reports
 * what the sandbox's own network stack (gVisor's netstack) does and holds,
 * one fact per line, and judges nothing itself; the supervisor compares:
 *
 *   allowed <challenge>           the allowed canary answered this line
 *   allowed-failed <error>        it did not
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
 *   name-allowed <challenge>      the allowed name resolved, and its
 *                                 connection, a ClientHello naming it on
 *                                 NET_CANARY_NAME_PORT, was answered so
 *   name-denied nxdomain          the resolver refused the denied name
 *   name-direct refused           a connection to the unbound address was
 *                                 refused at once
 *   name-sni closed               a ClientHello naming the denied name on
 *                                 the allowed name's address was closed
 *                                 before any byte came back
 *   end
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
#include <unistd.h>

#include "dns-codec.h"
#include "macro.h"
#include "net-policy.h"
#include "netprobe.h"
#include "parse-util.h"
#include "tls-hello.h"

/* How long each name canary waits for the egress helper, a local process: a fault, not load, if exceeded. */
#define NAME_TIMEOUT_MS 2000

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

/*
 * Connects, sends the n bytes at msg, and reads one line, waiting at most
 * timeout_ms each time; 0 or -errno. A connection closed before any byte
 * gives 0 and an empty line.
 */
static int exchange(const char *addr, int port, const void *msg, size_t n_msg, int timeout_ms, char *buf, size_t size) {
        struct pollfd p;
        size_t n = 0;
        int fd, r, err = 0;
        socklen_t len = sizeof(err);

        fd = start_connect(addr, port);
        if (fd < 0)
                return fd;
        p = (struct pollfd) { .fd = fd, .events = POLLOUT };
        r = poll(&p, 1, timeout_ms);
        if (r == 0) {
                r = -ETIMEDOUT;
                goto out;
        }
        if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) {
                r = err ? -err : -errno;
                goto out;
        }
        /* A ClientHello is far below a socket buffer: one send takes it whole, or it is an error. */
        if (n_msg > 0 && send(fd, msg, n_msg, MSG_NOSIGNAL) != (ssize_t) n_msg) {
                r = -errno ?: -EIO;
                goto out;
        }
        while (n < size - 1) {
                ssize_t k;

                p = (struct pollfd) { .fd = fd, .events = POLLIN };
                r = poll(&p, 1, timeout_ms);
                if (r <= 0) {
                        r = r == 0 ? -ETIMEDOUT : -errno;
                        goto out;
                }
                k = read(fd, buf + n, size - 1 - n);
                if (k < 0) {
                        r = -errno;
                        goto out;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (memchr(buf, '\n', n))
                        break;
        }
        buf[n] = 0;
        buf[strcspn(buf, "\r\n")] = 0;
        r = 0;
out:
        close(fd);
        return r;
}

static int fetch_line(const char *addr, int port, int timeout_ms, char *buf, size_t size) {
        return exchange(addr, port, NULL, 0, timeout_ms, buf, size);
}

/*
 * Asks resolver for name's A record over UDP, as a program inside would,
 * and reads the answer with the egress helper's own reader: 0 with its
 * rcode and, when it has records, the first address (dotted) in addr;
 * -errno otherwise (-ETIMEDOUT: no answer).
 */
static int resolve_a(const char *resolver, const char *name, uint8_t *ret_rcode, char addr[static INET_ADDRSTRLEN]) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(DNS_PORT) };
        uint8_t q[DNS_NAME_WIRE_MAX + 64], a[4096];
        struct pollfd p;
        DnsAnswer ans;
        uint16_t id;
        size_t len;
        ssize_t k;
        int fd, r;

        if (inet_pton(AF_INET, resolver, &sa.sin_addr) != 1)
                return -EINVAL;
        if (getrandom(&id, sizeof(id), 0) != sizeof(id))
                return -EIO;
        r = dns_query_build(id, name, DNS_TYPE_A, q, sizeof(q), &len);
        if (r < 0)
                return r;
        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || send(fd, q, len, 0) != (ssize_t) len) {
                r = -errno;
                goto out;
        }
        p = (struct pollfd) { .fd = fd, .events = POLLIN };
        r = poll(&p, 1, NAME_TIMEOUT_MS);
        if (r <= 0) {
                r = r == 0 ? -ETIMEDOUT : -errno;
                goto out;
        }
        k = recv(fd, a, sizeof(a), 0);
        if (k < 0) {
                r = -errno;
                goto out;
        }
        r = dns_answer_parse(a, (size_t) k, id, name, DNS_TYPE_A, &ans, NULL);
        if (r < 0)
                goto out;
        *ret_rcode = ans.rcode;
        addr[0] = 0;
        if (ans.rcode == DNS_RCODE_NOERROR && ans.n_records > 0) {
                struct in_addr in = { htonl(dns_record_a(&ans.records[0])) };
                inet_ntop(AF_INET, &in, addr, INET_ADDRSTRLEN);
        }
        r = 0;
out:
        close(fd);
        return r;
}

/* A ClientHello naming name to addr:NET_CANARY_NAME_PORT, and the line that came back ("" when closed unanswered). */
static int hello_exchange(const char *addr, const char *name, char *buf, size_t size) {
        uint8_t hello[512];
        size_t len;
        int r;

        r = tls_hello_build(name, hello, sizeof(hello), &len);
        if (r < 0)
                return r;
        r = exchange(addr, NET_CANARY_NAME_PORT, hello, len, NAME_TIMEOUT_MS, buf, size);
        /* A reset before any byte is a refusal as much as a close. */
        if (r == -ECONNRESET) {
                buf[0] = 0;
                return 0;
        }
        return r;
}

/*
 * The name canaries, in order: the allowed name first (its address is the
 * one the ClientHello canary then uses), each reported as it went.
 */
static void report_names(FILE *out, const NetprobeNames *names) {
        char addr[INET_ADDRSTRLEN] = "", denied_addr[INET_ADDRSTRLEN], buf[256];
        uint8_t rcode = 0;
        int r, fd;

        r = resolve_a(names->resolver, names->allowed, &rcode, addr);
        if (r < 0)
                fprintf(out, "name-allowed-failed no answer from the resolver %s: %s\n", names->resolver, strerror(-r));
        else if (rcode != DNS_RCODE_NOERROR || !addr[0]) {
                fprintf(out, "name-allowed-failed the resolver answered rcode %u without an address\n", rcode);
                addr[0] = 0;
        } else {
                r = hello_exchange(addr, names->allowed, buf, sizeof(buf));
                if (r < 0)
                        fprintf(out, "name-allowed-failed its connection to %s: %s\n", addr, strerror(-r));
                else if (!buf[0])
                        fprintf(out, "name-allowed-failed its connection to %s was closed unanswered\n", addr);
                else
                        fprintf(out, "name-allowed %s\n", buf);
        }

        r = resolve_a(names->resolver, names->denied, &rcode, denied_addr);
        if (r < 0)
                fprintf(out, "name-denied-failed no answer from the resolver %s: %s\n", names->resolver, strerror(-r));
        else if (rcode == DNS_RCODE_NXDOMAIN)
                fprintf(out, "name-denied nxdomain\n");
        else if (denied_addr[0])
                fprintf(out, "name-denied-failed it resolved to %s\n", denied_addr);
        else
                fprintf(out, "name-denied-failed the resolver answered rcode %u, not NXDOMAIN\n", rcode);

        /* No byte is sent: a refusal comes at the SYN, from the helper's frame filter. */
        fd = start_connect(names->unbound, NET_CANARY_NAME_PORT);
        if (fd >= 0) {
                struct pollfd p = { .fd = fd, .events = POLLOUT };
                int err = 0;
                socklen_t len = sizeof(err);

                r = poll(&p, 1, NAME_TIMEOUT_MS);
                if (r == 0)
                        r = -ETIMEDOUT;
                else if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                        r = -errno;
                else
                        r = -err;
                close(fd);
        } else
                r = fd;
        if (r == -ECONNREFUSED)
                fprintf(out, "name-direct refused\n");
        else if (r == 0)
                fprintf(out, "name-direct-failed a connection to %s was established\n", names->unbound);
        else
                fprintf(out, "name-direct-failed a connection to %s: %s\n", names->unbound, strerror(-r));

        if (!addr[0])
                fprintf(out, "name-sni-failed the allowed name has no address to try it on\n");
        else {
                r = hello_exchange(addr, names->denied, buf, sizeof(buf));
                if (r < 0)
                        fprintf(out, "name-sni-failed its connection to %s: %s\n", addr, strerror(-r));
                else if (buf[0])
                        fprintf(out, "name-sni-failed it was answered \"%.60s\"\n", buf);
                else
                        fprintf(out, "name-sni closed\n");
        }
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
        struct pollfd p;
        char buf[256];
        int r, fd, err = 0;
        socklen_t len = sizeof(err);

        /* The denied canary first, and without waiting: its packets must
         * leave through deny0 toward the dead-end next hop, where the
         * supervisor watches for them (supnet_witness_denied()). Nothing
         * answers there, so the connection stays pending; had a hole let
         * it through, it would be established by the end of the report. */
        fd = start_connect(denied, port);
        r = fetch_line(allowed, port, 5000, buf, sizeof(buf));
        if (r == 0)
                fprintf(out, "allowed %s\n", buf);
        else
                fprintf(out, "allowed-failed %s\n", strerror(-r));
        if (names)
                report_names(out, names);
        dump_routes(out);
        dump_lines(out, "/proc/net/if_inet6", "ipv6");
        dump_lines(out, "/proc/net/ipv6_route", "ipv6");
        if (fd < 0)
                fprintf(out, "denied unreachable %s\n", strerror(-fd));
        else {
                p = (struct pollfd) { .fd = fd, .events = POLLOUT };
                if (poll(&p, 1, 0) == 0)
                        fprintf(out, "denied pending\n");
                else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
                        fprintf(out, "denied reached connected\n");
                else
                        fprintf(out, "denied unreachable %s\n", strerror(err ?: errno));
                close(fd);
        }
        fprintf(out, "end\n");
        return fflush(out) == 0 ? 0 : -EIO;
}
