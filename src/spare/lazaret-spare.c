/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-spare: the process an approved host command becomes (spec 5.6
 * step 4). The coordinator starts it ahead of time with spawn() (empty
 * signal mask, default dispositions, its own session, SIGKILL when the
 * coordinator dies, the command environment, standard streams on
 * /dev/null, no fd but its socket) and puts it in a transient scope of its
 * own; only once the scope holds it does the coordinator hand it a command
 * (spare-proto.h). It then executes that command and nothing else: the
 * command starts inside its scope, without waiting for one. End-of-file
 * on the socket means that no command comes; it exits without running
 * anything. Exit status 126: the hand-over was malformed; 127: the execve
 * failed (the coordinator reports either as the command's status). Its
 * one argument, the Domain ID, is there for ps(1); it reads none.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs-util.h"
#include "spare-proto.h"

extern char **environ;

int main(void) {
        int fds[SPARE_FD_COUNT], r;
        const char *program;
        char **cargv, *buf = NULL;
        size_t len;

        r = spare_receive(SPARE_SOCKET_FD, fds);
        if (r == 0)
                return EXIT_SUCCESS;
        if (r < 0)
                return 126;
        (void) close(SPARE_SOCKET_FD);
        if (lseek(fds[SPARE_FD_COMMAND], 0, SEEK_SET) < 0 ||
            read_full_fd(fds[SPARE_FD_COMMAND], SPARE_COMMAND_MAX, &buf, &len) < 0 ||
            spare_command_parse(buf, len, &program, &cargv) < 0)
                return 126;
        if (fchdir(fds[SPARE_FD_CWD]) < 0 || dup2(fds[SPARE_FD_STDOUT], STDOUT_FILENO) < 0 ||
            dup2(fds[SPARE_FD_STDERR], STDERR_FILENO) < 0)
                return 126;
        /* The received descriptors are O_CLOEXEC; the dup2() copies are the command's stdout and stderr. */
        (void) execve(program, cargv, environ);
        return 127;
}
