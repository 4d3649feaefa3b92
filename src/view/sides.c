/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Name judging: the side each name of a directory lives on (the host's, Domain state
 * or ignored state), the paths and directories of Domain state, whiteouts.
 */
#include "view.h"

/* ---- paths and Domain state ---------------------------------------------- */

/* The workspace-relative path of a directory node (or of name in it), "" for the top. */
int node_relpath(View *v, Node *dir, const char *name, char *buf, size_t size) {
        const char *parts[256];
        size_t n = 0, len = 0;

        for (Node *p = dir; p && p != &v->root; p = p->parent) {
                if (n == ELEMENTSOF(parts) - 1)
                        return -ENAMETOOLONG;
                parts[n++] = p->name;
        }
        buf[0] = 0;
        while (n > 0) {
                const char *s = parts[--n];
                int k = snprintf(buf + len, size - len, "%s%s", len ? "/" : "", s);
                if (k < 0 || (size_t) k >= size - len)
                        return -ENAMETOOLONG;
                len += (size_t) k;
        }
        if (name) {
                int k = snprintf(buf + len, size - len, "%s%s", len ? "/" : "", name);
                if (k < 0 || (size_t) k >= size - len)
                        return -ENAMETOOLONG;
        }
        return 0;
}

/* The Domain state directory of dir, if it exists (create: made, with its parents). */
int state_dir(View *v, Node *dir, bool create) {
        char rel[VIEW_PATH_MAX];
        int fd, r;

        if (dir->state_dirfd >= 0)
                return dir->state_dirfd;
        if (dir == &v->root)
                return v->state_fd;
        if (create) {
                int pfd = state_dir(v, dir->parent, true);
                struct stat st;

                if (pfd < 0)
                        return pfd;
                /* As the host's directory is, when there is one. */
                if (dir->in_state || fstatat(dir->fd, "", &st, AT_EMPTY_PATH) < 0)
                        st.st_mode = 0755;
                if (mkdirat(pfd, dir->name, (st.st_mode & 07755) | 0700) < 0 && errno != EEXIST)
                        return -errno;
        }
        r = node_relpath(v, dir, NULL, rel, sizeof(rel));
        if (r < 0)
                return r;
        fd = openat_beneath(v->state_fd, rel, O_PATH | O_DIRECTORY, 0, true);
        if (fd < 0)
                return fd;
        dir->state_dirfd = fd;
        return fd;
}

bool is_whiteout(int dirfd, const char *name) {
        char target[sizeof(WHITEOUT_TARGET) + 1];
        ssize_t k = readlinkat(dirfd, name, target, sizeof(target));
        return k == (ssize_t) strlen(WHITEOUT_TARGET) && memcmp(target, WHITEOUT_TARGET, (size_t) k) == 0;
}

