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

int index_judge(const IndexJudge *j, const void *data, size_t size, char **ret_data, size_t *ret_size, char **ret_why) {
        _cleanup_git_index_ GitIndex *old = NULL, *first = NULL;
        _cleanup_free_ char *error = NULL;
        IndexWant want = { .lists = &j->lists, .prefix = j->prefix };
        GitIndex none = {};
        GitHashAlgo algo, first_algo = GIT_HASH_SHA1;
        int r;

        *ret_data = NULL;
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
         * would warn about it at every status. */
        return git_index_without_caches(data, size, first, first_algo, git_index_same_caches(old, first), ret_data,
                                        ret_size);
}
