/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
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
#include "userns.h"
#include "util.h"

/* Part of the prepared-artifact ID: how a lower is made. Change it when that changes. */
#define PREPARER_VERSION "umoci-unpack-userns-2"      /* 2: with Lazaret's own mount points */
#define PREPARED_RECORD "prepared.json"

struct ImagePrep {
        UsernsChild *unpack;
        int lock_fd;            /* flock of <staging>.lock, held while unpacking */
        int log_fd;             /* umoci's standard error: <staging>.log */
        char *lock_path;
        char *log_path;
        char *staging;
        char *final;
        char *image_arg;
        char *record;           /* prepared.json, written into the tree before it is published */
        ImagePrepDone done;
        void *userdata;
};

void prepared_image_done(PreparedImage *img) {
        free(img->rootfs);
        strv_free(img->env);
        strv_free(img->cmd);
        *img = (PreparedImage) {};
}

/*
 * A staging tree holds files of subordinate IDs (it was unpacked as root of
 * the mapped namespace), which the user cannot always remove: it is moved
 * aside into <prepared>/.quarantine-<name>, never published, for
 * `lazaretctl unshare -- rm -rf` (or a later gc) to remove.
 */
static void quarantine(const char *staging) {
        _cleanup_free_ char *dir = NULL, *q = NULL;
        const char *base = strrchr(staging, '/');

        if (!base)
                return;
        dir = strndup(staging, (size_t) (base - staging));
        if (!dir || asprintf(&q, "%s/.quarantine-%s", dir, base + 1 + strlen(".staging-")) < 0)
                return;
        if (rename(staging, q) >= 0)
                log_warning("A failed image preparation was moved to %s; remove it with: lazaretctl unshare -- rm -rf %s",
                            q, q);
        else if (errno != ENOENT)
                (void) rm_rf(staging);
}

