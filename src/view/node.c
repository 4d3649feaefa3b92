/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The nodes: what the kernel holds, by identity in a hash; pins of a node's
 * object for one request, references, and the bracketing of changes (busy,
 * the move under way).
 */
#include "view.h"

/* ---- nodes ---------------------------------------------------------------- */

static bool node_denotes(const Node *n, const struct stat *st, const FileBirth *birth);

/*
 * n opened by name from its parent's directory pfd with flags (which
 * include O_NOFOLLOW) and insisted on (device, inode number and
 * node_denotes(): a new object given a deleted one's number and name is
 * not it); by its other name when its name is gone or leads elsewhere,
 * which then becomes its name. -ESTALE when neither leads to it. With
 * v->lock held.
 */
int open_by_name(Node *n, int pfd, int flags, struct stat *ret_st) {
        if (n->stale)
                return -ESTALE;
        for (int i = 0; i < 2; i++) {
                const char *name = i == 0 ? n->name : n->alt_name;
                FileBirth birth;
                struct stat st;
                int fd;

                if (!name)
                        break;
                fd = openat(pfd, name, flags);
                if (fd < 0) {
                        if (errno != ENOENT && errno != ELOOP)
                                return -errno;
                        continue;
                }
                /* statx(), where fstat() would do, for the birth time: one syscall all the same. */
                if (stat_birth_at(fd, "", AT_EMPTY_PATH, &st, &birth) < 0 || st.st_dev != n->dev ||
                    st.st_ino != n->ino || !node_denotes(n, &st, &birth)) {
                        safe_close(fd);
                        continue;
                }
                if (i == 1) {
                        char *t = n->name;
                        n->name = n->alt_name;
                        n->alt_name = t;
                }
                if (ret_st)
                        *ret_st = st;
                return fd;
        }
        return -ESTALE;
}

/*
 * An O_PATH fd of n for one request: a directory's own (borrowed: *ret_owned
 * false), anything else opened again from its parent's directory on its
 * side, by name, without following it, and insisted on: -ESTALE when the
 * name now leads elsewhere. Opened by name, it returns 1 and, with ret_st,
 * the stat that the identity was checked on. With v->lock held.
 */
int pin_locked(View *v, Node *n, int *ret_fd, bool *ret_owned, struct stat *ret_st) {
        int pfd, fd;

        if (n->fd >= 0) {
                *ret_fd = n->fd;
                *ret_owned = false;
                return 0;
        }
        if (!n->parent)
                return -ESTALE;
        pfd = n->in_state ? state_parent(v, n) : n->parent->fd;
        if (pfd < 0)
                return -ESTALE;
        fd = open_by_name(n, pfd, O_PATH | O_NOFOLLOW | O_CLOEXEC, ret_st);
        if (fd < 0)
                return fd;
        *ret_fd = fd;
        *ret_owned = true;
        return 1;
}

/*
 * The attributes of n's object as they are now, without a descriptor: a
 * directory's through its own, anything else by name from its parent on
 * its side, insisted on as open_by_name() insists (its other name when
 * the first is gone or leads elsewhere). One statx() where a pin would
 * open, stat and close: what a GETATTR needs. With v->lock held.
 */
