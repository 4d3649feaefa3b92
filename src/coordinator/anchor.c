/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "anchor.h"
#include "cleanup.h"
#include "fs-util.h"
#include "hash.h"
#include "path-util.h"
#include "state-anchor.h"
#include "strv.h"
#include "util.h"

/* The image's directory at sandbox path dir: 0 with its path, 1 if the image has none, < 0 refused. */
static int open_lower(int rootfd, const char *rootfs, const char *dir, char **ret_path, char **ret_error) {
        _cleanup_close_ int fd = openat_beneath(rootfd, dir + 1, O_PATH | O_DIRECTORY, 0, true);
        char *path;

        if (fd == -ENOENT)
                return 1;
        if (fd == -ELOOP)
                return errorf(ret_error, -ELOOP, "persistent_dirs: %s is a symbolic link (or lies below one) in the image; "
                              "list the directory it points to instead", dir);
        if (fd == -ENOTDIR)
                return errorf(ret_error, -ENOTDIR, "persistent_dirs: %s is not a directory in the image", dir);
        if (fd < 0)
                return errorf(ret_error, fd, "cannot open %s in the image's root file system %s: %s", dir, rootfs,
                              strerror(-fd));
        path = path_join(rootfs, dir + 1);
        if (!path)
                return -ENOMEM;
        *ret_path = path;
        return 0;
}

/*
 * Issue 33: a layer made now keeps owners and modes as written inside, and
 * says so with STATE_ANCHOR_OWNERS_KEPT, written before its upper exists.
 * 1 for a layer written before (an upper, no record): what its packages
 * gave to their own users was left root's, and stays so until it is reset.
 */
static int layer_written_before_owners(const char *layer) {
        _cleanup_free_ char *upper = path_join(layer, STATE_ANCHOR_UPPER), *kept = path_join(layer, STATE_ANCHOR_OWNERS_KEPT);
        struct stat st;

        if (!upper || !kept)
                return -ENOMEM;
        if (lstat(kept, &st) >= 0)
                return 0;
        if (lstat(upper, &st) >= 0)
                return 1;
        return write_file(kept, "", 0600);
}

