/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host escalation (spec section 5.6): the mailbox, request verification and
 * routing, the decision, the host command and the result.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bus-job.h"
#include "bus-names.h"
#include "domain-store.h"
#include "escalation.h"
#include "escalation-judge.h"
#include "escalation-proto.h"
#include "escalation-spare.h"
#include "fs-util.h"
#include "json-util.h"
#include "log.h"
#include "parse-util.h"
#include "path-util.h"
#include "process.h"
#include "spawn-util.h"
#include "strv.h"
#include "test-hooks.h"
#include "trust-anchor.h"
#include "util.h"

#define SANDBOX_WORKSPACE_DIR "/workspace"
#define MAX_PENDING 32                  /* accepted, unresolved requests per Domain */
#define EDIT_MAX 4096
#define REFUSALS_LOGGED_PER_SEC 10
#define CREDENTIAL_LIFETIME_S (366ULL * 24 * 3600)  /* the CA goes with its generation long before */

typedef struct Request Request;

typedef struct Capture {
        Request *req;
        int fd;
        sd_event_source *source;
        char *buf;
        size_t len;
        bool truncated;
} Capture;

struct Request {
        Escalations *e;
        Request *next, *prev;
        EscRequest q;
        Session *session;               /* borrowed; the request goes before the session does */
        EscRequestState state;
        char **argv;                    /* what runs: the request's, or the developer's edit */
        char *program;                  /* argv[0] resolved; NULL when there is none */
        int cwd_fd;                     /* the host directory it runs in */
        char *host_cwd;
        bool edited;
        const char *decided_by;         /* "rule", "terminal" */
        sd_event_source *deadline;

        /* The prompt: the key that approves it as drawn now (0: not offered there), its edit line. */
        char approve_key;
        bool editing;
        char edit[EDIT_MAX + 1];
        size_t edit_len;

        /* The host command: a spare in a transient scope of its own (escalation-spare.h). */
        Spare *spare;
        Capture out, err;
};

typedef struct Bell {
        struct Bell *next;
        char session[ESC_ID_LEN + 1];
        int fd;                         /* the FIFO, O_RDWR: rings are never lost, opening never blocks */
} Bell;

struct Escalations {
        sd_event *event;
        sd_bus *bus;                    /* the user manager's bus, for the commands' scopes */
        char *domain_id, *profile, *workspace;
        const Config *config;
        EscalationsCallbacks cb;
        void *userdata;
        char sandbox_id[ESC_SANDBOX_ID_MAX + 1];
        TrustAnchor *trust;             /* this generation's; NULL before the sandbox is known */

        int requests_fd, results_fd, trust_fd;
        int inotify_fd;
        sd_event_source *inotify_source;

        Request *requests;
        unsigned n_requests;
        Bell *bells;
        Spare *spare;                   /* for the next approved command, while a session is open */

        EscSeen seen;                   /* request IDs, against replay */

        uint64_t refusal_sec;
        unsigned refusals;
};

static void request_prompt(Request *r);
static void session_next_prompt(Escalations *e, Session *s);
static int request_decide(Request *r, EscDecision d, char **argv, const char *by);
static void spare_prepare(Escalations *e);

/* ----------------------------------------------------------------- audit */

static uint64_t now_realtime_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}


/* One event of the audit trail; argv NULL: the request's. */
typedef struct AuditRow {
        char *const *argv;
        const char *event, *by, *outcome;
        int status;
        const char *detail;
} AuditRow;

#define AUDIT_ROWS_MAX 2

/*
 * One row per event of a request in the Domain Store's escalation_events
 * (the audit trail, SR-10): what was asked, what was decided, by whom, and
 * how it ended. The store is in the Domain Root, which is never mounted
 * into the sandbox, and only the coordinator opens it for writing. Each
 * event also gets one journal line with DOMAIN_ID, SESSION_ID and
 * ESCALATION_AUDIT_MESSAGE_ID (refusals are logged, rate-limited, by refuse()).
 * Events that happen together (a request and its approval by a rule) are
 * handed over together. The owner writes them (cb.audit, audit.h): nothing here
 * waits for the store.
 */
static void audit_rows(Escalations *e, const EscRequest *q, const AuditRow *rows, size_t n) {
        char *argv_json[AUDIT_ROWS_MAX] = {};
        EscalationEvent ev[AUDIT_ROWS_MAX];
        uint64_t now = now_realtime_usec();

        assert(n > 0 && n <= AUDIT_ROWS_MAX);
        for (size_t i = 0; i < n; i++) {
                ev[i] = (EscalationEvent) {
                        .time_usec = now,
                        .event = rows[i].event,
                        .by = rows[i].by,
                        .outcome = rows[i].outcome,
                        .status = rows[i].status,
                        .detail = rows[i].detail,
                };
                if (q) {
                        _cleanup_(json_object_putp) json_object *a = json_object_new_array();
                        int k = 0;
                        /* Every argument, UTF-8 or not (json_new_bytes()): the record never loses one. */
                        for (char *const *x = rows[i].argv ?: q->argv; a && *x && k >= 0; x++)
                                k = json_append_bytes(a, *x);
                        if (a && k >= 0)
                                (void) json_to_string(a, JSON_C_TO_STRING_PLAIN, &argv_json[i]);
                        ev[i].request = q->id;
                        ev[i].session = q->session;
                        ev[i].argv_json = argv_json[i];
                        ev[i].cwd = q->cwd;
                        ev[i].why = q->why;
                }
                if (!streq(rows[i].event, "refused"))
                        log_session_id(LOG_INFO, q ? q->session : NULL, ESCALATION_AUDIT_MESSAGE_ID,
                                       "Escalation request %s: %s%s%s%s%s", q ? q->id : "-", rows[i].event,
                                       rows[i].by ? " by " : "", strempty(rows[i].by), rows[i].outcome ? ", " : "",
                                       strempty(rows[i].outcome));
        }
        if (e->cb.audit)
                e->cb.audit(ev, n, e->userdata);
        for (size_t i = 0; i < n; i++)
                free(argv_json[i]);
}

static void audit(Escalations *e, const EscRequest *q, char *const *argv, const char *event, const char *by,
                  const char *outcome, int status, const char *detail) {
        audit_rows(e, q,
                   &(AuditRow) { .argv = argv, .event = event, .by = by, .outcome = outcome, .status = status, .detail = detail },
                   1);
}

