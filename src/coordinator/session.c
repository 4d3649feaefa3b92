/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-id128.h>

#include "bus-names.h"
#include "cleanup.h"
#include "hash.h"
#include "log.h"
#include "process.h"
#include "session.h"
#include "spawn-util.h"
#include "strv.h"
#include "term-prompt.h"
#include "util.h"

/* A closed session whose command does not go is ended this much later. */
#define SESSION_KILL_USEC (5ULL * 1000 * 1000)
/* How long an abnormal end waits for news of the sandbox. */
#define SESSION_SETTLE_USEC (300ULL * 1000)

/* --------------------------------------------------------------- relay */

static void relay_update(Session *s);
static void maybe_finish(Session *s);
static void pty_final_read(Session *s);

/* Reads what is there into b; returns bytes read, 0 on EOF, -EAGAIN if none. */
static ssize_t buffer_fill(Buffer *b, int fd) {
        size_t end = (b->start + b->len) % SESSION_BUFFER_SIZE;
        size_t room = b->start + b->len < SESSION_BUFFER_SIZE ? SESSION_BUFFER_SIZE - end : b->start - end;
        ssize_t k;

        if (b->len == SESSION_BUFFER_SIZE || room == 0)
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

/* --------------------------------------------------------------- prompt */

static uint64_t now_monotonic_usec(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

/* Once the prompt's text has reached the client's terminal whole, the quiet period starts. */
static void prompt_check_written(Session *s) {
        if (s->prompting && s->prompt_ready_usec == UINT64_MAX && s->prompt_out && s->prompt_out->len == 0)
                s->prompt_ready_usec = now_monotonic_usec() + TERM_PROMPT_QUIET_USEC;
}

/*
 * Bytes from the client's terminal while a prompt is up. Control
 * sequences (a reply to a query the sandbox sent, a function key, a mouse
 * report) are parsed and dropped whole (term_input_feed()). A key reaches
 * the prompt only after the prompt was written whole and the terminal then
 * sent no key for TERM_PROMPT_QUIET_USEC: one that comes earlier was typed
 * before the human could read the prompt, and starts the quiet period anew.
 */
static void prompt_read(Session *s) {
        unsigned char b[256];
        ssize_t k = read(s->client_tty, b, sizeof(b));
        uint64_t now = now_monotonic_usec();

        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
                s->tty_eof = true;
                s->to_tty.len = 0;
                session_close(s, "the client's terminal closed");
                return;
        }
        for (ssize_t i = 0; i < k && s->prompting; i++) {
                int c = term_input_feed(&s->prompt_in, b[i]);

                if (c < 0)
                        continue;
                if (s->prompt_ready_usec == UINT64_MAX || now < s->prompt_ready_usec) {
                        if (s->prompt_ready_usec != UINT64_MAX)
                                s->prompt_ready_usec = now + TERM_PROMPT_QUIET_USEC;
                        continue;
                }
                s->prompt_input(s, (unsigned char) c, s->prompt_userdata);
        }
}

/*
 * The prompt's text goes through a buffer of its own, drained as the
 * client's terminal takes it (C15: no write to a client's terminal
 * blocks), and always before anything the sandbox printed.
 */
static void prompt_put(Session *s, const char *text) {
        size_t n = strlen(text);

        if (!s->prompt_out) {
                s->prompt_out = calloc(1, sizeof(Buffer));
                if (!s->prompt_out)
                        return;
        }
        /* A terminal that took none of 64 KiB of prompt text is not waited for. */
        while (n > 0 && s->prompt_out->len < SESSION_BUFFER_SIZE) {
                size_t end = (s->prompt_out->start + s->prompt_out->len) % SESSION_BUFFER_SIZE;
                size_t room = SESSION_BUFFER_SIZE - s->prompt_out->len, chunk;

                chunk = SESSION_BUFFER_SIZE - end < room ? SESSION_BUFFER_SIZE - end : room;
                if (chunk > n)
                        chunk = n;
                memcpy(s->prompt_out->data + end, text, chunk);
                s->prompt_out->len += chunk;
                text += chunk;
                n -= chunk;
        }
        (void) buffer_drain(s->prompt_out, s->client_tty);
        prompt_check_written(s);
        relay_update(s);
}

/* The whole prompt, drawn anew with a new approve key; keys wait for its quiet period again. */
static int prompt_draw(Session *s, const TermPrompt *p, char *ret_approve) {
        _cleanup_free_ char *text = NULL;
        char taken[TERM_PROMPT_KEYS_MAX + 1] = "", key;
        struct winsize ws = {};
        bool offered;
        int r;

        for (size_t i = 0; i < p->n_keys && i < TERM_PROMPT_KEYS_MAX; i++)
                taken[i] = p->keys[i].key;
        key = term_prompt_pick_key(taken);
        /* The client's own terminal: its size as it is now, whatever the sandbox was told. */
        (void) ioctl(s->client_tty, TIOCGWINSZ, &ws);
        r = term_prompt_render(p, key, ws.ws_row, ws.ws_col, &text, &offered);
        if (r < 0)
                return r;
        s->prompt_ready_usec = UINT64_MAX;
        prompt_put(s, text);
        *ret_approve = offered ? key : 0;
        return 0;
}

int session_prompt_begin(Session *s, const TermPrompt *p, SessionPromptInput input, void *userdata, char *ret_approve) {
        int r;

        if (!s->terminal || s->client_tty < 0 || s->tty_eof)
                return -ENOTTY;
        if (s->prompting)
                return -EBUSY;
        s->prompting = true;
        s->prompt_input = input;
        s->prompt_userdata = userdata;
        s->prompt_in = (TermInput) {};
        /* Whatever the human typed before the prompt was meant for the sandbox. */
        (void) tcflush(s->client_tty, TCIFLUSH);
        /* What the sandbox printed and is still buffered is held, not shown. */
        if (s->pty_source)
                (void) sd_event_source_set_enabled(s->pty_source, SD_EVENT_OFF);
        if (s->tty_source) {
                (void) sd_event_source_set_io_events(s->tty_source, EPOLLIN);
                (void) sd_event_source_set_enabled(s->tty_source, SD_EVENT_ON);
        }
        r = prompt_draw(s, p, ret_approve);
        if (r < 0) {
                s->prompting = false;
                s->prompt_input = NULL;
                s->prompt_userdata = NULL;
                relay_update(s);
        }
        return r;
}

int session_prompt_redraw(Session *s, const TermPrompt *p, char *ret_approve) {
        if (!s->prompting || s->client_tty < 0 || s->tty_eof)
                return -ENOTTY;
        return prompt_draw(s, p, ret_approve);
}

void session_prompt_write(Session *s, const char *text) {
        if (!s->prompting || s->client_tty < 0 || s->tty_eof)
                return;
        prompt_put(s, text);
}

void session_prompt_end(Session *s, const char *text) {
        if (!s->prompting)
                return;
        if (text)
                session_prompt_write(s, text);
        s->prompting = false;
        s->prompt_input = NULL;
        s->prompt_userdata = NULL;
        if (s->pty_source)
                (void) sd_event_source_set_enabled(s->pty_source, SD_EVENT_ON);
        relay_update(s);
        /* The command redraws what the prompt covered. */
        if (s->child_source)
                (void) sd_event_source_send_child_signal(s->child_source, SIGWINCH, NULL, 0);
}

void session_notice(Session *s, const char *text) {
        if (!s->terminal || s->client_tty < 0 || s->tty_eof)
                return;
        prompt_put(s, text);
}

static int on_tty(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Session *s = userdata;
        ssize_t k;

        if (revents & EPOLLOUT) {
                /* The prompt's text first; the sandbox's output only when no prompt is up. */
                if (s->prompt_out && s->prompt_out->len > 0) {
                        k = buffer_drain(s->prompt_out, s->client_tty);
                        prompt_check_written(s);
                } else
                        k = s->prompting ? 0 : buffer_drain(&s->to_tty, s->client_tty);
                if (k < 0 && k != -EAGAIN) {
                        /* The client's terminal is gone: nobody can use this session. */
                        s->tty_eof = true;
                        s->to_tty.len = 0;
                        session_close(s, "the client's terminal closed");
                }
        }
        if (s->prompting && !s->tty_eof && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
                prompt_read(s);
                return 0;
        }
        if (!s->tty_eof && (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !s->exited) {
                k = buffer_fill(&s->to_pty, s->client_tty);
                if (k == 0 || (k < 0 && k != -EAGAIN && k != -ENOBUFS)) {
                        s->tty_eof = true;
                        s->to_tty.len = 0;
                        session_close(s, "the client's terminal closed");
                }
        }
        pty_final_read(s);
        relay_update(s);
        maybe_finish(s);
        return 0;
}

static int on_pty(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Session *s = userdata;
        ssize_t k;

        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                k = buffer_fill(&s->to_tty, s->pty_master);
                /* EIO: every slave closed, i.e. the command and its exec client are done. */
                if (k == 0 || (k < 0 && k != -EAGAIN && k != -ENOBUFS))
                        s->pty_eof = true;
        }
        if (revents & EPOLLOUT) {
                k = buffer_drain(&s->to_pty, s->pty_master);
                if (k < 0 && k != -EAGAIN)
                        s->pty_eof = true;
        }
        pty_final_read(s);
        relay_update(s);
        maybe_finish(s);
        return 0;
}

/*
 * After the exec client exited, what the PTY holds is the command's
 * last output; a process left inside may still hold the terminal, so the
 * end is "nothing more to read now", not EOF. A full buffer waits for the
 * client's terminal to take some first.
 */
static void pty_final_read(Session *s) {
        if (!s->exited || s->pty_eof || s->pty_master < 0)
                return;
        for (;;) {
                ssize_t k = buffer_fill(&s->to_tty, s->pty_master);
                if (k > 0)
                        continue;
                if (k != -ENOBUFS)
                        s->pty_eof = true;
                return;
        }
}

/* Which directions may move now: a full buffer stops reading its source. */
static void relay_update(Session *s) {
        uint32_t tty_events = 0, pty_events = 0;

        if (s->client_tty < 0 || s->pty_master < 0)
                return;
        /* During a prompt only the human's keys move, to the prompt, and the prompt's text. */
        if (s->prompting) {
                if (s->pty_source)
                        (void) sd_event_source_set_enabled(s->pty_source, SD_EVENT_OFF);
                if (s->tty_source) {
                        (void) sd_event_source_set_io_events(s->tty_source,
                                                             EPOLLIN | (s->prompt_out && s->prompt_out->len ? EPOLLOUT : 0));
                        (void) sd_event_source_set_enabled(s->tty_source, s->tty_eof ? SD_EVENT_OFF : SD_EVENT_ON);
                }
                return;
        }
        if (!s->tty_eof && s->prompt_out && s->prompt_out->len > 0)
                tty_events |= EPOLLOUT;
        if (!s->tty_eof && !s->exited && s->to_pty.len < SESSION_BUFFER_SIZE)
                tty_events |= EPOLLIN;
        if (!s->tty_eof && s->to_tty.len > 0)
                tty_events |= EPOLLOUT;
        if (!s->pty_eof && s->to_tty.len < SESSION_BUFFER_SIZE)
                pty_events |= EPOLLIN;
        if (!s->pty_eof && !s->exited && s->to_pty.len > 0)
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
        ssize_t k;

        if (p->to_file) {
                k = pump_to_file(p);
                if (k == 0 || (k < 0 && k != -EAGAIN))
                        pump_close(p);
                return 0;
        }

        /* stdin: refill from the file, write into the pipe. */
        if (p->buf->len == 0) {
                k = read(p->file, p->buf->data, SESSION_BUFFER_SIZE);
                if (k <= 0) {
                        pump_close(p);  /* EOF (or error) reaches the command as EOF */
                        return 0;
                }
                p->buf->start = 0;
                p->buf->len = (size_t) k;
        }
        k = write(p->pipe, p->buf->data + p->buf->start, p->buf->len);
        if (k < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        pump_close(p);
                return 0;
        }
        p->buf->start += (size_t) k;
        p->buf->len -= (size_t) k;
        return 0;
}

/* Sets up fd i; *ret_child is the fd the command gets (owned by the caller), set only on success. */
static int stdio_prepare(Session *s, int i, int client_fd, int *ret_child) {
        FilePump *p = &s->pumps[i];
        _cleanup_close_ int fd = -EBADF, child = -EBADF;
        struct stat st;
        int pipefd[2], r;

        fd = fcntl(client_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode)) {
                *ret_child = TAKE_FD(fd);
                return 0;
        }

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        p->to_file = i > 0;
        p->file = TAKE_FD(fd);
        p->pipe = p->to_file ? pipefd[0] : pipefd[1];
        (void) fcntl(p->pipe, F_SETFL, O_NONBLOCK);
        child = p->to_file ? pipefd[1] : pipefd[0];   /* the command's end */
        if (!p->to_file) {
                p->buf = calloc(1, sizeof(Buffer));
                if (!p->buf)
                        return -ENOMEM;
        }
        r = sd_event_add_io(s->event, &p->source, p->pipe, p->to_file ? EPOLLIN : EPOLLOUT, on_pump, p);
        if (r < 0)
                return r;
        *ret_child = TAKE_FD(child);
        return 0;
}

