/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "cleanup.h"
#include "escalation-proto.h"
#include "helper.h"
#include "json-util.h"
#include "strv.h"
#include "fs-util.h"
#include "macro.h"
#include "mount-plan.h"
#include "path-util.h"
#include "state-anchor.h"
#include "supervisor-mounts.h"
#include "supervisor-overlay.h"
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

/* The source opened again here from "/", without following anything, and insisted on as checked. */
static int open_checked(const MountEntry *e, int *ret_fd, char **ret_error) {
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        _cleanup_close_ int fd = -EBADF;
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
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int stage_bind(const MountEntry *e, int stagefd, const char *name, char **ret_error) {
        _cleanup_close_ int fd = -EBADF, tree = -EBADF;
        int r;

        r = open_checked(e, &fd, ret_error);
        if (r < 0)
                return r;

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

/*
 * Ignored Workspace State (the plan's "ignored" object, present with
 * isolate_ignored): its directory (fd 7 of the view), the host user's
 * excludes file as the coordinator copied it (fd 8, optional) and the
 * shared_ignored paths.
 */
static int view_ignored_args(json_object *ignored, char ***argv, int *ret_ifd, int *ret_xfd, char **ret_error) {
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        _cleanup_close_ int pfd = -EBADF, ifd = -EBADF, xfd = -EBADF;
        json_object *o, *shared;
        const char *state;
        int r;

        if (!json_object_is_type(ignored, json_type_object) || !json_object_object_get_ex(ignored, "state", &o) ||
            !json_object_is_type(o, json_type_string) || !json_object_object_get_ex(ignored, "shared", &shared) ||
            !json_object_is_type(shared, json_type_array))
                return errorf(ret_error, -EBADMSG, "the mount plan's ignored state arguments are malformed");
        state = json_object_get_string(o);
        r = path_walk(state, 0, &pfd, &w);
        if (r < 0)
                return errorf(ret_error, r, "cannot open the ignored state directory %s: %s", state, strerror(-r));
        ifd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (ifd < 0)
                return errorf(ret_error, -errno, "cannot open %s: %m", state);
        if (json_object_object_get_ex(ignored, "excludes", &o)) {
                if (!json_object_is_type(o, json_type_string))
                        return errorf(ret_error, -EBADMSG, "the mount plan's excludes file is malformed");
                xfd = open(json_object_get_string(o), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
                if (xfd < 0)
                        return errorf(ret_error, -errno, "cannot open %s: %m", json_object_get_string(o));
        }
        if (strv_extend(argv, "--ignored-fd=7") < 0 || (xfd >= 0 && strv_extend(argv, "--excludes-fd=8") < 0))
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(shared); i++) {
                json_object *p = json_object_array_get_idx(shared, i);
                if (!json_object_is_type(p, json_type_string))
                        return errorf(ret_error, -EBADMSG, "the mount plan's shared ignored paths are malformed");
                if (strv_extendf(argv, "--shared-ignored=%s", json_object_get_string(p)) < 0)
                        return -ENOMEM;
        }
        *ret_ifd = TAKE_FD(ifd);
        *ret_xfd = TAKE_FD(xfd);
        return 0;
}

/*
 * The view's two directories, readable (it reads them; O_PATH is not
 * enough): the workspace as checked (open_checked()) and its state
 * directory.
 */
static int open_view_dirs(const MountEntry *e, const char *state, int *ret_wfd, int *ret_sfd, char **ret_error) {
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        _cleanup_close_ int wfd = -EBADF, sfd = -EBADF;
        int r, d;

        r = open_checked(e, &wfd, ret_error);
        if (r < 0)
                return r;
        r = path_walk(state, 0, &sfd, &w);
        if (r < 0)
                return errorf(ret_error, r, "cannot open the workspace view's state directory %s: %s", state, strerror(-r));
        d = openat(wfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d < 0)
                return errorf(ret_error, -errno, "cannot open the workspace %s: %m", e->source);
        safe_close(wfd);
        wfd = d;
        d = openat(sfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d < 0)
                return errorf(ret_error, -errno, "cannot open %s: %m", state);
        safe_close(sfd);
        sfd = d;
        *ret_wfd = TAKE_FD(wfd);
        *ret_sfd = TAKE_FD(sfd);
        return 0;
}

/* The FUSE file system mounted on the staging point, its connection in *ret_fuse. */
static int mount_view(const MountEntry *e, int stagefd, const char *name, const char *target, int *ret_fuse,
                      char **ret_error) {
        _cleanup_close_ int fuse = -EBADF;
        _cleanup_free_ char *opts = NULL;

        fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fuse < 0)
                return errorf(ret_error, -errno, "cannot open /dev/fuse for the workspace view: %m; Lazaret never "
                              "serves the workspace unprotected (is the fuse module loaded, may this user open /dev/fuse?)");
        if (mkdirat(stagefd, name, 0700) < 0)
                return errorf(ret_error, -errno, "cannot create the staging point for %s: %m", e->destination);
        if (asprintf(&opts, "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fuse) < 0)
                return -ENOMEM;
        if (mount("lazaret-view", target, "fuse.lazaret-view", MS_NOSUID | MS_NODEV, opts) < 0)
                return errorf(ret_error, -errno, "cannot mount the workspace view: %m");
        *ret_fuse = TAKE_FD(fuse);
        return 0;
}

/* The view's rule from the plan's arguments, as options in *argv: --git-dir (*ret_git_dir), the protected paths and the profile's names. */
static int view_rule_args(json_object *args, char ***argv, bool *ret_git_dir, char **ret_error) {
        static const char *const lists[][2] = {
                { "protect", "--protect" }, { "protect_names", "--protect-name" }, { "unprotect", "--unprotect" },
                { "index_protect", "--index-protect" },
        };
        json_object *o;

        /* A linked workspace's git dir, served as one (bundle.c, add_git_view()). */
        if (json_object_object_get_ex(args, "git_dir", &o)) {
                if (!json_object_is_type(o, json_type_boolean))
                        return errorf(ret_error, -EBADMSG, "the mount plan's git_dir flag is malformed");
                *ret_git_dir = json_object_get_boolean(o);
                if (*ret_git_dir && strv_extend(argv, "--git-dir") < 0)
                        return -ENOMEM;
        }
        /* The protected paths, and the profile's names, the git dir view's index paths (optional keys). */
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                json_object *a;

                if (!json_object_object_get_ex(args, lists[l][0], &a))
                        continue;
                if (!json_object_is_type(a, json_type_array))
                        return errorf(ret_error, -EBADMSG, "the mount plan's %s list is malformed", lists[l][0]);
                for (size_t i = 0; i < json_object_array_length(a); i++) {
                        json_object *p = json_object_array_get_idx(a, i);
                        if (!json_object_is_type(p, json_type_string))
                                return errorf(ret_error, -EBADMSG, "the mount plan's %s list is malformed", lists[l][0]);
                        if (strv_extendf(argv, "%s=%s", lists[l][1], json_object_get_string(p)) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/*
 * The workspace view: the FUSE connection mounted on the staged path, and
 * lazaret-view, a supervised helper, serving it from the checked
 * workspace fd and its Domain state directory. It is ready once it holds
 * the connection; requests that come earlier wait in the kernel.
 */
static int stage_view(const MountEntry *e, const char *stage, const char *name, int stagefd, const char *view,
                      int relay_fd, Helpers *helpers, bool *ret_relays, char **ret_error) {
        _cleanup_json_ json_object *args = NULL;
        _cleanup_free_ char *target = path_join(stage, name), *why = NULL;
        _cleanup_close_ int wfd = -EBADF, sfd = -EBADF, fuse = -EBADF, ifd = -EBADF, xfd = -EBADF;
        _cleanup_strv_free_ char **argv = NULL;
        json_object *o, *ignored = NULL;
        int r, pass[6];
        size_t n_pass = 3;
        bool git_dir = false;

        if (!target)
                return -ENOMEM;
        r = json_parse_strict(e->data, strlen(e->data), &args, &why);
        if (r < 0 || !json_object_is_type(args, json_type_object) || !json_object_object_get_ex(args, "state", &o) ||
            !json_object_is_type(o, json_type_string) || !json_object_object_get_ex(args, "protect", NULL))
                return errorf(ret_error, -EBADMSG, "the mount plan's workspace view arguments are malformed%s%s",
                              why ? ": " : "", strempty(why));

        r = open_view_dirs(e, json_object_get_string(o), &wfd, &sfd, ret_error);
        if (r < 0)
                return r;
        r = mount_view(e, stagefd, name, target, &fuse, ret_error);
        if (r < 0)
                return r;

        if (strv_extend_strv(&argv, (char *[]) { (char *) view, (char *) "--workspace-fd=4", (char *) "--state-fd=5",
                                                 (char *) "--fuse-fd=6", NULL }) < 0)
                return -ENOMEM;
        r = view_rule_args(args, &argv, &git_dir, ret_error);
        if (r < 0)
                return r;
        pass[0] = wfd, pass[1] = sfd, pass[2] = fuse;
        if (json_object_object_get_ex(args, "ignored", &ignored)) {
                r = view_ignored_args(ignored, &argv, &ifd, &xfd, ret_error);
                if (r < 0)
                        return r;
                pass[n_pass++] = ifd;
                if (xfd >= 0)
                        pass[n_pass++] = xfd;
        }
        /* The workspace's view (not a git dir's) is the host-edit relay's source (spec 4.6). */
        if (!git_dir && relay_fd >= 0) {
                if (strv_extendf(&argv, "--relay-fd=%zu", HELPER_FIRST_PASS_FD + n_pass) < 0)
                        return -ENOMEM;
                pass[n_pass++] = relay_fd;
        }
        r = helper_start(helpers, &(HelperSpec) {
                                 .name = "lazaret-view",
                                 .role = "the workspace view",
                                 .death_means = "the sandbox lost its workspace and is stopped",
                                 .keep_stderr = true,
                                 .argv = argv,
                                 .pass_fds = pass,
                                 .n_pass_fds = n_pass,
                                 .ready_timeout_ms = 10000,
                         }, NULL, ret_error);
        if (r >= 0 && !git_dir && relay_fd >= 0)
                *ret_relays = true;
        return r;
}

static int stage_filesystem(const MountEntry *e, const char *stage, const char *name, int stagefd,
                            char **ret_error) {
        _cleanup_free_ char *target = path_join(stage, name);
        unsigned long flags = MS_NOSUID | MS_NODEV | (e->read_only ? MS_RDONLY : 0);

        if (!target)
                return -ENOMEM;
        if (!streq(e->fstype, "tmpfs"))
                return errorf(ret_error, -EOPNOTSUPP, "the mount plan asks the supervisor for a %s file system at %s; "
                            "it makes only tmpfs and overlay", e->fstype, e->destination);
        if (mkdirat(stagefd, name, 0700) < 0)
                return errorf(ret_error, -errno, "cannot create the staging point for %s: %m", e->destination);
        if (mount(e->source, target, e->fstype, flags, e->data) < 0)
                return errorf(ret_error, -errno, "cannot mount a %s for %s: %m", e->fstype, e->destination);
        return 0;
}

/*
 * The Escalation Mailbox's file systems (escalation-proto.h), made once, on
 * <stage>/mailbox (a name no entry's index takes): the mailbox tmpfs with
 * requests/, results/ and trust/ in it, and the requests tmpfs on requests/.
 * Returns the mailbox's root directory.
 */
static int make_mailbox(const char *stage, int stagefd, int *ret_fd, char **ret_error) {
        _cleanup_free_ char *root = path_join(stage, SUPMOUNTS_MAILBOX), *req = NULL;
        _cleanup_close_ int fd = -EBADF;
        const unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;

        req = root ? path_join(root, ESC_REQUESTS_DIR) : NULL;
        if (!req)
                return -ENOMEM;
        if (mkdirat(stagefd, SUPMOUNTS_MAILBOX, 0700) < 0)
                return errorf(ret_error, -errno, "cannot create the Escalation Mailbox's mount point: %m");
        if (mount("lazaret-mailbox", root, "tmpfs", flags, ESC_MAILBOX_FS_OPTIONS) < 0)
                return errorf(ret_error, -errno, "cannot mount the Escalation Mailbox's tmpfs: %m");
        fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errorf(ret_error, -errno, "cannot open the Escalation Mailbox: %m");
        if (mkdirat(fd, ESC_REQUESTS_DIR, 0700) < 0 || mkdirat(fd, ESC_RESULTS_DIR, 0700) < 0 ||
            mkdirat(fd, ESC_TRUST_DIR, 0700) < 0)
                return errorf(ret_error, -errno, "cannot create the Escalation Mailbox's directories: %m");
        if (mount("lazaret-requests", req, "tmpfs", flags, ESC_REQUESTS_FS_OPTIONS) < 0)
                return errorf(ret_error, -errno, "cannot mount the tmpfs of the Escalation Mailbox's requests: %m");
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* A mailbox directory, as a detached copy of its part of the mailbox, on <stage>/<i>. */
static int stage_mailbox(const MountEntry *e, int stagefd, const char *stage, const char *name, int *mailbox_fd,
                         char **ret_error) {
        const char *want = streq(e->source, ESC_REQUESTS_DIR) ? ESC_REQUESTS_FS_OPTIONS
                           : streq(e->source, ESC_RESULTS_DIR) || streq(e->source, ESC_TRUST_DIR) ? ESC_MAILBOX_FS_OPTIONS
                           : NULL;
        _cleanup_close_ int tree = -EBADF;
        int r;

        if (e->part != MOUNT_PART_MAILBOX || !want || !streq_ptr(e->data, want))
                return errorf(ret_error, -EINVAL, "the mount plan's mailbox entry at %s is not one of the mailbox's "
                              "directories with its fixed bounds", e->destination);
        if (*mailbox_fd < 0) {
                r = make_mailbox(stage, stagefd, mailbox_fd, ret_error);
                if (r < 0)
                        return r;
        }
        tree = open_tree(*mailbox_fd, e->source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
        if (tree < 0)
                return errorf(ret_error, -errno, "cannot take a copy of the mailbox's %s: %m", e->source);
        if (e->read_only &&
            mount_setattr(tree, "", AT_EMPTY_PATH, &(struct mount_attr) { .attr_set = MOUNT_ATTR_RDONLY },
                          sizeof(struct mount_attr)) < 0)
                return errorf(ret_error, -errno, "cannot make the mailbox's %s read-only: %m", e->source);
        if (mkdirat(stagefd, name, 0700) < 0)
                return errorf(ret_error, -errno, "cannot create the staging point for %s: %m", e->destination);
        if (move_mount(tree, "", stagefd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return errorf(ret_error, -errno, "cannot stage the mailbox's %s: %m", e->source);
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
                if (plan.entries[i].kind == MOUNT_VIEW) {
                        /* The host's directory, not the view on it: host changes are what is watched. */
                        _cleanup_close_ int o = -EBADF;
                        r = open_checked(&plan.entries[i], &o, ret_error);
                        if (r < 0)
                                return r;
                        fd = openat(o, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (fd < 0)
                                return errorf(ret_error, -errno, "cannot open the workspace %s: %m", plan.entries[i].source);
                        *ret_fd = fd;
                        return 0;
                }
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

/* Whether path (absolute, as inside) is missing in the tree at rootfd, resolved as runsc resolves it: symbolic links stay inside. */
static bool missing_in_root(int rootfd, const char *path) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
        };
        long fd = syscall(SYS_openat2, rootfd, path + strspn(path, "/"), &how, sizeof(how));

        if (fd >= 0) {
                safe_close((int) fd);
                return false;
        }
        /* Only an absent path is runsc's to make; where a file stands in the way, runsc fails by itself. */
        return errno == ENOENT;
}

/*
 * The root's mount points (issue 33): runsc makes a missing mount point in
 * the tree that holds it, and the staged root is the prepared lower, which
 * every Domain of the image shares. When a point that may land in the
 * image's tree (mount_plan_point_in_image()) is missing there (a persistent
 * path or a volume the image lacks: Lazaret's own were made at
 * preparation), the root gets an overlay of this generation
 * (supoverlay_stage_root()) and runsc makes them in its upper, resolving
 * paths its own way: they are not resolved a second time here. Otherwise
 * the root stays the bind it is: a profile whose mount points the image has
 * pays nothing.
 */
static int stage_root_points(const MountPlan *plan, const char *stage, int stagefd, Helpers *helpers,
                             char **ret_error) {
        const MountEntry *root = mount_plan_find(plan, "/");
        char name[MOUNT_PLAN_STAGE_NAME_MAX];
        _cleanup_close_ int rootfd = -EBADF;
        bool missing = false;

        if (!root)
                return 0;
        snprintf(name, sizeof(name), "%zu", (size_t) (root - plan->entries));
        rootfd = openat(stagefd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rootfd < 0)
                return errorf(ret_error, -errno, "cannot open the staged root file system: %m");
        /* The image is read-only to runsc (and to the overlay, whose lower
         * is a copy of this mount), so that a point this lookup did not
         * foresee (a symbolic link the sandbox wrote in a persistent
         * directory) fails the start instead of landing in the lower. runsc
         * remounts its root read-only itself once its mounts are made. */
        if (mount_setattr(rootfd, "", AT_EMPTY_PATH, &(struct mount_attr) { .attr_set = MOUNT_ATTR_RDONLY },
                          sizeof(struct mount_attr)) < 0)
                return errorf(ret_error, -errno, "cannot make the staged root file system read-only: %m");
        for (size_t i = 0; i < plan->n_entries && !missing; i++)
                missing = mount_plan_point_in_image(plan, i) && missing_in_root(rootfd, plan->entries[i].destination);
        if (!missing)
                return 0;
        return supoverlay_stage_root(rootfd, stagefd, stage, name, helpers, ret_error);
}

int supmounts_stage(const char *bundle, const char *view, int relay_fd, Helpers *helpers, bool *ret_relays,
                    char **ret_error) {
        _cleanup_(mount_plan_done) MountPlan plan = {};
        _cleanup_free_ char *stage = NULL;
        _cleanup_close_ int stagefd = -EBADF, mailbox = -EBADF;
        int r;

        r = read_plan(bundle, &plan, &stage, ret_error);
        if (r < 0)
                return r;
        *ret_relays = false;

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
                        if (streq(e->fstype, STATE_ANCHOR_FSTYPE))
                                r = supoverlay_stage(e, stagefd, stage, name, helpers, ret_error);
                        else if (streq(e->fstype, ESC_MAILBOX_FSTYPE))
                                r = stage_mailbox(e, stagefd, stage, name, &mailbox, ret_error);
                        else
                                r = stage_filesystem(e, stage, name, stagefd, ret_error);
                        break;
                case MOUNT_VIEW:
                        r = view && helpers ? stage_view(e, stage, name, stagefd, view, relay_fd, helpers,
                                                         ret_relays, ret_error)
                                            : errorf(ret_error, -EOPNOTSUPP, "no workspace view to serve %s", e->destination);
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
        /* After the State Anchor's overlays: the root's takes the format they chose. */
        r = stage_root_points(&plan, stage, stagefd, helpers, ret_error);
        if (r < 0)
                return r;
        /* Nothing more is staged: the staging directory itself becomes read-only. */
        if (mount(NULL, stage, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return errorf(ret_error, -errno, "cannot make the staging directory %s read-only: %m", stage);
        return 0;
}

int supmounts_open_mailbox(const char *bundle, int *ret_fd, char **ret_error) {
        _cleanup_free_ char *path = path_join(bundle, MOUNT_PLAN_STAGE_DIR "/" SUPMOUNTS_MAILBOX);
        int fd;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                *ret_fd = -EBADF;
                return 0;
        }
        if (fd < 0)
                return errorf(ret_error, -errno, "cannot open the Escalation Mailbox %s: %m", path);
        *ret_fd = fd;
        return 0;
}
