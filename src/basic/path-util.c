/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"
#include "path-util.h"
#include "util.h"

bool path_is_absolute(const char *p) {
        return p && p[0] == '/';
}

bool path_has_dotdot(const char *p) {
        const char *s = p;

        while (s && *s) {
                const char *e = strchrnul(s, '/');
                if (e - s == 2 && s[0] == '.' && s[1] == '.')
                        return true;
                s = *e ? e + 1 : e;
        }
        return false;
}

bool path_is_plain_relative(const char *p, size_t n) {
        if (n == 0 || p[0] == '/' || p[n - 1] == '/')
                return false;
        for (size_t i = 0; i < n;) {
                size_t e = i;
                while (e < n && p[e] != '/')
                        e++;
                if (e == i || (e - i == 1 && p[i] == '.') || (e - i == 2 && p[i] == '.' && p[i + 1] == '.'))
                        return false;
                i = e + 1;
        }
        return true;
}

int path_simplify(const char *p, const char *guard, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0, glen = guard ? strlen(guard) : 0;

        if (!path_is_absolute(p))
                return -EINVAL;
        if (strlen(p) > LAZARET_PATH_MAX)
                return -ENAMETOOLONG;
        out = malloc(strlen(p) + 2);
        if (!out)
                return -ENOMEM;

        for (const char *s = p; *s;) {
                const char *e;

                while (*s == '/')
                        s++;
                if (!*s)
                        break;
                e = strchrnul(s, '/');
                if (e - s == 2 && s[0] == '.' && s[1] == '.') {
                        out[n] = 0;
                        if (guard && n > glen && path_is_at_or_below(out, guard))
                                return -ELOOP;
                        /* Up one: drop the last segment written ("/.." is "/"). */
                        while (n > 0 && out[n - 1] != '/')
                                n--;
                        if (n > 0)
                                n--;
                } else if (!(e - s == 1 && s[0] == '.')) {
                        out[n++] = '/';
                        memcpy(out + n, s, e - s);
                        n += e - s;
                }
                s = e;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

int path_normalize(const char *p, char **ret) {
        if (!path_is_absolute(p))
                return -EINVAL;
        if (path_has_dotdot(p))
                return -EINVAL;
        return path_simplify(p, NULL, ret);
}

bool path_is_at_or_below(const char *path, const char *dir) {
        size_t l;

        if (streq(dir, "/"))
                return path_is_absolute(path);
        l = strlen(dir);
        return strncmp(path, dir, l) == 0 && (path[l] == 0 || path[l] == '/');
}

char *path_join(const char *a, const char *b) {
        char *j;
        size_t la = strlen(a);

        while (la > 0 && a[la - 1] == '/')
                la--;
        while (*b == '/')
                b++;
        if (asprintf(&j, "%.*s/%s", (int) la, a, b) < 0)
                return NULL;
        return j;
}

int path_canonicalize(const char *p, char **ret) {
        _cleanup_free_ char *norm = NULL, *prefix = NULL, *resolved = NULL;
        char *cut;

        int r;

        r = path_normalize(p, &norm);
        if (r < 0)
                return r;

        prefix = strdup(norm);
        if (!prefix)
                return -ENOMEM;

        /* Walk up until some prefix exists; realpath() only that part. */
        for (;;) {
                resolved = realpath(prefix, NULL);
                if (resolved)
                        break;
                if (errno != ENOENT && errno != ENOTDIR)
                        return -errno;
                cut = strrchr(prefix, '/');
                if (!cut || cut == prefix) {
                        /* Even "/" did not resolve; should not happen. */
                        if (streq(prefix, "/"))
                                return -ENOENT;
                        prefix[1] = 0;
                } else
                        *cut = 0;
        }

        if (streq(prefix, norm)) {
                *ret = TAKE_PTR(resolved);
                return 0;
        }

        /* norm continues after prefix with a '/' (prefix "/" is special). */
        _cleanup_free_ char *joined = path_join(resolved, norm + (streq(prefix, "/") ? 0 : strlen(prefix)));
        if (!joined)
                return -ENOMEM;
        if (strlen(joined) > LAZARET_PATH_MAX)
                return -ENAMETOOLONG;
        *ret = TAKE_PTR(joined);
        return 0;
}

int path_absolute_lexical(const char *p, const char *cwd, char **ret) {
        _cleanup_free_ char *joined = NULL;

        if (!p || !*p)
                return -EINVAL;
        if (!path_is_absolute(p)) {
                if (!path_is_absolute(cwd))
                        return -EINVAL;
                joined = path_join(cwd, p);
                if (!joined)
                        return -ENOMEM;
                p = joined;
        }
        return path_simplify(p, NULL, ret);
}

void path_walk_result_done(PathWalkResult *r) {
        if (!r)
                return;
        free(r->at);
        *r = (PathWalkResult) {};
}

/* The on-disk form of system.posix_acl_access (little endian, version 2). */
#define ACL_XATTR_VERSION 2
enum {
        ACL_TAG_USER_OBJ  = 0x01,
        ACL_TAG_USER      = 0x02,
        ACL_TAG_GROUP_OBJ = 0x04,
        ACL_TAG_GROUP     = 0x08,
        ACL_TAG_MASK      = 0x10,
        ACL_TAG_OTHER     = 0x20,
};
#define ACL_PERM_WRITE 0x02

static uint32_t le32_at(const uint8_t *b) {
        return (uint32_t) b[0] | (uint32_t) b[1] << 8 | (uint32_t) b[2] << 16 | (uint32_t) b[3] << 24;
}

/*
 * 1 when fd's access ACL lets anyone but the owner write (with the ID in
 * *ret_id: a user, a group, or (unsigned) -1 for the owning group or others),
 * 0 when it does not or there is none. With an ACL the mode's group bits are
 * the mask, so the mode check below catches this too; reading the ACL names
 * who was granted the access, and does not rely on that equivalence.
 */
static int acl_grants_foreign_write(int fd, unsigned *ret_id) {
        char proc[64];
        uint8_t buf[4 + 8 * 64];
        ssize_t k;
        bool has_mask = false, mask_w = false;

        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        k = getxattr(proc, "system.posix_acl_access", buf, sizeof(buf));
        if (k < 0) {
                if (errno == ENODATA || errno == EOPNOTSUPP)
                        return 0;
                if (errno == ERANGE)    /* more than 64 entries: not something we judge; refuse */
                        return *ret_id = (unsigned) -1, 1;
                return -errno;
        }
        if (k < 4 || (k - 4) % 8 != 0 || le32_at(buf) != ACL_XATTR_VERSION)
                return -EBADMSG;
        for (ssize_t o = 4; o < k; o += 8)
                if ((buf[o] | buf[o + 1] << 8) == ACL_TAG_MASK) {
                        has_mask = true;
                        mask_w = (buf[o + 2] | buf[o + 3] << 8) & ACL_PERM_WRITE;
                }
        for (ssize_t o = 4; o < k; o += 8) {
                unsigned tag = buf[o] | buf[o + 1] << 8, perm = buf[o + 2] | buf[o + 3] << 8;
                uint32_t id = le32_at(buf + o + 4);

                if (!(perm & ACL_PERM_WRITE))
                        continue;
                switch (tag) {
                case ACL_TAG_USER:
                        if (id == getuid())
                                continue;
                        __attribute__((fallthrough));
                case ACL_TAG_GROUP:
                case ACL_TAG_GROUP_OBJ:
                        /* Named entries and the owning group are limited by the mask. */
                        if (has_mask && !mask_w)
                                continue;
                        *ret_id = tag == ACL_TAG_GROUP_OBJ ? (unsigned) -1 : id;
                        return 1;
                case ACL_TAG_OTHER:
                        *ret_id = (unsigned) -1;
                        return 1;
                }
        }
        return 0;
}

static int walk_fail(PathWalkResult *why, PathWalkFailure f, const char *at, const struct stat *st, int r) {
        if (why) {
                path_walk_result_done(why);
                why->failure = f;
                why->at = strdup(at);
                if (!why->at)
                        return -ENOMEM;
                if (st) {
                        why->uid = (unsigned) st->st_uid;
                        why->mode = (unsigned) (st->st_mode & 07777);
                }
        }
        return r;
}

/* One component, already known not to be a symlink, against the ownership rule. */
static int judge_trusted(int fd, const struct stat *st, const char *at, bool last, PathWalkResult *why) {
        bool sticky_passage = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && !last;
        unsigned id = 0;
        int r;

        if (st->st_uid != 0 && st->st_uid != getuid())
                return walk_fail(why, PATH_WALK_FOREIGN_OWNER, at, st, -EPERM);
        if (sticky_passage)
                return 0;
        r = acl_grants_foreign_write(fd, &id);
        if (r < 0)
                return walk_fail(why, PATH_WALK_ERRNO, at, st, r);
        if (r > 0) {
                r = walk_fail(why, PATH_WALK_ACL, at, st, -EPERM);
                if (why)
                        why->acl_id = id;
                return r;
        }
        if (st->st_mode & (S_IWGRP | S_IWOTH))
                return walk_fail(why, PATH_WALK_WRITABLE, at, st, -EPERM);
        return 0;
}

int path_walk(const char *path, PathWalkFlags flags, int *ret_fd, PathWalkResult *ret_why) {
        _cleanup_free_ char *norm = NULL, *prefix = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        if (ret_why)
                path_walk_result_done(ret_why);
        r = path_normalize(path, &norm);
        if (r < 0)
                return r;
        prefix = calloc(strlen(norm) + 2, 1);
        if (!prefix)
                return -ENOMEM;
        strcpy(prefix, "/");

        fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return walk_fail(ret_why, PATH_WALK_ERRNO, "/", NULL, -errno);

        for (const char *s = norm;;) {
                const char *e;
                bool last;

                while (*s == '/')
                        s++;
                last = !*s;

                if (fstat(fd, &st) < 0)
                        return walk_fail(ret_why, PATH_WALK_ERRNO, prefix, NULL, -errno);
                if (S_ISLNK(st.st_mode))
                        return walk_fail(ret_why, PATH_WALK_SYMLINK, prefix, &st, -ELOOP);
                if ((flags & PATH_WALK_TRUSTED)) {
                        r = judge_trusted(fd, &st, prefix, last, ret_why);
                        if (r < 0)
                                return r;
                }
                if (last)
                        break;
                if (!S_ISDIR(st.st_mode))
                        return walk_fail(ret_why, PATH_WALK_NOT_DIRECTORY, prefix, &st, -ENOTDIR);

                e = strchrnul(s, '/');
                _cleanup_free_ char *name = strndup(s, e - s);
                if (!name)
                        return -ENOMEM;
                if (!streq(prefix, "/"))
                        strcat(prefix, "/");
                strcat(prefix, name);

                int nfd = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (nfd < 0 && errno == ENOENT && (flags & PATH_WALK_MKDIR)) {
                        if (mkdirat(fd, name, 0700) < 0 && errno != EEXIST)
                                return walk_fail(ret_why, PATH_WALK_ERRNO, prefix, NULL, -errno);
                        nfd = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                }
                if (nfd < 0) {
                        if (errno == ENOENT)
                                return walk_fail(ret_why, PATH_WALK_MISSING, prefix, NULL, -ENOENT);
                        return walk_fail(ret_why, PATH_WALK_ERRNO, prefix, NULL, -errno);
                }
                close(fd);
                fd = nfd;
                s = e;
        }

        if (ret_fd)
                *ret_fd = TAKE_FD(fd);
        return 0;
}

int path_walk_error(const char *label, const char *path, const PathWalkResult *w, int r, const char *what,
                    const char *rule, char **ret_error) {
        const char *l = strempty(label), *sep = label ? ": " : "", *at = w->at ?: path;

        switch (w->failure) {
        case PATH_WALK_SYMLINK: {
                _cleanup_free_ char *real = realpath(path, NULL);
                const char *how = streq(at, path) ? "is a symbolic link" : "goes through a symbolic link";

                if (real)
                        return errorf(ret_error, r, "%s%s\"%s\" %s (\"%s\"); name its resolved path \"%s\" instead",
                                      l, sep, path, how, at, real);
                return errorf(ret_error, r, "%s%s\"%s\" %s (\"%s\") that does not resolve; name the real path instead",
                              l, sep, path, how, at);
        }
        case PATH_WALK_MISSING:
                return errorf(ret_error, r, "%s%s\"%s\" does not exist", l, sep, at);
        case PATH_WALK_NOT_DIRECTORY:
                return errorf(ret_error, r, "%s%s\"%s\" is not a directory", l, sep, at);
        case PATH_WALK_FOREIGN_OWNER:
                return errorf(ret_error, r, "%s%s\"%s\" is owned by UID %u, who could swap %s; %s", l, sep, at, w->uid,
                              what, rule);
        case PATH_WALK_ACL:
                if (w->acl_id == (unsigned) -1)
                        return errorf(ret_error, r, "%s%s\"%s\" has an ACL that lets its group or others write it; %s",
                                      l, sep, at, rule);
                return errorf(ret_error, r, "%s%s\"%s\" has an ACL that lets ID %u write it; %s", l, sep, at,
                              w->acl_id, rule);
        case PATH_WALK_WRITABLE:
                return errorf(ret_error, r, "%s%s\"%s\" is writable by group or others (mode %04o), who could swap %s; %s",
                              l, sep, at, w->mode, what, rule);
        default:
                return errorf(ret_error, r, "%s%s\"%s\": %s", l, sep, at, strerror(-r));
        }
}

int path_repair_error(const char *label, const char *path, const PathWalkResult *w, int r, const char *what,
                      char **ret_error) {
        const char *l = strempty(label), *sep = label ? ": " : "", *at = w->at ?: path;

        switch (w->failure) {
        case PATH_WALK_FOREIGN_OWNER:
                return errorf(ret_error, r,
                              "%s%s\"%s\" is owned by UID %u, not by you (a sandbox of an older Lazaret chowned it, if "
                              "that is one of your subordinate IDs); give it back with "
                              "'lazaretctl unshare -- chown -R 0:0 %s'", l, sep, at, w->uid, at);
        case PATH_WALK_WRITABLE:
                return errorf(ret_error, r,
                              "%s%s\"%s\" is writable by group or others (mode %04o), who could change %s (a sandbox "
                              "of an older Lazaret may have changed it); repair with 'chmod go-w %s'",
                              l, sep, at, w->mode, what, at);
        default:
                return path_walk_error(label, path, w, r, what,
                                       "the workspace must belong to you and be writable by nobody else", ret_error);
        }
}