/* After the command: whatever it wrote before it exited reaches the files. */
static void pumps_drain(Session *s) {
        for (int i = 1; i < 3; i++)
                if (s->pumps[i].pipe >= 0 && s->pumps[i].to_file)
                        while (pump_to_file(&s->pumps[i]) > 0)
                                ;
}

/* ---------------------------------------------- the exec client's own words */

static void diag_flush(Session *s) {
        if (s->diag_len == 0)
                return;
        s->diag_line[s->diag_len] = 0;
        log_session(LOG_WARNING, s->id, "%s", s->diag_line);
        memcpy(s->diag_last, s->diag_line, s->diag_len + 1);
        s->diag_len = 0;
}

/* Reads what is there; a line (or what fills the buffer) goes to the log. Returns 0 at EOF. */
static ssize_t diag_read(Session *s) {
        char b[4096];
        ssize_t k = read(s->diag_fd, b, sizeof(b));

        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
        for (ssize_t i = 0; i < k; i++) {
                if (b[i] == '\n') {
                        diag_flush(s);
                        continue;
                }
                s->diag_line[s->diag_len++] = b[i] >= ' ' && b[i] != 0x7f ? b[i] : '?';
                if (s->diag_len == sizeof(s->diag_line) - 1)
                        diag_flush(s);
        }
        return k;
}

