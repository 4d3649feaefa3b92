/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "macro.h"
#include "mount-plan.h"
#include "path-util.h"
#include "supervisor-mounts.h"
#include "util.h"

static const char *what(const MountEntry *e) {
        switch (e->part) {
        case MOUNT_PART_ROOT:
                return "the image's root file system";
        case MOUNT_PART_WORKSPACE:
                return "the workspace";
        case MOUNT_PART_VOLUME:
                return "the volume";
        default:
                return "the mount source";
        }
}

static int stage_bind(const MountEntry *e, int stagefd, const char *name, char **ret_error) {
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        _cleanup_close_ int fd = -EBADF, tree = -EBADF;
        struct stat st;
        int r;

        /* Opened again here: a fd from the coordinator's mount namespace cannot be bound in ours. */
        r = path_walk(e->source, 0, &fd, &w);
        if (r == -ELOOP)
                return errorf(ret_error, -EPERM, "%s %s changed after it was checked: %s is now a symbolic link; "
                            "refusing to start", what(e), e->source, w.at ?: e->source);
        if (r < 0)
                return errorf(ret_error, r, "%s %s changed after it was checked: %s: %s; refusing to start", what(e),
                            e->source, w.at ?: e->source, strerror(-r));
        if (fstat(fd, &st) < 0)
                return errorf(ret_error, -errno, "cannot inspect %s: %m", e->source);
        if ((uint64_t) st.st_dev != e->id.dev || (uint64_t) st.st_ino != e->id.ino ||
            !!S_ISDIR(st.st_mode) != e->id.directory || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)))
                return errorf(ret_error, -EPERM, "%s %s changed after it was checked: it is no longer the %s that was "
                            "judged; refusing to start", what(e), e->source, e->id.directory ? "directory" : "file");

        if (e->id.directory ? mkdirat(stagefd, name, 0700) < 0
                            : mknodat(stagefd, name, S_IFREG | 0600, 0) < 0)
                return errorf(ret_error, -errno, "cannot create the staging point for %s: %m", e->source);
        tree = open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
        if (tree < 0)
                return errorf(ret_error, -errno, "cannot take a copy of the mount of %s: %m", e->source);
        if (e->read_only &&
            mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE,
                          &(struct mount_attr) { .attr_set = MOUNT_ATTR_RDONLY }, sizeof(struct mount_attr)) < 0)
                return errorf(ret_error, -errno, "cannot make the staged copy of %s read-only: %m", e->source);
        if (move_mount(tree, "", stagefd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return errorf(ret_error, -errno, "cannot stage %s: %m", e->source);
        return 0;
}

static int stage_filesystem(const MountEntry *e, const char *stage, const char *name, int stagefd,
                            char **ret_error) {
        _cleanup_free_ char *target = path_join(stage, name);
        unsigned long flags = MS_NOSUID | MS_NODEV | (e->read_only ? MS_RDONLY : 0);

        if (!target)
                return -ENOMEM;
        if (!streq(e->fstype, "tmpfs"))
                return errorf(ret_error, -EOPNOTSUPP, "the mount plan asks the supervisor for a %s file system at %s; "
                            "it makes only tmpfs", e->fstype, e->destination);
        if (mkdirat(stagefd, name, 0700) < 0)
                return errorf(ret_error, -errno, "cannot create the staging point for %s: %m", e->destination);
        if (mount(e->source, target, e->fstype, flags, e->data) < 0)
                return errorf(ret_error, -errno, "cannot mount a %s for %s: %m", e->fstype, e->destination);
        return 0;
}

/* The bundle's mount plan, and the path of its staging directory. */
static int read_plan(const char *bundle, MountPlan *plan, char **ret_stage, char **ret_error) {
        _cleanup_free_ char *path = path_join(bundle, MOUNT_PLAN_FILE), *stage = path_join(bundle, MOUNT_PLAN_STAGE_DIR),
                            *text = NULL, *why = NULL;
        size_t len;
        int r;

        if (!path || !stage)
                return -ENOMEM;
        r = read_full_file(path, MOUNT_PLAN_DOC_MAX, &text, &len);
        if (r < 0)
                return errorf(ret_error, r, "cannot read the mount plan %s: %s", path, strerror(-r));
        r = mount_plan_from_json(text, len, plan, &why);
        if (r < 0)
                return errorf(ret_error, r, "%s: %s", path, why ?: strerror(-r));
        *ret_stage = TAKE_PTR(stage);
        return 0;
}

int supmounts_open_workspace(const char *bundle, int *ret_fd, char **ret_error) {
        _cleanup_(mount_plan_done) MountPlan plan = {};
        _cleanup_free_ char *stage = NULL, *staged = NULL;
        int r, fd;

        r = read_plan(bundle, &plan, &stage, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < plan.n_entries; i++) {
                if (plan.entries[i].part != MOUNT_PART_WORKSPACE || plan.entries[i].kind != MOUNT_BIND)
                        continue;
                staged = mount_plan_staged_path(stage, i);
                if (!staged)
                        return -ENOMEM;
                fd = open(staged, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return errorf(ret_error, -errno, "cannot open the staged workspace %s: %m", staged);
                *ret_fd = fd;
                return 0;
        }
        return errorf(ret_error, -ENOENT, "the mount plan of %s has no workspace", bundle);
}

int supmounts_stage(const char *bundle, char **ret_error) {
        _cleanup_(mount_plan_done) MountPlan plan = {};
        _cleanup_free_ char *stage = NULL;
        _cleanup_close_ int stagefd = -EBADF;
        int r;

        r = read_plan(bundle, &plan, &stage, ret_error);
        if (r < 0)
                return r;

        /* Only we (root of this user namespace) can enter it, and only in this mount namespace. */
        if (mount("lazaret-stage", stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=1m") < 0)
                return errorf(ret_error, -errno, "cannot mount the staging directory %s: %m", stage);
        stagefd = open(stage, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (stagefd < 0)
                return errorf(ret_error, -errno, "cannot open the staging directory %s: %m", stage);

        for (size_t i = 0; i < plan.n_entries; i++) {
                const MountEntry *e = &plan.entries[i];
                char name[MOUNT_PLAN_STAGE_NAME_MAX];

                snprintf(name, sizeof(name), "%zu", i);
                switch (e->kind) {
                case MOUNT_BIND:
                        r = stage_bind(e, stagefd, name, ret_error);
                        break;
                case MOUNT_SUPERVISOR:
                        r = stage_filesystem(e, stage, name, stagefd, ret_error);
                        break;
                case MOUNT_SANDBOX:
                        r = 0;
                        break;
                default:
                        assert_not_reached();
                }
                if (r < 0)
                        return r;
        }
        /* Nothing more is staged: the staging directory itself becomes read-only. */
        if (mount(NULL, stage, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return errorf(ret_error, -errno, "cannot make the staging directory %s read-only: %m", stage);
        return 0;
}
