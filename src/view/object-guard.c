/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host's object stores (issue 32): what is filed under an object's
 * name is that object. The object store is shared, and the host's git
 * reads a loose object, or an object of a pack through the pack's index,
 * by its name without hashing what it reads: a file under a commit's name
 * that holds another commit, or an index that files another object's
 * bytes under a name, would make a host checkout, merge or reset write
 * another tree than the commit names, unseen by the report of commits made
 * inside.
 *
 * git puts such a file in place only by renaming (or linking) a finished
 * temporary file onto its name: objects/xx/tmp_obj_* onto objects/xx/<rest>,
 * a pack's tmp_pack_*, tmp_idx_* or .tmp-*-pack-* onto
 * objects/pack/pack-<hash>.{pack,idx}. The view checks each such rename
 * on the host's side (moves.c, op_rename()) before it makes it: a loose
 * object must inflate to "<type> <size>\0<content>" whose hash is its name;
 * a pack's trailing checksum must be the hash of its bytes and its name,
 * so that a pack of that name can only ever hold those bytes; an index
 * must list each object of the pack it names at its offset under its
 * hash, every object inflated and its deltas resolved (git-object.h). A
 * link onto such a name is refused with EPERM, which makes git fall back
 * to a rename; creating one, writing, truncating or linking one in place
 * is refused outright (objects are immutable; git never does those).
 * Refusals are one line on the view's standard error, which the
 * supervisor passes to the Domain's journal; git inside says "unable to
 * write file" or "insufficient permission".
 */
#include "view.h"

#include "git-object.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

/* A file staged under an object's name (the copies, below). */
typedef struct Staging {
        struct Staging *next;
        Node *dir, *node;
        ViewObjectKind kind;
        char hex[VIEW_OBJECT_HEX_MAX];
        char name[NAME_MAX + 1];        /* the object's name */
        char tmp[64];                   /* the file's name until then */
        int rfd;                        /* the file, for reading what was written */
        GitObjectStream *stream;
        bool unordered;                 /* a write not at the end of what was fed, or a truncation */
        bool waiting;                   /* an index, whole, whose pack is not there yet */
        bool checking;                  /* its index check runs, without v->lock */
        bool retry;                     /* an index its pack's landing is to check (staging_land_waiting()) */
        unsigned changing;              /* writes and truncations guard_check_node() let through, not yet fed */
} Staging;

ViewObjectKind object_name(const Node *dir, const char *name, char *ret_hex) {
        if (!dir || !dir->is_dir || dir->in_state)
                return VIEW_OBJECT_NONE;
        return view_object_kind(&dir->dir, name, ret_hex);
}

static const char *kind_what(ViewObjectKind k) {
        return k == VIEW_OBJECT_LOOSE ? "object" : k == VIEW_OBJECT_PACK ? "pack" : "pack index";
}

static void refusal(View *v, Node *dir, const char *name, const char *what, const char *why) {
        char rel[VIEW_PATH_MAX];

        if (node_relpath(v, dir, name, rel, sizeof(rel)) < 0)
                snprintf(rel, sizeof(rel), "%s", name);
        fprintf(stderr, "lazaret-view: refused %s %s%s: %s (the host's git reads it by its name, unchecked)\n", what,
                v->git_dir ? "the git dir's " : "", rel, why);
}

int object_refuse_locked(View *v, Node *dir, const char *name, const char *what) {
        char hex[VIEW_OBJECT_HEX_MAX];
        ViewObjectKind k = object_name(dir, name, hex);
        _cleanup_free_ char *why = NULL;

        if (asprintf(&why, "%s %s's file is put in place only by renaming a finished one onto its name, which the "
                     "view checks", k == VIEW_OBJECT_LOOSE ? "an" : "a", kind_what(k)) < 0)
                why = NULL;
        refusal(v, dir, name, what, why ?: "objects are immutable");
        return -EPERM;
}

