/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "helper.h"
#include "path-util.h"
#include "state-anchor.h"
#include "strv.h"
#include "supervisor-overlay.h"
#include "util.h"

typedef enum OverlayFormat {
        OVERLAY_UNDECIDED,
        OVERLAY_KERNEL,
        OVERLAY_FUSE,
} OverlayFormat;

#define FORMAT_FILE "format"
#define FORMAT_KERNEL "kernel-overlayfs-userxattr"
#define FORMAT_FUSE "fuse-overlayfs"

/* What this supervisor's first overlay found works (one check per start). */
static OverlayFormat chosen = OVERLAY_UNDECIDED;

/* The file systems of the overlays staged so far, for the set-ID responder. */
static AnchorId anchor_ids[SUPOVERLAY_ANCHORS_MAX];
static size_t n_anchor_ids;

size_t supoverlay_anchor_ids(const AnchorId **ret) {
        *ret = anchor_ids;
        return n_anchor_ids;
}

/* Records the file system of a staged overlay (fd: its root); 0 if there is no room (owners then not kept). */
static void remember_anchor(int fd) {
        if (n_anchor_ids < SUPOVERLAY_ANCHORS_MAX && anchor_id_of_fd(fd, &anchor_ids[n_anchor_ids]) >= 0)
                n_anchor_ids++;
}

/*
 * What an overlay is for: its name in the mount table, the words of its
 * fuse-overlayfs as a helper, and whether it is a State Anchor's (whose
 * file system goes to the set-ID responder, with an overlay UUID of its
 * own) or the root's mount points (supoverlay_stage_root()).
 */
typedef struct OverlayUse {
        const char *source;
        const char *role;
        const char *death_means;
        bool anchor;
} OverlayUse;

static const OverlayUse anchor_use = {
        .source = "fuse-overlayfs",
        .role = "the persistent directories' overlay",
        .death_means = "the persistent directories are gone; the sandbox is stopped",
        .anchor = true,
};

static const OverlayUse root_use = {
        .source = SUPOVERLAY_ROOT_SOURCE,
        .role = "the root file system's overlay",
        .death_means = "the sandbox lost its root file system and is stopped",
};

/* An O_RDONLY directory fd of a host path, opened one component at a time without following anything. */
static int open_dir(const char *path, const char *what, int *ret, char **ret_error) {
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        _cleanup_close_ int fd = -EBADF;
        int r;

        r = path_walk(path, 0, &fd, &w);
        if (r < 0)
                return path_walk_error(what, path, &w, r, what, NULL, ret_error);
        r = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (r < 0)
                return errorf(ret_error, -errno, "%s %s is not a directory that can be opened: %m", what, path);
        *ret = r;
        return 0;
}

