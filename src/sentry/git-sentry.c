/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-sentry.h"
#include "hash.h"
#include "host-hooks.h"
#include "mountinfo.h"
#include "path-util.h"
#include "strv.h"
#include "util.h"

static char *join3(const char *a, const char *b, const char *c) {
        char *p;
        return asprintf(&p, "%s%s%s", a, b, c) < 0 ? NULL : p;
}

/* ------------------------------------------------------------ the parser */

typedef struct Cursor {
        const char *p;
        unsigned line;
} Cursor;

static bool is_key_char(char c) {
        return isalnum((unsigned char) c) || c == '-';
}

static void skip_blanks(Cursor *c) {
        while (*c->p == ' ' || *c->p == '\t' || *c->p == '\r')
                c->p++;
}

static void skip_to_eol(Cursor *c) {
        while (*c->p && *c->p != '\n')
                c->p++;
}

/* "[name]", "[name \"sub\"]" or the old "[name.sub]". */
static int parse_section(Cursor *c, char **ret_name, char **ret_sub, char **ret_error) {
        _cleanup_free_ char *name = NULL, *sub = NULL;
        const char *s;
        size_t n = 0;

        c->p++; /* '[' */
        s = c->p;
        while (is_key_char(*c->p) || *c->p == '.')
                c->p++;
        if (c->p == s)
                return errorf(ret_error, -EBADMSG, "line %u: a section name is missing", c->line);
        name = strndup(s, c->p - s);
        if (!name)
                return -ENOMEM;
        if (*c->p == ' ' || *c->p == '\t') {
                skip_blanks(c);
                if (*c->p != '"')
                        return errorf(ret_error, -EBADMSG, "line %u: bad section header", c->line);
                c->p++;
                sub = malloc(strcspn(c->p, "\n") + 1);  /* no continuation in a header */
                if (!sub)
                        return -ENOMEM;
                for (;;) {
                        char ch = *c->p;
                        if (ch == 0 || ch == '\n')
                                return errorf(ret_error, -EBADMSG, "line %u: unterminated subsection", c->line);
                        c->p++;
                        if (ch == '"')
                                break;
                        if (ch == '\\') {
                                ch = *c->p;
                                if (ch == 0 || ch == '\n')
                                        return errorf(ret_error, -EBADMSG, "line %u: unterminated subsection",
                                                      c->line);
                                c->p++;
                        }
                        sub[n++] = ch;
                }
                sub[n] = 0;
        } else if (strchr(name, '.')) {
                char *dot = strchr(name, '.');
                sub = strdup(dot + 1);
                if (!sub)
                        return -ENOMEM;
                *dot = 0;
        }
        if (*c->p != ']')
                return errorf(ret_error, -EBADMSG, "line %u: bad section header", c->line);
        c->p++;
        *ret_name = TAKE_PTR(name);
        *ret_sub = TAKE_PTR(sub);
        return 0;
}

/* After "key": "= value", or nothing (a boolean true). Ends at the end of the line. */
static int parse_value(Cursor *c, char **ret, char **ret_error) {
        _cleanup_free_ char *v = NULL;
        size_t n = 0, keep = 0, cap;
        bool quoted = false;

        skip_blanks(c);
        if (*c->p == 0 || *c->p == '\n' || *c->p == '#' || *c->p == ';') {
                skip_to_eol(c);
                *ret = NULL;
                return 0;
        }
        if (*c->p != '=')
                return errorf(ret_error, -EBADMSG, "line %u: '=' expected after the key", c->line);
        c->p++;
        skip_blanks(c);
        /* Sized by the physical line (not the rest of the file, which would
         * make a file of many short lines quadratic); grown on continuations. */
        cap = strcspn(c->p, "\n") + 1;
        v = malloc(cap);
        if (!v)
                return -ENOMEM;
        for (;;) {
                char ch = *c->p;

                if (n + 1 >= cap) {
                        char *w = realloc(v, cap * 2);
                        if (!w)
                                return -ENOMEM;
                        v = w;
                        cap *= 2;
                }

                if (ch == 0 || ch == '\n') {
                        if (quoted)
                                return errorf(ret_error, -EBADMSG, "line %u: unterminated quote", c->line);
                        break;
                }
                c->p++;
                if (!quoted && (ch == '#' || ch == ';')) {
                        skip_to_eol(c);
                        break;
                }
                if (ch == '"') {
                        quoted = !quoted;
                        continue;
                }
                if (ch == '\\') {
                        ch = *c->p;
                        if (ch == '\n') {       /* continuation */
                                c->p++;
                                c->line++;
                                continue;
                        }
                        if (ch == '\r' && c->p[1] == '\n') {
                                c->p += 2;
                                c->line++;
                                continue;
                        }
                        c->p++;
                        switch (ch) {
                        case 'n': ch = '\n'; break;
                        case 't': ch = '\t'; break;
                        case 'b': ch = '\b'; break;
                        case '\\':
                        case '"': break;
                        default:
                                return errorf(ret_error, -EBADMSG, "line %u: bad escape in a value", c->line);
                        }
                        v[n++] = ch;
                        keep = n;
                        continue;
                }
                v[n++] = ch;
                if (quoted || (ch != ' ' && ch != '\t' && ch != '\r'))
                        keep = n;
        }
        v[keep] = 0;    /* trailing blanks outside quotes go */
        *ret = TAKE_PTR(v);
        return 0;
}

int git_config_parse_paths(const char *text, GitConfigPaths *ret, char **ret_error) {
        _cleanup_strv_free_ char **hooks = NULL, **includes = NULL;
        _cleanup_free_ char *section = NULL, *sub = NULL;
        Cursor c = { .p = text, .line = 1 };
        int r;

        for (;;) {
                skip_blanks(&c);
                if (*c.p == 0)
                        break;
                if (*c.p == '\n') {
                        c.p++;
                        c.line++;
                        continue;
                }
                if (*c.p == '#' || *c.p == ';') {
                        skip_to_eol(&c);
                        continue;
                }
                if (*c.p == '[') {
                        section = mfree(section);
                        sub = mfree(sub);
                        r = parse_section(&c, &section, &sub, ret_error);
                        if (r < 0)
                                return r;
                        continue;       /* a key may follow on the same line */
                }
                if (!isalpha((unsigned char) *c.p))
                        return errorf(ret_error, -EBADMSG, "line %u: a key or section expected", c.line);
                if (!section)
                        return errorf(ret_error, -EBADMSG, "line %u: a key outside any section", c.line);

                const char *k = c.p;
                _cleanup_free_ char *value = NULL;
                size_t klen;

                while (is_key_char(*c.p))
                        c.p++;
                klen = c.p - k;
                r = parse_value(&c, &value, ret_error);
                if (r < 0)
                        return r;

                bool is_hooks = strcasecmp(section, "core") == 0 && !sub && klen == 9 && strncasecmp(k, "hookspath", 9) == 0;
                bool is_include = (strcasecmp(section, "include") == 0 && !sub) || (strcasecmp(section, "includeif") == 0 && sub);
                is_include = is_include && klen == 4 && strncasecmp(k, "path", 4) == 0;
                if (is_hooks || is_include) {
                        if (!value)
                                return errorf(ret_error, -EBADMSG, "line %u: %s needs a value", c.line,
                                              is_hooks ? "core.hooksPath" : "an include path");
                        r = strv_push(is_hooks ? &hooks : &includes, TAKE_PTR(value));
                        if (r < 0)
                                return r;
                }
        }
        *ret = (GitConfigPaths) { .hooks_paths = TAKE_PTR(hooks), .include_paths = TAKE_PTR(includes) };
        return 0;
}

void git_config_paths_done(GitConfigPaths *p) {
        p->hooks_paths = strv_free(p->hooks_paths);
        p->include_paths = strv_free(p->include_paths);
}