int make_whiteout(int dirfd, const char *name) {
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT && errno != EISDIR)
                return -errno;
        if (symlinkat(WHITEOUT_TARGET, dirfd, name) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Where a node of Domain state lives: its parent's Domain state directory, protected or ignored. */
int state_parent(View *v, Node *n) {
        if (n->cls == VIEW_IGNORED)
                return ign_entries(v, n->parent, false);
        return state_dir(v, n->parent, false);
}

/* Whether a protected path lies below name in dir (view_lists_hold_below()). */
bool holds_listed(View *v, Node *dir, const char *name) {
        char rel[VIEW_PATH_MAX];

        return v->lists.paths && v->lists.paths[0] && node_relpath(v, dir, name, rel, sizeof(rel)) >= 0 &&
               view_lists_hold_below(&v->lists, rel);
}

static ViewListed listed_of(View *v, Node *dir, const char *name) {
        char rel[VIEW_PATH_MAX];
        bool paths = v->lists.paths && v->lists.paths[0];

        return view_listed(&v->lists, &dir->dir, paths && node_relpath(v, dir, name, rel, sizeof(rel)) >= 0 ? rel : NULL,
                           name);
}

bool host_has(Node *dir, const char *name) {
        struct stat st;
        return !dir->in_state && fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0;
}

bool state_has(View *v, Node *dir, const char *name) {
        struct stat st;
        int fd = state_dir(v, dir, false);
        return fd >= 0 && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && !is_whiteout(fd, name);
}

/* Whether Domain state has anything at name in dir, a whiteout too: the host's entry is not seen there. */
bool state_holds(View *v, Node *dir, const char *name) {
        struct stat st;
        int fd = state_dir(v, dir, false);
        return fd >= 0 && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0;
}

static ViewFacts facts_of(View *v, Node *dir) {
        ViewFacts f = {};

        f.host_head = host_has(dir, "HEAD");
        f.holds_head = f.host_head || state_has(v, dir, "HEAD");
        for (const char *const *p = view_fact_names(); *p && !f.host_control; p++)
                f.host_control = host_has(dir, *p);
        return f;
}

ViewClass class_of(View *v, Node *dir, const char *name, bool is_dir) {
        ViewFacts f = {};

        if (view_name_needs_facts(&dir->dir, name))
                f = facts_of(v, dir);
        return ign_class(v, dir, name, is_dir, view_name_class(&dir->dir, &f, name, is_dir, listed_of(v, dir, name)));
}

/* An ignored name: in Domain state alone, the host's never seen. */
static int find_ignored(View *v, Node *dir, const char *name, ViewClass *ret_cls, int *ret_fd, bool *ret_in_state,
                        struct stat *ret_st, FileBirth *ret_birth) {
        int efd = ign_entries(v, dir, false), fd, r;

        if (efd < 0)
                return -ENOENT;
        fd = openat(efd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = stat_birth_at(fd, "", AT_EMPTY_PATH, ret_st, ret_birth);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        *ret_fd = fd;
        *ret_in_state = true;
        *ret_cls = VIEW_IGNORED;
        return 0;
}

/*
 * Finds name in dir on its side: a protected name in Domain state first
 * (a whiteout hides the host's), then on the host; others on the host
 * only. The result is an O_PATH fd and where it is, its attributes and
 * its birth time (node_denotes()).
 */
int find(View *v, Node *dir, const char *name, ViewClass *ret_cls, int *ret_fd, bool *ret_in_state, struct stat *ret_st,
         FileBirth *ret_birth) {
        bool is_dir = false;
        /* The host's name, looked at once: r_host is 1 before the look, then its result. */
        struct stat host_st;
        FileBirth host_birth;
        int r_host = 1;
        ViewClass c;
        int fd, r;

        if (strlen(name) > NAME_MAX || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -EINVAL;
        /* Whether it is a directory matters only for ".git": a directory of that
         * name is only ever the host's (a directory in Domain state at that name
         * only carries protected entries further down); a file or symbolic link
         * is protected. */
        if (streq(name, ".git") && dir->dir.zone == VIEW_ZONE_WORK && !dir->in_state) {
                struct stat st;
                int sfd;

                is_dir = fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
                if (!is_dir && (sfd = state_dir(v, dir, false)) >= 0 && fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                    S_ISDIR(st.st_mode))
                        return -ENOENT;
        }
        if (v->ign.on && !dir->in_state && dir->dir.zone == VIEW_ZONE_WORK && !streq(name, ".git")) {
                /* An ignore pattern may speak of directories only. The same look
                 * answers for the host's side below: one statx() a lookup, not two
                 * (a negative LOOKUP, two of each file a `tar x` makes, is only this). */
                r_host = stat_birth_at(dir->fd, name, AT_SYMLINK_NOFOLLOW, &host_st, &host_birth);
                is_dir = r_host >= 0 && S_ISDIR(host_st.st_mode);
        }
        c = dir->in_state ? dir->cls : class_of(v, dir, name, is_dir);
        if (c == VIEW_IGNORED)
                return find_ignored(v, dir, name, ret_cls, ret_fd, ret_in_state, ret_st, ret_birth);
        if (c == VIEW_PROTECTED) {
                int sfd = state_dir(v, dir, false);
                if (sfd >= 0) {
                        if (is_whiteout(sfd, name))
                                return -ENOENT;
                        fd = openat(sfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                        if (fd >= 0) {
                                struct stat sst, hst;

                                /* A directory on both sides is the host's, merged with its
                                 * Domain state directory (state_dir() finds that). */
                                if (!dir->in_state && fstat(fd, &sst) >= 0 && S_ISDIR(sst.st_mode) &&
                                    fstatat(dir->fd, name, &hst, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(hst.st_mode)) {
                                        safe_close(fd);
                                        goto host;
                                }
                                *ret_fd = fd;
                                *ret_in_state = true;
                                goto found;
                        }
                        if (errno != ENOENT)
                                return -errno;
                }
                if (dir->in_state)
                        return -ENOENT;
        }
host:
        /* The common case, a file: one statx() (an fstatat() that gives the
         * birth time too). Only a directory is held open (and insisted on: the
         * name may have been swapped in between). */
        if (r_host > 0)
                r = stat_birth_at(dir->fd, name, AT_SYMLINK_NOFOLLOW, ret_st, ret_birth);
        else {
                r = r_host;
                if (r >= 0) {
                        *ret_st = host_st;
                        if (ret_birth)
                                *ret_birth = host_birth;
                }
        }
        if (r < 0)
                return r;
        *ret_in_state = false;
        *ret_cls = c;
        if (!S_ISDIR(ret_st->st_mode)) {
                *ret_fd = -EBADF;
                return 0;
        }
        fd = openat(dir->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOTDIR || errno == ENOENT ? -ESTALE : -errno;
        {
                struct stat st;
                if (fstat(fd, &st) < 0 || st.st_dev != ret_st->st_dev || st.st_ino != ret_st->st_ino) {
                        safe_close(fd);
                        return -ESTALE;
                }
        }
        *ret_fd = fd;
        return 0;
found:
        r = stat_birth_at(*ret_fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, ret_st, ret_birth);
        if (r < 0) {
                *ret_fd = safe_close(*ret_fd);
                return r;
        }
        *ret_cls = c;
        return 0;
}
