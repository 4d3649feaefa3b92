/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's invalidations, written by a process of the view's own.
 */
#include "view.h"

/*
 * The kernel is told by the notifier, a process of the view's own
 * (notifier_start()), through a pipe of Inval records (v->notify_fd); the
 * view's threads never make a notification while it runs.
 */

/* A fence record: no name can be this long. Its node is a sequence number the notifier writes back. */
#define INVAL_FENCE UINT16_MAX
/* How long the watcher waits for a fence's answer: a notification waits while a request holds its directory. */
#define FENCE_WAIT_MS 100

void apply_inval(View *v, fuse_ino_t node, const char *name, size_t len, bool listing) {
        if (v->notify_fd >= 0) {
                Inval rec = { .node = node, .len = (uint16_t) len, .listing = listing };
                ssize_t k;

                memcpy(rec.name, name, len);
                /* One write of less than PIPE_BUF: whole, or not at all. It may wait
                 * for the notifier, never with v->lock held. */
                do
                        k = write(v->notify_fd, &rec, sizeof(rec));
                while (k < 0 && errno == EINTR);
                if (k == (ssize_t) sizeof(rec)) {
                        v->notify_fence_owed = true;
                        return;
                }
                fprintf(stderr, "lazaret-view: the notifier is gone (%s); the kernel is told of host changes "
                        "from the view itself from now on\n", k < 0 ? strerror(errno) : "short write");
                v->notify_fd = safe_close(v->notify_fd);
        }
        if (len > 0)
                (void) fuse_lowlevel_notify_inval_entry(v->se, node, name, len);
        /* The node's attributes and cached data: for a directory, its listing. */
        if (len == 0 || listing)
                (void) fuse_lowlevel_notify_inval_inode(v->se, node, 0, 0);
}

/*
 * Before the watchers inside hear of host changes: once the notifier has
 * written every invalidation handed to it so far to the kernel. It answers
 * a fence record after the notifications before it (its writes to the
 * connection return once the kernel dropped what they name), so the relay
 * inside never acts on an entry the kernel still caches. A notification
 * may wait while a request of the sandbox holds its directory: after
 * FENCE_WAIT_MS the lines go anyway, and the relay's own gathering inside
 * is the margin then (spec 6.4). Watcher thread only.
 */
void notify_fence(View *v) {
        Inval rec = { .node = ++v->notify_fence_seq, .len = INVAL_FENCE };
        uint64_t until = now_msec() + FENCE_WAIT_MS;
        ssize_t k;

        v->notify_fence_owed = false;
        if (v->notify_fd < 0 || v->notify_ack_fd < 0)
                return;
        do
                k = write(v->notify_fd, &rec, sizeof(rec));
        while (k < 0 && errno == EINTR);
        if (k != (ssize_t) sizeof(rec))
                return;
        for (uint64_t now; (now = now_msec()) < until;) {
                struct pollfd p = { .fd = v->notify_ack_fd, .events = POLLIN };
                uint64_t seq;

                if (poll(&p, 1, (int) (until - now)) <= 0)
                        continue;
                k = read(v->notify_ack_fd, &seq, sizeof(seq));
                if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
                        /* The notifier is gone: apply_inval() finds out on its next write. */
                        v->notify_ack_fd = safe_close(v->notify_ack_fd);
                        return;
                }
                /* An answer to an earlier fence that came after its wait: skipped. */
                if (k == (ssize_t) sizeof(seq) && seq == v->notify_fence_seq)
                        return;
        }
}

/* ---- the notifier ------------------------------------------------------------ */

/*
 * A notification to the kernel takes the lock of the entry's directory
 * (and the pages of a file it drops), which a request from the sandbox may
 * hold while it waits for the view's answer. A view thread waiting there
 * is in the kernel, beyond the reach of signals, and it keeps the view's
 * descriptors open after the other threads died: after the SIGKILL of the
 * Domain's scope the kernel would then never end the requests the dead
 * workers had read, and the request and the notification would wait for
 * each other for good. (Seen during a stop in the middle of a long rename:
 * the sandbox's scope never stopped, and the next launch could not make it
 * again.) So notifications are written by a process of their own, through
 * a clone of the connection, a file of its own (FUSE_DEV_IOC_CLONE): when
 * the view dies, its file goes, the kernel ends the requests read through
 * it, the lock is let go and the notifier's write ends.
 */

