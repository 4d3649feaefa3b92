/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-id128.h>

#include "cleanup.h"
#include "fs-util.h"
#include "image.h"
#include "json-util.h"
#include "log.h"
#include "oci-image.h"
#include "path-util.h"
#include "process.h"
#include "strv.h"
#include "util.h"

struct ImagePrep {
        Process *unpack;
        int lock_fd;            /* flock of <staging>.lock, held while unpacking */
        char *lock_path;
        char *staging;
        char *final;
        char *image_arg;
        ImagePrepDone done;
        void *userdata;
};

void prepared_image_done(PreparedImage *img) {
        free(img->rootfs);
        strv_free(img->env);
        strv_free(img->cmd);
        *img = (PreparedImage) {};
}

ImagePrep *image_prep_free(ImagePrep *ip) {
        if (!ip)
                return NULL;
        process_free(ip->unpack);
        if (ip->staging)
                (void) rm_rf(ip->staging);
        if (ip->lock_path)
                (void) unlink(ip->lock_path);
        safe_close(ip->lock_fd);
        free(ip->lock_path);
        free(ip->staging);
        free(ip->final);
        free(ip->image_arg);
        free(ip);
        return NULL;
}

/*
 * Every unpack holds a lock on <staging>.lock while it runs. A staging
 * directory whose lock nobody holds was left by a coordinator that died
 * while unpacking (hundreds of MiB each time): it is removed.
 */
static void remove_stale_staging(const char *prepared) {
        _cleanup_(closedirp) DIR *d = opendir(prepared);
        struct dirent *de;

        while (d && (de = readdir(d))) {
                _cleanup_free_ char *lock = NULL, *dir = NULL;
                _cleanup_close_ int fd = -EBADF;
                const char *suffix;

                if (!startswith(de->d_name, ".staging-") || !(suffix = strrchr(de->d_name, '.')) ||
                    !streq(suffix, ".lock"))
                        continue;
                lock = path_join(prepared, de->d_name);
                dir = lock ? strndup(lock, strlen(lock) - strlen(".lock")) : NULL;
                if (!dir)
                        return;
                fd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
                if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
                        continue;       /* an unpack in progress */
                log_info("Removing %s, left by an unpack that did not finish", dir);
                (void) rm_rf(dir);
                (void) unlink(lock);
        }
}

