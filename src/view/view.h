/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The workspace view's own header (src/view/ only): its nodes, its state
 * and the functions one of its files calls in another. Where what lives:
 *   lazaret-view.c  start-up: options, hardening, the connection's I/O, main()
 *   node.c          the nodes: identity, the hash, pins, references, busy and moving
 *   sides.c         name judging: the side a name lives on, Domain state, whiteouts
 *   ignored.c       Ignored Workspace State: git's rules and index, the mirror tree
 *   moves.c         moves between the sides: copy-up, renames across, RENAME
 *   ops-attr.c      requests: LOOKUP, FORGET, GETATTR, SETATTR, READLINK
 *   ops-entry.c     requests: MKNOD, MKDIR, SYMLINK, LINK, UNLINK, RMDIR
 *   ops-file.c      requests on files: OPEN, CREATE, READ, WRITE, FSYNC, FALLOCATE, LSEEK
 *   ops-dir.c       requests on directories: OPENDIR, READDIR(PLUS), FSYNCDIR; STATFS
 *   watcher.c       host changes: the watches, the verdict on each event, the watcher thread
 *   index-guard.c   the host's index: what the sandbox may stage there (issue 32 item 3)
 *   object-guard.c  the host's object stores: what is filed under an object's name is that object (issue 32)
 *   relay.c         the host-edit relay's channel
 *   journal.c       the change journal, which git's fsmonitor hook inside answers from
 *   notifier.c      the notifier, the process that tells the kernel of invalidations
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
#include "fsmonitor-proto.h"
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
        bool checking;                  /* files: being checked for an object's name (object_rename()): changes refused */
        struct Staging *staging;        /* files: a copy under an object's name, not yet in place (object-guard.c) */
        struct IndexKept *kept;         /* files: an index's caches the host was not given, for the sandbox (index-guard.c) */
        bool index_adopted;             /* files: index_adopt() has nothing (more) to do with it (set for any other name than "index") */
        struct IndexLast *index_last;   /* git dirs: the sandbox's last index's entries, untracked cache and token (index-guard.c) */
        uint64_t changed_ms;            /* when a request last changed it on the host (CLOCK_MONOTONIC) */
        mode_t told_mode;
        off_t told_size;
        struct timespec told_mtime, told_ctime;
        int ign_mfd, ign_efd;           /* host directories: their ignored state's mirror and entries, or -1 */
        bool ign_absent;                /* host directories: no mirror in ignored state (only the view makes one) */
        Node *hnext;
        Node *wnext;                    /* in the watch table */
};

/* A record of the handlers' invalidation pipe, and of the notifier's (apply_inval()). */
typedef struct Inval {
        uint64_t node;                  /* fuse_ino_t */
        uint16_t len;                   /* 0: the node itself */
        bool listing;                   /* also the node's attributes and cached data (a directory's listing) */
        char name[NAME_MAX + 1];
} Inval;

/* Ignored Workspace State (ignored.c). With v->lock held. */
typedef struct IgnoredState {
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
} IgnoredState;

/* An event of a watched directory, as the watcher gathers and holds them back (watcher.c). */
#define INVAL_PENDING_MAX 512
typedef struct PendingInval {
        fuse_ino_t node;
        int wd;
        bool listing;                   /* the node's attributes and listing too */
        bool relay;                     /* a change the watchers inside are told of, if the host made it */
        bool dir;                       /* a directory came, went or moved (the journal's 'd') */
        uint16_t len;
        char name[NAME_MAX + 1];
} PendingInval;

/*
 * The host-edit relay's channel (spec 4.6), when the supervisor gave the
 * view its write end: the workspace-relative path of every host change the
 * watcher judged not to be the sandbox's own, one per line (watch-proto.h,
 * WatchOut: never blocking, the root "." for what did not fit), written by
 * the watcher thread alone.
 */
#define RELAY_OUT_MAX (256u * 1024u)

/*
 * The change journal (journal.c), when the supervisor gave the view its
 * file: fd, the instance of its header and the offset of the next record;
 * the directories whose watch is gone, written again after a reset (all of
 * them: unwatched_lost makes the root stand for them). Guarded by lock,
 * taken after v->lock where both are held.
 */
