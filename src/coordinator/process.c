/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "process.h"
#include "spawn-util.h"

struct Process {
        sd_event_source *child;
        sd_event_source *pipe_source;
        int pipe;
        char output[PROCESS_OUTPUT_MAX + 1];
        size_t len;
        ProcessDone done;
        void *userdata;
};

Process *process_free(Process *p) {
        if (!p)
                return NULL;
        event_child_release(p->child);
        sd_event_source_disable_unref(p->pipe_source);
        safe_close(p->pipe);
        free(p);
        return NULL;
}

static void read_output(Process *p) {
        for (;;) {
                char sink[4096];
                size_t room = PROCESS_OUTPUT_MAX - p->len;
                ssize_t k = read(p->pipe, room > 0 ? p->output + p->len : sink, room > 0 ? room : sizeof(sink));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        if (k == 0 || errno != EAGAIN) {
                                p->pipe_source = sd_event_source_disable_unref(p->pipe_source);
                                p->pipe = safe_close(p->pipe);
                        }
                        return;
                }
                if (room > 0)
                        p->len += (size_t) k;
        }
}

static int on_output(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        read_output(userdata);
        return 0;
}

static int on_process_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        Process *p = userdata;
        int status = spawn_status_from_siginfo(si->si_code, si->si_status);

        /* Whatever it wrote before it exited. */
        if (p->pipe >= 0)
                read_output(p);
        p->output[p->len] = 0;
        while (p->len > 0 && strchr(" \t\n\r", p->output[p->len - 1]))
                p->output[--p->len] = 0;
        p->child = sd_event_source_disable_unref(p->child);
        /* Last: done() may free p. */
        p->done(p, status, p->output, p->userdata);
        return 0;
}

/* Reaps a released child. */
static int on_detached_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        sd_event_source_disable_unref(s);
        return 0;
}

/* Watches pidfd (taken, also on failure) until its child exited, from a source the loop owns. */
static int watch_detached(sd_event *e, int pidfd) {
        _cleanup_close_ int fd = pidfd;
        sd_event_source *s = NULL;
        int r;

        r = sd_event_add_child_pidfd(e, &s, fd, WEXITED, on_detached_exit, NULL);
        if (r < 0)
                return r;
        (void) sd_event_source_set_child_pidfd_own(s, true);
        TAKE_FD(fd);
        /* The loop holds the reference now; on_detached_exit() drops it. */
        r = sd_event_source_set_floating(s, true);
        sd_event_source_unref(s);
        return r;
}

int event_watch_child(sd_event *e, sd_event_source **ret, pid_t pid, int pidfd,
                      sd_event_child_handler_t handler, void *userdata) {
        _cleanup_close_ int fd = pidfd;
        int r;

        r = sd_event_add_child_pidfd(e, ret, fd, WEXITED, handler, userdata);
        if (r < 0) {
                (void) kill(pid, SIGKILL);
                return r;
        }
        /* The pidfd, not the process: an owned process would be reaped by a
         * blocking waitid() when the source goes (event_child_release()). */
        (void) sd_event_source_set_child_pidfd_own(*ret, true);
        TAKE_FD(fd);
        return 0;
}

sd_event_source *event_child_release(sd_event_source *s) {
        sd_event *e;
        int pidfd;

        if (!s)
                return NULL;
        e = sd_event_source_get_event(s);
        pidfd = sd_event_source_get_child_pidfd(s);
        /* pidfd_send_signal(): never another process, even if this one was reaped already. */
        (void) sd_event_source_send_child_signal(s, SIGKILL, NULL, 0);
        if (pidfd < 0 || sd_event_source_set_child_pidfd_own(s, false) < 0) {
                sd_event_source_disable_unref(s);
                return NULL;
        }
        /* One source per child: this one goes before its successor comes. */
        sd_event_source_disable_unref(s);
        (void) watch_detached(e, pidfd);
        return NULL;
}

static int start(sd_event *e, char *const *argv, int stderr_fd, sd_event_source **ret_child,
                 sd_event_child_handler_t handler, void *userdata) {
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        _cleanup_close_ int pidfd = -EBADF;
        pid_t pid;
        int r;

        o.argv = argv;
        o.stdio[2] = stderr_fd;
        o.die_with_parent = true;
        r = spawn(&o, &pid, &pidfd);
        if (r < 0)
                return r;
        return event_watch_child(e, ret_child, pid, TAKE_FD(pidfd), handler, userdata);
}

int process_run(sd_event *e, char *const *argv, ProcessDone done, void *userdata, Process **ret) {
        Process *p;
        int fds[2], r;

        p = calloc(1, sizeof(Process));
        if (!p)
                return -ENOMEM;
        p->pipe = -EBADF;
        p->done = done;
        p->userdata = userdata;
        if (pipe2(fds, O_CLOEXEC) < 0) {
                r = -errno;
                goto fail;
        }
        p->pipe = fds[0];
        /* Our end only: the program's stderr stays blocking. */
        if (fcntl(p->pipe, F_SETFL, O_NONBLOCK) < 0) {
                r = -errno;
                safe_close(fds[1]);
                goto fail;
        }
        r = start(e, argv, fds[1], &p->child, on_process_exit, p);
        safe_close(fds[1]);
        if (r < 0)
                goto fail;
        r = sd_event_add_io(e, &p->pipe_source, p->pipe, EPOLLIN, on_output, p);
        if (r < 0)
                goto fail;
        *ret = p;
        return 0;
fail:
        process_free(p);
        return r;
}

int process_run_detached(sd_event *e, char *const *argv) {
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        _cleanup_close_ int pidfd = -EBADF;
        pid_t pid;
        int r;

        o.argv = argv;
        o.die_with_parent = true;
        r = spawn(&o, &pid, &pidfd);
        if (r < 0)
                return r;
        r = watch_detached(e, TAKE_FD(pidfd));
        if (r < 0)
                (void) kill(pid, SIGKILL);
        return r;
}
