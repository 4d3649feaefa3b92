/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Finding and reading the configuration file: which file, whether it may be
 * trusted (owner, mode, type, size, as fstat() of the opened file says), and
 * the two steps that turn its text into a Config (config_parse(), then
 * config_resolve()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "fs-util.h"
#include "json-util.h"
#include "path-util.h"
#include "util.h"

int config_default_path(const HostContext *hc, char **ret) {
        char *j;

        if (hc->config_env) {
                j = strdup(hc->config_env);
                if (!j)
                        return -ENOMEM;
                *ret = j;
                return 1;       /* named by the environment: must exist */
        }
        if (!hc->xdg_config_home)
                return -ENXIO;
        j = path_join(hc->xdg_config_home, "lazaret/config.json");
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}

/*
 * The canonical path of the file fd has open, as the kernel names it: what
 * was read, not what the path names by now (a directory above it may have
 * been swapped for a symlink since).
 */
static int fd_canonical_path(int fd, char **ret) {
        _cleanup_free_ char *p = NULL;
        char proc[64];
        ssize_t k;

        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        p = malloc(LAZARET_PATH_MAX + 1);
        if (!p)
                return -ENOMEM;
        k = readlink(proc, p, LAZARET_PATH_MAX + 1);
        if (k < 0)
                return -errno;
        if (k > LAZARET_PATH_MAX)
                return -ENAMETOOLONG;
        p[k] = 0;
        if (!path_is_absolute(p))       /* not a file of a mounted file system */
                return -EINVAL;
        *ret = TAKE_PTR(p);
        return 0;
}

static int read_config_file(const char *path, char **ret, size_t *ret_len, mode_t *ret_mode, char **ret_canon,
                            char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL, *canon = NULL;
        struct stat st;
        size_t n = 0;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return errorf(ret_error, -EINVAL, "%s: not a regular file", path);
        if (st.st_uid != getuid() && st.st_uid != 0)
                return errorf(ret_error, -EPERM, "%s: owned by UID %u, not by you; refusing to trust it", path, (unsigned) st.st_uid);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return errorf(ret_error, -EPERM, "%s: writable by group or others (mode %04o); run chmod go-w on it",
                              path, (unsigned) (st.st_mode & 07777));

        r = read_full_fd(fd, JSON_DOC_MAX_BYTES, &buf, &n);
        if (r == -EFBIG)
                return errorf(ret_error, r, "%s: larger than %d bytes", path, JSON_DOC_MAX_BYTES);
        if (r < 0)
                return r;
        /* Messages and the exposure check use the canonical path of what was read. */
        r = fd_canonical_path(fd, &canon);
        if (r < 0)      /* never -ENOENT: the file is there, and is not to be taken for a missing one */
                return errorf(ret_error, r == -ENOENT ? -EIO : r, "%s: cannot determine its canonical path: %s",
                              path, strerror(-r));
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        *ret_mode = st.st_mode & 07777;
        *ret_canon = TAKE_PTR(canon);
        return 0;
}

static int config_env(const HostContext *hc, ConfigEnv *ret, char **ret_error) {
        if (!hc->home)
                return errorf(ret_error, -ENXIO, "cannot determine the home directory: %s", strerror(ENXIO));
        if (!hc->xdg_data_home)
                return errorf(ret_error, -ENXIO, "cannot determine $XDG_DATA_HOME: %s", strerror(ENXIO));
        *ret = (ConfigEnv) { .home = hc->home, .xdg_data_home = hc->xdg_data_home };
        return 0;
}

/* Both steps: the document into a Config, then what the file system says about it. */
static int parse_and_resolve(const char *text, size_t len, const char *filename, const ConfigEnv *env,
                             Config **ret, char **ret_error) {
        _cleanup_config_ Config *c = NULL;
        int r;

        r = config_parse(text, len, filename, env, &c, ret_error);
        if (r < 0)
                return r;
        r = config_resolve(c, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

int config_load_builtin(const HostContext *hc, Config **ret, char **ret_error) {
        ConfigEnv env;
        int r;

        *ret_error = NULL;
        r = config_env(hc, &env, ret_error);
        if (r < 0)
                return r;
        return parse_and_resolve(NULL, 0, NULL, &env, ret, ret_error);
}

int config_load(const HostContext *hc, const char *explicit_path, Config **ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL, *canon = NULL;
        bool must_exist;
        size_t len = 0;
        mode_t mode = 0;
        ConfigEnv env;
        Config *c = NULL;
        int r;

        *ret_error = NULL;

        r = config_env(hc, &env, ret_error);
        if (r < 0)
                return r;

        if (explicit_path) {
                path = strdup(explicit_path);
                if (!path)
                        return -ENOMEM;
                must_exist = true;
        } else {
                r = config_default_path(hc, &path);
                if (r < 0)
                        return r;
                must_exist = r > 0;
        }

        r = read_config_file(path, &text, &len, &mode, &canon, ret_error);
        if (r == -ENOENT && !must_exist)
                return parse_and_resolve(NULL, 0, NULL, &env, ret, ret_error);
        if (r < 0) {
                if (!*ret_error)
                        (void) !asprintf(ret_error, "%s: cannot read: %s", path, strerror(-r));
                return r;
        }

        r = parse_and_resolve(text, len, canon, &env, &c, ret_error);
        if (r < 0)
                return r;
        c->mode = mode;         /* as opened: not looked up again by path */
        *ret = c;
        return 0;
}