/* Makes dir below layerfd (mode) unless it exists, and opens it. */
static int make_dir(int layerfd, const char *layer, const char *dir, mode_t mode, int *ret, char **ret_error) {
        int fd;

        bool made = mkdirat(layerfd, dir, mode) >= 0;

        if (!made && errno != EEXIST)
                return errorf(ret_error, -errno, "cannot create %s/%s: %m", layer, dir);
        fd = openat(layerfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errorf(ret_error, -errno, "cannot open %s/%s: %m", layer, dir);
        /* The mode exactly, whatever umask we inherited: the upper's root is what the sandbox sees at the path. */
        if (made && fchmod(fd, mode) < 0) {
                int r = -errno;
                safe_close(fd);
                return errorf(ret_error, r, "cannot set the mode of %s/%s: %s", layer, dir, strerror(-r));
        }
        *ret = fd;
        return 0;
}

static int read_format(int layerfd, OverlayFormat *ret) {
        _cleanup_close_ int fd = openat(layerfd, FORMAT_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *text = NULL;
        size_t n;
        int r;

        if (fd < 0 && errno == ENOENT) {
                *ret = OVERLAY_UNDECIDED;
                return 0;
        }
        if (fd < 0)
                return -errno;
        r = read_full_fd(fd, 64, &text, &n);
        if (r < 0)
                return r;
        if (streq(text, FORMAT_KERNEL "\n"))
                *ret = OVERLAY_KERNEL;
        else if (streq(text, FORMAT_FUSE "\n"))
                *ret = OVERLAY_FUSE;
        else
                return -EBADMSG;
        return 0;
}

static int write_format(int layerfd, OverlayFormat f) {
        const char *s = f == OVERLAY_KERNEL ? FORMAT_KERNEL "\n" : FORMAT_FUSE "\n";
        _cleanup_close_ int fd = openat(layerfd, FORMAT_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

        if (fd < 0)
                return -errno;
        return write_all(fd, s, strlen(s));
}

/* One layer for overlayfs: by fd where the kernel takes that (Linux 6.13), else by the fd's /proc path. */
static int set_layer(int fsfd, const char *key, int fd) {
        char proc[64];

        if (fsconfig(fsfd, FSCONFIG_SET_FD, key, NULL, fd) >= 0)
                return 0;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        if (fsconfig(fsfd, FSCONFIG_SET_STRING, key, proc, 0) >= 0)
                return 0;
        /* Before Linux 6.8 there is no "lowerdir+": the one lower as "lowerdir". */
        if (streq(key, "lowerdir+") && fsconfig(fsfd, FSCONFIG_SET_STRING, "lowerdir", proc, 0) >= 0)
                return 0;
        return -errno;
}

static int mount_kernel(const OverlayUse *u, int lower, int upper, int work, int stagefd, const char *name,
                        char **ret_error) {
        _cleanup_close_ int fsfd = -EBADF, mfd = -EBADF;
        bool uuid = false;
        int r;

        fsfd = fsopen("overlay", FSOPEN_CLOEXEC);
        if (fsfd < 0)
                return errorf(ret_error, -errno, "kernel overlayfs: %m");
        r = set_layer(fsfd, "lowerdir+", lower);
        if (r >= 0)
                r = set_layer(fsfd, "upperdir", upper);
        if (r >= 0)
                r = set_layer(fsfd, "workdir", work);
        if (r >= 0 && fsconfig(fsfd, FSCONFIG_SET_FLAG, "userxattr", NULL, 0) < 0)
                r = -errno;
        /* An overlay UUID of its own (kept in the upper's root, Linux 6.6),
         * from which the overlay's f_fsid comes: how the set-ID responder
         * tells this overlay's files from any other's (AnchorId). Without
         * it f_fsid is the upper file system's, shared with other
         * overlays, and the overlay is not given to the responder: owners
         * and modes there follow the rules of host files (spec 6.3). */
        if (r >= 0 && u->anchor)
                uuid = fsconfig(fsfd, FSCONFIG_SET_STRING, "uuid", "on", 0) >= 0;
        /* Named in the mount table, where the State Anchor's are "none". */
        if (r >= 0 && !u->anchor && fsconfig(fsfd, FSCONFIG_SET_STRING, "source", u->source, 0) < 0)
                r = -errno;
        if (r >= 0 && fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                r = -errno;
        if (r < 0)
                return errorf(ret_error, r, "kernel overlayfs in a user namespace: %s", strerror(-r));
        mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
        if (mfd < 0)
                return errorf(ret_error, -errno, "kernel overlayfs: cannot make the mount: %m");
        if (move_mount(mfd, "", stagefd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return errorf(ret_error, -errno, "kernel overlayfs: cannot stage the mount: %m");
        if (uuid)
                remember_anchor(mfd);
        return 0;
}

/*
 * fuse-overlayfs on the same fds, as a supervised helper (issue 33): the
 * supervisor mounts the FUSE file system on target itself, with the
 * options fuse-overlayfs gives its own mounts as root of a user namespace,
 * and runs fuse-overlayfs in the foreground on that /dev/fuse fd
 * ("/dev/fd/N", which libfuse takes for a mounted session). Requests wait
 * in the kernel until it serves them, so it is ready once it runs; its
 * death is the Domain's failure, said by the helper runner. No kernel
 * writeback cache (writeback=0): the daemon ends with the sandbox scope,
 * and dirty pages would die with it. Measured: with it, what `cp` and
 * `echo >` wrote inside was an empty file after a restart; only fsync'd
 * files kept.
 */
static int mount_fuse(const OverlayUse *u, int lower, int upper, int work, const char *target, Helpers *helpers,
                      char **ret_error) {
        _cleanup_free_ char *program = NULL, *options = NULL, *devpath = NULL;
        _cleanup_close_ int dev = -EBADF;
        int r;

        if (!helpers)
                return errorf(ret_error, -EOPNOTSUPP, "fuse-overlayfs: no helper runner to supervise it");
        r = find_program("fuse-overlayfs", &program);
        if (r < 0)
                return errorf(ret_error, r, "fuse-overlayfs: %s", r == -ENOENT ? "not installed (install the fuse-overlayfs package)"
                                                                             : strerror(-r));
        dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (dev < 0)
                return errorf(ret_error, -errno, "fuse-overlayfs: cannot open /dev/fuse: %m");
        if (asprintf(&options, "fd=%d,rootmode=40000,user_id=0,group_id=0,default_permissions,allow_other", dev) < 0 ||
            asprintf(&devpath, "/dev/fd/%d", HELPER_FIRST_PASS_FD + 3) < 0)
                return -ENOMEM;
        if (mount(u->source, target, "fuse.fuse-overlayfs", MS_NOSUID | MS_NODEV | MS_NOATIME, options) < 0)
                return errorf(ret_error, -errno, "fuse-overlayfs: cannot mount FUSE on %s: %m", target);
        r = helper_start(helpers, &(HelperSpec) {
                                 .name = "fuse-overlayfs",
                                 .role = u->role,
                                 .death_means = u->death_means,
                                 .argv = (char *[]) { program, (char *) "-f", (char *) "-o",
                                                      (char *) "lowerdir=/proc/self/fd/4,upperdir=/proc/self/fd/5,"
                                                               "workdir=/proc/self/fd/6,writeback=0",
                                                      devpath, NULL },
                                 .pass_fds = (int[]) { lower, upper, work, dev },
                                 .n_pass_fds = 4,
                                 .ready_at_exec = true,
                                 .keep_stderr = true,
                         }, NULL, ret_error);
        if (r < 0)
                (void) umount2(target, MNT_DETACH);
        return r;
}

static OverlayFormat forced_format(void) {
#if ENABLE_TEST_HOOKS
        const char *f = getenv("LAZARET_TEST_STATE_OVERLAY");
        if (f && streq(f, FORMAT_FUSE))
                return OVERLAY_FUSE;
        if (f && streq(f, "kernel"))
                return OVERLAY_KERNEL;
#endif
        return OVERLAY_UNDECIDED;
}

/*
 * The overlay of lower, upper and work on <stage>/<name> (target), in the
 * format that recorded names, else the one this supervisor chose, else
 * kernel overlayfs and, where the kernel refuses it, fuse-overlayfs. what
 * names the overlay in messages. *ret_format: the format mounted.
 */
static int mount_layers(const OverlayUse *u, const char *what, int lower, int upper, int work, OverlayFormat recorded,
                        int stagefd, const char *target, const char *name, Helpers *helpers, OverlayFormat *ret_format,
                        char **ret_error) {
        _cleanup_free_ char *kernel_why = NULL;
        int r;

        if (chosen == OVERLAY_UNDECIDED)
                chosen = forced_format();
        if (recorded == OVERLAY_FUSE || (recorded == OVERLAY_UNDECIDED && chosen == OVERLAY_FUSE))
                goto fuse;
        r = mount_kernel(u, lower, upper, work, stagefd, name, &kernel_why);
        if (r >= 0) {
                *ret_format = chosen = OVERLAY_KERNEL;
                return 0;
        }
        if (recorded == OVERLAY_KERNEL || chosen == OVERLAY_KERNEL)
                return errorf(ret_error, r, "cannot mount %s: %s", what, kernel_why);
fuse:
        r = mount_fuse(u, lower, upper, work, target, helpers, ret_error);
        if (r < 0) {
                if (kernel_why) {
                        _cleanup_free_ char *fuse_why = ret_error ? TAKE_PTR(*ret_error) : NULL;
                        return errorf(ret_error, r, "cannot mount %s: %s; %s", what, kernel_why,
                                      fuse_why ?: "fuse-overlayfs failed");
                }
                return r;
        }
        *ret_format = chosen = OVERLAY_FUSE;
        if (u->anchor) {
                _cleanup_close_ int root = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (root >= 0)
                        remember_anchor(root);
        }
        return 0;
}

int supoverlay_stage(const MountEntry *e, int stagefd, const char *stage, const char *name, Helpers *helpers, char **ret_error) {
        _cleanup_close_ int lower = -EBADF, layer = -EBADF, upper = -EBADF, work = -EBADF;
        _cleanup_free_ char *target = path_join(stage, name), *what = NULL;
        OverlayFormat recorded = OVERLAY_UNDECIDED, mounted;
        struct stat st;
        int r;

        if (!target)
                return -ENOMEM;
        if (!e->data)
                return errorf(ret_error, -EINVAL, "the mount plan's overlay at %s names no layer directory", e->destination);
        r = open_dir(e->source, "the image directory", &lower, ret_error);
        if (r < 0)
                return r;
        r = open_dir(e->data, "the State Anchor layer", &layer, ret_error);
        if (r < 0)
                return r;
        if (fstat(lower, &st) < 0)
                return errorf(ret_error, -errno, "cannot inspect %s: %m", e->source);
        r = make_dir(layer, e->data, STATE_ANCHOR_UPPER, st.st_mode & 07777, &upper, ret_error);
        if (r >= 0)
                r = make_dir(layer, e->data, STATE_ANCHOR_WORK, 0700, &work, ret_error);
        if (r < 0)
                return r;
        r = read_format(layer, &recorded);
        if (r < 0)
                return errorf(ret_error, r, "%s/%s: %s", e->data, FORMAT_FILE,
                              r == -EBADMSG ? "names no overlay format Lazaret knows" : strerror(-r));
        if (mkdirat(stagefd, name, 0700) < 0)
                return errorf(ret_error, -errno, "cannot create the staging point for %s: %m", e->destination);
        if (asprintf(&what, "the persistent %s", e->destination) < 0)
                return -ENOMEM;
        r = mount_layers(&anchor_use, what, lower, upper, work, recorded, stagefd, target, name, helpers, &mounted,
                         ret_error);
        if (r < 0)
                return r;
        if (recorded == OVERLAY_UNDECIDED) {
                r = write_format(layer, mounted);
                if (r < 0)
                        return errorf(ret_error, r, "cannot record the overlay format in %s/%s: %s", e->data, FORMAT_FILE,
                                      strerror(-r));
        }
        return 0;
}

int supoverlay_stage_root(int rootfd, int stagefd, const char *stage, const char *name, Helpers *helpers,
                          char **ret_error) {
        _cleanup_close_ int layer = -EBADF, tree = -EBADF, lower = -EBADF, upper = -EBADF, work = -EBADF;
        _cleanup_free_ char *target = path_join(stage, name), *dir = path_join(stage, SUPOVERLAY_ROOT_LAYER);
        OverlayFormat mounted;
        struct stat st;
        int r;

        if (!target || !dir)
                return -ENOMEM;
        if (fstat(rootfd, &st) < 0)
                return errorf(ret_error, -errno, "cannot inspect the staged root file system: %m");
        /* A tmpfs of its own: the staging directory turns read-only before
         * fuse-overlayfs, which opens its layers by path, has started. */
        if (mkdirat(stagefd, SUPOVERLAY_ROOT_LAYER, 0700) < 0)
                return errorf(ret_error, -errno, "cannot create %s: %m", dir);
        if (mount("lazaret-root-layer", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=1m") < 0)
                return errorf(ret_error, -errno, "cannot mount the root overlay's layer on %s: %m", dir);
        layer = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (layer < 0)
                return errorf(ret_error, -errno, "cannot open %s: %m", dir);
        /* The lower is a copy of the staged root's mount beside the layers,
         * not the staged root itself, which the overlay covers: fuse-overlayfs
         * would find its own mount at that path. */
        tree = open_tree(rootfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        if (tree < 0)
                return errorf(ret_error, -errno, "cannot take a copy of the staged root's mount: %m");
        r = make_dir(layer, dir, SUPOVERLAY_ROOT_LOWER, 0700, &lower, ret_error);
        if (r < 0)
                return r;
        if (move_mount(tree, "", layer, SUPOVERLAY_ROOT_LOWER, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return errorf(ret_error, -errno, "cannot place the root overlay's lower in %s: %m", dir);
        safe_close(lower);
        lower = openat(layer, SUPOVERLAY_ROOT_LOWER, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (lower < 0)
                return errorf(ret_error, -errno, "cannot open %s/%s: %m", dir, SUPOVERLAY_ROOT_LOWER);
        r = make_dir(layer, dir, STATE_ANCHOR_UPPER, st.st_mode & 07777, &upper, ret_error);
        if (r >= 0)
                r = make_dir(layer, dir, STATE_ANCHOR_WORK, 0700, &work, ret_error);
        if (r < 0)
                return r;
        return mount_layers(&root_use, "the root file system's overlay", lower, upper, work, OVERLAY_UNDECIDED, stagefd,
                            target, name, helpers, &mounted, ret_error);
}
