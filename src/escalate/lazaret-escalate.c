/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-escalate: the Escalation Client (spec section 5.6). Runs inside
 * the sandbox, static, outside any sanitizer runtime. It asks the host for
 * one command: a request signed with the session's Session Anchor key,
 * carrying the session's credential (trust/<session>.cred, issued by the
 * host's per-generation Trust Anchor) as opaque bytes it never reads,
 * published into the mailbox by rename, then a wait on the session's
 * doorbell FIFO (gVisor reports no inotify event for files the host
 * writes; runsc --host-fifo=open lets a host FIFO carry the wake-up) for
 * the session's result file to carry the same request ID.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "escalation-proto.h"
#include "parse-util.h"

/* Exit codes other than the host command's own status (lazaret-escalate(1)). */
#define EXIT_DENIED 122
#define EXIT_TIMEOUT 124
#define EXIT_FAILED 125
#define EXIT_CANCELLED 130

/* What the client adds to the host's deadline before it stops waiting itself. */
#define GRACE_SECONDS 5

static const char *arg_why = "";
static unsigned arg_timeout;
static volatile sig_atomic_t got_signal;

static void help(void) {
        printf("Usage: lazaret-escalate [--why TEXT] [--timeout SECONDS] -- COMMAND [ARGUMENT...]\n"
               "\n"
               "Asks the developer on the host to run COMMAND on the host (outside the\n"
               "sandbox), as the exact argument vector given, never through a shell.\n"
               "Prints what the host command printed and exits with its status.\n"
               "\n"
               "  --why TEXT         the justification shown to the developer\n"
               "  --timeout SECONDS  give up after this long (at most %d)\n"
               "  -h, --help         show this help\n"
               "\n"
               "Exit status: the host command's, or %d denied, %d timed out,\n"
               "%d failed (including usage errors), %d cancelled.\n",
               ESC_TIMEOUT_MAX, EXIT_DENIED, EXIT_TIMEOUT, EXIT_FAILED, EXIT_CANCELLED);
}

