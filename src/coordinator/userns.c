/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "log.h"
#include "process.h"
#include "spawn-util.h"
#include "strv.h"
#include "userns.h"

/* Where the child finds its end of the synchronisation pipes. */
#define CHILD_SYNC_FD 4
#define CHILD_GO_FD 5

struct UsernsChild {
        sd_event *event;
        UsernsCallbacks cb;
        void *userdata;
        pid_t pid;
        sd_event_source *child_source;
        int sync_fd;            /* the child writes 'u' once it has unshared */
        sd_event_source *sync_source;
        int go_fd;              /* we write 'g' to let it exec */
        int error_fd;           /* its setup errno, should it fail before exec */
        /* newuidmap and newgidmap, run at the same time: each writes its own map of the child */
        Process *uid_mapper, *gid_mapper;
        SubidRange uids, gids;
        bool uid_done, gid_done, mapping_failed;
};

pid_t userns_child_pid(const UsernsChild *c) {
        return c->pid;
}

UsernsChild *userns_child_free(UsernsChild *c) {
        if (!c)
                return NULL;
        process_free(c->uid_mapper);
        process_free(c->gid_mapper);
        sd_event_source_disable_unref(c->sync_source);
        event_child_release(c->child_source);
        safe_close(c->sync_fd);
        safe_close(c->go_fd);
        safe_close(c->error_fd);
        free(c);
        return NULL;
}

/* SR-12: the map must be exactly what we asked for, read back from the kernel. */
static int verify_map(pid_t pid, const char *file, uint32_t id, const SubidRange *range) {
        int r = subid_map_check_pid(pid, file, id, range);

        if (r < 0)
                return log_error_errno(r, "/proc/%d/%s does not hold the expected mapping (0 %u 1, 1 %u %u)", (int) pid,
                                       file, id, range->start, SUBID_COUNT);
        return 0;
}

static void fail(UsernsChild *c, const char *why) {
        c->cb.failed(c, why, c->userdata);
}

static void on_mapper_done(Process *p, int status, const char *output, void *userdata) {
        UsernsChild *c = userdata;
        bool gid = p == c->gid_mapper;
        const char *tool = gid ? "newgidmap" : "newuidmap";

        /* output is the process's: logged before it is freed. */
        if (status != 0)
                log_error("%s failed (%d): %s", tool, status, isempty(output) ? "no message" : output);
        if (gid) {
                c->gid_mapper = process_free(c->gid_mapper);
                c->gid_done = status == 0;
        } else {
                c->uid_mapper = process_free(c->uid_mapper);
                c->uid_done = status == 0;
        }
        if (c->mapping_failed)
                return;         /* said once, by the first that failed */
        if (status != 0) {
                c->mapping_failed = true;
                fail(c, "cannot set up the sandbox's user namespace (newuidmap/newgidmap failed; see the log)");
                return;
        }
        if (!c->uid_done || !c->gid_done)
                return;         /* the other one still writes its map */
        if (verify_map(c->pid, "uid_map", getuid(), &c->uids) < 0 ||
            verify_map(c->pid, "gid_map", getgid(), &c->gids) < 0) {
                c->mapping_failed = true;
                fail(c, "the sandbox's user namespace does not hold the expected mapping (see the log)");
                return;
        }
        c->cb.mapped(c, c->userdata);
}

static int run_mapper(UsernsChild *c, const char *tool, uint32_t id, const SubidRange *range, Process **ret) {
        _cleanup_strv_free_ char **argv = NULL;
        int r;

        r = subid_mapper_argv(tool, c->pid, id, range, &argv);
        if (r == -ENOENT)
                return log_error_errno(r, "%s is not installed; install the uidmap package", tool);
        if (r < 0)
                return r;
        return process_run(c->event, argv, on_mapper_done, c, ret);
}

static int on_sync(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        UsernsChild *c = userdata;
        char ch = 0;
        ssize_t k;
        int r;

        k = read(fd, &ch, 1);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        c->sync_source = sd_event_source_disable_unref(c->sync_source);
        c->sync_fd = safe_close(c->sync_fd);
        if (k != 1 || ch != 'u') {
                fail(c, "cannot create a user namespace (are unprivileged user namespaces enabled?)");
                return 0;
        }
        /* Both at once: the two maps are separate files of the child, written by separate set-ID helpers. */
        r = run_mapper(c, "newuidmap", getuid(), &c->uids, &c->uid_mapper);
        if (r >= 0)
                r = run_mapper(c, "newgidmap", getgid(), &c->gids, &c->gid_mapper);
        if (r < 0) {
                c->mapping_failed = true;
                fail(c, "cannot set up the sandbox's user namespace (see the log)");
        }
        return 0;
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        UsernsChild *c = userdata;
        int r;

        c->pid = 0;
        c->child_source = sd_event_source_disable_unref(c->child_source);
        /* It has ended: its error pipe holds an errno or nothing, at once. */
        r = spawn_read_error(c->error_fd);
        c->error_fd = safe_close(c->error_fd);
        if (r < 0)
                log_error_errno(r, "The child in the sandbox's user namespace could not start");
        c->cb.exited(c, spawn_status_from_siginfo(si->si_code, si->si_status), c->userdata);
        return 0;
}

int userns_child_start(sd_event *e, char *const *argv, int keep_fd, int stderr_fd, const SubidRange *uids,
                       const SubidRange *gids,
                       const UsernsCallbacks *cb, void *userdata, UsernsChild **ret) {
        _cleanup_(userns_child_freep) UsernsChild *c = NULL;
        _cleanup_close_ int sync_w = -EBADF, go_r = -EBADF, pidfd = -EBADF;
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        int p[2], pass[3], r;

        c = calloc(1, sizeof(UsernsChild));
        if (!c)
                return -ENOMEM;
        c->event = e;
        c->cb = *cb;
        c->userdata = userdata;
        c->uids = *uids;
        c->gids = *gids;
        c->sync_fd = c->go_fd = c->error_fd = -EBADF;

        /* Our ends never wait (one byte into an empty pipe); the child's ends block. */
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        c->sync_fd = p[0];
        sync_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        go_r = p[0];
        c->go_fd = p[1];
        if (fcntl(c->sync_fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(c->go_fd, F_SETFL, O_NONBLOCK) < 0)
                return -errno;

        pass[0] = keep_fd;              /* fd 3 */
        pass[1] = sync_w;               /* fd 4 = CHILD_SYNC_FD */
        pass[2] = go_r;                 /* fd 5 = CHILD_GO_FD */
        o.argv = argv;
        o.stdio[2] = stderr_fd;
        o.pass_fds = pass;
        o.n_pass_fds = 3;
        o.die_with_parent = true;
        o.child_hook = userns_child_hook;
        o.hook_userdata = &(UsernsHook) { .sync_fd = CHILD_SYNC_FD, .go_fd = CHILD_GO_FD };
        /* Not spawn(): the hook waits for userns_child_go(). */
        r = spawn_async(&o, &c->pid, &pidfd, &c->error_fd);
        if (r < 0)
                return r;
        r = event_watch_child(e, &c->child_source, c->pid, TAKE_FD(pidfd), on_child_exit, c);
        if (r < 0)
                return r;
        r = sd_event_add_io(e, &c->sync_source, c->sync_fd, EPOLLIN, on_sync, c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

int userns_child_go(UsernsChild *c) {
        if (write(c->go_fd, "g", 1) != 1)
                return -errno;
        c->go_fd = safe_close(c->go_fd);
        return 0;
}
