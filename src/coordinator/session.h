/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <termios.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "escalation-proto.h"
#include "sandbox.h"
#include "sandbox-exec.h"
#include "term-prompt.h"

#define SESSION_ID_LEN 32
#define SESSION_BUFFER_SIZE (64 * 1024)

typedef struct Buffer {
        char data[SESSION_BUFFER_SIZE];
        size_t start, len;
} Buffer;

typedef struct Session Session;

/*
 * While a prompt is up, each byte the human types reaches this instead of
 * the sandbox (escalation.c). Replies to terminal queries (escape
 * sequences) are dropped before it.
 */
typedef void (*SessionPromptInput)(Session *s, unsigned char key, void *userdata);

/*
 * gVisor reads and writes a regular file passed as a standard stream at
 * offset 0, not at the file's offset, and ignores O_APPEND's position. A
 * regular file is therefore never handed to runsc: the command gets a pipe
 * and the coordinator copies between the pipe and the file, through the
 * client's own open file description (its offset and flags).
 */
typedef struct FilePump {
        int file;               /* the client's fd (dup) */
        int pipe;               /* our end of the pipe */
        bool to_file;           /* stdout/stderr: pipe -> file; stdin: file -> pipe */
        sd_event_source *source;
        Buffer *buf;
} FilePump;

/*
 * What a session tells its owner, from the event loop: it is over (its
 * command exited, or it was closed, and with a terminal the last output
 * reached the client's terminal and its modes were restored). The owner
 * then announces it and frees the session.
 */
typedef struct SessionCallbacks {
        void (*ended)(Session *s, int exit_status, const char *reason, void *userdata);
} SessionCallbacks;

/*
 * A Client Session: one command in the sandbox, owned by one bus connection.
 * With a terminal, the coordinator owns the PTY master (FR-14) and relays
 * between it and the client's terminal, which it holds in raw mode for the
 * session and restores afterwards, whatever became of the client (DX-5).
 * Nothing here ever waits on a peer: both directions have a bounded buffer,
 * and a full buffer stops reading from the other side (back-pressure on
 * this session only).
 */
struct Session {
        Session *next, *prev;   /* the owner's list */
        sd_event *event;
        SessionCallbacks cb;
        void *userdata;

        char id[SESSION_ID_LEN + 1];
        char *owner;            /* unique bus name of the client */
        pid_t owner_pid;
        sd_bus_track *track;
        char **argv;
        uint64_t started_usec;  /* CLOCK_REALTIME */
        bool terminal;

        /* Without a terminal: pumps for regular files. */
        FilePump pumps[3];

        /* With a terminal. */
        int client_tty;         /* our own open file description of the client's terminal */
        struct termios saved_termios;
        bool termios_saved;
        int pty_master;
        sd_event_source *tty_source;
        sd_event_source *pty_source;
        Buffer to_pty, to_tty;
        bool tty_eof, pty_eof;

        /* The Session Anchor (spec section 5.5): the public half of the key
         * whose private half only this session's process got. */
        uint8_t anchor_pub[ESC_KEY_LEN];

        /* An escalation prompt on the client's terminal. */
        bool prompting;
        SessionPromptInput prompt_input;
        void *prompt_userdata;
        TermInput prompt_in;    /* the parser of what the client's terminal sends */
        uint64_t prompt_ready_usec;     /* CLOCK_MONOTONIC from which keys count; UINT64_MAX: not written whole yet */
        Buffer *prompt_out;     /* the prompt's text on its way to the client's terminal */

        /* The runsc exec client that runs the command. */
        SandboxExec *exec;
        pid_t pid;
        sd_event_source *child_source;
        bool closing;           /* its processes are being killed */
        bool exited;            /* the runsc exec client is gone; draining */
        int exit_status;
        char *reason;
        sd_event_source *kill_timer;
        sd_event_source *settle_timer;
        Process *killer;        /* lazaret-init --kill-session, after runsc exec was killed */

        /* What runsc exec itself says, line by line into the Domain's log (never to the client). */
        int diag_fd;
        sd_event_source *diag_source;
        char diag_line[512];
        size_t diag_len;
        char diag_last[512];    /* its last line, for the reason of a command that never started */
};

typedef struct SessionParams {
        sd_event *event;
        sd_bus *bus;
        const SandboxRuntime *runtime;
        char **argv;            /* not empty */
        char **env;
        bool terminal;
        int fds[3];             /* borrowed; terminal: fds[0] only */
        uint16_t rows, cols;
        const char *owner;
        pid_t owner_pid;
        bool escalation;        /* hand the session its Session Anchor key (escalation enabled) */
        SessionCallbacks cb;
        void *userdata;
        /* Called with userdata once the session has its ID and key, before its command
         * starts: makes what the command may ask for at once (the escalation mailbox's
         * names). < 0 refuses the session (error set by it or not); nothing starts. */
        int (*prepare)(Session *s, void *userdata, sd_bus_error *error);
        /* Undoes prepare when the session is refused after it. */
        void (*unprepare)(Session *s, void *userdata);
} SessionParams;

int session_new(const SessionParams *p, Session **ret, sd_bus_error *error);
int session_resize(Session *s, uint16_t rows, uint16_t cols);
/* event: interrupt, quit, suspend, hangup, terminate. -EINVAL for others. */
int session_signal(Session *s, const char *event);
/* Kills the session's processes; ended() follows from the loop. */
void session_close(Session *s, const char *why);
/*
 * For the owner's teardown: ends the session now, without reporting: the
 * command is killed, what is buffered is offered to the client's terminal
 * without waiting, and the terminal's modes are restored.
 */
void session_abandon(Session *s);
/*
 * The approval prompt (SR-7, spec 5.6): stops relaying in both directions
 * (what the sandbox writes is held in the PTY and its writers
 * back-pressured; what the human types goes to input once the prompt was
 * written whole and a quiet period passed), then draws p from a terminal
 * state Lazaret chose (term_prompt_reset) at the bottom of the screen, with
 * an approve key drawn at random: *ret_approve, or 0 when the prompt does
 * not fit the window and approval is not offered here. -ENOTTY without a
 * terminal, -EBUSY when a prompt is up already.
 */
int session_prompt_begin(Session *s, const TermPrompt *p, SessionPromptInput input, void *userdata, char *ret_approve);
/* The prompt drawn again whole (after an edit): a new approve key, a new quiet period. */
int session_prompt_redraw(Session *s, const TermPrompt *p, char *ret_approve);
/* More text while the prompt is up (echo of an edit, a new question). */
void session_prompt_write(Session *s, const char *text);
/* Ends it: text is written last, relaying resumes, the command gets SIGWINCH to redraw. */
void session_prompt_end(Session *s, const char *text);
/*
 * A line of Lazaret's own between what the sandbox prints (a denied name,
 * spec 4.5): through the prompt's buffer, which reaches the client's
 * terminal before the sandbox's output and never blocks. Nothing without
 * a terminal.
 */
void session_notice(Session *s, const char *text);

Session *session_free(Session *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Session *, session_free);
