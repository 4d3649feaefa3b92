/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-init: PID 1 of every Lazaret sandbox. Sessions are started next to
 * it with `runsc exec`; their orphans are re-parented here and reaped, so no
 * zombie outlives its session. It exits on SIGTERM, SIGINT or SIGHUP, which
 * stops the container. Statically linked: it must not depend on the image.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
        sigset_t set;
        int sig;

        if (getpid() != 1)
                return 1;

        sigfillset(&set);
        sigprocmask(SIG_BLOCK, &set, NULL);

        for (;;) {
                if (sigwait(&set, &sig) != 0)
                        continue;
                if (sig == SIGCHLD) {
                        while (waitpid(-1, NULL, WNOHANG) > 0)
                                ;
                        continue;
                }
                if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
                        return 0;
        }
}