/* A refused record: logged (rate-limited against a flood) and audited; nothing else happens. */
_printf_(4, 5) static int refuse(Escalations *e, const char *name, const EscRequest *q, const char *fmt, ...) {
        _cleanup_free_ char *why = NULL, *safe = NULL;
        uint64_t sec = now_realtime_usec() / 1000000;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&why, fmt, ap) < 0)
                why = NULL;
        va_end(ap);
        safe = escape_control(why ?: "out of memory");
        if (sec != e->refusal_sec) {
                if (e->refusals > REFUSALS_LOGGED_PER_SEC)
                        log_warning("%u more escalation requests were refused in that second", e->refusals - REFUSALS_LOGGED_PER_SEC);
                e->refusal_sec = sec;
                e->refusals = 0;
        }
        /* A flood costs neither the journal nor the store more than this many per second. */
        if (e->refusals++ >= REFUSALS_LOGGED_PER_SEC)
                return 0;
        log_session_id(LOG_WARNING, q && q->session[0] ? q->session : NULL, ESCALATION_AUDIT_MESSAGE_ID,
                       "Escalation request %s refused: %s", name, strna(safe));
        audit(e, q && q->argv ? q : NULL, NULL, "refused", NULL, NULL, 0, safe);
        return 0;
}

/* ----------------------------------------------------------------- bells */

static Bell *bell_find(Escalations *e, const char *session) {
        for (Bell *b = e->bells; b; b = b->next)
                if (streq(b->session, session))
                        return b;
        return NULL;
}

static void bell_ring(Escalations *e, const char *session) {
        Bell *b = bell_find(e, session);

        /* A full FIFO already wakes its reader: EAGAIN loses nothing. */
        if (b && write(b->fd, "!", 1) < 0 && errno != EAGAIN)
                log_session(LOG_WARNING, session, "Cannot ring the session's escalation doorbell: %m");
}

/*
 * Empties a file of the mailbox before it is removed or replaced: gVisor
 * keeps a host descriptor for each file it looked at, after the host
 * removed it, until a lookup of that name inside finds it gone, so its
 * pages would stay allocated in the bounded file system meanwhile.
 */
static int empty_file(int dirfd, const char *name) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADF;
        return ftruncate(fd, 0) < 0 ? -errno : 0;
}

static TrustBinding session_binding(Escalations *e, const char *session) {
        return (TrustBinding) {
                .role = TRUST_ROLE_SESSION,
                .profile = e->profile,
                .domain = e->domain_id,
                .generation = e->sandbox_id,
                .component = session,
        };
}

/*
 * The session's credential (SR-9): its Session Anchor public key bound by
 * this generation's Trust Anchor to (session role, profile, Domain,
 * generation, session), in trust/<id>.cred, which the sandbox reads
 * through a read-only bind of the in-memory runtime directory.
 */
static int credential_publish(Escalations *e, Session *s) {
        const TrustBinding b = session_binding(e, s->id);
        _cleanup_free_ uint8_t *cred = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = -EBADF;
        char name[ESC_ID_LEN + sizeof(ESC_CRED_SUFFIX)], tmp[sizeof(name) + 8];
        size_t len;
        int k;

        if (!e->trust)
                return -ESRCH;
        k = trust_anchor_issue(e->trust, &b, s->anchor_pub, CREDENTIAL_LIFETIME_S, &cred, &len, &error);
        if (k < 0) {
                log_session(LOG_ERR, s->id, "Cannot issue the session's credential: %s", strna(error));
                return k;
        }
        snprintf(name, sizeof(name), "%s" ESC_CRED_SUFFIX, s->id);
        snprintf(tmp, sizeof(tmp), ".tmp-%s", name);
        fd = openat(e->trust_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write_all(fd, (const char *) cred, len) < 0 || renameat(e->trust_fd, tmp, e->trust_fd, name) < 0) {
                k = -errno;
                (void) unlinkat(e->trust_fd, tmp, 0);
                return k;
        }
        return 0;
}

/* Removes what a session has in the mailbox (its files emptied first: see empty_file()). */
static void session_names_remove(Escalations *e, const char *session) {
        char name[ESC_ID_LEN + sizeof(ESC_RESULT_SUFFIX)], cred[ESC_ID_LEN + sizeof(ESC_CRED_SUFFIX)];

        snprintf(cred, sizeof(cred), "%s" ESC_CRED_SUFFIX, session);
        (void) empty_file(e->trust_fd, cred);
        (void) unlinkat(e->trust_fd, cred, 0);
        snprintf(name, sizeof(name), "%s" ESC_BELL_SUFFIX, session);
        (void) unlinkat(e->results_fd, name, 0);
        snprintf(name, sizeof(name), "%s" ESC_RESULT_SUFFIX, session);
        (void) empty_file(e->results_fd, name);
        (void) unlinkat(e->results_fd, name, 0);
}

/*
 * The names one more session needs free (escalation-proto.h): its three,
 * and one for the replacement of its result and of each open session's,
 * which a result being written takes for a while. session_room(): whether
 * they are free; -ENOSPC: no.
 */
static uint64_t session_need(Escalations *e) {
        uint64_t need = ESC_SESSION_NAMES + 1;

        for (Bell *b = e->bells; b; b = b->next)
                need++;
        return need;
}

static int session_room(Escalations *e) {
        struct statvfs sv;

        if (fstatvfs(e->results_fd, &sv) < 0)
                return -errno;
        return sv.f_ffree >= session_need(e) ? 0 : -ENOSPC;
}

