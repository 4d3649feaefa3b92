/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "log.h"
#include "oci-spec.h"
#include "path-util.h"
#include "sandbox.h"
#include "session.h"
#include "strv.h"
#include "util.h"

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

Session *session_find(Manager *m, const char *id) {
        for (Session *s = m->sessions; s; s = s->next)
                if (streq(s->id, id))
                        return s;
        return NULL;
}

/* --------------------------------------------------------------- relay */

static void relay_update(Session *s);

/* Reads what is there into b; returns bytes read, 0 on EOF, -EAGAIN if none. */
static ssize_t buffer_fill(Buffer *b, int fd) {
        size_t end = (b->start + b->len) % SESSION_BUFFER_SIZE;
        size_t room = b->start + b->len < SESSION_BUFFER_SIZE ? SESSION_BUFFER_SIZE - end : b->start - end;
        ssize_t k;

        if (room == 0)
                return -ENOBUFS;
        k = read(fd, b->data + end, room);
        if (k < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        b->len += (size_t) k;
        return k;
}

static ssize_t buffer_drain(Buffer *b, int fd) {
        size_t chunk = b->start + b->len <= SESSION_BUFFER_SIZE ? b->len : SESSION_BUFFER_SIZE - b->start;
        ssize_t k;

        if (b->len == 0)
                return 0;
        k = write(fd, b->data + b->start, chunk);
        if (k < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        b->start = (b->start + (size_t) k) % SESSION_BUFFER_SIZE;
        b->len -= (size_t) k;
        if (b->len == 0)
                b->start = 0;
        return k;
}

static int on_tty(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Session *s = userdata;
        ssize_t k;

        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                k = buffer_fill(&s->to_pty, s->client_tty);
                if (k == 0 || (k < 0 && k != -EAGAIN && k != -ENOBUFS)) {
                        /* The client's terminal is gone: nobody can use this session. */
                        s->tty_eof = true;
                        session_close(s, "the client's terminal closed");
                        return 0;
                }
        }
        if (revents & EPOLLOUT) {
                k = buffer_drain(&s->to_tty, s->client_tty);
                if (k < 0 && k != -EAGAIN) {
                        s->tty_eof = true;
                        session_close(s, "the client's terminal closed");
                        return 0;
                }
        }
        relay_update(s);
        return 0;
}

static int on_pty(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Session *s = userdata;
        ssize_t k;

        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                k = buffer_fill(&s->to_tty, s->pty_master);
                /* EIO: every slave closed, i.e. the command and runsc exec are done. */
                if (k == 0 || (k < 0 && k != -EAGAIN && k != -ENOBUFS))
                        s->pty_eof = true;
        }
        if (revents & EPOLLOUT) {
                k = buffer_drain(&s->to_pty, s->pty_master);
                if (k < 0 && k != -EAGAIN)
                        s->pty_eof = true;
        }
        relay_update(s);
        return 0;
}

static void relay_update(Session *s) {
        uint32_t tty_events = 0, pty_events = 0;

        if (s->client_tty < 0 || s->pty_master < 0)
                return;
        if (!s->tty_eof && s->to_pty.len < SESSION_BUFFER_SIZE)
                tty_events |= EPOLLIN;
        if (s->to_tty.len > 0)
                tty_events |= EPOLLOUT;
        if (!s->pty_eof && s->to_tty.len < SESSION_BUFFER_SIZE)
                pty_events |= EPOLLIN;
        if (!s->pty_eof && s->to_pty.len > 0)
                pty_events |= EPOLLOUT;

        if (s->tty_source) {
                (void) sd_event_source_set_io_events(s->tty_source, tty_events);
                (void) sd_event_source_set_enabled(s->tty_source, tty_events ? SD_EVENT_ON : SD_EVENT_OFF);
        }
        if (s->pty_source) {
                (void) sd_event_source_set_io_events(s->pty_source, pty_events);
                (void) sd_event_source_set_enabled(s->pty_source, pty_events ? SD_EVENT_ON : SD_EVENT_OFF);
        }
}

/* Flushes what the command printed last before the terminal is handed back. */
static void relay_flush(Session *s) {
        if (s->client_tty < 0)
                return;
        if (s->pty_master >= 0)
                while (buffer_fill(&s->to_tty, s->pty_master) > 0)
                        ;
        (void) fcntl(s->client_tty, F_SETFL, fcntl(s->client_tty, F_GETFL) & ~O_NONBLOCK);
        while (s->to_tty.len > 0 && buffer_drain(&s->to_tty, s->client_tty) > 0)
                ;
}

