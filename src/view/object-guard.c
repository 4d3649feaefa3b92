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
        else if (n->checking && n->name) {
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
