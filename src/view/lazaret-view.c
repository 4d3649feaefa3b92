/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-view: the workspace view. A FUSE file system that the Runtime
 * Supervisor mounts in its own mount namespace before `runsc run` and
 * that runsc binds at /workspace. It serves the workspace directory that
 * the coordinator checked (passed as an fd, never reopened by path) and
 * decides per name which side of the view it lives on (view-policy.h):
 * the host's directory (shared or read-only) or Domain state, a tree
 * below the Domain Root that mirrors the workspace's paths and shadows
 * the host ("protected": copy-up on the first write, whiteouts for
 * deletions).
 *
 * Every host object is held as an O_PATH fd and reached from its parent's
 * fd with one name, never through a symbolic link. The view never makes a
 * host file writable for group or others, never sets a set-ID bit and
 * never changes an owner (chown succeeds and changes nothing, as the
 * set-ID filter does for gVisor's own files).
 *
 *   lazaret-view --workspace-fd N --state-fd N --fuse-fd N [--protect PATH]... [--protect-name NAME]...
 *                [--unprotect NAME]... [--git-dir]
 *                [--entry-timeout S] [--ignored-fd N [--excludes-fd N] [--shared-ignored PATH]...]
 *                [--relay-fd N]
 *
 * --relay-fd: the host-edit relay's write end (spec 4.6): the view is the
 * relay's source, and writes there the path of each host change it judged
 * not to be the sandbox's own.
 *
 * --git-dir: the served directory is a git dir of the host's own (a linked
 * worktree's common dir, a submodule's git dir), not a workspace.
 *
 * Readiness: one byte on fd 3 once the session is mounted and served.
 */
#define FUSE_USE_VERSION 35


#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/openat2.h>

#include <fuse_lowlevel.h>
#include <linux/capability.h>
#include <seccomp.h>

#include "cleanup.h"
#include "fs-util.h"
#include "fuse-init.h"
#include "fuse-pool.h"
#include "git-ignore.h"
#include "git-index.h"
#include "harden.h"
#include "macro.h"
#include "parse-util.h"
#include "strv.h"
#include "util.h"
#include "view-ignored.h"
#include "view-policy.h"
#include "watch-proto.h"

/* What a whiteout in Domain state points to: no name the sandbox can create (symlink() refuses it). */
#define WHITEOUT_TARGET VIEW_WHITEOUT_TARGET
#define VIEW_PATH_MAX 4096
/* The view's own temporary names on the host's side (a copy renamed into place): never listed, never relayed. */
#define RENAME_TMP_PREFIX ".lazaret-rename."
#define HASH_SIZE 65536u

typedef struct Node Node;
struct Node {
        uint64_t nlookup;               /* the kernel's references; the root keeps one more */
        uint64_t children;              /* nodes whose parent this is: it lives while they do */
        int fd;                         /* directories: O_PATH of the backing directory, on the host
                                         * or in Domain state; -1 for everything else, which is
                                         * opened again from its parent by name for each request
                                         * (pin()), so that the view holds one fd per directory,
                                         * not per file the kernel remembers */
        bool in_state;                  /* fd is in Domain state */
        bool is_dir;
        mode_t type;                    /* S_IFMT of the object (node_denotes()) */
        FileBirth birth;                /* the object's birth time, where its file system keeps one (node_denotes()) */
        bool stale;                     /* its object is gone, its number given to another (node_get()) */
        uint8_t gen;                    /* nodes before it that stood for objects with its number (node_hash()) */
        ViewClass cls;
        ViewDir dir;                    /* directories: what lies in them */
        dev_t dev;
        ino_t ino;
        Node *parent;                   /* directories: where they were last seen, for their path */
        char *name;
        char *alt_name;                 /* files: another name of it in the same parent, last seen before name */
        int state_dirfd;                /* directories: the Domain state directory at the same path, or -1 */
        int wd;                         /* host directories: the inotify watch, or -1 */
        /* What the kernel was last told of the host object (told_valid): the
         * watcher drops an event that changed nothing beyond it, the echo of
         * the sandbox's own change. */
        bool told_valid;
        unsigned busy;                  /* requests changing it (a directory: its entries) on the host now */
        uint64_t changed_ms;            /* when a request last changed it on the host (CLOCK_MONOTONIC) */
        mode_t told_mode;
        off_t told_size;
        struct timespec told_mtime, told_ctime;
        int ign_mfd, ign_efd;           /* host directories: their ignored state's mirror and entries, or -1 */
        bool ign_absent;                /* host directories: no mirror in ignored state (only the view makes one) */
        Node *hnext;
        Node *wnext;                    /* in the watch table */
};

static struct {
        pthread_mutex_t lock;
        Node *hash[HASH_SIZE];
        Node root;
        int state_fd;                   /* Domain state: the shadow tree's root */
        ViewLists lists;                /* protected paths (the host's git configuration, the profile), names, removed names */
        double timeout;
        bool no_open;                   /* the kernel opens files without asking (FUSE_CAP_NO_OPEN_SUPPORT) */
        /* Host changes: an inotify watch on every host directory the kernel
         * holds, and a pipe of invalidations the request handlers ask for
         * (they may not ask the kernel themselves while it waits for them). */
        struct fuse_session *se;
        int ifd;
        int inval_pipe[2];
        Node *watches[4096];
        bool told_no_watch;             /* the line about the kernel's watch limit is written */
        /* Names of host directories that requests made, removed or renamed
         * lately, by "<directory's node id>/<name>": their host events are the
         * sandbox's own, never relayed to the watchers inside. */
        WatchRecent own_names;
        /* The one rename between the sides under way (rename_across(), from
         * its check to its end, a copy outside v.lock): its source, which
         * the rename holds a reference of. Requests that would change it or
         * anything below it wait for moved (wait_unmoved()). */
        Node *moving;
        pthread_cond_t moved;
} v = { .lock = PTHREAD_MUTEX_INITIALIZER, .moved = PTHREAD_COND_INITIALIZER, .ifd = -1, .inval_pipe = { -1, -1 } };

/* A record of the handlers' invalidation pipe, and of the notifier's (apply_inval()). */
typedef struct Inval {
        uint64_t node;                  /* fuse_ino_t */
        uint16_t len;                   /* 0: the node itself */
        bool listing;                   /* also the node's attributes and cached data (a directory's listing) */
        char name[NAME_MAX + 1];
} Inval;

static unsigned hash_of(dev_t dev, ino_t ino, bool in_state, ViewClass c) {
        uint64_t h = (uint64_t) ino * 0x9E3779B97F4A7C15ull ^ (uint64_t) dev ^ ((uint64_t) in_state << 1) ^ (uint64_t) c;
        return (unsigned) (h >> 20) % HASH_SIZE;
}

static Node *node_of(fuse_ino_t ino) {
        return ino == FUSE_ROOT_ID ? &v.root : (Node *) (uintptr_t) ino;
}

static fuse_ino_t id_of(Node *n) {
        return n == &v.root ? FUSE_ROOT_ID : (fuse_ino_t) (uintptr_t) n;
}

