/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "anchor.h"
#include "cleanup.h"
#include "fs-util.h"
#include "path-util.h"
#include "state-anchor.h"
#include "util.h"

/* The image's directory at sandbox path dir: 0 with its path, 1 if the image has none, < 0 refused. */
static int open_lower(int rootfd, const char *rootfs, const char *dir, char **ret_path, char **ret_error) {
        struct open_how how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        _cleanup_close_ int fd = -EBADF;
        char *path;

        fd = (int) syscall(SYS_openat2, rootfd, dir + 1, &how, sizeof(how));
        if (fd < 0 && errno == ENOENT)
                return 1;
        if (fd < 0 && errno == ELOOP)
                return errorf(ret_error, -ELOOP, "persistent_dirs: %s is a symbolic link (or lies below one) in the image; "
                              "list the directory it points to instead", dir);
        if (fd < 0 && errno == ENOTDIR)
                return errorf(ret_error, -ENOTDIR, "persistent_dirs: %s is not a directory in the image", dir);
        if (fd < 0)
                return errorf(ret_error, -errno, "cannot open %s in the image's root file system %s: %m", dir, rootfs);
        path = path_join(rootfs, dir + 1);
        if (!path)
                return -ENOMEM;
        *ret_path = path;
        return 0;
}

static int add_layer(int rootfd, const char *rootfs, const char *state, const char *dir,
                     MountPlan *plan, char **ret_error) {
        _cleanup_free_ char *name = NULL, *layer = NULL, *lower = NULL;
        int r;

        r = state_anchor_layer_name(dir, &name);
        if (r < 0)
                return r == -ENOMEM ? r : errorf(ret_error, r, "persistent_dirs: \"%s\" is not a clean absolute path", dir);
        layer = path_join(state, name);
        if (!layer)
                return -ENOMEM;
        r = mkdir_mode(layer, 0700);
        if (r < 0)
                return errorf(ret_error, r, "cannot create the State Anchor layer %s: %s", layer, strerror(-r));

        r = open_lower(rootfd, rootfs, dir, &lower, ret_error);
        if (r < 0)
                return r;
        if (r > 0) {
                /* The image has no such directory: the layer starts from nothing. */
                lower = path_join(layer, STATE_ANCHOR_EMPTY_LOWER);
                if (!lower)
                        return -ENOMEM;
                r = mkdir_mode(lower, 0755);
                if (r < 0)
                        return errorf(ret_error, r, "cannot create %s: %s", lower, strerror(-r));
        }
        return mount_plan_add(plan, &(MountEntry) {
                                      .part = MOUNT_PART_STATE_ANCHOR,
                                      .kind = MOUNT_SUPERVISOR,
                                      .destination = (char *) dir,
                                      .source = lower,
                                      .fstype = (char *) STATE_ANCHOR_FSTYPE,
                                      .data = layer,
                              }, ret_error);
}

int anchor_plan(const Domain *d, int rootfd, const char *rootfs, MountPlan *plan, char **ret_error) {
        _cleanup_free_ char *state = NULL;
        size_t n0 = plan->n_entries;
        int r;

        if (!d->profile->persistent_dirs || !d->profile->persistent_dirs[0])
                return 0;
        state = path_join(d->domain_dir, STATE_ANCHOR_DIR);
        if (!state)
                return -ENOMEM;
        r = mkdir_mode(state, 0700);
        if (r < 0)
                return errorf(ret_error, r, "cannot create %s: %s", state, strerror(-r));
        for (char **dir = d->profile->persistent_dirs; *dir; dir++) {
                r = add_layer(rootfd, rootfs, state, *dir, plan, ret_error);
                if (r < 0) {
                        mount_plan_truncate(plan, n0);
                        return r;
                }
        }
        return 0;
}
