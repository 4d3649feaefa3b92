/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host's index (issue 32 item 3): protected content stays out of it.
 * The index is shared, so that what git does inside is on the host at once;
 * but an index entry is what the host's next `git commit` records and what
 * its `git checkout -- .`, `restore`, `stash pop` or `reset` write into the
 * working tree. So the sandbox's version of a protected file (a hook
 * manager's configuration, a script a hook runs) must not be staged there.
 *
 * git replaces an index whole: it writes <gitdir>/index.lock and renames it
 * onto index. The view judges each such replacement (moves.c,
 * rename_index()): it parses the new file and the host's current one with
 * the fuzzed reader (git-index.h) and refuses the rename with EPERM when
 * the first entry that differs, git_index_first_change(), is a protected
 * path (view_index_path_protected()). Only the entries are judged, so what
 * lands is the new file without the extensions that cache what entries
 * say (TREE, REUC: git_index_without_caches()): a cached tree that
 * disagreed with them would be what the host's next commit records; an
 * untracked cache (UNTR) the sandbox wrote would hide untracked files from
 * the host's status, or, naming /workspace, make it warn at every run. A
 * TREE or UNTR byte for byte the host's, over the host's entries
 * unchanged, stays (git_index_same_caches()): it is the host's own, and
 * without the trees a status inside would cost both sides every tree
 * object once more.
 * Every other way to put content at that name (writing it in place,
 * truncating it, creating it, a link to it or from it, exchanging it) is
 * refused outright: git never does those. Each refusal is one line on the
 * view's standard error, which the supervisor passes to the Domain's
 * journal; git inside says only "Unable to write new index file".
 */
#include "view.h"

/* Whether name in dir is an index the host's git reads: "index" in a directory git takes for a git dir. */
bool index_name(const Node *dir, const char *name) {
        return dir && dir->is_dir && !dir->in_state && dir->dir.gitpos &&
               (dir->dir.zone == VIEW_ZONE_GIT_TOP || dir->dir.zone == VIEW_ZONE_GIT) && streq(name, "index");
}

/* The message of a refusal, with v->lock held. */
int index_refuse_locked(View *v, Node *dir, const char *name, const char *what) {
        char rel[VIEW_PATH_MAX];

        if (node_relpath(v, dir, name, rel, sizeof(rel)) < 0)
                snprintf(rel, sizeof(rel), "%s", name);
        fprintf(stderr, "lazaret-view: refused %s %s%s: git replaces its index only by renaming index.lock onto it, "
                "which the view judges (protected content stays out of the host's index)\n", what,
                v->git_dir ? "the git dir's " : "", rel);
        return -EPERM;
}

int index_refuse(View *v, Node *dir, const char *name, const char *what) {
        int r;

        pthread_mutex_lock(&v->lock);
        r = index_refuse_locked(v, dir, name, what);
        pthread_mutex_unlock(&v->lock);
        return r;
}

typedef struct IndexWant {
        const ViewLists *lists;
        const char *prefix;             /* where the index's working tree lies in the workspace ("" or "dir/") */
} IndexWant;

static bool index_want(const char *path, void *userdata) {
        const IndexWant *w = userdata;
        char full[VIEW_PATH_MAX];

        if ((size_t) snprintf(full, sizeof(full), "%s%s", w->prefix, path) >= sizeof(full))
                return true;    /* too long to judge: protected */
        return view_index_path_protected(w->lists, full);
}

/*
 * The lists an index in dir is judged with, and where its working tree
 * lies: the workspace's own git dir (and, in the git dir view, every index
 * of the served dir, the workspace's among them) with the view's lists; a
 * nested repository's .git with them too, its paths below its directory;
 * an index whose working tree is elsewhere (a linked worktree's or a
 * submodule's below the workspace's .git) with the protected names alone.
 * With v->lock held: what index_judge() needs, taken before it runs
 * without the lock.
 */