int stat_node_locked(View *v, Node *n, struct stat *ret) {
        int pfd;

        if (n->fd >= 0)
                return fstatat(n->fd, "", ret, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
        if (!n->parent || n->stale)
                return -ESTALE;
        pfd = n->in_state ? state_parent(v, n) : n->parent->fd;
        if (pfd < 0)
                return -ESTALE;
        for (int i = 0; i < 2; i++) {
                const char *name = i == 0 ? n->name : n->alt_name;
                FileBirth birth;
                struct stat st;
                int r;

                if (!name)
                        break;
                r = stat_birth_at(pfd, name, AT_SYMLINK_NOFOLLOW, &st, &birth);
                if (r < 0) {
                        if (r != -ENOENT)
                                return r;
                        continue;
                }
                if (st.st_dev != n->dev || st.st_ino != n->ino || !node_denotes(n, &st, &birth))
                        continue;
                if (i == 1) {
                        char *t = n->name;
                        n->name = n->alt_name;
                        n->alt_name = t;
                }
                *ret = st;
                return 0;
        }
        return -ESTALE;
}

void pin_done(Pin *p) {
        if (p->owned)
                safe_close(p->fd);
}

/* Pins n; for a change (busy), once no rename between the sides covers it, and busy_begin(n) with it. */
int pin_for(View *v, Node *n, Pin *ret, bool busy) {
        int r;

        pthread_mutex_lock(&v->lock);
        if (busy)
                wait_unmoved(v, n, NULL);
        r = pin_locked(v, n, &ret->fd, &ret->owned, &ret->st);
        if (r >= 0 && busy)
                busy_begin(n);
        pthread_mutex_unlock(&v->lock);
        ret->has_st = r > 0;
        return r < 0 ? r : 0;
}

int pin(View *v, Node *n, Pin *ret) {
        return pin_for(v, n, ret, false);
}

static void node_free(View *v, Node *n) {
        if (n->staging)
                object_staged_forget_locked(v, n);
        index_kept_drop_locked(v, n);
        index_last_drop_locked(v, n);
        if (n->wd >= 0)
                journal_unwatched_locked(v, n);
        watch_forget(v, n, true);
        safe_close(n->fd);
        safe_close(n->state_dirfd);
        safe_close(n->ign_mfd);
        safe_close(n->ign_efd);
        free(n->name);
        free(n->alt_name);
        free(n);
}

void unhash(View *v, Node *n) {
        for (Node **p = &v->hash[hash_of(n->dev, n->ino, n->in_state, n->cls)]; *p; p = &(*p)->hnext)
                if (*p == n) {
                        *p = n->hnext;
                        return;
                }
}

/* A node goes when the kernel forgot it and no node has it for a parent. With v->lock held. */
static void node_release(View *v, Node *n) {
        while (n && n != &v->root && n->nlookup == 0 && n->children == 0) {
                Node *parent = n->parent;

                unhash(v, n);
                node_free(v, n);
                if (parent)
                        parent->children--;
                n = parent;
        }
}

void set_parent(View *v, Node *n, Node *parent) {
        Node *old = n->parent;

        if (old == parent)
                return;
        parent->children++;
        n->parent = parent;
        if (old) {
                old->children--;
                node_release(v, old);
        }
}

void forget_one(View *v, Node *n, uint64_t count) {
        if (n == &v->root)
                return;
        n->nlookup = n->nlookup > count ? n->nlookup - count : 0;
        node_release(v, n);
}

/*
 * Whether n, found by the device and inode number of st, still stands for
 * that object (born at birth). A file the kernel still holds (gVisor
 * keeps the dentries of what it looked up, and so the kernel its inodes)
 * may be deleted on the host, and the host's file system then gives its
 * inode number to a new object: ext4 takes the lowest free one of a
 * group, so after a host `git repack -a -d` the next directory made
 * inside had the number of a pack that git inside had read. Taken for the
 * directory, the file's node, which holds no fd, answered lookups in it
 * with EBADF; taken for a new file, it read that file's data for a
 * descriptor the sandbox held on the deleted one. A node of another type,
 * or of another birth time, stands for a deleted object. The birth time
 * (statx's STATX_BTIME, taken where the view stats anyway) is recorded
 * when the node is made and again where the node is deliberately bound
 * to another object (copy_up(), node_rebind()); where the file system
 * keeps none, a file deleted and a file made with its number cannot be
 * told from a file renamed. (A directory's node is never deleted under
 * it: its fd keeps the number in use.) With v->lock held.
 */
static bool node_denotes(const Node *n, const struct stat *st, const FileBirth *birth) {
        return n->type == (st->st_mode & S_IFMT) && file_birth_same(&n->birth, birth);
}

/*
 * Enters n in the hash by its identity. Stale nodes of the same identity
 * stay there as long as the kernel holds them, and n's generation is one
 * more than theirs: the inode number the kernel is told (fill_stat())
 * differs from theirs. gVisor takes a name whose inode number did not
 * change for the object it knew (its revalidation compares device and
 * inode number), and would go on asking through the stale node. With
 * v->lock held.
 */
void node_hash(View *v, Node *n) {
        unsigned h = hash_of(n->dev, n->ino, n->in_state, n->cls);

        n->gen = 0;
        for (Node *m = v->hash[h]; m; m = m->hnext) {
                if (m == n || m->dev != n->dev || m->ino != n->ino || m->in_state != n->in_state || m->cls != n->cls)
                        continue;
                /* A node of another object with this number (n was bound to a copy the
                 * view made, which took a freed number: copy_up(), node_rebind()) is
                 * stale from now on, as node_get() finds it at a lookup. */
                if (!m->stale && (m->type != n->type || !file_birth_same(&m->birth, &n->birth)))
                        m->stale = true;
                if (m->stale && (uint8_t) (m->gen + 1) > n->gen)
                        n->gen = (uint8_t) (m->gen + 1);
        }
        n->hnext = v->hash[h];
        v->hash[h] = n;
}

/* Takes fd. With v->lock held. */
static Node *node_get(View *v, Node *dir, const char *name, ViewClass c, int fd, bool in_state, const struct stat *st,
                      const FileBirth *birth) {
        Node *n;

        for (n = v->hash[hash_of(st->st_dev, st->st_ino, in_state, c)]; n; n = n->hnext)
                if (!n->stale && n->dev == st->st_dev && n->ino == st->st_ino && n->in_state == in_state && n->cls == c) {
                        if (node_denotes(n, st, birth))
                                break;
                        /* Its object is gone: it lives on only for the kernel's
                         * references, whose requests fail as on a deleted object
                         * (ESTALE), and stays in the hash only for node_hash(). A new
                         * node stands for the new object. */
                        n->stale = true;
                }
        if (n) {
                safe_close(fd);
                if (n->parent != dir || !streq(n->name, name)) {
                        char *copy = strdup(name);
                        if (copy) {
                                /* A second name of a file in the same directory (a hard
                                 * link: git's objects are written as a temporary that is
                                 * linked to its name and then removed): the one it had is
                                 * kept, for when the newer one is removed first. */
                                free(n->alt_name);
                                n->alt_name = NULL;
                                if (n->parent == dir && !n->is_dir)
                                        n->alt_name = n->name;
                                else
                                        free(n->name);
                                n->name = copy;
                                set_parent(v, n, dir);
                        }
                }
                n->nlookup++;
                return n;
        }
        n = calloc(1, sizeof(*n));
        if (!n || !(n->name = strdup(name))) {
                free(n);
                safe_close(fd);
                return NULL;
        }
        n->is_dir = S_ISDIR(st->st_mode);
        /* index_adopt() looks only at a file made as an index's name, once (the hot GETATTR path takes no lock for others). */
        n->index_adopted = n->is_dir || !streq(name, "index");
        n->type = st->st_mode & S_IFMT;
        n->birth = *birth;
        n->fd = n->is_dir ? fd : safe_close(fd);
        n->in_state = in_state;
        n->cls = c;
        n->dev = st->st_dev;
        n->ino = st->st_ino;
        n->parent = dir;
        dir->children++;
        n->state_dirfd = in_state && n->is_dir ? fcntl(n->fd, F_DUPFD_CLOEXEC, 3) : -1;
        n->ign_mfd = n->ign_efd = -1;
        if (n->is_dir)
                n->dir = view_child_dir(&dir->dir, name, c);
        n->nlookup = 1;
        node_hash(v, n);
        watch_add(v, n);
        return n;
}

/* The attributes the kernel is told of n, whose host object's are st. */
void fill_stat(const Node *n, struct stat *st) {
        /* No set-ID program reaches the sandbox from the host either. A set-group-ID
         * directory stays one: gVisor must see it to make new directories the way
         * the host's kernel does (they inherit the bit). */
        st->st_mode &= ~(mode_t) (S_ISDIR(st->st_mode) ? S_ISUID : S_ISUID | S_ISGID);
        /* A new object with a number a stale node had: another number (node_hash()). */
        st->st_ino ^= (ino_t) n->gen << 56;
}

/*
 * The sandbox's own changes, for the host-edit relay (spec 4.6): the host
 * events of a node that a request changed, or of a name that one made,
 * removed or renamed, within WATCH_ECHO_WINDOW_MS are not relayed, as the
 * relay inside does not relay what gVisor saw changed inside.
 */
void note_changed(Node *n) {
        __atomic_store_n(&n->changed_ms, now_msec(), __ATOMIC_RELAXED);
}

bool changed_lately(const Node *n, uint64_t now) {
        uint64_t at = __atomic_load_n(&n->changed_ms, __ATOMIC_RELAXED);
        return at != 0 && now - at < WATCH_ECHO_WINDOW_MS;
}

static void own_name_key(View *v, Node *dir, const char *name, char buf[static NAME_MAX + 24]) {
        snprintf(buf, NAME_MAX + 24, "%" PRIx64 "/%s", (uint64_t) id_of(v, dir), name);
}

/* With v->lock held. */
void own_name_note(View *v, Node *dir, const char *name) {
        char key[NAME_MAX + 24];

        own_name_key(v, dir, name, key);
        watch_recent_note(&v->own_names, key, now_msec());
}

bool own_name_seen(View *v, Node *dir, const char *name, uint64_t now) {
        char key[NAME_MAX + 24];

        own_name_key(v, dir, name, key);
        return watch_recent_seen(&v->own_names, key, now, WATCH_ECHO_WINDOW_MS);
}

/*
 * Brackets a request's change of n on the host (of a directory: of its
 * entries) that is made outside v->lock: until busy_end(), after the
 * kernel's new view of n is recorded (told()), the watcher holds back the
 * events naming n, which are the change's own echo.
 */
void busy_begin(Node *n) {
        /* Atomic, not under v->lock: the hot path of every write takes no lock for it. */
        __atomic_add_fetch(&n->busy, 1, __ATOMIC_SEQ_CST);
}

/* Never with v->lock held: a move waiting for changes to end (move_begin()) is woken here. */
void busy_end(View *v, Node *n) {
        note_changed(n);
        __atomic_sub_fetch(&n->busy, 1, __ATOMIC_SEQ_CST);
        /* After the count, as move_begin() sets v->moving before it counts: one of the two sees the other. */
        if (__atomic_load_n(&v->moving, __ATOMIC_SEQ_CST)) {
                pthread_mutex_lock(&v->lock);
                pthread_cond_broadcast(&v->moved);
                pthread_mutex_unlock(&v->lock);
        }
}

/* Whether n is the source of the rename between the sides under way, or lies below it. With v->lock held. */
bool move_covers(View *v, const Node *n) {
        if (!v->moving)
                return false;
        for (; n; n = n->parent)
                if (n == v->moving)
                        return true;
        return false;
}

/*
 * Before a request changes a or b (NULL: none) on the host or in Domain
 * state, outside v->lock or not: it waits while the rename between the
 * sides under way covers either, so that nothing changes below a source
 * between the check of what may move and the end of the move. With
 * v->lock held, which the wait releases.
 */
void wait_unmoved(View *v, const Node *a, const Node *b) {
        while (move_covers(v, a) || move_covers(v, b))
                pthread_cond_wait(&v->moved, &v->lock);
}

/* Records what the kernel is about to be told of n. With v->lock held. */
void told(Node *n, const struct stat *st) {
        n->told_valid = !n->in_state;
        n->told_mode = st->st_mode;
        n->told_size = st->st_size;
        n->told_mtime = st->st_mtim;
        n->told_ctime = st->st_ctim;
}

bool told_matches(const Node *n, const struct stat *st) {
        return n->told_valid && n->dev == st->st_dev && n->ino == st->st_ino && n->told_mode == st->st_mode &&
               n->told_size == st->st_size && n->told_mtime.tv_sec == st->st_mtim.tv_sec &&
               n->told_mtime.tv_nsec == st->st_mtim.tv_nsec && n->told_ctime.tv_sec == st->st_ctim.tv_sec &&
               n->told_ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/*
 * The entry of a file a CREATE just made as name in dir, on the side of
 * class c (create_side()), through fd, its descriptor: what find() would
 * find by name, without judging the name's side a second time and without
 * going back to it by name. With v->lock held.
 */
int lookup_made_locked(View *v, Node *dir, const char *name, ViewClass c, int fd, struct fuse_entry_param *e) {
        FileBirth birth = {};
        Node *n;
        int r;

        /* Where find() has rules of its own (a ".git" of the work tree), it decides. */
        if (streq(name, ".git"))
                return lookup_locked(v, dir, name, e);
        memset(e, 0, sizeof(*e));
        r = stat_birth_at(fd, "", AT_EMPTY_PATH, &e->attr, &birth);
        if (r < 0)
                return r;
        /* As find() places it: protected and ignored names in Domain state, others on the host. */
        n = node_get(v, dir, name, c, -EBADF, c == VIEW_PROTECTED || c == VIEW_IGNORED, &e->attr, &birth);
        if (!n)
                return -ENOMEM;
        told(n, &e->attr);
        index_kept_attr_locked(v, n, &e->attr);
        fill_stat(n, &e->attr);
        e->ino = id_of(v, n);
        e->attr_timeout = e->entry_timeout = timeout_in(v, dir);
        return 0;
}

int lookup_locked(View *v, Node *dir, const char *name, struct fuse_entry_param *e) {
        bool in_state = false;
        ViewClass c = VIEW_SHARED;
        FileBirth birth = {};
        int fd = -EBADF, r;
        Node *n;

        memset(e, 0, sizeof(*e));
        r = find(v, dir, name, &c, &fd, &in_state, &e->attr, &birth);
        if (r < 0)
                return r;
        n = node_get(v, dir, name, c, fd, in_state, &e->attr, &birth);
        if (!n)
                return -ENOMEM;
        told(n, &e->attr);
        index_kept_attr_locked(v, n, &e->attr);
        fill_stat(n, &e->attr);
        e->ino = id_of(v, n);
        e->attr_timeout = e->entry_timeout = timeout_in(v, dir);
        return 0;
}
