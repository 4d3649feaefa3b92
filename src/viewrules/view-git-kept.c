/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"
#include "view-git-kept.h"
#include "view-policy.h"

/* ------------------------------------------------------------ operations under way inside */

typedef enum GitOp {
        GIT_OP_NONE,
        GIT_OP_REBASE,
        GIT_OP_AM,
        GIT_OP_CHERRY_PICK,
        GIT_OP_REVERT,
} GitOp;

/* An entry of type (S_IFDIR, S_IFREG) at name in dfd: a whiteout (a symbolic link) or anything else is none. */
static bool has_type(int dfd, const char *name, mode_t type) {
        struct stat st;
        return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && (st.st_mode & S_IFMT) == type;
}

/* A multi-commit pick or revert keeps no pseudo-ref while it runs; its todo list says which. */
static GitOp sequencer_op(int dfd) {
        _cleanup_close_ int sfd = -EBADF, fd = -EBADF;
        char head[7] = {};

        sfd = openat(dfd, "sequencer", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0)
                return GIT_OP_CHERRY_PICK;
        fd = openat(sfd, "todo", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 || read(fd, head, sizeof(head) - 1) < 6)
                return GIT_OP_CHERRY_PICK;
        return strncmp(head, "revert", 6) == 0 ? GIT_OP_REVERT : GIT_OP_CHERRY_PICK;
}

