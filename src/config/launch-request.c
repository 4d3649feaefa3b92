/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "bus-names.h"
#include "domain.h"
#include "fs-util.h"
#include "json-util.h"
#include "launch-request.h"
#include "macro.h"
#include "path-util.h"
#include "util.h"

#define LAUNCH_REQUEST_MAX 16384


void launch_request_done(LaunchRequest *r) {
        free(r->config_path);
        r->config_path = NULL;
}

static bool is_hex64(const char *s) {
        if (strlen(s) != SHA256_HEX_LEN)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

int launch_request_write(const char *runtime_dir, const char *id, const LaunchRequest *req, ino_t *ret_ino,
                         char **ret_error) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_free_ char *tmp = NULL, *final = NULL, *s = NULL;
        _cleanup_close_ int dirfd = -EBADF, fd = -EBADF;
        uint64_t rnd;
        int r;

        *ret_error = NULL;
        if (!o)
                return errorf(ret_error, -ENOMEM, "cannot build the launch request: %s", strerror(ENOMEM));
        if (!domain_id_is_valid(id) || !is_hex64(req->fingerprint))
                return errorf(ret_error, -EINVAL, "invalid launch request");
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                return errorf(ret_error, -EIO, "getrandom failed");
        if (asprintf(&tmp, ".%s%s.%016llx", id, LAUNCH_REQUEST_SUFFIX, (unsigned long long) rnd) < 0 ||
            asprintf(&final, "%s%s", id, LAUNCH_REQUEST_SUFFIX) < 0)
                return -ENOMEM;

        r = json_add_int64(o, "version", 1);
        if (r >= 0)
                r = req->config_path ? json_add_string(o, "config", req->config_path) : json_add_null(o, "config");
        if (r >= 0)
                r = json_add_string(o, "fingerprint", req->fingerprint);
        if (r >= 0 && req->maintenance)
                r = json_add_string(o, "mode", "maintenance");
        if (r >= 0)
                r = json_to_string(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &s);
        if (r == -EILSEQ)
                return errorf(ret_error, r, "cannot build the launch request: the configuration path is not valid UTF-8");
        if (r < 0)
                return errorf(ret_error, r, "cannot build the launch request: %s", strerror(-r));

        /* Like the Domain record: written whole, synced, then renamed into place. */
        dirfd = open(runtime_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return errorf(ret_error, -errno, "cannot open %s: %m", runtime_dir);
        /* Writers and launch_request_remove() exclude each other. */
        if (flock(dirfd, LOCK_EX) < 0)
                return errorf(ret_error, -errno, "cannot lock %s: %m", runtime_dir);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return errorf(ret_error, -errno, "cannot create %s/%s: %m", runtime_dir, tmp);
        r = write_all(fd, s, strlen(s));
        if (r >= 0 && ret_ino) {
                struct stat st;
                if (fstat(fd, &st) < 0)
                        r = -errno;
                else
                        *ret_ino = st.st_ino;
        }
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && renameat(dirfd, tmp, dirfd, final) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(dirfd, tmp, 0);
                return errorf(ret_error, r, "cannot write %s/%s: %s", runtime_dir, final, strerror(-r));
        }
        (void) fsync(dirfd);
        return 0;
}

int launch_request_remove(const char *runtime_dir, const char *id, ino_t ino) {
        _cleanup_free_ char *final = NULL;
        _cleanup_close_ int dirfd = -EBADF;
        struct stat st;

        if (!domain_id_is_valid(id) || asprintf(&final, "%s%s", id, LAUNCH_REQUEST_SUFFIX) < 0)
                return -EINVAL;
        dirfd = open(runtime_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return -errno;
        if (flock(dirfd, LOCK_EX) < 0)
                return -errno;
        if (fstatat(dirfd, final, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        /* Another launch replaced it since (rename makes a new inode): theirs. */
        if (st.st_ino != ino)
                return 0;
        return unlinkat(dirfd, final, 0) < 0 ? -errno : 1;
}

int launch_request_parse(const char *buf, size_t n, const char *where, LaunchRequest *ret, char **ret_error) {
        _cleanup_free_ char *why = NULL;
        _cleanup_json_ json_object *o = NULL;
        json_object *v, *cfg, *fp, *mode = NULL;
        size_t keys = 3;
        int r;

        *ret_error = NULL;
        if (n > LAUNCH_REQUEST_MAX)
                return errorf(ret_error, -EFBIG, "%s: larger than %d bytes", where, LAUNCH_REQUEST_MAX);
        r = json_parse_strict(buf, n, &o, &why);
        if (r < 0)
                return errorf(ret_error, -EBADMSG, "%s: %s", where, why ?: "invalid");
        /* "mode" is optional: "launch" (the default) or "maintenance". */
        if (json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "mode", &mode)) {
                if (!json_object_is_type(mode, json_type_string) ||
                    (!streq(json_object_get_string(mode), "launch") && !streq(json_object_get_string(mode), "maintenance")))
                        return errorf(ret_error, -EBADMSG, "%s: mode is neither \"launch\" nor \"maintenance\"", where);
                keys++;
        }
        if (!json_object_is_type(o, json_type_object) || json_object_object_length(o) != (int) keys ||
            !json_object_object_get_ex(o, "version", &v) || !json_object_is_type(v, json_type_int) || json_object_get_int(v) != 1 ||
            !json_object_object_get_ex(o, "config", &cfg) ||
            !(cfg == NULL || json_object_is_type(cfg, json_type_string)) ||
            !json_object_object_get_ex(o, "fingerprint", &fp) || !json_object_is_type(fp, json_type_string) ||
            !is_hex64(json_object_get_string(fp)))
                return errorf(ret_error, -EBADMSG, "%s: not a version 1 launch request", where);
        if (cfg && (!path_is_absolute(json_object_get_string(cfg)) ||
                    strlen(json_object_get_string(cfg)) != (size_t) json_object_get_string_len(cfg) ||
                    strlen(json_object_get_string(cfg)) > LAZARET_PATH_MAX))
                return errorf(ret_error, -EBADMSG, "%s: configuration path is not a valid absolute path", where);

        *ret = (LaunchRequest) {};
        if (cfg) {
                ret->config_path = strdup(json_object_get_string(cfg));
                if (!ret->config_path)
                        return -ENOMEM;
        }
        memcpy(ret->fingerprint, json_object_get_string(fp), SHA256_HEX_LEN + 1);
        ret->maintenance = mode && streq(json_object_get_string(mode), "maintenance");
        return 0;
}

int launch_request_read(const char *runtime_dir, const char *id, LaunchRequest *ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        size_t n;
        int r;

        *ret_error = NULL;
        if (!domain_id_is_valid(id))
                return errorf(ret_error, -EINVAL, "\"%s\" is not a Domain ID", id);
        if (asprintf(&path, "%s/%s%s", runtime_dir, id, LAUNCH_REQUEST_SUFFIX) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errorf(ret_error, -errno, "%s: %m (start Domains with lazaretctl launch)", path);
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077))
                return errorf(ret_error, -EPERM, "%s: not a private regular file of yours", path);
        r = read_full_fd(fd, LAUNCH_REQUEST_MAX, &buf, &n);
        if (r < 0)
                return errorf(ret_error, r, "%s: cannot read: %s", path, strerror(-r));
        return launch_request_parse(buf, n, path, ret, ret_error);
}