int index_judge_prepare(View *v, Node *dir, IndexJudge *ret) {
        *ret = (IndexJudge) { .dirfd = fcntl(dir->fd, F_DUPFD_CLOEXEC, 3) };
        if (ret->dirfd < 0)
                return -errno;
        if (v->git_dir)
                ret->lists = v->index_lists;
        else if (dir->dir.zone == VIEW_ZONE_GIT_TOP)
                ret->lists = v->lists;
        else if (dir->parent && dir->parent->dir.zone == VIEW_ZONE_WORK && streq(dir->name, ".git")) {
                size_t n;

                if (node_relpath(v, dir->parent, NULL, ret->prefix, sizeof(ret->prefix) - 1) < 0) {
                        ret->dirfd = safe_close(ret->dirfd);
                        return -ENAMETOOLONG;
                }
                n = strlen(ret->prefix);
                if (n > 0)
                        memcpy(ret->prefix + n, "/", 2);
                ret->lists = v->lists;
        } else
                ret->lists = (ViewLists) { .names = v->lists.names, .unprotect = v->lists.unprotect };
        return 0;
}

void index_judge_done(IndexJudge *j) {
        j->dirfd = safe_close(j->dirfd);
}

/* The host's index in dirfd, in either object format; *ret NULL when there is none. -EOPNOTSUPP etc. when unreadable. */
static int load_old(int dirfd, GitIndex **ret, GitHashAlgo *ret_algo, char **ret_error) {
        int r = git_index_load_at(dirfd, "index", GIT_HASH_SHA1, ret, ret_error);

        *ret_algo = GIT_HASH_SHA1;
        if (r == -EBADMSG) {
                *ret_error = mfree(*ret_error);
                *ret_algo = GIT_HASH_SHA256;
                r = git_index_load_at(dirfd, "index", GIT_HASH_SHA256, ret, ret_error);
        }
        if (r == -ENOENT) {
                *ret = NULL;
                *ret_error = mfree(*ret_error);
                return 0;
        }
        return r;
}

int index_judge(const IndexJudge *j, const void *data, size_t size, char **ret_data, size_t *ret_size,
                GitIndexKept **ret_kept, GitIndex **ret_new, GitHashAlgo *ret_algo, char **ret_why) {
        _cleanup_git_index_ GitIndex *old = NULL, *first = NULL;
        _cleanup_free_ char *error = NULL;
        IndexWant want = { .lists = &j->lists, .prefix = j->prefix };
        GitIndex none = {};
        GitHashAlgo algo, first_algo = GIT_HASH_SHA1;
        int r;

        *ret_data = NULL;
        *ret_kept = NULL;
        *ret_new = NULL;
        r = load_old(j->dirfd, &old, &algo, &error);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                /* The host's own index cannot be read completely (a split index, an
                 * extension the reader does not know): what the sandbox stages could
                 * not be compared with it, so nothing lands (fail closed, issue 32). */
                return asprintf(ret_why, "the host's index cannot be read (%s), so what it would stage cannot be "
                                "judged (on the host: git update-index --no-split-index)", error ?: strerror(-r)) < 0 ?
                               -ENOMEM : -EPERM;
        /* The repository's object format is the host index's; without one, every format the new file reads in. */
        for (GitHashAlgo a = GIT_HASH_SHA1; a <= GIT_HASH_SHA256; a++) {
                _cleanup_git_index_ GitIndex *new = NULL;
                _cleanup_free_ char *path = NULL;

                if (old && a != algo)
                        continue;
                error = mfree(error);
                r = git_index_parse(data, size, a, &new, &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        /* Fail closed: what git would read in it is not known. */
                        if (old || (a == GIT_HASH_SHA256 && !first))
                                return asprintf(ret_why, "it cannot be read completely (%s)", error ?: strerror(-r)) < 0 ?
                                               -ENOMEM : -EPERM;
                        continue;
                }
                r = git_index_first_change(old ?: &none, new, index_want, &want, &path);
                if (r < 0)
                        return r;
                if (r > 0)
                        return asprintf(ret_why, "it stages %s%s, a protected path (stage it on the host, after "
                                        "lazaretctl changes apply)", j->prefix, path) < 0 ? -ENOMEM : -EPERM;
                if (!first) {
                        first = TAKE_PTR(new);
                        first_algo = a;
                }
        }
        /* What lands keeps no resolve-undo stages, cached trees or untracked cache: the entries
         * alone were judged. Except for the caches the host's index has now, byte for byte,
         * when the entries are the host's too (git status adding its fsmonitor token,
         * refreshing stat data): they then say what they said. Without the trees, git inside
         * and the host's next status read every tree object again (bench/workspace, git-warm;
         * spec 6.4); an untracked cache written inside names /workspace, and the host's git
         * would warn about it at every status. What is left out is kept for the sandbox
         * (index_keep_locked()). */
        r = git_index_without_caches_kept(data, size, first, first_algo, git_index_same_caches(old, first),
                                          ret_data, ret_size, ret_kept);
        if (r >= 0) {
                *ret_new = TAKE_PTR(first);
                *ret_algo = first_algo;
        }
        return r;
}