typedef struct Journal {
        pthread_mutex_t lock;
        int fd;
        uint64_t instance;
        uint64_t size;
        char *unwatched[FSMON_UNWATCHED_MAX];
        size_t n_unwatched;
        bool unwatched_lost;
        bool resetting;                 /* writing the unwatched directories after a new header */
} Journal;

/*
 * The view: everything its request handlers, its watcher thread and its
 * notifier share, made by main() and handed to each (the handlers through
 * the request's user data, fuse_req_userdata(); the watcher through its
 * start argument). Nodes and their hash are guarded by lock.
 */
typedef struct View {
        pthread_mutex_t lock;
        Node *hash[HASH_SIZE];
        Node root;
        int state_fd;                   /* Domain state: the shadow tree's root */
        ViewLists lists;                /* protected paths (the host's git configuration and hooks, the profile), names, removed names */
        bool git_dir;                   /* it serves a git dir of the host's (--git-dir), not the workspace */
        ViewLists index_lists;          /* what an index may not take from the sandbox (index-guard.c) */
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
         * its check to its end, a copy outside v->lock): its source, which
         * the rename holds a reference of. Requests that would change it or
         * anything below it wait for moved (wait_unmoved()). */
        Node *moving;
        pthread_cond_t moved;
        /* Files created under an object's name, written under a temporary name until whole and checked (object-guard.c). */
        struct Staging *stagings;
        unsigned staging_seq;           /* the last temporary name's number */
        /* The bytes of every index's kept caches together (index-guard.c, at most INDEX_KEPT_TOTAL_MAX). */
        size_t kept_total;
        uint64_t index_last_seq;        /* the last IndexLast's number (index_last_set_locked()) */
        /* Ignored Workspace State (ignored.c). */
        IgnoredState ign;
        /* The watcher thread's own (watcher.c): the events held back while a
         * request changes what they name, and the batch of one read. */
        PendingInval pending[INVAL_PENDING_MAX];
        size_t n_pending;
        PendingInval batch[INVAL_PENDING_MAX];
        WatchOut relay;                 /* the host-edit relay's channel (relay.c), fd -1 when there is none */
        Journal journal;                /* the change journal (journal.c), fd -1 when there is none */
        /* The notifier (notifier.c): the pipe of Inval records it reads (-1:
         * the view notifies the kernel itself); its answers to fences
         * (notify_fence()), and whether an invalidation went to it since the
         * last one was answered. The watcher thread's, once it runs. */
        int notify_fd;
        int notify_ack_fd;
        bool notify_fence_owed;
        uint64_t notify_fence_seq;
        /* The connection's INIT request and reply as they pass (io_read(), io_writev()). */
        struct {
                pthread_mutex_t lock;
                FuseInitPatch patch;
                bool done;
        } init_io;
} View;

static inline unsigned hash_of(dev_t dev, ino_t ino, bool in_state, ViewClass c) {
        uint64_t h = (uint64_t) ino * 0x9E3779B97F4A7C15ull ^ (uint64_t) dev ^ ((uint64_t) in_state << 1) ^ (uint64_t) c;
        return (unsigned) (h >> 20) % HASH_SIZE;
}

static inline Node *node_of(View *v, fuse_ino_t ino) {
        return ino == FUSE_ROOT_ID ? &v->root : (Node *) (uintptr_t) ino;
}

static inline fuse_ino_t id_of(View *v, Node *n) {
        return n == &v->root ? FUSE_ROOT_ID : (fuse_ino_t) (uintptr_t) n;
}

