/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/*
 * The Runtime Supervisor's reports to its coordinator, one per SOCK_SEQPACKET
 * datagram, in text so that a person reading a trace understands them:
 *
 *   READY                 the container runs; the supervisor is confined
 *   STARTED <line>        where the start spent its time, one printable line
 *                         for the Domain's log (sent once, before READY)
 *   FAILED <reason>       start-up failed; reason is one printable line
 *   EXITED <status>       the container's init ended (0..255; 128+N: signal N)
 *   NETWORK <digest> <helper-pid> <netns>
 *                         the network was attested from inside the sandbox
 *                         (sent once, before READY): digest is the installed
 *                         policy's SHA-256 (64 lowercase hex digits),
 *                         helper-pid slirp4netns' PID in the supervisor's PID
 *                         namespace (1..4194304), netns the enforcement
 *                         namespace's inode number (decimal, non-zero)
 *   MAILBOX               the Escalation Mailbox's file system (spec section
 *                         5.6): the datagram carries, as SCM_RIGHTS, exactly
 *                         one descriptor, the mailbox's root directory (sent
 *                         once, before NETWORK, when the plan has a mailbox)
 *
 * Nothing else is valid: unknown words, missing or extra arguments, bytes
 * outside printable ASCII, a status that is not a plain decimal number in
 * range, or a datagram longer than SUPERVISOR_MSG_MAX are refused, and so
 * is a descriptor on any message but MAILBOX, or a MAILBOX without one.
 */

#define SUPERVISOR_MSG_MAX 1024
#define SUPERVISOR_REASON_MAX (SUPERVISOR_MSG_MAX - 8)

typedef enum SupervisorMsgType {
        SUPERVISOR_READY,
        SUPERVISOR_FAILED,
        SUPERVISOR_EXITED,
        SUPERVISOR_NETWORK,
        SUPERVISOR_MAILBOX,
        SUPERVISOR_STARTED,
} SupervisorMsgType;

#define SUPERVISOR_DIGEST_HEX_LEN 64

typedef struct SupervisorMsg {
        SupervisorMsgType type;
        int status;                             /* EXITED */
        char digest[SUPERVISOR_DIGEST_HEX_LEN + 1]; /* NETWORK */
        int helper_pid;                         /* NETWORK */
        unsigned long long netns;               /* NETWORK */
        char reason[SUPERVISOR_REASON_MAX + 1]; /* FAILED, STARTED */
} SupervisorMsg;

/*
 * Encodes msg into buf (size SUPERVISOR_MSG_MAX); returns the length. A
 * reason is cut at SUPERVISOR_REASON_MAX bytes and every byte that is not
 * printable ASCII becomes '?', so encoding never fails for a valid type.
 */
int supervisor_msg_encode(const SupervisorMsg *msg, char buf[static SUPERVISOR_MSG_MAX]);

/* Decodes one datagram of n bytes; -EBADMSG for anything not in the grammar. */
int supervisor_msg_decode(const char *buf, size_t n, SupervisorMsg *ret);


/*
 * The transport: one datagram on a SOCK_SEQPACKET socket. send() passes fd
 * (as SCM_RIGHTS) with a MAILBOX, and refuses one with any other type
 * (-EINVAL). recv() is non-blocking: -EAGAIN when nothing waits, 0 at the
 * peer's end (*ret untouched), 1 with a message; a MAILBOX's descriptor
 * (close-on-exec) goes to *ret_fd, which is -EBADF for the others. A
 * datagram outside the grammar, a truncated one or one whose descriptors
 * do not fit its type is -EBADMSG, and any descriptor it carried is closed.
 */
int supervisor_msg_send(int sock, const SupervisorMsg *msg, int fd);
int supervisor_msg_recv(int sock, SupervisorMsg *ret, int *ret_fd);