/* Everything the client wrote so far, to the log (and diag_last), a partial last line too. */
static void diag_drain(Session *s) {
        if (s->diag_fd >= 0)
                while (diag_read(s) > 0)
                        ;
        diag_flush(s);
}

static void diag_close(Session *s) {
        diag_drain(s);
        s->diag_source = sd_event_source_disable_unref(s->diag_source);
        s->diag_fd = safe_close(s->diag_fd);
}

static int on_diag(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Session *s = userdata;
        ssize_t k = diag_read(s);

        if (k == 0 || (k < 0 && k != -EAGAIN))
                diag_close(s);
        return 0;
}

/* -------------------------------------------------------------- lifetime */

/* Restores the client's terminal and lets go of it. */
static void terminal_release(Session *s) {
        s->tty_source = sd_event_source_disable_unref(s->tty_source);
        s->pty_source = sd_event_source_disable_unref(s->pty_source);
        if (s->client_tty < 0)
                return;
        if (s->termios_saved)
                (void) tcsetattr(s->client_tty, TCSANOW, &s->saved_termios);
        s->client_tty = safe_close(s->client_tty);
}

Session *session_free(Session *s) {
        if (!s)
                return NULL;
        /* An exec client still running is killed, and reaped by the loop later. */
        event_child_release(s->child_source);
        sd_event_source_disable_unref(s->kill_timer);
        sd_event_source_disable_unref(s->settle_timer);
        process_free(s->killer);
        diag_close(s);
        terminal_release(s);
        free(s->prompt_out);
        safe_close(s->pty_master);
        for (int i = 0; i < 3; i++)
                pump_close(&s->pumps[i]);
        sd_bus_track_unref(s->track);
        sandbox_exec_free(s->exec);
        free(s->owner);
        free(s->reason);
        strv_free(s->argv);
        free(s);
        return NULL;
}