static inline void proc_path(int fd, char buf[static 32]) {
        snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

typedef struct Pin {
        int fd;
        bool owned;
        bool has_st;            /* st: what pin() saw when it opened fd */
        struct stat st;
} Pin;

/* node.c */
int open_by_name(Node *n, int pfd, int flags, struct stat *ret_st);
int pin_locked(View *v, Node *n, int *ret_fd, bool *ret_owned, struct stat *ret_st);
int stat_node_locked(View *v, Node *n, struct stat *ret);
void pin_done(Pin *p);
int pin_for(View *v, Node *n, Pin *ret, bool busy);
int pin(View *v, Node *n, Pin *ret);
void unhash(View *v, Node *n);
void set_parent(View *v, Node *n, Node *parent);
void forget_one(View *v, Node *n, uint64_t count);
void node_hash(View *v, Node *n);
void fill_stat(const Node *n, struct stat *st);
void note_changed(Node *n);
bool changed_lately(const Node *n, uint64_t now);
void own_name_note(View *v, Node *dir, const char *name);
bool own_name_seen(View *v, Node *dir, const char *name, uint64_t now);
void busy_begin(Node *n);
void busy_end(View *v, Node *n);
bool move_covers(View *v, const Node *n);
void wait_unmoved(View *v, const Node *a, const Node *b);
void told(Node *n, const struct stat *st);
bool told_matches(const Node *n, const struct stat *st);
int lookup_locked(View *v, Node *dir, const char *name, struct fuse_entry_param *e);
int lookup_made_locked(View *v, Node *dir, const char *name, ViewClass c, int fd, struct fuse_entry_param *e);

/* sides.c */
int node_relpath(View *v, Node *dir, const char *name, char *buf, size_t size);
int state_dir(View *v, Node *dir, bool create);
bool is_whiteout(int dirfd, const char *name);
int make_whiteout(int dirfd, const char *name);
int state_parent(View *v, Node *n);
bool holds_listed(View *v, Node *dir, const char *name);
bool host_has(Node *dir, const char *name);
bool state_has(View *v, Node *dir, const char *name);
bool state_holds(View *v, Node *dir, const char *name);
ViewClass class_of(View *v, Node *dir, const char *name, bool is_dir);
int find(View *v, Node *dir, const char *name, ViewClass *ret_cls, int *ret_fd, bool *ret_in_state, struct stat *ret_st,
         FileBirth *ret_birth);

/* ignored.c */
void ign_warn(View *v, const char *what, int r, const char *error);
int ign_read_dir(void *userdata, const char *dir, IgnoreList **ret, char **ret_error);
void ign_refresh(View *v);
void ign_note_change(View *v, Node *dir, const char *name);
int ign_mirror(View *v, Node *dir, bool create);
int ign_entries(View *v, Node *dir, bool create);
ViewClass ign_class(View *v, Node *dir, const char *name, bool is_dir, ViewClass c);

/* moves.c */
int prepare_change(View *v, Node *n);
int move_begin(View *v, Node *n);
void move_end(View *v);
int ign_promote(View *v, Node *dir, const char *name);
void ign_promote_tracked(View *v);
void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
               unsigned int flags);

/* ops-attr.c */
void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi);
void op_readlink(fuse_req_t req, fuse_ino_t ino);

/* ops-entry.c */
int create_side(View *v, Node *dir, const char *name, bool is_dir, ViewClass *ret_cls);
int create_mode(mode_t mode, mode_t *ret);
void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name);
void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char *name);
void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);

/* ops-file.c */
int view_open_flags(int flags);
void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi);
void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off, struct fuse_file_info *fi);
void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi);
void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);

/* ops-dir.c */
void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void op_statfs(fuse_req_t req, fuse_ino_t ino);

/* watcher.c */
void watch_add(View *v, Node *n);
void watch_forget(View *v, Node *n, bool remove);
double timeout_in(View *v, const Node *dir);
void inval_later(View *v, Node *dir, const char *name);
void inval_facts(View *v, Node *dir, const char *name);
void *watcher(void *arg);

/* index-guard.c */
typedef struct IndexJudge {
        int dirfd;                      /* the directory holding the host's index */
        ViewLists lists;
        char prefix[VIEW_PATH_MAX];     /* where its working tree lies in the workspace: "" or "dir/" */
} IndexJudge;
bool index_name(const Node *dir, const char *name);
int index_refuse_locked(View *v, Node *dir, const char *name, const char *what);
int index_refuse(View *v, Node *dir, const char *name, const char *what);
int index_judge_prepare(View *v, Node *dir, IndexJudge *ret);
void index_judge_done(IndexJudge *j);
int index_judge(const IndexJudge *j, const void *data, size_t size, char **ret_data, size_t *ret_size,
                GitIndexKept **ret_kept, GitIndex **ret_new, GitHashAlgo *ret_algo, char **ret_why);
