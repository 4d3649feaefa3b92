/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-setid-responder: the set-ID filter's responder (setid-responder.h)
 * as a supervised helper of the Runtime Supervisor. fd 3: readiness (one
 * byte); fd 4: the filter's listener. It drops every capability, sets
 * NO_NEW_PRIVS and loads its allowlist before it is ready; its death ends
 * the Domain (a call waiting for it would wait for ever).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <seccomp.h>

#include "harden.h"
#include "macro.h"
#include "setid-responder.h"

#define READY_FD 3
#define NOTIFY_FD 4

#define RESPONDER_SYSCALLS(X) \
        X(ioctl) X(pidfd_open) X(pidfd_getfd) X(fcntl) X(fstat) X(newfstatat) X(fchmod) X(close) X(write) \
        X(exit) X(exit_group) X(rt_sigreturn) X(restart_syscall)

int main(int argc, char *argv[]) {
#define NR(name) SCMP_SYS(name),
        static const int allowed[] = { RESPONDER_SYSCALLS(NR) };
#undef NR
        int r;

        (void) argv;
        if (argc != 1 || fcntl(NOTIFY_FD, F_SETFD, FD_CLOEXEC) < 0 || fcntl(READY_FD, F_SETFD, FD_CLOEXEC) < 0) {
                fprintf(stderr, "lazaret-setid-responder is started by lazaret-supervisor only.\n");
                return 2;
        }
        r = harden_drop_privileges();
        if (r >= 0)
                r = harden_load_allowlist(allowed, ELEMENTSOF(allowed));
        if (r < 0) {
                fprintf(stderr, "lazaret-setid-responder: cannot enter its sandbox: %s\n", strerror(-r));
                return 1;
        }
        if (write(READY_FD, "R", 1) != 1)
                return 1;
        (void) close(READY_FD);
        r = setid_responder_serve(NOTIFY_FD);
        fprintf(stderr, "lazaret-setid-responder: the set-ID filter's listener failed: %s\n", strerror(-r));
        return 1;
}