/* ---- the sandbox's own caches ---------------------------------------------- */

/*
 * The caches an index the sandbox wrote was landed without (TREE, REUC,
 * UNTR: index_judge()), kept for the sandbox alone (spec 6.4): while the
 * host's file is still the one the view landed, the sandbox reads it with
 * them spliced back in, byte for byte the file its git wrote, checksum
 * included (git_index_kept_read()); so its git keeps an untracked cache and
 * its trees, and the host's file never holds them. "Still the one landed":
 * the same device, inode number, size, mtime and ctime as the view saw
 * right after its rename, and, at each read, the landed checksum in the
 * file's last bytes. git never changes an index in place: the host's git
 * renames a new file onto it, which is another inode (the sandbox's next
 * lookup of "index" finds another node, with nothing kept) and changes the
 * landed one's ctime (nlink 0). Anything else that changes it changes its
 * ctime too. Then the file is served as it is and what was kept goes.
 *
 * The kernel holds the index's pages as long as their inode (no_open keeps
 * the page cache across opens), and is told the size the view serves in
 * every attribute reply (index_kept_attr_locked()): both change together,
 * when the served bytes do: the landed file's size differs from the
 * spliced one's, and a drop invalidates the node's pages and attributes
 * (inval_later()). gVisor reads through the host's kernel, its mmap of
 * the index too.
 *
 * Bounded: one IndexKept per node, at most INDEX_KEPT_MAX bytes, all
 * together at most INDEX_KEPT_TOTAL_MAX (a sandbox making many repositories
 * gets no more); what is not kept is rebuilt by the sandbox's git, as
 * before. Guarded by v->lock; a read holds a reference outside it.
 */
typedef struct IndexKept {
        unsigned refs;
        GitIndexKept *k;
        dev_t dev;
        ino_t ino;
        struct timespec mtime, ctime;
} IndexKept;

static void kept_unref_locked(View *v, IndexKept *ik) {
        if (!ik || --ik->refs > 0)
                return;
        v->kept_total -= ik->k->n_bytes;
        git_index_kept_free(ik->k);
        free(ik);
}

void index_kept_drop_locked(View *v, Node *n) {
        IndexKept *ik = n->kept;

        /* Atomic: op_read() looks without the lock whether there is anything to splice. */
        __atomic_store_n(&n->kept, NULL, __ATOMIC_RELEASE);
        kept_unref_locked(v, ik);
}

