/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Requests on files: OPEN, CREATE, READ, WRITE, FSYNC, FALLOCATE, LSEEK.
 */
#include "view.h"

/* ---- files ---------------------------------------------------------------- */

/* The flags a request's open carries, as the view opens with them on the host: never following,
 * creating or insisting by itself (it adds those where it means them), never inherited, never a
 * controlling terminal. */
int view_open_flags(int flags) {
        return (flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL)) | O_CLOEXEC | O_NOCTTY;
}

/*
 * A new fd of n opened with flags: by name from its parent, not following
 * it, and insisted on. For a change (busy), once no rename between the
 * sides covers n, and busy_begin(n) with it: a rename that starts later
 * waits for the change to end (rename_across()).
 */
static int node_open(View *v, Node *n, int flags, bool busy) {
        char pp[32];
        int pfd, fd;

        pthread_mutex_lock(&v->lock);
        if (busy)
                wait_unmoved(v, n, NULL);
        if (n->fd >= 0) {
                proc_path(n->fd, pp);
                fd = open(pp, view_open_flags(flags));
                if (fd < 0)
                        fd = -errno;
        } else {
                pfd = !n->parent ? -ESTALE : n->in_state ? state_parent(v, n) : n->parent->fd;
                fd = pfd < 0 ? -ESTALE : open_by_name(n, pfd, view_open_flags(flags) | O_NOFOLLOW, NULL);
        }
        if (fd >= 0 && busy)
                busy_begin(n);
        pthread_mutex_unlock(&v->lock);
        return fd;
}

/*
 * The fd a request on an open file uses: the handle's, or, where the
 * kernel opens files without asking (v->no_open), one opened for this
 * request (*ret_owned), after the checks an open for writing makes. With
 * flags for writing, the request is busy on n from then on (node_open()):
 * the caller ends it with busy_end(n).
 */
static int request_fd(View *v, Node *n, struct fuse_file_info *fi, int flags, bool *ret_owned) {
        bool change = (flags & O_ACCMODE) != O_RDONLY;
        int r;

        *ret_owned = false;
        if (fi && fi->fh) {
                if (change) {
                        pthread_mutex_lock(&v->lock);
                        wait_unmoved(v, n, NULL);
                        busy_begin(n);
                        pthread_mutex_unlock(&v->lock);
                }
                return (int) fi->fh;
        }
        if (change) {
                r = prepare_change(v, n);
                if (r < 0)
                        return r;
        }
        r = node_open(v, n, flags, change);
        if (r >= 0)
                *ret_owned = true;
        return r;
}

void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        Node *n = node_of(v, ino);
        int fd, r;

        if (v->no_open) {
                /* The kernel opens files itself from now on: reads and writes come
                 * without a handle (request_fd()). */
                fuse_reply_err(req, ENOSYS);
                return;
        }
        if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
                r = guard_check_node(v, n, "an open for writing of");
                if (r >= 0)
                        r = prepare_change(v, n);
                if (r < 0) {
                        fuse_reply_err(req, -r);
                        return;
                }
        }
        fd = node_open(v, n, fi->flags, (fi->flags & O_TRUNC) != 0);
        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        if (fi->flags & O_TRUNC)
                busy_end(v, n);
        fi->fh = (uint64_t) fd;
        fi->keep_cache = 0;
        if (fuse_reply_open(req, fi) == -ENOENT)
                safe_close(fd);
}

void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        Node *dir = node_of(v, parent);
        struct fuse_entry_param e;
        JournalNote jn = {};
        char hex[VIEW_OBJECT_HEX_MAX];
        ViewObjectKind kind;
        ViewClass c;
        int dfd, fd, r;

        if (index_name(dir, name)) {
                fuse_reply_err(req, -index_refuse(v, dir, name, "the creation of"));
                return;
        }
        kind = object_name(dir, name, hex);
        if (kind != VIEW_OBJECT_NONE) {
                /* Staged until whole and checked (a copy of a repository, git clone of a local path). */
                object_create(req, v, dir, name, kind, hex, mode, fi);
                return;
        }
        pthread_mutex_lock(&v->lock);
        wait_unmoved(v, dir, NULL);
        dfd = create_side(v, dir, name, false, &c);
        if (dfd < 0) {
                pthread_mutex_unlock(&v->lock);
                fuse_reply_err(req, -dfd);
                return;
        }
        {
                mode_t m;
                fd = create_mode(mode, &m) < 0 ? (errno = EPERM, -1)
                                                : openat(dfd, name, view_open_flags(fi->flags) | O_CREAT | O_NOFOLLOW, m);
        }
        if (fd < 0) {
                r = -errno;
                pthread_mutex_unlock(&v->lock);
                fuse_reply_err(req, -r);
                return;
        }
        own_name_note(v, dir, name);
        journal_note_name_locked(v, &jn, dir, name, 'f');
        inval_facts(v, dir, name);
        r = lookup_made_locked(v, dir, name, c, fd, &e);
        pthread_mutex_unlock(&v->lock);
        /* For git's fsmonitor, before the create is answered (the file is made, whatever the lookup says). */
        journal_note_write(v, &jn);
        if (r < 0) {
                safe_close(fd);
                fuse_reply_err(req, -r);
                return;
        }
        if (v->no_open) {
                /* The kernel sends no RELEASE where it opens files itself: the
                 * handle would stay open for good. Requests open it again. */
                fd = safe_close(fd);
                fi->fh = 0;
        } else
                fi->fh = (uint64_t) fd;
        fi->keep_cache = 0;
        if (fuse_reply_create(req, &e, fi) == -ENOENT)
                safe_close(fd);
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        Node *n = node_of(v, ino);
        bool owned;
        int fd = request_fd(v, n, fi, O_RDONLY, &owned);

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        /* An index the sandbox wrote, while the host's file is the one landed: with the
         * caches the host was not given (index-guard.c). */
        if (!__atomic_load_n(&n->kept, __ATOMIC_ACQUIRE) || !index_kept_reply_read(v, req, n, fd, size, off))
                fuse_pool_reply_read(req, fd, size, off);
        if (owned)
                safe_close(fd);
}