/*
 * The session is over once its exec client exited and, with a
 * terminal, everything the command printed reached the client's terminal
 * (or that terminal is gone). Then the terminal's modes are restored, and
 * only then is the owner told: the client exits when it hears of it.
 */
static void maybe_finish(Session *s) {
        if (!s->exited)
                return;
        if (s->terminal && s->client_tty >= 0 && !s->tty_eof &&
            (!s->pty_eof || s->to_tty.len > 0 || (s->prompt_out && s->prompt_out->len > 0)))
                return;
        pumps_drain(s);
        terminal_release(s);
        s->exited = false;      /* report once */
        log_session(LOG_INFO, s->id, "Session ended: status %d%s%s", s->exit_status, s->reason ? ", " : "",
                    strempty(s->reason));
        /* Last: ended() frees s. */
        s->cb.ended(s, s->exit_status, s->reason, s->userdata);
}

static int on_settled(sd_event_source *src, uint64_t usec, void *userdata) {
        Session *s = userdata;

        s->settle_timer = sd_event_source_disable_unref(s->settle_timer);
        /* The command never started: say so as a shell would (127). A
         * program missing inside is lazaret-exec's to report (it started,
         * and exits 127 with the reason); here not even lazaret-exec
         * started, and the exec client's last line says why. */
        if (s->exit_status >= 128 && !s->closing && s->exec && !sandbox_exec_started(s->exec)) {
                diag_drain(s);
                free(s->reason);
                if ((s->diag_last[0] ? asprintf(&s->reason, "%s could not be started in the sandbox (%s)", s->argv[0],
                                                s->diag_last)
                                     : asprintf(&s->reason,
                                                "%s could not be started in the sandbox (its exec client, lazaret-runsc, "
                                                "ended with status %d before it started, and said nothing)",
                                                s->argv[0], s->exit_status)) < 0)
                        s->reason = NULL;
                s->exit_status = 127;
        }
        s->exited = true;
        pty_final_read(s);
        relay_update(s);
        maybe_finish(s);
        return 0;
}

