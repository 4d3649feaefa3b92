/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-coordinator DOMAIN-ID: the Host Coordinator, run by
 * lazaret@DOMAIN-ID.service. See manager.h for its lifecycle.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <systemd/sd-daemon.h>

#include "bundle.h"
#include "bus-util.h"
#include "cleanup.h"
#include "domain.h"
#include "log.h"
#include "manager.h"

static int on_term(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        log_info("Received %s; stopping", si->ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        manager_stop(m, NULL);
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_free_ char *why = NULL;
        sigset_t mask;
        int r;

        if (argc != 2 || !domain_id_is_valid(argv[1])) {
                fprintf(stderr, "Usage: %s DOMAIN-ID\n(started by lazaret@DOMAIN-ID.service)\n", argv[0]);
                return 2;
        }

        /* Children are reaped by the event loop; signals arrive as events.
         * Children get a clean mask and dispositions from spawn(). */
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        umask(0077);
        (void) bus_register_error_map();

        /* The one process the coordinator waits for, before its loop runs. */
        bundle_find_host_excludes();

        r = manager_new(argv[1], &m);
        if (r < 0) {
                log_error_errno(r, "Cannot set up the coordinator");
                return 1;
        }
        (void) sd_event_add_signal(m->event, NULL, SIGTERM, on_term, m);
        (void) sd_event_add_signal(m->event, NULL, SIGINT, on_term, m);

        r = manager_startup(m, &why);
        if (r < 0)
                manager_stop(m, why ?: "the coordinator could not start the Domain (see its log)");

        r = sd_event_loop(m->event);
        if (r < 0) {
                log_error_errno(r, "Event loop failed");
                return 1;
        }
        return r;
}
