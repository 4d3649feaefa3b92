/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Moves between the sides: copy-up of a protected node, renames between
 * ignored state and the host's side, tracked files leaving ignored state,
 * and RENAME itself.
 */
#include "view.h"

/* ---- copy-up ------------------------------------------------------------- */

/*
 * What the host's file was when it was copied up, on the copy
 * (VIEW_BASE_XATTR, "size mtime-seconds mtime-nanoseconds"): an apply of
 * the sandbox's version refuses when the host's changed since.
 */
static void record_base(int fd, const struct stat *st) {
        char buf[96];
        int n = snprintf(buf, sizeof(buf), "%lld %lld %ld", (long long) st->st_size, (long long) st->st_mtim.tv_sec,
                         (long) st->st_mtim.tv_nsec);

        (void) fsetxattr(fd, VIEW_BASE_XATTR, buf, (size_t) n, 0);
}

/*
 * A protected node still backed by the host's object moves to Domain
 * state before its first change: a copy (a directory: an empty one, its
 * entries stay merged), made under a temporary name and renamed into
 * place. The node keeps its identity for the kernel. With v->lock held.
 */
static int copy_up(View *v, Node *n) {
        _cleanup_(pin_done) Pin p = {};
        char tmp[64], pp[32];
        struct stat st, nst;
        FileBirth birth;
        int sfd, r;

        if (n->cls != VIEW_PROTECTED || n->in_state)
                return 0;
        if (!n->parent)
                return -EPERM;
        if (n->is_dir) {
                /* A directory of the host's stays merged: its Domain state directory is made. */
                r = state_dir(v, n, true);
                return r < 0 ? r : 0;
        }
        sfd = state_dir(v, n->parent, true);
        if (sfd < 0)
                return sfd;
        r = pin_locked(v, n, &p.fd, &p.owned, NULL);
        if (r < 0)
                return r;
        if (fstatat(p.fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        snprintf(tmp, sizeof(tmp), ".lazaret-copy-up.%d.%lu", getpid(), (unsigned long) pthread_self());
        (void) unlinkat(sfd, tmp, 0);
        if (S_ISLNK(st.st_mode)) {
                char target[VIEW_PATH_MAX];
                ssize_t k = readlinkat(p.fd, "", target, sizeof(target) - 1);
                if (k < 0)
                        return -errno;
                target[k] = 0;
                if (symlinkat(target, sfd, tmp) < 0)
                        return -errno;
        } else if (S_ISREG(st.st_mode)) {
                _cleanup_close_ int from = -EBADF, to = -EBADF;

                proc_path(p.fd, pp);
                from = open(pp, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (from < 0)
                        return -errno;
                to = openat(sfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, st.st_mode & 0755);
                if (to < 0)
                        return -errno;
                r = copy_fd(from, to);
                if (r >= 0)
                        record_base(to, &st);
                if (r >= 0 && fsync(to) < 0)
                        r = -errno;
                if (r < 0) {
                        (void) unlinkat(sfd, tmp, 0);
                        return r;
                }
        } else
                return -EPERM;
        if (renameat(sfd, tmp, sfd, n->name) < 0) {
                r = -errno;
                (void) unlinkat(sfd, tmp, 0);
                return r;
        }
        r = stat_birth_at(sfd, n->name, AT_SYMLINK_NOFOLLOW, &nst, &birth);
        if (r < 0)
                return r;

        /* The node now stands for the copy, born now; it keeps its identity for the kernel. */
        inval_later(v, n, NULL);
        unhash(v, n);
        n->in_state = true;
        n->dev = nst.st_dev;
        n->ino = nst.st_ino;
        n->birth = birth;
        node_hash(v, n);
        return 0;
}

/*
 * The side a change to n goes to: -EROFS for a read-only node; a protected
 * one is copied up. 1: a protected directory of the host's, whose own
 * attributes stay the host's (the change is accepted and has no effect).
 */
int prepare_change(View *v, Node *n) {
        int r;

        if (n->cls == VIEW_READONLY)
                return -EROFS;
        pthread_mutex_lock(&v->lock);
        r = copy_up(v, n);
        pthread_mutex_unlock(&v->lock);
        if (r >= 0 && n->cls == VIEW_PROTECTED && n->is_dir && !n->in_state)
                return 1;
        return r;
}

/* ---- renames between the ignored side and the host's ----------------------- */

#define COPY_DEPTH_MAX 128

/* Copies from/fname to to/tname (a new name): files, symbolic links and directories, modes as create_mode() makes them. */
static int copy_tree(int from, const char *fname, int to, const char *tname) {
        int r = copy_tree_at(from, fname, to, tname, COPY_DEPTH_MAX, 0, NULL);

        return r == -EOPNOTSUPP ? -EPERM : r;   /* no FIFO or device is made through the view */
}

/*
 * The nodes below directory n, which moved to the other side: they keep
 * reaching their objects by name for the kernel's open files, but what
 * they say of their side is stale. The kernel is to look their names up
 * again (a best effort: the pipe may fill), which makes new nodes: these
 * leave the hash (a rename keeps the inodes, and a move back must not
 * find them), and their host watches go.
 */
static void inval_below(View *v, Node *n) {
        for (size_t b = 0; b < HASH_SIZE; b++)
                for (Node *m = v->hash[b], *next; m; m = next) {
                        next = m->hnext;
                        for (Node *p = m->parent; p && p != &v->root; p = p->parent)
                                if (p == n) {
                                        inval_later(v, m->parent, m->name);
                                        unhash(v, m);
                                        if (m->is_dir)
                                                watch_forget(v, m, true);
                                        break;
                                }
                }
}

#define MOVE_CHECK_MAX 1000000u    /* entries a tree's check looks at before it answers "cannot tell" */

/*
 * Whether the directory dfd/name, about to leave ignored state for rel
 * (workspace-relative) in a host directory whose rule is d, holds only
 * what would be shared there: what the rule keeps in Domain state (a git
 * dir's control name or hooks, a HEAD outside the places git makes git
 * dirs, a .git that is not a directory, a protected name or path) would
 * otherwise reach the host whole, by the rename or the copy, where host
 * git and host tools read it. Judged as if each entry were made there
 * now through the view, in a directory where the host has nothing. 1:
 * all shared; 0: not, or too deep or too many entries to tell (*budget);
 * -errno.
 */
static int tree_lands_shared(View *v, int dfd, const char *name, const ViewDir *d, const char *rel, unsigned depth,
                             unsigned *budget) {
        _cleanup_(closedirp) DIR *dir = NULL;
        ViewFacts f = {};
        struct dirent *de;
        int fd;

        if (depth >= COPY_DEPTH_MAX)
                return 0;
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        dir = fdopendir(fd);
        if (!dir) {
                safe_close(fd);
                return -errno;
        }
        /* Its facts, with nothing of the host's there: what HEAD it brings. */
        while ((de = readdir(dir)))
                f.holds_head = f.holds_head || streq(de->d_name, "HEAD");
        rewinddir(dir);
        while ((de = readdir(dir))) {
                char sub[VIEW_PATH_MAX], hex[VIEW_OBJECT_HEX_MAX];
                struct stat st;
                bool is_dir;
                ViewClass c;
                int r;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (*budget == 0)
                        return 0;
                (*budget)--;
                if (de->d_type == DT_UNKNOWN) {
                        if (fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                return -errno;
                        is_dir = S_ISDIR(st.st_mode);
                } else
                        is_dir = de->d_type == DT_DIR;
                if ((size_t) snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >= sizeof(sub))
                        return 0;
                c = view_name_class(d, &f, de->d_name, is_dir, view_listed(&v->lists, d, sub, de->d_name));
                if (c != VIEW_SHARED)
                        return 0;
                /* An object's file lands only checked: mv's copy stages it (object-guard.c). */
                if (!is_dir && view_object_kind(d, de->d_name, hex) != VIEW_OBJECT_NONE)
                        return 0;
                if (is_dir) {
                        ViewDir child = view_child_dir(d, de->d_name, c);
                        r = tree_lands_shared(v, dirfd(dir), de->d_name, &child, sub, depth + 1, budget);
                        if (r <= 0)
                                return r;
                }
        }
        return 1;
}

/* Whether a request is changing the moving source or anything below it now (busy_begin()). With v->lock held. */
static bool move_busy(View *v) {
        for (size_t b = 0; b < HASH_SIZE; b++)
                for (Node *m = v->hash[b]; m; m = m->hnext)
                        if (__atomic_load_n(&m->busy, __ATOMIC_SEQ_CST) > 0 && move_covers(v, m))
                                return true;
        return false;
}

/* Whether the view's Domain state holds anything at or below name in host directory dir (or the path is too long to tell). */
static bool state_below(View *v, Node *dir, const char *name) {
        char rel[VIEW_PATH_MAX];
        struct stat st;

        return node_relpath(v, dir, name, rel, sizeof(rel)) < 0 || fstatat(v->state_fd, rel, &st, AT_SYMLINK_NOFOLLOW) >= 0;
}

/*
 * The move of n begins (v->moving): requests that would change n or what
 * lies below it wait from now on, and those under way end first (each
 * busy_end() wakes it while a move is set). -EAGAIN while another move
 * holds it. With v->lock held, which the wait releases.
 */
int move_begin(View *v, Node *n) {
        if (v->moving)
                return -EAGAIN;
        __atomic_store_n(&v->moving, n, __ATOMIC_SEQ_CST);
        while (move_busy(v))
                pthread_cond_wait(&v->moved, &v->lock);
        return 0;
}

void move_end(View *v) {
        __atomic_store_n(&v->moving, NULL, __ATOMIC_SEQ_CST);
        pthread_cond_broadcast(&v->moved);
}

/*
 * A rename between ignored state and the host's side (SR-13: not EXDEV,
 * which would make mv copy file by file through the view, but where what
 * moves whole would break the rule: a directory out of ignored state that
 * holds what the rule keeps off the host, or a host directory with
 * protected Domain state below it; mv then copies it through the view,
 * which puts each entry on its side). Where Domain
 * state and the workspace are one file system, it is one rename(2) there:
 * what was created through the view keeps its modes and owner wherever it
 * lies. Elsewhere, a copy under a temporary name on the target's side,
 * renamed into place atomically, then the source removed, as mv does
 * across file systems. n, the source's node, stands for the result from
 * then on. With v->lock held; a copy and its removal run without it, so
 * that the view's watcher and its other requests go on (inside, gVisor
 * holds its own path walks and file I/O on the mount while its rename is
 * under way, so the sandbox waits anyway). Meanwhile the kernel keeps
 * every other request for the two directories and for a moving file (the
 * rename holds their inode locks); what it does not hold, a change below
 * a moving directory, waits in wait_unmoved(), and changes under way there
 * end before the check and the move begin. One move at a time (v->moving):
 * -EAGAIN while another runs.
 */
static int node_rebind(View *v, Node *n, Node *to, const char *newname, int tfd, ViewClass tc);
static int rename_across(View *v, Node *from, const char *name, Node *n, Node *to, const char *newname, int tfd, ViewClass tc,
                         unsigned flags) {
        _cleanup_close_ int sdup = -EBADF, tdup = -EBADF;
        char tmp[64];
        int sfd, r;

        if (flags & ~(unsigned) RENAME_NOREPLACE)
                return -EINVAL;
        sfd = n->in_state ? state_parent(v, n) : from->fd;
        if (sfd < 0)
                return sfd;
        /* Its own fds of the two directories: the nodes' may be replaced while it waits or copies without v->lock. */
        sdup = fcntl(sfd, F_DUPFD_CLOEXEC, 3);
        tdup = fcntl(tfd, F_DUPFD_CLOEXEC, 3);
        if (sdup < 0 || tdup < 0)
                return -errno;
        /* From here to its end nothing below the source changes: what the checks saw is what moves. */
        r = move_begin(v, n);
        if (r < 0)
                return r;
        if (n->is_dir && !n->in_state && state_below(v, from, name)) {
                /* A host directory that something protected lies below stays where
                 * it is, as on its own side (its Domain state would be left behind). */
                move_end(v);
                return -EXDEV;
        }
        if (n->is_dir && tc == VIEW_SHARED) {
                /* Out of ignored state: only a tree that is all shared there moves
                 * whole. */
                ViewDir d = view_child_dir(&to->dir, newname, tc);
                char rel[VIEW_PATH_MAX];
                unsigned budget = MOVE_CHECK_MAX;

                r = node_relpath(v, to, newname, rel, sizeof(rel));
                if (r >= 0)
                        r = tree_lands_shared(v, sdup, name, &d, rel, 0, &budget);
                if (r <= 0) {
                        move_end(v);
                        return r < 0 ? r : -EXDEV;
                }
        }
        if (syscall(SYS_renameat2, sdup, name, tdup, newname, flags) >= 0) {
                r = node_rebind(v, n, to, newname, tdup, tc);
                move_end(v);
                return r;
        }
        if (errno != EXDEV) {
                r = -errno;
                move_end(v);
                return r;
        }
        pthread_mutex_unlock(&v->lock);

        snprintf(tmp, sizeof(tmp), RENAME_TMP_PREFIX "%d.%lu", getpid(), (unsigned long) pthread_self());
        (void) rm_rf_at(tdup, tmp);
        r = copy_tree(sdup, name, tdup, tmp);
        if (r >= 0 && syscall(SYS_renameat2, tdup, tmp, tdup, newname, flags) < 0)
                r = -errno;
        if (r < 0)
                (void) rm_rf_at(tdup, tmp);
        else
                r = rm_rf_at(sdup, name);

        pthread_mutex_lock(&v->lock);
        if (r >= 0)
                r = node_rebind(v, n, to, newname, tdup, tc);
        move_end(v);
        return r;
}

/*
 * n now stands for newname in to (tfd: its directory on side tc), what it
 * was or a copy of it; it keeps its identity for the kernel.
 */
static int node_rebind(View *v, Node *n, Node *to, const char *newname, int tfd, ViewClass tc) {
        FileBirth birth;
        struct stat st;
        int r;

        r = stat_birth_at(tfd, newname, AT_SYMLINK_NOFOLLOW, &st, &birth);
        if (r < 0)
                return r;
        inval_later(v, n, NULL);
        if (n->is_dir)
                inval_below(v, n);
        unhash(v, n);
        if (n->is_dir) {
                int fd = openat(tfd, newname, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                watch_forget(v, n, true);
                safe_close(n->fd);
                n->state_dirfd = safe_close(n->state_dirfd);
                n->ign_mfd = safe_close(n->ign_mfd);
                n->ign_efd = safe_close(n->ign_efd);
                n->ign_absent = false;
                n->fd = fd;
        }
        n->cls = tc;
        n->in_state = tc == VIEW_IGNORED;
        n->dev = st.st_dev;
        n->ino = st.st_ino;
        n->birth = birth;       /* a copy's is new */
        if (n->is_dir) {
                n->dir = view_child_dir(&to->dir, newname, tc);
                if (n->in_state)
                        n->state_dirfd = fcntl(n->fd, F_DUPFD_CLOEXEC, 3);
                else
                        watch_add(v, n);
        }
        node_hash(v, n);
        return 0;
}

/*
 * A file in ignored state that the index now names (a `git checkout`
 * inside creates a file before it writes the index that tracks it) goes
 * to the host's side, where tracked files live: copied under a temporary
 * name, renamed into place only if the host has no such name, then
 * removed from ignored state. 1: moved. With v->lock held.
 */
int ign_promote(View *v, Node *dir, const char *name) {
        char tmp[64];
        struct stat st;
        int efd = ign_entries(v, dir, false), r;

        if (efd < 0 || dir->in_state || fstatat(efd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode) ||
            fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                return 0;
        snprintf(tmp, sizeof(tmp), RENAME_TMP_PREFIX "%d.%lu", getpid(), (unsigned long) pthread_self());
        (void) rm_rf_at(dir->fd, tmp);
        r = copy_tree(efd, name, dir->fd, tmp);
        if (r >= 0 && syscall(SYS_renameat2, dir->fd, tmp, dir->fd, name, RENAME_NOREPLACE) < 0)
                r = -errno;
        if (r < 0) {
                (void) rm_rf_at(dir->fd, tmp);
                return r;
        }
        (void) unlinkat(efd, name, 0);
        own_name_note(v, dir, name);
        return 1;
}

/* After the index changed: the files the kernel holds from ignored state that it now tracks go to the host's side. */
void ign_promote_tracked(View *v) {
        v->ign.checked_ns = 0;
        ign_refresh(v);
        if (!v->ign.index)
                return;
        for (size_t b = 0; b < HASH_SIZE; b++)
                for (Node *m = v->hash[b], *next; m; m = next) {
                        char rel[VIEW_PATH_MAX];

                        next = m->hnext;
                        if (m->stale || m->cls != VIEW_IGNORED || !m->in_state || m->is_dir || !m->parent || m->parent->in_state ||
                            move_covers(v, m) ||
                            node_relpath(v, m->parent, m->name, rel, sizeof(rel)) < 0 ||
                            !git_index_is_tracked(v->ign.index, rel))
                                continue;
                        if (ign_promote(v, m->parent, m->name) > 0) {
                                (void) node_rebind(v, m, m->parent, m->name, m->parent->fd, VIEW_SHARED);
                                inval_later(v, m->parent, m->name);
                        }
                }
}

/* After a host directory moved: its ignored state moves with it (best effort: left behind, it stays reachable at the old name). */
static void ign_follow_rename(View *v, Node *from, const char *name, Node *to, const char *newname) {
        _cleanup_close_ int fsub = -EBADF, tsub = -EBADF;
        struct stat st;
        int fm, tm;

        if (!v->ign.on || (fm = ign_mirror(v, from, false)) < 0 ||
            (fsub = openat(fm, "d", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
            fstatat(fsub, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        tm = ign_mirror(v, to, true);
        if (tm < 0 || (mkdirat(tm, "d", 0700) < 0 && errno != EEXIST) ||
            (tsub = openat(tm, "d", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                return;
        (void) renameat(fsub, name, tsub, newname);
}

/*
 * Where a rename of n (name in from) to newname in to may go: the fd of the
 * target directory on newname's side (*ret_tc), or -errno for a rename
 * that is refused. With v->lock held.
 */
static int rename_target(View *v, Node *from, const char *name, Node *n, Node *to, const char *newname,
                         ViewClass *ret_tc) {
        int tfd;

        if (n->cls == VIEW_READONLY || (from == &v->root && streq(name, ".git") && !from->in_state))
                return n->cls == VIEW_READONLY ? -EROFS : -EBUSY;
        if (holds_listed(v, from, name) || holds_listed(v, to, newname))
                /* A protected path's parent stays where it is, and nothing takes its place. */
                return -EBUSY;
        tfd = create_side(v, to, newname, n->is_dir, ret_tc);
        if (tfd == -EEXIST) {
                /* Replacing an entry of the host's that is protected: on its side. */
                tfd = state_dir(v, to, true);
                *ret_tc = VIEW_PROTECTED;
        }
        if (tfd < 0)
                return tfd;
        if (n->cls == VIEW_PROTECTED && n->is_dir && !n->in_state)
                return -EBUSY;
        return tfd;
}

/* Whether a rename of n (in from) to side tc moves it between ignored state and the host's side (rename_across()). */
static bool rename_crosses(const Node *from, const Node *n, ViewClass tc) {
        return n->cls != tc && (n->cls == VIEW_IGNORED || tc == VIEW_IGNORED) && n->cls != VIEW_PROTECTED &&
               tc != VIEW_PROTECTED && !(n->cls == VIEW_SHARED && n->is_dir && from->dir.zone != VIEW_ZONE_WORK);
}

/*
 * A rename of n that stays on its side (tc, whose target directory is
 * tfd): on the host, in ignored state or in Domain state. With v->lock
 * held.
 */
static int rename_within(View *v, Node *from, const char *name, Node *n, Node *to, const char *newname, int tfd,
                         ViewClass tc, unsigned flags) {
        int r, sfd;

        if (n->cls != tc)
                /* Across the sides: mv copies; git never renames so. */
                return -EXDEV;
        if (tc == VIEW_SHARED) {
                if (n->is_dir) {
                        ViewDir a = view_child_dir(&from->dir, name, n->cls), b = view_child_dir(&to->dir, newname, tc);

                        /* A directory that something protected lies below stays where it
                         * is (its Domain state would be left behind), and so does one that
                         * would change what git may take it for. */
                        if (state_below(v, from, name) || !view_dir_equal(&a, &b))
                                return -EXDEV;
                }
                if (syscall(SYS_renameat2, from->fd, name, to->fd, newname, flags) < 0)
                        return -errno;
                if (n->is_dir)
                        ign_follow_rename(v, from, name, to, newname);
                return 0;
        }
        if (tc == VIEW_IGNORED) {
                /* Both ignored: within ignored state. */
                sfd = state_parent(v, n);
                if (sfd < 0)
                        return sfd;
                return syscall(SYS_renameat2, sfd, name, tfd, newname, flags) < 0 ? -errno : 0;
        }
        /* Both protected: in Domain state. A directory the host has stays
         * where it is: EBUSY, as for a mount point, so that mv does not
         * fall back to copying and deleting it. */
        if (n->is_dir && !n->in_state)
                return -EBUSY;
        r = copy_up(v, n);
        if (r < 0)
                return r;
        sfd = state_dir(v, from, true);
        if (sfd < 0)
                return sfd;
        if (syscall(SYS_renameat2, sfd, name, tfd, newname, flags) < 0)
                return -errno;
        if (!from->in_state && host_has(from, name))
                return make_whiteout(sfd, name);
        return 0;
}

/*
 * A rename of n (name in from) onto the index that dir holds (index_name()):
 * the new file is read whole and judged (index_judge()), and what was
 * judged is what lands: the view writes what it judged (less the cached
 * trees) into that same file, then renames it onto index. Writes, links
 * and truncation of n wait from the judging on (v->moving, as for a move
 * between the sides) and are refused once it is the index
 * (guard_check_node()); a file with another name (a hard link) is
 * refused. The file keeps its identity: the kernel's node for it is not
 * bound to another object, whose inode number might be one the kernel
 * still holds for a deleted file. The caches left out are kept for the
 * sandbox, which reads the file with them while it is the one landed
 * (index_keep_locked()). With v->lock held, released while the
 * file is read, judged and written.
 */
static int rename_index(View *v, Node *from, const char *name, Node *n, Node *to, unsigned flags) {
        _cleanup_(pin_done) Pin p = {};
        _cleanup_(index_judge_done) IndexJudge j = { .dirfd = -EBADF };
        _cleanup_free_ char *data = NULL, *why = NULL, *judged = NULL;
        _cleanup_git_index_kept_ GitIndexKept *kept = NULL;
        _cleanup_git_index_ GitIndex *landed = NULL;
        _cleanup_close_ int fd = -EBADF;
        GitHashAlgo algo = GIT_HASH_SHA1;
        char pp[32];
        struct stat st = {};
        size_t size = 0, judged_size = 0;
        int r;

        if ((flags & ~(unsigned) RENAME_NOREPLACE) || n->is_dir || n->cls != VIEW_SHARED || n->in_state)
                return index_refuse_locked(v, to, "index", "a rename of this kind onto");
        r = move_begin(v, n);
        if (r < 0)
                return r;
        r = pin_locked(v, n, &p.fd, &p.owned, NULL);
        if (r >= 0)
                r = index_judge_prepare(v, to, &j);
        pthread_mutex_unlock(&v->lock);

        if (r >= 0) {
                proc_path(p.fd, pp);
                fd = open(pp, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                r = fd < 0 || fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EPERM;
        }
        if (r >= 0 && st.st_nlink != 1)
                r = asprintf(&why, "it has %ju names", (uintmax_t) st.st_nlink) < 0 ? -ENOMEM : -EPERM;
        if (r >= 0) {
                r = read_full_fd(fd, GIT_INDEX_SIZE_MAX, &data, &size);
                if (r == -EFBIG)
                        r = asprintf(&why, "it is larger than %u bytes", GIT_INDEX_SIZE_MAX) < 0 ? -ENOMEM : -EPERM;
        }
        if (r >= 0)
                r = index_judge(&j, data, size, &judged, &judged_size, &kept, &landed, &algo, &why);
        if (r >= 0 && judged) {
                /* The cached trees left out, in the file itself. */
                r = lseek(fd, 0, SEEK_SET) < 0 ? -errno : write_all(fd, judged, judged_size);
                if (r >= 0 && ftruncate(fd, (off_t) judged_size) < 0)
                        r = -errno;
        }

        pthread_mutex_lock(&v->lock);
        if (r >= 0) {
                struct stat now;

                /* The name still leads to the file judged (the host may have changed it meanwhile). */
                if (fstatat(from->fd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != st.st_dev ||
                    now.st_ino != st.st_ino)
                        r = -ESTALE;
                else if (syscall(SYS_renameat2, from->fd, name, j.dirfd, "index", flags) < 0)
                        r = -errno;
                else {
                        /* What was left out, for the sandbox alone: keyed by the landed file as the rename left it;
                         * and its entries, untracked cache and token, for a host index with the same entries. */
                        index_keep_locked(v, n, TAKE_PTR(kept), fd);
                        index_last_set_locked(v, to, landed, algo, data, size);
                }
        }
        if (judged)
                inval_later(v, n, NULL);        /* what the kernel cached of the file is not what landed */
        move_end(v);
        if (why) {
                _cleanup_free_ char *shown = NULL;
                char rel[VIEW_PATH_MAX];

                if (node_relpath(v, to, "index", rel, sizeof(rel)) < 0)
                        snprintf(rel, sizeof(rel), "index");
                fprintf(stderr, "lazaret-view: refused the sandbox's new %s%s: %s\n", v->git_dir ? "git dir's " : "",
                        rel, why);
                r = -EPERM;
        }
        return r;
}

/* After n moved from name in from to newname in to. With v->lock held. */
static void rename_record(View *v, Node *from, const char *name, Node *n, Node *to, const char *newname) {
        /* The node is now found at its new place (its path matters below it). */
        char *copy = strdup(newname);

        if (copy) {
                free(n->name);
                n->name = copy;
                n->alt_name = mfree(n->alt_name);
                set_parent(v, n, to);
        }
        own_name_note(v, from, name);
        own_name_note(v, to, newname);
        note_changed(n);
        inval_facts(v, from, name);
        inval_facts(v, to, newname);
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
               unsigned int flags) {
        View *v = fuse_req_userdata(req);
        Node *from = node_of(v, parent), *to = node_of(v, newparent), *n = NULL;
        struct fuse_entry_param e;
        char hex[VIEW_OBJECT_HEX_MAX];
        ViewObjectKind kind;
        ViewClass tc;
        int r, tfd;

        pthread_mutex_lock(&v->lock);
again:
        /* Nothing below a source of a rename between the sides under way moves, and nothing moves into it. */
        wait_unmoved(v, from, to);
        r = lookup_locked(v, from, name, &e);
        if (r < 0)
                goto finish;
        n = node_of(v, e.ino);
        if (move_covers(v, n)) {
                forget_one(v, n, 1);
                n = NULL;
                wait_unmoved(v, from, to);
                goto again;
        }
        if ((flags & RENAME_EXCHANGE) && (index_name(from, name) || index_name(to, newname))) {
                r = index_refuse_locked(v, to, newname, "an exchange with");
                goto finish;
        }
        if ((flags & RENAME_EXCHANGE) && object_name(from, name, hex) != VIEW_OBJECT_NONE) {
                r = object_refuse_locked(v, from, name, "an exchange with");
                goto finish;
        }
        r = tfd = rename_target(v, from, name, n, to, newname, &tc);
        if (r < 0)
                goto finish;
        kind = object_name(to, newname, hex);
        if (kind != VIEW_OBJECT_NONE && tc == VIEW_SHARED) {
                /* An object's, a pack's or an index's name: checked (issue 32). */
                r = object_rename(v, from, name, n, to, newname, kind, hex, flags);
                if (r == -EAGAIN) {
                        forget_one(v, n, 1);
                        n = NULL;
                        pthread_cond_wait(&v->moved, &v->lock);
                        goto again;
                }
        } else if (index_name(to, newname)) {
                /* The host's index: judged (issue 32 item 3). */
                r = rename_index(v, from, name, n, to, flags);
                if (r == -EAGAIN) {
                        forget_one(v, n, 1);
                        n = NULL;
                        pthread_cond_wait(&v->moved, &v->lock);
                        goto again;
                }
        } else if (rename_crosses(from, n, tc)) {
                r = rename_across(v, from, name, n, to, newname, tfd, tc, flags);
                if (r == -EAGAIN) {
                        /* One move at a time: another one, in other directories, is running. */
                        forget_one(v, n, 1);
                        n = NULL;
                        pthread_cond_wait(&v->moved, &v->lock);
                        goto again;
                }
        } else
                r = rename_within(v, from, name, n, to, newname, tfd, tc, flags);
        if (r >= 0) {
                /* A directory moved, or exchanged: everything below both names. */
                char type = n->is_dir || (flags & RENAME_EXCHANGE) ? 'd' : 'f';

                journal_name_locked(v, from, name, type);
                journal_name_locked(v, to, newname, type);
                rename_record(v, from, name, n, to, newname);
                r = 0;
        }
finish:
        if (n)
                forget_one(v, n, 1);
        pthread_mutex_unlock(&v->lock);
        fuse_reply_err(req, -r);
}