static void on_killer_done(Process *p, int status, const char *output, void *userdata);

static int on_killer_timeout(sd_event_source *src, uint64_t usec, void *userdata) {
        Session *s = userdata;

        on_killer_done(NULL, -ETIMEDOUT, NULL, s);
        return 0;
}

/*
 * The session's processes inside were killed (or could not be): the
 * session ends. p is NULL when the killer did not finish or start.
 */
static void on_killer_done(Process *p, int status, const char *output, void *userdata) {
        Session *s = userdata;
        const char *what = status == 0 ? "its processes in the sandbox were killed"
                         : status == -ETIMEDOUT ? "its processes in the sandbox may still run (killing them did not finish in time)"
                         : "its processes in the sandbox may still run (killing them failed)";
        char *reason = NULL;

        s->killer = process_free(s->killer);
        s->kill_timer = sd_event_source_disable_unref(s->kill_timer);
        if (asprintf(&reason, "%s; %s.", strempty(s->reason), what) >= 0) {
                free(s->reason);
                s->reason = reason;
        }
        /* maybe_finish() logs the end with this reason. */
        (void) on_settled(NULL, 0, s);
}

/*
 * The exec client itself was killed on the host (not the command: then
 * the client exits with 128+N): the command and what it started run on inside,
 * where nobody could reach them any more. They are killed before the
 * session ends, within the time a close gets.
 */
static void end_inside(Session *s, pid_t pid, int sig) {
        int r;

        free(s->reason);
        if (asprintf(&s->reason, "The session's exec client (lazaret-runsc, pid %d on the host) was killed by signal %d (SIG%s)",
                     (int) pid, sig, strna(sigabbrev_np(sig))) < 0)
                s->reason = NULL;
        r = sandbox_exec_kill_session(s->exec, on_killer_done, s, &s->killer);
        if (r >= 0)
                r = sd_event_add_time_relative(s->event, &s->kill_timer, CLOCK_MONOTONIC, SESSION_KILL_USEC, 0,
                                               on_killer_timeout, s);
        if (r < 0)
                on_killer_done(NULL, r, NULL, s);
}