/* The session's result file, empty until its first result replaces it: its name is the session's from the start. */
static int result_reserve(Escalations *e, const char *session) {
        char name[ESC_ID_LEN + sizeof(ESC_RESULT_SUFFIX)];
        int fd;

        snprintf(name, sizeof(name), "%s" ESC_RESULT_SUFFIX, session);
        fd = openat(e->results_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        safe_close(fd);
        return 0;
}

#if ENABLE_TEST_HOOKS
/*
 * A test hook (test builds only, test-hooks.h): LAZARET_TEST_MAILBOX_DELAY
 * in the coordinator's environment, milliseconds (1 to 5000) for which a
 * session's mailbox names wait before they are made. It holds the loop on
 * purpose: it stands for the coordinator's thread descheduled on a loaded
 * machine between two steps of one handler, which no timer can imitate, and
 * which is what let a command run before its names existed.
 * test-mailbox-limit.sh checks that a command escalating as its first act
 * still finds them (they are made before it starts). Never in a product
 * build, where nothing waits in the loop.
 */
static void mailbox_delay(void) {
        const char *v = getenv("LAZARET_TEST_MAILBOX_DELAY");
        int ms;

        if (!v)
                return;
        if (parse_int(v, 1, 5000, &ms) < 0) {
                log_warning("LAZARET_TEST_MAILBOX_DELAY is not a number of milliseconds from 1 to 5000; not delayed");
                return;
        }
        log_warning("Test fault in effect: a session's mailbox names wait %d ms", ms);
        (void) usleep((useconds_t) ms * 1000);
}
#endif

int escalations_session_opened(Escalations *e, Session *s) {
        _cleanup_free_ Bell *b = NULL;
        char name[ESC_ID_LEN + sizeof(ESC_BELL_SUFFIX)];
        int k;

        if (!e)
                return 0;
#if ENABLE_TEST_HOOKS
        mailbox_delay();
#endif
        k = session_room(e);
        if (k < 0)
                return k;
        b = calloc(1, sizeof(Bell));
        if (!b)
                return -ENOMEM;
        b->fd = -EBADF;
        snprintf(b->session, sizeof(b->session), "%s", s->id);
        snprintf(name, sizeof(name), "%s" ESC_BELL_SUFFIX, s->id);
        k = credential_publish(e, s);
        if (k >= 0)
                k = result_reserve(e, s->id);
        if (k >= 0) {
                (void) unlinkat(e->results_fd, name, 0);
                k = mkfifoat(e->results_fd, name, 0600) < 0 ? -errno : 0;
        }
        if (k >= 0) {
                b->fd = openat(e->results_fd, name, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
                k = b->fd < 0 ? -errno : 0;
        }
        if (k < 0) {
                /* Nothing of a session that did not open stays behind (gVisor never saw it). */
                session_names_remove(e, s->id);
                return k;
        }
        b->next = e->bells;
        e->bells = TAKE_PTR(b);
        spare_prepare(e);
        return 0;
}

/* ------------------------------------------------------------- requests */

static void capture_done(Capture *c) {
        c->source = sd_event_source_disable_unref(c->source);
        c->fd = safe_close(c->fd);
        c->buf = mfree(c->buf);
}

static Request *request_free(Request *r) {
        Escalations *e;

        if (!r)
                return NULL;
        e = r->e;
        if (e->cb.resolved)
                e->cb.resolved(r->q.id, e->userdata);
        if (r->prev)
                r->prev->next = r->next;
        else if (e->requests == r)
                e->requests = r->next;
        if (r->next)
                r->next->prev = r->prev;
        e->n_requests--;
        sd_event_source_disable_unref(r->deadline);
        /* A command still running is killed, with its process group, and its scope with all it started (OR-3). */
        spare_free(r->spare);
        capture_done(&r->out);
        capture_done(&r->err);
        safe_close(r->cwd_fd);
        free(r->host_cwd);
        free(r->program);
        strv_free(r->argv);
        esc_request_done(&r->q);
        free(r);
        return NULL;
}

/*
 * The session's result file, results/<session>.result, replaced by rename
 * (the client waits for the one that carries its request's ID): 0, or
 * -errno (the temporary file removed).
 */
static int result_write(Escalations *e, const char *session, const char *id, const EscResult *res) {
        _cleanup_free_ char *buf = NULL, *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        char name[ESC_ID_LEN + sizeof(ESC_RESULT_SUFFIX)];
        size_t len;
        int k;

        k = esc_result_format(res, &buf, &len);
        if (k < 0)
                return k;
        if (asprintf(&tmp, ".tmp-%s", id) < 0)
                return -ENOMEM;
        snprintf(name, sizeof(name), "%s" ESC_RESULT_SUFFIX, session);
        /* The previous result was read (one request of a session waits at a time): its space goes first. */
        (void) empty_file(e->results_fd, name);
        fd = openat(e->results_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        k = write_all(fd, buf, len);
        if (k >= 0 && renameat(e->results_fd, tmp, e->results_fd, name) < 0)
                k = -errno;
        if (k < 0)
                (void) unlinkat(e->results_fd, tmp, 0);
        return k;
}

static void result_publish(Escalations *e, Request *r, const EscResult *res) {
        int k;

        k = result_write(e, r->q.session, r->q.id, res);
        if (k < 0) {
                log_errno_session(LOG_ERR, k, r->q.session, "Cannot write the result of escalation request %s", r->q.id);
                return;
        }
        bell_ring(e, r->q.session);
}

/*
 * The one result of an accepted request (spec 5.6 step 5): whichever of
 * completion, denial, deadline and cancellation comes first ends the
 * request here, and it is freed, so nothing later can answer it again.
 */
static void request_finish(Request *r, EscOutcome outcome, int status, const char *message) {
        Escalations *e = r->e;
        Session *s = r->session;
        bool prompting = r->state == ESC_REQUEST_PROMPTING;
        char text[ESC_MESSAGE_MAX + 1];
        EscResult res = {
                .outcome = outcome,
                .status = status,
                .message = text,
        };

        /* A message naming a long program path must not cost the result. */
        snprintf(text, sizeof(text), "%s", strempty(message));

        memcpy(res.id, r->q.id, sizeof(res.id));
        if (outcome == ESC_COMPLETED) {
                res.out = r->out.buf;
                res.out_len = r->out.len;
                res.err = r->err.buf;
                res.err_len = r->err.len;
        }
        result_publish(e, r, &res);
        log_session(LOG_INFO, r->q.session, "Escalation request %s: %s%s%s (status %d)", r->q.id,
                    esc_outcome_to_string(outcome), message && *message ? ": " : "", strempty(message), status);
        audit(e, &r->q, r->argv, "result", r->decided_by, esc_outcome_to_string(outcome), status, message);
        if (prompting && s) {
                _cleanup_free_ char *line = NULL;
                if (asprintf(&line, "\r\n[lazaret] Request %.8s: %s%s%s\r\n", r->q.id, esc_outcome_to_string(outcome),
                             message && *message ? ", " : "", strempty(message)) < 0)
                        line = NULL;
                session_prompt_end(s, line ?: "\r\n");
        }
        request_free(r);
        if (prompting && s)
                session_next_prompt(e, s);
}

static int on_deadline(sd_event_source *src, uint64_t usec, void *userdata) {
        Request *r = userdata;

        (void) request_decide(r, ESC_DECIDE_EXPIRE, NULL, NULL);
        return 0;
}

/* ---------------------------------------------------------- the command */

static int on_capture(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Capture *c = userdata;

        for (;;) {
                char b[16384];
                ssize_t k = read(c->fd, b, sizeof(b));
                size_t take;

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && errno == EAGAIN)
                        return 0;
                if (k <= 0) {
                        c->source = sd_event_source_disable_unref(c->source);
                        c->fd = safe_close(c->fd);
                        return 0;
                }
                /* Bounded: what goes beyond the limit is read and dropped. */
                take = c->len + (size_t) k > ESC_OUTPUT_MAX ? ESC_OUTPUT_MAX - c->len : (size_t) k;
                if (take < (size_t) k)
                        c->truncated = true;
                memcpy(c->buf + c->len, b, take);
                c->len += take;
        }
}

static void on_command_exited(Spare *sp, int status, void *userdata) {
        Request *r = userdata;
        const char *note = NULL;

        /* What it printed before it exited; a descendant that keeps the pipe open is not waited for. */
        if (r->out.fd >= 0)
                (void) on_capture(NULL, r->out.fd, EPOLLIN, &r->out);
        if (r->err.fd >= 0)
                (void) on_capture(NULL, r->err.fd, EPOLLIN, &r->err);
        if (r->out.truncated || r->err.truncated)
                note = "output beyond 256 KiB per stream was dropped";
        request_finish(r, ESC_COMPLETED, status > 255 ? 255 : status, note);
}

static void on_command_failed(Spare *sp, const char *why, void *userdata) {
        Request *r = userdata;

        log_session(LOG_ERR, r->q.session, "Escalation request %s: %s", r->q.id, why);
        request_finish(r, ESC_FAILED, 0, why);
}

static void on_command_started(Spare *sp, void *userdata) {
        Request *r = userdata;

        log_session(LOG_INFO, r->q.session, "Escalation request %s: %s runs as pid %d in %s", r->q.id, r->program,
                    (int) spare_pid(sp), strna(spare_scope(sp)));
}

static const SpareCallbacks command_callbacks = {
        .failed = on_command_failed,
        .exited = on_command_exited,
        .started = on_command_started,
};

static int capture_start(Request *r, Capture *c, int *ret_write_end) {
        int p[2];

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        c->req = r;
        c->fd = p[0];
        *ret_write_end = p[1];
        (void) fcntl(c->fd, F_SETFL, O_NONBLOCK);
        c->buf = malloc(ESC_OUTPUT_MAX);
        if (!c->buf)
                return -ENOMEM;
        return sd_event_add_io(r->e->event, &c->source, c->fd, EPOLLIN, on_capture, c);
}

/* A sanitised environment: the host command does not get the coordinator's. */
static char **command_env(void) {
        static const char *const keep[] = { "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "XDG_RUNTIME_DIR", NULL };
        char **env = NULL;

        if (strv_extend(&env, "PATH=/usr/local/bin:/usr/bin:/bin") < 0)
                return strv_free(env);
        for (size_t i = 0; keep[i]; i++) {
                const char *v = getenv(keep[i]);
                if (v && strv_extendf(&env, "%s=%s", keep[i], v) < 0)
                        return strv_free(env);
        }
        return env;
}

/* An idle spare is the Domain's; one that fails or ends is let go (the next request makes another). */
static void on_spare_failed(Spare *sp, const char *why, void *userdata) {
        Escalations *e = userdata;

        log_warning("The spare for host commands failed: %s", why);
        e->spare = spare_free(e->spare);
}

static void on_spare_exited(Spare *sp, int status, void *userdata) {
        Escalations *e = userdata;

        log_warning("The spare for host commands ended (status %d) before it was needed", status);
        e->spare = spare_free(e->spare);
}

static int spare_start(Escalations *e, Spare **ret) {
        _cleanup_strv_free_ char **env = command_env();

        if (!env)
                return -ENOMEM;
        return spare_new(&(SpareParams) {
                                 .event = e->event,
                                 .bus = e->bus,
                                 .domain_id = e->domain_id,
                                 .envp = env,
                                 .cb = { .failed = on_spare_failed, .exited = on_spare_exited },
                                 .userdata = e,
                         },
                         ret);
}

/*
 * One spare, made ahead of the next approved command while a session can
 * ask for one (spec 5.6 step 4): when a session opens, and after each
 * command takes the spare there was.
 */
static void spare_prepare(Escalations *e) {
        int k;

        if (e->spare || !e->bells)
                return;
        k = spare_start(e, &e->spare);
        if (k < 0)
                log_warning_errno(k, "Cannot prepare a spare for host commands (the next one is started when needed): %m");
}

/*
 * execve of the approved argv (spec 5.6 step 4): never a shell, never a
 * PATH lookup the prompt did not show; in a transient scope of its own on
 * the user manager, so it can be seen and stopped. The command takes the
 * Domain's spare (or one made now), which execs it as soon as its scope
 * holds it (at once, for a spare made ahead of time), and a new spare is
 * prepared for the next request.
 */
static void request_run(Request *r, const char *by, bool requested_too) {
        const AuditRow rows[] = {
                { .event = "requested" },
                { .argv = r->argv, .event = "approved", .by = by, .detail = r->edited ? "edited by the developer" : NULL },
        };
        _cleanup_close_ int out_w = -EBADF, err_w = -EBADF;
        _cleanup_(spare_freep) Spare *spare = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *program = NULL;
        int k;

        r->decided_by = by;
        /* Recorded before the command can run. */
        audit_rows(r->e, &r->q, requested_too ? rows : rows + 1, requested_too ? 2 : 1);
        if (!r->program) {
                request_finish(r, ESC_FAILED, 0, "no such program on the host");
                return;
        }
        /* Its argv[0] is the program it runs, as the prompt showed it resolved. */
        argv = strv_copy(r->argv);
        program = strdup(r->program);
        if (!argv || !program) {
                request_finish(r, ESC_FAILED, 0, "out of memory");
                return;
        }
        free(argv[0]);
        argv[0] = TAKE_PTR(program);
        k = capture_start(r, &r->out, &out_w);
        if (k >= 0)
                k = capture_start(r, &r->err, &err_w);
        if (k < 0) {
                request_finish(r, ESC_FAILED, 0, "cannot capture the command's output");
                return;
        }
        spare = TAKE_PTR(r->e->spare);
        if (!spare) {
                k = spare_start(r->e, &spare);
                if (k < 0) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg, "cannot start %s on the host: %s", r->program, strerror(-k)) < 0)
                                msg = NULL;
                        request_finish(r, ESC_FAILED, 0, msg ?: "cannot run the command on the host");
                        return;
                }
        }
        spare_set_callbacks(spare, &command_callbacks, r);
        /* A failed execve ends the spare with a status of its own (127), reported as completed. */
        k = spare_run(spare, r->program, argv, r->cwd_fd, TAKE_FD(out_w), TAKE_FD(err_w));
        if (k < 0) {
                request_finish(r, ESC_FAILED, 0, "cannot hand the command to its spare");
                return;
        }
        r->spare = TAKE_PTR(spare);
        r->state = ESC_REQUEST_RUNNING;
        {
                _cleanup_free_ char *shown = esc_string_to_display(r->program);
                log_session(LOG_INFO, r->q.session, "Escalation request %s approved (%s): running %s", r->q.id, by,
                            strna(shown));
        }
        if (k > 0)
                on_command_started(r->spare, r);
        spare_prepare(r->e);
}