ImagePrep *image_prep_free(ImagePrep *ip) {
        if (!ip)
                return NULL;
        userns_child_free(ip->unpack);
        if (ip->staging)
                quarantine(ip->staging);
        if (ip->lock_path)
                (void) unlink(ip->lock_path);
        if (ip->log_path)
                (void) unlink(ip->log_path);
        safe_close(ip->lock_fd);
        safe_close(ip->log_fd);
        free(ip->lock_path);
        free(ip->log_path);
        free(ip->staging);
        free(ip->final);
        free(ip->image_arg);
        free(ip->record);
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
                log_info("Setting aside %s, left by an unpack that did not finish", dir);
                quarantine(dir);
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

/* The last line umoci wrote to its standard error, if any. */
static void unpack_message(ImagePrep *ip, char *buf, size_t size) {
        char log[8192];
        struct stat st;
        off_t from = ip->log_fd >= 0 && fstat(ip->log_fd, &st) >= 0 && st.st_size > (off_t) sizeof(log) - 1
                             ? st.st_size - (off_t) sizeof(log) + 1 : 0;
        ssize_t n = ip->log_fd >= 0 ? pread(ip->log_fd, log, sizeof(log) - 1, from) : -1;
        char *line, *save = NULL;

        buf[0] = 0;
        if (n <= 0)
                return;
        log[n] = 0;
        for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                if (line[0])
                        snprintf(buf, size, "%s", line);
}

static void on_unpack_mapped(UsernsChild *c, void *userdata) {
        ImagePrep *ip = userdata;
        int r = userns_child_go(c);

        if (r < 0) {
                ip->unpack = userns_child_free(ip->unpack);
                ip->done(ip, r, "cannot start the image unpack in the mapped user namespace", ip->userdata);
        }
}

static void on_unpack_failed(UsernsChild *c, const char *why, void *userdata) {
        ImagePrep *ip = userdata;

        ip->unpack = userns_child_free(ip->unpack);
        ip->done(ip, -EPERM, why, ip->userdata);
}

/*
 * The mount points every sandbox has (oci-spec.c, bundle.c), made in the
 * tree before it is published: runsc makes a missing bind target in the
 * tree that holds it, and the prepared lower is not to change after this
 * (issue 33). Best effort, one component at a time, nothing followed: a
 * path the image has as a symbolic link or a file stays as it is, and
 * runsc resolves it as before. Mount points that depend on the profile
 * (a persistent path or a volume the image lacks) are not known here.
 */
static void make_mount_points(const char *staging) {
        /* A trailing slash: a directory; else an empty file (a bind of a file). */
        static const char *const points[] = { "proc/", "dev/", "sys/", "tmp/", "workspace/", "run/lazaret/",
                                              "etc/resolv.conf", "etc/hosts", "etc/hostname",
                                              "usr/local/bin/lazaret-escalate" };
        _cleanup_free_ char *rootfs = path_join(staging, "rootfs");
        _cleanup_close_ int rootfd = -EBADF;
        mode_t old_umask;

        rootfd = rootfs ? open(rootfs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -EBADF;
        if (rootfd < 0)
                return;
        /* The modes an image would have (a /run of 0700 would shut non-root users out), not the coordinator's 077. */
        old_umask = umask(022);
        for (size_t i = 0; i < ELEMENTSOF(points); i++) {
                _cleanup_close_ int dir = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
                const char *p = points[i];

                for (const char *slash; dir >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
                        _cleanup_free_ char *name = strndup(p, (size_t) (slash - p));
                        int next = name ? mkdir_open_at(dir, name, 0755) : -ENOMEM;

                        safe_close(dir);
                        dir = next;
                }
                if (dir >= 0 && *p)
                        safe_close(openat(dir, p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644));
        }
        (void) umask(old_umask);
}

static void on_unpacked(UsernsChild *c, int status, void *userdata) {
        ImagePrep *ip = userdata;
        _cleanup_free_ char *record = NULL;
        char msg[512];
        int r = 0;
        char *why = NULL;

        ip->unpack = userns_child_free(ip->unpack);
        record = path_join(ip->staging, PREPARED_RECORD);
        if (status == 0)
                make_mount_points(ip->staging);
        if (status != 0) {
                unpack_message(ip, msg, sizeof(msg));
                (void) !asprintf(&why, "umoci unpack %s failed (status %d): %s", ip->image_arg, status,
                                 msg[0] ? msg : "no message");
                /* A full disk is said as such (umoci's own words). */
                r = strstr(msg, "no space left on device") ? -ENOSPC : -EIO;
        } else if (!record || (r = write_file(record, ip->record, 0644)) < 0) {
                r = r < 0 ? r : -ENOMEM;
                (void) !asprintf(&why, "cannot record %s: %s", PREPARED_RECORD, strerror(-r));
        } else if (rename(ip->staging, ip->final) < 0 && errno != EEXIST && errno != ENOTEMPTY) {
                /* EEXIST/ENOTEMPTY: another Domain published the same image first; use theirs. */
                r = -errno;
                (void) !asprintf(&why, "cannot publish %s: %s", ip->final, strerror(-r));
        }
        if (ip->staging)
                quarantine(ip->staging);        /* gone after a rename; set aside after a failure */
        free(ip->staging);
        ip->staging = NULL;
        (void) unlink(ip->lock_path);
        ip->done(ip, r, why ?: (r < 0 ? "image preparation failed" : NULL), ip->userdata);
        free(why);
}

/* Which prepared lower an image needs: named by what makes it (SR-15), not by the image alone. */
typedef struct LowerName {
        char *dir, *tag;                /* the image layout and its tag */
        char *index;                    /* its index.json, for messages */
        char *digest;                   /* the tag's manifest digest */
        char *prepared;                 /* <data_root>/STORAGE_PREPARED_DIR, made */
        char id[PREPARED_ID_LEN + 1];
} LowerName;

static void lower_name_done(LowerName *n) {
        free(n->dir);
        free(n->tag);
        free(n->index);
        free(n->digest);
        free(n->prepared);
}

static int lower_name(const Domain *d, const SubidRange *uids, const SubidRange *gids, LowerName *ret, char **ret_why) {
        _cleanup_(lower_name_done) LowerName n = {};
        _cleanup_free_ char *buf = NULL, *why = NULL;
        size_t len;
        int r;

        r = domain_resolve_image(d, &n.dir, &n.tag, &why);
        if (r < 0)
                return errorf(ret_why, r, "%s", why ?: "cannot resolve the image");
        n.index = path_join(n.dir, "index.json");
        if (!n.index)
                return -ENOMEM;
        r = read_full_file(n.index, JSON_DOC_MAX_BYTES, &buf, &len);
        if (r < 0)
                return errorf(ret_why, r, "%s: %s%s", n.index, strerror(-r),
                              r == -ENOENT ? " (build the default image with: lazaretctl image build-default)" : "");
        r = oci_index_digest(buf, len, n.tag, &n.digest, &why);
        if (r < 0)
                return errorf(ret_why, r, "%s: %s", n.index, why);
        n.prepared = path_join(d->config->data_root, STORAGE_PREPARED_DIR);
        if (!n.prepared)
                return -ENOMEM;
        r = mkdir_parents(n.prepared, 0700);
        if (r < 0)
                return errorf(ret_why, r, "cannot create %s: %s", n.prepared, strerror(-r));
        r = prepared_artifact_id(n.digest, PREPARER_VERSION, (uint32_t) getuid(), uids, (uint32_t) getgid(), gids, n.id);
        if (r < 0)
                return errorf(ret_why, r, "%s: cannot name the prepared lower of manifest %s", n.index, n.digest);
        *ret = n;
        n = (LowerName) {};
        return 0;
}

/* umoci unpacks the image into a staging tree of n.prepared, published as final when it succeeded (on_unpacked()). */
static int unpack_start(sd_event *e, const LowerName *n, const char *final, const SubidRange *uids, const SubidRange *gids,
                        ImagePrepDone done, void *userdata, ImagePrep **ret_prep, char **ret_why) {
        _cleanup_free_ char *umoci = NULL;
        _cleanup_(image_prep_freep) ImagePrep *ip = NULL;
        _cleanup_close_ int devnull = -EBADF;
        mode_t old_umask;
        sd_id128_t rnd;
        int r;

        r = find_program("umoci", &umoci);
        if (r == -ENOENT)
                return errorf(ret_why, r, "umoci is not installed; install the umoci package");
        if (r < 0)
                return r;
        ip = calloc(1, sizeof(ImagePrep));
        if (!ip)
                return -ENOMEM;
        ip->lock_fd = ip->log_fd = -EBADF;
        ip->done = done;
        ip->userdata = userdata;
        r = sd_id128_randomize(&rnd);
        if (r < 0)
                return r;
        if (asprintf(&ip->staging, "%s/.staging-" SD_ID128_FORMAT_STR, n->prepared, SD_ID128_FORMAT_VAL(rnd)) < 0 ||
            asprintf(&ip->lock_path, "%s.lock", ip->staging) < 0 ||
            asprintf(&ip->record, "{\"artifact_id\":\"%s\",\"manifest_digest\":\"sha256:%s\",\"preparer\":\"%s\","
                     "\"uid_map\":[[0,%u,1],[1,%" PRIu32 ",%" PRIu32 "]],\"gid_map\":[[0,%u,1],[1,%" PRIu32 ",%" PRIu32 "]]}\n",
                     n->id, n->digest, PREPARER_VERSION, (unsigned) getuid(), uids->start, uids->count, (unsigned) getgid(),
                     gids->start, gids->count) < 0 ||
            asprintf(&ip->image_arg, "%s:%s", n->dir, n->tag) < 0 || !(ip->final = strdup(final)))
                return -ENOMEM;
        ip->lock_fd = open(ip->lock_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (ip->lock_fd < 0 || flock(ip->lock_fd, LOCK_EX | LOCK_NB) < 0)
                return errorf(ret_why, -errno, "cannot lock %s: %m", ip->lock_path);
        /* In memory, not beside the staging tree: on a full disk that is where umoci says so. */
        ip->log_fd = memfd_create("umoci-unpack-log", MFD_CLOEXEC);
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (ip->log_fd < 0 || devnull < 0)
                return errorf(ret_why, -errno, "cannot open a log for umoci: %m");
        log_info("Preparing image %s (manifest %.12s) as %.12s in %s", ip->image_arg, n->digest, n->id, ip->final);
        /* As root of a namespace mapped like the sandbox's: the image's owners are kept (ns 42 stays 42 inside).
         * Under umask 022, not the coordinator's 077: a directory a layer implies without an entry of its own
         * is made with it (0700 would shut the sandbox's other users out of /var/lib, say). */
        old_umask = umask(022);
        r = userns_child_start(e, (char *[]) { umoci, (char *) "--log", (char *) "error", (char *) "unpack",
                                               (char *) "--image", ip->image_arg, ip->staging, NULL },
                               devnull, ip->log_fd, uids, gids,
                               &(UsernsCallbacks) { .mapped = on_unpack_mapped, .failed = on_unpack_failed,
                                                    .exited = on_unpacked },
                               ip, &ip->unpack);
        (void) umask(old_umask);
        if (r < 0)
                return errorf(ret_why, r, "cannot run umoci in a mapped user namespace: %s", strerror(-r));
        *ret_prep = TAKE_PTR(ip);
        return 0;
}

int image_prepare(sd_event *e, const Domain *d, const SubidRange *uids, const SubidRange *gids, ImagePrepDone done,
                  void *userdata, ImagePrep **ret_prep, PreparedImage *ret_image, char **ret_why) {
        _cleanup_(lower_name_done) LowerName n = {};
        _cleanup_free_ char *final = NULL;
        struct stat st;
        int r;

        r = lower_name(d, uids, gids, &n, ret_why);
        if (r < 0)
                return r;
        final = path_join(n.prepared, n.id);
        if (!final)
                return -ENOMEM;
        remove_stale_staging(n.prepared);
        if (stat(final, &st) >= 0) {
                r = load_prepared(final, ret_image, ret_why);
                return r < 0 ? r : 1;
        }
        return unpack_start(e, &n, final, uids, gids, done, userdata, ret_prep, ret_why);
}

const char *image_prep_name(const ImagePrep *ip) {
        return ip->image_arg;
}

int image_prep_take(ImagePrep *ip, PreparedImage *ret_image, char **ret_why) {
        return load_prepared(ip->final, ret_image, ret_why);
}
