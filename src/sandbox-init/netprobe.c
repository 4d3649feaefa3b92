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
#include <sys/socket.h>
#include <unistd.h>

#include "macro.h"
#include "netprobe.h"
#include "parse-util.h"

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

/* Connects and reads one line, waiting at most timeout_ms each time; 0 or -errno. */
static int fetch_line(const char *addr, int port, int timeout_ms, char *buf, size_t size) {
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

int netprobe_report(FILE *out, const char *allowed, const char *denied, int port) {
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