static int on_child(sd_event_source *src, const siginfo_t *si, void *userdata) {
        Session *s = userdata;
        pid_t pid = s->pid;

        s->pid = 0;
        s->child_source = sd_event_source_disable_unref(s->child_source);
        s->kill_timer = sd_event_source_disable_unref(s->kill_timer);
        s->exit_status = spawn_status_from_siginfo(si->si_code, si->si_status);
        if (!s->closing && (si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED) && sandbox_exec_started(s->exec)) {
                end_inside(s, pid, si->si_status);
                return 0;
        }
        /* The exec client ends with 128 or more when the sandbox under it died:
         * give the supervisor's report a moment to arrive, so that the
         * session ends with the Domain's reason rather than the client's words. */
        if (s->exit_status >= 128 && !s->closing &&
            sd_event_add_time_relative(s->event, &s->settle_timer, CLOCK_MONOTONIC, SESSION_SETTLE_USEC, 0,
                                       on_settled, s) >= 0)
                return 0;
        return on_settled(NULL, 0, s);
}

static int on_kill_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        Session *s = userdata;

        /* The command did not go in time: end its exec client. */
        s->kill_timer = sd_event_source_disable_unref(s->kill_timer);
        if (s->child_source)
                (void) sd_event_source_send_child_signal(s->child_source, SIGKILL, NULL, 0);
        return 0;
}

void session_close(Session *s, const char *why) {
        /* The killer runs: the session is ending already. */
        if (s->closing || s->exited || s->killer)
                return;
        s->closing = true;
        if (!s->reason)
                s->reason = strdup(why);
        log_session(LOG_INFO, s->id, "Closing session: %s", why);
        /* The command's processes inside go first (its whole session, so
         * that no background child of it stays); the exec client then
         * exits and on_child() ends the session. */
        if (s->terminal && s->child_source)
                (void) sd_event_source_send_child_signal(s->child_source, SIGHUP, NULL, 0);
        if (sandbox_exec_kill_session(s->exec, NULL, NULL, NULL) < 0 && s->child_source)
                (void) sd_event_source_send_child_signal(s->child_source, SIGKILL, NULL, 0);
        (void) sd_event_add_time_relative(s->event, &s->kill_timer, CLOCK_MONOTONIC, SESSION_KILL_USEC, 0,
                                          on_kill_timer, s);
}

void session_abandon(Session *s) {
        if (s->exec && s->pid > 0)
                (void) sandbox_exec_signal(s->exec, SIGKILL);
        /* What fits into the terminal now; nothing waits for a stalled one. */
        if (s->client_tty >= 0 && !s->tty_eof) {
                if (s->pty_master >= 0)
                        (void) buffer_fill(&s->to_tty, s->pty_master);
                (void) buffer_drain(&s->to_tty, s->client_tty);
                (void) buffer_drain(&s->to_tty, s->client_tty);
        }
        pumps_drain(s);
        terminal_release(s);
}

static int on_owner_gone(sd_bus_track *track, void *userdata) {
        Session *s = userdata;

        /* Nobody reads the terminal any more: nothing is left to deliver. */
        s->tty_eof = true;
        s->to_tty.len = 0;
        session_close(s, "its client disconnected");
        maybe_finish(s);
        return 0;
}

int session_resize(Session *s, uint16_t rows, uint16_t cols) {
        struct winsize ws = { .ws_row = rows, .ws_col = cols };

        if (rows == 0 || cols == 0)
                return -EINVAL;
        if (ioctl(s->pty_master, TIOCSWINSZ, &ws) < 0)
                return -errno;
        /* The exec client forwards SIGWINCH to the command inside. */
        if (s->child_source)
                return sd_event_source_send_child_signal(s->child_source, SIGWINCH, NULL, 0);
        return 0;
}

