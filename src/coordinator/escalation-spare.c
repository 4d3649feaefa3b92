/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The spare an approved host command runs in (escalation-spare.h): started
 * and put in its scope off the critical path, so that an approved request
 * costs one sendmsg() and an execve() instead of a fork and a wait for
 * the user manager's job.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bus-job.h"
#include "bus-names.h"
#include "escalation-proto.h"
#include "escalation-spare.h"
#include "path-util.h"
#include "process.h"
#include "spare-proto.h"
#include "spawn-util.h"
#include "util.h"

#define SCOPE_JOB_TIMEOUT_USEC (10ULL * 1000000)

struct Spare {
        sd_event *event;
        sd_bus *bus;
        SpareCallbacks cb;
        void *userdata;

        pid_t pid;                      /* 0 once it ended */
        sd_event_source *child;
        int sock;                       /* our end of its socket, until the hand-over */
        char scope[UNIT_NAME_MAX];
        BusJob *scope_job;              /* StartTransientUnit, until the scope holds the spare */
        bool scope_asked;               /* StartTransientUnit was sent: freeing stops the scope */
        bool scoped;                    /* the scope holds it */

        int fds[SPARE_FD_COUNT];        /* the command given to spare_run(), until it is sent */
        bool given, sent;
};

static void close_command(Spare *s) {
        for (size_t i = 0; i < SPARE_FD_COUNT; i++)
                s->fds[i] = safe_close(s->fds[i]);
}

Spare *spare_free(Spare *s) {
        if (!s)
                return NULL;
        bus_job_free(s->scope_job);
        /* The command's process group (it is a session leader), and its scope with all it started (OR-3). */
        if (s->pid > 0)
                (void) kill(-s->pid, SIGKILL);
        /* Also while the start job is still queued: the stop, sent after it on the same connection, follows it. */
        if (s->scope_asked && s->bus)
                (void) sd_bus_call_method_async(s->bus, NULL, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                                "org.freedesktop.systemd1.Manager", "StopUnit", NULL, NULL, "ss",
                                                s->scope, "replace");
        event_child_release(s->child);
        safe_close(s->sock);
        close_command(s);
        free(s);
        return NULL;
}

void spare_set_callbacks(Spare *s, const SpareCallbacks *cb, void *userdata) {
        s->cb = *cb;
        s->userdata = userdata;
}

pid_t spare_pid(const Spare *s) {
        return s->pid;
}

const char *spare_scope(const Spare *s) {
        return s->scoped ? s->scope : NULL;
}

/* Reports through the owner's callback last: it may free s. */
static void fail(Spare *s, const char *why) {
        s->cb.failed(s, why, s->userdata);
}

/* Hands the command over: 1 when it was sent, 0 when it waits for the scope (or was not given yet). */
static int send_command(Spare *s) {
        int k;

        if (!s->given || s->sent || (s->bus && !s->scoped))
                return 0;
        k = spare_send(s->sock, s->fds);
        close_command(s);
        /* Our end goes: the command has no reason to read it. */
        s->sock = safe_close(s->sock);
        if (k < 0)
                return k;
        s->sent = true;
        return 1;
}

static void on_scope_started(BusJob *j, const char *result, const sd_bus_error *error, void *userdata) {
        Spare *s = userdata;
        int k;

        s->scope_job = bus_job_free(s->scope_job);
        if (!streq(result, "done")) {
                fail(s, "cannot create the host command's transient scope");
                return;
        }
        s->scoped = true;
        k = send_command(s);
        if (k < 0)
                fail(s, "cannot hand the command to its spare");
        else if (k > 0 && s->cb.started)
                s->cb.started(s, s->userdata);
}

static int on_spare_exit(sd_event_source *src, const siginfo_t *si, void *userdata) {
        Spare *s = userdata;
        int status = spawn_status_from_siginfo(si->si_code, si->si_status);

        s->pid = 0;
        s->child = sd_event_source_disable_unref(s->child);
        if (s->given && !s->sent)
                fail(s, "the host command's spare ended before it got its command");
        else
                s->cb.exited(s, status, s->userdata);
        return 0;
}