/* ------------------------------------------------------------ file pumps */

static void pump_close(FilePump *p) {
        p->source = sd_event_source_disable_unref(p->source);
        p->pipe = safe_close(p->pipe);
        p->file = safe_close(p->file);
        free(p->buf);
        p->buf = NULL;
}


/* Copies whatever the pipe holds into the file; returns 0 at EOF. */
static ssize_t pump_to_file(FilePump *p) {
        char b[65536];
        ssize_t k = read(p->pipe, b, sizeof(b));

        if (k > 0 && write_all(p->file, b, (size_t) k) < 0)
                return -EIO;
        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
        return k;
}

static int on_pump(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        FilePump *p = userdata;

        if (p->to_file) {
                ssize_t k = pump_to_file(p);
                if (k == 0 || (k < 0 && k != -EAGAIN))
                        pump_close(p);
                return 0;
        }

        /* stdin: refill from the file, write into the pipe. */
        if (p->buf->len == 0) {
                ssize_t k = read(p->file, p->buf->data, SESSION_BUFFER_SIZE);
                if (k <= 0) {
                        pump_close(p);  /* EOF (or error) reaches the command as EOF */
                        return 0;
                }
                p->buf->start = 0;
                p->buf->len = (size_t) k;
        }
        {
                ssize_t k = write(p->pipe, p->buf->data + p->buf->start, p->buf->len);
                if (k < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                pump_close(p);
                        return 0;
                }
                p->buf->start += (size_t) k;
                p->buf->len -= (size_t) k;
        }
        return 0;
}

/* Sets up fd i: returns the fd the command gets in *ret_child (owned by the caller). */
static int stdio_prepare(Session *s, int i, int client_fd, int *ret_child) {
        FilePump *p = &s->pumps[i];
        struct stat st;
        int pipefd[2], r;

        s->stdio[i] = fcntl(client_fd, F_DUPFD_CLOEXEC, 3);
        if (s->stdio[i] < 0)
                return -errno;
        if (fstat(s->stdio[i], &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode)) {
                *ret_child = s->stdio[i];
                return 0;
        }

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        p->to_file = i > 0;
        p->file = TAKE_FD(s->stdio[i]);
        p->pipe = p->to_file ? pipefd[0] : pipefd[1];
        s->stdio[i] = p->to_file ? pipefd[1] : pipefd[0];   /* the command's end */
        (void) fcntl(p->pipe, F_SETFL, O_NONBLOCK);
        if (!p->to_file) {
                p->buf = calloc(1, sizeof(Buffer));
                if (!p->buf)
                        return -ENOMEM;
        }
        r = sd_event_add_io(s->manager->event, &p->source, p->pipe, p->to_file ? EPOLLIN : EPOLLOUT, on_pump, p);
        if (r < 0)
                return r;
        *ret_child = s->stdio[i];
        return 0;
}

/* After the command: whatever it wrote before it exited reaches the files. */
static void pumps_drain(Session *s) {
        for (int i = 1; i < 3; i++)
                if (s->pumps[i].pipe >= 0 && s->pumps[i].to_file)
                        while (pump_to_file(&s->pumps[i]) > 0)
                                ;
}

/* -------------------------------------------------------------- lifetime */

/*
 * Gives the client's terminal back: what the command printed last is
 * written out, then the saved modes are restored. Done before SessionEnded
 * is sent, so that the client's shell finds the terminal as it was.
 */
static void terminal_release(Session *s) {
        s->tty_source = sd_event_source_disable_unref(s->tty_source);
        s->pty_source = sd_event_source_disable_unref(s->pty_source);
        if (s->client_tty < 0)
                return;
        relay_flush(s);
        if (s->termios_saved)
                (void) tcsetattr(s->client_tty, TCSADRAIN, &s->saved_termios);
        s->client_tty = safe_close(s->client_tty);
}

void session_free(Session *s) {
        Manager *m;

        if (!s)
                return;
        m = s->manager;

        sd_event_source_disable_unref(s->child_source);
        sd_event_source_disable_unref(s->kill_timer);
        if (s->pid > 0) {
                /* Never leave a runsc exec client behind. */
                (void) kill(s->pid, SIGKILL);
                (void) waitpid(s->pid, NULL, 0);
        }
        terminal_release(s);
        safe_close(s->pty_master);
        for (int i = 0; i < 3; i++) {
                safe_close(s->stdio[i]);
                pump_close(&s->pumps[i]);
        }
        sd_bus_track_unref(s->track);
        if (s->spec_path)
                (void) unlink(s->spec_path);
        if (s->pid_path)
                (void) unlink(s->pid_path);
        free(s->spec_path);
        free(s->pid_path);
        free(s->owner);
        strv_free(s->argv);

        if (m) {
                if (s->prev)
                        s->prev->next = s->next;
                else if (m->sessions == s)
                        m->sessions = s->next;
                if (s->next)
                        s->next->prev = s->prev;
        }
        free(s);
}