static int add_layer(int rootfd, const char *rootfs, const char *state, const char *dir,
                     MountPlan *plan, char **legacy, char **ret_error) {
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
        r = layer_written_before_owners(layer);
        if (r < 0)
                return errorf(ret_error, r, "cannot record in %s that it keeps owners: %s", layer, strerror(-r));
        if (r > 0) {
                char *more = NULL;
                if (asprintf(&more, "%s%s%s", strempty(*legacy), *legacy ? ", " : "", dir) < 0)
                        return -ENOMEM;
                free(*legacy);
                *legacy = more;
        }

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

#define DPKG_STATUS "/var/lib/dpkg/status"
#define DPKG_STATUS_MAX (64 * 1024 * 1024)

/* The hex SHA-256 of the image's dpkg status file, or "none". */
static int lower_dpkg_hash(int rootfd, char ret[SHA256_DIGEST_LEN * 2 + 1]) {
        _cleanup_close_ int fd = openat_beneath(rootfd, DPKG_STATUS + 1, O_RDONLY | O_NOCTTY, 0, false);
        _cleanup_free_ char *text = NULL;
        uint8_t h[SHA256_DIGEST_LEN];
        size_t n;
        int r;

        if (fd < 0) {
                strcpy(ret, "none");
                return errno == ENOENT ? 0 : -errno;
        }
        r = read_full_fd(fd, DPKG_STATUS_MAX, &text, &n);
        if (r < 0)
                return r;
        sha256_buf(text, n, h);
        hexify(h, sizeof(h), ret);
        return 0;
}

/*
 * FR-22: a persisted package database over a changed image. When the
 * upper layer that holds /var/lib/dpkg/status has its own copy, the hash
 * of the image's copy it was made over (state/.dpkg-base) is compared with
 * the current image's; otherwise the base follows the image. A mismatch
 * is said in *ret_notice and recorded in state/.package-database-stale for
 * `lazaretctl state inspect`. Best effort: nothing here fails a launch.
 */
static void check_package_database(const Domain *d, int rootfd, const char *state, char **ret_notice) {
        _cleanup_free_ char *base_path = path_join(state, STATE_ANCHOR_DPKG_BASE),
                            *stale_path = path_join(state, STATE_ANCHOR_DPKG_STALE),
                            *name = NULL, *upper_file = NULL, *base = NULL;
        char cur[SHA256_DIGEST_LEN * 2 + 1];
        const char *dir = NULL, *rel;
        struct stat st;
        size_t n;
        bool stale = false;

        if (!base_path || !stale_path)
                return;
        STRV_FOREACH(p, d->profile->persistent_dirs)
                if (path_is_at_or_below(DPKG_STATUS, *p))
                        dir = *p;
        if (!dir || lower_dpkg_hash(rootfd, cur) < 0 || state_anchor_layer_name(dir, &name) < 0)
                return;
        rel = DPKG_STATUS + strlen(dir);
        if (asprintf(&upper_file, "%s/%s/%s%s", state, name, STATE_ANCHOR_UPPER, rel) < 0)
                return;
        if (lstat(upper_file, &st) >= 0 && S_ISREG(st.st_mode) &&
            read_full_file(base_path, 256, &base, &n) >= 0 && n > 0) {
                base[strcspn(base, "\n")] = 0;
                stale = !streq(base, cur);
        } else
                (void) write_file(base_path, cur, 0600);
        if (!stale) {
                (void) unlink(stale_path);
                return;
        }
        (void) write_file(stale_path, "The image's /var/lib/dpkg/status changed since packages were installed in the persistent "
                          "layer; dpkg's database there no longer matches the image's files.\n", 0600);
        if (ret_notice)
                (void) !asprintf(ret_notice, "the image changed since packages were installed in the persistent %s: "
                                 "dpkg's database there (" DPKG_STATUS ") no longer matches the image's files; "
                                 "reinstall what you need, or start over with: lazaretctl state reset %s", dir, dir);
}

int anchor_plan(const Domain *d, int rootfd, const char *rootfs, MountPlan *plan, char **ret_notice, char **ret_error) {
        _cleanup_free_ char *state = NULL, *legacy = NULL;
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
                r = add_layer(rootfd, rootfs, state, *dir, plan, &legacy, ret_error);
                if (r < 0) {
                        mount_plan_truncate(plan, n0);
                        return r;
                }
        }
        check_package_database(d, rootfd, state, ret_notice);
        /* One line, on every launch that starts the Domain, until reset. The
         * package database's notice, when there is one, says more. */
        if (legacy && ret_notice && !*ret_notice) {
                bool several = strchr(legacy, ',');
                (void) !asprintf(ret_notice, "the persistent %s %s written before Lazaret kept owners and modes there: "
                                 "what packages gave to their own users is root's; start over with: lazaretctl state reset %s",
                                 legacy, several ? "were" : "was", several ? "PATH, for each" : legacy);
        }
        return 0;
}

void anchor_release(const Domain *d) {
        _cleanup_free_ char *state = path_join(d->domain_dir, STATE_ANCHOR_DIR);

        if (!state)
                return;
        STRV_FOREACH(dir, d->profile->persistent_dirs) {
                _cleanup_free_ char *name = NULL, *work = NULL;

                if (state_anchor_layer_name(*dir, &name) < 0 ||
                    asprintf(&work, "%s/%s/%s/work", state, name, STATE_ANCHOR_WORK) < 0)
                        continue;
                /* overlayfs leaves work/work mode 0000 (ours, as root of the namespace): give it back, remove it. */
                if (chmod(work, 0700) >= 0)
                        (void) rm_rf(work);
        }
}
