/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Requests on a node: LOOKUP, FORGET, GETATTR, SETATTR, READLINK.
 */
#include "view.h"

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
        View *v = fuse_req_userdata(req);
        struct fuse_entry_param e;
        int r;

        pthread_mutex_lock(&v->lock);
        r = lookup_locked(v, node_of(v, parent), name, &e);
        if (r == -ENOENT) {
                /* A negative entry, cached like a positive one. */
                memset(&e, 0, sizeof(e));
                e.entry_timeout = timeout_in(v, node_of(v, parent));
        }
        pthread_mutex_unlock(&v->lock);
        if (r == -ENOENT) {
                fuse_reply_entry(req, &e);
                return;
        }
        /* An index the host's git wrote over the sandbox's last one, with its entries: with the
         * sandbox's untracked cache and token (index-guard.c). */
        if (r >= 0)
                index_adopt(v, node_of(v, e.ino), &e.attr);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_entry(req, &e);
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
        View *v = fuse_req_userdata(req);
        pthread_mutex_lock(&v->lock);
        forget_one(v, node_of(v, ino), nlookup);
        pthread_mutex_unlock(&v->lock);
        fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
        View *v = fuse_req_userdata(req);
        pthread_mutex_lock(&v->lock);
        for (size_t i = 0; i < count; i++)
                forget_one(v, node_of(v, forgets[i].ino), forgets[i].nlookup);
        pthread_mutex_unlock(&v->lock);
        fuse_reply_none(req);
}

/* The reply to a GETATTR or SETATTR: st, what the host object of n is now. */
static void reply_attr(View *v, fuse_req_t req, Node *n, struct stat *st) {
        pthread_mutex_lock(&v->lock);
        told(n, st);
        index_kept_attr_locked(v, n, st);
        pthread_mutex_unlock(&v->lock);
        fill_stat(n, st);
        fuse_reply_attr(req, st, n == &v->root ? timeout_in(v, n) : timeout_in(v, n->parent));
}

/* The attributes of n's host object through fd (pinned for this request) or the handle. */
static int stat_pinned(int fd, const struct fuse_file_info *fi, struct stat *ret) {
        if (fi && fi->fh)
                return fstat((int) fi->fh, ret) < 0 ? -errno : 0;
        return fstatat(fd, "", ret, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        Node *n = node_of(v, ino);
        struct stat st;
        int r;

        if (fi && fi->fh) {
                r = stat_pinned(-EBADF, fi, &st);
                if (r < 0) {
                        fuse_reply_err(req, -r);
                        return;
                }
                reply_attr(v, req, n, &st);
                return;
        }
        /* By name, identity checked, no descriptor (a GETATTR follows each file a
         * `tar x` or a shell's `echo >` makes); told under the same hold of the lock. */
        pthread_mutex_lock(&v->lock);
        r = stat_node_locked(v, n, &st);
        if (r >= 0) {
                told(n, &st);
                /* An index served with the sandbox's own caches: their size (index-guard.c). */
                index_kept_attr_locked(v, n, &st);
        }
        pthread_mutex_unlock(&v->lock);
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        index_adopt(v, n, &st);
        fill_stat(n, &st);
        fuse_reply_attr(req, &st, n == &v->root ? timeout_in(v, n) : timeout_in(v, n->parent));
}

/* ---- attributes ---------------------------------------------------------- */

static void setattr_apply(View *v, fuse_req_t req, Node *n, int fd, struct stat *attr, int to_set, struct fuse_file_info *fi);

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        Node *n = node_of(v, ino);
        _cleanup_(pin_done) Pin p = {};
        int r;

        if (to_set == FUSE_SET_ATTR_MODE) {
                /* A chmod to the mode it has (the host-edit relay's trigger) changes
                 * nothing: no copy-up, no host ctime. Looked at by name, without a
                 * descriptor: a chmod that changes the mode pins it below. */
                struct stat st;
                pthread_mutex_lock(&v->lock);
                r = stat_node_locked(v, n, &st);
                pthread_mutex_unlock(&v->lock);
                if (r >= 0 && (st.st_mode & 07777) == (attr->st_mode & 07777)) {
                        r = fi && fi->fh ? stat_pinned(-EBADF, fi, &st) : 0;
                        if (r < 0)
                                fuse_reply_err(req, -r);
                        else
                                reply_attr(v, req, n, &st);
                        return;
                }
        }
        r = prepare_change(v, n);
        if (r == 0)
                r = pin_for(v, n, &p, true);
        if (r == 0 && (to_set & FUSE_SET_ATTR_SIZE)) {
                /* Checked while busy on n: no rename makes n an index meanwhile (rename_index()). */
                r = guard_check_node(v, n, "a truncation of");
                if (r < 0)
                        busy_end(v, n);
        }
        if (fi && !fi->fh)
                fi = NULL;      /* opened by the kernel alone: by node */
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        if (r > 0) {
                op_getattr(req, ino, fi);
                return;
        }
        setattr_apply(v, req, n, p.fd, attr, to_set, fi);
        busy_end(v, n);
        /* A staged copy truncated: fed whole again (guard_check_node() counted the truncation as under way). */
        if ((to_set & FUSE_SET_ATTR_SIZE) && __atomic_load_n(&n->staging, __ATOMIC_ACQUIRE))
                (void) object_staged_written(v, n, -1, 0);
}

