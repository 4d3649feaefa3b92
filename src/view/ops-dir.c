/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Requests on directories: OPENDIR, READDIR(PLUS), RELEASEDIR, FSYNCDIR; STATFS.
 */
#include "view.h"

/* ---- directories ---------------------------------------------------------- */

typedef struct DirHandle {
        struct dirent64 **entries;      /* the merged listing, taken at opendir and at rewind */
        size_t n;
} DirHandle;

static void dir_handle_free(DirHandle *h) {
        if (!h)
                return;
        for (size_t i = 0; i < h->n; i++)
                free(h->entries[i]);
        free(h->entries);
        free(h);
}

static int dh_add(DirHandle *h, const char *name, ino_t ino, unsigned char type) {
        struct dirent64 *de, **grown;
        size_t len = strlen(name);

        if (h->n % 256 == 0) {
                grown = realloc(h->entries, (h->n + 256) * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                h->entries = grown;
        }
        de = malloc(offsetof(struct dirent64, d_name) + len + 1);
        if (!de)
                return -ENOMEM;
        de->d_ino = ino;
        de->d_type = type;
        memcpy(de->d_name, name, len + 1);
        h->entries[h->n++] = de;
        return 0;
}

static bool dh_has(const DirHandle *h, const char *name) {
        for (size_t i = 0; i < h->n; i++)
                if (streq(h->entries[i]->d_name, name))
                        return true;
        return false;
}

/* The ignored entries of host directory n, as its listing shows them. */
static int list_ignored(View *v, Node *n, DirHandle *h) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int efd, r;

        if (!v->ign.on || (efd = ign_entries(v, n, false)) < 0 || opendir_at(efd, &d) < 0)
                return 0;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, "..") || startswith(de->d_name, RENAME_TMP_PREFIX))
                        continue;
                /* Only what is still on the ignored side (shared_ignored may say otherwise). */
                if (class_of(v, n, de->d_name, de->d_type == DT_DIR) != VIEW_IGNORED)
                        continue;
                r = dh_add(h, de->d_name, de->d_ino, de->d_type);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * The listing as the sandbox sees it: the host's entries that are on the
 * host's side or not shadowed, then Domain state's protected entries.
 */