int git_link_file_parse(const char *text, size_t len, const char *prefix, char **ret_path) {
        size_t k = strlen(prefix), end;
        char *path;

        if (len > GIT_LINK_FILE_MAX || len < k || memcmp(text, prefix, k) != 0)
                return -EBADMSG;
        end = len;
        if (end > k && text[end - 1] == '\n')
                end--;
        if (end > k && text[end - 1] == '\r')
                end--;
        if (end == k)
                return -EBADMSG;
        for (size_t i = k; i < end; i++)
                if ((unsigned char) text[i] < 0x20 || text[i] == 0x7f)
                        return -EBADMSG;        /* NUL, a second line, any control byte */
        path = strndup(text + k, end - k);
        if (!path)
                return -ENOMEM;
        *ret_path = path;
        return 0;
}

void git_linked_done(GitLinked *l) {
        free(l->git_dir);
        free(l->root);
        free(l->worktree);
        strv_free(l->protect);
        if (l->root && l->root_fd >= 0)         /* the fd is set only with root */
                close(l->root_fd);
        *l = (GitLinked) { .root_fd = -EBADF };
}

/* ------------------------------------------------------------ paths */

int git_path_in_workspace(const char *value, const char *base, const char *home, const char *workspace,
                          char **ret_abs, char **ret_rel) {
        _cleanup_free_ char *full = NULL, *out = NULL, *rel = NULL;
        size_t wlen = strlen(workspace);
        int r;

        if (isempty(value))
                return -EINVAL;
        if (value[0] == '~') {
                if (value[1] != 0 && value[1] != '/')
                        return -EINVAL;         /* ~user: not ours to guess */
                if (!home)
                        return -EINVAL;
                full = join3(home, "/", value + 1);
        } else if (value[0] == '/')
                full = strdup(value);
        else
                full = join3(base, "/", value);
        if (!full)
                return -ENOMEM;
        r = path_simplify(full, workspace, &out);
        if (r < 0)
                return r;

        r = path_is_at_or_below(out, workspace);
        if (r && ret_rel) {
                rel = strdup(out[wlen] == '/' ? out + wlen + 1 : out + wlen);
                if (!rel)
                        return -ENOMEM;
        }
        if (ret_abs)
                *ret_abs = TAKE_PTR(out);
        if (ret_rel && r)
                *ret_rel = TAKE_PTR(rel);
        return r;
}

#define GIT_SYMLINKS_MAX 40

/* Where a path that host git reads leads: host_place(). */
typedef enum GitPlace {
        GIT_PLACE_OUTSIDE,              /* the host's own: neither of the two below */
        GIT_PLACE_WORKSPACE,            /* the workspace, which the sandbox writes */
        GIT_PLACE_GIT_DIR,              /* the dir the git dir view serves (a linked workspace's) */
} GitPlace;