static void proc_path(int fd, char buf[static 32]) {
        snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

/* ---- paths and Domain state ---------------------------------------------- */

/* The workspace-relative path of a directory node (or of name in it), "" for the top. */
static int node_relpath(Node *dir, const char *name, char *buf, size_t size) {
        const char *parts[256];
        size_t n = 0, len = 0;

        for (Node *p = dir; p && p != &v.root; p = p->parent) {
                if (n == ELEMENTSOF(parts) - 1)
                        return -ENAMETOOLONG;
                parts[n++] = p->name;
        }
        buf[0] = 0;
        while (n > 0) {
                const char *s = parts[--n];
                int k = snprintf(buf + len, size - len, "%s%s", len ? "/" : "", s);
                if (k < 0 || (size_t) k >= size - len)
                        return -ENAMETOOLONG;
                len += (size_t) k;
        }
        if (name) {
                int k = snprintf(buf + len, size - len, "%s%s", len ? "/" : "", name);
                if (k < 0 || (size_t) k >= size - len)
                        return -ENAMETOOLONG;
        }
        return 0;
}

/* The Domain state directory of dir, if it exists (create: made, with its parents). */
static int state_dir(Node *dir, bool create) {
        char rel[VIEW_PATH_MAX];
        int fd, r;

        if (dir->state_dirfd >= 0)
                return dir->state_dirfd;
        if (dir == &v.root)
                return v.state_fd;
        if (create) {
                int pfd = state_dir(dir->parent, true);
                struct stat st;

                if (pfd < 0)
                        return pfd;
                /* As the host's directory is, when there is one. */
                if (dir->in_state || fstatat(dir->fd, "", &st, AT_EMPTY_PATH) < 0)
                        st.st_mode = 0755;
                if (mkdirat(pfd, dir->name, (st.st_mode & 07755) | 0700) < 0 && errno != EEXIST)
                        return -errno;
        }
        r = node_relpath(dir, NULL, rel, sizeof(rel));
        if (r < 0)
                return r;
        fd = openat_beneath(v.state_fd, rel, O_PATH | O_DIRECTORY, 0, true);
        if (fd < 0)
                return fd;
        dir->state_dirfd = fd;
        return fd;
}

static bool is_whiteout(int dirfd, const char *name) {
        char target[sizeof(WHITEOUT_TARGET) + 1];
        ssize_t k = readlinkat(dirfd, name, target, sizeof(target));
        return k == (ssize_t) strlen(WHITEOUT_TARGET) && memcmp(target, WHITEOUT_TARGET, (size_t) k) == 0;
}

static int make_whiteout(int dirfd, const char *name) {
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT && errno != EISDIR)
                return -errno;
        if (symlinkat(WHITEOUT_TARGET, dirfd, name) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

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
 * forgotten when the watcher sees it change. With v.lock held throughout.
 */
#define IGN_RECHECK_NS (100 * 1000 * 1000LL)

static struct {
        bool on;                        /* isolate_ignored */
        int fd;                         /* <Domain Root>/ignored, M(top); -1 when off */
        char **shared;                  /* shared_ignored: the host's, read-only */
        int git_fd;                     /* the workspace's .git directory, or -1 */
        IgnoreCache *cache;             /* each host directory's .gitignore */
        IgnoreList *excludes;           /* the host user's core.excludesFile, as the coordinator copied it */
        IgnoreList *info;               /* .git/info/exclude */
        struct stat info_st, index_st;
        GitIndex *index;
        long long checked_ns;
        bool warned;
} ign = { .fd = -1, .git_fd = -1 };

static bool same_file_version(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static void ign_warn(const char *what, int r, const char *error) {
        /* Once per daemon: the rule then errs towards isolating (an unreadable
         * index tracks nothing, a rule file it cannot read excludes). */
        if (ign.warned)
                return;
        ign.warned = true;
        fprintf(stderr, "lazaret-view: cannot read %s (%s): untracked paths there are kept in ignored state\n", what,
                error ?: strerror(-r));
}

static int ign_read_dir(void *userdata, const char *dir, IgnoreList **ret, char **ret_error) {
        (void) userdata;
        return view_read_gitignore(v.root.fd, dir, ret, ret_error);
}

/* The index and info/exclude as they are now (at most IGN_RECHECK_NS old). */
static void ign_refresh(void) {
        struct timespec now;
        long long ns;
        struct stat st;

        if (ign.git_fd < 0)
                return;
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
        ns = now.tv_sec * 1000000000LL + now.tv_nsec;
        if (ign.checked_ns && ns - ign.checked_ns < IGN_RECHECK_NS)
                return;
        ign.checked_ns = ns;

        if (fstatat(ign.git_fd, "index", &st, AT_SYMLINK_NOFOLLOW) < 0)
                st = (struct stat) {};
        if (!same_file_version(&st, &ign.index_st)) {
                _cleanup_free_ char *error = NULL;
                int r = 0;

                ign.index = git_index_free(ign.index);
                ign.index_st = st;
                if (st.st_ino != 0) {
                        r = git_index_load_at(ign.git_fd, "index", GIT_HASH_SHA1, &ign.index, &error);
                        if (r == -EBADMSG) {
                                error = mfree(error);
                                r = git_index_load_at(ign.git_fd, "index", GIT_HASH_SHA256, &ign.index, &error);
                        }
                }
                if (r < 0)
                        ign_warn(".git/index", r, error);
        }

        {
                _cleanup_close_ int info = openat(ign.git_fd, "info", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                if (info < 0 || fstatat(info, "exclude", &st, AT_SYMLINK_NOFOLLOW) < 0)
                        st = (struct stat) {};
                if (!same_file_version(&st, &ign.info_st)) {
                        _cleanup_free_ char *error = NULL;
                        int r = 0;

                        ign.info = ign.info ? ignore_list_free(ign.info) : NULL;
                        ign.info_st = st;
                        if (st.st_ino != 0)
                                r = ignore_list_load_at(info, "exclude", "", ".git/info/exclude", &ign.info, &error);
                        if (r < 0)
                                ign_warn(".git/info/exclude", r, error);
                }
        }
}

static void ign_promote_tracked(void);
static int ign_promote(Node *dir, const char *name);

/* A host directory's entry changed (the watcher, or the view itself): a .gitignore is read again; after the index, tracked files leave ignored state. */
static void ign_note_change(Node *dir, const char *name) {
        char rel[VIEW_PATH_MAX];

        if (!ign.on)
                return;
        if (dir->parent == &v.root && dir->dir.zone == VIEW_ZONE_GIT_TOP && streq(name, "index")) {
                ign_promote_tracked();
                return;
        }
        if (!streq(name, ".gitignore") || node_relpath(dir, NULL, rel, sizeof(rel)) < 0)
                return;
        ignore_cache_forget(ign.cache, rel);
}

/* M(dir), the mirror of host directory dir (create: made, with its parents). */
static int ign_mirror(Node *dir, bool create) {
        int pfd, fd;

        if (dir == &v.root)
                return ign.fd;
        if (dir->ign_mfd >= 0)
                return dir->ign_mfd;
        if (!create && dir->ign_absent)
                return -ENOENT;
        if (!dir->parent)
                return -ESTALE;
        pfd = ign_mirror(dir->parent, create);
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
static int ign_entries(Node *dir, bool create) {
        int mfd, fd;

        if (dir->in_state)
                return state_dir(dir, create);
        if (dir->ign_efd >= 0)
                return dir->ign_efd;
        mfd = ign_mirror(dir, create);
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
static ViewClass ign_class(Node *dir, const char *name, bool is_dir, ViewClass c) {
        ViewIgnoreFacts f = { .isolate = true };
        char rel[VIEW_PATH_MAX];
        struct stat st;
        bool listed;
        int efd;

        if (!ign.on || dir->in_state || c != VIEW_SHARED || dir->dir.zone != VIEW_ZONE_WORK || streq(name, ".git") ||
            node_relpath(dir, name, rel, sizeof(rel)) < 0)
                return c;
        ign_refresh();
        efd = ign_entries(dir, false);
        f.in_state = efd >= 0 && fstatat(efd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0;
        if (f.in_state && ign.index && git_index_is_tracked(ign.index, rel) && ign_promote(dir, name) > 0)
                f.in_state = false;
        listed = view_path_listed(ign.shared, rel);
        if (!f.in_state || listed) {
                IgnoreSet set = { .load_dir = ignore_cache_load, .userdata = ign.cache };
                _cleanup_free_ char *error = NULL;
                int r;

                set.info_exclude = ign.info;
                set.excludes_file = ign.excludes;
                r = ignore_match(&set, rel, is_dir, NULL, &error);
                if (r < 0)
                        ign_warn("the ignore rules", r, error);
                f.excluded = r < 0 || r == IGNORE_EXCLUDED;
                f.tracked = f.excluded && ign.index &&
                            (git_index_is_tracked(ign.index, rel) || git_index_has_tracked_below(ign.index, rel));
        }
        f.shared = listed;
        return view_ignored_class(&dir->dir, c, &f);
}

/* Where a node of Domain state lives: its parent's Domain state directory, protected or ignored. */
static int state_parent(Node *n) {
        if (n->cls == VIEW_IGNORED)
                return ign_entries(n->parent, false);
        return state_dir(n->parent, false);
}

/* ---- nodes ---------------------------------------------------------------- */

static bool node_denotes(const Node *n, const struct stat *st, const FileBirth *birth);

/*
 * n opened by name from its parent's directory pfd with flags (which
 * include O_NOFOLLOW) and insisted on (device, inode number and
 * node_denotes(): a new object given a deleted one's number and name is
 * not it); by its other name when its name is gone or leads elsewhere,
 * which then becomes its name. -ESTALE when neither leads to it. With
 * v.lock held.
 */
static int open_by_name(Node *n, int pfd, int flags, struct stat *ret_st) {
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
 * the stat that the identity was checked on. With v.lock held.
 */
static int state_dir(Node *dir, bool create);
static int pin_locked(Node *n, int *ret_fd, bool *ret_owned, struct stat *ret_st) {
        int pfd, fd;

        if (n->fd >= 0) {
                *ret_fd = n->fd;
                *ret_owned = false;
                return 0;
        }
        if (!n->parent)
                return -ESTALE;
        pfd = n->in_state ? state_parent(n) : n->parent->fd;
        if (pfd < 0)
                return -ESTALE;
        fd = open_by_name(n, pfd, O_PATH | O_NOFOLLOW | O_CLOEXEC, ret_st);
        if (fd < 0)
                return fd;
        *ret_fd = fd;
        *ret_owned = true;
        return 1;
}

typedef struct Pin {
        int fd;
        bool owned;
        bool has_st;            /* st: what pin() saw when it opened fd */
        struct stat st;
} Pin;

static void pin_done(Pin *p) {
        if (p->owned)
                safe_close(p->fd);
}

static void wait_unmoved(const Node *a, const Node *b);
static void busy_begin(Node *n);

/* Pins n; for a change (busy), once no rename between the sides covers it, and busy_begin(n) with it. */
static int pin_for(Node *n, Pin *ret, bool busy) {
        int r;

        pthread_mutex_lock(&v.lock);
        if (busy)
                wait_unmoved(n, NULL);
        r = pin_locked(n, &ret->fd, &ret->owned, &ret->st);
        if (r >= 0 && busy)
                busy_begin(n);
        pthread_mutex_unlock(&v.lock);
        ret->has_st = r > 0;
        return r < 0 ? r : 0;
}

static int pin(Node *n, Pin *ret) {
        return pin_for(n, ret, false);
}

static void watch_add(Node *n) {
        char pp[32];

        n->wd = -1;
        if (v.ifd < 0 || !n->is_dir || n->in_state || n->fd < 0)
                return;
        proc_path(n->fd, pp);
        n->wd = inotify_add_watch(v.ifd, pp, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY |
                                  IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |
                                  IN_EXCL_UNLINK);
        if (n->wd < 0) {
                /* Out of watches: its entries are not cached (timeout 0), its host edits not relayed. */
                if (errno == ENOSPC && !v.told_no_watch) {
                        char rel[VIEW_PATH_MAX];
                        v.told_no_watch = true;
                        if (node_relpath(n, NULL, rel, sizeof(rel)) < 0)
                                snprintf(rel, sizeof(rel), "?");
                        fprintf(stderr, "lazaret-view: the kernel's limit on inotify watches "
                                "(fs.inotify.max_user_watches) is reached: host edits in /%s and in directories "
                                "opened after it do not reach file watchers inside the sandbox, and the kernel "
                                "caches nothing of them (README.md, \"Troubleshooting\")\n", rel);
                }
                return;
        }
        for (Node *o = v.watches[(unsigned) n->wd % ELEMENTSOF(v.watches)]; o; o = o->wnext)
                if (o->wd == n->wd) {
                        /* The same directory as another node: that one keeps the watch. */
                        n->wd = -1;
                        return;
                }
        n->wnext = v.watches[(unsigned) n->wd % ELEMENTSOF(v.watches)];
        v.watches[(unsigned) n->wd % ELEMENTSOF(v.watches)] = n;
}

static void watch_forget(Node *n, bool remove) {
        if (n->wd < 0)
                return;
        for (Node **p = &v.watches[(unsigned) n->wd % ELEMENTSOF(v.watches)]; *p; p = &(*p)->wnext)
                if (*p == n) {
                        *p = n->wnext;
                        break;
                }
        if (remove)
                (void) inotify_rm_watch(v.ifd, n->wd);
        n->wd = -1;
}

static Node *watch_find(int wd) {
        for (Node *n = v.watches[(unsigned) wd % ELEMENTSOF(v.watches)]; n; n = n->wnext)
                if (n->wd == wd)
                        return n;
        return NULL;
}

/* How long the kernel may keep an entry of dir: long while a watch tells us of host changes. */
static double timeout_in(const Node *dir) {
        /* Ignored state changes only through the view. */
        return dir && (dir->wd >= 0 || (dir->in_state && dir->cls == VIEW_IGNORED)) ? v.timeout : 0;
}

/* Asks the watcher thread to drop the kernel's entry name in dir (or, name NULL, what it caches of dir). */
static void inval_later(Node *dir, const char *name) {
        Inval i = { .node = (uint64_t) (uintptr_t) dir };
        size_t len = name ? strlen(name) : 0;

        if (v.inval_pipe[1] < 0 || len > NAME_MAX)
                return;
        if (dir == &v.root)
                i.node = FUSE_ROOT_ID;
        i.len = (uint16_t) len;
        memcpy(i.name, name ?: "", len);
        /* One whole record per write, below PIPE_BUF: never interleaved. A full pipe loses
         * the invalidation; the entry then lives until its timeout. */
        (void) !write(v.inval_pipe[1], &i, sizeof(i));
}

/* After a change that moves names between the sides (a HEAD or a control name came or went). */
static void inval_facts(Node *dir, const char *name) {
        /* A .gitignore the sandbox made, removed or renamed counts at once (a write: once the watcher sees it). */
        ign_note_change(dir, name);
        if (!view_name_needs_facts(&dir->dir, name))
                return;
        inval_later(dir, "HEAD");
        for (const char *const *p = view_fact_names(); *p; p++)
                inval_later(dir, *p);
}

static int state_dir(Node *dir, bool create);
static void node_free(Node *n) {
        watch_forget(n, true);
        safe_close(n->fd);
        safe_close(n->state_dirfd);
        safe_close(n->ign_mfd);
        safe_close(n->ign_efd);
        free(n->name);
        free(n->alt_name);
        free(n);
}

static void forget_one(Node *n, uint64_t count);

static void unhash(Node *n) {
        for (Node **p = &v.hash[hash_of(n->dev, n->ino, n->in_state, n->cls)]; *p; p = &(*p)->hnext)
                if (*p == n) {
                        *p = n->hnext;
                        return;
                }
}

/* A node goes when the kernel forgot it and no node has it for a parent. With v.lock held. */
static void node_release(Node *n) {
        while (n && n != &v.root && n->nlookup == 0 && n->children == 0) {
                Node *parent = n->parent;

                unhash(n);
                node_free(n);
                if (parent)
                        parent->children--;
                n = parent;
        }
}

static void set_parent(Node *n, Node *parent) {
        Node *old = n->parent;

        if (old == parent)
                return;
        parent->children++;
        n->parent = parent;
        if (old) {
                old->children--;
                node_release(old);
        }
}

static void forget_one(Node *n, uint64_t count) {
        if (n == &v.root)
                return;
        n->nlookup = n->nlookup > count ? n->nlookup - count : 0;
        node_release(n);
}

/* Whether a protected path lies below name in dir (view_lists_hold_below()). */
static bool holds_listed(Node *dir, const char *name) {
        char rel[VIEW_PATH_MAX];

        return v.lists.paths && v.lists.paths[0] && node_relpath(dir, name, rel, sizeof(rel)) >= 0 &&
               view_lists_hold_below(&v.lists, rel);
}

static ViewListed listed_of(Node *dir, const char *name) {
        char rel[VIEW_PATH_MAX];
        bool paths = v.lists.paths && v.lists.paths[0];

        return view_listed(&v.lists, &dir->dir, paths && node_relpath(dir, name, rel, sizeof(rel)) >= 0 ? rel : NULL,
                           name);
}

static bool host_has(Node *dir, const char *name) {
        struct stat st;
        return !dir->in_state && fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0;
}

static bool state_has(Node *dir, const char *name) {
        struct stat st;
        int fd = state_dir(dir, false);
        return fd >= 0 && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && !is_whiteout(fd, name);
}

/* Whether Domain state has anything at name in dir, a whiteout too: the host's entry is not seen there. */
static bool state_holds(Node *dir, const char *name) {
        struct stat st;
        int fd = state_dir(dir, false);
        return fd >= 0 && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0;
}

static ViewFacts facts_of(Node *dir) {
        ViewFacts f = {};

        f.host_head = host_has(dir, "HEAD");
        f.holds_head = f.host_head || state_has(dir, "HEAD");
        for (const char *const *p = view_fact_names(); *p && !f.host_control; p++)
                f.host_control = host_has(dir, *p);
        return f;
}

static ViewClass class_of(Node *dir, const char *name, bool is_dir) {
        ViewFacts f = {};

        if (view_name_needs_facts(&dir->dir, name))
                f = facts_of(dir);
        return ign_class(dir, name, is_dir, view_name_class(&dir->dir, &f, name, is_dir, listed_of(dir, name)));
}

/* An ignored name: in Domain state alone, the host's never seen. */
static int find_ignored(Node *dir, const char *name, ViewClass *ret_cls, int *ret_fd, bool *ret_in_state,
                        struct stat *ret_st, FileBirth *ret_birth) {
        int efd = ign_entries(dir, false), fd, r;

        if (efd < 0)
                return -ENOENT;
        fd = openat(efd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = stat_birth_at(fd, "", AT_EMPTY_PATH, ret_st, ret_birth);
        if (r < 0) {
                safe_close(fd);
                return r;
        }
        *ret_fd = fd;
        *ret_in_state = true;
        *ret_cls = VIEW_IGNORED;
        return 0;
}

/*
 * Finds name in dir on its side: a protected name in Domain state first
 * (a whiteout hides the host's), then on the host; others on the host
 * only. The result is an O_PATH fd and where it is, its attributes and
 * its birth time (node_denotes()).
 */
static int find(Node *dir, const char *name, ViewClass *ret_cls, int *ret_fd, bool *ret_in_state, struct stat *ret_st,
                FileBirth *ret_birth) {
        bool is_dir = false;
        ViewClass c;
        int fd, r;

        if (strlen(name) > NAME_MAX || strchr(name, '/') || streq(name, ".") || streq(name, ".."))
                return -EINVAL;
        /* Whether it is a directory matters only for ".git": a directory of that
         * name is only ever the host's (a directory in Domain state at that name
         * only carries protected entries further down); a file or symbolic link
         * is protected. */
        if (streq(name, ".git") && dir->dir.zone == VIEW_ZONE_WORK && !dir->in_state) {
                struct stat st;
                int sfd;

                is_dir = fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
                if (!is_dir && (sfd = state_dir(dir, false)) >= 0 && fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                    S_ISDIR(st.st_mode))
                        return -ENOENT;
        }
        if (ign.on && !dir->in_state && dir->dir.zone == VIEW_ZONE_WORK && !streq(name, ".git")) {
                /* An ignore pattern may speak of directories only. */
                struct stat st;
                is_dir = fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
        }
        c = dir->in_state ? dir->cls : class_of(dir, name, is_dir);
        if (c == VIEW_IGNORED)
                return find_ignored(dir, name, ret_cls, ret_fd, ret_in_state, ret_st, ret_birth);
        if (c == VIEW_PROTECTED) {
                int sfd = state_dir(dir, false);
                if (sfd >= 0) {
                        if (is_whiteout(sfd, name))
                                return -ENOENT;
                        fd = openat(sfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                        if (fd >= 0) {
                                struct stat sst, hst;

                                /* A directory on both sides is the host's, merged with its
                                 * Domain state directory (state_dir() finds that). */
                                if (!dir->in_state && fstat(fd, &sst) >= 0 && S_ISDIR(sst.st_mode) &&
                                    fstatat(dir->fd, name, &hst, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(hst.st_mode)) {
                                        safe_close(fd);
                                        goto host;
                                }
                                *ret_fd = fd;
                                *ret_in_state = true;
                                goto found;
                        }
                        if (errno != ENOENT)
                                return -errno;
                }
                if (dir->in_state)
                        return -ENOENT;
        }
host:
        /* The common case, a file: one statx() (an fstatat() that gives the
         * birth time too). Only a directory is held open (and insisted on: the
         * name may have been swapped in between). */
        r = stat_birth_at(dir->fd, name, AT_SYMLINK_NOFOLLOW, ret_st, ret_birth);
        if (r < 0)
                return r;
        *ret_in_state = false;
        *ret_cls = c;
        if (!S_ISDIR(ret_st->st_mode)) {
                *ret_fd = -EBADF;
                return 0;
        }
        fd = openat(dir->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOTDIR || errno == ENOENT ? -ESTALE : -errno;
        {
                struct stat st;
                if (fstat(fd, &st) < 0 || st.st_dev != ret_st->st_dev || st.st_ino != ret_st->st_ino) {
                        safe_close(fd);
                        return -ESTALE;
                }
        }
        *ret_fd = fd;
        return 0;
found:
        r = stat_birth_at(*ret_fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, ret_st, ret_birth);
        if (r < 0) {
                *ret_fd = safe_close(*ret_fd);
                return r;
        }
        *ret_cls = c;
        return 0;
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
 * it: its fd keeps the number in use.) With v.lock held.
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
 * v.lock held.
 */
static void node_hash(Node *n) {
        unsigned h = hash_of(n->dev, n->ino, n->in_state, n->cls);

        n->gen = 0;
        for (Node *m = v.hash[h]; m; m = m->hnext)
                if (m != n && m->stale && m->dev == n->dev && m->ino == n->ino && m->in_state == n->in_state &&
                    m->cls == n->cls && (uint8_t) (m->gen + 1) > n->gen)
                        n->gen = (uint8_t) (m->gen + 1);
        n->hnext = v.hash[h];
        v.hash[h] = n;
}

/* Takes fd. With v.lock held. */
static Node *node_get(Node *dir, const char *name, ViewClass c, int fd, bool in_state, const struct stat *st,
                      const FileBirth *birth) {
        Node *n;

        for (n = v.hash[hash_of(st->st_dev, st->st_ino, in_state, c)]; n; n = n->hnext)
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
                                set_parent(n, dir);
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
        node_hash(n);
        watch_add(n);
        return n;
}

/* The attributes the kernel is told of n, whose host object's are st. */
static void fill_stat(const Node *n, struct stat *st) {
        /* No set-ID program reaches the sandbox from the host either. A set-group-ID
         * directory stays one: gVisor must see it to make new directories the way
         * the host's kernel does (they inherit the bit). */
        st->st_mode &= ~(mode_t) (S_ISDIR(st->st_mode) ? S_ISUID : S_ISUID | S_ISGID);
        /* A new object with a number a stale node had: another number (node_hash()). */
        st->st_ino ^= (ino_t) n->gen << 56;
}

static uint64_t now_ms(void) {
        struct timespec ts;

        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

/*
 * The sandbox's own changes, for the host-edit relay (spec 4.6): the host
 * events of a node that a request changed, or of a name that one made,
 * removed or renamed, within WATCH_ECHO_WINDOW_MS are not relayed, as the
 * relay inside does not relay what gVisor saw changed inside.
 */
static void note_changed(Node *n) {
        __atomic_store_n(&n->changed_ms, now_ms(), __ATOMIC_RELAXED);
}

static bool changed_lately(const Node *n, uint64_t now) {
        uint64_t at = __atomic_load_n(&n->changed_ms, __ATOMIC_RELAXED);
        return at != 0 && now - at < WATCH_ECHO_WINDOW_MS;
}

static void own_name_key(Node *dir, const char *name, char buf[static NAME_MAX + 24]) {
        snprintf(buf, NAME_MAX + 24, "%" PRIx64 "/%s", (uint64_t) id_of(dir), name);
}

/* With v.lock held. */
static void own_name_note(Node *dir, const char *name) {
        char key[NAME_MAX + 24];

        own_name_key(dir, name, key);
        watch_recent_note(&v.own_names, key, now_ms());
}

static bool own_name_seen(Node *dir, const char *name, uint64_t now) {
        char key[NAME_MAX + 24];

        own_name_key(dir, name, key);
        return watch_recent_seen(&v.own_names, key, now, WATCH_ECHO_WINDOW_MS);
}

/*
 * Brackets a request's change of n on the host (of a directory: of its
 * entries) that is made outside v.lock: until busy_end(), after the
 * kernel's new view of n is recorded (told()), the watcher holds back the
 * events naming n, which are the change's own echo.
 */
static void busy_begin(Node *n) {
        /* Atomic, not under v.lock: the hot path of every write takes no lock for it. */
        __atomic_add_fetch(&n->busy, 1, __ATOMIC_SEQ_CST);
}

/* Never with v.lock held: a move waiting for changes to end (move_begin()) is woken here. */
static void busy_end(Node *n) {
        note_changed(n);
        __atomic_sub_fetch(&n->busy, 1, __ATOMIC_SEQ_CST);
        /* After the count, as move_begin() sets v.moving before it counts: one of the two sees the other. */
        if (__atomic_load_n(&v.moving, __ATOMIC_SEQ_CST)) {
                pthread_mutex_lock(&v.lock);
                pthread_cond_broadcast(&v.moved);
                pthread_mutex_unlock(&v.lock);
        }
}

/* Whether n is the source of the rename between the sides under way, or lies below it. With v.lock held. */
static bool move_covers(const Node *n) {
        if (!v.moving)
                return false;
        for (; n; n = n->parent)
                if (n == v.moving)
                        return true;
        return false;
}

/*
 * Before a request changes a or b (NULL: none) on the host or in Domain
 * state, outside v.lock or not: it waits while the rename between the
 * sides under way covers either, so that nothing changes below a source
 * between the check of what may move and the end of the move. With
 * v.lock held, which the wait releases.
 */
static void wait_unmoved(const Node *a, const Node *b) {
        while (move_covers(a) || move_covers(b))
                pthread_cond_wait(&v.moved, &v.lock);
}

/* Records what the kernel is about to be told of n. With v.lock held. */
static void told(Node *n, const struct stat *st) {
        n->told_valid = !n->in_state;
        n->told_mode = st->st_mode;
        n->told_size = st->st_size;
        n->told_mtime = st->st_mtim;
        n->told_ctime = st->st_ctim;
}

static bool told_matches(const Node *n, const struct stat *st) {
        return n->told_valid && n->dev == st->st_dev && n->ino == st->st_ino && n->told_mode == st->st_mode &&
               n->told_size == st->st_size && n->told_mtime.tv_sec == st->st_mtim.tv_sec &&
               n->told_mtime.tv_nsec == st->st_mtim.tv_nsec && n->told_ctime.tv_sec == st->st_ctim.tv_sec &&
               n->told_ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static int lookup_locked(Node *dir, const char *name, struct fuse_entry_param *e) {
        bool in_state = false;
        ViewClass c = VIEW_SHARED;
        FileBirth birth = {};
        int fd = -EBADF, r;
        Node *n;

        memset(e, 0, sizeof(*e));
        r = find(dir, name, &c, &fd, &in_state, &e->attr, &birth);
        if (r < 0)
                return r;
        n = node_get(dir, name, c, fd, in_state, &e->attr, &birth);
        if (!n)
                return -ENOMEM;
        told(n, &e->attr);
        fill_stat(n, &e->attr);
        e->ino = id_of(n);
        e->attr_timeout = e->entry_timeout = timeout_in(dir);
        return 0;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
        struct fuse_entry_param e;
        int r;

        pthread_mutex_lock(&v.lock);
        r = lookup_locked(node_of(parent), name, &e);
        if (r == -ENOENT) {
                /* A negative entry, cached like a positive one. */
                memset(&e, 0, sizeof(e));
                e.entry_timeout = timeout_in(node_of(parent));
        }
        pthread_mutex_unlock(&v.lock);
        if (r == -ENOENT) {
                fuse_reply_entry(req, &e);
                return;
        }
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
        pthread_mutex_lock(&v.lock);
        forget_one(node_of(ino), nlookup);
        pthread_mutex_unlock(&v.lock);
        fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
        pthread_mutex_lock(&v.lock);
        for (size_t i = 0; i < count; i++)
                forget_one(node_of(forgets[i].ino), forgets[i].nlookup);
        pthread_mutex_unlock(&v.lock);
        fuse_reply_none(req);
}

/* The reply to a GETATTR or SETATTR: st, what the host object of n is now. */
static void reply_attr(fuse_req_t req, Node *n, struct stat *st) {
        pthread_mutex_lock(&v.lock);
        told(n, st);
        pthread_mutex_unlock(&v.lock);
        fill_stat(n, st);
        fuse_reply_attr(req, st, n == &v.root ? timeout_in(n) : timeout_in(n->parent));
}

/* The attributes of n's host object through fd (pinned for this request) or the handle. */
static int stat_pinned(int fd, const struct fuse_file_info *fi, struct stat *ret) {
        if (fi && fi->fh)
                return fstat((int) fi->fh, ret) < 0 ? -errno : 0;
        return fstatat(fd, "", ret, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        Node *n = node_of(ino);
        struct stat st;
        Pin p = {};
        int r;

        if (fi && fi->fh)
                r = stat_pinned(-EBADF, fi, &st);
        else {
                /* Opened by name, the pin's identity check saw the attributes already. */
                r = pin(n, &p);
                if (r >= 0 && p.has_st)
                        st = p.st;
                else if (r >= 0)
                        r = stat_pinned(p.fd, NULL, &st);
                pin_done(&p);
        }
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        reply_attr(req, n, &st);
}

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
 * place. The node keeps its identity for the kernel. With v.lock held.
 */
static int copy_up(Node *n) {
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
                r = state_dir(n, true);
                return r < 0 ? r : 0;
        }
        sfd = state_dir(n->parent, true);
        if (sfd < 0)
                return sfd;
        r = pin_locked(n, &p.fd, &p.owned, NULL);
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
        inval_later(n, NULL);
        unhash(n);
        n->in_state = true;
        n->dev = nst.st_dev;
        n->ino = nst.st_ino;
        n->birth = birth;
        node_hash(n);
        return 0;
}

/*
 * The side a change to n goes to: -EROFS for a read-only node; a protected
 * one is copied up. 1: a protected directory of the host's, whose own
 * attributes stay the host's (the change is accepted and has no effect).
 */
static int prepare_change(Node *n) {
        int r;

        if (n->cls == VIEW_READONLY)
                return -EROFS;
        pthread_mutex_lock(&v.lock);
        r = copy_up(n);
        pthread_mutex_unlock(&v.lock);
        if (r >= 0 && n->cls == VIEW_PROTECTED && n->is_dir && !n->in_state)
                return 1;
        return r;
}

/* ---- attributes ---------------------------------------------------------- */

static void setattr_apply(fuse_req_t req, Node *n, int fd, struct stat *attr, int to_set, struct fuse_file_info *fi);

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
        Node *n = node_of(ino);
        _cleanup_(pin_done) Pin p = {};
        int r;

        if (to_set == FUSE_SET_ATTR_MODE) {
                /* A chmod to the mode it has (the host-edit relay's trigger) changes
                 * nothing: no copy-up, no host ctime. */
                struct stat st;
                r = pin(n, &p);
                if (r >= 0 && !p.has_st)
                        r = stat_pinned(p.fd, NULL, &p.st);
                if (r >= 0 && (p.st.st_mode & 07777) == (attr->st_mode & 07777)) {
                        st = p.st;
                        r = fi && fi->fh ? stat_pinned(-EBADF, fi, &st) : 0;
                        if (r < 0)
                                fuse_reply_err(req, -r);
                        else
                                reply_attr(req, n, &st);
                        return;
                }
                pin_done(&p);
                p = (Pin) {};
        }
        r = prepare_change(n);
        if (r == 0)
                r = pin_for(n, &p, true);
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
        setattr_apply(req, n, p.fd, attr, to_set, fi);
        busy_end(n);
}

/* The changes of a SETATTR, on the pinned fd (or the handle), then the reply. */
static void setattr_apply(fuse_req_t req, Node *n, int fd, struct stat *attr, int to_set, struct fuse_file_info *fi) {
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
        /* The reply from what the change left, through the fd it was made on. */
        r = stat_pinned(fd, fi, &st);
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        reply_attr(req, n, &st);
        return;
fail:
        fuse_reply_err(req, errno);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino) {
        _cleanup_(pin_done) Pin p = {};
        char buf[VIEW_PATH_MAX];
        ssize_t k;
        int r;

        r = pin(node_of(ino), &p);
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

/* ---- creating, removing, renaming ----------------------------------------- */

/*
 * Where a new entry name in dir goes: the directory fd on its side, after
 * removing a whiteout there; *ret_cls its class. -EROFS for a read-only name.
 */
static int create_side(Node *dir, const char *name, bool is_dir, ViewClass *ret_cls) {
        ViewClass c;
        int sfd;

        if (strlen(name) > NAME_MAX || strchr(name, '/'))
                return -EINVAL;
        if (dir->cls == VIEW_READONLY)
                return -EROFS;
        c = dir->in_state ? dir->cls : class_of(dir, name, is_dir);
        *ret_cls = c;
        if (c == VIEW_READONLY)
                return -EROFS;
        if (c == VIEW_SHARED)
                return dir->fd;
        if (c == VIEW_IGNORED)
                /* Opaque: whatever the host has at that name is not there. */
                return ign_entries(dir, true);
        /* Protected: in Domain state, whatever the host has there. */
        if (!dir->in_state && host_has(dir, name) && !state_has(dir, name)) {
                /* Replacing the host's entry: mknod/mkdir would fail on it too. */
                sfd = state_dir(dir, false);
                if (sfd < 0 || !is_whiteout(sfd, name))
                        return -EEXIST;
        }
        sfd = state_dir(dir, true);
        if (sfd < 0)
                return sfd;
        if (is_whiteout(sfd, name) && unlinkat(sfd, name, 0) < 0)
                return -errno;
        return sfd;
}

static void reply_new_entry(fuse_req_t req, Node *dir, const char *name) {
        struct fuse_entry_param e;
        int r;

        pthread_mutex_lock(&v.lock);
        own_name_note(dir, name);
        inval_facts(dir, name);
        r = lookup_locked(dir, name, &e);
        pthread_mutex_unlock(&v.lock);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_entry(req, &e);
}

/* A new entry's mode: as under umask 022 (spec C22); a set-ID bit is refused (-EPERM), as the set-ID filter does. */
static int create_mode(mode_t mode, mode_t *ret) {
        if (mode & (S_ISUID | S_ISGID))
                return -EPERM;
        *ret = mode & 07777 & ~(mode_t) (S_IWGRP | S_IWOTH);
        return 0;
}

/*
 * Makes name in dir on its side: a regular file or a directory of mode's
 * type and permissions, or (S_IFLNK) a symbolic link to target, and
 * answers the request. A protected path's parent is a directory for good:
 * no symbolic link takes its place.
 */
static void make_entry(fuse_req_t req, Node *dir, const char *name, mode_t mode, const char *target) {
        ViewClass c;
        int fd, r;

        pthread_mutex_lock(&v.lock);
        wait_unmoved(dir, NULL);
        fd = S_ISLNK(mode) && holds_listed(dir, name) ? -EPERM : create_side(dir, name, S_ISDIR(mode), &c);
        busy_begin(dir);
        pthread_mutex_unlock(&v.lock);
        if (fd < 0)
                r = fd;
        else if (S_ISDIR(mode))
                r = mkdirat(fd, name, mode & 07777) < 0 ? -errno : 0;
        else if (S_ISLNK(mode))
                r = symlinkat(target, fd, name) < 0 ? -errno : 0;
        else
                r = mknodat(fd, name, mode, 0) < 0 ? -errno : 0;
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                reply_new_entry(req, dir, name);
        busy_end(dir);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev) {
        Node *dir = node_of(parent);
        mode_t m;

        (void) rdev;
        /* Only regular files. A socket bound through FUSE is bound to the view's
         * inode, so a host process would reach a dead socket file: refused with
         * EACCES, which gVisor passes on (with EPERM it would quietly keep the
         * socket in its memory, listed inside and absent on the host). A FIFO or
         * device would exist on the host only as a trap for host tools. */
        if (!S_ISREG(mode)) {
                fuse_reply_err(req, S_ISSOCK(mode) ? EACCES : EPERM);
                return;
        }
        if (create_mode(mode, &m) < 0) {
                fuse_reply_err(req, EPERM);
                return;
        }
        make_entry(req, dir, name, S_IFREG | m, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode) {
        Node *dir = node_of(parent);
        mode_t m;

        /* S_ISGID on a directory comes from the kernel (a set-group-ID parent), never from the caller. */
        if (create_mode(mode & ~(mode_t) S_ISGID, &m) < 0) {
                fuse_reply_err(req, EPERM);
                return;
        }
        make_entry(req, dir, name, S_IFDIR | m, NULL);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name) {
        Node *dir = node_of(parent);

        if (streq(target, WHITEOUT_TARGET)) {
                fuse_reply_err(req, EINVAL);
                return;
        }
        make_entry(req, dir, name, S_IFLNK, target);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name) {
        Node *n = node_of(ino), *dir = node_of(parent);
        char pp[32];
        _cleanup_(pin_done) Pin p = {};
        ViewClass c;
        int fd, r;

        pthread_mutex_lock(&v.lock);
        wait_unmoved(dir, NULL);
        fd = create_side(dir, name, false, &c);
        busy_begin(dir);
        pthread_mutex_unlock(&v.lock);
        if (fd < 0) {
                r = fd;
                goto finish;
        }
        /* A second name is on the same side as the first, or it is not made. */
        if (c != n->cls || (c == VIEW_PROTECTED || c == VIEW_IGNORED) != n->in_state) {
                r = -EXDEV;
                goto finish;
        }
        r = pin(n, &p);
        if (r < 0)
                goto finish;
        proc_path(p.fd, pp);
        r = linkat(AT_FDCWD, pp, fd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
finish:
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                reply_new_entry(req, dir, name);
        busy_end(dir);
}

/* Removes name from dir on its side; a protected name the host also has gets a whiteout. */
static int remove_entry(Node *dir, const char *name, bool is_dir) {
        ViewClass c;
        int sfd;

        if (dir->cls == VIEW_READONLY)
                return -EROFS;
        c = dir->in_state ? dir->cls : class_of(dir, name, is_dir);
        if (c == VIEW_READONLY)
                return -EROFS;
        if (!dir->in_state && dir == &v.root && streq(name, ".git"))
                return -EBUSY;
        if (is_dir && holds_listed(dir, name))
                return -EBUSY;
        if (c == VIEW_IGNORED) {
                sfd = ign_entries(dir, false);
                if (sfd < 0)
                        return -ENOENT;
                return unlinkat(sfd, name, is_dir ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;
        }
        if (c == VIEW_SHARED)
                return unlinkat(dir->fd, name, is_dir ? AT_REMOVEDIR : 0) < 0 ? -errno : 0;

        sfd = state_dir(dir, false);
        if (sfd >= 0 && !is_whiteout(sfd, name)) {
                struct stat st;
                if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0) {
                        if (is_dir) {
                                /* Empty on both sides, as the sandbox sees it. */
                                _cleanup_close_ int hfd = -EBADF;
                                if (!dir->in_state && (hfd = openat(dir->fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) >= 0) {
                                        _cleanup_(closedirp) DIR *d = fdopendir(hfd);
                                        struct dirent *de;
                                        if (d) {
                                                hfd = -EBADF;
                                                while ((de = readdir(d)))
                                                        if (!streq(de->d_name, ".") && !streq(de->d_name, "..")) {
                                                                /* Entries hidden by whiteouts do not count. */
                                                                int ofd = openat(sfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                                                                bool hidden = ofd >= 0 && is_whiteout(ofd, de->d_name);
                                                                safe_close(ofd);
                                                                if (!hidden)
                                                                        return -ENOTEMPTY;
                                                        }
                                        }
                                }
                                /* Whiteouts inside go with it. */
                                {
                                        int dfd = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                                        _cleanup_(closedirp) DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
                                        struct dirent *de;
                                        if (dfd >= 0 && !d)
                                                safe_close(dfd);
                                        while (d && (de = readdir(d)))
                                                if (is_whiteout(dirfd(d), de->d_name))
                                                        (void) unlinkat(dirfd(d), de->d_name, 0);
                                }
                        }
                        if (unlinkat(sfd, name, is_dir ? AT_REMOVEDIR : 0) < 0)
                                return -errno;
                        if (!dir->in_state && host_has(dir, name))
                                return make_whiteout(sfd, name);
                        return 0;
                }
        }
        if (dir->in_state || !host_has(dir, name))
                return -ENOENT;
        if (is_dir) {
                /* The host's directory, seen through: it must look empty. */
                _cleanup_close_ int hfd = openat(dir->fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                _cleanup_(closedirp) DIR *d = hfd >= 0 ? fdopendir(hfd) : NULL;
                struct dirent *de;
                if (!d)
                        return -errno;
                hfd = -EBADF;
                while ((de = readdir(d)))
                        if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                                return -ENOTEMPTY;
        }
        sfd = state_dir(dir, true);
        if (sfd < 0)
                return sfd;
        return make_whiteout(sfd, name);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
        int r;

        pthread_mutex_lock(&v.lock);
        wait_unmoved(node_of(parent), NULL);
        r = remove_entry(node_of(parent), name, false);
        if (r >= 0)
                own_name_note(node_of(parent), name);
        inval_facts(node_of(parent), name);
        pthread_mutex_unlock(&v.lock);
        fuse_reply_err(req, -r);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name) {
        int r;

        pthread_mutex_lock(&v.lock);
        wait_unmoved(node_of(parent), NULL);
        r = remove_entry(node_of(parent), name, true);
        if (r >= 0)
                own_name_note(node_of(parent), name);
        pthread_mutex_unlock(&v.lock);
        fuse_reply_err(req, -r);
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
static void inval_below(Node *n) {
        for (size_t b = 0; b < HASH_SIZE; b++)
                for (Node *m = v.hash[b], *next; m; m = next) {
                        next = m->hnext;
                        for (Node *p = m->parent; p && p != &v.root; p = p->parent)
                                if (p == n) {
                                        inval_later(m->parent, m->name);
                                        unhash(m);
                                        if (m->is_dir)
                                                watch_forget(m, true);
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
static int tree_lands_shared(int dfd, const char *name, const ViewDir *d, const char *rel, unsigned depth,
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
                char sub[VIEW_PATH_MAX];
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
                c = view_name_class(d, &f, de->d_name, is_dir, view_listed(&v.lists, d, sub, de->d_name));
                if (c != VIEW_SHARED)
                        return 0;
                if (is_dir) {
                        ViewDir child = view_child_dir(d, de->d_name, c);
                        r = tree_lands_shared(dirfd(dir), de->d_name, &child, sub, depth + 1, budget);
                        if (r <= 0)
                                return r;
                }
        }
        return 1;
}

/* Whether a request is changing the moving source or anything below it now (busy_begin()). With v.lock held. */
static bool move_busy(void) {
        for (size_t b = 0; b < HASH_SIZE; b++)
                for (Node *m = v.hash[b]; m; m = m->hnext)
                        if (__atomic_load_n(&m->busy, __ATOMIC_SEQ_CST) > 0 && move_covers(m))
                                return true;
        return false;
}

/* Whether the view's Domain state holds anything at or below name in host directory dir (or the path is too long to tell). */
static bool state_below(Node *dir, const char *name) {
        char rel[VIEW_PATH_MAX];
        struct stat st;

        return node_relpath(dir, name, rel, sizeof(rel)) < 0 || fstatat(v.state_fd, rel, &st, AT_SYMLINK_NOFOLLOW) >= 0;
}

/*
 * The move of n begins (v.moving): requests that would change n or what
 * lies below it wait from now on, and those under way end first (each
 * busy_end() wakes it while a move is set). -EAGAIN while another move
 * holds it. With v.lock held, which the wait releases.
 */
static int move_begin(Node *n) {
        if (v.moving)
                return -EAGAIN;
        __atomic_store_n(&v.moving, n, __ATOMIC_SEQ_CST);
        while (move_busy())
                pthread_cond_wait(&v.moved, &v.lock);
        return 0;
}

static void move_end(void) {
        __atomic_store_n(&v.moving, NULL, __ATOMIC_SEQ_CST);
        pthread_cond_broadcast(&v.moved);
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
 * then on. With v.lock held; a copy and its removal run without it, so
 * that the view's watcher and its other requests go on (inside, gVisor
 * holds its own path walks and file I/O on the mount while its rename is
 * under way, so the sandbox waits anyway). Meanwhile the kernel keeps
 * every other request for the two directories and for a moving file (the
 * rename holds their inode locks); what it does not hold, a change below
 * a moving directory, waits in wait_unmoved(), and changes under way there
 * end before the check and the move begin. One move at a time (v.moving):
 * -EAGAIN while another runs.
 */
static int node_rebind(Node *n, Node *to, const char *newname, int tfd, ViewClass tc);
static int rename_across(Node *from, const char *name, Node *n, Node *to, const char *newname, int tfd, ViewClass tc,
                         unsigned flags) {
        _cleanup_close_ int sdup = -EBADF, tdup = -EBADF;
        char tmp[64];
        int sfd, r;

        if (flags & ~(unsigned) RENAME_NOREPLACE)
                return -EINVAL;
        sfd = n->in_state ? state_parent(n) : from->fd;
        if (sfd < 0)
                return sfd;
        /* Its own fds of the two directories: the nodes' may be replaced while it waits or copies without v.lock. */
        sdup = fcntl(sfd, F_DUPFD_CLOEXEC, 3);
        tdup = fcntl(tfd, F_DUPFD_CLOEXEC, 3);
        if (sdup < 0 || tdup < 0)
                return -errno;
        /* From here to its end nothing below the source changes: what the checks saw is what moves. */
        r = move_begin(n);
        if (r < 0)
                return r;
        if (n->is_dir && !n->in_state && state_below(from, name)) {
                /* A host directory that something protected lies below stays where
                 * it is, as on its own side (its Domain state would be left behind). */
                move_end();
                return -EXDEV;
        }
        if (n->is_dir && tc == VIEW_SHARED) {
                /* Out of ignored state: only a tree that is all shared there moves
                 * whole. */
                ViewDir d = view_child_dir(&to->dir, newname, tc);
                char rel[VIEW_PATH_MAX];
                unsigned budget = MOVE_CHECK_MAX;

                r = node_relpath(to, newname, rel, sizeof(rel));
                if (r >= 0)
                        r = tree_lands_shared(sdup, name, &d, rel, 0, &budget);
                if (r <= 0) {
                        move_end();
                        return r < 0 ? r : -EXDEV;
                }
        }
        if (syscall(SYS_renameat2, sdup, name, tdup, newname, flags) >= 0) {
                r = node_rebind(n, to, newname, tdup, tc);
                move_end();
                return r;
        }
        if (errno != EXDEV) {
                r = -errno;
                move_end();
                return r;
        }
        pthread_mutex_unlock(&v.lock);

        snprintf(tmp, sizeof(tmp), RENAME_TMP_PREFIX "%d.%lu", getpid(), (unsigned long) pthread_self());
        (void) rm_rf_at(tdup, tmp);
        r = copy_tree(sdup, name, tdup, tmp);
        if (r >= 0 && syscall(SYS_renameat2, tdup, tmp, tdup, newname, flags) < 0)
                r = -errno;
        if (r < 0)
                (void) rm_rf_at(tdup, tmp);
        else
                r = rm_rf_at(sdup, name);

        pthread_mutex_lock(&v.lock);
        if (r >= 0)
                r = node_rebind(n, to, newname, tdup, tc);
        move_end();
        return r;
}

/*
 * n now stands for newname in to (tfd: its directory on side tc), what it
 * was or a copy of it; it keeps its identity for the kernel.
 */
static int node_rebind(Node *n, Node *to, const char *newname, int tfd, ViewClass tc) {
        FileBirth birth;
        struct stat st;
        int r;

        r = stat_birth_at(tfd, newname, AT_SYMLINK_NOFOLLOW, &st, &birth);
        if (r < 0)
                return r;
        inval_later(n, NULL);
        if (n->is_dir)
                inval_below(n);
        unhash(n);
        if (n->is_dir) {
                int fd = openat(tfd, newname, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                watch_forget(n, true);
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
                        watch_add(n);
        }
        node_hash(n);
        return 0;
}

/*
 * A file in ignored state that the index now names (a `git checkout`
 * inside creates a file before it writes the index that tracks it) goes
 * to the host's side, where tracked files live: copied under a temporary
 * name, renamed into place only if the host has no such name, then
 * removed from ignored state. 1: moved. With v.lock held.
 */
static int ign_promote(Node *dir, const char *name) {
        char tmp[64];
        struct stat st;
        int efd = ign_entries(dir, false), r;

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
        own_name_note(dir, name);
        return 1;
}

/* After the index changed: the files the kernel holds from ignored state that it now tracks go to the host's side. */
static void ign_promote_tracked(void) {
        ign.checked_ns = 0;
        ign_refresh();
        if (!ign.index)
                return;
        for (size_t b = 0; b < HASH_SIZE; b++)
                for (Node *m = v.hash[b], *next; m; m = next) {
                        char rel[VIEW_PATH_MAX];

                        next = m->hnext;
                        if (m->stale || m->cls != VIEW_IGNORED || !m->in_state || m->is_dir || !m->parent || m->parent->in_state ||
                            move_covers(m) ||
                            node_relpath(m->parent, m->name, rel, sizeof(rel)) < 0 ||
                            !git_index_is_tracked(ign.index, rel))
                                continue;
                        if (ign_promote(m->parent, m->name) > 0) {
                                (void) node_rebind(m, m->parent, m->name, m->parent->fd, VIEW_SHARED);
                                inval_later(m->parent, m->name);
                        }
                }
}

/* After a host directory moved: its ignored state moves with it (best effort: left behind, it stays reachable at the old name). */
static void ign_follow_rename(Node *from, const char *name, Node *to, const char *newname) {
        _cleanup_close_ int fsub = -EBADF, tsub = -EBADF;
        struct stat st;
        int fm, tm;

        if (!ign.on || (fm = ign_mirror(from, false)) < 0 ||
            (fsub = openat(fm, "d", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
            fstatat(fsub, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return;
        tm = ign_mirror(to, true);
        if (tm < 0 || (mkdirat(tm, "d", 0700) < 0 && errno != EEXIST) ||
            (tsub = openat(tm, "d", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                return;
        (void) renameat(fsub, name, tsub, newname);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
                      unsigned int flags) {
        Node *from = node_of(parent), *to = node_of(newparent), *n = NULL;
        struct fuse_entry_param e;
        ViewClass tc;
        int r, tfd, sfd;

        pthread_mutex_lock(&v.lock);
again:
        /* Nothing below a source of a rename between the sides under way moves, and nothing moves into it. */
        wait_unmoved(from, to);
        r = lookup_locked(from, name, &e);
        if (r < 0)
                goto finish;
        n = node_of(e.ino);
        if (move_covers(n)) {
                forget_one(n, 1);
                n = NULL;
                wait_unmoved(from, to);
                goto again;
        }
        if (n->cls == VIEW_READONLY || (from == &v.root && streq(name, ".git") && !from->in_state)) {
                r = n->cls == VIEW_READONLY ? -EROFS : -EBUSY;
                goto finish;
        }
        if (holds_listed(from, name) || holds_listed(to, newname)) {
                /* A protected path's parent stays where it is, and nothing takes its place. */
                r = -EBUSY;
                goto finish;
        }
        tfd = create_side(to, newname, n->is_dir, &tc);
        if (tfd == -EEXIST) {
                /* Replacing an entry of the host's that is protected: on its side. */
                tfd = state_dir(to, true);
                tc = VIEW_PROTECTED;
        }
        if (tfd < 0) {
                r = tfd;
                goto finish;
        }
        if (n->cls == VIEW_PROTECTED && n->is_dir && !n->in_state) {
                r = -EBUSY;
                goto finish;
        }
        if (n->cls != tc && (n->cls == VIEW_IGNORED || tc == VIEW_IGNORED) && n->cls != VIEW_PROTECTED &&
            tc != VIEW_PROTECTED && !(n->cls == VIEW_SHARED && n->is_dir && from->dir.zone != VIEW_ZONE_WORK)) {
                r = rename_across(from, name, n, to, newname, tfd, tc, flags);
                if (r == -EAGAIN) {
                        /* One move at a time: another one, in other directories, is running. */
                        forget_one(n, 1);
                        n = NULL;
                        pthread_cond_wait(&v.moved, &v.lock);
                        goto again;
                }
                if (r < 0)
                        goto finish;
                goto moved;
        }
        if (n->cls != tc) {
                /* Across the sides: mv copies; git never renames so. */
                r = -EXDEV;
                goto finish;
        }
        if (tc == VIEW_SHARED) {
                if (n->is_dir) {
                        ViewDir a = view_child_dir(&from->dir, name, n->cls), b = view_child_dir(&to->dir, newname, tc);

                        /* A directory that something protected lies below stays where it
                         * is (its Domain state would be left behind), and so does one that
                         * would change what git may take it for. */
                        if (state_below(from, name) || !view_dir_equal(&a, &b)) {
                                r = -EXDEV;
                                goto finish;
                        }
                }
                if (syscall(SYS_renameat2, from->fd, name, to->fd, newname, flags) < 0) {
                        r = -errno;
                        goto finish;
                }
                if (n->is_dir)
                        ign_follow_rename(from, name, to, newname);
        } else if (tc == VIEW_IGNORED) {
                /* Both ignored: within ignored state. */
                sfd = state_parent(n);
                if (sfd < 0) {
                        r = sfd;
                        goto finish;
                }
                if (syscall(SYS_renameat2, sfd, name, tfd, newname, flags) < 0) {
                        r = -errno;
                        goto finish;
                }
        } else {
                /* Both protected: in Domain state. A directory the host has stays
                 * where it is: EBUSY, as for a mount point, so that mv does not
                 * fall back to copying and deleting it. */
                if (n->is_dir && !n->in_state) {
                        r = -EBUSY;
                        goto finish;
                }
                r = copy_up(n);
                if (r < 0)
                        goto finish;
                sfd = state_dir(from, true);
                if (sfd < 0) {
                        r = sfd;
                        goto finish;
                }
                if (syscall(SYS_renameat2, sfd, name, tfd, newname, flags) < 0) {
                        r = -errno;
                        goto finish;
                }
                if (!from->in_state && host_has(from, name)) {
                        r = make_whiteout(sfd, name);
                        if (r < 0)
                                goto finish;
                }
        }
moved:
        /* The node is now found at its new place (its path matters below it). */
        {
                char *copy = strdup(newname);
                if (copy) {
                        free(n->name);
                        n->name = copy;
                        n->alt_name = mfree(n->alt_name);
                        set_parent(n, to);
                }
        }
        own_name_note(from, name);
        own_name_note(to, newname);
        note_changed(n);
        inval_facts(from, name);
        inval_facts(to, newname);
        r = 0;
finish:
        if (n)
                forget_one(n, 1);
        pthread_mutex_unlock(&v.lock);
        fuse_reply_err(req, -r);
}

/* ---- files ---------------------------------------------------------------- */

static int open_flags(int flags) {
        return (flags & ~(O_NOFOLLOW | O_CREAT | O_EXCL)) | O_CLOEXEC | O_NOCTTY;
}

/*
 * A new fd of n opened with flags: by name from its parent, not following
 * it, and insisted on. For a change (busy), once no rename between the
 * sides covers n, and busy_begin(n) with it: a rename that starts later
 * waits for the change to end (rename_across()).
 */
static int node_open(Node *n, int flags, bool busy) {
        char pp[32];
        int pfd, fd;

        pthread_mutex_lock(&v.lock);
        if (busy)
                wait_unmoved(n, NULL);
        if (n->fd >= 0) {
                proc_path(n->fd, pp);
                fd = open(pp, open_flags(flags));
                if (fd < 0)
                        fd = -errno;
        } else {
                pfd = !n->parent ? -ESTALE : n->in_state ? state_parent(n) : n->parent->fd;
                fd = pfd < 0 ? -ESTALE : open_by_name(n, pfd, open_flags(flags) | O_NOFOLLOW, NULL);
        }
        if (fd >= 0 && busy)
                busy_begin(n);
        pthread_mutex_unlock(&v.lock);
        return fd;
}

/*
 * The fd a request on an open file uses: the handle's, or, where the
 * kernel opens files without asking (v.no_open), one opened for this
 * request (*ret_owned), after the checks an open for writing makes. With
 * flags for writing, the request is busy on n from then on (node_open()):
 * the caller ends it with busy_end(n).
 */
static int request_fd(Node *n, struct fuse_file_info *fi, int flags, bool *ret_owned) {
        bool change = (flags & O_ACCMODE) != O_RDONLY;
        int r;

        *ret_owned = false;
        if (fi && fi->fh) {
                if (change) {
                        pthread_mutex_lock(&v.lock);
                        wait_unmoved(n, NULL);
                        busy_begin(n);
                        pthread_mutex_unlock(&v.lock);
                }
                return (int) fi->fh;
        }
        if (change) {
                r = prepare_change(n);
                if (r < 0)
                        return r;
        }
        r = node_open(n, flags, change);
        if (r >= 0)
                *ret_owned = true;
        return r;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        Node *n = node_of(ino);
        int fd, r;

        if (v.no_open) {
                /* The kernel opens files itself from now on: reads and writes come
                 * without a handle (request_fd()). */
                fuse_reply_err(req, ENOSYS);
                return;
        }
        if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
                r = prepare_change(n);
                if (r < 0) {
                        fuse_reply_err(req, -r);
                        return;
                }
        }
        fd = node_open(n, fi->flags, (fi->flags & O_TRUNC) != 0);
        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        if (fi->flags & O_TRUNC)
                busy_end(n);
        fi->fh = (uint64_t) fd;
        fi->keep_cache = 0;
        if (fuse_reply_open(req, fi) == -ENOENT)
                safe_close(fd);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi) {
        Node *dir = node_of(parent);
        struct fuse_entry_param e;
        ViewClass c;
        int dfd, fd, r;

        pthread_mutex_lock(&v.lock);
        wait_unmoved(dir, NULL);
        dfd = create_side(dir, name, false, &c);
        if (dfd < 0) {
                pthread_mutex_unlock(&v.lock);
                fuse_reply_err(req, -dfd);
                return;
        }
        {
                mode_t m;
                fd = create_mode(mode, &m) < 0 ? (errno = EPERM, -1)
                                                : openat(dfd, name, open_flags(fi->flags) | O_CREAT | O_NOFOLLOW, m);
        }
        if (fd < 0) {
                r = -errno;
                pthread_mutex_unlock(&v.lock);
                fuse_reply_err(req, -r);
                return;
        }
        own_name_note(dir, name);
        inval_facts(dir, name);
        r = lookup_locked(dir, name, &e);
        pthread_mutex_unlock(&v.lock);
        if (r < 0) {
                safe_close(fd);
                fuse_reply_err(req, -r);
                return;
        }
        if (v.no_open) {
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

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        bool owned;
        int fd = request_fd(node_of(ino), fi, O_RDONLY, &owned);

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        fuse_pool_reply_read(req, fd, size, off);
        if (owned)
                safe_close(fd);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off, struct fuse_file_info *fi) {
        Node *n = node_of(ino);
        bool owned;
        int fd = request_fd(n, fi, O_WRONLY, &owned);
        struct stat st;
        ssize_t k;

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        k = fuse_pool_write(in, fd, off);
        /* The kernel asks for the new size and times anyway; recorded now, the
         * write's own host events are known for its echo. */
        if (k >= 0 && fstat(fd, &st) >= 0) {
                pthread_mutex_lock(&v.lock);
                told(n, &st);
                pthread_mutex_unlock(&v.lock);
        }
        busy_end(n);
        if (owned)
                safe_close(fd);
        if (k < 0)
                fuse_reply_err(req, (int) -k);
        else
                fuse_reply_write(req, (size_t) k);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
        bool owned;
        int fd = request_fd(node_of(ino), fi, O_RDONLY, &owned), r;

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        r = (datasync ? fdatasync(fd) : fsync(fd)) < 0 ? errno : 0;
        if (owned)
                safe_close(fd);
        fuse_reply_err(req, r);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi) {
        bool owned;
        int fd = request_fd(node_of(ino), fi, O_WRONLY, &owned), r;

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        r = fallocate(fd, mode, off, len) < 0 ? errno : 0;
        busy_end(node_of(ino));
        if (owned)
                safe_close(fd);
        fuse_reply_err(req, r);
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi) {
        bool owned;
        int fd = request_fd(node_of(ino), fi, O_RDONLY, &owned);
        off_t r;

        if (fd < 0) {
                fuse_reply_err(req, -fd);
                return;
        }
        r = lseek(fd, off, whence);
        if (r < 0)
                fuse_reply_err(req, errno);
        else
                fuse_reply_lseek(req, r);
        if (owned)
                safe_close(fd);
}

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
static int list_ignored(Node *n, DirHandle *h) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int efd, r;

        if (!ign.on || (efd = ign_entries(n, false)) < 0 || opendir_at(efd, &d) < 0)
                return 0;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, "..") || startswith(de->d_name, RENAME_TMP_PREFIX))
                        continue;
                /* Only what is still on the ignored side (shared_ignored may say otherwise). */
                if (class_of(n, de->d_name, de->d_type == DT_DIR) != VIEW_IGNORED)
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
static int list_dir(Node *n, DirHandle *h) {
        _cleanup_(closedirp) DIR *hd = NULL, *sd = NULL;
        struct dirent *de;
        int sfd, r;

        sfd = n->in_state ? n->fd : state_dir(n, false);
        if (!n->in_state) {
                r = opendir_at(n->fd, &hd);
                if (r < 0)
                        return r;
        }
        if (sfd >= 0 && opendir_at(sfd, &sd) < 0)
                sd = NULL;
        while (hd && (de = readdir(hd))) {
                if (!streq(de->d_name, ".") && !streq(de->d_name, "..") && (sd || ign.on)) {
                        ViewClass c = class_of(n, de->d_name, de->d_type == DT_DIR);
                        struct stat st;
                        if (c == VIEW_IGNORED)
                                continue;       /* listed from ignored state, if there */
                        if (sd && c == VIEW_PROTECTED && fstatat(sfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                                continue;       /* listed from Domain state, or whited out */
                }
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
                if (!n->in_state && class_of(n, de->d_name, de->d_type == DT_DIR) != VIEW_PROTECTED)
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
                r = list_ignored(n, h);
                if (r < 0)
                        return r;
        }
        if (n->in_state && !dh_has(h, "."))
                (void) dh_add(h, ".", n->ino, DT_DIR), (void) dh_add(h, "..", 1, DT_DIR);
        return 0;
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
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
        pthread_mutex_lock(&v.lock);
        fi->cache_readdir = fi->keep_cache = node_of(ino)->wd >= 0 && v.timeout > 0;
        pthread_mutex_unlock(&v.lock);
        if (fuse_reply_open(req, fi) == -ENOENT)
                dir_handle_free(h);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi, bool plus) {
        DirHandle *h = (DirHandle *) (uintptr_t) fi->fh;
        _cleanup_free_ char *buf = calloc(1, size);
        size_t used = 0;
        Node *dir = node_of(ino);

        if (!buf) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        if (off == 0) {
                /* From the start again (a rewind): the listing as it is now. */
                DirHandle fresh = {};
                int r;

                pthread_mutex_lock(&v.lock);
                r = list_dir(dir, &fresh);
                pthread_mutex_unlock(&v.lock);
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
                                pthread_mutex_lock(&v.lock);
                                r = lookup_locked(dir, de->d_name, &e);
                                pthread_mutex_unlock(&v.lock);
                                if (r < 0)
                                        continue;       /* gone meanwhile */
                        } else {
                                e.attr.st_ino = de->d_ino;
                                e.attr.st_mode = S_IFDIR;
                        }
                        k = fuse_add_direntry_plus(req, buf + used, size - used, de->d_name, &e, (off_t) i + 1);
                        if (k > size - used) {
                                if (!dot) {
                                        pthread_mutex_lock(&v.lock);
                                        forget_one(node_of(e.ino), 1);
                                        pthread_mutex_unlock(&v.lock);
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

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        do_readdir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        do_readdir(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        (void) ino;
        dir_handle_free((DirHandle *) (uintptr_t) fi->fh);
        fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
        char pp[32];
        int fd;

        (void) datasync, (void) fi;
        proc_path(node_of(ino)->fd, pp);
        fd = open(pp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                fuse_reply_err(req, errno);
                return;
        }
        fuse_reply_err(req, fsync(fd) < 0 ? errno : 0);
        safe_close(fd);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino) {
        struct statvfs s;
        char pp[32];

        proc_path(node_of(ino)->fd, pp);
        if (statvfs(pp, &s) < 0)
                fuse_reply_err(req, errno);
        else
                fuse_reply_statfs(req, &s);
}

static void op_init(void *userdata, struct fuse_conn_info *conn) {
        (void) userdata;
        if (conn->capable & FUSE_CAP_SPLICE_READ)
                conn->want |= FUSE_CAP_SPLICE_READ;
        if (conn->capable & FUSE_CAP_SPLICE_WRITE)
                conn->want |= FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE;
        if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
                conn->want |= FUSE_CAP_PARALLEL_DIROPS;
        if (conn->capable & FUSE_CAP_READDIRPLUS)
                conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
        /* gVisor opens every file it looks up (a readable fd where it can get one):
         * with FUSE_CAP_NO_OPEN_SUPPORT those opens cost no request; reads and
         * writes then open the backing file themselves. A host change reaches the
         * page cache through the watch's invalidation and the changed mtime. */
        if (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) {
                conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
                v.no_open = true;
        }
        if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA)
                conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
        /* O_TRUNC comes as a SETATTR of the size (prepare_change() first): with
         * atomic O_TRUNC it would ride on an OPEN, which no_open never sends. */
        conn->want &= ~(unsigned) FUSE_CAP_ATOMIC_O_TRUNC;
        /* The host changes files behind the kernel's back: no write-back cache. */
        conn->want &= ~(unsigned) FUSE_CAP_WRITEBACK_CACHE;
        /* The host kernel clears set-ID bits when the view writes, truncates or
         * chowns a host file (it holds no CAP_FSETID), and a chown inside changes
         * nothing (spec C24): the kernel need not ask for the mode before each
         * chown, write or truncate to work the bits out itself. */
        if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV)
                conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
        /* libfuse 3.14 does not pass these two on: io_writev() does (FUSE_INIT_WANT). */
        /* Modes are the view's (create_mode()), not the caller's umask. */
        if (conn->capable & FUSE_CAP_DONT_MASK)
                conn->want |= FUSE_CAP_DONT_MASK;
        conn->want &= ~(unsigned) (FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
}

static const struct fuse_lowlevel_ops ops = {
        .init = op_init,
        .lookup = op_lookup,
        .forget = op_forget,
        .forget_multi = op_forget_multi,
        .getattr = op_getattr,
        .setattr = op_setattr,
        .readlink = op_readlink,
        .mknod = op_mknod,
        .mkdir = op_mkdir,
        .symlink = op_symlink,
        .link = op_link,
        .unlink = op_unlink,
        .rmdir = op_rmdir,
        .rename = op_rename,
        .open = op_open,
        .create = op_create,
        .read = op_read,
        .write_buf = op_write_buf,
        .flush = fuse_pool_op_flush,
        .release = fuse_pool_op_release,
        .fsync = op_fsync,
        .fallocate = op_fallocate,
        .lseek = op_lseek,
        .opendir = op_opendir,
        .readdir = op_readdir,
        .readdirplus = op_readdirplus,
        .releasedir = op_releasedir,
        .fsyncdir = op_fsyncdir,
        .statfs = op_statfs,
};

/* ---- host changes -------------------------------------------------------- */

/*
 * The kernel is told by the notifier, a process of the view's own
 * (notifier_start()), through this pipe of Inval records; the view's
 * threads never make a notification.
 */
static int notify_fd = -1;              /* or -1: made here */
/* The notifier's answers to fences (notify_fence()), and whether an
 * invalidation went to it since the last one was answered. */
static int notify_ack_fd = -1;
static bool notify_fence_owed;
static uint64_t notify_fence_seq;

/* A fence record: no name can be this long. Its node is a sequence number the notifier writes back. */
#define INVAL_FENCE UINT16_MAX
/* How long the watcher waits for a fence's answer: a notification waits while a request holds its directory. */
#define FENCE_WAIT_MS 100

static void apply_inval(fuse_ino_t node, const char *name, size_t len, bool listing) {
        if (notify_fd >= 0) {
                Inval rec = { .node = node, .len = (uint16_t) len, .listing = listing };
                ssize_t k;

                memcpy(rec.name, name, len);
                /* One write of less than PIPE_BUF: whole, or not at all. It may wait
                 * for the notifier, never with v.lock held. */
                do
                        k = write(notify_fd, &rec, sizeof(rec));
                while (k < 0 && errno == EINTR);
                if (k == (ssize_t) sizeof(rec)) {
                        notify_fence_owed = true;
                        return;
                }
                fprintf(stderr, "lazaret-view: the notifier is gone (%s); the kernel is told of host changes "
                        "from the view itself from now on\n", k < 0 ? strerror(errno) : "short write");
                notify_fd = safe_close(notify_fd);
        }
        if (len > 0)
                (void) fuse_lowlevel_notify_inval_entry(v.se, node, name, len);
        /* The node's attributes and cached data: for a directory, its listing. */
        if (len == 0 || listing)
                (void) fuse_lowlevel_notify_inval_inode(v.se, node, 0, 0);
}

/*
 * Most events in a directory the sandbox works in are the echoes of its own
 * changes: a file made and written through the view gives IN_CREATE,
 * IN_MODIFY, IN_CLOSE_WRITE and an IN_ATTRIB for each of its chown, chmod
 * and utimes. Invalidating for each would make the kernel ask again for
 * what it was just told. So each event is judged (echo_verdict()):
 *   - ECHO: a node of that name in that directory was told exactly the
 *     host object's present identity, mode, size, mtime and ctime: dropped;
 *   - BUSY: a request is changing that node (or making entries in that
 *     directory) right now, so what it will tell the kernel is not yet
 *     known: held back and judged again INVAL_RETRY_MS later;
 *   - CHANGED: anything else, a name that is gone included: invalidated at
 *     once, so that the in-sandbox relay, which acts on the same host
 *     change, finds the kernel's cache already dropped.
 * The one case this gets wrong is a host change within the same clock
 * tick as the view's last look that leaves identity, mode, size, mtime
 * and ctime all equal (ext4 stamps with a coarse clock); spec 6.4 says so.
 */
#define INVAL_RETRY_MS 5
#define INVAL_PENDING_MAX 512

typedef enum EchoVerdict {
        ECHO,
        BUSY,
        CHANGED,
        CHANGED_OWN,                    /* changed by a request lately: invalidated, not relayed */
} EchoVerdict;

typedef struct PendingInval {
        fuse_ino_t node;
        int wd;
        bool listing;                   /* the node's attributes and listing too */
        bool relay;                     /* a change the watchers inside are told of, if the host made it */
        uint16_t len;
        char name[NAME_MAX + 1];
} PendingInval;

static PendingInval pending[INVAL_PENDING_MAX];
static size_t n_pending;

/* With v.lock held. name: NUL-terminated, in the watched directory dir; *ret_st what it is now. */
static EchoVerdict echo_verdict(Node *dir, const char *name, struct stat *ret_st, bool *ret_exists) {
        uint64_t now = now_ms();
        bool own = own_name_seen(dir, name, now);
        struct stat st;

        *ret_exists = false;
        if (__atomic_load_n(&dir->busy, __ATOMIC_SEQ_CST) > 0)
                return BUSY;
        if (fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return own ? CHANGED_OWN : CHANGED;
        *ret_st = st;
        *ret_exists = true;
        for (ViewClass c = 0; c < _VIEW_CLASS_MAX; c++)
                for (Node *n = v.hash[hash_of(st.st_dev, st.st_ino, false, c)]; n; n = n->hnext) {
                        if (n->stale || n->in_state || n->parent != dir || !streq(n->name, name))
                                continue;
                        if (__atomic_load_n(&n->busy, __ATOMIC_SEQ_CST) > 0)
                                return BUSY;
                        if (told_matches(n, &st))
                                return ECHO;
                        own = own || changed_lately(n, now);
                }
        return own ? CHANGED_OWN : CHANGED;
}

/*
 * The host-edit relay's channel (spec 4.6), when the supervisor gave the
 * view its write end: the workspace-relative path of every host change the
 * watcher judged not to be the sandbox's own, one per line (watch-proto.h,
 * WatchOut: never blocking, the root "." for what did not fit), written by
 * the watcher thread alone.
 */
#define RELAY_OUT_MAX (256u * 1024u)

static WatchOut relay = { .fd = -1 };

/* Whether the sandbox sees the host's entry name of host directory dir, and its path then. With v.lock held. */
static bool relay_path(Node *dir, const char *name, const struct stat *st, bool exists, char *buf, size_t size) {
        size_t len;

        if (startswith(name, RENAME_TMP_PREFIX) || node_relpath(dir, name, buf, size) < 0)
                return false;
        len = strlen(buf);
        if (!watch_path_valid(buf, len) || watch_path_skipped(buf))
                return false;
        /* Shadowed by Domain state (ignored, a protected copy or a whiteout): the host's change is invisible inside. */
        if (class_of(dir, name, exists && S_ISDIR(st->st_mode)) == VIEW_IGNORED)
                return false;
        if (state_holds(dir, name))
                return false;
        return true;
}

/* The verdict for an event on watch wd (of node id node) naming name[len]; with want_relay, a
 * CHANGED one that the watchers inside are to be told of has its path in rel (else rel is ""). */
static EchoVerdict event_verdict(int wd, fuse_ino_t node, const char *name, size_t len, bool want_relay,
                                 char rel[static WATCH_PATH_MAX + 1]) {
        char buf[NAME_MAX + 1];
        EchoVerdict r = CHANGED;
        bool exists = false, relayed = false;
        struct stat st;
        Node *dir;

        if (len == 0)
                return CHANGED;
        memcpy(buf, name, len);
        buf[len] = 0;
        pthread_mutex_lock(&v.lock);
        dir = watch_find(wd);
        if (dir && id_of(dir) == node) {
                r = echo_verdict(dir, buf, &st, &exists);
                relayed = r == CHANGED && want_relay && relay.fd >= 0 &&
                          relay_path(dir, buf, &st, exists, rel, WATCH_PATH_MAX + 1);
        }
        pthread_mutex_unlock(&v.lock);
        if (!relayed)
                rel[0] = 0;
        return r;
}

/*
 * Before the watchers inside hear of host changes: once the notifier has
 * written every invalidation handed to it so far to the kernel. It answers
 * a fence record after the notifications before it (its writes to the
 * connection return once the kernel dropped what they name), so the relay
 * inside never acts on an entry the kernel still caches. A notification
 * may wait while a request of the sandbox holds its directory: after
 * FENCE_WAIT_MS the lines go anyway, and the relay's own gathering inside
 * is the margin then (spec 6.4). Watcher thread only.
 */
static void notify_fence(void) {
        Inval rec = { .node = ++notify_fence_seq, .len = INVAL_FENCE };
        uint64_t until = now_ms() + FENCE_WAIT_MS;
        ssize_t k;

        notify_fence_owed = false;
        if (notify_fd < 0 || notify_ack_fd < 0)
                return;
        do
                k = write(notify_fd, &rec, sizeof(rec));
        while (k < 0 && errno == EINTR);
        if (k != (ssize_t) sizeof(rec))
                return;
        for (uint64_t now; (now = now_ms()) < until;) {
                struct pollfd p = { .fd = notify_ack_fd, .events = POLLIN };
                uint64_t seq;

                if (poll(&p, 1, (int) (until - now)) <= 0)
                        continue;
                k = read(notify_ack_fd, &seq, sizeof(seq));
                if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
                        /* The notifier is gone: apply_inval() finds out on its next write. */
                        notify_ack_fd = safe_close(notify_ack_fd);
                        return;
                }
                /* An answer to an earlier fence that came after its wait: skipped. */
                if (k == (ssize_t) sizeof(seq) && seq == notify_fence_seq)
                        return;
        }
}

/* The relay's queued lines, after the invalidations they follow (notify_fence()). */
static void relay_flush(void) {
        if (relay.n > 0 && notify_fence_owed)
                notify_fence();
        (void) watch_out_flush(&relay);
}

static void judge(fuse_ino_t node, int wd, const char *name, size_t len, bool listing, bool relay_it) {
        char rel[WATCH_PATH_MAX + 1];

        switch (event_verdict(wd, node, name, len, relay_it, rel)) {
        case ECHO:
                return;
        case BUSY:
                if (n_pending < ELEMENTSOF(pending)) {
                        pending[n_pending] = (PendingInval) { .node = node, .wd = wd, .listing = listing,
                                                              .relay = relay_it, .len = (uint16_t) len };
                        memcpy(pending[n_pending].name, name, len);
                        n_pending++;
                        return;
                }
                __attribute__((fallthrough));
        case CHANGED:
        case CHANGED_OWN:
                /* The kernel's cache first, then the watchers inside (whose relay
                 * gathers for a few ms before it acts): what they read is new. */
                apply_inval(node, name, len, listing);
                if (rel[0])
                        (void) watch_out_add(&relay, rel);
                return;
        }
}

/* Judges the held-back events again: each (node, name) once. */
static void pending_retry(void) {
        PendingInval copy[INVAL_PENDING_MAX];
        size_t n = n_pending;

        memcpy(copy, pending, n * sizeof(copy[0]));
        n_pending = 0;
        for (size_t i = 0; i < n; i++) {
                bool listing = copy[i].listing, relay_it = copy[i].relay, seen = false;

                for (size_t j = 0; j < i && !seen; j++)
                        seen = copy[j].node == copy[i].node && copy[j].len == copy[i].len &&
                               memcmp(copy[j].name, copy[i].name, copy[i].len) == 0;
                if (seen)
                        continue;
                for (size_t j = i + 1; j < n; j++)
                        if (copy[j].node == copy[i].node && copy[j].len == copy[i].len &&
                            memcmp(copy[j].name, copy[i].name, copy[i].len) == 0) {
                                listing = listing || copy[j].listing;
                                relay_it = relay_it || copy[j].relay;
                        }
                judge(copy[i].node, copy[i].wd, copy[i].name, copy[i].len, listing, relay_it);
        }
        relay_flush();
}

static void judge_all(const PendingInval *b, size_t n) {
        for (size_t j = 0; j < n; j++)
                judge(b[j].node, b[j].wd, b[j].name, b[j].len, b[j].listing, b[j].relay);
        relay_flush();
}

/*
 * One read of the inotify queue: the bookkeeping of each event under one
 * hold of v.lock, then one judgement per (directory, name), since the
 * several events of one change (IN_CREATE, IN_MODIFY, IN_ATTRIB,
 * IN_CLOSE_WRITE of a file written) need the host looked at only once.
 */
static void watch_batch(const char *buf, size_t size) {
        static PendingInval batch[INVAL_PENDING_MAX];
        size_t n = 0;

        pthread_mutex_lock(&v.lock);
        for (const char *q = buf; q + sizeof(struct inotify_event) <= buf + size;) {
                const struct inotify_event *ev = (const struct inotify_event *) q;
                bool listing = ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO), seen = false;
                /* As lazaret-watch: a directory's own metadata is no news for watchers. */
                bool relay_it = ev->len > 0 && !(!(ev->mask & ~(IN_ATTRIB | IN_ISDIR)) && (ev->mask & IN_ISDIR));
                size_t len = 0;
                Node *n_dir;

                q += sizeof(*ev) + ev->len;
                if (ev->mask & IN_Q_OVERFLOW) {
                        /* Events were lost: whatever the kernel holds may be stale. */
                        fprintf(stderr, "lazaret-view: host change events were lost; "
                                "entries cached until their timeout may be stale\n");
                        continue;
                }
                n_dir = watch_find(ev->wd);
                if (!n_dir)
                        continue;
                if (ev->mask & IN_IGNORED)
                        watch_forget(n_dir, false);
                if (ev->len > 0) {
                        ign_note_change(n_dir, ev->name);
                        len = strnlen(ev->name, ev->len);
                        if (len > NAME_MAX)
                                continue;
                }
                for (size_t j = 0; j < n && !seen; j++)
                        if (batch[j].wd == ev->wd && batch[j].len == len && memcmp(batch[j].name, ev->name, len) == 0) {
                                batch[j].listing = batch[j].listing || listing;
                                batch[j].relay = batch[j].relay || relay_it;
                                seen = true;
                        }
                if (seen)
                        continue;
                if (n == ELEMENTSOF(batch)) {
                        /* A full batch: what it holds is judged, a new one begun. */
                        pthread_mutex_unlock(&v.lock);
                        judge_all(batch, n);
                        n = 0;
                        pthread_mutex_lock(&v.lock);
                }
                batch[n] = (PendingInval) { .node = id_of(n_dir), .wd = ev->wd, .listing = listing, .relay = relay_it,
                                            .len = (uint16_t) len };
                memcpy(batch[n].name, ev->name, len);
                n++;
        }
        pthread_mutex_unlock(&v.lock);
        judge_all(batch, n);
}

/* One record of the handlers' invalidation pipe, applied. */
static void inval_pipe_apply(void) {
        Inval i;

        /* Records of one size, each written whole (below PIPE_BUF). */
        if (read(v.inval_pipe[0], &i, sizeof(i)) == (ssize_t) sizeof(i) && i.len <= NAME_MAX)
                apply_inval((fuse_ino_t) i.node, i.name, i.len, i.listing);
}

/* How long the watcher lets inotify events gather before it reads them. */
#define WATCH_GATHER_MS 2

/*
 * The watcher: what the host changes, the kernel forgets (its entry and,
 * through the next lookup, its attributes), so long timeouts stay true.
 * It also runs the invalidations the request handlers queued, at once.
 */
static void *watcher(void *arg) {
        char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
        uint64_t retry_at = 0;

        (void) arg;
        for (;;) {
                struct pollfd p[3] = { { .fd = v.ifd, .events = POLLIN }, { .fd = v.inval_pipe[0], .events = POLLIN },
                                       { .fd = relay.n > 0 ? relay.fd : -1, .events = POLLOUT } };
                int timeout = -1;
                ssize_t k;

                if (n_pending > 0) {
                        uint64_t now = now_ms();
                        if (now >= retry_at) {
                                pending_retry();
                                retry_at = now + INVAL_RETRY_MS;
                                continue;
                        }
                        timeout = (int) (retry_at - now);
                }
                if (poll(p, 3, timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        return NULL;
                }
                if (p[2].revents)
                        relay_flush();
                if (p[1].revents & POLLIN)
                        inval_pipe_apply();
                if (!(p[0].revents & POLLIN))
                        continue;
                /* Most events are the echo of the view's own changes, several
                 * per file written: gathered for a moment, they cost one
                 * wakeup instead of one each. Invalidations asked for
                 * meanwhile are applied at once. */
                for (uint64_t until = now_ms() + WATCH_GATHER_MS, now; (now = now_ms()) < until;)
                        if (poll(&p[1], 1, (int) (until - now)) > 0 && (p[1].revents & POLLIN))
                                inval_pipe_apply();
                k = read(v.ifd, buf, sizeof(buf));
                if (k <= 0)
                        continue;
                if (n_pending == 0)
                        retry_at = now_ms() + INVAL_RETRY_MS;
                watch_batch(buf, (size_t) k);
        }
}

/* ---- the notifier ------------------------------------------------------------ */

/*
 * A notification to the kernel takes the lock of the entry's directory
 * (and the pages of a file it drops), which a request from the sandbox may
 * hold while it waits for the view's answer. A view thread waiting there
 * is in the kernel, beyond the reach of signals, and it keeps the view's
 * descriptors open after the other threads died: after the SIGKILL of the
 * Domain's scope the kernel would then never end the requests the dead
 * workers had read, and the request and the notification would wait for
 * each other for good. (Seen during a stop in the middle of a long rename:
 * the sandbox's scope never stopped, and the next launch could not make it
 * again.) So notifications are written by a process of their own, through
 * a clone of the connection, a file of its own (FUSE_DEV_IOC_CLONE): when
 * the view dies, its file goes, the kernel ends the requests read through
 * it, the lock is let go and the notifier's write ends.
 */

static _Noreturn void notifier_run(int in, int fuse, int ack) {
        for (;;) {
                Inval rec;
                ssize_t k = read(in, &rec, sizeof(rec));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k != (ssize_t) sizeof(rec))
                        _exit(k == 0 ? 0 : 1);          /* the view is gone */
                if (rec.len == INVAL_FENCE) {
                        /* Everything before it is written: its sequence number back. */
                        struct iovec iov = { &rec.node, sizeof(rec.node) };
                        (void) !writev(ack, &iov, 1);
                        continue;
                }
                if (rec.len > NAME_MAX)
                        continue;
                rec.name[rec.len] = 0;
                if (rec.len > 0 && fuse_notify_inval_entry_write(fuse, rec.node, rec.name, rec.len) == -ENODEV)
                        _exit(0);               /* unmounted */
                if ((rec.len == 0 || rec.listing) && fuse_notify_inval_inode_write(fuse, rec.node) == -ENODEV)
                        _exit(0);
        }
}

/* The notifier's few calls; anything else kills it. */
static int notifier_harden(void) {
        static const int allowed[] = { SCMP_SYS(read), SCMP_SYS(writev), SCMP_SYS(exit_group), SCMP_SYS(exit),
                                       SCMP_SYS(rt_sigreturn), SCMP_SYS(restart_syscall) };
        int r = harden_drop_privileges();

        return r < 0 ? r : harden_load_allowlist(allowed, ELEMENTSOF(allowed));
}

static int main_argc;
static char **main_argv;

/*
 * The notifier's command line, where ps and systemctl status show it:
 * the view's program, then --notifier, in the memory of the view's own
 * arguments (which it no longer needs).
 */
static void notifier_retitle(void) {
        char *lo = NULL, *hi = NULL;
        size_t a0;

        if (main_argc < 1)
                return;
        for (int i = 0; i < main_argc; i++) {
                char *e = main_argv[i] + strlen(main_argv[i]);
                if (!lo || main_argv[i] < lo)
                        lo = main_argv[i];
                if (!hi || e > hi)
                        hi = e;
        }
        a0 = strlen(lo);
        if (lo + a0 >= hi)
                return;
        memset(lo + a0 + 1, 0, (size_t) (hi - (lo + a0 + 1)));
        if ((size_t) (hi - (lo + a0 + 1)) >= strlen("--notifier"))
                memcpy(lo + a0 + 1, "--notifier", strlen("--notifier"));
}

/*
 * Starts the notifier (before any thread): a clone of the connection fuse,
 * a pipe, a child that keeps only those two. Where the clone cannot be
 * made (no /dev/fuse here), the view notifies the kernel itself, with
 * one line that says so.
 */
static void notifier_start(int fuse) {
        _cleanup_close_ int clone_fd = fuse_dev_clone(fuse);
        int p[2], a[2];
        pid_t view = getpid(), pid;

        if (clone_fd < 0) {
                fprintf(stderr, "lazaret-view: cannot clone the FUSE connection (%s); the view notifies the kernel "
                        "itself, and a stop while a request holds a directory may leave the Domain's scope "
                        "behind\n", strerror(-clone_fd));
                return;
        }
        if (pipe2(p, O_CLOEXEC) < 0) {
                fprintf(stderr, "lazaret-view: cannot make the notifier's pipe (%m); the view notifies the kernel "
                        "itself\n");
                return;
        }
        /* Its answers to fences; without them the relay's lines are not held
         * for invalidations, and the notifier answers into /dev/null. */
        if (pipe2(a, O_CLOEXEC) < 0) {
                a[0] = -1;
                a[1] = open("/dev/null", O_WRONLY | O_CLOEXEC);
        }
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "lazaret-view: cannot start the notifier (%m); the view notifies the kernel itself\n");
                safe_close(p[0]);
                safe_close(p[1]);
                safe_close(a[0]);
                safe_close(a[1]);
                return;
        }
        if (pid == 0) {
                /* Only the pipe, the clone and the answers' pipe, at 3, 4 and 5 (by
                 * way of numbers above all three): never the view's file of the
                 * connection. */
                int in = fcntl(p[0], F_DUPFD, 10), out = fcntl(clone_fd, F_DUPFD, 10), ack = fcntl(a[1], F_DUPFD, 10);

                if (in < 0 || out < 0 || ack < 0 || dup3(in, 3, 0) < 0 || dup3(out, 4, 0) < 0 ||
                    dup3(ack, 5, 0) < 0 || syscall(SYS_close_range, 6U, ~0U, 0U) < 0 ||
                    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != view ||
                    prctl(PR_SET_NAME, "lazaret-notify") < 0 || notifier_harden() < 0)
                        _exit(1);
                notifier_retitle();
                notifier_run(3, 4, 5);
        }
        safe_close(p[0]);
        safe_close(a[1]);
        /* A write to a notifier that died must fail (apply_inval() then
         * notifies itself), not kill the view: with no relay channel
         * nothing else ignores SIGPIPE. */
        (void) signal(SIGPIPE, SIG_IGN);
        notify_fd = p[1];
        notify_ack_fd = a[0];
}

/* ---- hardening -------------------------------------------------------------- */

/*
 * Once it holds the FUSE connection the view keeps only what serving the
 * workspace takes: of the capabilities of its user namespace's root,
 * CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER (the sandbox's root
 * may write a 0444 file and set times on files, as on a bind; these work
 * only on files whose owner is mapped, the user's own), the bounding set
 * cut to the same, NO_NEW_PRIVS, and a seccomp allowlist of the file
 * system calls it makes (anything else fails with EPERM rather than killing
 * the Domain's workspace).
 */
#define VIEW_SYSCALLS(X) \
        X(read) X(write) X(readv) X(writev) X(pread64) X(pwrite64) X(preadv) X(pwritev) X(splice) X(tee) \
        X(vmsplice) X(pipe2) X(close) X(dup) X(dup3) X(fcntl) X(lseek) X(openat) X(openat2) X(newfstatat) \
        X(fstat) X(statx) X(fstatfs) X(statfs) X(getdents64) X(readlinkat) X(symlinkat) X(mkdirat) X(mknodat) \
        X(unlinkat) X(renameat) X(renameat2) X(linkat) X(fchmod) X(fchmodat) X(chmod) X(ftruncate) X(truncate) \
        X(utimensat) X(fsync) X(fdatasync) X(copy_file_range) X(fallocate) X(fsetxattr) X(fgetxattr) X(inotify_add_watch) \
        X(inotify_rm_watch) X(poll) X(ppoll) X(futex) X(mmap) X(munmap) X(mremap) X(mprotect) X(madvise) X(brk) \
        X(rt_sigprocmask) X(rt_sigaction) X(rt_sigreturn) X(restart_syscall) X(exit) X(exit_group) X(getpid) \
        X(gettid) X(getuid) X(geteuid) X(getgid) X(getegid) X(clock_gettime) X(clock_nanosleep) X(nanosleep) \
        X(sched_yield) X(getrandom) X(clone) X(clone3) X(set_robust_list) X(rseq) X(prlimit64) X(sched_getaffinity) \
        X(tgkill) X(kill) X(ioctl)

static int harden(void) {
        static const unsigned long keep[] = { CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER };
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        scmp_filter_ctx ctx;
        int r;

        for (unsigned long cap = 0; cap <= 63; cap++) {
                bool kept = false;
                for (size_t i = 0; i < ELEMENTSOF(keep); i++)
                        kept = kept || keep[i] == cap;
                if (!kept && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL && errno != EPERM)
                        return -errno;
        }
        for (size_t i = 0; i < ELEMENTSOF(keep); i++)
                d[0].effective |= 1u << keep[i], d[0].permitted |= 1u << keep[i];
        if (syscall(SYS_capset, &h, d) < 0 && errno != EPERM)
                return -errno;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;

        ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ctx)
                return -ENOMEM;
#define ALLOW(name) \
        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(name), 0); \
        if (r < 0 && r != -EDOM && r != -EFAULT) \
                goto finish;
        VIEW_SYSCALLS(ALLOW)
#undef ALLOW
        r = seccomp_load(ctx);
finish:
        seccomp_release(ctx);
        return r;
}

/* ---- main ------------------------------------------------------------------ */


#define VIEW_WORKERS 4

/*
 * The connection's I/O, as libfuse would do it, except for the INIT reply:
 * libfuse 3.14 leaves out of it the PARALLEL_DIROPS and HANDLE_KILLPRIV that
 * op_init wants (src/viewrules/fuse-init.h), so the reply is written with them
 * added where the kernel offered them.
 */
static struct {
        pthread_mutex_t lock;
        FuseInitPatch patch;
        bool done;
} init_io = { .lock = PTHREAD_MUTEX_INITIALIZER, .patch = { .want = FUSE_INIT_WANT } };

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata) {
        ssize_t k = read(fd, buf, len);

        (void) userdata;
        if (k > 0 && !__atomic_load_n(&init_io.done, __ATOMIC_ACQUIRE)) {
                pthread_mutex_lock(&init_io.lock);
                fuse_init_saw_request(&init_io.patch, buf, (size_t) k);
                pthread_mutex_unlock(&init_io.lock);
        }
        return k;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata) {
        (void) userdata;
        if (!__atomic_load_n(&init_io.done, __ATOMIC_ACQUIRE)) {
                char copy[256];
                uint32_t flags;
                size_t off;
                bool patch;

                pthread_mutex_lock(&init_io.lock);
                patch = fuse_init_reply_flags(&init_io.patch, iov, count, &flags, &off);
                if (init_io.patch.seen && init_io.patch.unique == 0)
                        __atomic_store_n(&init_io.done, true, __ATOMIC_RELEASE);
                pthread_mutex_unlock(&init_io.lock);
                if (patch && iov[1].iov_len <= sizeof(copy)) {
                        struct iovec mine[2] = { iov[0], { copy, iov[1].iov_len } };

                        memcpy(copy, iov[1].iov_base, iov[1].iov_len);
                        memcpy(copy + off, &flags, sizeof(flags));
                        return writev(fd, mine, 2);
                }
        }
        return writev(fd, iov, count);
}

static ssize_t io_splice_receive(int fdin, off_t *offin, int fdout, off_t *offout, size_t len, unsigned flags,
                                 void *userdata) {
        (void) userdata;
        return splice(fdin, offin, fdout, offout, len, flags);
}

static ssize_t io_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len, unsigned flags,
                              void *userdata) {
        (void) userdata;
        return splice(fdin, offin, fdout, offout, len, flags);
}

static const struct fuse_custom_io view_io = {
        .read = io_read,
        .writev = io_writev,
        .splice_receive = io_splice_receive,
        .splice_send = io_splice_send,
};

static int arg_workspace_fd = -1, arg_state_fd = -1, arg_fuse_fd = -1, arg_ignored_fd = -1, arg_excludes_fd = -1,
           arg_relay_fd = -1;
static double arg_timeout = 3600;
static char **arg_protect, **arg_protect_names, **arg_unprotect, **arg_shared_ignored;
static bool arg_git_dir;

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "workspace-fd",  required_argument, NULL, 'w' },
                { "state-fd",      required_argument, NULL, 's' },
                { "fuse-fd",       required_argument, NULL, 'f' },
                { "protect",       required_argument, NULL, 'p' },
                { "protect-name",  required_argument, NULL, 'n' },
                { "unprotect",     required_argument, NULL, 'u' },
                { "git-dir",       no_argument,       NULL, 'g' },
                { "entry-timeout", required_argument, NULL, 't' },
                { "ignored-fd",    required_argument, NULL, 'i' },
                { "excludes-fd",   required_argument, NULL, 'x' },
                { "shared-ignored", required_argument, NULL, 'S' },
                { "relay-fd",      required_argument, NULL, 'r' },
                {}
        };
        int c, k;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'w':
                case 's':
                case 'f':
                        if (parse_int(optarg, 3, 1024, &k) < 0)
                                return -EINVAL;
                        *(c == 'w' ? &arg_workspace_fd : c == 's' ? &arg_state_fd : &arg_fuse_fd) = k;
                        break;
                case 'p':
                case 'S':
                        if (isempty(optarg) || optarg[0] == '/' || strlen(optarg) >= VIEW_PATH_MAX ||
                            strv_extend(c == 'p' ? &arg_protect : &arg_shared_ignored, optarg) < 0)
                                return -EINVAL;
                        break;
                case 'n':
                case 'u':
                        if (isempty(optarg) || strchr(optarg, '/') || strlen(optarg) > NAME_MAX ||
                            strv_extend(c == 'n' ? &arg_protect_names : &arg_unprotect, optarg) < 0)
                                return -EINVAL;
                        break;
                case 'g':
                        arg_git_dir = true;
                        break;
                case 'i':
                case 'x':
                case 'r':
                        if (parse_int(optarg, 3, 1024, &k) < 0)
                                return -EINVAL;
                        *(c == 'i' ? &arg_ignored_fd : c == 'x' ? &arg_excludes_fd : &arg_relay_fd) = k;
                        break;
                case 't':
                        if (parse_int(optarg, 0, 3600, &k) < 0)
                                return -EINVAL;
                        arg_timeout = k;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind != argc || arg_workspace_fd < 0 || arg_state_fd < 0 || arg_fuse_fd < 0)
                return -EINVAL;
        return 0;
}

/* Ignored Workspace State, when the supervisor passed its directory (isolate_ignored). */
static int ign_setup(void) {
        struct stat st;
        int r;

        if (arg_ignored_fd < 0)
                return 0;
        if (fstat(arg_ignored_fd, &st) < 0 || !S_ISDIR(st.st_mode))
                return -ENOTDIR;
        (void) fcntl(arg_ignored_fd, F_SETFD, FD_CLOEXEC);
        ign.fd = arg_ignored_fd;
        ign.shared = arg_shared_ignored;
        r = ignore_cache_new(ign_read_dir, NULL, &ign.cache);
        if (r < 0)
                return r;
        /* The workspace's own git dir (not a gitfile: its index would be elsewhere). */
        ign.git_fd = openat(v.root.fd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (arg_excludes_fd >= 0) {
                _cleanup_free_ char *text = NULL, *error = NULL;
                size_t len;

                (void) fcntl(arg_excludes_fd, F_SETFD, FD_CLOEXEC);
                r = read_full_fd(arg_excludes_fd, IGNORE_FILE_MAX, &text, &len);
                if (r >= 0)
                        r = ignore_list_parse(text, len, "", "core.excludesFile", &ign.excludes, &error);
                if (r < 0)
                        ign_warn("core.excludesFile", r, error);
                safe_close(arg_excludes_fd);
        }
        ign.on = true;
        return 0;
}

int main(int argc, char *argv[]) {
        struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
        struct fuse_session *se;
        struct stat st;
        int r;

        main_argc = argc;
        main_argv = argv;
        if (parse_argv(argc, argv) < 0) {
                fprintf(stderr, "lazaret-view is started by lazaret-supervisor only.\n");
                return 2;
        }
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                return 2;
        if (fstat(arg_workspace_fd, &st) < 0 || !S_ISDIR(st.st_mode) || fstat(arg_state_fd, &st) < 0 ||
            !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "lazaret-view: the workspace and state fds must be directories\n");
                return 2;
        }
        (void) fcntl(arg_workspace_fd, F_SETFD, FD_CLOEXEC);
        (void) fcntl(arg_state_fd, F_SETFD, FD_CLOEXEC);
        v.root = (Node) { .nlookup = 1, .fd = arg_workspace_fd, .is_dir = true, .cls = VIEW_SHARED,
                          .dir = arg_git_dir ? VIEW_DIR_GIT_ROOT : VIEW_DIR_TOP,
                          .dev = st.st_dev, .ino = st.st_ino, .state_dirfd = -1, .name = (char *) "" };
        v.root.ign_mfd = v.root.ign_efd = -1;
        v.state_fd = arg_state_fd;
        v.lists = (ViewLists) { .paths = arg_protect, .names = arg_protect_names, .unprotect = arg_unprotect };
        r = ign_setup();
        if (r < 0) {
                fprintf(stderr, "lazaret-view: cannot set up ignored workspace state: %s\n", strerror(-r));
                return 1;
        }
        v.timeout = arg_timeout;
        v.ifd = inotify_init1(IN_CLOEXEC);
        if (v.ifd < 0 || pipe2(v.inval_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
                /* Without news of host changes nothing may be cached. */
                fprintf(stderr, "lazaret-view: no inotify (%m): the kernel caches nothing of the workspace\n");
                v.ifd = safe_close(v.ifd);
                v.timeout = 0;
        }
        if (arg_relay_fd >= 0) {
                /* Without news of host changes there is nothing to relay: init's copy
                 * of the channel then just stays quiet. */
                relay.buf = malloc(RELAY_OUT_MAX);
                relay.size = RELAY_OUT_MAX;
                if (v.ifd >= 0 && relay.buf && fcntl(arg_relay_fd, F_SETFL, O_NONBLOCK) >= 0 &&
                    fcntl(arg_relay_fd, F_SETFD, FD_CLOEXEC) >= 0 && signal(SIGPIPE, SIG_IGN) != SIG_ERR)
                        relay.fd = arg_relay_fd;
                else {
                        safe_close(arg_relay_fd);
                        relay.buf = mfree(relay.buf);
                }
        }
        watch_add(&v.root);
        umask(0);
        {
                /* One fd per node the kernel holds: as many as the hard limit allows. */
                struct rlimit rl;
                if (getrlimit(RLIMIT_NOFILE, &rl) >= 0) {
                        rl.rlim_cur = rl.rlim_max;
                        (void) setrlimit(RLIMIT_NOFILE, &rl);
                }
        }

        if (fuse_opt_add_arg(&args, "lazaret-view") < 0)
                return 1;
        se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
        if (!se) {
                fprintf(stderr, "lazaret-view: cannot create the FUSE session\n");
                return 1;
        }
        /* Already mounted by the supervisor: the connection's fd, read and
         * written through the view's own callbacks (io_*). */
        if (fuse_session_custom_io(se, &view_io, arg_fuse_fd) < 0) {
                fprintf(stderr, "lazaret-view: cannot take over the FUSE connection\n");
                return 1;
        }
        v.se = se;
        if (v.ifd >= 0)
                notifier_start(arg_fuse_fd);
        r = harden();
        if (r < 0) {
                fprintf(stderr, "lazaret-view: cannot drop its privileges: %s\n", strerror(-r));
                return 1;
        }
        if (v.ifd >= 0) {
                pthread_t t;
                /* The reader end blocks; the handlers' end never does. */
                (void) fcntl(v.inval_pipe[0], F_SETFL, 0);
                if (pthread_create(&t, NULL, watcher, NULL) != 0) {
                        fprintf(stderr, "lazaret-view: cannot start the watcher thread\n");
                        return 1;
                }
        }
        /* Ready: the supervisor may let runsc bind the mount. */
        (void) !write(3, "1", 1);
        (void) close(3);

        /* A fixed set of workers reading the one connection. */
        r = fuse_pool_run(se, VIEW_WORKERS);
        fuse_session_destroy(se);
        return r == 0 ? 0 : 1;
}
