/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ignored Workspace State: git's ignore rules and index as the view reads
 * them, and the mirror tree below <Domain Root>/ignored/.
 */
#include "view.h"

/* ---- Ignored Workspace State ---------------------------------------------- */

/*
 * Paths that are untracked and excluded by git's ignore rules live in
 * Domain state alone (view-policy.h, view_ignored_class()): the host's
 * copies there are never seen, nothing written there reaches the host.
 * The tree below <Domain Root>/ignored/ mirrors the workspace's host
 * directories: the mirror M(d) of host directory d holds e/, the ignored
 * entries of d under their own names, and d/, the mirrors of d's host
 * subdirectories, so that no name of the sandbox's can collide with a
 * mirror. Inside an ignored directory (a node in_state with class
 * VIEW_IGNORED) everything is Domain state and inherits the class.
 *
 * The rules are read as git reads them (git-ignore.h) and the index with
 * the fuzzed reader (git-index.h), both from the host's files; the index
 * and info/exclude are looked at again at most every IGN_RECHECK_NS (a
 * stat, a parse only when they changed), a .gitignore is parsed once and
 * forgotten when the watcher sees it change. With v->lock held throughout.
 */
#define IGN_RECHECK_NS (100 * 1000 * 1000LL)

static bool same_file_version(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

void ign_warn(View *v, const char *what, int r, const char *error) {
        /* Once per daemon: the rule then errs towards isolating (an unreadable
         * index tracks nothing, a rule file it cannot read excludes). */
        if (v->ign.warned)
                return;
        v->ign.warned = true;
        fprintf(stderr, "lazaret-view: cannot read %s (%s): untracked paths there are kept in ignored state\n", what,
                error ?: strerror(-r));
}

int ign_read_dir(void *userdata, const char *dir, IgnoreList **ret, char **ret_error) {
        View *v = userdata;

        return view_read_gitignore(v->root.fd, dir, ret, ret_error);
}

/* The index and info/exclude as they are now (at most IGN_RECHECK_NS old). */
void ign_refresh(View *v) {
        struct timespec now;
        long long ns;
        struct stat st;

        if (v->ign.git_fd < 0)
                return;
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
        ns = now.tv_sec * 1000000000LL + now.tv_nsec;
        if (v->ign.checked_ns && ns - v->ign.checked_ns < IGN_RECHECK_NS)
                return;
        v->ign.checked_ns = ns;

        if (fstatat(v->ign.git_fd, "index", &st, AT_SYMLINK_NOFOLLOW) < 0)
                st = (struct stat) {};
        if (!same_file_version(&st, &v->ign.index_st)) {
                _cleanup_free_ char *error = NULL;
                int r = 0;

                v->ign.index = git_index_free(v->ign.index);
                v->ign.index_st = st;
                if (st.st_ino != 0) {
                        r = git_index_load_at(v->ign.git_fd, "index", GIT_HASH_SHA1, &v->ign.index, &error);
                        if (r == -EBADMSG) {
                                error = mfree(error);
                                r = git_index_load_at(v->ign.git_fd, "index", GIT_HASH_SHA256, &v->ign.index, &error);
                        }
                }
                if (r < 0)
                        ign_warn(v, ".git/index", r, error);
        }

        {
                _cleanup_close_ int info = openat(v->ign.git_fd, "info", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                if (info < 0 || fstatat(info, "exclude", &st, AT_SYMLINK_NOFOLLOW) < 0)
                        st = (struct stat) {};
                if (!same_file_version(&st, &v->ign.info_st)) {
                        _cleanup_free_ char *error = NULL;
                        int r = 0;

                        v->ign.info = v->ign.info ? ignore_list_free(v->ign.info) : NULL;
                        v->ign.info_st = st;
                        if (st.st_ino != 0)
                                r = ignore_list_load_at(info, "exclude", "", ".git/info/exclude", &v->ign.info, &error);
                        if (r < 0)
                                ign_warn(v, ".git/info/exclude", r, error);
                }
        }
}

/* A host directory's entry changed (the watcher, or the view itself): a .gitignore is read again; after the index, tracked files leave ignored state. */
void ign_note_change(View *v, Node *dir, const char *name) {
        char rel[VIEW_PATH_MAX];

        if (!v->ign.on)
                return;
        if (dir->parent == &v->root && dir->dir.zone == VIEW_ZONE_GIT_TOP && streq(name, "index")) {
                ign_promote_tracked(v);
                return;
        }
        if (!streq(name, ".gitignore") || node_relpath(v, dir, NULL, rel, sizeof(rel)) < 0)
                return;
        ignore_cache_forget(v->ign.cache, rel);
}

/* M(dir), the mirror of host directory dir (create: made, with its parents). */
int ign_mirror(View *v, Node *dir, bool create) {
        int pfd, fd;

        if (dir == &v->root)
                return v->ign.fd;
        if (dir->ign_mfd >= 0)
                return dir->ign_mfd;
        if (!create && dir->ign_absent)
                return -ENOENT;
        if (!dir->parent)
                return -ESTALE;
        pfd = ign_mirror(v, dir->parent, create);
        if (pfd >= 0) {
                _cleanup_close_ int sub = -EBADF;

                if (create && mkdirat(pfd, "d", 0700) < 0 && errno != EEXIST)
                        return -errno;
                sub = openat(pfd, "d", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub < 0)
                        pfd = -errno;
                else if (create && mkdirat(sub, dir->name, 0700) < 0 && errno != EEXIST)
                        return -errno;
                else if ((fd = openat(sub, dir->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                        pfd = -errno;
                else {
                        dir->ign_mfd = fd;
                        dir->ign_absent = false;
                        return fd;
                }
        }
        if (pfd == -ENOENT && !create)
                dir->ign_absent = true;
        return pfd;
}

/* E(dir): where the ignored entries of dir live, by their own names. */
int ign_entries(View *v, Node *dir, bool create) {
        int mfd, fd;

        if (dir->in_state)
                return state_dir(v, dir, create);
        if (dir->ign_efd >= 0)
                return dir->ign_efd;
        mfd = ign_mirror(v, dir, create);
        if (mfd < 0)
                return mfd;
        if (create && mkdirat(mfd, "e", 0755) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(mfd, "e", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        dir->ign_efd = fd;
        return fd;
}

/*
 * The class of name in host directory dir once Ignored Workspace State is
 * considered; c is what the git and integration-file rule said.
 */
ViewClass ign_class(View *v, Node *dir, const char *name, bool is_dir, ViewClass c) {
        ViewIgnoreFacts f = { .isolate = true };
        char rel[VIEW_PATH_MAX];
        struct stat st;
        bool listed;
        int efd;

        if (!v->ign.on || dir->in_state || c != VIEW_SHARED || dir->dir.zone != VIEW_ZONE_WORK || streq(name, ".git") ||
            node_relpath(v, dir, name, rel, sizeof(rel)) < 0)
                return c;
        ign_refresh(v);
        efd = ign_entries(v, dir, false);
        f.in_state = efd >= 0 && fstatat(efd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0;
        if (f.in_state && v->ign.index && git_index_is_tracked(v->ign.index, rel) && ign_promote(v, dir, name) > 0)
                f.in_state = false;
        listed = view_path_listed(v->ign.shared, rel);
        if (!f.in_state || listed) {
                IgnoreSet set = { .load_dir = ignore_cache_load, .userdata = v->ign.cache };
                _cleanup_free_ char *error = NULL;
                int r;

                set.info_exclude = v->ign.info;
                set.excludes_file = v->ign.excludes;
                r = ignore_match(&set, rel, is_dir, NULL, &error);
                if (r < 0)
                        ign_warn(v, "the ignore rules", r, error);
                f.excluded = r < 0 || r == IGNORE_EXCLUDED;
                f.tracked = f.excluded && v->ign.index &&
                            (git_index_is_tracked(v->ign.index, rel) || git_index_has_tracked_below(v->ign.index, rel));
        }
        f.shared = listed;
        return view_ignored_class(&dir->dir, c, &f);
}
