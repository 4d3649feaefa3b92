/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "parse-util.h"
#include "path-util.h"
#include "macro.h"
#include "strv.h"
#include "util.h"
#include "view-changes.h"
#include "view-policy.h"

void view_changes_done(ViewChanges *c) {
        for (size_t i = 0; i < c->n; i++)
                free(c->changes[i].path);
        free(c->changes);
        *c = (ViewChanges) {};
}

int view_base_parse(const char *s, size_t n, ViewBase *ret) {
        const char *field[3];
        size_t len[3], k = 0, start = 0;
        uint64_t size, sec, nsec;

        /* Three numbers, one space between each, as the view writes them (a NUL is garbage to the parser). */
        for (size_t i = 0; i <= n; i++)
                if (i == n || s[i] == ' ') {
                        if (k == ELEMENTSOF(field))
                                return -EINVAL;
                        field[k] = s + start;
                        len[k++] = i - start;
                        start = i + 1;
                }
        if (k != ELEMENTSOF(field) || parse_unsigned_n(field[0], len[0], 0, 0, UINT64_MAX, &size) < 0 ||
            parse_unsigned_n(field[1], len[1], 0, 0, INT64_MAX, &sec) < 0 ||
            parse_unsigned_n(field[2], len[2], 0, 0, 999999999, &nsec) < 0)
                return -EINVAL;
        *ret = (ViewBase) { .size = size, .mtime_sec = (int64_t) sec, .mtime_nsec = (long) nsec };
        return 0;
}

bool view_base_matches(const ViewBase *b, const struct stat *st) {
        return S_ISREG(st->st_mode) && (uint64_t) st->st_size == b->size && (int64_t) st->st_mtim.tv_sec == b->mtime_sec &&
               st->st_mtim.tv_nsec == b->mtime_nsec;
}

/* ------------------------------------------------------------ the walk */

static bool is_whiteout_at(int dirfd, const char *name) {
        char target[sizeof(VIEW_WHITEOUT_TARGET) + 1];
        ssize_t k = readlinkat(dirfd, name, target, sizeof(target));
        return k == (ssize_t) strlen(VIEW_WHITEOUT_TARGET) && memcmp(target, VIEW_WHITEOUT_TARGET, (size_t) k) == 0;
}

static bool has_at(int dirfd, const char *name) {
        struct stat st;
        return dirfd >= 0 && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0;
}

/* What the view daemon's facts_of() sees of a directory: its host and state sides. */
static ViewFacts facts_at(int hfd, int sfd) {
        ViewFacts f = {};

        f.host_head = has_at(hfd, "HEAD");
        f.holds_head = f.host_head || (has_at(sfd, "HEAD") && !is_whiteout_at(sfd, "HEAD"));
        for (const char *const *p = view_fact_names(); *p && !f.host_control; p++)
                f.host_control = has_at(hfd, *p);
        return f;
}

/* The recorded host version of a state file: 1 and *ret set, 0 when there is none. */
static int base_of(int sfd, const char *name, ViewBase *ret) {
        _cleanup_close_ int fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        char buf[96];
        ssize_t k;

        if (fd < 0)
                return -errno;
        k = fgetxattr(fd, VIEW_BASE_XATTR, buf, sizeof(buf));
        if (k < 0)
                return errno == ENODATA || errno == ENOTSUP ? 0 : -errno;
        return view_base_parse(buf, (size_t) k, ret) < 0 ? 0 : 1;
}

/* Bytes in the regular files of a state directory tree (entries it cannot read count nothing). */
static uint64_t tree_size(int at, unsigned depth) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        uint64_t sum = 0;
        int fd;

        if (depth >= VIEW_CHANGES_MAX_DEPTH)
                return 0;
        fd = openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return 0;
        }
        while ((de = readdir(d))) {
                struct stat st;
                if (dot_or_dot_dot(de->d_name) || fstatat(at, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISREG(st.st_mode))
                        sum += (uint64_t) st.st_size;
                else if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub = openat(at, de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                sum += tree_size(sub, depth + 1);
                }
        }
        return sum;
}