_printf_(1, 2) static int failf(const char *fmt, ...) {
        va_list ap;

        fprintf(stderr, "lazaret-escalate: failed: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_FAILED;
}

static int parse_args(int argc, char **argv) {
        static const struct option options[] = {
                { "why", required_argument, NULL, 'w' },
                { "timeout", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case 'w':
                        if (strlen(optarg) > ESC_WHY_MAX)
                                return failf("the justification is longer than %d bytes", ESC_WHY_MAX);
                        arg_why = optarg;
                        break;
                case 't': {
                        uint32_t t;

                        if (parse_uint32(optarg, 1, ESC_TIMEOUT_MAX, &t) < 0)
                                return failf("invalid --timeout \"%s\"", optarg);
                        arg_timeout = (unsigned) t;
                        break;
                }
                case 'h':
                        help();
                        return 0;
                default:
                        return EXIT_FAILED;
                }
        if (optind >= argc)
                return failf("no command given; see --help");
        if (argc - optind > ESC_ARGC_MAX)
                return failf("more than %d arguments", ESC_ARGC_MAX);
        return -1;
}

static int read_file_at(int dirfd, const char *name, char **ret, size_t *ret_len) {
        int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        size_t len = 0, cap = 64 * 1024;
        char *buf;

        if (fd < 0)
                return -errno;
        buf = malloc(cap);
        while (buf) {
                ssize_t k;

                if (len == cap) {
                        char *b = cap >= ESC_RESULT_MAX ? NULL : realloc(buf, cap * 2);
                        if (!b) {
                                free(buf);
                                buf = NULL;
                                break;
                        }
                        buf = b;
                        cap *= 2;
                }
                k = read(fd, buf + len, cap - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        if (k < 0) {
                                free(buf);
                                buf = NULL;
                        }
                        break;
                }
                len += (size_t) k;
        }
        close(fd);
        if (!buf)
                return -EIO;
        *ret = buf;
        *ret_len = len;
        return 0;
}

static int write_all_fd(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* Publishes bytes as dir/name: a temporary name first, then rename(2). */
static int publish(int dirfd, const char *name, const char *data, size_t len) {
        char tmp[ESC_ID_LEN + 32];
        int fd, r;

        snprintf(tmp, sizeof(tmp), ".tmp-%s", name);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = write_all_fd(fd, data, len);
        if (close(fd) < 0 && r >= 0)
                r = -errno;
        if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(dirfd, tmp, 0);
        return r;
}

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void on_signal(int sig) {
        got_signal = sig;
}

static int deliver(const EscResult *res) {
        switch (res->outcome) {
        case ESC_COMPLETED:
                (void) write_all_fd(STDOUT_FILENO, res->out, res->out_len);
                (void) write_all_fd(STDERR_FILENO, res->err, res->err_len);
                if (res->message[0])
                        fprintf(stderr, "lazaret-escalate: %s\n", res->message);
                return res->status;
        case ESC_DENIED:
                fprintf(stderr, "lazaret-escalate: denied: %s\n", res->message[0] ? res->message : "the developer denied the request");
                return EXIT_DENIED;
        case ESC_TIMEOUT:
                fprintf(stderr, "lazaret-escalate: timed out: %s\n", res->message[0] ? res->message : "no decision in time");
                return EXIT_TIMEOUT;
        case ESC_CANCELLED:
                fprintf(stderr, "lazaret-escalate: cancelled: %s\n", res->message);
                return EXIT_CANCELLED;
        default:
                fprintf(stderr, "lazaret-escalate: failed: %s\n", res->message);
                return EXIT_FAILED;
        }
}

/*
 * gVisor keeps a host descriptor for every file it looked at, after the
 * host removed it, until a lookup of that name inside finds it gone: the
 * request the coordinator removed, and a cancel record (written only after
 * a signal), would otherwise stay allocated in the bounded requests/ until
 * the sandbox stops.
 */
static void forget(int reqdir, const char *id) {
        char cancel[ESC_ID_LEN + 8];
        struct stat st;

        (void) fstatat(reqdir, id, &st, AT_SYMLINK_NOFOLLOW);
        if (got_signal) {
                snprintf(cancel, sizeof(cancel), "%s.cancel", id);
                (void) fstatat(reqdir, cancel, &st, AT_SYMLINK_NOFOLLOW);
        }
}

/*
 * The session's result file, if it answers request id: 1 with *ret, 0 when
 * it is not there or still answers the session's previous request (ours
 * replaces it; that one may be read half emptied), else minus a
 * failure's exit status (its line printed).
 */
static int read_result(int resdir, const char *resname, const char *id, EscResult *ret) {
        EscResult res = {};
        char *buf, *error = NULL;
        size_t len;
        int r;

        r = read_file_at(resdir, resname, &buf, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return -failf("cannot read the result: %s", strerror(-r));
        r = esc_result_parse(buf, len, &res, &error);
        free(buf);
        free(error);
        /* Ours is published whole, by rename; a previous one is emptied while being replaced. */
        if (r < 0)
                return 0;
        if (!streq(res.id, id)) {
                esc_result_done(&res);
                return 0;
        }
        *ret = res;
        return 1;
}

/* Waits on the doorbell until the session's result file answers request id; returns the exit status. */
static int wait_result(int reqdir, int resdir, int bell, const char *resname, const char *id) {
        uint64_t deadline = now_ms() + 1000ULL * ((arg_timeout ?: ESC_TIMEOUT_MAX) + GRACE_SECONDS);
        EscResult res;
        int r;

        /* The result is looked for after a ring only (one open through the
         * gofer less per request): the host rings after each result of the
         * session, and the bell was open before the request went out, so the
         * ring cannot come unseen. */
        for (bool rung = false;;) {
                struct pollfd p = { .fd = bell, .events = POLLIN };
                uint64_t now;

                r = rung ? read_result(resdir, resname, id, &res) : 0;
                if (r > 0)
                        return deliver(&res);
                if (r < 0)
                        return -r;
                if (got_signal) {
                        char cancel[ESC_ID_LEN + 8];

                        snprintf(cancel, sizeof(cancel), "%s.cancel", id);
                        (void) publish(reqdir, cancel, "", 0);
                        fprintf(stderr, "lazaret-escalate: cancelled: interrupted by signal %d\n", (int) got_signal);
                        return EXIT_CANCELLED;
                }
                now = now_ms();
                if (now >= deadline) {
                        fprintf(stderr, "lazaret-escalate: timed out: no answer from the host\n");
                        return EXIT_TIMEOUT;
                }
                r = poll(&p, 1, (int) (deadline - now > 60000 ? 60000 : deadline - now));
                if (r < 0 && errno != EINTR)
                        return failf("cannot wait for the host: %s", strerror(errno));
                if (r > 0 && (p.revents & POLLIN)) {
                        char junk[256];
                        if (read(bell, junk, sizeof(junk)) < 0 && errno != EAGAIN && errno != EINTR)
                                return failf("cannot read the doorbell: %s", strerror(errno));
                        rung = true;
                } else if (r > 0 && (p.revents & (POLLHUP | POLLERR))) {
                        /* Nobody holds the doorbell any more: the session or the coordinator is gone. */
                        r = read_result(resdir, resname, id, &res);
                        if (r > 0)
                                return deliver(&res);
                        return r < 0 ? -r : failf("the host stopped answering (the session ended?)");
                }
        }
}

int main(int argc, char **argv) {
        const char *session = getenv("LAZARET_SESSION_ID"), *keyhex = getenv(ESC_ENV_SESSION_KEY),
                   *sandbox = getenv(ESC_ENV_SANDBOX_ID), *mailbox = getenv("LAZARET_MAILBOX") ?: ESC_MAILBOX_SANDBOX;
        char cwd[PATH_MAX], bellname[ESC_ID_LEN + sizeof(ESC_BELL_SUFFIX)], *rec = NULL,
                credname[ESC_ID_LEN + sizeof(ESC_CRED_SUFFIX)], resname[ESC_ID_LEN + sizeof(ESC_RESULT_SUFFIX)],
                *cred = NULL;
        uint8_t key[ESC_KEY_LEN];
        EscRequest q = {};
        size_t len;
        struct timespec ts;
        struct sigaction sa = { .sa_handler = on_signal };
        int reqdir, resdir, trustdir, bell, r;

        r = parse_args(argc, argv);
        if (r >= 0)
                return r;
        if (!session || !keyhex || !sandbox)
                return failf("not in a Lazaret session with escalation (LAZARET_SESSION_ID, %s or LAZARET_SANDBOX_ID unset)",
                             ESC_ENV_SESSION_KEY);
        if (esc_unhex(keyhex, key, sizeof(key)) < 0)
                return failf("%s is not a valid key", ESC_ENV_SESSION_KEY);
        if (!getcwd(cwd, sizeof(cwd)))
                return failf("cannot tell the working directory: %s", strerror(errno));

        {
                char path[PATH_MAX];

                snprintf(path, sizeof(path), "%s/" ESC_REQUESTS_DIR, mailbox);
                reqdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                snprintf(path, sizeof(path), "%s/" ESC_RESULTS_DIR, mailbox);
                resdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                snprintf(path, sizeof(path), "%s/" ESC_TRUST_DIR, mailbox);
                trustdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (reqdir < 0 || resdir < 0 || trustdir < 0)
                        return failf("there is no Escalation Mailbox at %s (escalation disabled?)", mailbox);
        }

        snprintf(bellname, sizeof(bellname), "%s" ESC_BELL_SUFFIX, session);
        bell = openat(resdir, bellname, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (bell < 0)
                return failf("the session's doorbell cannot be opened: %s", strerror(errno));
        /* One request of a session at a time: the session's doorbell has one reader, its result one file.
         * (A lock inside gVisor; no file of its own, which would stay in the bounded requests/.) */
        if (flock(bell, LOCK_EX) < 0)
                return failf("cannot lock the session's doorbell: %s", strerror(errno));
        snprintf(resname, sizeof(resname), "%s" ESC_RESULT_SUFFIX, session);
        /* A ring meant for an earlier request of this session only wakes us
         * once more: the result is what counts, not the ring. (Not drained
         * here: gVisor blocks in read() on an empty host FIFO even with
         * O_NONBLOCK, so it is read only after poll() said POLLIN.) */

        /* The credential, as bytes: only the host verifies it. */
        snprintf(credname, sizeof(credname), "%s" ESC_CRED_SUFFIX, session);
        r = read_file_at(trustdir, credname, &cred, &q.cred_len);
        if (r < 0)
                return failf("the session's credential cannot be read: %s", strerror(-r));
        if (q.cred_len == 0 || q.cred_len > ESC_CRED_MAX)
                return failf("the session's credential is empty or larger than %d bytes", ESC_CRED_MAX);
        q.cred = (uint8_t *) cred;
        r = esc_random_id(q.id);
        if (r < 0)
                return failf("no random bytes: %s", strerror(-r));
        snprintf(q.session, sizeof(q.session), "%s", session);
        snprintf(q.sandbox, sizeof(q.sandbox), "%s", sandbox);
        clock_gettime(CLOCK_REALTIME, &ts);
        q.time_usec = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
        q.timeout_s = arg_timeout;
        q.cwd = cwd;
        q.why = (char *) arg_why;
        q.argv = argv + optind;
        q.argc = (size_t) (argc - optind);
        r = esc_request_format(&q, key, &rec, &len);
        if (r < 0)
                return failf("the request is not valid (%s)", strerror(-r));

        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        r = publish(reqdir, q.id, rec, len);
        if (r < 0)
                return failf("cannot write the request: %s", strerror(-r));
        r = wait_result(reqdir, resdir, bell, resname, q.id);
        forget(reqdir, q.id);
        return r;
}