/* ---------------------------------------------------------- the prompt */

/* The texts a prompt shows, escaped for display; freed together. */
typedef struct PromptTexts {
        char *argv, *why, *cwd, *prog, *profile, *title;
} PromptTexts;

static void prompt_texts_done(PromptTexts *t) {
        free(t->argv);
        free(t->why);
        free(t->cwd);
        free(t->prog);
        free(t->profile);
        free(t->title);
}

/* The request as a prompt (term-prompt.h): the command is the subject, the line the approve key is printed on. */
static int prompt_build(Request *r, PromptTexts *t, TermPrompt *p) {
        _cleanup_free_ char *cwd = esc_string_to_display(r->q.cwd), *host = esc_string_to_display(r->host_cwd);

        *t = (PromptTexts) {
                .argv = esc_argv_to_display(r->argv),
                .why = r->q.why[0] ? esc_string_to_display(r->q.why) : strdup("(none given)"),
                .prog = r->program ? esc_string_to_display(r->program) : strdup("(not found on the host)"),
                .profile = esc_string_to_display(r->e->profile),
                .title = strdup(r->edited ? "The sandbox asks to run a command on the host (as edited)"
                                          : "The sandbox asks to run a command on the host"),
        };
        if (cwd && host && asprintf(&t->cwd, "%s (host: %s)", cwd, host) < 0)
                t->cwd = NULL;
        if (!t->argv || !t->why || !t->prog || !t->profile || !t->title || !t->cwd) {
                prompt_texts_done(t);
                return -ENOMEM;
        }
        *p = (TermPrompt) {
                .title = t->title,
                .fields = {
                        { "Profile:", t->profile },
                        { "Session:", r->q.session },
                        { "Request:", r->q.id },
                        { "Program:", t->prog },
                        { "Directory:", t->cwd },
                        { "Why:", t->why },
                        { "Command:", t->argv },
                },
                .n_fields = 7,
                .subject = 6,
                .approve_label = "run it",
                .keys = { { 'd', "deny" }, { 'e', "edit" }, { 'r', "redraw" }, { 'q', "abort the session" } },
                .n_keys = 4,
                .too_long = "The command does not fit this window: decide with 'lazaretctl escalations approve|deny ID',"
                            " or enlarge the window and press r.",
        };
        return 0;
}

