/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Requests that make or remove names: MKNOD, MKDIR, SYMLINK, LINK, UNLINK, RMDIR.
 */
#include "view.h"

/* ---- creating, removing, renaming ----------------------------------------- */

/*
 * Where a new entry name in dir goes: the directory fd on its side, after
 * removing a whiteout there; *ret_cls its class. -EROFS for a read-only name.
 */
int create_side(View *v, Node *dir, const char *name, bool is_dir, ViewClass *ret_cls) {
        ViewClass c;
        int sfd;

        if (strlen(name) > NAME_MAX || strchr(name, '/'))
                return -EINVAL;
        if (dir->cls == VIEW_READONLY)
                return -EROFS;
        c = dir->in_state ? dir->cls : class_of(v, dir, name, is_dir);
        *ret_cls = c;
        if (c == VIEW_READONLY)
                return -EROFS;
        if (c == VIEW_SHARED)
                return dir->fd;
        if (c == VIEW_IGNORED)
                /* Opaque: whatever the host has at that name is not there. */
                return ign_entries(v, dir, true);
        /* Protected: in Domain state, whatever the host has there. */
        if (!dir->in_state && host_has(dir, name) && !state_has(v, dir, name)) {
                /* Replacing the host's entry: mknod/mkdir would fail on it too. */
                sfd = state_dir(v, dir, false);
                if (sfd < 0 || !is_whiteout(sfd, name))
                        return -EEXIST;
        }
        sfd = state_dir(v, dir, true);
        if (sfd < 0)
                return sfd;
        if (is_whiteout(sfd, name) && unlinkat(sfd, name, 0) < 0)
                return -errno;
        return sfd;
}

static void reply_new_entry(View *v, fuse_req_t req, Node *dir, const char *name) {
        struct fuse_entry_param e;
        JournalNote jn = {};
        int r;

        pthread_mutex_lock(&v->lock);
        own_name_note(v, dir, name);
        /* A new directory is empty: what was below its name went with records of its own. */
        journal_note_name_locked(v, &jn, dir, name, 'f');
        inval_facts(v, dir, name);
        r = lookup_locked(v, dir, name, &e);
        pthread_mutex_unlock(&v->lock);
        journal_note_write(v, &jn);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_entry(req, &e);
}

/* A new entry's mode: as under umask 022 (spec C22); a set-ID bit is refused (-EPERM), as the set-ID filter does. */
int create_mode(mode_t mode, mode_t *ret) {
        if (mode & (S_ISUID | S_ISGID))
                return -EPERM;
        *ret = mode & 07777 & ~(mode_t) (S_IWGRP | S_IWOTH);
        return 0;
}

/*
 * Makes name in dir on its side: a regular file or a directory of mode's
 * type and permissions, or (S_IFLNK) a symbolic link to target, and
 * answers the request. A protected path's parent is a directory for good:
 * no symbolic link takes its place.
 */