int session_signal(Session *s, const char *event) {
        static const struct {
                const char *name;
                int sig;
        } events[] = {
                { "interrupt", SIGINT },
                { "quit", SIGQUIT },
                { "suspend", SIGTSTP },
                { "hangup", SIGHUP },
                { "terminate", SIGTERM },
        };

        for (size_t i = 0; i < ELEMENTSOF(events); i++) {
                if (!streq(event, events[i].name))
                        continue;
                /* With a terminal, the exec client forwards to the foreground process group. */
                if (s->terminal)
                        return s->child_source ? sd_event_source_send_child_signal(s->child_source, events[i].sig, NULL, 0)
                                               : -ESRCH;
                return sandbox_exec_signal(s->exec, events[i].sig);
        }
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

/* A new session's identity: its random ID and its Session Anchor key pair, the private half as hex (SR-9). */
static int session_identity(Session *s, char anchor_hex[static 2 * ESC_KEY_LEN + 1]) {
        uint8_t anchor[ESC_KEY_LEN];
        sd_id128_t rnd;
        int r;

        r = sd_id128_randomize(&rnd);
        if (r < 0)
                return r;
        sd_id128_to_string(rnd, s->id);
        r = esc_key_generate(anchor, s->anchor_pub);
        if (r < 0)
                return r;
        hexify(anchor, sizeof(anchor), anchor_hex);
        explicit_bzero(anchor, sizeof(anchor));
        return 0;
}

/*
 * The three standard streams a client passed, checked for what runsc would
 * only fail on later, with its own words, and made ready for the command
 * (stdio_prepare()). On failure none is left open and error says why.
 */
static int session_stdio(Session *s, const int fds[3], int stdio[3], sd_bus_error *error) {
        static const char *const names[] = { "standard input", "standard output", "standard error" };
        int r;

        for (int i = 0; i < 3; i++) {
                struct stat st;
                int fl = fcntl(fds[i], F_GETFL);

                if (fl < 0 || fstat(fds[i], &st) < 0)
                        r = sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "The %s passed is not an open file", names[i]);
                else if (S_ISDIR(st.st_mode))
                        r = sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "The %s passed is a directory", names[i]);
                else if (i == 0 && (fl & O_ACCMODE) == O_WRONLY)
                        r = sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "The standard input passed is not open for reading");
                else if (i > 0 && (fl & O_ACCMODE) == O_RDONLY)
                        r = sd_bus_error_setf(error, LAZARET_ERROR_INVALID_ARGS, "The %s passed is not open for writing", names[i]);
                else
                        r = stdio_prepare(s, i, fds[i], &stdio[i]);
                if (r < 0) {
                        for (int j = 0; j < i; j++)
                                stdio[j] = safe_close(stdio[j]);
                        if (sd_bus_error_is_set(error))
                                return r;
                        return sd_bus_error_set_errnof(error, -r, "Cannot set up the session's standard streams: %m");
                }
        }
        return 0;
}

/* The started session's events: its command's exit (pidfd), its terminal's relay, its owner leaving the bus. */
static int session_watch(Session *s, sd_bus *bus, int pidfd) {
        int r;

        r = event_watch_child(s->event, &s->child_source, s->pid, pidfd, on_child, s);
        if (r < 0)
                return r;
        if (s->diag_fd >= 0) {
                r = sd_event_add_io(s->event, &s->diag_source, s->diag_fd, EPOLLIN, on_diag, s);
                if (r < 0)
                        return r;
        }
        if (s->terminal) {
                r = sd_event_add_io(s->event, &s->tty_source, s->client_tty, EPOLLIN, on_tty, s);
                if (r >= 0)
                        r = sd_event_add_io(s->event, &s->pty_source, s->pty_master, EPOLLIN, on_pty, s);
                if (r < 0)
                        return r;
                relay_update(s);
        }
        r = sd_bus_track_new(bus, &s->track, on_owner_gone, s);
        if (r >= 0)
                r = sd_bus_track_add_name(s->track, s->owner);
        return r;
}

#define ANCHOR_HEX_SIZE (2 * ESC_KEY_LEN + 1)

