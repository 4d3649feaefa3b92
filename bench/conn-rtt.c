/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-conn-rtt HOST PORT N: N short HTTP round trips from one process,
 * each timed alone: resolve HOST (a dotted IPv4 address as it is; a name
 * with one A question over UDP to the first nameserver /etc/resolv.conf
 * names, as a C library's resolver asks, read with the egress helper's own
 * DNS reader), connect, "GET / HTTP/1.0" naming HOST, read the page to its
 * end, close. Run by bench/network inside a sandbox, so that what a
 * connection's setup costs is not hidden under a process start per
 * connection (tens of milliseconds in gVisor). Prints "rtt N MEDIAN P90
 * MIN REFUSED" in milliseconds, REFUSED the connections reset at once and
 * tried again; exits 1 when a round trip fails otherwise, one is refused
 * four times running, or the page is not the test host's.
 *
 * Static (without the C library's resolver, which a static program cannot
 * use), so that it runs in any image.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dns-codec.h"

static double now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

/* The first "nameserver" of /etc/resolv.conf, as a C library's resolver reads it. */
static int read_resolver(struct in_addr *ret) {
        char line[256], addr[64];
        FILE *f = fopen("/etc/resolv.conf", "re");

        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, " nameserver %63s", addr) == 1 && inet_pton(AF_INET, addr, ret) == 1) {
                        fclose(f);
                        return 0;
                }
        fclose(f);
        return -1;
}

/* HOST's first A record, asked of the resolver; 0, or -1 with the reason on stderr. */
static int resolve(const char *host, const struct in_addr *resolver, uint16_t id, struct in_addr *ret) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(DNS_PORT), .sin_addr = *resolver };
        uint8_t q[DNS_NAME_WIRE_MAX + 64], a[4096];
        struct pollfd p;
        DnsAnswer ans;
        size_t len;
        ssize_t k;
        int fd, r;

        if (dns_query_build(id, host, DNS_TYPE_A, q, sizeof(q), &len) < 0) {
                fprintf(stderr, "bench-conn-rtt: %s is not a name a question can carry\n", host);
                return -1;
        }
        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || send(fd, q, len, 0) != (ssize_t) len) {
                fprintf(stderr, "bench-conn-rtt: asking the resolver about %s: %s\n", host, strerror(errno));
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        p = (struct pollfd) { .fd = fd, .events = POLLIN };
        k = poll(&p, 1, 5000) == 1 ? recv(fd, a, sizeof(a), 0) : -1;
        close(fd);
        if (k < 0) {
                fprintf(stderr, "bench-conn-rtt: no answer about %s within 5 s\n", host);
                return -1;
        }
        r = dns_answer_parse(a, (size_t) k, id, host, DNS_TYPE_A, &ans, NULL);
        if (r < 0 || ans.rcode != DNS_RCODE_NOERROR || ans.n_records == 0) {
                fprintf(stderr, "bench-conn-rtt: %s did not resolve (%s, rcode %u)\n", host, r < 0 ? strerror(-r) : "read",
                        r < 0 ? 0u : ans.rcode);
                return -1;
        }
        ret->s_addr = htonl(dns_record_a(&ans.records[0]));
        return 0;
}

/* One round trip; 0, or -1 with the reason on stderr. */
static int round_trip(const char *host, int port, const struct in_addr *resolver, uint16_t id, const char *request,
                      size_t n_request) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t) port) };
        char page[4096];
        size_t have = 0;
        ssize_t n;
        int fd, e;

        if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 && resolve(host, resolver, id, &sa.sin_addr) < 0)
                return -1;
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                e = errno;
                if (fd >= 0)
                        close(fd);
                if (e == ECONNREFUSED)
                        return -ECONNREFUSED;   /* the caller may try again */
                fprintf(stderr, "bench-conn-rtt: connecting to %s:%d: %s\n", host, port, strerror(e));
                return -1;
        }
        if (write(fd, request, n_request) != (ssize_t) n_request) {
                fprintf(stderr, "bench-conn-rtt: sending to %s: %s\n", host, strerror(errno));
                close(fd);
                return -1;
        }
        while ((n = read(fd, page + have, sizeof(page) - 1 - have)) > 0) {
                have += (size_t) n;
                if (have == sizeof(page) - 1)
                        break;
        }
        e = errno;
        close(fd);
        page[have] = 0;
        if (n < 0 || strncmp(page, "HTTP/1.", 7) != 0 || !strstr(page, "test host")) {
                fprintf(stderr, "bench-conn-rtt: %s:%d did not answer with the test host's page (%zu bytes%s%s)\n", host,
                        port, have, n < 0 ? ", " : "", n < 0 ? strerror(e) : "");
                return -1;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        struct in_addr resolver = {};
        char request[512], *end;
        double *t;
        long n, port, refused = 0, retries = 0;
        int len;

        if (argc != 4) {
                fprintf(stderr, "usage: bench-conn-rtt HOST PORT N\n");
                return 2;
        }
        errno = 0;
        port = strtol(argv[2], &end, 10);
        if (errno != 0 || *end || port < 1 || port > 65535) {
                fprintf(stderr, "bench-conn-rtt: PORT must be a number from 1 to 65535, not \"%s\"\n", argv[2]);
                return 2;
        }
        errno = 0;
        n = strtol(argv[3], &end, 10);
        if (errno != 0 || *end || n < 1 || n > 100000) {
                fprintf(stderr, "bench-conn-rtt: N must be a number from 1 to 100000, not \"%s\"\n", argv[3]);
                return 2;
        }
        len = snprintf(request, sizeof(request), "GET / HTTP/1.0\r\nHost: %s\r\n\r\n", argv[1]);
        if (len < 0 || (size_t) len >= sizeof(request)) {
                fprintf(stderr, "bench-conn-rtt: the host name is too long\n");
                return 2;
        }
        if (inet_pton(AF_INET, argv[1], &(struct in_addr) {}) != 1 && read_resolver(&resolver) < 0) {
                fprintf(stderr, "bench-conn-rtt: /etc/resolv.conf names no IPv4 nameserver\n");
                return 1;
        }
        t = calloc((size_t) n, sizeof(double));
        if (!t)
                return 1;
        for (long i = 0; i < n; i++) {
                double t0 = now_ms();
                int r;

                r = round_trip(argv[1], (int) port, &resolver, (uint16_t) (getpid() + i), request, (size_t) len);
                /* Thousands of connections a minute to one server port: now and then one is
                 * reset at once (seen once in about 9,000 through slirp4netns; likely a source
                 * port the server still held in TIME_WAIT). Tried again, timed anew, at most
                 * three times running, and counted. */
                if (r == -ECONNREFUSED && ++retries <= 3) {
                        refused++;
                        i--;
                        continue;
                }
                if (r == -ECONNREFUSED)
                        fprintf(stderr, "bench-conn-rtt: connecting to %s:%s: %s\n", argv[1], argv[2], strerror(ECONNREFUSED));
                if (r < 0)
                        return 1;
                retries = 0;
                t[i] = now_ms() - t0;
        }
        qsort(t, (size_t) n, sizeof(double), cmp_double);
        printf("rtt %ld %.3f %.3f %.3f %ld\n", n, t[n / 2], t[(n * 9) / 10], t[0], refused);
        free(t);
        return 0;
}