static void make_entry(View *v, fuse_req_t req, Node *dir, const char *name, mode_t mode, const char *target) {
        ViewClass c;
        int fd, r;

        char hex[VIEW_OBJECT_HEX_MAX];

        if (index_name(dir, name)) {
                fuse_reply_err(req, -index_refuse(v, dir, name, "the creation of"));
                return;
        }
        if (object_name(dir, name, hex) != VIEW_OBJECT_NONE) {
                fuse_reply_err(req, -object_refuse(v, dir, name, "the creation of"));
                return;
        }
        pthread_mutex_lock(&v->lock);
        wait_unmoved(v, dir, NULL);
        fd = S_ISLNK(mode) && holds_listed(v, dir, name) ? -EPERM : create_side(v, dir, name, S_ISDIR(mode), &c);
        busy_begin(dir);
        pthread_mutex_unlock(&v->lock);
        if (fd < 0)
                r = fd;
        else if (S_ISDIR(mode))
                r = mkdirat(fd, name, mode & 07777) < 0 ? -errno : 0;
        else if (S_ISLNK(mode))
                r = symlinkat(target, fd, name) < 0 ? -errno : 0;
        else
                r = mknodat(fd, name, mode, 0) < 0 ? -errno : 0;
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                reply_new_entry(v, req, dir, name);
        busy_end(v, dir);
}

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
        View *v = fuse_req_userdata(req);
        Node *dir = node_of(v, parent);
        mode_t m;

        (void) rdev;
        /* Only regular files. A socket bound through FUSE is bound to the view's
         * inode, so a host process would reach a dead socket file: refused with
         * EACCES, which gVisor passes on (with EPERM it would quietly keep the
         * socket in its memory, listed inside and absent on the host). A FIFO or
         * device would exist on the host only as a trap for host tools. */
        if (!S_ISREG(mode)) {
                fuse_reply_err(req, S_ISSOCK(mode) ? EACCES : EPERM);
                return;
        }
        if (create_mode(mode, &m) < 0) {
                fuse_reply_err(req, EPERM);
                return;
        }
        make_entry(v, req, dir, name, S_IFREG | m, NULL);
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
        View *v = fuse_req_userdata(req);
        Node *dir = node_of(v, parent);
        mode_t m;

        /* S_ISGID on a directory comes from the kernel (a set-group-ID parent), never from the caller. */
        if (create_mode(mode & ~(mode_t) S_ISGID, &m) < 0) {
                fuse_reply_err(req, EPERM);
                return;
        }
        make_entry(v, req, dir, name, S_IFDIR | m, NULL);
}

void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name) {
        View *v = fuse_req_userdata(req);
        Node *dir = node_of(v, parent);

        if (streq(target, WHITEOUT_TARGET)) {
                fuse_reply_err(req, EINVAL);
                return;
        }
        make_entry(v, req, dir, name, S_IFLNK, target);
}