/* Its terminal or pipes, then its command in the sandbox (sandbox_exec()), watched. */
static int session_start(Session *s, const SessionParams *p, char anchor_hex[static ANCHOR_HEX_SIZE],
                         sd_bus_error *error) {
        _cleanup_close_ int slave = -EBADF, pidfd = -EBADF;
        int stdio[3] = { -EBADF, -EBADF, -EBADF }, diag[2];
        int r;

        if (p->terminal) {
                r = setup_terminal(s, p->fds[0], p->rows, p->cols, &slave);
                if (r < 0)
                        r = sd_bus_error_set_errnof(error, -r, "Cannot set up the session's terminal: %m");
                stdio[0] = stdio[1] = stdio[2] = slave;
        } else
                r = session_stdio(s, p->fds, stdio, error);
        if (r < 0)
                return r;       /* the caller clears the key */

        /* The exec client's own words: into the log, not the command's output. */
        if (pipe2(diag, O_CLOEXEC) < 0)
                diag[0] = diag[1] = -EBADF;
        else
                (void) fcntl(diag[0], F_SETFL, O_NONBLOCK);     /* our end only */
        s->diag_fd = diag[0];
        r = sandbox_exec(p->runtime,
                         &(SandboxExecParams) { .session_id = s->id, .argv = s->argv, .client_env = p->env,
                                                .terminal = p->terminal, .stdio = stdio, .diag_fd = diag[1],
                                                .session_key = p->escalation ? anchor_hex : NULL },
                         &s->exec, &s->pid, &pidfd);
        safe_close(diag[1]);
        /* Only the session's process has the private half now (its process spec is removed with it). */
        explicit_bzero(anchor_hex, ANCHOR_HEX_SIZE);
        /* The command has them now (or never will). */
        if (!p->terminal)
                for (int i = 0; i < 3; i++)
                        safe_close(stdio[i]);
        if (r < 0)
                return sd_bus_error_setf(error, LAZARET_ERROR_SPAWN, "Cannot start the session's command: %s", strerror(-r));
        slave = safe_close(slave);

        return session_watch(s, p->bus, TAKE_FD(pidfd));
}

int session_new(const SessionParams *p, Session **ret, sd_bus_error *error) {
        _cleanup_(session_freep) Session *s = NULL;
        struct timespec ts;
        char anchor_hex[ANCHOR_HEX_SIZE];
        int r;

        if (!p->runtime)
                return sd_bus_error_set(error, LAZARET_ERROR_NOT_READY, "The sandbox is not running");
        s = calloc(1, sizeof(Session));
        if (!s)
                return -ENOMEM;
        s->event = p->event;
        s->cb = p->cb;
        s->userdata = p->userdata;
        s->client_tty = s->pty_master = s->diag_fd = -EBADF;
        for (int i = 0; i < 3; i++)
                s->pumps[i] = (FilePump) { .file = -EBADF, .pipe = -EBADF };
        s->terminal = p->terminal;
        s->owner_pid = p->owner_pid;
        (void) clock_gettime(CLOCK_REALTIME, &ts);
        s->started_usec = (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
        r = session_identity(s, anchor_hex);
        if (r < 0)
                return r;
        s->owner = strdup(p->owner ?: "");
        s->argv = strv_copy(p->argv);
        if (!s->owner || !s->argv) {
                explicit_bzero(anchor_hex, sizeof(anchor_hex));
                return -ENOMEM;
        }

        /* What the command may ask for at once exists before it starts: a command that
         * escalates as its first act must find its mailbox names (before, they were made
         * after the start, and a command quick enough found no doorbell). */
        if (p->prepare) {
                r = p->prepare(s, p->userdata, error);
                if (r < 0 || sd_bus_error_is_set(error)) {
                        explicit_bzero(anchor_hex, sizeof(anchor_hex));
                        return r < 0 ? r : -EIO;
                }
        }
        r = session_start(s, p, anchor_hex, error);
        explicit_bzero(anchor_hex, sizeof(anchor_hex));
        if (r < 0 || sd_bus_error_is_set(error)) {
                if (p->prepare && p->unprepare)
                        p->unprepare(s, p->userdata);
                return r < 0 ? r : -EIO;
        }
        log_session(LOG_INFO, s->id, "Session opened for %s (pid %d)%s: %s", s->owner, (int) s->owner_pid,
                    s->terminal ? " with a terminal" : "", s->argv[0]);
        *ret = TAKE_PTR(s);
        return 0;
}