/* Whether st is the file the view landed for ik. */
static bool kept_current(const IndexKept *ik, const struct stat *st) {
        return S_ISREG(st->st_mode) && st->st_dev == ik->dev && st->st_ino == ik->ino &&
               (uint64_t) st->st_size == ik->k->landed_size && st->st_mtim.tv_sec == ik->mtime.tv_sec &&
               st->st_mtim.tv_nsec == ik->mtime.tv_nsec && st->st_ctim.tv_sec == ik->ctime.tv_sec &&
               st->st_ctim.tv_nsec == ik->ctime.tv_nsec;
}

/* After the rename of n onto an index landed what k was left out of: k kept for it, fd the landed file. Takes k. */
void index_keep_locked(View *v, Node *n, GitIndexKept *k, int fd) {
        IndexKept *ik = NULL;
        struct stat st;

        index_kept_drop_locked(v, n);
        if (!k)
                return;
        if (k->n_bytes > INDEX_KEPT_MAX || k->n_bytes > INDEX_KEPT_TOTAL_MAX - v->kept_total ||
            fstat(fd, &st) < 0 || (uint64_t) st.st_size != k->landed_size || !(ik = calloc(1, sizeof(*ik)))) {
                git_index_kept_free(k);
                return;
        }
        *ik = (IndexKept) { .refs = 1, .k = k, .dev = st.st_dev, .ino = st.st_ino, .mtime = st.st_mtim,
                            .ctime = st.st_ctim };
        v->kept_total += k->n_bytes;
        __atomic_store_n(&n->kept, ik, __ATOMIC_RELEASE);
}

/* The attributes the kernel is told of n, whose host file's are st: the size served. With v->lock held. */
void index_kept_attr_locked(View *v, Node *n, struct stat *st) {
        if (!n->kept)
                return;
        if (kept_current(n->kept, st))
                st->st_size = (off_t) n->kept->k->size;
        else {
                /* The host's file changed: served as it is from now on. */
                index_kept_drop_locked(v, n);
                inval_later(v, n, NULL);
        }
}

/* The size n's file is served with through fd, its host file: the spliced one's while what was kept is current, or -1. */
off_t index_kept_size(View *v, Node *n, int fd) {
        struct stat st;
        off_t size = -1;

        if (fstat(fd, &st) < 0)
                return -1;
        pthread_mutex_lock(&v->lock);
        if (n->kept && kept_current(n->kept, &st))
                size = (off_t) n->kept->k->size;
        pthread_mutex_unlock(&v->lock);
        return size;
}

static ssize_t read_landed(void *userdata, void *buf, size_t n, uint64_t off) {
        ssize_t k = pread(*(int *) userdata, buf, n, (off_t) off);
        return k < 0 ? -errno : k;
}

/*
 * A READ of n through fd, its host file: answered with the kept caches
 * spliced in (true) while the file is the one landed; false when nothing
 * is kept (any more): the caller reads the file as it is.
 */
bool index_kept_reply_read(View *v, fuse_req_t req, Node *n, int fd, size_t size, off_t off) {
        IndexKept *ik;
        _cleanup_free_ uint8_t *buf = NULL;
        uint8_t trailer[32];
        struct stat st;
        ssize_t k = -EIO;
        bool current;

        pthread_mutex_lock(&v->lock);
        ik = n->kept;
        if (ik)
                ik->refs++;
        pthread_mutex_unlock(&v->lock);
        if (!ik)
                return false;
        /* The landed file still, its checksum where it ends. */
        current = fstat(fd, &st) >= 0 && kept_current(ik, &st) &&
                  pread(fd, trailer, ik->k->hash_len, (off_t) (ik->k->landed_size - ik->k->hash_len)) ==
                          (ssize_t) ik->k->hash_len &&
                  memcmp(trailer, ik->k->landed_trailer, ik->k->hash_len) == 0;
        if (current && off >= 0) {
                if (size > ik->k->size)
                        size = ik->k->size;
                buf = malloc(size ?: 1);
                k = buf ? git_index_kept_read(ik->k, (uint64_t) off, buf, size, read_landed, &fd) : -ENOMEM;
        }
        pthread_mutex_lock(&v->lock);
        if (!current && n->kept == ik) {
                index_kept_drop_locked(v, n);
                inval_later(v, n, NULL);
        }
        kept_unref_locked(v, ik);
        pthread_mutex_unlock(&v->lock);
        if (!current)
                return false;
        if (k < 0)
                fuse_reply_err(req, (int) -k);
        else
                fuse_reply_buf(req, (const char *) buf, (size_t) k);
        return true;
}