static int list_dir(View *v, Node *n, DirHandle *h) {
        _cleanup_(closedirp) DIR *hd = NULL, *sd = NULL;
        struct dirent *de;
        int sfd, r;

        sfd = n->in_state ? n->fd : state_dir(v, n, false);
        if (!n->in_state) {
                r = opendir_at(n->fd, &hd);
                if (r < 0)
                        return r;
        }
        if (sfd >= 0 && opendir_at(sfd, &sd) < 0)
                sd = NULL;
        while (hd && (de = readdir(hd))) {
                if (!streq(de->d_name, ".") && !streq(de->d_name, "..") && (sd || v->ign.on)) {
                        ViewClass c = class_of(v, n, de->d_name, de->d_type == DT_DIR);
                        struct stat st;
                        if (c == VIEW_IGNORED)
                                continue;       /* listed from ignored state, if there */
                        if (sd && c == VIEW_PROTECTED && fstatat(sfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                                continue;       /* listed from Domain state, or whited out */
                }
                if (n->dir.place != VIEW_PLACE_NONE && object_staging_name(de->d_name))
                        continue;       /* a copy staged under an object's name (object-guard.c) */
                r = dh_add(h, de->d_name, de->d_ino, de->d_type);
                if (r < 0)
                        return r;
        }
        while (sd && (de = readdir(sd))) {
                if (streq(de->d_name, ".") || streq(de->d_name, "..") || is_whiteout(sfd, de->d_name))
                        continue;
                if (strncmp(de->d_name, ".lazaret-copy-up.", 17) == 0)
                        continue;
                /* Directories there that only carry protected entries further down are the host's. */
                if (!n->in_state && class_of(v, n, de->d_name, de->d_type == DT_DIR) != VIEW_PROTECTED)
                        continue;
                if (n->in_state && (streq(de->d_name, ".") || streq(de->d_name, "..")))
                        continue;
                if (!dh_has(h, de->d_name)) {
                        r = dh_add(h, de->d_name, de->d_ino, de->d_type);
                        if (r < 0)
                                return r;
                }
        }
        if (!n->in_state) {
                r = list_ignored(v, n, h);
                if (r < 0)
                        return r;
        }
        if (n->in_state && !dh_has(h, "."))
                (void) dh_add(h, ".", n->ino, DT_DIR), (void) dh_add(h, "..", 1, DT_DIR);
        return 0;
}

void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        DirHandle *h = calloc(1, sizeof(*h));
        int r;

        if (!h) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        /* Listed at the first READDIR at offset 0 (and again at each rewind). */
        (void) r;
        fi->fh = (uint64_t) (uintptr_t) h;
        /* The kernel may keep the listing of a host directory whose changes the
         * watch reports (apply_inval() drops it); not of anything else. */
        pthread_mutex_lock(&v->lock);
        fi->cache_readdir = fi->keep_cache = node_of(v, ino)->wd >= 0 && v->timeout > 0;
        pthread_mutex_unlock(&v->lock);
        if (fuse_reply_open(req, fi) == -ENOENT)
                dir_handle_free(h);
}

static void do_readdir(View *v, fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi, bool plus) {
        DirHandle *h = (DirHandle *) (uintptr_t) fi->fh;
        _cleanup_free_ char *buf = calloc(1, size);
        size_t used = 0;
        Node *dir = node_of(v, ino);

        if (!buf) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        if (off == 0) {
                /* From the start again (a rewind): the listing as it is now. */
                DirHandle fresh = {};
                int r;

                pthread_mutex_lock(&v->lock);
                r = list_dir(v, dir, &fresh);
                pthread_mutex_unlock(&v->lock);
                if (r < 0) {
                        for (size_t i = 0; i < fresh.n; i++)
                                free(fresh.entries[i]);
                        free(fresh.entries);
                        fuse_reply_err(req, -r);
                        return;
                }
                for (size_t i = 0; i < h->n; i++)
                        free(h->entries[i]);
                free(h->entries);
                *h = fresh;
        }
        for (size_t i = (size_t) off; i < h->n; i++) {
                struct dirent64 *de = h->entries[i];
                size_t k;

                if (plus) {
                        struct fuse_entry_param e = {};
                        bool dot = streq(de->d_name, ".") || streq(de->d_name, "..");

                        if (!dot) {
                                int r;
                                pthread_mutex_lock(&v->lock);
                                r = lookup_locked(v, dir, de->d_name, &e);
                                pthread_mutex_unlock(&v->lock);
                                if (r < 0)
                                        continue;       /* gone meanwhile */
                        } else {
                                e.attr.st_ino = de->d_ino;
                                e.attr.st_mode = S_IFDIR;
                        }
                        k = fuse_add_direntry_plus(req, buf + used, size - used, de->d_name, &e, (off_t) i + 1);
                        if (k > size - used) {
                                if (!dot) {
                                        pthread_mutex_lock(&v->lock);
                                        forget_one(v, node_of(v, e.ino), 1);
                                        pthread_mutex_unlock(&v->lock);
                                }
                                break;
                        }
                } else {
                        struct stat st = { .st_ino = de->d_ino, .st_mode = (mode_t) DTTOIF(de->d_type) };
                        k = fuse_add_direntry(req, buf + used, size - used, de->d_name, &st, (off_t) i + 1);
                        if (k > size - used)
                                break;
                }
                used += k;
        }
        fuse_reply_buf(req, buf, used);
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        do_readdir(v, req, ino, size, off, fi, false);
}

void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        do_readdir(v, req, ino, size, off, fi, true);
}

void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        (void) ino;
        dir_handle_free((DirHandle *) (uintptr_t) fi->fh);
        fuse_reply_err(req, 0);
}

void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
        View *v = fuse_req_userdata(req);
        char pp[32];
        int fd;

        (void) datasync, (void) fi;
        proc_path(node_of(v, ino)->fd, pp);
        fd = open(pp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        fuse_reply_err(req, fsync(fd) < 0 ? errno : 0);
        safe_close(fd);
}

void op_statfs(fuse_req_t req, fuse_ino_t ino) {
        View *v = fuse_req_userdata(req);
        struct statvfs s;
        char pp[32];

        proc_path(node_of(v, ino)->fd, pp);
        if (statvfs(pp, &s) < 0)
                fuse_reply_err(req, errno);
        else
                fuse_reply_statfs(req, &s);
}
