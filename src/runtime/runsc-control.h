/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

/*
 * runsc's control socket, as `runsc exec` and `runsc kill --pid` speak it
 * (spec section 4.4, "Sessions without runsc's start-up"): each call is one
 * connection to the sandbox's control socket (a path in runsc's root
 * directory, named in the container's state file), one JSON object
 * {"method": ..., "arg": ...} written with the files it carries attached to
 * its first bytes (SCM_RIGHTS), and one JSON object back,
 * {"success": B, "err": "...", "result": ...}. Verified against runsc
 * 0.0~20240729 (Debian 13) and gVisor's sources up to release-20260817.
 */

#define RUNSC_METHOD_EXECUTE_ASYNC "containerManager.ExecuteAsync"
#define RUNSC_METHOD_WAIT_PID "containerManager.WaitPID"
#define RUNSC_METHOD_SIGNAL "containerManager.Signal"

/* runsc's SignalDeliveryMode (runsc/boot/controller.go). */
enum {
        RUNSC_SIGNAL_TO_PROCESS = 0,
        RUNSC_SIGNAL_TO_FOREGROUND_GROUP = 2,
};

/* The largest reply read; an ExecuteAsync, WaitPID or Signal reply is tens of bytes. */
#define RUNSC_REPLY_MAX (64 * 1024)
/* The largest state file read (it holds the container's whole OCI spec). */
#define RUNSC_STATE_MAX (1024 * 1024)

typedef struct RunscReply {
        bool success;
        char *err;              /* the server's words, invalid bytes and controls escaped; NULL when none */
        bool has_result;        /* result was an integer */
        int64_t result;
} RunscReply;

void runsc_reply_done(RunscReply *r);

/*
 * The length of the one JSON object at the start of buf (after white
 * space) once its closing brace is in buf: > 0 then, 0 while it is
 * incomplete, -EBADMSG when buf cannot start an object.
 */
ssize_t runsc_reply_length(const char *buf, size_t len);

/*
 * Reads a reply object (exactly len bytes, as runsc_reply_length() measured
 * it). 0 on success with *ret filled; -EBADMSG, with *ret_error saying why,
 * for anything but an object whose "success" is a boolean, whose "err" is a
 * string, and whose "result" is an integer, null, or an object.
 */
int runsc_reply_parse(const char *buf, size_t len, RunscReply *ret, char **ret_error);

/*
 * Whether a refused call's words say that the server did not understand the
 * call itself (an unknown method, JSON its Go types do not take), as a runsc
 * newer or older than the one this client was written against might: the
 * caller then lets runsc's own client make it.
 */
bool runsc_err_is_protocol(const char *err);

/* A capability's bit from its OCI name ("CAP_CHOWN"); -EINVAL for a name runsc does not know. */
int runsc_capability_from_name(const char *name);

/*
 * The container as its state file (`<root>/<id>_sandbox:<sandbox>.state`)
 * describes it: its status, the control socket, and the OCI process of its
 * spec (a reference the caller drops with json_object_put()).
 */
typedef struct RunscState {
        char *status;
        char *control_socket;
        json_object *process;   /* may be NULL */
} RunscState;

void runsc_state_done(RunscState *s);
int runsc_state_parse(const char *text, size_t len, RunscState *ret, char **ret_error);

/*
 * The call that starts a process: the ExecArgs runsc exec builds from an
 * OCI process (args, env, cwd, user, capabilities, terminal,
 * noNewPrivileges), where a member the process lacks comes from the
 * container's process as runsc takes it (its env, cwd and capabilities).
 * guest_fds are the descriptors the passed files become inside, ascending,
 * in the order the files travel. CAP_NET_RAW is left out of every set, as
 * runsc does without --net-raw.
 */
int runsc_exec_call(json_object *process, json_object *container_process, const char *container_id,
                    const int *guest_fds, size_t n_guest_fds, char **ret, char **ret_error);
int runsc_wait_call(const char *container_id, int32_t pid, char **ret);
int runsc_signal_call(const char *container_id, int32_t pid, int sig, int mode, char **ret);

/* Connects to the control socket at path (one longer than sun_path through /proc/self/fd). */
int runsc_connect(const char *path);

/* The most files one call of ours carries (urpc takes up to 128). */
#define RUNSC_FILES_MAX 16

/*
 * One call on a connected socket: runsc_send() writes call with the n_fds
 * files of fds attached; runsc_receive() reads the reply: a negative errno
 * for a failed write or read, -ECONNRESET for a server that closed before its
 * reply was whole, -EBADMSG (and *ret_error) for a reply that is not one.
 * Files the server sends back are closed. runsc_call() does both.
 */
int runsc_send(int fd, const char *call, const int *fds, size_t n_fds);
int runsc_receive(int fd, RunscReply *ret, char **ret_error);
int runsc_call(int fd, const char *call, const int *fds, size_t n_fds, RunscReply *ret, char **ret_error);