/*
 * After the host's git replaced the index (its `git status`, which without
 * core.fsmonitor drops the token, and the sandbox's untracked cache with
 * it, being the host's own writer), the sandbox's last untracked cache
 * and fsmonitor token are put back onto the host's new file, for the
 * sandbox alone, when that file has exactly the entries the sandbox's
 * last index had (paths, modes, flags, stages, object names, in the same
 * positions: GitIndex.entries_digest; only the stat data may differ) and
 * neither extension of its own (spec 6.4, "The untracked cache"). The
 * token is the journal's: the hook answers it with every working-tree
 * change since, the host's included (a directory the view does not watch
 * counts as changed, a restart or an overflow answers everything), and a
 * host rewrite of the index with the same entries changes no file in the
 * working tree; the untracked cache depends on which paths are tracked,
 * which is the same. So what git inside trusts of them is what it would
 * have trusted of its own index. Bounded as the kept caches are (they
 * count in v->kept_total).
 */
typedef struct IndexLast {
        uint32_t n_entries;
        uint8_t entries_digest[32];
        size_t hash_len;
        uint64_t seq;                   /* which landing recorded it */
        uint8_t *exts;                  /* its UNTR and FSMN extensions, whole, in that order */
        size_t n;
} IndexLast;

void index_last_drop_locked(View *v, Node *dir) {
        IndexLast *l = dir->index_last;

        if (!l)
                return;
        v->kept_total -= l->n;
        free(l->exts);
        free(l);
        dir->index_last = NULL;
}

/* After the sandbox's index (data, size bytes, read as i with algo) landed in dir. With v->lock held. */
void index_last_set_locked(View *v, Node *dir, const GitIndex *i, GitHashAlgo algo, const void *data, size_t size) {
        size_t hash_len = algo == GIT_HASH_SHA256 ? 32 : 20, uo, ul, fo, fl;
        const uint8_t *ext;
        size_t n_ext;
        IndexLast *l;

        index_last_drop_locked(v, dir);
        if (!i || i->n_untracked != 1 || i->n_fsmonitor != 1 || !i->checksum_verified || size < hash_len ||
            i->entries_end > size - hash_len)
                return;
        ext = (const uint8_t *) data + i->entries_end;
        n_ext = size - hash_len - i->entries_end;
        if (git_index_extension_find(ext, n_ext, "UNTR", &uo, &ul) != 1 ||
            git_index_extension_find(ext, n_ext, "FSMN", &fo, &fl) != 1 || ul + fl > INDEX_KEPT_MAX ||
            ul + fl > INDEX_KEPT_TOTAL_MAX - v->kept_total)
                return;
        l = calloc(1, sizeof(*l));
        if (!l || !(l->exts = malloc(ul + fl))) {
                free(l);
                return;
        }
        memcpy(l->exts, ext + uo, ul);
        memcpy(l->exts + ul, ext + fo, fl);
        l->n = ul + fl;
        l->n_entries = i->n_entries;
        memcpy(l->entries_digest, i->entries_digest, 32);
        l->hash_len = hash_len;
        l->seq = ++v->index_last_seq;
        v->kept_total += l->n;
        dir->index_last = l;
}