/* What git itself would say is under way in the git dir dfd (wt-status.c, builtin/am.c, sequencer.c). */
static GitOp op_of(int dfd) {
        if (has_type(dfd, "rebase-merge", S_IFDIR))
                return GIT_OP_REBASE;
        if (has_type(dfd, "rebase-apply", S_IFDIR)) {
                _cleanup_close_ int afd = openat(dfd, "rebase-apply", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                /* git am marks its own use of the directory; a rebase --apply does not. */
                return afd >= 0 && has_type(afd, "applying", S_IFREG) ? GIT_OP_AM : GIT_OP_REBASE;
        }
        if (has_type(dfd, "REVERT_HEAD", S_IFREG))
                return GIT_OP_REVERT;
        if (has_type(dfd, "CHERRY_PICK_HEAD", S_IFREG))
                return GIT_OP_CHERRY_PICK;
        if (has_type(dfd, "sequencer", S_IFDIR))
                return sequencer_op(dfd);
        return GIT_OP_NONE;
}

static int add_op_line(char ***lines, GitOp op, const char *root, const char *rel) {
        static const char *const verb[] = {
                [GIT_OP_REBASE] = "rebase",
                [GIT_OP_AM] = "am",
                [GIT_OP_CHERRY_PICK] = "cherry-pick",
                [GIT_OP_REVERT] = "revert",
        };
        _cleanup_free_ char *where = NULL;

        if (root)
                where = isempty(rel) ? strdup(root) : path_join(root, rel);
        else
                where = strdup(rel);
        if (!where)
                return -ENOMEM;
        /* The workspace's own repository is the one meant when none is named. */
        if (!root && streq(rel, ".git"))
                return strv_extendf(lines, "%s in progress inside: finish or abort it inside (git %s --continue / --abort)",
                                    verb[op], verb[op]);
        return strv_extendf(lines, "%s in progress inside, in %s: finish or abort it inside (git %s --continue / --abort)",
                            verb[op], where, verb[op]);
}

static int ops_walk(int dfd, const char *root, const char *rel, unsigned depth, unsigned *budget, char ***lines) {
        _cleanup_(closedirp) DIR *dir = NULL;
        struct dirent *de;
        GitOp op;
        int r;

        op = op_of(dfd);
        if (op != GIT_OP_NONE) {
                r = add_op_line(lines, op, root, rel);
                if (r < 0)
                        return r;
        }
        if (depth >= VIEW_KEPT_DEPTH_MAX)
                return 0;
        r = opendir_at(dfd, &dir);
        if (r < 0)
                return r;
        while ((de = readdir(dir))) {
                _cleanup_close_ int sub = -EBADF;
                _cleanup_free_ char *path = NULL;

                if (dot_or_dot_dot(de->d_name) || view_is_kept_name(de->d_name))
                        continue;
                if (*budget == 0)
                        return 0;
                (*budget)--;
                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                sub = openat(dirfd(dir), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        continue;       /* not a directory (DT_UNKNOWN), or gone */
                path = isempty(rel) ? strdup(de->d_name) : path_join(rel, de->d_name);
                if (!path)
                        return -ENOMEM;
                r = ops_walk(sub, root, path, depth + 1, budget, lines);
                if (r < 0)
                        return r;
        }
        return 0;
}

int view_git_ops_scan(int state_fd, const char *root, char ***ret_lines) {
        _cleanup_strv_free_ char **lines = NULL;
        unsigned budget = VIEW_KEPT_SCAN_MAX;
        int r;

        r = ops_walk(state_fd, root, "", 0, &budget, &lines);
        if (r < 0)
                return r;
        strv_sort(lines);
        *ret_lines = TAKE_PTR(lines);
        return 0;
}

/* ------------------------------------------------------------ what the host holds */

/* Whether the directory name in dfd has an entry: git's templates make an empty branches/. */
static bool dir_has_entries(int dfd, const char *name) {
        _cleanup_close_ int fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_(closedirp) DIR *dir = NULL;
        struct dirent *de;

        if (fd < 0 || opendir_at(fd, &dir) < 0)
                return true;    /* unreadable: said, rather than passed over */
        while ((de = readdir(dir)))
                if (!dot_or_dot_dot(de->d_name))
                        return true;
        return false;
}

/* prefix/rel/name, with a "/" after a directory, when dfd holds name (a directory: with something in it). */
static int note(int dfd, const char *prefix, const char *rel, const char *name, char ***paths) {
        struct stat st;

        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        if (S_ISDIR(st.st_mode) && !dir_has_entries(dfd, name))
                return 0;
        return strv_extendf(paths, "%s%s%s%s%s%s", prefix, isempty(prefix) ? "" : "/", rel, isempty(rel) ? "" : "/",
                            name, S_ISDIR(st.st_mode) ? "/" : "");
}

/* The directory a/b below dfd, never through a symbolic link: -errno when it is not there. */
static int open_dir2(int dfd, const char *a, const char *b) {
        _cleanup_close_ int fd = openat(dfd, a, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r;

        if (fd < 0)
                return -errno;
        if (!b)
                return TAKE_FD(fd);
        r = openat(fd, b, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return r < 0 ? -errno : r;
}

static int host_git_dir(int gfd, const char *prefix, const char *rel, unsigned depth, unsigned *budget, char ***paths);

/* The names below a modules/ directory: git dirs (with HEAD) or one more component of a submodule's name. */
static int host_modules(int mfd, const char *prefix, const char *rel, unsigned depth, unsigned *budget, char ***paths) {
        _cleanup_(closedirp) DIR *dir = NULL;
        struct dirent *de;
        int r;

        if (depth >= VIEW_KEPT_DEPTH_MAX)
                return 0;
        r = opendir_at(mfd, &dir);
        if (r < 0)
                return r;
        while ((de = readdir(dir))) {
                _cleanup_close_ int sub = -EBADF;
                _cleanup_free_ char *path = NULL;

                if (dot_or_dot_dot(de->d_name))
                        continue;
                if (*budget == 0)
                        return 0;
                (*budget)--;
                sub = openat(dirfd(dir), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        continue;
                path = path_join(rel, de->d_name);
                if (!path)
                        return -ENOMEM;
                if (has_type(sub, "HEAD", S_IFREG))
                        r = host_git_dir(sub, prefix, path, depth + 1, budget, paths);
                else
                        r = host_modules(sub, prefix, path, depth + 1, budget, paths);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int host_git_dir(int gfd, const char *prefix, const char *rel, unsigned depth, unsigned *budget, char ***paths) {
        static const char *const places[][3] = {
                { "objects", "info", "alternates" },
                { "objects", "info", "http-alternates" },
                { "info", NULL, "grafts" },
        };
        _cleanup_(closedirp) DIR *wt = NULL;
        _cleanup_close_ int mfd = -EBADF, wfd = -EBADF;
        struct dirent *de;
        int r;

        for (const char *const *p = view_kept_names(); *p; p++) {
                r = note(gfd, prefix, rel, *p, paths);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(places); i++) {
                _cleanup_close_ int fd = open_dir2(gfd, places[i][0], places[i][1]);
                _cleanup_free_ char *where = NULL;

                if (fd < 0)
                        continue;
                if (asprintf(&where, "%s%s%s%s%s", rel, isempty(rel) ? "" : "/", places[i][0],
                             places[i][1] ? "/" : "", places[i][1] ?: "") < 0)
                        return -ENOMEM;
                r = note(fd, prefix, where, places[i][2], paths);
                if (r < 0)
                        return r;
        }

        /* A linked worktree's git dir: its own sequencer state (the rest is the common dir's). */
        wfd = open_dir2(gfd, "worktrees", NULL);
        if (wfd >= 0 && opendir_at(wfd, &wt) >= 0)
                while ((de = readdir(wt))) {
                        _cleanup_close_ int sub = -EBADF;
                        _cleanup_free_ char *where = NULL;

                        if (dot_or_dot_dot(de->d_name) || *budget == 0)
                                continue;
                        (*budget)--;
                        sub = openat(dirfd(wt), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                continue;
                        if (asprintf(&where, "%s%sworktrees/%s", rel, isempty(rel) ? "" : "/", de->d_name) < 0)
                                return -ENOMEM;
                        for (const char *const *p = view_kept_names(); *p; p++) {
                                r = note(sub, prefix, where, *p, paths);
                                if (r < 0)
                                        return r;
                        }
                }

        mfd = open_dir2(gfd, "modules", NULL);
        if (mfd < 0)
                return 0;
        {
                _cleanup_free_ char *where = isempty(rel) ? strdup("modules") : path_join(rel, "modules");
                if (!where)
                        return -ENOMEM;
                return host_modules(mfd, prefix, where, depth + 1, budget, paths);
        }
}

int view_git_kept_on_host(int git_dir_fd, const char *prefix, char ***ret_paths) {
        _cleanup_strv_free_ char **paths = NULL;
        unsigned budget = VIEW_KEPT_SCAN_MAX;
        int r;

        r = host_git_dir(git_dir_fd, prefix ?: "", "", 0, &budget, &paths);
        if (r < 0)
                return r;
        strv_sort(paths);
        *ret_paths = TAKE_PTR(paths);
        return 0;
}

int view_git_kept_notice(char *const *paths, char **ret) {
        _cleanup_free_ char *shown = NULL, *more = NULL, *line = NULL;
        size_t n = strv_length(paths), k = n < 4 ? n : 4;
        _cleanup_strv_free_ char **first = NULL;
        int r;

        for (size_t i = 0; i < k; i++) {
                r = strv_extend(&first, paths[i]);
                if (r < 0)
                        return r;
        }
        shown = strv_join(first, ", ");
        if (!shown)
                return -ENOMEM;
        if (n > k && asprintf(&more, " and %zu more", n - k) < 0)
                return -ENOMEM;
        if (asprintf(&line,
                     "the host's git dirs hold %s that the host's git follows or runs and that the sandbox no longer "
                     "shares (an older Lazaret, or anything else, may have written them): %s%s; read them before "
                     "running git on the host",
                     n == 1 ? "a file" : "files", shown, more ?: "") < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(line);
        return 0;
}

/*
 * A line or path with bytes that are not UTF-8 (a name the sandbox chose)
 * with those bytes as \xNN: the lines travel as JSON strings, where one
 * such byte would fail the whole answer to a launch or a status.
 */
static int make_utf8(char **l) {
        STRV_FOREACH(p, l) {
                char *e, *o;

                if (utf8_is_valid(*p))
                        continue;
                e = o = malloc(strlen(*p) * 4 + 1);
                if (!e)
                        return -ENOMEM;
                for (const unsigned char *c = (const unsigned char *) *p; *c; c++)
                        if (*c >= 0x80)
                                o += sprintf(o, "\\x%02x", *c);
                        else
                                *o++ = (char) *c;
                *o = 0;
                free(*p);
                *p = e;
        }
        return 0;
}

int view_git_kept_scan(int workspace_fd, int state_fd, int git_root_fd, const char *git_root, int git_state_fd,
                       char ***ret_ops, char ***ret_host) {
        _cleanup_strv_free_ char **ops = NULL, **git_ops = NULL, **host = NULL, **git_host = NULL;
        int r;

        if (state_fd >= 0) {
                r = view_git_ops_scan(state_fd, NULL, &ops);
                if (r < 0)
                        return r;
        }
        if (git_state_fd >= 0 && git_root) {
                r = view_git_ops_scan(git_state_fd, git_root, &git_ops);
                if (r >= 0)
                        r = strv_extend_strv(&ops, git_ops);
                if (r < 0)
                        return r;
        }
        if (workspace_fd >= 0) {
                /* A .git file (a linked workspace) is the git dir view's: judged below through its root. */
                _cleanup_close_ int gfd = openat(workspace_fd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (gfd >= 0) {
                        r = view_git_kept_on_host(gfd, ".git", &host);
                        if (r < 0)
                                return r;
                }
        }
        if (git_root_fd >= 0 && git_root) {
                r = view_git_kept_on_host(git_root_fd, git_root, &git_host);
                if (r >= 0)
                        r = strv_extend_strv(&host, git_host);
                if (r < 0)
                        return r;
        }
        r = make_utf8(ops);
        if (r >= 0)
                r = make_utf8(host);
        if (r < 0)
                return r;
        *ret_ops = TAKE_PTR(ops);
        *ret_host = TAKE_PTR(host);
        return 0;
}
