/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "cleanup.h"
#include "process.h"
#include "sandbox.h"

/*
 * One command of a session inside the running sandbox: a process spec
 * written to the sessions directory and a `runsc exec --process` client,
 * started as the plain user. The caller watches the client through the
 * pidfd it gets and owns the SandboxExec (which removes its files when freed).
 * The command's standard streams reach it through `--pass-fd`, not as the
 * client's own: what runsc exec itself says (of a sandbox gone under it,
 * say) goes to diag_fd, for the Domain's log, never into the command's
 * output.
 */
typedef struct SandboxExec SandboxExec;

typedef struct SandboxExecParams {
        const char *session_id;
        char **argv;
        char **client_env;      /* validated NAME=VALUE entries from the client */
        bool terminal;          /* stdio[0] is the PTY slave: it becomes the controlling terminal */
        const int *stdio;       /* 3 fds: the command's standard streams */
        int diag_fd;            /* runsc exec's own standard output and error (-EBADF: /dev/null) */
        const char *session_key;        /* the Session Anchor's private half (hex), or NULL */
} SandboxExecParams;

int sandbox_exec(const SandboxRuntime *rt, const SandboxExecParams *p, SandboxExec **ret, pid_t *ret_pid, int *ret_pidfd);
SandboxExec *sandbox_exec_free(SandboxExec *x);
DEFINE_TRIVIAL_CLEANUP_FUNC(SandboxExec *, sandbox_exec_free);

/* Whether the command's process ever started inside (runsc wrote its PID). */
bool sandbox_exec_started(SandboxExec *x);

/* `runsc kill --pid INNER`: to the command's process inside (not waited for). */
int sandbox_exec_signal(SandboxExec *x, int sig);

/*
 * `runsc exec CONTAINER /run/lazaret/init --kill-session INNER`: SIGKILL to
 * every process of the command's session inside (gVisor makes each exec'd
 * process the leader of its own session), its background children
 * included. With done, the helper is watched (process_run()); without, it
 * is not waited for. -ESRCH when the command never started inside.
 */
int sandbox_exec_kill_session(SandboxExec *x, ProcessDone done, void *userdata, Process **ret);
/* Runs `lazaret-init --forget-mailbox SESSION-ID...` in the sandbox, detached: gVisor then drops the names
 * of those sessions' mailbox files the host removed (spec 5.6 step 5). */
int sandbox_forget_mailbox(const SandboxRuntime *rt, char *const *session_ids);