void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name) {
        View *v = fuse_req_userdata(req);
        Node *n = node_of(v, ino), *dir = node_of(v, parent);
        char pp[32], hex[VIEW_OBJECT_HEX_MAX];
        _cleanup_(pin_done) Pin p = {};
        ViewClass c;
        int fd, r;

        /* A link onto an object's name is refused without a word: git then renames, which the view checks. */
        if (object_name(dir, name, hex) != VIEW_OBJECT_NONE) {
                fuse_reply_err(req, EPERM);
                return;
        }
        /* A second name of an index or of an object's file: writes through it would change the host's in place. */
        r = index_name(dir, name) ? index_refuse(v, dir, name, "a link to or from") :
                                    guard_check_node(v, n, "a link to or from");
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        pthread_mutex_lock(&v->lock);
        wait_unmoved(v, dir, NULL);
        fd = create_side(v, dir, name, false, &c);
        busy_begin(dir);
        pthread_mutex_unlock(&v->lock);
        if (fd < 0) {
                r = fd;
                goto finish;
        }
        /* A second name is on the same side as the first, or it is not made. */
        if (c != n->cls || (c == VIEW_PROTECTED || c == VIEW_IGNORED) != n->in_state) {
                r = -EXDEV;
                goto finish;
        }
        r = pin(v, n, &p);
        if (r < 0)
                goto finish;
        proc_path(p.fd, pp);
        r = linkat(AT_FDCWD, pp, fd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
finish:
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                reply_new_entry(v, req, dir, name);
        busy_end(v, dir);
}

/* Removes name from dir on its side; a protected name the host also has gets a whiteout. */
static int remove_entry(View *v, Node *dir, const char *name, bool is_dir) {
        ViewClass c;
        int sfd;

        if (dir->cls == VIEW_READONLY)
                return -EROFS;
        c = dir->in_state ? dir->cls : class_of(v, dir, name, is_dir);
        if (c == VIEW_READONLY)
                return -EROFS;
        if (!dir->in_state && dir == &v->root && streq(name, ".git"))
                return -EBUSY;
        if (is_dir && holds_listed(v, dir, name))
                return -EBUSY;
        if (c == VIEW_IGNORED) {
                sfd = ign_entries(v, dir, false);
                if (sfd < 0)
                        return -ENOENT;
                return unlinkat(sfd, name, is_dir ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;
        }
        if (c == VIEW_SHARED)
                return unlinkat(dir->fd, name, is_dir ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;

        sfd = state_dir(v, dir, false);
        if (sfd >= 0 && !is_whiteout(sfd, name)) {
                struct stat st;
                if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0) {
                        if (is_dir) {
                                /* Empty on both sides, as the sandbox sees it. */
                                _cleanup_close_ int hfd = -EBADF;
                                if (!dir->in_state && (hfd = openat(dir->fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) >= 0) {
                                        _cleanup_(closedirp) DIR *d = fdopendir(hfd);
                                        struct dirent *de;
                                        if (d) {
                                                hfd = -EBADF;
                                                while ((de = readdir(d)))
                                                        if (!streq(de->d_name, ".") && !streq(de->d_name, "..")) {
                                                                /* Entries hidden by whiteouts do not count. */
                                                                int ofd = openat(sfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                                                                bool hidden = ofd >= 0 && is_whiteout(ofd, de->d_name);
                                                                safe_close(ofd);
                                                                if (!hidden)
                                                                        return -ENOTEMPTY;
                                                        }
                                        }
                                }
                                /* Whiteouts inside go with it. */
                                {
                                        int dfd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                                        _cleanup_(closedirp) DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
                                        struct dirent *de;
                                        if (dfd >= 0 && !d)
                                                safe_close(dfd);
                                        while (d && (de = readdir(d)))
                                                if (is_whiteout(dirfd(d), de->d_name))
                                                        (void) unlinkat(dirfd(d), de->d_name, 0);
                                }
                        }
                        if (unlinkat(sfd, name, is_dir ? AT_REMOVEDIR : 0) < 0)
                                return -errno;
                        if (!dir->in_state && host_has(dir, name))
                                return make_whiteout(sfd, name);
                        return 0;
                }
        }
        if (dir->in_state || !host_has(dir, name))
                return -ENOENT;
        if (is_dir) {
                /* The host's directory, seen through: it must look empty. */
                _cleanup_close_ int hfd = openat(dir->fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                _cleanup_(closedirp) DIR *d = hfd >= 0 ? fdopendir(hfd) : NULL;
                struct dirent *de;
                if (!d)
                        return -errno;
                hfd = -EBADF;
                while ((de = readdir(d)))
                        if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                                return -ENOTEMPTY;
        }
        sfd = state_dir(v, dir, true);
        if (sfd < 0)
                return sfd;
        return make_whiteout(sfd, name);
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
        View *v = fuse_req_userdata(req);
        JournalNote jn = {};
        int r;

        pthread_mutex_lock(&v->lock);
        wait_unmoved(v, node_of(v, parent), NULL);
        /* A copy under an object's name not yet in place: it goes. */
        r = object_staged_unlink_locked(v, node_of(v, parent), name);
        if (r == 0)
                r = remove_entry(v, node_of(v, parent), name, false);
        if (r >= 0) {
                own_name_note(v, node_of(v, parent), name);
                journal_note_name_locked(v, &jn, node_of(v, parent), name, 'f');
        }
        inval_facts(v, node_of(v, parent), name);
        pthread_mutex_unlock(&v->lock);
        journal_note_write(v, &jn);
        fuse_reply_err(req, -r);
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) {
        View *v = fuse_req_userdata(req);
        JournalNote jn = {};
        int r;

        pthread_mutex_lock(&v->lock);
        wait_unmoved(v, node_of(v, parent), NULL);
        r = remove_entry(v, node_of(v, parent), name, true);
        if (r >= 0) {
                own_name_note(v, node_of(v, parent), name);
                journal_note_name_locked(v, &jn, node_of(v, parent), name, 'd');
        }
        pthread_mutex_unlock(&v->lock);
        journal_note_write(v, &jn);
        fuse_reply_err(req, -r);
}