typedef struct Scan {
        const char *root;
        const ViewLists *lists;
        char *const *git_paths;
        ViewChanges *out;
} Scan;

static int add_change(Scan *s, const char *rel, ViewChangeKind kind, bool git, const struct stat *st, uint64_t size,
                      ViewHostState host) {
        ViewChange *n;
        char *p = strdup(rel);

        if (!p)
                return -ENOMEM;
        n = reallocarray(s->out->changes, s->out->n + 1, sizeof(ViewChange));
        if (!n) {
                free(p);
                return -ENOMEM;
        }
        s->out->changes = n;
        n[s->out->n++] = (ViewChange) {
                .path = p,
                .kind = kind,
                .git_control = git,
                .type = st ? st->st_mode & S_IFMT : 0,
                .mode = st ? st->st_mode & 07777 : 0,
                .size = size,
                .host = host,
                .root = s->root,
        };
        return 0;
}

/* Name without a trailing ".lock", as view_name_class() judges it. */
static void lock_base(const char *name, char buf[static NAME_MAX + 1]) {
        size_t n = strlen(name);

        if (n > 5 && n <= NAME_MAX && streq(name + n - 5, ".lock"))
                n -= 5;
        if (n > NAME_MAX)
                n = NAME_MAX;
        memcpy(buf, name, n);
        buf[n] = 0;
}

static int scan_dir(Scan *s, int sfd, int hfd, const ViewDir *d, bool git, const char *rel, unsigned depth);