void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        Node *n = node_of(v, ino);
        bool owned;
        int fd = request_fd(v, n, fi, O_WRONLY, &owned);
        struct stat st;
        ssize_t k;

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        /* Checked while the write is busy on n: no rename makes n an index meanwhile (rename_index()). */
        k = guard_check_node(v, n, "a write in place to");
        if (k < 0) {
                busy_end(v, n);
                if (owned)
                        safe_close(fd);
                fuse_reply_err(req, (int) -k);
                return;
        }
        k = fuse_pool_write(in, fd, off);
        /* The kernel asks for the new size and times anyway; recorded now, the
         * write's own host events are known for its echo. */
        if (k >= 0) {
                bool known = fstat(fd, &st) >= 0;
                JournalNote jn = {};

                pthread_mutex_lock(&v->lock);
                if (known)
                        told(n, &st);
                journal_note_node_locked(v, &jn, n);
                pthread_mutex_unlock(&v->lock);
                /* For git's fsmonitor, before the write is answered. */
                journal_note_write(v, &jn);
        }
        busy_end(v, n);
        if (owned)
                safe_close(fd);
        /* A copy under an object's name: checked as it comes, put in place once whole (object-guard.c);
         * told of a failed write too, which guard_check_node() counted as under way. */
        if (__atomic_load_n(&n->staging, __ATOMIC_ACQUIRE)) {
                int r = object_staged_written(v, n, off, k > 0 ? (size_t) k : 0);
                if (r < 0 && k >= 0)
                        k = r;
        }
        if (k < 0)
                fuse_reply_err(req, (int) -k);
        else
                fuse_reply_write(req, (size_t) k);
}

void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        bool owned;
        int fd = request_fd(v, node_of(v, ino), fi, O_RDONLY, &owned), r;

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        r = (datasync ? fdatasync(fd) : fsync(fd)) < 0 ? errno : 0;
        if (owned)
                safe_close(fd);
        fuse_reply_err(req, r);
}

void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        Node *n = node_of(v, ino);
        bool owned;
        int fd = request_fd(v, n, fi, O_WRONLY, &owned), r;

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        r = guard_check_node(v, n, "a write in place to");
        if (r < 0)
                r = -r;
        else {
                r = fallocate(fd, mode, off, len) < 0 ? errno : 0;
                /* A staged copy's bytes may have changed anywhere (a punched hole): fed whole again. */
                if (__atomic_load_n(&n->staging, __ATOMIC_ACQUIRE)) {
                        int k = object_staged_written(v, n, -1, 0);
                        if (k < 0 && r == 0)
                                r = -k;
                }
        }
        if (r == 0)
                journal_node(v, n);
        busy_end(v, node_of(v, ino));
        if (owned)
                safe_close(fd);
        fuse_reply_err(req, r);
}

void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        bool owned;
        int fd = request_fd(v, node_of(v, ino), fi, O_RDONLY, &owned);
        off_t r;

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        r = -1;
        errno = 0;
        if ((whence == SEEK_DATA || whence == SEEK_HOLE) && __atomic_load_n(&node_of(v, ino)->kept, __ATOMIC_ACQUIRE)) {
                /* An index served with the sandbox's caches: one extent of data, the size served. */
                off_t size = index_kept_size(v, node_of(v, ino), fd);

                errno = 0;
                if (size >= 0 && (off < 0 || off >= size))
                        errno = ENXIO;
                else if (size >= 0)
                        r = whence == SEEK_DATA ? off : size;
        }
        if (r < 0 && errno == 0)
                r = lseek(fd, off, whence);
        if (r < 0)
                fuse_reply_err(req, errno);
        else
                fuse_reply_lseek(req, r);
        if (owned)
                safe_close(fd);
}