/* The rootfs, environment and command of a published prepared lower. */
static int load_prepared(const char *final, PreparedImage *ret, char **ret_why) {
        _cleanup_free_ char *cfg = path_join(final, "config.json"), *buf = NULL, *why = NULL;
        PreparedImage img = {};
        size_t n;
        int r;

        if (!cfg)
                return -ENOMEM;
        img.rootfs = path_join(final, "rootfs");
        if (!img.rootfs)
                return -ENOMEM;
        r = read_full_file(cfg, JSON_DOC_MAX_BYTES, &buf, &n);
        if (r >= 0)
                r = oci_bundle_process(buf, n, &img.env, &img.cmd, &why);
        if (r < 0) {
                prepared_image_done(&img);
                return errorf(ret_why, r, "%s: %s", cfg, why ?: strerror(-r));
        }
        if (!img.env && strv_extend(&img.env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") < 0) {
                prepared_image_done(&img);
                return -ENOMEM;
        }
        *ret = img;
        return 0;
}

/* Why umoci failed: how it ended and what it said. */
static int unpack_failure(const ImagePrep *ip, int status, const char *output, char **ret) {
        char how[64];

        if (status > 128)
                snprintf(how, sizeof(how), "killed by signal %d", status - 128);
        else
                snprintf(how, sizeof(how), "exit status %d", status);
        if (asprintf(ret, "umoci unpack %s failed (%s): %s", ip->image_arg, how, isempty(output) ? "no message" : output) < 0)
                return -ENOMEM;
        return 0;
}

static void on_unpacked(Process *p, int status, const char *output, void *userdata) {
        ImagePrep *ip = userdata;
        int r = 0;
        char *why = NULL;

        /* output is the process's: read before it is freed. */
        if (status != 0) {
                (void) unpack_failure(ip, status, output, &why);
                r = strstr(strempty(why), "no space left on device") ? -ENOSPC : -EIO;
        }
        ip->unpack = process_free(ip->unpack);
        if (r == 0 && rename(ip->staging, ip->final) < 0 && errno != EEXIST && errno != ENOTEMPTY) {
                /* EEXIST/ENOTEMPTY: another Domain published the same image first; use theirs. */
                r = -errno;
                (void) !asprintf(&why, "cannot publish %s: %s", ip->final, strerror(-r));
        }
        if (ip->staging)
                (void) rm_rf(ip->staging);    /* gone after a rename; left after a failure */
        free(ip->staging);
        ip->staging = NULL;
        (void) unlink(ip->lock_path);
        ip->done(ip, r, why ?: (r < 0 ? "image preparation failed" : NULL), ip->userdata);
        free(why);
}

int image_prepare(sd_event *e, const Domain *d, ImagePrepDone done, void *userdata, ImagePrep **ret_prep,
                  PreparedImage *ret_image, char **ret_why) {
        _cleanup_free_ char *dir = NULL, *tag = NULL, *index = NULL, *buf = NULL, *digest = NULL,
                            *prepared = NULL, *final = NULL, *why = NULL, *umoci = NULL;
        _cleanup_(image_prep_freep) ImagePrep *ip = NULL;
        sd_id128_t rnd;
        struct stat st;
        size_t n;
        int r;

        r = domain_resolve_image(d, &dir, &tag, &why);
        if (r < 0)
                return errorf(ret_why, r, "%s", why ?: "cannot resolve the image");
        index = path_join(dir, "index.json");
        if (!index)
                return -ENOMEM;
        r = read_full_file(index, JSON_DOC_MAX_BYTES, &buf, &n);
        if (r < 0)
                return errorf(ret_why, r, "%s: %s%s", index, strerror(-r),
                              r == -ENOENT ? " (build the default image with: lazaretctl image build-default)" : "");
        r = oci_index_digest(buf, n, tag, &digest, &why);
        if (r < 0)
                return errorf(ret_why, r, "%s: %s", index, why);

        prepared = path_join(d->config->data_root, STORAGE_PREPARED_DIR);
        if (!prepared)
                return -ENOMEM;
        r = mkdir_parents(prepared, 0700);
        if (r < 0)
                return errorf(ret_why, r, "cannot create %s: %s", prepared, strerror(-r));
        final = path_join(prepared, digest);
        if (!final)
                return -ENOMEM;
        remove_stale_staging(prepared);
        if (stat(final, &st) >= 0) {
                r = load_prepared(final, ret_image, ret_why);
                return r < 0 ? r : 1;
        }

        r = find_program("umoci", &umoci);
        if (r == -ENOENT)
                return errorf(ret_why, r, "umoci is not installed; install the umoci package");
        if (r < 0)
                return r;
        ip = calloc(1, sizeof(ImagePrep));
        if (!ip)
                return -ENOMEM;
        ip->lock_fd = -EBADF;
        ip->done = done;
        ip->userdata = userdata;
        r = sd_id128_randomize(&rnd);
        if (r < 0)
                return r;
        if (asprintf(&ip->staging, "%s/.staging-" SD_ID128_FORMAT_STR, prepared, SD_ID128_FORMAT_VAL(rnd)) < 0 ||
            asprintf(&ip->lock_path, "%s.lock", ip->staging) < 0 ||
            asprintf(&ip->image_arg, "%s:%s", dir, tag) < 0)
                return -ENOMEM;
        ip->lock_fd = open(ip->lock_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (ip->lock_fd < 0 || flock(ip->lock_fd, LOCK_EX | LOCK_NB) < 0)
                return errorf(ret_why, -errno, "cannot lock %s: %m", ip->lock_path);
        ip->final = TAKE_PTR(final);
        log_info("Preparing image %s (%.12s) in %s", ip->image_arg, digest, ip->final);
        r = process_run(e, (char *[]) { umoci, (char *) "--log", (char *) "error", (char *) "unpack", (char *) "--rootless",
                                        (char *) "--image", ip->image_arg, ip->staging, NULL },
                        on_unpacked, ip, &ip->unpack);
        if (r < 0)
                return errorf(ret_why, r, "cannot run umoci: %s", strerror(-r));
        *ret_prep = TAKE_PTR(ip);
        return 0;
}

int image_prep_take(ImagePrep *ip, PreparedImage *ret_image, char **ret_why) {
        return load_prepared(ip->final, ret_image, ret_why);
}