void session_end(Session *s, int exit_status, const char *reason) {
        Manager *m = s->manager;
        char id[RANDOM_ID_LEN + 1];

        memcpy(id, s->id, sizeof(id));
        /* Output first, then the signal: the client exits when it hears it. */
        pumps_drain(s);
        terminal_release(s);
        log_session(LOG_INFO, id, "Session ended: status %d%s%s", exit_status, reason ? ", " : "", strempty(reason));
        (void) manager_emit_session_ended(m, id, exit_status, reason);
        session_free(s);
        manager_session_removed(m);
}

static int on_child(sd_event_source *src, const siginfo_t *si, void *userdata) {
        Session *s = userdata;
        int status;

        if (si->si_code == CLD_EXITED)
                status = si->si_status;
        else
                status = 128 + si->si_status;
        s->pid = 0;     /* reaped by sd-event */
        s->child_source = sd_event_source_disable_unref(s->child_source);
        s->ending = true;
        session_end(s, status, NULL);
        return 0;
}

static int on_kill_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        Session *s = userdata;

        /* The command did not go in time: end its runsc exec client. */
        if (s->pid > 0)
                (void) kill(s->pid, SIGKILL);
        return 0;
}

void session_close(Session *s, const char *why) {
        if (s->ending || s->closing)
                return;
        s->closing = true;
        log_session(LOG_INFO, s->id, "Closing session: %s", why);
        /* The command's process inside goes first; the runsc exec client
         * then exits and on_child() ends the session. */
        if (sandbox_kill_session(s->manager->sandbox, s) < 0 && s->pid > 0)
                (void) kill(s->pid, SIGKILL);
        (void) sd_event_add_time_relative(s->manager->event, &s->kill_timer, CLOCK_MONOTONIC,
                                          5ULL * 1000 * 1000, 0, on_kill_timer, s);
}

static int on_owner_gone(sd_bus_track *track, void *userdata) {
        Session *s = userdata;

        session_close(s, "its client disconnected");
        return 0;
}

int session_resize(Session *s, uint16_t rows, uint16_t cols) {
        struct winsize ws = { .ws_row = rows, .ws_col = cols };

        if (rows == 0 || cols == 0)
                return -EINVAL;
        if (ioctl(s->pty_master, TIOCSWINSZ, &ws) < 0)
                return -errno;
        /* runsc exec forwards SIGWINCH to the command inside. */
        if (s->pid > 0 && kill(s->pid, SIGWINCH) < 0)
                return -errno;
        return 0;
}