int object_refuse(View *v, Node *dir, const char *name, const char *what) {
        int r;

        pthread_mutex_lock(&v->lock);
        r = object_refuse_locked(v, dir, name, what);
        pthread_mutex_unlock(&v->lock);
        return r;
}

/* Whether n, a file on the host's side, is filed under an object's name (either name it was last seen by). */
static bool node_is_object(const Node *n) {
        char hex[VIEW_OBJECT_HEX_MAX];

        if (n->is_dir || n->in_state || !n->parent)
                return false;
        return (n->name && object_name(n->parent, n->name, hex) != VIEW_OBJECT_NONE) ||
               (n->alt_name && object_name(n->parent, n->alt_name, hex) != VIEW_OBJECT_NONE);
}

int guard_check_node(View *v, Node *n, const char *what) {
        int r = 0;

        pthread_mutex_lock(&v->lock);
        if (!n->is_dir && n->name && index_name(n->parent, n->name))
                r = index_refuse_locked(v, n->parent, n->name, what);
        else if (n->staging && startswith(what, "a link")) {
                /* A second name of a staged file would stay writable once it is in place. */
                refusal(v, n->parent, n->staging->name, what, "it is a copy not yet checked");
                r = -EPERM;
        } else if (n->staging && n->staging->checking) {
                /* What is checked is what lands: nothing changes it meanwhile. */
                refusal(v, n->parent, n->staging->name, what, "the view is checking it");
                r = -EPERM;
        } else if (n->staging && (startswith(what, "a write") || startswith(what, "a truncation"))) {
                /* Under way until object_staged_written(): nothing lands before it is fed. */
                n->staging->changing++;
                if (startswith(what, "a truncation"))
                        n->staging->unordered = true;   /* what was fed is not what the file holds */
        } else if (n->checking && n->name) {
                refusal(v, n->parent, n->name, what, "the view is checking it for the object's name it is renamed onto");
                r = -EPERM;
        } else if (node_is_object(n))
                r = object_refuse_locked(v, n->parent, n->name, what);
        pthread_mutex_unlock(&v->lock);
        return r;
}