/*
 * At a LOOKUP or GETATTR of n: when it is an index whose git dir has the
 * sandbox's last caches (IndexLast) and nothing kept of its own, looked at
 * once: the host's file read and, when it qualifies (above), kept for the
 * sandbox with them appended before its checksum, which is computed again;
 * st, the attributes about to be told, gets the size served then. Without
 * v->lock: the file is read and hashed outside it.
 */
void index_adopt(View *v, Node *n, struct stat *st) {
        _cleanup_(pin_done) Pin p = {};
        _cleanup_git_index_ GitIndex *i = NULL;
        _cleanup_git_index_kept_ GitIndexKept *k = NULL;
        _cleanup_free_ char *data = NULL, *error = NULL;
        _cleanup_free_ uint8_t *exts = NULL;
        _cleanup_close_ int fd = -EBADF;
        uint8_t digest[32];
        uint32_t n_entries;
        size_t hash_len, n_exts, size = 0;
        uint64_t seq;
        struct stat now;
        char pp[32];
        int r;

        if (n->is_dir || __atomic_load_n(&n->kept, __ATOMIC_ACQUIRE) || __atomic_load_n(&n->index_adopted, __ATOMIC_RELAXED))
                return;
        pthread_mutex_lock(&v->lock);
        if (n->in_state || n->cls != VIEW_SHARED || !n->parent || !index_name(n->parent, n->name))
                /* A file named "index" that is no git dir's: never looked at again. */
                __atomic_store_n(&n->index_adopted, true, __ATOMIC_RELAXED);
        if (n->kept || n->index_adopted || n->stale || !n->parent || !n->parent->index_last) {
                pthread_mutex_unlock(&v->lock);
                return;
        }
        __atomic_store_n(&n->index_adopted, true, __ATOMIC_RELAXED);
        n_exts = n->parent->index_last->n;
        exts = malloc(n_exts);
        if (!exts) {
                pthread_mutex_unlock(&v->lock);
                return;
        }
        memcpy(exts, n->parent->index_last->exts, n_exts);
        memcpy(digest, n->parent->index_last->entries_digest, 32);
        n_entries = n->parent->index_last->n_entries;
        hash_len = n->parent->index_last->hash_len;
        seq = n->parent->index_last->seq;
        r = pin_locked(v, n, &p.fd, &p.owned, NULL);
        pthread_mutex_unlock(&v->lock);
        if (r < 0)
                return;
        proc_path(p.fd, pp);
        fd = open(pp, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 || fstat(fd, &now) < 0 || !S_ISREG(now.st_mode) || now.st_dev != n->dev || now.st_ino != n->ino ||
            read_full_fd(fd, GIT_INDEX_SIZE_MAX, &data, &size) < 0)
                return;
        r = git_index_parse(data, size, hash_len == 32 ? GIT_HASH_SHA256 : GIT_HASH_SHA1, &i, &error);
        /* The host's own file: its entries the sandbox's last ones, no token or untracked cache of its own. */
        if (r < 0 || i->n_entries != n_entries || memcmp(i->entries_digest, digest, 32) != 0 || i->n_fsmonitor != 0 ||
            i->n_untracked != 0 || !i->checksum_verified)
                return;
        if (git_index_kept_append(data, size, i, hash_len == 32 ? GIT_HASH_SHA256 : GIT_HASH_SHA1, exts, n_exts, &k) < 0)
                return;
        pthread_mutex_lock(&v->lock);
        /* Still the file read, and the sandbox's last index the one looked at. */
        if (!n->kept && n->parent && n->parent->index_last && n->parent->index_last->seq == seq &&
            fstat(fd, &now) >= 0 && (uint64_t) now.st_size == size) {
                index_keep_locked(v, n, TAKE_PTR(k), fd);
                if (n->kept) {
                        if (st && (uint64_t) st->st_size == size)
                                st->st_size = (off_t) n->kept->k->size;
                        inval_later(v, n, NULL);
                }
        }
        pthread_mutex_unlock(&v->lock);
}