typedef struct CommandScope {
        const char *scope;
        const char *description;
        const char *service;
        pid_t pid;
} CommandScope;

static int append_command_scope(sd_bus_message *m, void *userdata) {
        const CommandScope *a = userdata;
        int k = bus_append_scope_begin(m, a->scope, a->description, a->pid);

        /* The coordinator's death (a SIGKILL, OOM) stops the service, and with it the scope and every process
         * the command started (KillMode=control-group): PR_SET_PDEATHSIG reaches the command alone (OR-3). */
        if (k >= 0)
                k = bus_append_scope_bound_to(m, a->service);
        return k < 0 ? k : bus_append_scope_end(m);
}

int spare_new(const SpareParams *p, Spare **ret) {
        _cleanup_(spare_freep) Spare *s = calloc(1, sizeof(Spare));
        _cleanup_free_ char *exe = path_join(LIBEXECDIR, "lazaret-spare"), *desc = NULL;
        _cleanup_close_ int theirs = -EBADF, pidfd = -EBADF;
        char id[ESC_ID_LEN + 1], service[UNIT_NAME_MAX];
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        int sv[2], k;

        if (!s || !exe)
                return -ENOMEM;
        s->sock = -EBADF;
        for (size_t i = 0; i < SPARE_FD_COUNT; i++)
                s->fds[i] = -EBADF;
        s->event = p->event;
        s->bus = p->bus;
        s->cb = p->cb;
        s->userdata = p->userdata;
        k = esc_random_id(id);
        if (k < 0)
                return k;
        snprintf(s->scope, sizeof(s->scope), "lazaret-%s-esc-%s.scope", p->domain_id, id);
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        s->sock = sv[0];
        theirs = sv[1];

        /* Its Domain, for ps(1) and whoever looks for what a Domain left; the spare reads no argument. */
        o.argv = (char *const[]) { exe, (char *) p->domain_id, NULL };
        o.envp = p->envp;
        o.cwd = "/";
        o.pass_fds = &theirs;
        o.n_pass_fds = 1;
        o.new_session = true;
        o.die_with_parent = true;
        /* Not spawn(): it waits for the spare's execve, which is no reason to hold up the loop. */
        k = spawn_async(&o, &s->pid, &pidfd, NULL);
        if (k < 0) {
                s->pid = 0;
                return k;
        }
        theirs = safe_close(theirs);
        k = event_watch_child(p->event, &s->child, s->pid, TAKE_FD(pidfd), on_spare_exit, s);
        if (k < 0)
                return k;
        if (s->bus) {
                if (asprintf(&desc, "Lazaret host command of Domain %s", p->domain_id) < 0)
                        return -ENOMEM;
                domain_unit_name(p->domain_id, "service", service);
                k = bus_job_start(s->bus, "StartTransientUnit", append_command_scope,
                                  &(CommandScope) { .scope = s->scope, .description = desc, .service = service,
                                                    .pid = s->pid },
                                  SCOPE_JOB_TIMEOUT_USEC, on_scope_started, s, &s->scope_job);
                if (k < 0)
                        return k;
                s->scope_asked = true;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int spare_run(Spare *s, const char *program, char *const *argv, int cwd_fd, int out_fd, int err_fd) {
        _cleanup_close_ int out = out_fd, err = err_fd, memfd = -EBADF, cwd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int k;

        if (s->given || s->pid <= 0)
                return -ESTALE;
        k = spare_command_format(program, argv, &buf, &len);
        if (k < 0)
                return k;
        memfd = memfd_create("lazaret-command", MFD_CLOEXEC);
        if (memfd < 0)
                return -errno;
        k = write_all(memfd, buf, len);
        if (k < 0)
                return k;
        cwd = fcntl(cwd_fd, F_DUPFD_CLOEXEC, 3);
        if (cwd < 0)
                return -errno;
        s->fds[SPARE_FD_COMMAND] = TAKE_FD(memfd);
        s->fds[SPARE_FD_CWD] = TAKE_FD(cwd);
        s->fds[SPARE_FD_STDOUT] = TAKE_FD(out);
        s->fds[SPARE_FD_STDERR] = TAKE_FD(err);
        s->given = true;
        return send_command(s);
}
