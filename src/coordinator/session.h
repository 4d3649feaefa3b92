/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <termios.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "manager.h"

#define SESSION_BUFFER_SIZE (64 * 1024)

typedef struct Buffer {
        char data[SESSION_BUFFER_SIZE];
        size_t start, len;
} Buffer;

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
 * A Client Session: one command in the sandbox, owned by one bus connection.
 * With a terminal, the coordinator owns the PTY master (FR-14) and relays
 * between it and the client's terminal, which it holds in raw mode for the
 * session and restores afterwards, whatever became of the client (DX-5).
 */
struct Session {
        Manager *manager;
        Session *next, *prev;

        char id[RANDOM_ID_LEN + 1];
        char *owner;            /* unique bus name of the client */
        pid_t owner_pid;
        sd_bus_track *track;
        char **argv;
        uint64_t started_usec;
        bool terminal;

        /* Without a terminal: the client's stdin, stdout, stderr, and pumps for regular files. */
        int stdio[3];
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

        /* The runsc exec client that runs the command. */
        pid_t pid;
        sd_event_source *child_source;
        char *spec_path;
        char *pid_path;         /* where runsc writes the PID inside the sandbox */
        bool closing;           /* its processes are being killed */
        bool ending;
        sd_event_source *kill_timer;
};

typedef struct SessionParams {
        char **argv;            /* empty: the profile's command or a login shell */
        char **env;
        bool terminal;
        int fds[3];             /* borrowed; terminal: fds[0] only */
        uint16_t rows, cols;
        const char *owner;
        pid_t owner_pid;
} SessionParams;

int session_new(Manager *m, const SessionParams *p, Session **ret, sd_bus_error *error);
Session *session_find(Manager *m, const char *id);
int session_resize(Session *s, uint16_t rows, uint16_t cols);
/* event: interrupt, quit, suspend, hangup, terminate. -EINVAL for others. */
int session_signal(Session *s, const char *event);
/* Kills the session's processes; it ends when its runsc exec client exits. */
void session_close(Session *s, const char *why);
/* Ends now: emits SessionEnded, releases everything, unlinks it. */
void session_end(Session *s, int exit_status, const char *reason);
void session_free(Session *s);