/* The check of the file fd that is to be filed as name (kind k, hex) in the directory dirfd. */
static int object_judge(int fd, int dirfd, ViewObjectKind k, const char *hex, char **ret_why) {
        _cleanup_close_ int pack_fd = -EBADF;
        char pack[VIEW_OBJECT_HEX_MAX + 16];
        uint8_t oid[GIT_OID_MAX];
        GitHashAlgo algo;

        switch (k) {
        case VIEW_OBJECT_LOOSE:
                return git_loose_check_fd(fd, hex, ret_why);
        case VIEW_OBJECT_PACK:
                return git_pack_check_name_fd(fd, hex, ret_why);
        case VIEW_OBJECT_IDX:
                /* git puts the pack in place before its index (the index is what makes it seen). */
                snprintf(pack, sizeof(pack), "pack-%s.pack", hex);
                pack_fd = openat(dirfd, pack, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
                if (pack_fd < 0)
                        return asprintf(ret_why, "%s is not there (%m)", pack) < 0 ? -ENOMEM : -EBADMSG;
                if (git_oid_from_hex(hex, strlen(hex), oid, &algo) < 0)
                        return -EINVAL;
                return git_pack_check_idx_fd(pack_fd, fd, algo, ret_why);
        default:
                return -EINVAL;
        }
}

/*
 * A rename of n (name in from) onto newname in to, an object's, a pack's
 * or an index's name there (object_name(): kind k). The changes of n under
 * way end first (v->moving, held that long only), and later ones are
 * refused while it is checked (n->checking, guard_check_node()): git has
 * closed the file it renames. So the check of a large pack's index, which
 * takes seconds, holds up no other move in the workspace. Then it is
 * renamed if its name still leads to it. With v->lock held, released
 * while the file is read; -EAGAIN while another move holds v->moving.
 */
int object_rename(View *v, Node *from, const char *name, Node *n, Node *to, const char *newname, ViewObjectKind k,
                  const char *hex, unsigned flags) {
        _cleanup_(pin_done) Pin p = {};
        _cleanup_close_ int fd = -EBADF, dirfd = -EBADF;
        _cleanup_free_ char *why = NULL;
        char pp[32], what[64];
        struct stat st = {};
        uint64_t start;
        int r;

        snprintf(what, sizeof(what), "a rename onto the %s", kind_what(k));
        if ((flags & ~(unsigned) RENAME_NOREPLACE) || n->is_dir || n->cls != VIEW_SHARED || n->in_state ||
            from->in_state)
                return object_refuse_locked(v, to, newname, "a rename of this kind onto");
        if (n->checking)
                return object_refuse_locked(v, to, newname, "a second rename under way of the file for");
        r = move_begin(v, n);
        if (r < 0)
                return r;
        n->checking = true;
        move_end(v);
        r = pin_locked(v, n, &p.fd, &p.owned, NULL);
        if (r >= 0) {
                dirfd = fcntl(to->fd, F_DUPFD_CLOEXEC, 3);
                if (dirfd < 0)
                        r = -errno;
        }
        pthread_mutex_unlock(&v->lock);

        start = now_msec();
        if (r >= 0) {
                proc_path(p.fd, pp);
                fd = open(pp, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                r = fd < 0 || fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EPERM;
        }
        if (r >= 0 && st.st_nlink != 1)
                /* Another name of it would stay writable. */
                r = asprintf(&why, "it has %ju names", (uintmax_t) st.st_nlink) < 0 ? -ENOMEM : -EPERM;
        if (r >= 0)
                r = object_judge(fd, dirfd, k, hex, &why);
        if (r == -ENOMEM)
                why = mfree(why);
        else if (r < 0 && !why && asprintf(&why, "it cannot be read (%s)", strerror(-r)) < 0)
                why = NULL;

        pthread_mutex_lock(&v->lock);
        n->checking = false;
        if (r >= 0) {
                struct stat now;

                /* The name still leads to the file checked. */
                if (fstatat(from->fd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != st.st_dev ||
                    now.st_ino != st.st_ino)
                        r = -ESTALE;
                else if (syscall(SYS_renameat2, from->fd, name, dirfd, newname, flags) < 0)
                        r = -errno;
        }
        if (why) {
                refusal(v, to, newname, what, why);
                r = -EPERM;
        } else if (k == VIEW_OBJECT_IDX && r >= 0 && now_msec() - start >= 1000) {
                char rel[VIEW_PATH_MAX];

                if (node_relpath(v, to, newname, rel, sizeof(rel)) < 0)
                        snprintf(rel, sizeof(rel), "%s", newname);
                fprintf(stderr, "lazaret-view: checked the pack index %s against its pack in %.1f s\n", rel,
                        (double) (now_msec() - start) / 1000.0);
        }
        return r;
}

/* ---- copies: created under an object's name, put in place once whole and checked ---- */

/*
 * A file the sandbox creates under an object's, a pack's or an index's
 * name (cp -r of a repository, mv's copy out of ignored state, git clone
 * of a local path, which copies each file of objects/ with
 * open(O_CREAT|O_EXCL), write and close) is staged: the view creates it
 * under a temporary name in the same directory, one of git's own kind
 * (tmp_obj_*, tmp_pack_*, tmp_idx_*, which git's prune removes when they
 * are left over), and the kernel's node for the name is that file. The
 * name itself does not exist on the host until what was written is whole
 * and checked: host git never reads it unchecked.
 *
 * Whole is read from the bytes: the kernel here sends no RELEASE (the
 * view runs without OPEN, FUSE_CAP_NO_OPEN_SUPPORT) and gVisor keeps its
 * host file open past the sandbox's close, so nothing marks the close. So
 * each write is fed, in order, to a check that knows when its file ends
 * (git_stream_feed()): a loose object when its compressed stream ends, a
 * pack or an index when its trailing checksum is the hash of what precedes
 * it. Then a loose object's content must hash to its name and a pack's
 * checksum be its name, and an index is checked whole against its pack
 * (object_judge()), as at a rename. What passes is renamed onto its name
 * (RENAME_NOREPLACE) and is an object's file from then on (changes
 * refused); what fails is removed, the write that made it whole is refused
 * (EPERM: cp and git say so) and one line says why. An index whose pack
 * is not in place yet (a clone copies objects/pack/ in directory order)
 * waits, staged, until a pack of its name lands there. A file that never
 * becomes whole (cut short, or bytes that are no object) stays staged
 * until the kernel forgets its node; then it is removed and a line says
 * so. Writes out of order are checked whole after each one instead.
 */

#define STAGE_TAG "_lazaret."

/* As ops-file.c opens a file for a request: never following, never a controlling tty. */
bool object_staging_name(const char *name) {
        return startswith(name, "tmp_") && strstr(name, STAGE_TAG);
}

static Staging *staging_find(View *v, Node *dir, const char *name) {
        for (Staging *s = v->stagings; s; s = s->next)
                if (s->dir == dir && streq(s->name, name))
                        return s;
        return NULL;
}

/* The record goes (the file stays where it is). With v->lock held. */
static void staging_free(View *v, Staging *s) {
        for (Staging **p = &v->stagings; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        break;
                }
        if (s->node)
                s->node->staging = NULL;
        safe_close(s->rfd);
        git_stream_free(s->stream);
        free(s);
}

/* What was written goes, with a line saying why. With v->lock held. */
static void staging_refuse(View *v, Staging *s, const char *why) {
        char what[64];

        snprintf(what, sizeof(what), "a copy under the %s", kind_what(s->kind));
        (void) unlinkat(s->dir->fd, s->tmp, 0);
        own_name_note(v, s->dir, s->tmp);
        refusal(v, s->dir, s->name, what, why);
        /* The kernel's entry for the name led to the file removed: looked up again, the name is free. */
        inval_later(v, s->dir, s->name);
        staging_free(v, s);
}

static GitStreamKind stream_kind(ViewObjectKind k) {
        return k == VIEW_OBJECT_LOOSE ? GIT_STREAM_LOOSE : k == VIEW_OBJECT_PACK ? GIT_STREAM_PACK : GIT_STREAM_TRAILED;
}

void object_create(fuse_req_t req, View *v, Node *dir, const char *name, ViewObjectKind k, const char *hex, mode_t mode,
                   struct fuse_file_info *fi) {
        struct fuse_entry_param e;
        Staging *s = NULL;
        struct stat st;
        ViewClass c;
        mode_t m;
        int dfd, fd = -EBADF, r;

        pthread_mutex_lock(&v->lock);
        wait_unmoved(v, dir, NULL);
        dfd = create_side(v, dir, name, false, &c);
        if (dfd >= 0 && c != VIEW_SHARED) {
                /* Only the host's object stores are checked; nothing else takes an object's name. */
                r = object_refuse_locked(v, dir, name, "the creation of");
                goto fail;
        }
        if (dfd < 0) {
                r = dfd;
                goto fail;
        }
        if (fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 || staging_find(v, dir, name)) {
                /* There (or on its way): git's O_EXCL finds it; anything else would change it in place. */
                r = (fi->flags & O_EXCL) ? -EEXIST : object_refuse_locked(v, dir, name, "the creation of");
                goto fail;
        }
        r = create_mode(mode, &m);
        if (r < 0)
                goto fail;
        s = calloc(1, sizeof(*s));
        if (!s) {
                r = -ENOMEM;
                goto fail;
        }
        s->rfd = -EBADF;
        s->dir = dir;
        s->kind = k;
        snprintf(s->hex, sizeof(s->hex), "%s", hex);
        snprintf(s->name, sizeof(s->name), "%s", name);
        snprintf(s->tmp, sizeof(s->tmp), "tmp_%s" STAGE_TAG "%d.%u",
                 k == VIEW_OBJECT_LOOSE ? "obj" : k == VIEW_OBJECT_PACK ? "pack" : "idx", getpid(), ++v->staging_seq);
        r = git_stream_new(stream_kind(k), hex, &s->stream);
        if (r < 0)
                goto fail;
        fd = openat(dir->fd, s->tmp, view_open_flags(fi->flags) | O_CREAT | O_EXCL | O_NOFOLLOW, m);
        if (fd < 0) {
                r = -errno;
                goto fail;
        }
        s->rfd = openat(dir->fd, s->tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (s->rfd < 0) {
                r = -errno;
                (void) unlinkat(dir->fd, s->tmp, 0);
                goto fail;
        }
        own_name_note(v, dir, s->tmp);
        r = lookup_locked(v, dir, s->tmp, &e);
        if (r < 0) {
                (void) unlinkat(dir->fd, s->tmp, 0);
                goto fail;
        }
        s->node = node_of(v, e.ino);
        s->node->staging = s;
        s->next = v->stagings;
        v->stagings = s;
        pthread_mutex_unlock(&v->lock);

        if (v->no_open) {
                /* No RELEASE comes where the kernel opens files itself (op_create()). */
                fd = safe_close(fd);
                fi->fh = 0;
        } else
                fi->fh = (uint64_t) fd;
        fi->keep_cache = 0;
        if (fuse_reply_create(req, &e, fi) == -ENOENT)
                safe_close(fd);
        return;
fail:
        if (s) {
                safe_close(s->rfd);
                git_stream_free(s->stream);
                free(s);
        }
        safe_close(fd);
        pthread_mutex_unlock(&v->lock);
        fuse_reply_err(req, -r);
}

/* The file read from off to its end (or to end) into the stream: what git_stream_feed() says. */
static int staging_feed(Staging *s, uint64_t off, uint64_t end, char **ret_why) {
        uint8_t buf[65536];
        int r = 0;

        while (off < end) {
                ssize_t k = pread(s->rfd, buf, (size_t) MIN((uint64_t) sizeof(buf), end - off), (off_t) off);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                off += (uint64_t) k;
                r = git_stream_feed(s->stream, buf, (size_t) k, ret_why);
                if (r != 0)
                        return r;
        }
        return r;
}

/* Out of order: the whole file fed again from its start; what does not check yet is not whole yet (0). */
static int staging_feed_all(Staging *s, char **ret_why) {
        struct stat st;
        int r;

        s->stream = git_stream_free(s->stream);
        r = git_stream_new(stream_kind(s->kind), s->hex, &s->stream);
        if (r < 0)
                return r;
        if (fstat(s->rfd, &st) < 0)
                return -errno;
        r = staging_feed(s, 0, (uint64_t) st.st_size, ret_why);
        if (r < 0 || (r > 0 && (uint64_t) st.st_size != git_stream_fed(s->stream)))
                *ret_why = mfree(*ret_why), r = 0;
        return r;
}

/* Puts s's file in place under its name; the node stands for it there. With v->lock held. */
static int staging_land(View *v, Staging *s) {
        struct stat st, now;
        Node *n = s->node;
        char *copy;

        /* The temporary name still leads to the file checked: the sandbox can look it up, and
         * rename another file onto it (rename_within()), between the check and this rename. */
        if (fstat(s->rfd, &st) < 0)
                return -errno;
        if (fstatat(s->dir->fd, s->tmp, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_dev != st.st_dev ||
            now.st_ino != st.st_ino)
                return -ESTALE;
        if (syscall(SYS_renameat2, s->dir->fd, s->tmp, s->dir->fd, s->name, RENAME_NOREPLACE) < 0)
                return -errno;
        own_name_note(v, s->dir, s->tmp);
        own_name_note(v, s->dir, s->name);
        if (n && (copy = strdup(s->name))) {
                free(n->name);
                n->name = copy;
                n->alt_name = mfree(n->alt_name);
                note_changed(n);
        }
        inval_later(v, s->dir, s->name);
        staging_free(v, s);
        return 0;
}

static void staging_land_waiting(View *v, Node *dir, const char *pack_hex);

/*
 * s is whole: checked (an index against its pack, which may wait for it),
 * then put in place or refused. With v->lock held, released while an
 * index is checked. -EPERM when refused.
 */
static int staging_whole(View *v, Staging *s) {
        _cleanup_free_ char *why = NULL;
        _cleanup_close_ int dirfd = -EBADF;
        char pack[VIEW_OBJECT_HEX_MAX + 16], hex[VIEW_OBJECT_HEX_MAX];
        ViewObjectKind kind;
        struct stat st;
        Node *dir = s->dir;
        int r;

        if (s->changing > 0) {
                /* A change let through is not fed yet: the last to end feeds the file whole again. */
                s->unordered = true;
                s->waiting = false;
                return 0;
        }
        if (s->kind == VIEW_OBJECT_IDX) {
                snprintf(pack, sizeof(pack), "pack-%s.pack", s->hex);
                if (fstatat(dir->fd, pack, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        s->waiting = true;
                        return 0;
                }
                s->waiting = false;
                s->checking = true;
                dirfd = fcntl(dir->fd, F_DUPFD_CLOEXEC, 3);
                pthread_mutex_unlock(&v->lock);
                r = dirfd < 0 ? -errno : object_judge(s->rfd, dirfd, s->kind, s->hex, &why);
                pthread_mutex_lock(&v->lock);
                s->checking = false;
                if (!s->node) {
                        /* The kernel forgot its node meanwhile (object_staged_forget_locked()), and
                         * its directory's node may be gone with it: removed through the check's own fd. */
                        (void) unlinkat(dirfd, s->tmp, 0);
                        fprintf(stderr, "lazaret-view: removed the copy under the pack index pack-%s.idx, "
                                "forgotten while it was checked\n", s->hex);
                        staging_free(v, s);
                        return -EPERM;
                }
                if (r < 0) {
                        if (!why && asprintf(&why, "it cannot be read (%s)", strerror(-r)) < 0)
                                why = NULL;
                        staging_refuse(v, s, why ?: "out of memory");
                        return -EPERM;
                }
        }
        snprintf(hex, sizeof(hex), "%s", s->hex);
        kind = s->kind;
        r = staging_land(v, s);
        if (r < 0) {
                /* Its name came meanwhile (another copy of the same object), or its temporary name
                 * leads elsewhere now: this one goes. */
                staging_refuse(v, s, r == -ESTALE ? "its temporary name leads to another file than the one checked"
                                                  : "its name is taken meanwhile");
                return -EPERM;
        }
        if (kind == VIEW_OBJECT_PACK)
                staging_land_waiting(v, dir, hex);
        return 0;
}

/* A pack landed in dir: the indexes that waited for it are checked now. With v->lock held (released meanwhile). */
static void staging_land_waiting(View *v, Node *dir, const char *pack_hex) {
        bool again = true;

        /* Each once: one that still finds no pack (removed meanwhile) stays waiting, not tried again. */
        for (Staging *s = v->stagings; s; s = s->next)
                s->retry = s->dir == dir && s->waiting && !s->checking && streq(s->hex, pack_hex);
        while (again) {
                again = false;
                for (Staging *s = v->stagings; s; s = s->next)
                        if (s->retry) {
                                s->retry = false;
                                (void) staging_whole(v, s);
                                again = true;   /* the list changed */
                                break;
                        }
        }
}

int object_staged_written(View *v, Node *n, off_t off, size_t size) {
        _cleanup_free_ char *why = NULL;
        Staging *s;
        uint64_t fed;
        int r;

        pthread_mutex_lock(&v->lock);
        s = n->staging;
        if (s && s->changing > 0)
                s->changing--;
        if (!s || s->checking) {
                pthread_mutex_unlock(&v->lock);
                return 0;
        }
        fed = git_stream_fed(s->stream);
        if (!s->unordered && (off < 0 || (uint64_t) off != fed))
                s->unordered = true;
        if (s->changing > 0) {
                /* Another change let through is still under way: it feeds what both wrote, from the start. */
                s->unordered = true;
                pthread_mutex_unlock(&v->lock);
                return 0;
        }
        if (s->unordered)
                r = staging_feed_all(s, &why);
        else
                r = staging_feed(s, fed, (uint64_t) off + size, &why);
        if (r < 0) {
                if (!why && asprintf(&why, "it cannot be read (%s)", strerror(-r)) < 0)
                        why = NULL;
                staging_refuse(v, s, why ?: "out of memory");
                r = -EPERM;
        } else if (r > 0)
                r = staging_whole(v, s);
        pthread_mutex_unlock(&v->lock);
        return r;
}

int object_staged_unlink_locked(View *v, Node *dir, const char *name) {
        Staging *s = staging_find(v, dir, name);

        if (!s)
                return 0;
        if (s->checking)
                return -EBUSY;
        (void) unlinkat(dir->fd, s->tmp, 0);
        own_name_note(v, dir, s->tmp);
        inval_later(v, dir, name);
        staging_free(v, s);
        return 1;
}

void object_staged_forget_locked(View *v, Node *n) {
        Staging *s = n->staging;
        char why[128];

        if (!s)
                return;
        if (s->checking) {
                /* Its check still runs (the node is the kernel's no more): it ends the record,
                 * without its directory's node, which may go with this one (staging_whole()). */
                s->node = NULL;
                s->dir = NULL;
                n->staging = NULL;
                return;
        }
        snprintf(why, sizeof(why), s->waiting ? "its pack never came" : "what was written (%ju bytes) never became whole",
                 (uintmax_t) git_stream_fed(s->stream));
        staging_refuse(v, s, why);
}

/*
 * A view that stopped while files were staged left them under their
 * temporary names. At start, those of the workspace's own object store
 * (<top>/.git/objects, or objects/ of a git dir view) are removed, in a
 * thread of their own so that the view is ready meanwhile; the current
 * run's own names (its process ID in them) are left alone. Elsewhere git's
 * prune removes them as stale tmp_ files.
 */
static void sweep_dir(int objects, const char *sub, const char *own) {
        _cleanup_close_ int fd = openat(objects, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;

        if (fd < 0 || !(d = fdopendir(fd)))
                return;
        fd = -EBADF;
        while ((de = readdir(d)))
                if (object_staging_name(de->d_name) && !strstr(de->d_name, own) &&
                    unlinkat(dirfd(d), de->d_name, 0) >= 0)
                        fprintf(stderr, "lazaret-view: removed %s/%s, a copy an earlier run had staged\n", sub,
                                de->d_name);
}

static void *sweep(void *arg) {
        int objects = (int) (intptr_t) arg;
        char own[32], sub[8];

        snprintf(own, sizeof(own), STAGE_TAG "%d.", getpid());
        sweep_dir(objects, "pack", own);
        for (unsigned i = 0; i < 256; i++) {
                snprintf(sub, sizeof(sub), "%02x", i);
                sweep_dir(objects, sub, own);
        }
        safe_close(objects);
        return NULL;
}

void object_staging_sweep(View *v) {
        pthread_t t;
        int fd;

        /* Beneath the workspace, through no symbolic link. */
        fd = openat_beneath(v->root.fd, v->git_dir ? "objects" : ".git/objects", O_RDONLY | O_DIRECTORY, 0, true);
        if (fd < 0)
                return;
        if (pthread_create(&t, NULL, sweep, (void *) (intptr_t) fd) != 0) {
                safe_close(fd);
                return;
        }
        (void) pthread_detach(t);
}
