/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-store-burst: what a burst of audit events costs the coordinator's
 * loop (issue 31 item 4). The coordinator writes the Domain Store from its
 * event loop, so the longest transaction is the longest time every session's
 * terminal relay, bus call and escalation waits. Writes 1,000 events into a
 * fresh store in DIR (default: a directory below $TMPDIR; give one on the
 * file system of the data root to measure that disk): one transaction per
 * event, as a flood of refused records wrote them, then in batches of
 * AUDIT_BATCH, as the coordinator's audit queue writes them. With --load, a
 * child writes and fsyncs 1 MiB blocks to the same file system throughout.
 * Prints the median, 99th percentile and worst transaction, and the whole
 * burst, for each; the ratio of the worst is the figure the queue exists for.
 *
 * Usage: build/bench/bench-store-burst [--load] [DIR]
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "domain-store.h"
#include "fs-util.h"
#include "path-util.h"
#include "util.h"

#define EVENTS 1000
#define BATCH 64

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

typedef struct Figures {
        uint64_t median, p99, worst, total;
} Figures;

static int burst(const char *dir, const char *name, size_t batch, Figures *ret) {
        _cleanup_free_ char *path = path_join(dir, name), *error = NULL;
        uint64_t lat[EVENTS], start;
        EscalationEvent ev[BATCH];
        DomainStore *s = NULL;
        size_t n = 0;
        int r;

        if (!path)
                return -ENOMEM;
        r = domain_store_open(path, &s, &error);
        if (r < 0) {
                fprintf(stderr, "%s\n", error);
                return r;
        }
        for (size_t i = 0; i < BATCH; i++)
                ev[i] = (EscalationEvent) { .time_usec = 1, .request = "r-0123456789", .session = "s-0123456789",
                                            .event = "refused", .detail = "not a request record: junk in requests/",
                                            .argv_json = "[\"/usr/bin/true\",\"--flag\",\"an argument\"]" };
        start = now_ns();
        for (size_t done = 0; done < EVENTS; done += batch) {
                size_t k = EVENTS - done < batch ? EVENTS - done : batch;
                uint64_t t = now_ns();

                r = domain_store_add_escalation_events(s, ev, k, &error);
                if (r < 0) {
                        fprintf(stderr, "%s\n", error);
                        domain_store_close(s);
                        return r;
                }
                lat[n++] = now_ns() - t;
        }
        ret->total = now_ns() - start;
        domain_store_close(s);
        qsort(lat, n, sizeof(lat[0]), cmp_u64);
        ret->median = lat[n / 2];
        ret->p99 = lat[n * 99 / 100];
        ret->worst = lat[n - 1];
        return 0;
}

static pid_t start_load(const char *dir) {
        pid_t pid = fork();

        if (pid != 0)
                return pid;
        _cleanup_free_ char *p = path_join(dir, "load");
        static char block[1 << 20];
        int fd = p ? open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
        if (fd < 0)
                _exit(1);
        memset(block, 'x', sizeof(block));
        for (unsigned i = 0;; i++) {
                if (i % 64 == 0 && lseek(fd, 0, SEEK_SET) < 0)
                        _exit(1);
                if (write(fd, block, sizeof(block)) < 0 || fsync(fd) < 0)
                        _exit(1);
        }
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *tmp = NULL;
        const char *dir = NULL;
        bool load = false;
        Figures one, batched;
        pid_t loader = 0;
        int r;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--load"))
                        load = true;
                else
                        dir = argv[i];
        }
        if (!dir) {
                if (asprintf(&tmp, "%s/lazaret-bench-store-XXXXXX", getenv("TMPDIR") ?: "/var/tmp") < 0 || !mkdtemp(tmp)) {
                        perror("mkdtemp");
                        return 1;
                }
                dir = tmp;
        }
        if (load)
                loader = start_load(dir);
        r = burst(dir, "single.sqlite", 1, &one);
        if (r >= 0)
                r = burst(dir, "batched.sqlite", BATCH, &batched);
        if (loader > 0) {
                kill(loader, SIGKILL);
                waitpid(loader, NULL, 0);
        }
        if (tmp)
                (void) rm_rf(tmp);
        if (r < 0)
                return 1;
        printf("store burst: %d audit events%s (synchronous=FULL, WAL)\n", EVENTS, load ? ", under fsync load" : "");
        printf("%-24s %10s %10s %10s %10s\n", "", "median", "p99", "worst", "burst");
        printf("%-24s %8.2fms %8.2fms %8.2fms %8.0fms\n", "one per transaction", one.median / 1e6, one.p99 / 1e6,
               one.worst / 1e6, one.total / 1e6);
        printf("%-24s %8.2fms %8.2fms %8.2fms %8.0fms\n", "batches of 64", batched.median / 1e6, batched.p99 / 1e6,
               batched.worst / 1e6, batched.total / 1e6);
        printf("loop blocked for the burst: batched/one = %.2f; worst transaction batched/one = %.2f\n",
               (double) batched.total / one.total, (double) batched.worst / one.worst);
        return 0;
}