static int scan_entry(Scan *s, int sfd, int hfd, const ViewDir *d, bool git, const char *name, const char *rel,
                      unsigned depth) {
        struct stat sst, hst;
        bool host, whiteout, child_git = git;
        ViewClass c;
        ViewBase b;
        int r;

        if (fstatat(sfd, name, &sst, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        host = hfd >= 0 && fstatat(hfd, name, &hst, AT_SYMLINK_NOFOLLOW) >= 0;
        whiteout = S_ISLNK(sst.st_mode) && is_whiteout_at(sfd, name);

        if (d->zone == VIEW_ZONE_PROTECTED)
                c = VIEW_PROTECTED;
        else {
                char base[NAME_MAX + 1];
                ViewFacts f = {};
                ViewListed listed;
                bool is_dir;

                /* Only ".git" depends on it, and the daemon takes the host's type. */
                is_dir = streq(name, ".git") && d->zone == VIEW_ZONE_WORK ? host && S_ISDIR(hst.st_mode)
                                                                          : S_ISDIR(sst.st_mode);
                if (view_name_needs_facts(d, name))
                        f = facts_at(hfd, sfd);
                listed = view_listed(s->lists, d, rel, name);
                c = view_name_class(d, &f, name, is_dir, listed);
                /* Integration files (built-in or the profile's) are the developer's
                 * to review; everything else protected is what host git would run
                 * or follow. */
                lock_base(name, base);
                child_git = d->zone != VIEW_ZONE_WORK ||
                            strv_contains((const char *const *) s->git_paths, rel) ||
                            (listed != VIEW_LISTED_PROTECTED && !view_is_integration_name(base));
        }

        if (c != VIEW_PROTECTED) {
                /* Scaffolding: only protected entries below it count. */
                _cleanup_close_ int sub = -EBADF, hsub = -EBADF;
                ViewDir child;

                if (!S_ISDIR(sst.st_mode))
                        return 0;
                child = view_child_dir(d, name, c);
                sub = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return -errno;
                if (host && S_ISDIR(hst.st_mode))
                        hsub = openat(hfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                return scan_dir(s, sub, hsub, &child, false, rel, depth + 1);
        }

        if (d->zone != VIEW_ZONE_PROTECTED && view_is_derived_cache(d, name))
                /* The sandbox git's own caches of its objects: nothing to review or apply. */
                return 0;
        if (whiteout)
                return add_change(s, rel, VIEW_CHANGE_DELETED, child_git, NULL,
                                  host && S_ISREG(hst.st_mode) ? (uint64_t) hst.st_size : 0,
                                  host ? VIEW_HOST_SAME : VIEW_HOST_CHANGED);

        if (S_ISDIR(sst.st_mode)) {
                _cleanup_close_ int sub = -EBADF, hsub = -EBADF;
                ViewDir child;

                if (!host || !S_ISDIR(hst.st_mode)) {
                        sub = openat(sfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                return -errno;
                        return add_change(s, rel, host ? VIEW_CHANGE_CHANGED : VIEW_CHANGE_NEW, child_git, &sst,
                                          tree_size(sub, depth + 1), host ? VIEW_HOST_UNKNOWN : VIEW_HOST_SAME);
                }
                /* The host's directory, merged: its entries are the changes. */
                child = view_child_dir(d, name, VIEW_PROTECTED);
                sub = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        return -errno;
                hsub = openat(hfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                return scan_dir(s, sub, hsub, &child, child_git, rel, depth + 1);
        }

        if (!S_ISREG(sst.st_mode) && !S_ISLNK(sst.st_mode))
                return 0;
        r = S_ISREG(sst.st_mode) ? base_of(sfd, name, &b) : 0;
        if (r < 0)
                return r;
        if (r > 0)
                return add_change(s, rel, VIEW_CHANGE_CHANGED, child_git, &sst, (uint64_t) sst.st_size,
                                  host && view_base_matches(&b, &hst) ? VIEW_HOST_SAME : VIEW_HOST_CHANGED);
        return add_change(s, rel, host ? VIEW_CHANGE_CHANGED : VIEW_CHANGE_NEW, child_git, &sst, (uint64_t) sst.st_size,
                          host ? VIEW_HOST_UNKNOWN : VIEW_HOST_SAME);
}

static int scan_dir(Scan *s, int sfd, int hfd, const ViewDir *d, bool git, const char *rel, unsigned depth) {
        _cleanup_(closedirp) DIR *dir = NULL;
        struct dirent *de;
        int r;

        if (depth >= VIEW_CHANGES_MAX_DEPTH)
                return -ELOOP;
        r = opendir_at(sfd, &dir);
        if (r < 0)
                return r;
        while ((de = readdir(dir))) {
                _cleanup_free_ char *path = NULL;

                if (dot_or_dot_dot(de->d_name) || startswith(de->d_name, VIEW_COPY_UP_PREFIX))
                        continue;
                if (asprintf(&path, "%s%s%s", rel, isempty(rel) ? "" : "/", de->d_name) < 0)
                        return -ENOMEM;
                r = scan_entry(s, sfd, hfd, d, git, de->d_name, path, depth);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int change_cmp(const void *a, const void *b) {
        return strcmp(((const ViewChange *) a)->path, ((const ViewChange *) b)->path);
}

int view_changes_scan(int state_fd, int workspace_fd, const char *root, const ViewLists *lists, char *const *git_paths,
                      ViewChanges *ret, char **ret_error) {
        _cleanup_close_ int sfd = -EBADF, hfd = -EBADF;
        ViewChanges out = {};
        Scan s = { .root = root, .lists = lists, .git_paths = git_paths, .out = &out };
        /* Where the daemon serving this state starts (lazaret-view, --git-dir or not). */
        ViewDir top = root ? VIEW_DIR_GIT_ROOT : VIEW_DIR_TOP;
        int r;

        sfd = openat(state_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0)
                return errorf(ret_error, -errno, "cannot open the view's state directory: %m");
        hfd = openat(workspace_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (hfd < 0)
                return errorf(ret_error, -errno, "cannot open the workspace: %m");
        r = scan_dir(&s, sfd, hfd, &top, false, "", 0);
        if (r < 0) {
                view_changes_done(&out);
                return errorf(ret_error, r, "cannot read the %s's state: %s", root ? "git dir view" : "view",
                              strerror(-r));
        }
        if (out.n > 1)
                qsort(out.changes, out.n, sizeof(ViewChange), change_cmp);
        *ret = out;
        return 0;
}

char *view_change_shown(const ViewChange *c) {
        return c->root ? path_join(c->root, c->path) : strdup(c->path);
}

bool view_change_named(const ViewChange *c, const char *path) {
        size_t n;

        if (c->root || path[0] == '/') {
                /* By host path, below the root: the rest names it as a workspace path would. */
                const char *t = c->root ? startswith(path, c->root) : NULL;

                if (!t || (*t != 0 && *t != '/'))
                        return false;
                while (*t == '/')
                        t++;
                if (*t == 0)
                        return true;
                path = t;
        }
        while (startswith(path, "./"))
                path += 2;
        n = strlen(path);
        while (n > 0 && path[n - 1] == '/')
                n--;
        if (n == 0 || (n == 1 && path[0] == '.'))
                return true;
        return strncmp(c->path, path, n) == 0 && (c->path[n] == 0 || c->path[n] == '/');
}

/* ------------------------------------------------------------ apply and discard */

int view_change_check(const ViewChange *c, bool force, bool git_control, char **ret_error) {
        _cleanup_free_ char *shown = view_change_shown(c);

        if (!shown)
                return -ENOMEM;
        if (c->git_control && !git_control)
                return errorf(ret_error, -EPERM,
                              "%s is git control (a git dir's config, hooks, commondir, gitdir or HEAD, or a "
                              "core.hooksPath): the view keeps exactly these off the host, since host git would run "
                              "what they say; apply it only after reading it, with --git-control", shown);
        if (force)
                return 0;
        if (c->host == VIEW_HOST_CHANGED)
                return errorf(ret_error, -ESTALE,
                              "%s changed on the host since the sandbox copied it; compare with --diff, then apply "
                              "with --force or discard", shown);
        if (c->host == VIEW_HOST_UNKNOWN)
                return errorf(ret_error, -ESTALE,
                              "%s replaces a host entry without a record of which version it replaced; compare with "
                              "--diff, then apply with --force or discard", shown);
        return 0;
}

/* The directory part of rel ("" at the top) and its last component. */
static int split_rel(const char *rel, char **ret_dir, const char **ret_name) {
        const char *slash = strrchr(rel, '/');

        *ret_dir = slash ? strndup(rel, (size_t) (slash - rel)) : strdup("");
        if (!*ret_dir)
                return -ENOMEM;
        *ret_name = slash ? slash + 1 : rel;
        return 0;
}

/* Left out when a state directory is applied: copy-up temporaries and whiteouts. (Nothing
 * applied may let other users write: copy_tree_at() keeps st_mode & 0755, issue 15.) */
static bool apply_skips(int dirfd, const char *name) {
        return startswith(name, VIEW_COPY_UP_PREFIX) || is_whiteout_at(dirfd, name);
}

/* What the host's entry is now, judged as view_changes_scan() judged it. */
static ViewHostState host_now(const ViewChange *c, int sfd, const char *name, int hfd) {
        struct stat hst;
        bool host = fstatat(hfd, name, &hst, AT_SYMLINK_NOFOLLOW) >= 0;
        ViewBase b;

        switch (c->kind) {
        case VIEW_CHANGE_DELETED:
                return host ? VIEW_HOST_SAME : VIEW_HOST_CHANGED;
        case VIEW_CHANGE_NEW:
                return host ? VIEW_HOST_CHANGED : VIEW_HOST_SAME;
        case VIEW_CHANGE_CHANGED:
                if (c->type == S_IFREG && base_of(sfd, name, &b) > 0)
                        return host && view_base_matches(&b, &hst) ? VIEW_HOST_SAME : VIEW_HOST_CHANGED;
                return host ? VIEW_HOST_UNKNOWN : VIEW_HOST_CHANGED;
        default:
                return VIEW_HOST_CHANGED;
        }
}

int view_change_apply(int state_fd, int workspace_fd, const ViewChange *c, bool force, char **ret_error) {
        _cleanup_close_ int sfd = -EBADF, hfd = -EBADF;
        _cleanup_free_ char *dir = NULL;
        _cleanup_free_ char *shown = view_change_shown(c);
        ViewChange now = *c;
        const char *name;
        char tmp[64];
        int r;

        if (!shown)
                return -ENOMEM;
        r = split_rel(c->path, &dir, &name);
        if (r < 0)
                return r;
        sfd = openat_beneath(state_fd, dir, O_RDONLY | O_DIRECTORY, 0, false);
        if (sfd < 0)
                return errorf(ret_error, sfd, "%s: cannot open its state directory: %s", shown, strerror(-sfd));
        hfd = openat_beneath(workspace_fd, dir, O_RDONLY | O_DIRECTORY, 0, false);
        if (hfd < 0)
                return errorf(ret_error, hfd, "%s: cannot open the host directory %s beneath the workspace "
                              "(gone, or not a plain directory): %s", shown, isempty(dir) ? "." : dir, strerror(-hfd));

        /* Judged again, by fd, right before anything is written. */
        now.host = host_now(c, sfd, name, hfd);
        r = view_change_check(&now, force, true, ret_error);
        if (r < 0)
                return r;

        if (c->kind == VIEW_CHANGE_DELETED) {
                r = rm_rf_at(hfd, name);
                if (r < 0)
                        return errorf(ret_error, r, "%s: cannot remove the host's entry: %s", shown, strerror(-r));
        } else {
                static unsigned counter = 0;

                snprintf(tmp, sizeof(tmp), VIEW_APPLY_PREFIX "%d.%u", (int) getpid(), counter++);
                r = copy_tree_at(sfd, name, hfd, tmp, VIEW_CHANGES_MAX_DEPTH, COPY_TREE_SYNC, apply_skips);
                if (r < 0) {
                        (void) rm_rf_at(hfd, tmp);
                        return errorf(ret_error, r, "%s: cannot write it on the host: %s", shown, strerror(-r));
                }
                if (c->type == S_IFDIR && force)
                        /* Forced over a host file: the directory takes its place. */
                        (void) unlinkat(hfd, name, 0);
                if (renameat2(hfd, tmp, hfd, name, c->type == S_IFDIR ? RENAME_NOREPLACE : 0) < 0) {
                        r = -errno;
                        (void) rm_rf_at(hfd, tmp);
                        return errorf(ret_error, r, "%s: cannot put it in place on the host: %s", shown, strerror(-r));
                }
        }
        (void) fsync(hfd);

        r = rm_rf_at(sfd, name);
        if (r < 0)
                return errorf(ret_error, r, "%s: applied, but cannot remove it from the view's state: %s", shown,
                              strerror(-r));
        return 0;
}

int view_change_discard(int state_fd, const ViewChange *c, char **ret_error) {
        _cleanup_close_ int sfd = -EBADF;
        _cleanup_free_ char *dir = NULL, *shown = view_change_shown(c);
        const char *name;
        int r;

        if (!shown)
                return -ENOMEM;
        r = split_rel(c->path, &dir, &name);
        if (r < 0)
                return r;
        sfd = openat_beneath(state_fd, dir, O_RDONLY | O_DIRECTORY, 0, false);
        if (sfd < 0)
                return errorf(ret_error, sfd, "%s: cannot open its state directory: %s", shown, strerror(-sfd));
        r = rm_rf_at(sfd, name);
        if (r < 0)
                return errorf(ret_error, r, "%s: cannot remove it from the view's state: %s", shown, strerror(-r));
        return 0;
}

const char *view_change_kind_to_string(ViewChangeKind k) {
        static const char *const table[_VIEW_CHANGE_KIND_MAX] = {
                [VIEW_CHANGE_NEW] = "new",
                [VIEW_CHANGE_CHANGED] = "changed",
                [VIEW_CHANGE_DELETED] = "deleted",
        };
        return k >= 0 && k < _VIEW_CHANGE_KIND_MAX ? table[k] : NULL;
}

const char *view_change_label(const ViewChange *c) {
        return c->git_control ? "git-control" : view_change_kind_to_string(c->kind);
}

const char *view_host_state_to_string(ViewHostState s) {
        static const char *const table[_VIEW_HOST_STATE_MAX] = {
                [VIEW_HOST_SAME] = "unchanged",
                [VIEW_HOST_CHANGED] = "changed",
                [VIEW_HOST_UNKNOWN] = "unknown",
        };
        return s >= 0 && s < _VIEW_HOST_STATE_MAX ? table[s] : NULL;
}