static _Noreturn void notifier_run(int in, int fuse, int ack) {
        for (;;) {
                Inval rec;
                ssize_t k = read(in, &rec, sizeof(rec));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k != (ssize_t) sizeof(rec))
                        _exit(k == 0 ? 0 : 1);          /* the view is gone */
                if (rec.len == INVAL_FENCE) {
                        /* Everything before it is written: its sequence number back. */
                        struct iovec iov = { &rec.node, sizeof(rec.node) };
                        (void) !writev(ack, &iov, 1);
                        continue;
                }
                if (rec.len > NAME_MAX)
                        continue;
                rec.name[rec.len] = 0;
                if (rec.len > 0 && fuse_notify_inval_entry_write(fuse, rec.node, rec.name, rec.len) == -ENODEV)
                        _exit(0);               /* unmounted */
                if ((rec.len == 0 || rec.listing) && fuse_notify_inval_inode_write(fuse, rec.node) == -ENODEV)
                        _exit(0);
        }
}

/* The notifier's few calls; anything else kills it. */
static int notifier_harden(void) {
        static const int allowed[] = { SCMP_SYS(read), SCMP_SYS(writev), SCMP_SYS(exit_group), SCMP_SYS(exit),
                                       SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall) };
        int r = harden_drop_privileges();

        return r < 0 ? r : harden_load_allowlist(allowed, ELEMENTSOF(allowed));
}

/*
 * The notifier's command line, where ps and systemctl status show it:
 * the view's program, then --notifier, in the memory of the view's own
 * arguments (which it no longer needs).
 */
static void notifier_retitle(int argc, char **argv) {
        char *lo = NULL, *hi = NULL;
        size_t a0;

        if (argc < 1)
                return;
        for (int i = 0; i < argc; i++) {
                char *e = argv[i] + strlen(argv[i]);
                if (!lo || argv[i] < lo)
                        lo = argv[i];
                if (!hi || e > hi)
                        hi = e;
        }
        a0 = strlen(lo);
        if (lo + a0 >= hi)
                return;
        memset(lo + a0 + 1, 0, (size_t) (hi - (lo + a0 + 1)));
        if ((size_t) (hi - (lo + a0 + 1)) >= strlen("--notifier"))
                memcpy(lo + a0 + 1, "--notifier", strlen("--notifier"));
}

/*
 * Starts the notifier (before any thread): a clone of the connection fuse,
 * a pipe, a child that keeps only those two. Where the clone cannot be
 * made (no /dev/fuse here), the view notifies the kernel itself, with
 * one line that says so.
 */
void notifier_start(View *v, int fuse, int argc, char **argv) {
        _cleanup_close_ int clone_fd = fuse_dev_clone(fuse);
        int p[2], a[2];
        pid_t view = getpid(), pid;

        if (clone_fd < 0) {
                fprintf(stderr, "lazaret-view: cannot clone the FUSE connection (%s); the view notifies the kernel "
                        "itself, and a stop while a request holds a directory may leave the Domain's scope "
                        "behind\n", strerror(-clone_fd));
                return;
        }
        if (pipe2(p, O_CLOEXEC) < 0) {
                fprintf(stderr, "lazaret-view: cannot make the notifier's pipe (%m); the view notifies the kernel "
                        "itself\n");
                return;
        }
        /* Its answers to fences; without them the relay's lines are not held
         * for invalidations, and the notifier answers into /dev/null. */
        if (pipe2(a, O_CLOEXEC) < 0) {
                a[0] = -1;
                a[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
        }
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "lazaret-view: cannot start the notifier (%m); the view notifies the kernel itself\n");
                safe_close(p[0]);
                safe_close(p[1]);
                safe_close(a[0]);
                safe_close(a[1]);
                return;
        }
        if (pid == 0) {
                /* Only the pipe, the clone and the answers' pipe, at 3, 4 and 5 (by
                 * way of numbers above all three): never the view's file of the
                 * connection. */
                int in = fcntl(p[0], F_DUPFD, 10), out = fcntl(clone_fd, F_DUPFD, 10), ack = fcntl(a[1], F_DUPFD, 10);

                if (in < 0 || out < 0 || ack < 0 || dup3(in, 3, 0) < 0 || dup3(out, 4, 0) < 0 ||
                    dup3(ack, 5, 0) < 0 || syscall(SYS_close_range, 6U, ~0U, 0U) < 0 ||
                    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != view ||
                    prctl(PR_SET_NAME, "lazaret-notify") < 0 || notifier_harden() < 0)
                        _exit(1);
                notifier_retitle(argc, argv);
                notifier_run(3, 4, 5);
        }
        safe_close(p[0]);
        safe_close(a[1]);
        /* A write to a notifier that died must fail (apply_inval() then
         * notifies itself), not kill the view: with no relay channel
         * nothing else ignores SIGPIPE. */
        (void) signal(SIGPIPE, SIG_IGN);
        v->notify_fd = p[1];
        v->notify_ack_fd = a[0];
}