static bool same_inode(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/*
 * The host's mounts, for host_place(): the same directory can be reached
 * through another mount of its file system (a bind of a part of the
 * workspace elsewhere on the host), where its device and inode are those of
 * the bind's root, not of the workspace. So a directory reached on the way is
 * also judged by where it lies in its file system: below the workspace's
 * place in the same file system is inside, whatever mount led there.
 */
typedef struct GitHostMounts {
        HostMounts all;
        const HostMount *ws, *gd;       /* the mounts holding the workspace and the git dir view's root */
        char *ws_fs, *gd_fs;            /* their places in their file systems */
} GitHostMounts;

static void git_host_mounts_done(GitHostMounts *h) {
        host_mounts_done(&h->all);
        h->ws_fs = mfree(h->ws_fs);
        h->gd_fs = mfree(h->gd_fs);
        h->ws = h->gd = NULL;
}

/*
 * What is mounted where the sandbox would see it, judged once per launch:
 * the workspace's (or the served git dir's) own mount found, and any other
 * mount at or below it refused, since the view would show it and the same
 * files could then be reached inside by two paths, or by one that the
 * host's paths do not lead to.
 */
static int host_mounts_judge(GitHostMounts *h, const char *what, const char *path, int fd, bool git_dir,
                             char **ret_error) {
        const HostMount *m;
        char **fs = git_dir ? &h->gd_fs : &h->ws_fs;
        int id, r;

        if (h->all.n == 0) {
                r = mountinfo_read(&h->all);
                if (r < 0)
                        return errorf(ret_error, -EPERM, "cannot read /proc/self/mountinfo (%s); the Git Sentry "
                                      "needs it to judge where host git's files lie", strerror(-r));
        }
        id = fd_mount_id(fd);
        m = id >= 0 ? host_mounts_find(&h->all, id) : NULL;
        if (!m || host_mount_fs_path(m, path, fs) < 0)
                return errorf(ret_error, -EPERM, "cannot find the mount that holds %s %s in /proc/self/mountinfo",
                              what, path);
        *(git_dir ? &h->gd : &h->ws) = m;
        for (size_t i = 0; i < h->all.n; i++) {
                const char *below = path_below(h->all.m[i].point, path);
                if (below && !isempty(below))
                        return errorf(ret_error, -EPERM, "%s %s has another file system mounted at %s; the sandbox "
                                      "would reach it through the workspace view, where Lazaret cannot tell which "
                                      "of its files host git reads; unmount it, or launch from a checkout without "
                                      "mounts inside", what, path, h->all.m[i].point);
        }
        return 0;
}

/*
 * Whether the directory fd, reached at the symlink-free host path abs,
 * lies in the workspace or the served git dir by its place in its file
 * system (GitHostMounts): the place (GIT_PLACE_OUTSIDE if neither) and, in
 * *ret_below, its path below the dir it lies in. -EXDEV when its mount
 * cannot be told (a mount made since the launch read the mounts).
 */
static int alias_place(const GitHostMounts *h, int fd, const char *abs, char **ret_below) {
        _cleanup_free_ char *fs = NULL;
        const HostMount *m;
        const char *below;
        int id = fd_mount_id(fd), r;

        if (!h || !h->ws)
                return GIT_PLACE_OUTSIDE;
        m = id >= 0 ? host_mounts_find(&h->all, id) : NULL;
        if (!m)
                return -EXDEV;
        r = host_mount_fs_path(m, abs, &fs);
        if (r < 0)
                return r;
        for (int k = 0; k < 2; k++) {
                const HostMount *own = k == 0 ? h->ws : h->gd;
                if (!own || own->major != m->major || own->minor != m->minor)
                        continue;
                below = path_below(fs, k == 0 ? h->ws_fs : h->gd_fs);
                if (!below)
                        continue;
                *ret_below = strdup(below);
                if (!*ret_below)
                        return -ENOMEM;
                return k == 0 ? GIT_PLACE_WORKSPACE : GIT_PLACE_GIT_DIR;
        }
        return GIT_PLACE_OUTSIDE;
}

/* host_place()'s walk: the directory reached so far, by fd and by its path, and what is left to resolve. */
typedef struct HostWalk {
        int rootfd;                     /* "/" */
        int cur;                        /* the directory reached so far */
        char *resolved;                 /* its absolute path, which holds no symlink */
        char *todo;                     /* the path being resolved; the walk's position points into it */
        unsigned links;                 /* host symlinks followed so far */
} HostWalk;

static void host_walk_done(HostWalk *w) {
        w->rootfd = safe_close(w->rootfd);
        w->cur = safe_close(w->cur);
        w->resolved = mfree(w->resolved);
        w->todo = mfree(w->todo);
}

/* "..": resolved holds no symlink, so going up is lexical, then opened again without following any. */
static int walk_up(HostWalk *w) {
        char *slash = strrchr(w->resolved, '/');

        *(slash == w->resolved ? slash + 1 : slash) = 0;
        safe_close(w->cur);
        w->cur = openat_beneath(w->rootfd, w->resolved[1] ? w->resolved + 1 : NULL, O_PATH | O_DIRECTORY, 0, false);
        return w->cur < 0 ? w->cur : 0;
}

/* Down into the directory name, opened as dirfd. */
static int walk_into(HostWalk *w, const char *name, int dirfd) {
        _cleanup_close_ int fd = dirfd;
        char *next = path_join(w->resolved, name);

        if (!next)
                return -ENOMEM;
        free(w->resolved);
        w->resolved = next;
        safe_close(w->cur);
        w->cur = TAKE_FD(fd);
        return 0;
}

/*
 * The symlink fd, met with rest left to resolve after it: its target read,
 * the walk back at "/" for an absolute one, and target/rest the path left.
 */
static int follow_link(HostWalk *w, int fd, const char *rest) {
        _cleanup_free_ char *target = calloc(LAZARET_PATH_MAX + 1, 1), *todo = NULL;
        ssize_t k;

        if (!target)
                return -ENOMEM;
        k = readlinkat(fd, "", target, LAZARET_PATH_MAX + 1);
        if (k < 0)
                return -errno;
        if (k == 0 || k > LAZARET_PATH_MAX)
                return -EINVAL;
        if (target[0] == '/') {
                strcpy(w->resolved, "/");
                safe_close(w->cur);
                w->cur = fcntl(w->rootfd, F_DUPFD_CLOEXEC, 3);
                if (w->cur < 0)
                        return -errno;
        }
        todo = join3(target, "/", rest);
        if (!todo)
                return -ENOMEM;
        if (strlen(todo) > (size_t) LAZARET_PATH_MAX * GIT_SYMLINKS_MAX)
                return -ENAMETOOLONG;
        free(w->todo);
        w->todo = TAKE_PTR(todo);
        return 0;
}

/*
 * The GitPlace of the directory reached: the workspace (ws) or the served
 * dir (gd, or NULL) by device and inode, else by its place in its file
 * system (alias_place(), which puts its path below that dir in *ret_below).
 */
static int place_reached(const HostWalk *w, const struct stat *ws, const struct stat *gd, const GitHostMounts *hm,
                         char **ret_below) {
        struct stat st;

        if (fstat(w->cur, &st) < 0)
                return -errno;
        if (same_inode(&st, ws))
                return GIT_PLACE_WORKSPACE;
        if (gd && same_inode(&st, gd))
                return GIT_PLACE_GIT_DIR;
        /* Another mount of the same files, a bind of a part of them elsewhere. */
        return alias_place(hm, w->cur, w->resolved, ret_below);
}

/*
 * The sandbox's part of the path: rest judged lexically (-ELOOP for a ".."
 * out of it) and, in *ret_rel if wanted, joined to below, the dir's own
 * path below the one it lies in (NULL or "" for that dir itself).
 */
static int rel_in_place(const char *below, const char *rest, char **ret_rel) {
        _cleanup_free_ char *path = join3("/", rest, ""), *out = NULL;
        char *rel;
        int r;

        if (!path)
                return -ENOMEM;
        r = path_simplify(path, "/", &out);
        if (r < 0)
                return r;
        if (!ret_rel)
                return 0;
        rel = isempty(below) ? strdup(out + 1) : out[1] ? path_join(below, out + 1) : strdup(below);
        if (!rel)
                return -ENOMEM;
        *ret_rel = rel;
        return 0;
}

/*
 * A path lexically outside the workspace may still lead into it, or into
 * the dir the git dir view serves, through a host symlink, even a dangling
 * one (the sandbox can create its target). abs (absolute, simplified) is
 * resolved on the host by fd, from "/", one component at a time: each
 * component opened O_PATH | O_NOFOLLOW below the directory reached so far,
 * a symbolic link read from that fd and its target resolved in turn, until
 * the path ends, a component is missing or unreadable (the sandbox cannot
 * make it: it is outside both), or the directory reached is the workspace
 * (wfd) or the served dir (gfd, or -EBADF), judged by device and inode,
 * whatever path led there. From there on the tree is the sandbox's: the rest
 * is judged lexically (a ".." after a component there is -ELOOP, as in
 * git_path_in_workspace()) and returned in *ret_rel ("" for the dir itself);
 * symlinks there are left to the opens beneath it that refuse them.
 * Returns the GitPlace, or -errno (-EINVAL for a loop of host symlinks).
 */
static int host_place(const char *abs, int wfd, int gfd, const GitHostMounts *hm, char **ret_rel) {
        _cleanup_(host_walk_done) HostWalk w = { .rootfd = -EBADF, .cur = -EBADF };
        struct stat ws, gd;

        w.resolved = strdup("/");
        w.todo = strdup(abs);
        if (!w.resolved || !w.todo)
                return -ENOMEM;
        if (fstat(wfd, &ws) < 0 || (gfd >= 0 && fstat(gfd, &gd) < 0))
                return -errno;
        w.rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        w.cur = w.rootfd >= 0 ? fcntl(w.rootfd, F_DUPFD_CLOEXEC, 3) : -EBADF;
        if (w.cur < 0)
                return -errno;
        for (const char *s = w.todo;;) {
                _cleanup_free_ char *name = NULL, *below = NULL;
                _cleanup_close_ int fd = -EBADF;
                struct stat st;
                const char *e;
                int r;

                while (*s == '/')
                        s++;
                e = strchrnul(s, '/');
                if (e - s == 1 && s[0] == '.') {
                        s = e;
                        continue;
                }
                if (e - s == 2 && s[0] == '.' && s[1] == '.') {
                        r = walk_up(&w);
                        if (r < 0)
                                return r;
                        s = e;
                        continue;
                }
                r = place_reached(&w, &ws, gfd >= 0 ? &gd : NULL, hm, &below);
                if (r < 0)
                        return r;
                if (r != GIT_PLACE_OUTSIDE) {
                        GitPlace place = r;

                        r = rel_in_place(below, s, ret_rel);
                        if (r < 0)
                                return r;
                        return place;
                }
                if (s == e)
                        return GIT_PLACE_OUTSIDE;       /* the path ends outside both */
                name = strndup(s, e - s);
                if (!name)
                        return -ENOMEM;
                s = e;
                fd = openat(w.cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0)
                        return GIT_PLACE_OUTSIDE;       /* missing or unreadable here: not the sandbox's to make */
                if (S_ISDIR(st.st_mode)) {
                        r = walk_into(&w, name, TAKE_FD(fd));
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!S_ISLNK(st.st_mode))
                        return GIT_PLACE_OUTSIDE;       /* a file: the rest, if any, does not exist */
                if (++w.links > GIT_SYMLINKS_MAX)
                        return -EINVAL;                 /* the host cannot resolve it either; refuse, to be safe */
                r = follow_link(&w, fd, s);
                if (r < 0)
                        return r;
                s = w.todo;
        }
}

/* ------------------------------------------------------------ the mounts */

/* Every mount of the Git Sentry lies in the workspace, some in its own earlier ones. */
#define SENTRY_NESTS_IN (MOUNT_PART_BIT(MOUNT_PART_WORKSPACE) | MOUNT_PART_BIT(MOUNT_PART_GIT_SENTRY))

static int add_mount(MountPlan *plan, const char *dest, const char *source, int fd, bool read_only,
                     char **ret_error) {
        return mount_plan_add_bind_fd(plan, MOUNT_PART_GIT_SENTRY, dest, source, fd, read_only, SENTRY_NESTS_IN,
                                      ret_error);
}

/* <domain_dir>/git-sentry/NAME, a private directory (no symlink followed). */
static int mask_dir(const char *domain_dir, const char *name, char **ret, int *ret_fd, char **ret_error) {
        _cleanup_close_ int dfd = -EBADF, sfd = -EBADF, fd = -EBADF;
        struct stat st;

        dfd = open(domain_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return errorf(ret_error, -errno, "cannot open the Domain Root %s: %m", domain_dir);
        if (mkdirat(dfd, GIT_SENTRY_DIR, 0700) < 0 && errno != EEXIST)
                return errorf(ret_error, -errno, "cannot create %s/%s: %m", domain_dir, GIT_SENTRY_DIR);
        sfd = openat(dfd, GIT_SENTRY_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0)
                return errorf(ret_error, -errno, "cannot open %s/%s: %m", domain_dir, GIT_SENTRY_DIR);
        if (mkdirat(sfd, name, 0700) < 0 && errno != EEXIST)
                return errorf(ret_error, -errno, "cannot create %s/%s/%s: %m", domain_dir, GIT_SENTRY_DIR, name);
        fd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return errorf(ret_error, -errno, "cannot open %s/%s/%s: %m", domain_dir, GIT_SENTRY_DIR, name);
        if (st.st_uid != geteuid())
                return errorf(ret_error, -EPERM, "%s/%s/%s is not owned by us", domain_dir, GIT_SENTRY_DIR, name);
        char *p;
        if (asprintf(&p, "%s/%s/%s", domain_dir, GIT_SENTRY_DIR, name) < 0)
                return -ENOMEM;
        *ret = p;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/*
 * Opens every component of rel (relative to the workspace) without following
 * a symlink, creating missing directories (0755) so that they can be masked.
 */
static int open_components(const GitSentryParams *p, int wfd, const char *rel, const char *what, char **ret_error) {
        for (const char *e = rel;; e++) {
                _cleanup_free_ char *prefix = NULL;
                _cleanup_close_ int fd = -EBADF;

                if (*e != '/' && *e != 0)
                        continue;
                prefix = strndup(rel, e - rel);
                if (!prefix)
                        return -ENOMEM;
                fd = openat_beneath(wfd, prefix, O_RDONLY | O_DIRECTORY, 0, false);
                if (fd == -ENOENT) {
                        if (mkdirat(wfd, prefix, 0755) < 0 && errno != EEXIST)
                                return errorf(ret_error, -errno, "cannot create %s/%s for %s: %m",
                                              p->workspace, prefix, what);
                        fd = openat_beneath(wfd, prefix, O_RDONLY | O_DIRECTORY, 0, false);
                }
                struct stat st;
                if (fd == -ENOTDIR && fstatat(wfd, prefix, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISLNK(st.st_mode))
                        fd = -ELOOP;    /* the last component, refused by O_NOFOLLOW | O_DIRECTORY */
                if (fd == -ELOOP || fd == -EXDEV)
                        return errorf(ret_error, -EPERM, "%s %s goes through a symlink in the workspace "
                                      "(%s); the sandbox could redirect it", what, rel, prefix);
                if (fd < 0)
                        return errorf(ret_error, -EPERM, "%s %s: %s/%s is not a directory (%s)", what, rel,
                                      p->workspace, prefix, strerror(-fd));
                if (*e == 0)
                        return 0;
        }
}

static bool below(const char *rel, const char *dir) {
        const char *t = startswith(rel, dir);
        return t && *t == '/';
}

static int cmp_len(const void *a, const void *b) {
        size_t x = strlen(*(char *const *) a), y = strlen(*(char *const *) b);
        return x < y ? -1 : x > y;
}

/*
 * The core.hooksPath directories inside the workspace (relative, clean):
 * every ancestor below the workspace root is pinned by a self-bind, then
 * each is masked. Pins come first, shortest first, so that no later bind
 * covers a mask; a path inside another masked one needs nothing.
 */
static int protect_hooks_paths(MountPlan *plan, const GitSentryParams *p, int wfd, char **rels, char **ret_error) {
        _cleanup_strv_free_ char **masks = NULL, **pins = NULL;
        int r;

        STRV_FOREACH(rel, rels) {
                bool covered = streq(*rel, ".git/hooks") || below(*rel, ".git/hooks");

                if (isempty(*rel) || streq(*rel, ".git"))
                        return errorf(ret_error, -EPERM, "core.hooksPath names %s; the sandbox could write the hooks "
                                      "that git on the host runs", isempty(*rel) ? "the workspace itself" : ".git");
                STRV_FOREACH(other, rels)
                        covered = covered || (below(*rel, *other) && !streq(*other, ".git")) ||
                                  (streq(*rel, *other) && other < rel);
                if (covered)
                        continue;
                r = open_components(p, wfd, *rel, "core.hooksPath", ret_error);
                if (r < 0)
                        return r;
                r = strv_extend(&masks, *rel);
                if (r < 0)
                        return r;
                for (const char *e = strchr(*rel, '/'); e; e = strchr(e + 1, '/')) {
                        _cleanup_free_ char *a = strndup(*rel, e - *rel);
                        if (!a)
                                return -ENOMEM;
                        if (streq(a, ".git") || strv_contains((const char *const *) pins, a))
                                continue;
                        r = strv_push(&pins, TAKE_PTR(a));
                        if (r < 0)
                                return r;
                }
        }
        if (p->view)
                /* The view protects them by name; no mounts. */
                return p->ret_protect ? strv_extend_strv(p->ret_protect, masks) : 0;
        if (pins)
                qsort(pins, strv_length(pins), sizeof(char *), cmp_len);
        STRV_FOREACH(a, pins) {
                _cleanup_free_ char *host = join3(p->workspace, "/", *a), *dest = join3(p->sandbox_workspace, "/", *a);
                _cleanup_close_ int fd = -EBADF;
                if (!host || !dest)
                        return -ENOMEM;
                fd = openat_beneath(wfd, *a, O_PATH | O_DIRECTORY, 0, false);
                if (fd < 0)
                        return errorf(ret_error, -EPERM, "%s is no longer a directory (%s)", host, strerror(-fd));
                r = add_mount(plan, dest, host, fd, false, ret_error);
                if (r < 0)
                        return r;
        }
        STRV_FOREACH(m, masks) {
                _cleanup_free_ char *mask = NULL, *dest = join3(p->sandbox_workspace, "/", *m);
                _cleanup_close_ int mfd = -EBADF;
                uint8_t digest[SHA256_DIGEST_LEN];
                char hex[SHA256_HEX_LEN + 1], name[32];

                if (!dest)
                        return -ENOMEM;
                sha256_buf(*m, strlen(*m), digest);
                hexify(digest, 6, hex);
                snprintf(name, sizeof(name), "hooks-path-%.12s", hex);
                r = mask_dir(p->domain_dir, name, &mask, &mfd, ret_error);
                if (r < 0)
                        return r;
                r = add_mount(plan, dest, mask, mfd, false, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int read_config_at(int dirfd, const char *name, char **ret) {
        _cleanup_close_ int fd = -EBADF;

        struct stat st;

        /* O_NONBLOCK: a FIFO in the file's place must not stall the launch. */
        fd = dirfd >= 0 ? openat_beneath(dirfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, false) :
                          open(name, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return dirfd >= 0 ? fd : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        return read_full_fd(fd, GIT_CONFIG_MAX, ret, NULL);
}

#define GIT_INCLUDE_DEPTH_MAX 10      /* git's own MAX_INCLUDE_DEPTH */

/*
 * A path that host git reads as configuration or runs from, inside the dir
 * the git dir view serves (rel: relative to it, lexical, as host_place()
 * gives it; shown: as the configuration names it): protected there (rel
 * joins linked->protect). Each of its components that exists is opened
 * beneath the served dir's fd without following a symlink and must be a
 * directory (the last one anything but a symlink): the view keeps a
 * protected path's parents directories from then on
 * (view_lists_hold_below()), but a symlink the sandbox made there before
 * would lead host git elsewhere. The served dir itself cannot be protected.
 */
static int linked_protect(GitLinked *linked, const char *rel, const char *what, const char *shown, char **ret_error) {
        if (isempty(rel))
                return errorf(ret_error, -EPERM, "%s %s names the git dir %s itself; the sandbox could write it", what,
                              shown, linked->root);
        for (const char *e = rel;; e++) {
                _cleanup_free_ char *prefix = NULL;
                _cleanup_close_ int fd = -EBADF;
                struct stat st;

                if (*e != '/' && *e != 0)
                        continue;
                prefix = strndup(rel, e - rel);
                if (!prefix)
                        return -ENOMEM;
                fd = openat_beneath(linked->root_fd, prefix, O_PATH, 0, false);
                if (fd == -ENOENT)
                        break;          /* nothing more exists: the view keeps it so */
                if (fd >= 0 && fstat(fd, &st) < 0)
                        return -errno;
                /* O_PATH opens a last component that is a symlink as the link itself. */
                if (fd == -ELOOP || fd == -EXDEV || (fd >= 0 && S_ISLNK(st.st_mode)))
                        return errorf(ret_error, -EPERM, "%s %s goes through a symbolic link in the git dir %s (%s); "
                                      "the sandbox could redirect it", what, shown, linked->root, prefix);
                if (fd < 0)
                        return errorf(ret_error, -EPERM, "%s %s: cannot open %s/%s (%s)", what, shown, linked->root,
                                      prefix, strerror(-fd));
                if (*e == 0)
                        break;
                if (!S_ISDIR(st.st_mode))
                        return errorf(ret_error, -EPERM, "%s %s: %s/%s is not a directory", what, shown, linked->root,
                                      prefix);
        }
        return strv_contains((const char *const *) linked->protect, rel) ? 0 : strv_extend(&linked->protect, rel);
}

/* Where abs (absolute, simplified) leads: lexically inside the workspace, else host_place(). */
static int place_of(const GitSentryParams *p, int wfd, const GitLinked *linked, const GitHostMounts *hm, const char *abs,
                    char **ret_rel) {
        int r = git_path_in_workspace(abs, "/", NULL, p->workspace, NULL, ret_rel);

        if (r != 0)
                return r < 0 ? r : GIT_PLACE_WORKSPACE;
        return host_place(abs, wfd, linked && linked->root ? linked->root_fd : -EBADF, hm, ret_rel);
}

/* A host directory by its absolute, simplified path, opened from "/" without following any symlink. */
static int open_host_dir(const char *abs) {
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

        if (root < 0)
                return -errno;
        return openat_beneath(root, abs[1] ? abs + 1 : NULL, O_PATH | O_DIRECTORY, 0, false);
}

/* One of git's one-line files in dirfd, read strictly; -ENOENT when it is missing. */
static int read_link_file(int dirfd, const char *name, const char *prefix, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t len;
        int r;

        fd = openat_beneath(dirfd, name, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, false);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        r = read_full_fd(fd, GIT_LINK_FILE_MAX, &text, &len);
        if (r == -EFBIG || r == -E2BIG)
                return -EBADMSG;
        if (r < 0)
                return r;
        return git_link_file_parse(text, len, prefix, ret);
}

static int judge_git_path(const char *workspace, const char *rel, const struct stat *st, char **ret_error);

/* Where a linked workspace's git dirs lie, judged: outside the workspace, which is outside them. */
static int judge_outside(const GitSentryParams *p, const char *what, const char *abs, char **ret_error) {
        if (path_is_at_or_below(abs, p->workspace))
                return errorf(ret_error, -EPERM, "%s %s lies inside the workspace %s; the sandbox could rewrite it, "
                              "which the workspace view does not support", what, abs, p->workspace);
        if (path_is_at_or_below(p->workspace, abs))
                return errorf(ret_error, -EPERM, "the workspace %s lies inside %s %s; not supported", p->workspace,
                              what, abs);
        return 0;
}

static int open_linked_dir(const GitSentryParams *p, const char *what, const char *abs, int *ret_fd,
                           char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        r = judge_outside(p, what, abs, ret_error);
        if (r < 0)
                return r;
        fd = open_host_dir(abs);
        if (fd == -ELOOP || fd == -EXDEV)
                return errorf(ret_error, -EPERM, "%s %s goes through a symbolic link; name it by its real path "
                              "(git worktree repair, on the host)", what, abs);
        if (fd < 0)
                return errorf(ret_error, -EPERM, "cannot open %s %s: %s", what, abs, strerror(-fd));
        if (fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                return errorf(ret_error, -EPERM, "%s %s is not a git dir (it has no HEAD file)", what, abs);
        if (fstat(fd, &st) < 0)
                return errorf(ret_error, -errno, "cannot inspect %s: %m", abs);
        r = judge_git_path(abs, NULL, &st, ret_error);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The registrations of the other worktrees below <root>/worktrees/: protected, so no prune inside removes them. */
static int protect_registrations(int rootfd, const char *prefix, const char *self, char ***protect) {
        _cleanup_close_ int fd = openat_beneath(rootfd, "worktrees", O_RDONLY | O_DIRECTORY, 0, false);
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (fd == -ENOENT || fd == -ENOTDIR)
                return 0;
        if (fd < 0)
                return fd;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        TAKE_FD(fd);
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, "..") || (self && streq(de->d_name, self)))
                        continue;
                r = strv_extendf(protect, "%sworktrees/%s", prefix, de->d_name);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r;
}

/*
 * A workspace whose .git is a file: its git dir and, for a linked
 * worktree, the common dir, resolved as git_linked_done() describes.
 */
static int resolve_linked(const GitSentryParams *p, int wfd, GitLinked *ret, char **ret_error) {
        _cleanup_free_ char *value = NULL, *full = NULL, *git_dir = NULL, *cvalue = NULL, *common = NULL,
                            *back = NULL, *want = NULL;
        _cleanup_close_ int gfd = -EBADF, cfd = -EBADF;
        _cleanup_(git_linked_done) GitLinked l = { .root_fd = -EBADF };
        int r;

        r = read_link_file(wfd, ".git", "gitdir: ", &value);
        if (r == -EBADMSG)
                return errorf(ret_error, -EPERM, "%s/.git is not a one-line \"gitdir: PATH\" file", p->workspace);
        if (r < 0)
                return errorf(ret_error, -EPERM, "cannot read %s/.git: %s", p->workspace, strerror(-r));
        l.relative = value[0] != '/';
        full = l.relative ? join3(p->workspace, "/", value) : strdup(value);
        if (!full)
                return -ENOMEM;
        r = path_simplify(full, p->workspace, &git_dir);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return errorf(ret_error, -EPERM, "%s/.git names '%s', which cannot be located safely (%s)", p->workspace,
                              value, strerror(-r));
        r = open_linked_dir(p, "the git dir", git_dir, &gfd, ret_error);
        if (r < 0)
                return r;

        r = read_link_file(gfd, "commondir", "", &cvalue);
        if (r == -ENOENT) {
                /* A submodule's (or a separate) git dir: served itself. */
                l.git_dir = TAKE_PTR(git_dir);
                l.root = strdup(l.git_dir);
                if (!l.root)
                        return -ENOMEM;
                l.root_fd = TAKE_FD(gfd);
                goto done;
        }
        if (r < 0)
                return errorf(ret_error, -EPERM, "%s/commondir is not a one-line path (%s)", git_dir,
                              r == -EBADMSG ? "malformed" : strerror(-r));
        free(full);
        full = cvalue[0] == '/' ? strdup(cvalue) : join3(git_dir, "/", cvalue);
        if (!full)
                return -ENOMEM;
        r = path_simplify(full, NULL, &common);
        if (r < 0)
                return r == -ENOMEM ? r : errorf(ret_error, -EPERM, "%s/commondir: '%s' is not a usable path", git_dir, cvalue);
        r = open_linked_dir(p, "the common dir", common, &cfd, ret_error);
        if (r < 0)
                return r;

        /* The git dir must be the registration <common>/worktrees/<name>, by path and by fd. */
        {
                const char *t = startswith(git_dir, common), *name = t ? startswith(t, "/worktrees/") : NULL;
                _cleanup_close_ int wt = -EBADF;
                struct stat a, b;

                if (isempty(name) || strchr(name, '/'))
                        return errorf(ret_error, -EPERM, "the git dir %s is not below %s/worktrees/, where its commondir "
                                      "points; not a linked worktree Lazaret can protect", git_dir, common);
                wt = openat_beneath(cfd, t + 1, O_PATH | O_DIRECTORY, 0, false);
                if (wt < 0 || fstat(wt, &a) < 0 || fstat(gfd, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                        return errorf(ret_error, -EPERM, "the git dir %s is not the registration %s/worktrees/%s that it "
                                      "claims to be", git_dir, common, name);
                l.worktree = strdup(name);
                if (!l.worktree)
                        return -ENOMEM;
        }
        r = read_link_file(gfd, "gitdir", "", &back);
        want = join3(p->workspace, "/.git", "");
        if (!want)
                return -ENOMEM;
        if (r < 0 || !streq(back, want))
                return errorf(ret_error, -EPERM, "the worktree registration %s/gitdir does not name %s; run 'git worktree "
                              "repair' in the workspace on the host", git_dir, want);
        l.git_dir = TAKE_PTR(git_dir);
        l.root = TAKE_PTR(common);
        l.root_fd = TAKE_FD(cfd);
done:
        r = protect_registrations(l.root_fd, "", l.worktree, &l.protect);
        if (r < 0)
                return errorf(ret_error, r, "cannot list %s/worktrees: %s", l.root, strerror(-r));
        *ret = l;
        l = (GitLinked) { .root_fd = -EBADF };
        return 0;
}

int git_sentry_resolve_linked(const char *workspace, int workspace_fd, GitLinked *ret, char **ret_error) {
        _cleanup_close_ int wfd = -EBADF;
        struct stat st;

        wfd = openat(workspace_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (wfd < 0)
                return errorf(ret_error, -errno, "cannot open the workspace %s: %m", workspace);
        if (fstatat(wfd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
                *ret = (GitLinked) { .root_fd = -EBADF };
                return 0;
        }
        return resolve_linked(&(GitSentryParams) { .workspace = workspace, .workspace_fd = workspace_fd, .view = true },
                              wfd, ret, ret_error);
}

/*
 * Reads the trusted git configuration file at abs (absolute, simplified)
 * and, depth first, every file it includes (include.path and every
 * includeIf.*.path, each condition taken as true; a relative path from the
 * including file's directory, as git does), collecting core.hooksPath
 * values into *hooks. A file that lies inside the workspace (lexically, or
 * through the host's symlinks outside it) is one the sandbox could write:
 * with refuse_inside that is refused, else its workspace-relative path
 * joins *inside (the view protects it) and it is read beneath the
 * workspace fd without following any symlink, its missing parent
 * directories created so that none can become one. A missing file is
 * skipped, as git skips it. Nothing is run.
 */
static int read_config_tree(const GitSentryParams *p, int wfd, GitLinked *linked, const GitHostMounts *hm, const char *abs,
                            const char *shown, unsigned depth, bool refuse_inside, char ***hooks, char ***inside,
                            char **ret_error) {
        _cleanup_free_ char *text = NULL, *rel = NULL, *dir = NULL;
        GitConfigPaths paths = {};
        int r;

        if (depth > GIT_INCLUDE_DEPTH_MAX)
                return errorf(ret_error, -ELOOP, "%s: includes nest deeper than %d files; git refuses that too",
                              shown, GIT_INCLUDE_DEPTH_MAX);
        r = place_of(p, wfd, linked, hm, abs, &rel);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return errorf(ret_error, -EPERM, "the git configuration file %s cannot be located safely (%s)", abs,
                              strerror(-r));
        if (r == GIT_PLACE_WORKSPACE) {
                _cleanup_free_ char *parent = NULL;
                char *slash;

                if (refuse_inside)
                        return errorf(ret_error, -EPERM, "%s includes '%s', which the sandbox could write; "
                                      "the Git Sentry does not support that", shown, abs);
                if (isempty(rel) || streq(rel, ".git"))
                        return errorf(ret_error, -EPERM, "the git configuration names %s as a file to include; "
                                      "it is a directory of the workspace", abs);
                parent = strdup(rel);
                if (!parent)
                        return -ENOMEM;
                slash = strrchr(parent, '/');
                if (slash) {
                        *slash = 0;
                        r = open_components(p, wfd, parent, "the included git configuration", ret_error);
                        if (r < 0)
                                return r;
                }
                if (!strv_contains((const char *const *) *inside, rel)) {
                        r = strv_extend(inside, rel);
                        if (r < 0)
                                return r;
                }
                r = read_config_at(wfd, rel, &text);
                if (r == -ELOOP || r == -EXDEV)
                        return errorf(ret_error, -EPERM, "the git configuration includes %s, a symlink in the workspace; "
                                      "the sandbox could redirect it", abs);
        } else if (r == GIT_PLACE_GIT_DIR) {
                /* In the git dir that the git dir view serves: protected there, read beneath it. */
                r = linked_protect(linked, rel, "the included git configuration file", abs, ret_error);
                if (r < 0)
                        return r;
                r = read_config_at(linked->root_fd, rel, &text);
                if (r == -ELOOP || r == -EXDEV)
                        return errorf(ret_error, -EPERM, "the git configuration includes %s, a symlink in the git "
                                      "dir %s; the sandbox could redirect it", abs, linked->root);
        } else
                r = read_config_at(-EBADF, abs, &text);
        if (r == -ENOENT || r == -ENOTDIR)
                return 0;
        if (r < 0)
                return errorf(ret_error, r, "cannot read %s: %s", abs, strerror(-r));
        r = git_config_parse_paths(text, &paths, ret_error);
        if (r < 0)
                return errorf(ret_error, r, "cannot parse %s", abs);
        r = strv_extend_strv(hooks, paths.hooks_paths);
        if (r < 0)
                goto finish;

        dir = strdup(abs);
        if (!dir) {
                r = -ENOMEM;
                goto finish;
        }
        *strrchr(dir, '/') = 0;         /* abs is absolute and simplified */
        STRV_FOREACH(inc, paths.include_paths) {
                _cleanup_free_ char *next = NULL;

                r = git_path_in_workspace(*inc, isempty(dir) ? "/" : dir, p->home, p->workspace, &next, NULL);
                if (r == -ENOMEM)
                        goto finish;
                if (r < 0) {
                        r = errorf(ret_error, -EPERM, "%s includes '%s', which cannot be interpreted safely (%s)", abs,
                                   *inc, strerror(-r));
                        goto finish;
                }
                r = read_config_tree(p, wfd, linked, hm, next, abs, depth + 1, refuse_inside, hooks, inside, ret_error);
                if (r < 0)
                        goto finish;
        }
        r = 0;
finish:
        git_config_paths_done(&paths);
        return r;
}

int git_sentry_check_workspace(int workspace_fd, const char *workspace, char **ret_error) {
        struct stat st;

        if (fstatat(workspace_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT)
                        return errorf(ret_error, -errno, "cannot inspect %s/.git: %m", workspace);
                /* A git dir itself (repo/.git, a bare repository) has HEAD, objects/ and refs/
                 * but no working tree to share. */
                if (faccessat(workspace_fd, "HEAD", F_OK, AT_SYMLINK_NOFOLLOW) >= 0 &&
                    faccessat(workspace_fd, "objects", F_OK, AT_SYMLINK_NOFOLLOW) >= 0)
                        return errorf(ret_error, -EPERM, "the workspace %s is a git directory, not a working tree; "
                                      "launch in the working tree it belongs to", workspace);
                return errorf(ret_error, -EPERM, "the workspace %s is not a git repository; "
                              "run 'git init' there on the host first", workspace);
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return errorf(ret_error, -EPERM, "%s/.git is not a directory nor a gitfile (a symbolic link?)", workspace);
        return 0;
}

/*
 * .git, its config and its hooks must be the developer's and writable by
 * nobody else: another local user could otherwise change what host git
 * runs. A sandbox of an older Lazaret could leave either (issue 15, attack
 * 4); the line names the repair.
 */
static int judge_git_path(const char *workspace, const char *rel, const struct stat *st, char **ret_error) {
        _cleanup_free_ char *path = NULL;
        PathWalkResult w = {
                .uid = (unsigned) st->st_uid,
                .mode = (unsigned) (st->st_mode & 07777),
        };

        if (st->st_uid != 0 && st->st_uid != getuid())
                w.failure = PATH_WALK_FOREIGN_OWNER;
        else if (st->st_mode & (S_IWGRP | S_IWOTH))
                w.failure = PATH_WALK_WRITABLE;
        else
                return 0;
        path = rel ? join3(workspace, "/", rel) : strdup(workspace);
        if (!path)
                return -ENOMEM;
        w.at = path;
        return path_repair_error(NULL, path, &w, -EPERM, "what host git runs", ret_error);
}

/* The paths one hook directory's hooks name (rel: workspace-relative, or NULL outside), added to *named. */
static int scan_hook_dir(const GitSentryParams *p, int wfd, int dirfd, const char *path, const char *rel, char ***named) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        /* Beneath dirfd without following anything, or (dirfd < 0) the host's own path, as judged outside. */
        fd = dirfd >= 0 ? openat_beneath(dirfd, path, O_RDONLY | O_DIRECTORY, 0, false) :
                          open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0;       /* none there: git runs nothing from it */
        r = host_hooks_scan_paths(wfd, fd, rel, p->workspace, named);
        return r == -ENOMEM ? r : 0;
}

/*
 * Issue 32 item 2: the workspace paths named by the hooks git would run,
 * from every directory it may run them from: the git dir's hooks/ (a
 * linked workspace's common dir's, where git looks), and every
 * core.hooksPath (git uses the last one; all are read, erring towards
 * protecting) inside the workspace (rels), in the served git dir
 * (git_rels) or outside both (outside). Each is opened where it was
 * judged to lie.
 */
static int scan_hook_dirs(const GitSentryParams *p, int wfd, int gfd, const GitLinked *linked, char **rels,
                          char **git_rels, char **outside, char ***named) {
        int r;

        if (linked->root)
                r = scan_hook_dir(p, wfd, linked->root_fd, "hooks", NULL, named);
        else
                r = scan_hook_dir(p, wfd, gfd, "hooks", ".git/hooks", named);
        STRV_FOREACH(rel, rels)
                if (r >= 0)
                        r = scan_hook_dir(p, wfd, wfd, *rel, *rel, named);
        STRV_FOREACH(rel, git_rels)
                if (r >= 0)
                        r = scan_hook_dir(p, wfd, linked->root_fd, *rel, NULL, named);
        STRV_FOREACH(abs, outside)
                if (r >= 0)
                        r = scan_hook_dir(p, wfd, -EBADF, *abs, NULL, named);
        /* A named path that is a symbolic link: the host runs its target, protected too when in the workspace. */
        if (r >= 0)
                r = host_hooks_link_targets(wfd, p->workspace, named);
        return r;
}

/* What the steps of sentry_plan() share: the repository as opened and judged, and what its configuration names. */
typedef struct SentryRun {
        const GitSentryParams *p;
        int wfd;                        /* the workspace, as its check opened it */
        int gfd;                        /* the git dir: .git, or a linked workspace's, which the git dir view serves */
        int cfd;                        /* the git dir's config */
        char *gitdir;                   /* the git dir's host path, for messages */
        GitLinked linked;               /* a linked worktree's or submodule's git dirs; root NULL otherwise */
        GitHostMounts hm;
        char **hooks;                   /* every core.hooksPath read */
        char **inside;                  /* included configuration files inside the workspace, workspace-relative */
        char **git_rels;                /* core.hooksPath directories in the served git dir, relative to it */
        char **outside;                 /* core.hooksPath directories outside the workspace and the git dir */
} SentryRun;

static void sentry_run_done(SentryRun *s) {
        git_host_mounts_done(&s->hm);
        git_linked_done(&s->linked);
        s->hooks = strv_free(s->hooks);
        s->inside = strv_free(s->inside);
        s->git_rels = strv_free(s->git_rels);
        s->outside = strv_free(s->outside);
        s->gitdir = mfree(s->gitdir);
        s->wfd = safe_close(s->wfd);
        s->gfd = safe_close(s->gfd);
        s->cfd = safe_close(s->cfd);
}

/*
 * The workspace as its check opened it, never by its path again, its
 * mounts judged, and its git dir: .git, or for a linked worktree or a
 * submodule the git dir its gitfile names (resolve_linked()).
 */
static int open_git_dir(SentryRun *s, char **ret_error) {
        const GitSentryParams *p = s->p;
        struct stat st;
        int r;

        s->wfd = openat(p->workspace_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->wfd < 0)
                return errorf(ret_error, -errno, "cannot open the workspace %s: %m", p->workspace);
        r = git_sentry_check_workspace(s->wfd, p->workspace, ret_error);
        if (r < 0)
                return r;
        r = host_mounts_judge(&s->hm, "the workspace", p->workspace, s->wfd, false, ret_error);
        if (r < 0)
                return r;
        if (fstatat(s->wfd, ".git", &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISREG(st.st_mode)) {
                /* A linked worktree or a submodule: the repository's configuration is its git dir's. */
                if (!p->view || !p->ret_linked)
                        return errorf(ret_error, -EPERM, "%s/.git is a file (a linked worktree or a submodule); only "
                                      "the workspace view protects such a workspace", p->workspace);
                r = resolve_linked(p, s->wfd, &s->linked, ret_error);
                if (r < 0)
                        return r;
                s->gfd = openat(s->linked.root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (s->gfd < 0)
                        return errorf(ret_error, -errno, "cannot open %s: %m", s->linked.root);
                r = host_mounts_judge(&s->hm, "the git dir", s->linked.root, s->linked.root_fd, true, ret_error);
                if (r < 0)
                        return r;
                s->gitdir = strdup(s->linked.root);
        } else {
                s->gfd = openat_beneath(s->wfd, ".git", O_RDONLY | O_DIRECTORY, 0, false);
                if (s->gfd < 0)
                        return errorf(ret_error, s->gfd, "cannot open %s/.git: %s", p->workspace, strerror(-s->gfd));
                if (fstat(s->gfd, &st) < 0)
                        return errorf(ret_error, -errno, "cannot inspect %s/.git: %m", p->workspace);
                r = judge_git_path(p->workspace, ".git", &st, ret_error);
                if (r < 0)
                        return r;
                s->gitdir = join3(p->workspace, "/.git", "");
                /* Linked worktrees' registrations: no prune inside drops them (their checkouts are not there). */
                if (p->view && p->ret_protect) {
                        r = protect_registrations(s->gfd, ".git/", NULL, p->ret_protect);
                        if (r < 0)
                                return errorf(ret_error, r, "cannot list %s/.git/worktrees: %s", p->workspace, strerror(-r));
                }
        }
        if (!s->gitdir)
                return -ENOMEM;
        return 0;
}

/*
 * The repository's configuration: the git dir's config, judged and read,
 * the files it includes, and a linked worktree's config.worktree; their
 * core.hooksPath values into s->hooks.
 */
static int read_repo_config(SentryRun *s, char **ret_error) {
        const GitSentryParams *p = s->p;
        _cleanup_free_ char *text = NULL;
        GitConfigPaths paths = {};
        struct stat st;
        int r;

        s->cfd = openat_beneath(s->gfd, "config", O_RDONLY | O_NOCTTY, 0, false);
        if (s->cfd < 0 || fstat(s->cfd, &st) < 0 || !S_ISREG(st.st_mode))
                return errorf(ret_error, -EPERM, "%s/config is missing or not a regular file", s->gitdir);
        r = judge_git_path(s->gitdir, "config", &st, ret_error);
        if (r < 0)
                return r;
        r = read_full_fd(s->cfd, GIT_CONFIG_MAX, &text, NULL);
        if (r < 0)
                return errorf(ret_error, r, "cannot read %s/config: %s", s->gitdir, strerror(-r));
        r = git_config_parse_paths(text, &paths, ret_error);
        if (r < 0) {
                git_config_paths_done(&paths);
                return errorf(ret_error, r, "cannot parse %s/config", s->gitdir);
        }
        s->hooks = TAKE_PTR(paths.hooks_paths);

        /* An included file inside the workspace would be a writable config;
         * the files it includes outside may still name a core.hooksPath. */
        STRV_FOREACH(inc, paths.include_paths) {
                _cleanup_free_ char *abs = NULL;
                r = git_path_in_workspace(*inc, s->gitdir, p->home, p->workspace, &abs, NULL);
                if (r == 0)     /* it judges again where a host symlink leads, and refuses the workspace */
                        r = read_config_tree(p, s->wfd, &s->linked, &s->hm, abs, s->gitdir, 1, true, &s->hooks,
                                             &s->inside, ret_error);
                else if (r != -ENOMEM)
                        r = errorf(ret_error, -EPERM, "%s/config includes '%s', which the sandbox could write; "
                                   "the Git Sentry does not support that", s->gitdir, *inc);
                if (r < 0) {
                        git_config_paths_done(&paths);
                        return r;
                }
        }
        git_config_paths_done(&paths);

        if (s->linked.worktree) {
                /* The worktree's own configuration (extensions.worktreeConfig). */
                _cleanup_free_ char *wcfg = join3(s->linked.git_dir, "/config.worktree", "");
                if (!wcfg)
                        return -ENOMEM;
                r = read_config_tree(p, s->wfd, &s->linked, &s->hm, wcfg, wcfg, 0, true, &s->hooks, &s->inside, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The host's own files, and all they include: those inside the workspace become protected paths (s->inside). */
static int read_host_configs(SentryRun *s, char **ret_error) {
        const GitSentryParams *p = s->p;
        _cleanup_strv_free_ char **host_configs = NULL;
        int r;

        if (!p->global_configs) {
                _cleanup_free_ char *gitconfig = p->home ? path_join(p->home, ".gitconfig") : NULL,
                                    *xdggit = p->xdg_config_home ? path_join(p->xdg_config_home, "git/config") : NULL;

                if ((p->home && !gitconfig) || (p->xdg_config_home && !xdggit))
                        return -ENOMEM;
                if (strv_extend(&host_configs, "/etc/gitconfig") < 0 ||
                    strv_extend(&host_configs, gitconfig ?: "/etc/gitconfig") < 0 ||
                    strv_extend(&host_configs, xdggit ?: "/etc/gitconfig") < 0)
                        return -ENOMEM;
        }
        STRV_FOREACH(g, p->global_configs ? (char **) p->global_configs : host_configs) {
                _cleanup_free_ char *abs = NULL;

                r = path_simplify(*g, p->workspace, &abs);
                if (r < 0)
                        return errorf(ret_error, r, "the git configuration file %s is not an absolute path", *g);
                r = read_config_tree(p, s->wfd, &s->linked, &s->hm, abs, abs, 0, false, &s->hooks, &s->inside, ret_error);
                if (r < 0)
                        return r;
        }
        if (!p->view && s->inside)
                return errorf(ret_error, -EPERM, "the host's git configuration includes %s/%s, inside the workspace; "
                              "only the workspace view protects that", p->workspace, s->inside[0]);
        return 0;
}

/* Without the workspace view: .git pinned, its config read-only, its hooks masked. */
static int mount_git_dir(SentryRun *s, MountPlan *plan, char **ret_error) {
        const GitSentryParams *p = s->p;
        _cleanup_close_ int hfd = -EBADF, mfd = -EBADF;
        _cleanup_free_ char *host = NULL, *dest = NULL, *mask = NULL;
        struct stat st;
        int r;

        host = join3(p->workspace, "/.git", "");
        dest = join3(p->sandbox_workspace, "/.git", "");
        if (!host || !dest)
                return -ENOMEM;
        r = add_mount(plan, dest, host, s->gfd, false, ret_error);
        if (r < 0)
                return r;
        free(host);
        free(dest);
        host = join3(p->workspace, "/.git/config", "");
        dest = join3(p->sandbox_workspace, "/.git/config", "");
        if (!host || !dest)
                return -ENOMEM;
        r = add_mount(plan, dest, host, s->cfd, true, ret_error);
        if (r < 0)
                return r;

        hfd = openat_beneath(s->gfd, "hooks", O_RDONLY | O_DIRECTORY, 0, false);
        if (hfd == -ENOENT) {
                if (mkdirat(s->gfd, "hooks", 0755) < 0 && errno != EEXIST)
                        return errorf(ret_error, -errno, "cannot create %s/.git/hooks: %m", p->workspace);
                hfd = openat_beneath(s->gfd, "hooks", O_RDONLY | O_DIRECTORY, 0, false);
        }
        if (hfd < 0)
                return errorf(ret_error, -EPERM, "%s/.git/hooks is not a directory (%s)", p->workspace,
                              strerror(-hfd));
        if (fstat(hfd, &st) < 0)
                return errorf(ret_error, -errno, "cannot inspect %s/.git/hooks: %m", p->workspace);
        r = judge_git_path(p->workspace, ".git/hooks", &st, ret_error);
        if (r < 0)
                return r;
        r = mask_dir(p->domain_dir, "hooks", &mask, &mfd, ret_error);
        if (r < 0)
                return r;
        free(dest);
        dest = join3(p->sandbox_workspace, "/.git/hooks", "");
        if (!dest)
                return -ENOMEM;
        return add_mount(plan, dest, mask, mfd, false, ret_error);
}

/*
 * Every core.hooksPath that lands inside the workspace, workspace-relative
 * in *rels; one in the git dir that the git dir view serves is protected
 * there (linked_protect()).
 */
static int judge_hooks_paths(SentryRun *s, char ***rels, char **ret_error) {
        const GitSentryParams *p = s->p;
        int r;

        STRV_FOREACH(h, s->hooks) {
                _cleanup_free_ char *abs = NULL, *rel = NULL;

                /* Relative to the worktree's top, where git runs hooks. */
                r = git_path_in_workspace(*h, p->workspace, p->home, p->workspace, &abs, &rel);
                if (r == 0) {   /* outside lexically; a host symlink may still lead in */
                        r = host_place(abs, s->wfd, s->linked.root ? s->linked.root_fd : -EBADF, &s->hm, &rel);
                        if (r == GIT_PLACE_GIT_DIR) {
                                /* In the git dir that the git dir view serves. */
                                r = linked_protect(&s->linked, rel, "core.hooksPath", *h, ret_error);
                                if (r < 0)
                                        return r;
                                r = strv_extend(&s->git_rels, rel);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        if (r == GIT_PLACE_OUTSIDE && p->ret_hook_named) {
                                r = strv_extend(&s->outside, abs);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                }
                if (r == -ELOOP)
                        return errorf(ret_error, -EPERM, "core.hooksPath %s steps out of a directory the "
                                      "sandbox writes with '..'; it could redirect it", *h);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return errorf(ret_error, -EPERM, "core.hooksPath %s cannot be interpreted safely (%s)", *h,
                                      strerror(-r));
                if (r > 0) {
                        r = strv_push(rels, TAKE_PTR(rel));
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int sentry_plan(const GitSentryParams *p, MountPlan *plan, char **ret_error) {
        _cleanup_(sentry_run_done) SentryRun s = {
                .p = p,
                .wfd = -EBADF,
                .gfd = -EBADF,
                .cfd = -EBADF,
                .linked = { .root_fd = -EBADF },
        };
        _cleanup_strv_free_ char **rels = NULL;
        int r;

        r = open_git_dir(&s, ret_error);
        if (r >= 0)
                r = read_repo_config(&s, ret_error);
        if (r >= 0)
                r = read_host_configs(&s, ret_error);
        /* The workspace view keeps .git, its config and hooks itself (view-policy.h). */
        if (r >= 0 && !p->view)
                r = mount_git_dir(&s, plan, ret_error);
        if (r >= 0)
                r = judge_hooks_paths(&s, &rels, ret_error);
        if (r >= 0)
                r = protect_hooks_paths(plan, p, s.wfd, rels, ret_error);
        if (r < 0)
                return r;
        /* The included files inside the workspace, protected by path like the hooks directories. */
        if (p->view && p->ret_protect) {
                r = strv_extend_strv(p->ret_protect, s.inside);
                if (r < 0)
                        return r;
        }
        if (p->view && p->ret_hook_named) {
                r = scan_hook_dirs(p, s.wfd, s.gfd, &s.linked, rels, s.git_rels, s.outside, p->ret_hook_named);
                if (r < 0)
                        return r;
        }
        if (p->ret_linked) {
                *p->ret_linked = s.linked;
                s.linked = (GitLinked) { .root_fd = -EBADF };
        }
        return 0;
}

int git_sentry_plan(const GitSentryParams *p, MountPlan *plan, char **ret_error) {
        size_t n = plan->n_entries;
        int r;

        r = sentry_plan(p, plan, ret_error);
        if (r < 0)
                mount_plan_truncate(plan, n);
        return r;
}