int session_signal(Session *s, const char *event) {
        static const struct {
                const char *name;
                int sig;
                bool foreground;
        } events[] = {
                { "interrupt", SIGINT, true },
                { "quit", SIGQUIT, true },
                { "suspend", SIGTSTP, true },
                { "hangup", SIGHUP, false },
                { "terminate", SIGTERM, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(events); i++)
                if (streq(event, events[i].name))
                        return sandbox_signal_session(s->manager->sandbox, s, events[i].sig, events[i].foreground);
        return -EINVAL;
}

/* ----------------------------------------------------------------- start */

static int setup_terminal(Session *s, int passed_fd, uint16_t rows, uint16_t cols, int *ret_slave) {
        _cleanup_free_ char *proc = NULL;
        _cleanup_close_ int master = -EBADF, slave = -EBADF;
        struct winsize ws = { .ws_row = rows ?: 24, .ws_col = cols ?: 80 };
        struct termios raw;
        int r;

        if (!isatty(passed_fd))
                return -ENOTTY;

        /* Our own open file description: O_NONBLOCK here must not leak into
         * the client's shell, which shares the passed one. */
        if (asprintf(&proc, "/proc/self/fd/%d", passed_fd) < 0)
                return -ENOMEM;
        s->client_tty = open(proc, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (s->client_tty < 0)
                return -errno;
        if (tcgetattr(s->client_tty, &s->saved_termios) < 0)
                return -errno;
        s->termios_saved = true;
        raw = s->saved_termios;
        cfmakeraw(&raw);
        if (tcsetattr(s->client_tty, TCSANOW, &raw) < 0)
                return -errno;

        master = posix_openpt(O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (master < 0)
                return -errno;
        if (grantpt(master) < 0 || unlockpt(master) < 0)
                return -errno;
        r = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (r < 0)
                return -errno;
        slave = r;
        /* The slave starts with the client's settings: what the host terminal was. */
        (void) tcsetattr(slave, TCSANOW, &s->saved_termios);
        if (ioctl(master, TIOCSWINSZ, &ws) < 0)
                return -errno;

        s->pty_master = TAKE_FD(master);
        *ret_slave = TAKE_FD(slave);
        return 0;
}

/* The profile's command, else the image's, else a login shell with the one shell every image has. */
static char **default_command(Manager *m) {
        if (m->domain->profile->command)
                return strv_copy(m->domain->profile->command);
        if (sandbox_default_command(m->sandbox))
                return strv_copy(sandbox_default_command(m->sandbox));
        return strv_copy((char *[]) { "/bin/sh", "-l", NULL });
}

int session_new(Manager *m, const SessionParams *p, Session **ret, sd_bus_error *error) {
        Session *s;
        _cleanup_close_ int slave = -EBADF;
        int stdio[3] = { -EBADF, -EBADF, -EBADF };
        int r;

        s = calloc(1, sizeof(Session));
        if (!s)
                return -ENOMEM;
        s->manager = m;
        s->client_tty = s->pty_master = -EBADF;
        for (int i = 0; i < 3; i++) {
                s->stdio[i] = -EBADF;
                s->pumps[i] = (FilePump) { .file = -EBADF, .pipe = -EBADF };
        }
        s->terminal = p->terminal;
        s->owner_pid = p->owner_pid;
        s->started_usec = now_usec();
        r = random_hex_id(s->id);
        if (r < 0)
                goto fail;
        s->owner = strdup(p->owner ?: "");
        s->argv = p->argv && p->argv[0] ? strv_copy(p->argv) : default_command(m);
        if (!s->owner || !s->argv) {
                r = -ENOMEM;
                goto fail;
        }

        /* Link first, so that failure paths can use session_free(). */
        s->next = m->sessions;
        if (m->sessions)
                m->sessions->prev = s;
        m->sessions = s;

        if (p->terminal) {
                r = setup_terminal(s, p->fds[0], p->rows, p->cols, &slave);
                if (r < 0) {
                        sd_bus_error_set_errnof(error, -r, "Cannot set up the session's terminal: %m");
                        goto fail;
                }
                stdio[0] = stdio[1] = stdio[2] = slave;
        } else {
                for (int i = 0; i < 3; i++) {
                        r = stdio_prepare(s, i, p->fds[i], &stdio[i]);
                        if (r < 0) {
                                sd_bus_error_set_errnof(error, -r, "Cannot set up the session's standard streams: %m");
                                goto fail;
                        }
                }
        }

        r = sandbox_spawn_session(m->sandbox, s, p->env, stdio);
        if (r < 0) {
                sd_bus_error_set_errnof(error, -r, "Cannot start the session's command: %m");
                goto fail;
        }
        /* The command has them now. */
        slave = safe_close(slave);
        for (int i = 0; i < 3; i++)
                s->stdio[i] = safe_close(s->stdio[i]);

        r = sd_event_add_child(m->event, &s->child_source, s->pid, WEXITED, on_child, s);
        if (r < 0)
                goto fail;

        if (p->terminal) {
                r = sd_event_add_io(m->event, &s->tty_source, s->client_tty, EPOLLIN, on_tty, s);
                if (r >= 0)
                        r = sd_event_add_io(m->event, &s->pty_source, s->pty_master, EPOLLIN, on_pty, s);
                if (r < 0)
                        goto fail;
                relay_update(s);
        }

        r = sd_bus_track_new(m->bus, &s->track, on_owner_gone, s);
        if (r >= 0)
                r = sd_bus_track_add_name(s->track, s->owner);
        if (r < 0)
                goto fail;

        log_session(LOG_INFO, s->id, "Session opened for %s (pid %d)%s: %s", s->owner, (int) s->owner_pid,
                    s->terminal ? " with a terminal" : "", s->argv[0]);
        manager_session_added(m);
        *ret = s;
        return 0;

fail:
        log_session(LOG_WARNING, s->id, "Session could not start: %s", strerror(-r));
        session_free(s);
        return r;
}
