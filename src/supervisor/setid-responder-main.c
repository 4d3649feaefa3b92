/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-setid-responder [--anchor=ID]...: the set-ID filter's responder
 * (setid-responder.h) as a supervised helper of the Runtime Supervisor,
 * started before the filter is loaded. fd 3: readiness (one byte); fd 4: a
 * unix socket on which the supervisor then sends the filter's listener.
 * Each --anchor names the file system of one State Anchor overlay
 * (AnchorId, setid-mode.h). It drops every capability but CAP_CHOWN,
 * CAP_FOWNER and CAP_FSETID, sets NO_NEW_PRIVS and loads its allowlist
 * before it is ready; its death ends the Domain (a call waiting for it
 * would wait for ever).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <seccomp.h>

#include "harden.h"
#include "macro.h"
#include "setid-responder.h"

#define READY_FD 3
#define LISTENER_SOCKET_FD 4
#define ANCHORS_MAX 64

#define RESPONDER_SYSCALLS(X) \
        X(ioctl) X(pidfd_open) X(pidfd_getfd) X(process_vm_readv) X(fcntl) X(fstat) X(newfstatat) X(fstatfs) \
        X(fchmod) X(fchownat) X(recvmsg) X(close) X(write) X(exit) X(exit_group) X(rt_sigreturn) X(restart_syscall)

static int parse_anchors(int argc, char *argv[], AnchorId *anchors, size_t *ret_n) {
        size_t n = 0;

        for (int i = 1; i < argc; i++) {
                const char *v = startswith(argv[i], "--anchor=");

                if (!v || n >= ANCHORS_MAX || anchor_id_parse(v, &anchors[n]) < 0)
                        return -EINVAL;
                n++;
        }
        *ret_n = n;
        return 0;
}

int main(int argc, char *argv[]) {
#define NR(name) SCMP_SYS(name),
        static const int allowed[] = { RESPONDER_SYSCALLS(NR) };
#undef NR
        const uint64_t keep = UINT64_C(1) << CAP_CHOWN | UINT64_C(1) << CAP_FOWNER | UINT64_C(1) << CAP_FSETID;
        AnchorId anchors[ANCHORS_MAX];
        size_t n_anchors;
        int r, notify_fd;

        if (parse_anchors(argc, argv, anchors, &n_anchors) < 0 || fcntl(LISTENER_SOCKET_FD, F_SETFD, FD_CLOEXEC) < 0 ||
            fcntl(READY_FD, F_SETFD, FD_CLOEXEC) < 0) {
                fprintf(stderr, "lazaret-setid-responder is started by lazaret-supervisor only.\n");
                return 2;
        }
        r = harden_drop_privileges_keep(keep);
        if (r >= 0)
                r = harden_load_allowlist(allowed, ELEMENTSOF(allowed));
        if (r < 0) {
                fprintf(stderr, "lazaret-setid-responder: cannot enter its sandbox: %s\n", strerror(-r));
                return 1;
        }
        if (write(READY_FD, "R", 1) != 1)
                return 1;
        (void) close(READY_FD);
        /* The supervisor loads the filter once we are ready; EOF: it gave up. */
        r = setid_listener_receive(LISTENER_SOCKET_FD, &notify_fd);
        if (r < 0) {
                fprintf(stderr, "lazaret-setid-responder: no listener came: %s\n", strerror(-r));
                return 1;
        }
        (void) close(LISTENER_SOCKET_FD);
        r = setid_responder_serve(notify_fd, anchors, n_anchors);
        fprintf(stderr, "lazaret-setid-responder: the set-ID filter's listener failed: %s\n", strerror(-r));
        return 1;
}
