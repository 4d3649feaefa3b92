/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl's side of OR-1: a Domain runs exactly while a coordinator
 * holds its Domain lock (<domain_dir>/coordinator.lock), which the
 * coordinator takes first and releases last, by exiting, after its
 * sessions, sandbox, helpers and mounts are gone. So "stopped" means "the
 * lock is free" (and, after a coordinator that was killed, its sandbox
 * scope gone too), for every verb: `stop` returns when it is, and a verb
 * that needs a stopped Domain waits, bounded and saying so, for one that
 * is going down, instead of refusing it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "bus-names.h"
#include "cleanup.h"
#include "ctl.h"
#include "domain-lock.h"
#include "macro.h"
#include "path-util.h"

static void on_alarm(int sig) {
        (void) sig;     /* only to interrupt flock() */
}

/* flock() that gives up after timeout_s: -ETIMEDOUT. */
static int flock_within(int fd, int op, unsigned timeout_s) {
        struct sigaction sa = { .sa_handler = on_alarm }, old;      /* no SA_RESTART: flock() returns EINTR */
        int r, e;

        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGALRM, &sa, &old) < 0)
                return -errno;
        alarm(timeout_s);
        r = flock(fd, op);
        e = errno;
        alarm(0);
        (void) sigaction(SIGALRM, &old, NULL);
        if (r < 0)
                return e == EINTR ? -ETIMEDOUT : -e;
        return 0;
}

/*
 * Whether the Domain whose lock is held is going down rather than running:
 * its coordinator no longer owns the bus name (it releases it when teardown
 * begins, after the sessions ended), or says it is stopping or failed, or
 * serves only the store's questions (maintenance), which it is told to end.
 * A coordinator still starting has no name yet either; it is waited for
 * like one going down, and the wait says so if it runs out.
 */
static bool going_down(sd_bus *bus, const char *id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *state = NULL;
        char name[BUS_NAME_MAX];

        if (!bus)
                return true;    /* no bus: nobody can be using it as a running Domain */
        domain_bus_name(id, name);
        if (sd_bus_get_property_string(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "State", &error, &state) < 0)
                /* No owner, or an owner without the Domain object: starting, or withdrawn by teardown. */
                return sd_bus_error_has_names(&error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                                              SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_UNKNOWN_OBJECT,
                                              SD_BUS_ERROR_UNKNOWN_INTERFACE, SD_BUS_ERROR_UNKNOWN_PROPERTY);
        /* A maintenance coordinator (lazaretctl's questions about a stopped Domain's store) is asked
         * to end now rather than after its idle timeout: the Domain is stopped. */
        if (streq(state, "maintenance")) {
                (void) sd_bus_call_method(bus, name, LAZARET_BUS_PATH, LAZARET_BUS_INTERFACE, "Stop", NULL, NULL, "");
                return true;
        }
        return streq(state, "stopping") || streq(state, "failed");
}

/*
 * Whether the Domain's sandbox scope (the supervisor, runsc, the view and
 * the mounts of the Domain's state they hold) still has processes. The
 * lock alone does not say so: a coordinator killed without its teardown
 * drops the lock at once, and the user manager stops the scope it was
 * bound to (BindsTo=) only after that.
 */
static bool sandbox_scope_active(sd_bus *bus, const char *id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *state = NULL;
        char scope[UNIT_NAME_MAX];
        const char *path;

        domain_scope_name(id, scope);
        if (sd_bus_call_method(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "GetUnit", &error, &reply, "s", scope) < 0)
                return false;   /* NoSuchUnit: never started, or collected */
        if (sd_bus_message_read(reply, "o", &path) < 0)
                return false;
        if (sd_bus_get_property_string(bus, "org.freedesktop.systemd1", path, "org.freedesktop.systemd1.Unit",
                                       "ActiveState", &error, &state) < 0)
                return false;
        return !streq(state, "inactive") && !streq(state, "failed");
}

/* Waits, at most timeout_s, until the sandbox scope has ended; -ETIMEDOUT otherwise. Says so once if it waits. */
static int wait_sandbox_scope(sd_bus *bus, const char *id, unsigned timeout_s) {
        if (!bus)
                return 0;       /* no user manager: no scope of ours either */
        for (unsigned i = 0; i < timeout_s * 10; i++) {
                if (!sandbox_scope_active(bus, id))
                        return 0;
                if (i == 0)
                        fprintf(stderr, "Domain %s has no coordinator, but its sandbox scope is still being stopped; "
                                "waiting for it (at most %u s)...\n", id, timeout_s);
                (void) usleep(100 * 1000);
        }
        fprintf(stderr, "The sandbox scope of Domain %s is still there after %u s: see systemctl --user status "
                "lazaret-%s-sandbox.scope.\n", id, timeout_s, id);
        return -ETIMEDOUT;
}

