/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/*
 * The hand-over of an approved host command to a spare (spec 5.6 step 4):
 * lazaret-spare waits on a SOCK_SEQPACKET socket (its fd 3) inside a
 * transient scope the coordinator made for it beforehand; the coordinator
 * sends it one datagram of one byte carrying SPARE_FD_COUNT descriptors:
 * the command in a memfd, the working directory, and the standard output
 * and error capture pipes. The command is the resolved program's absolute
 * path and then argv[0..argc-1], each NUL-terminated, nothing else. Its
 * environment is the spare's own, set when it was started. A spare that
 * reads end-of-file instead runs nothing.
 */
enum {
        SPARE_FD_COMMAND,
        SPARE_FD_CWD,
        SPARE_FD_STDOUT,
        SPARE_FD_STDERR,
        SPARE_FD_COUNT,
};

#define SPARE_SOCKET_FD 3               /* the spare's socket */
#define SPARE_PROGRAM_MAX 4096
#define SPARE_ARGC_MAX 256              /* = ESC_ARGC_MAX */
#define SPARE_ARG_MAX 4096              /* = ESC_ARG_MAX */
#define SPARE_COMMAND_MAX (SPARE_PROGRAM_MAX + 1 + SPARE_ARGC_MAX * (SPARE_ARG_MAX + 1))

/* program (absolute) and argv (1 to SPARE_ARGC_MAX words) as one buffer. -EINVAL on a limit or a missing part. */
int spare_command_format(const char *program, char *const *argv, char **ret, size_t *ret_len);

/*
 * The inverse, in place: *ret_program and (*ret_argv)[i] point into buf
 * (the array is allocated, NULL-terminated). -EBADMSG for anything else
 * than what spare_command_format() makes.
 */
int spare_command_parse(const char *buf, size_t len, const char **ret_program, char ***ret_argv);

/* Sends fds[SPARE_FD_COUNT] over sock without blocking. */
int spare_send(int sock, const int fds[SPARE_FD_COUNT]);

/*
 * Waits for the hand-over on sock: 1 with the descriptors (O_CLOEXEC) in
 * ret_fds, 0 at end-of-file (nothing to run), -EBADMSG for a datagram that
 * carries anything else than exactly SPARE_FD_COUNT descriptors.
 */
int spare_receive(int sock, int ret_fds[SPARE_FD_COUNT]);