/* The changes of a SETATTR, on the pinned fd (or the handle), then the reply. */
static void setattr_apply(View *v, fuse_req_t req, Node *n, int fd, struct stat *attr, int to_set, struct fuse_file_info *fi) {
        struct stat st;
        char pp[32];
        int r;

        proc_path(fd, pp);
        if (to_set & FUSE_SET_ATTR_MODE) {
                /* As the set-ID filter answers gVisor (spec C22): no set-ID bit, no
                 * write for group or others, EPERM and no change at all. */
                mode_t mode = attr->st_mode & 07777;
                if (mode & (S_ISUID | S_ISGID | S_IWGRP | S_IWOTH)) {
                        fuse_reply_err(req, EPERM);
                        return;
                }
                if ((fi ? fchmod((int) fi->fh, mode) : chmod(pp, mode)) < 0)
                        goto fail;
        }
        /* FUSE_SET_ATTR_UID/GID: accepted, nothing changes (spec C24). */
        if (to_set & FUSE_SET_ATTR_SIZE) {
                if ((fi ? ftruncate((int) fi->fh, attr->st_size) : truncate(pp, attr->st_size)) < 0)
                        goto fail;
        }
        if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
                struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };

                if (to_set & FUSE_SET_ATTR_ATIME_NOW)
                        ts[0].tv_nsec = UTIME_NOW;
                else if (to_set & FUSE_SET_ATTR_ATIME)
                        ts[0] = attr->st_atim;
                if (to_set & FUSE_SET_ATTR_MTIME_NOW)
                        ts[1].tv_nsec = UTIME_NOW;
                else if (to_set & FUSE_SET_ATTR_MTIME)
                        ts[1] = attr->st_mtim;
                if ((fi ? futimens((int) fi->fh, ts) : utimensat(AT_FDCWD, pp, ts, 0)) < 0) {
                        /* A symbolic link's own times. */
                        if (errno != ELOOP || utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                                goto fail;
                }
        }
        journal_node(v, n);
        /* The reply from what the change left, through the fd it was made on. */
        r = stat_pinned(fd, fi, &st);
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        reply_attr(v, req, n, &st);
        return;
fail:
        r = errno;
        /* What came before the failure is changed. */
        journal_node(v, n);
        fuse_reply_err(req, r);
}

void op_readlink(fuse_req_t req, fuse_ino_t ino) {
        View *v = fuse_req_userdata(req);
        _cleanup_(pin_done) Pin p = {};
        char buf[VIEW_PATH_MAX];
        ssize_t k;
        int r;

        r = pin(v, node_of(v, ino), &p);
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        k = readlinkat(p.fd, "", buf, sizeof(buf) - 1);
        if (k < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        buf[k] = 0;
        fuse_reply_readlink(req, buf);
}