/* One connection to the user bus for all of a verb's looks; NULL where there is none. */
static sd_bus *open_user_bus(void) {
        sd_bus *bus = NULL;

        if (sd_bus_open_user(&bus) < 0)
                return NULL;
        (void) sd_bus_set_method_call_timeout(bus, CTL_REPLY_TIMEOUT_USEC);
        return bus;
}

static int open_lock(const char *domain_dir, bool create, int *ret_fd) {
        _cleanup_free_ char *path = path_join(domain_dir, "coordinator.lock");
        int fd;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | (create ? O_CREAT : 0), 0600);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

int ctl_domain_wait_stopped(const char *domain_dir, const char *id, unsigned timeout_s, bool say) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = open_user_bus();
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = open_lock(domain_dir, false, &fd);
        if (r == -ENOENT)
                return 0;       /* never ran here */
        if (r < 0) {
                fprintf(stderr, "Cannot open the Domain lock of %s: %s\n", id, strerror(-r));
                return r;
        }
        if (flock(fd, LOCK_SH | LOCK_NB) == 0)
                return wait_sandbox_scope(bus, id, timeout_s);
        if (errno != EWOULDBLOCK) {
                fprintf(stderr, "Cannot lock the Domain lock of %s: %m\n", id);
                return -errno;
        }
        if (say)
                fprintf(stderr, "Domain %s is stopping; waiting for its coordinator to finish (at most %u s)...\n", id,
                        timeout_s);
        r = flock_within(fd, LOCK_SH, timeout_s);
        if (r == 0) {
                r = wait_sandbox_scope(bus, id, timeout_s);
                return r < 0 ? r : 1;
        }
        if (r == -ETIMEDOUT)
                fprintf(stderr, "Domain %s still has a coordinator after %u s (it holds the Domain lock): see "
                        "systemctl --user status lazaret@%s.service.\n", id, timeout_s, id);
        else if (r < 0)
                fprintf(stderr, "Cannot lock the Domain lock of %s: %s\n", id, strerror(-r));
        return r;
}

int ctl_domain_lock_stopped(const char *domain_dir, const char *id, const char *verb, bool create, int *ret_fd) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = open_user_bus();
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = open_lock(domain_dir, create, &fd);
        if (r == -ENOENT && !create) {
                *ret_fd = -EBADF;
                return 0;       /* never ran here: nothing holds it */
        }
        if (r < 0) {
                if (r != -ENOENT)
                        fprintf(stderr, "Cannot open the Domain lock of %s: %s\n", id, strerror(-r));
                return r;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno != EWOULDBLOCK) {
                        fprintf(stderr, "Cannot lock the Domain lock of %s: %m\n", id);
                        return -errno;
                }
                r = -EBUSY;
                for (unsigned waited = 0; waited < CTL_STOP_WAIT_SEC; waited++) {
                        /* Re-judged each second: one that was starting and now runs is refused. */
                        if (!going_down(bus, id)) {
                                fprintf(stderr, "Domain %s is active: its coordinator holds the Domain lock, and its "
                                        "sessions, sandbox and overlay mounts may be using the state. Stop it first "
                                        "(lazaretctl stop %s), then %s again.\n", id, id, verb);
                                return -EBUSY;
                        }
                        if (waited == 0)
                                fprintf(stderr, "Domain %s is not running but its coordinator is still there (stopping, "
                                        "or starting); waiting for it before the %s (at most %u s)...\n",
                                        id, verb, CTL_STOP_WAIT_SEC);
                        r = flock_within(fd, LOCK_EX, 1);
                        if (r != -ETIMEDOUT)
                                break;
                }
                if (r == -ETIMEDOUT || r == -EBUSY) {
                        fprintf(stderr, "Domain %s still has a coordinator after %u s; nothing was changed. See "
                                "systemctl --user status lazaret@%s.service.\n", id, CTL_STOP_WAIT_SEC, id);
                        return -EBUSY;
                }
                if (r < 0) {
                        fprintf(stderr, "Cannot lock the Domain lock of %s: %s\n", id, strerror(-r));
                        return r;
                }
        }
        /* The lock is ours: no coordinator can start. What a killed one left is waited for too. */
        r = wait_sandbox_scope(bus, id, CTL_STOP_WAIT_SEC);
        if (r < 0)
                return -EBUSY;
        *ret_fd = TAKE_FD(fd);
        return 0;
}