static int resolve_program(const char *argv0, char **ret) {
        if (argv0[0] == '/') {
                struct stat st;
                /* Absolute: that file, as named (its symlinks are the host's own). */
                if (stat(argv0, &st) < 0 || !S_ISREG(st.st_mode) || access(argv0, X_OK) < 0)
                        return -ENOENT;
                *ret = strdup(argv0);
                return *ret ? 0 : -ENOMEM;
        }
        if (strchr(argv0, '/'))
                return -ENOENT;         /* relative paths mean nothing on the host */
        return find_program(argv0, ret);
}

/* An edit by the developer (the prompt's 'e', or one sent with a decision): what runs from now on. argv is taken. */
static void request_set_argv(Request *r, char **argv) {
        _cleanup_free_ char *program = NULL;

        (void) resolve_program(argv[0], &program);
        strv_free(r->argv);
        r->argv = argv;
        free(r->program);
        r->program = TAKE_PTR(program);
        r->edited = true;
}

static void prompt_redraw(Request *r) {
        _cleanup_(prompt_texts_done) PromptTexts t = {};
        TermPrompt p;

        r->approve_key = 0;
        if (prompt_build(r, &t, &p) < 0 || session_prompt_redraw(r->session, &p, &r->approve_key) < 0)
                session_prompt_write(r->session, "\r\n[lazaret] (out of memory: the prompt cannot be drawn) [d/q]: ");
}

static void on_edit_key(Request *r, unsigned char c) {
        char echo[2] = { (char) c, 0 };
        _cleanup_strv_free_ char **words = NULL;

        if (c == 0x03 || c == 0x07) {   /* ^C, ^G: leave the edit */
                r->editing = false;
                prompt_redraw(r);
                return;
        }
        if (c == 0x7f || c == 0x08) {
                if (r->edit_len > 0) {
                        r->edit[--r->edit_len] = 0;
                        session_prompt_write(r->session, "\b \b");
                }
                return;
        }
        if (c != '\r' && c != '\n') {
                /* Printable ASCII and UTF-8 bytes only; no control byte reaches the line. */
                if ((c >= 0x20 && c != 0x7f) && r->edit_len < EDIT_MAX) {
                        r->edit[r->edit_len++] = (char) c;
                        r->edit[r->edit_len] = 0;
                        session_prompt_write(r->session, echo);
                }
                return;
        }
        r->editing = false;
        if (r->edit_len == 0) {
                prompt_redraw(r);
                return;
        }
        if (esc_words_parse(r->edit, &words) < 0) {
                session_prompt_write(r->session, "\r\n[lazaret] Not a valid command (an unterminated quote?); unchanged.");
                prompt_redraw(r);
                return;
        }
        request_set_argv(r, TAKE_PTR(words));
        /* Shown again whole, and confirmed with another key. */
        prompt_redraw(r);
}

