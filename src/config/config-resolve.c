/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The second step of reading a configuration: what config_parse() read is
 * judged against the file system (the runsc binary, each auto-approve
 * program), and the fingerprint is taken over the result.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "config-escalation.h"
#include "config-parse.h"
#include "hash.h"
#include "path-util.h"

/*
 * The runsc binary Lazaret runs on the user's behalf: an absolute path
 * without symbolic links, to a regular executable file, that nobody but
 * root and the caller can swap: path_walk(PATH_WALK_TRUSTED) judges every
 * component by fd (owner, mode, POSIX ACL; sticky directories above it
 * allowed). (Where it lies relative to the workspace and volumes is checked
 * with the Domain, in domain_check_exposure().)
 */
static int resolve_runsc(ConfigParser *p, const char *runsc) {
        static const char rule[] =
                "runsc and every directory above it must belong to root or to you and be writable by nobody else "
                "(a sticky directory such as /tmp excepted)";
        static const char path[] = "runtime.runsc";
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        r = path_walk(runsc, PATH_WALK_TRUSTED, &fd, &w);
        if (r == -ENOMEM)
                return config_oom(p);
        if (r < 0) {
                _cleanup_free_ char *msg = NULL;

                path_walk_error(NULL, runsc, &w, r, "the binary", rule, &msg);
                if (!msg)
                        return config_oom(p);
                return config_error(p, path, r, "%s", msg);
        }
        if (fstat(fd, &st) < 0)
                return config_error(p, path, -errno, "\"%s\": %s", runsc, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return config_error(p, path, -EINVAL, "\"%s\" is not a regular file", runsc);
        if (!(st.st_mode & 0111) || faccessat(fd, "", X_OK, AT_EMPTY_PATH) < 0)
                return config_error(p, path, -EACCES, "\"%s\" is not executable", runsc);
        return 0;
}

int config_resolve(Config *c, char **ret_error) {
        ConfigParser p = { .file = c->path ?: CONFIG_BUILTIN_NAME };
        _cleanup_free_ char *canon = NULL;
        int r;

        *ret_error = NULL;
        c->resolved = false;

        /* runsc stays the path as written (absolute, normalised): the walk refuses a link on the way. */
        if (c->runsc) {
                r = resolve_runsc(&p, c->runsc);
                if (r < 0)
                        goto fail;
        }
        r = config_escalation_resolve(&p, c);
        if (r < 0)
                goto fail;

        r = config_canonical_json(c, &canon);
        if (r < 0) {
                config_oom(&p);
                goto fail;
        }
        sha256_buf(canon, strlen(canon), c->fingerprint);
        c->resolved = true;
        return 0;

fail:
        *ret_error = p.error;
        return r;
}