/* The caches of one index, the bytes kept for all together: larger ones are not kept (the sandbox's git rebuilds them). */
#define INDEX_KEPT_MAX (32u * 1024u * 1024u)
#define INDEX_KEPT_TOTAL_MAX (64u * 1024u * 1024u)
void index_keep_locked(View *v, Node *n, GitIndexKept *k, int fd);
void index_kept_drop_locked(View *v, Node *n);
void index_kept_attr_locked(View *v, Node *n, struct stat *st);
bool index_kept_reply_read(View *v, fuse_req_t req, Node *n, int fd, size_t size, off_t off);
off_t index_kept_size(View *v, Node *n, int fd);
void index_last_set_locked(View *v, Node *dir, const GitIndex *i, GitHashAlgo algo, const void *data, size_t size);
void index_last_drop_locked(View *v, Node *dir);
void index_adopt(View *v, Node *n, struct stat *st);

/* object-guard.c */
ViewObjectKind object_name(const Node *dir, const char *name, char *ret_hex);
int object_refuse_locked(View *v, Node *dir, const char *name, const char *what);
int object_refuse(View *v, Node *dir, const char *name, const char *what);
/* Before a change of n in place: refused (-EPERM, a line said) when n is an index (index-guard.c) or an object's file. */
int guard_check_node(View *v, Node *n, const char *what);
int object_rename(View *v, Node *from, const char *name, Node *n, Node *to, const char *newname, ViewObjectKind k,
                  const char *hex, unsigned flags);
/* CREATE of an object's name (k): answered, the file staged under a temporary name. */
void object_create(fuse_req_t req, View *v, Node *dir, const char *name, ViewObjectKind k, const char *hex, mode_t mode,
                   struct fuse_file_info *fi);
/*
 * After a change of n that guard_check_node() let through, failed or not: a
 * write of [off, off + size), or off -1 for any other (a truncation, a
 * fallocate). 0, or -EPERM once the staged file cannot be what its name says.
 */
int object_staged_written(View *v, Node *n, off_t off, size_t size);
/* UNLINK of name in dir: 1 and done when it is a staged file's name. With v->lock held. */
int object_staged_unlink_locked(View *v, Node *dir, const char *name);
/* A staged file's node goes: what never became whole goes with it. With v->lock held. */
void object_staged_forget_locked(View *v, Node *n);
/* Whether name is a staged file's temporary name (never listed). */
bool object_staging_name(const char *name);
/* At start: what an earlier run left staged in the workspace's own object store goes (in a thread of its own). */
void object_staging_sweep(View *v);

/* relay.c */
bool relay_path(View *v, Node *dir, const char *name, const struct stat *st, bool exists, char *buf, size_t size);
void relay_flush(View *v);

/* journal.c: type is fsmonitor-proto.h's 'f' (the path) or 'd' (the directory and all below) */
typedef struct JournalNote {
        size_t n;
        char type[2];
        char path[2][VIEW_PATH_MAX];
} JournalNote;
void journal_start(View *v, int fd);
void journal_reset(View *v);
void journal_name_locked(View *v, Node *dir, const char *name, char type);
void journal_name(View *v, Node *dir, const char *name, char type);
void journal_node_locked(View *v, Node *n);
void journal_node(View *v, Node *n);
void journal_note_name_locked(View *v, JournalNote *jn, Node *dir, const char *name, char type);
void journal_note_node_locked(View *v, JournalNote *jn, Node *n);
void journal_note_write(View *v, JournalNote *jn);
void journal_unwatched_locked(View *v, Node *n);
void journal_watched_locked(View *v, Node *n);

/* notifier.c */
void apply_inval(View *v, fuse_ino_t node, const char *name, size_t len, bool listing);
void notify_fence(View *v);
void notifier_start(View *v, int fuse, int argc, char **argv);