static void on_prompt_key(Session *s, unsigned char c, void *userdata) {
        Request *r = userdata;

        if (r->editing) {
                on_edit_key(r, c);
                return;
        }
        if (r->approve_key && c == (unsigned char) r->approve_key) {
                char echo[] = { (char) c, 0 };
                session_prompt_write(s, echo);
                (void) request_decide(r, ESC_DECIDE_APPROVE, NULL, ESC_BY_TERMINAL);
                return;
        }
        switch (c) {
        case 'r':
        case 'R':
                prompt_redraw(r);
                break;
        case 'd':
        case 'D':
                (void) request_decide(r, ESC_DECIDE_DENY, NULL, ESC_BY_TERMINAL);
                break;
        case 'e':
        case 'E':
                r->editing = true;
                r->edit_len = 0;
                r->edit[0] = 0;
                session_prompt_write(s, "e\r\n[lazaret] New command (words; '...' and \"...\" quote, \\ escapes; Enter "
                                        "ends, ^C leaves):\r\n> ");
                break;
        case 'q':
        case 'Q':
                (void) request_decide(r, ESC_DECIDE_ABORT, NULL, ESC_BY_TERMINAL);
                break;
        default:
                break;          /* every other key means nothing here */
        }
}

static void request_prompt(Request *r) {
        _cleanup_(prompt_texts_done) PromptTexts t = {};
        TermPrompt p;
        int k;

        if (prompt_build(r, &t, &p) < 0) {
                request_finish(r, ESC_FAILED, 0, "out of memory");
                return;
        }
        k = session_prompt_begin(r->session, &p, on_prompt_key, r, &r->approve_key);
        if (k == -EBUSY)
                return;         /* another request of this session is on screen; this one follows */
        if (k < 0) {
                log_session(LOG_NOTICE, r->q.session,
                            "Escalation request %s waits: its session has no terminal to ask on (it times out)", r->q.id);
                return;
        }
        r->state = ESC_REQUEST_PROMPTING;
}

/* The oldest waiting request of s, if its terminal is free. */
static void session_next_prompt(Escalations *e, Session *s) {
        Request *oldest = NULL;

        if (!e || !s || s->prompting)
                return;
        for (Request *r = e->requests; r; r = r->next)
                if (r->session == s && r->state == ESC_REQUEST_WAITING)
                        oldest = r;     /* the list is newest first */
        if (oldest)
                request_prompt(oldest);
}

/* ------------------------------------------------------------- decisions */

/* SR-8 (escalation-judge.h): the rule that approves the request as it came, judged by what its program resolves to now. */
static const AutoApproveRule *rule_match(Escalations *e, Request *r) {
        _cleanup_free_ char *real = r->argv[0][0] == '/' ? realpath(r->argv[0], NULL) : NULL;

        return esc_rule_match(e->config->auto_approve, e->config->n_auto_approve, r->argv, real);
}

/* The request's directory beneath the host workspace, without following a symlink; else the workspace itself. */
static int map_cwd(Escalations *e, const char *cwd, int *ret_fd, char **ret_path) {
        _cleanup_close_ int ws = open(e->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
        const char *rest = streq(cwd, SANDBOX_WORKSPACE_DIR) ? "" : startswith(cwd, SANDBOX_WORKSPACE_DIR "/");
        int fd;

        if (ws < 0)
                return -errno;
        if (!rest || !*rest || path_has_dotdot(rest)) {
                *ret_path = strdup(e->workspace);
                if (!*ret_path)
                        return -ENOMEM;
                *ret_fd = TAKE_FD(ws);
                return 0;
        }
        fd = openat_beneath(ws, rest, O_PATH | O_DIRECTORY, 0, false);
        if (fd < 0)
                return fd;
        *ret_path = path_join(e->workspace, rest);
        if (!*ret_path) {
                safe_close(fd);
                return -ENOMEM;
        }
        *ret_fd = fd;
        return 0;
}

/* Before it could be decided: its request event, then its one result. */
static void request_fail_early(Request *r, const char *why) {
        audit(r->e, &r->q, NULL, "requested", NULL, NULL, 0, NULL);
        request_finish(r, ESC_FAILED, 0, why);
}

static void request_accept(Escalations *e, EscRequest *q, Session *s) {
        Request *r = calloc(1, sizeof(Request));
        unsigned timeout = e->config->escalation_timeout_s;
        const AutoApproveRule *rule;
        int k;

        if (!r) {
                esc_request_done(q);
                return;
        }
        r->e = e;
        r->q = *q;
        *q = (EscRequest) {};
        r->session = s;
        r->cwd_fd = -EBADF;
        r->out.fd = r->err.fd = -EBADF;
        r->next = e->requests;
        if (e->requests)
                e->requests->prev = r;
        e->requests = r;
        e->n_requests++;

        {
                _cleanup_free_ char *shown = esc_string_to_display(r->q.argv[0]);
                log_session(LOG_INFO, r->q.session, "Escalation request %s accepted: %s", r->q.id, strna(shown));
        }
        /* Its "requested" event is recorded with its decision by a rule, in one transaction, or alone before
         * anything else happens to it. */
        r->argv = strv_copy(r->q.argv);
        if (!r->argv) {
                request_fail_early(r, "out of memory");
                return;
        }
        (void) resolve_program(r->argv[0], &r->program);
        k = map_cwd(e, r->q.cwd, &r->cwd_fd, &r->host_cwd);
        if (k < 0) {
                request_fail_early(r, "the working directory does not exist on the host (or passes a symlink)");
                return;
        }
        if (r->q.timeout_s > 0 && r->q.timeout_s < timeout)
                timeout = r->q.timeout_s;
        k = sd_event_add_time_relative(e->event, &r->deadline, CLOCK_MONOTONIC, (uint64_t) timeout * 1000000ULL, 0,
                                       on_deadline, r);
        if (k < 0) {
                request_fail_early(r, "cannot set the request's deadline");
                return;
        }
        rule = rule_match(e, r);
        if (rule) {
                request_run(r, "rule", true);
                return;
        }
        audit(e, &r->q, NULL, "requested", NULL, NULL, 0, NULL);
        if (e->cb.pending)
                e->cb.pending(r->q.id, r->q.session, r->argv, r->q.why, e->userdata);
        request_prompt(r);
}

int escalations_list(Escalations *e, EscalationVisit fn, void *userdata) {
        if (!e)
                return 0;
        for (Request *r = e->requests; r; r = r->next) {
                int k = fn(r->q.id, r->q.session, esc_request_state_to_string(r->state), r->q.why, r->argv, r->q.cwd, userdata);
                if (k < 0)
                        return k;
        }
        return 0;
}

/*
 * The one way a request is decided, whoever relays it: the prompt's keys
 * (ESC_BY_TERMINAL: approve, deny, abort), DecideEscalation and lazaretctl
 * (ESC_BY_BUS), a notification's action (ESC_BY_NOTIFICATION), and its
 * deadline (ESC_DECIDE_EXPIRE). What each does is esc_decide()'s table;
 * this carries it out. argv, when not NULL, is an edit that replaces the
 * request's vector first.
 */
static int request_decide(Request *r, EscDecision d, char **argv, const char *by) {
        Escalations *e = r->e;
        Session *s = r->session;
        EscStep step;
        int k;

        k = esc_decide(r->state, d, by, &step);
        if (k < 0)
                return k;
        if (argv) {
                char **copy = strv_copy(argv);
                if (!copy)
                        return -ENOMEM;
                request_set_argv(r, copy);
        }
        if (!step.run) {
                if (by)
                        r->decided_by = by;
                if (step.event)
                        audit(e, &r->q, r->argv, step.event, by, NULL, 0, step.detail);
                /* Its prompt, if it is up, goes with its result; the session's next request may ask. */
                request_finish(r, step.outcome, 0, step.message);
                if (step.abort_session)
                        e->cb.abort_session(s, e->userdata);
                return 0;
        }
        /* The first decision wins: the prompt for it goes. */
        if (step.end_prompt && s) {
                _cleanup_free_ char *line = NULL;
                if (step.say_who && asprintf(&line, "\r\n[lazaret] Request %.8s was approved from %s.\r\n", r->q.id, by) < 0)
                        line = NULL;
                session_prompt_end(s, line ?: "\r\n");
        }
        r->state = ESC_REQUEST_WAITING;
        request_run(r, by, false);
        /* The terminal is free again: the next request of this session may ask. */
        if (s)
                session_next_prompt(e, s);
        return 0;
}

int escalations_decide(Escalations *e, const char *id, bool approve, char **argv, const char *by) {
        Request *r = NULL;

        for (Request *x = e ? e->requests : NULL; x; x = x->next)
                if (streq(x->q.id, id))
                        r = x;
        if (!r)
                return -ENOENT;
        return request_decide(r, approve ? ESC_DECIDE_APPROVE : ESC_DECIDE_DENY, argv, by);
}

static void request_cancel(Escalations *e, const char *id) {
        for (Request *r = e->requests; r; r = r->next)
                if (streq(r->q.id, id)) {
                        request_finish(r, ESC_CANCELLED, 0, "the Escalation Client cancelled it");
                        return;
                }
}

/*
 * A new name in requests/ (SR-10). Hostile input: opened without following
 * a link, a regular file within the size limit, read once and removed,
 * then verified and routed only by what the registry says.
 */
static int mailbox_handle(Escalations *e, const char *name) {
        _cleanup_free_ char *buf = NULL, *why = NULL;
        EscRequest q = {};
        const char *dot;
        Session *s;
        size_t len;
        int k;

        if (name[0] == '.')
                return 0;               /* the client's temporary and lock files */
        dot = strchr(name, '.');
        if (dot && streq(dot, ".cancel")) {
                _cleanup_free_ char *id = strndup(name, (size_t) (dot - name));
                (void) unlinkat(e->requests_fd, name, 0);
                if (id && esc_is_id_name(id))
                        request_cancel(e, id);
                return 0;
        }
        k = esc_mailbox_take(e->requests_fd, name, &buf, &len, &why);
        if (k == -EINVAL) {
                _cleanup_free_ char *safe_name = escape_control(name);
                return refuse(e, strna(safe_name), NULL, "%s", strna(why));
        }
        if (k < 0)
                return refuse(e, name, NULL, "%s", strna(why));
        k = esc_request_parse(buf, len, &q, &why);
        if (k < 0)
                return refuse(e, name, NULL, "malformed: %s", strna(why));
        s = e->cb.find_session(q.session, e->userdata);
        k = esc_request_check(&(EscCheck) {
                                      .name = name,
                                      .sandbox_id = e->sandbox_id,
                                      .profile = e->profile,
                                      .domain_id = e->domain_id,
                                      .trust = e->trust,
                                      .session_key = s ? s->anchor_pub : NULL,
                                      .now_usec = now_realtime_usec(),
                                      .n_pending = e->n_requests,
                                      .max_pending = MAX_PENDING,
                                      .seen = &e->seen,
                              }, buf, &q, &why);
        if (k < 0) {
                refuse(e, name, &q, "%s", strna(why));
                esc_request_done(&q);
                return 0;
        }
        /* One request of a session waits at a time (the client locks the bell): an earlier one still
         * pending lost its client, which was killed. It ends as a cancel would have ended it, and its
         * result lands before this one's in the session's one result file (spec 5.6 step 5). */
        for (Request *r = e->requests, *next; r; r = next) {
                next = r->next;
                if (r->session == s)
                        request_finish(r, ESC_CANCELLED, 0, "superseded by a later request of its session");
        }
        request_accept(e, &q, s);
        return 0;
}

static void mailbox_scan(Escalations *e) {
        _cleanup_close_ int fd = openat(e->requests_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;
        char **names = NULL;

        if (!d)
                return;
        TAKE_FD(fd);
        /* Names first: handling one removes it from the directory being read. */
        while ((de = readdir(d)) && strv_length(names) < 4 * MAX_PENDING)
                if (de->d_name[0] != '.')
                        (void) strv_extend(&names, de->d_name);
        closedir(d);
        STRV_FOREACH(n, names)
                mailbox_handle(e, *n);
        strv_free(names);
}

static int on_inotify(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Escalations *e = userdata;
        union {
                struct inotify_event ev;
                char raw[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)];
        } buf;
        bool rescan = false;
        ssize_t k = read(fd, &buf, sizeof(buf));

        if (k <= 0)
                return 0;
        for (char *p = buf.raw; p < buf.raw + k;) {
                struct inotify_event *ev = (struct inotify_event *) p;
                if (ev->mask & IN_Q_OVERFLOW)
                        rescan = true;
                else if (ev->len > 0 && memchr(ev->name, 0, ev->len))
                        (void) mailbox_handle(e, ev->name);
                p += sizeof(struct inotify_event) + ev->len;
        }
        if (rescan)
                mailbox_scan(e);
        return 0;
}

/* -------------------------------------------------------------- lifetime */

int escalations_set_sandbox(Escalations *e, const char *sandbox_id, char **ret_error) {
        _cleanup_(trust_anchor_freep) TrustAnchor *ta = NULL;
        int k;

        if (!e)
                return 0;
        /* A new generation, a new CA: every credential of the one before is worthless from now on. */
        k = trust_anchor_new(e->domain_id, sandbox_id, &ta, ret_error);
        if (k < 0)
                return k;
        trust_anchor_free(e->trust);
        e->trust = TAKE_PTR(ta);
        snprintf(e->sandbox_id, sizeof(e->sandbox_id), "%s", sandbox_id);
        return 0;
}

void escalations_session_closed(Escalations *e, Session *s) {
        Bell **bp;

        if (!e)
                return;
        for (Request *r = e->requests, *next; r; r = next) {
                next = r->next;
                if (r->session != s)
                        continue;
                /* OR-2: no result for a session that is gone; OR-3: its command stops. */
                log_session(LOG_INFO, r->q.session, "Escalation request %s ends with its session", r->q.id);
                audit(e, &r->q, r->argv, "session-ended", NULL, NULL, 0,
                      r->state == ESC_REQUEST_RUNNING ? "the host command was killed" : NULL);
                if (r->state == ESC_REQUEST_PROMPTING)
                        session_prompt_end(s, "\r\n");
                request_free(r);
        }
        for (bp = &e->bells; *bp; bp = &(*bp)->next)
                if (streq((*bp)->session, s->id)) {
                        Bell *b = *bp;

                        *bp = b->next;
                        session_names_remove(e, b->session);
                        safe_close(b->fd);
                        /* gVisor keeps the three names until a lookup inside: one is made, off the loop. */
                        if (e->cb.forget_session)
                                e->cb.forget_session(b->session, e->userdata);
                        free(b);
                        break;
                }
        /* Nobody can ask any more: no spare waits. */
        if (!e->bells)
                e->spare = spare_free(e->spare);
}

static bool names_scarce(int fd, uint64_t need) {
        struct statfs sf;

        return fd >= 0 && fstatfs(fd, &sf) >= 0 && sf.f_files > 0 &&
               (sf.f_ffree < sf.f_files / 4 || sf.f_ffree < need);
}

bool escalations_mailbox_scarce(Escalations *e) {
        uint64_t need;

        if (!e)
                return false;
        /* Room for the next session (session_room()) once two more have ended unforgotten. */
        need = session_need(e) + 2 * ESC_SESSION_NAMES;
        return names_scarce(e->results_fd, need) || names_scarce(e->trust_fd, need);
}

Escalations *escalations_free(Escalations *e) {
        if (!e)
                return NULL;
        while (e->requests)
                request_free(e->requests);
        e->spare = spare_free(e->spare);
        while (e->bells) {
                Bell *b = e->bells;
                e->bells = b->next;
                safe_close(b->fd);
                free(b);
        }
        sd_event_source_disable_unref(e->inotify_source);
        safe_close(e->inotify_fd);
        safe_close(e->requests_fd);
        safe_close(e->results_fd);
        safe_close(e->trust_fd);
        trust_anchor_free(e->trust);
        esc_seen_done(&e->seen);
        free(e->domain_id);
        free(e->profile);
        free(e->workspace);
        free(e);
        return NULL;
}

int escalations_new(const EscalationsParams *p, Escalations **ret, char **ret_error) {
        _cleanup_(escalations_freep) Escalations *e = calloc(1, sizeof(Escalations));
        char watch[64];
        int k;

        if (!e)
                return -ENOMEM;
        e->requests_fd = e->results_fd = e->trust_fd = e->inotify_fd = -EBADF;
        e->event = p->event;
        e->bus = p->bus;
        e->config = p->config;
        e->cb = p->cb;
        e->userdata = p->userdata;
        e->domain_id = strdup(p->domain_id);
        e->profile = strdup(p->profile);
        e->workspace = strdup(p->workspace);
        if (!e->domain_id || !e->profile || !e->workspace || esc_seen_init(&e->seen) < 0)
                return -ENOMEM;
        /* The supervisor made them, in a mount namespace we are not in: reached only below its descriptor. */
        e->requests_fd = openat(p->dir_fd, ESC_REQUESTS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        e->results_fd = openat(p->dir_fd, ESC_RESULTS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        e->trust_fd = openat(p->dir_fd, ESC_TRUST_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (e->requests_fd < 0 || e->results_fd < 0 || e->trust_fd < 0)
                return errorf(ret_error, -errno, "cannot open the Escalation Mailbox: %m");
        e->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (e->inotify_fd < 0)
                return errorf(ret_error, -errno, "cannot watch the Escalation Mailbox: %m");
        /* Records arrive by rename; a file still being written is never read. The directory is named by our
         * own descriptor (a magic link, followed to the inode itself: inotify watches inodes, whatever the
         * mount namespace). */
        snprintf(watch, sizeof(watch), "/proc/self/fd/%d", e->requests_fd);
        if (inotify_add_watch(e->inotify_fd, watch, IN_MOVED_TO | IN_ONLYDIR) < 0)
                return errorf(ret_error, -errno, "cannot watch the Escalation Mailbox's requests: %m");
        k = sd_event_add_io(e->event, &e->inotify_source, e->inotify_fd, EPOLLIN, on_inotify, e);
        if (k < 0)
                return errorf(ret_error, k, "cannot watch the Escalation Mailbox: %s", strerror(-k));
        mailbox_scan(e);
        *ret = TAKE_PTR(e);
        return 0;
}

void escalations_terminal_free(Escalations *e, Session *s) {
        session_next_prompt(e, s);
}
