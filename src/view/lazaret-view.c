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
 *                [--unprotect NAME]... [--git-dir [--index-protect PATH]...]
 *                [--entry-timeout S] [--ignored-fd N [--excludes-fd N] [--shared-ignored PATH]...]
 *                [--relay-fd N] [--journal-fd N]
 *
 * --relay-fd: the host-edit relay's write end (spec 4.6): the view is the
 * relay's source, and writes there the path of each host change it judged
 * not to be the sandbox's own.
 *
 * --journal-fd: the change journal's file (journal.c; spec 4.6, "git asks
 * the view"), which the view empties and writes from the start; git's
 * fsmonitor hook inside reads it.
 *
 * --git-dir: the served directory is a git dir of the host's own (a linked
 * worktree's common dir, a submodule's git dir), not a workspace.
 * --index-protect: there, the workspace's protected paths, which its
 * indexes may not take from the sandbox (index-guard.c); the names count
 * for them too.
 *
 * Readiness: one byte on fd 3 once the session is mounted and served.
 */

#include "view.h"

static void op_init(void *userdata, struct fuse_conn_info *conn) {
        View *v = userdata;

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
                v->no_open = true;
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
static ssize_t io_read(int fd, void *buf, size_t len, void *userdata) {
        View *v = userdata;
        ssize_t k = read(fd, buf, len);

        if (k > 0 && !__atomic_load_n(&v->init_io.done, __ATOMIC_ACQUIRE)) {
                pthread_mutex_lock(&v->init_io.lock);
                fuse_init_saw_request(&v->init_io.patch, buf, (size_t) k);
                pthread_mutex_unlock(&v->init_io.lock);
        }
        return k;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata) {
        View *v = userdata;

        if (!__atomic_load_n(&v->init_io.done, __ATOMIC_ACQUIRE)) {
                char copy[256];
                uint32_t flags;
                size_t off;
                bool patch;

                pthread_mutex_lock(&v->init_io.lock);
                patch = fuse_init_reply_flags(&v->init_io.patch, iov, count, &flags, &off);
                if (v->init_io.patch.seen && v->init_io.patch.unique == 0)
                        __atomic_store_n(&v->init_io.done, true, __ATOMIC_RELEASE);
                pthread_mutex_unlock(&v->init_io.lock);
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

/* The command line, as main() holds it. */
typedef struct Options {
        int workspace_fd, state_fd, fuse_fd, ignored_fd, excludes_fd, relay_fd, journal_fd;
        double timeout;
        char **protect, **protect_names, **unprotect, **shared_ignored, **index_protect;
        bool git_dir;
} Options;

static int parse_argv(int argc, char *argv[], Options *o) {
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
                { "index-protect", required_argument, NULL, 'I' },
                { "journal-fd",    required_argument, NULL, 'j' },
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
                        *(c == 'w' ? &o->workspace_fd : c == 's' ? &o->state_fd : &o->fuse_fd) = k;
                        break;
                case 'p':
                case 'S':
                case 'I':
                        if (isempty(optarg) || optarg[0] == '/' || strlen(optarg) >= VIEW_PATH_MAX ||
                            strv_extend(c == 'p' ? &o->protect : c == 'S' ? &o->shared_ignored : &o->index_protect,
                                        optarg) < 0)
                                return -EINVAL;
                        break;
                case 'n':
                case 'u':
                        if (isempty(optarg) || strchr(optarg, '/') || strlen(optarg) > NAME_MAX ||
                            strv_extend(c == 'n' ? &o->protect_names : &o->unprotect, optarg) < 0)
                                return -EINVAL;
                        break;
                case 'g':
                        o->git_dir = true;
                        break;
                case 'i':
                case 'x':
                case 'r':
                case 'j':
                        if (parse_int(optarg, 3, 1024, &k) < 0)
                                return -EINVAL;
                        *(c == 'i' ? &o->ignored_fd : c == 'x' ? &o->excludes_fd : c == 'r' ? &o->relay_fd : &o->journal_fd) = k;
                        break;
                case 't':
                        if (parse_int(optarg, 0, 3600, &k) < 0)
                                return -EINVAL;
                        o->timeout = k;
                        break;
                default:
                        return -EINVAL;
                }
        if (optind != argc || o->workspace_fd < 0 || o->state_fd < 0 || o->fuse_fd < 0)
                return -EINVAL;
        return 0;
}

/* Ignored Workspace State, when the supervisor passed its directory (isolate_ignored). */
static int ign_setup(View *v, const Options *o) {
        struct stat st;
        int r;

        if (o->ignored_fd < 0)
                return 0;
        if (fstat(o->ignored_fd, &st) < 0 || !S_ISDIR(st.st_mode))
                return -ENOTDIR;
        (void) fcntl(o->ignored_fd, F_SETFD, FD_CLOEXEC);
        v->ign.fd = o->ignored_fd;
        v->ign.shared = o->shared_ignored;
        r = ignore_cache_new(ign_read_dir, v, &v->ign.cache);
        if (r < 0)
                return r;
        /* The workspace's own git dir (not a gitfile: its index would be elsewhere). */
        v->ign.git_fd = openat(v->root.fd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (o->excludes_fd >= 0) {
                _cleanup_free_ char *text = NULL, *error = NULL;
                size_t len;

                (void) fcntl(o->excludes_fd, F_SETFD, FD_CLOEXEC);
                r = read_full_fd(o->excludes_fd, IGNORE_FILE_MAX, &text, &len);
                if (r >= 0)
                        r = ignore_list_parse(text, len, "", "core.excludesFile", &v->ign.excludes, &error);
                if (r < 0)
                        ign_warn(v, "core.excludesFile", r, error);
                safe_close(o->excludes_fd);
        }
        v->ign.on = true;
        return 0;
}

/*
 * The view's state, nothing open yet. It is never freed: the workers and
 * the watcher thread use it until the process ends.
 */
static View *view_new(void) {
        View *v = calloc(1, sizeof(*v));

        if (!v)
                return NULL;
        (void) pthread_mutex_init(&v->lock, NULL);
        (void) pthread_cond_init(&v->moved, NULL);
        v->ifd = -1;
        v->inval_pipe[0] = v->inval_pipe[1] = -1;
        v->ign.fd = v->ign.git_fd = -1;
        v->relay.fd = -1;
        (void) pthread_mutex_init(&v->journal.lock, NULL);
        v->journal.fd = -1;
        v->notify_fd = v->notify_ack_fd = -1;
        (void) pthread_mutex_init(&v->init_io.lock, NULL);
        v->init_io.patch.want = FUSE_INIT_WANT;
        return v;
}

/* The workspace and Domain state, as the supervisor passed them: the root node and where its shadows live. */
static int view_open(View *v, const Options *o) {
        struct stat st;

        if (fstat(o->workspace_fd, &st) < 0 || !S_ISDIR(st.st_mode) || fstat(o->state_fd, &st) < 0 ||
            !S_ISDIR(st.st_mode))
                return -ENOTDIR;
        (void) fcntl(o->workspace_fd, F_SETFD, FD_CLOEXEC);
        (void) fcntl(o->state_fd, F_SETFD, FD_CLOEXEC);
        v->root = (Node) { .nlookup = 1, .fd = o->workspace_fd, .is_dir = true, .cls = VIEW_SHARED,
                           .dir = o->git_dir ? VIEW_DIR_GIT_ROOT : VIEW_DIR_TOP,
                           .dev = st.st_dev, .ino = st.st_ino, .state_dirfd = -1, .name = (char *) "" };
        v->root.ign_mfd = v->root.ign_efd = -1;
        v->state_fd = o->state_fd;
        v->lists = (ViewLists) { .paths = o->protect, .names = o->protect_names, .unprotect = o->unprotect };
        v->git_dir = o->git_dir;
        v->index_lists = (ViewLists) { .paths = o->index_protect, .names = o->protect_names, .unprotect = o->unprotect };
        return 0;
}

/* News of host changes (inotify, the handlers' pipe of invalidations) and the relay's channel, where they can be had. */
static void watch_setup(View *v, const Options *o) {
        v->timeout = o->timeout;
        v->ifd = inotify_init1(IN_CLOEXEC);
        if (v->ifd < 0 || pipe2(v->inval_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
                /* Without news of host changes nothing may be cached. */
                fprintf(stderr, "lazaret-view: no inotify (%m): the kernel caches nothing of the workspace\n");
                v->ifd = safe_close(v->ifd);
                v->timeout = 0;
        }
        if (o->relay_fd >= 0) {
                /* Without news of host changes there is nothing to relay: init's copy
                 * of the channel then just stays quiet. */
                v->relay.buf = malloc(RELAY_OUT_MAX);
                v->relay.size = RELAY_OUT_MAX;
                if (v->ifd >= 0 && v->relay.buf && fcntl(o->relay_fd, F_SETFL, O_NONBLOCK) >= 0 &&
                    fcntl(o->relay_fd, F_SETFD, FD_CLOEXEC) >= 0 && signal(SIGPIPE, SIG_IGN) != SIG_ERR)
                        v->relay.fd = o->relay_fd;
                else {
                        safe_close(o->relay_fd);
                        v->relay.buf = mfree(v->relay.buf);
                }
        }
        watch_add(v, &v->root);
}

/* One fd per node the kernel holds: as many as the hard limit allows. */
static void raise_fd_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

/*
 * The FUSE session on the connection the supervisor mounted (fuse_fd),
 * read and written through the view's own callbacks (io_*), its user data
 * the view.
 */
static struct fuse_session *session_new(View *v, int fuse_fd) {
        struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
        struct fuse_session *se;

        if (fuse_opt_add_arg(&args, "lazaret-view") < 0)
                return NULL;
        se = fuse_session_new(&args, &ops, sizeof(ops), v);
        if (!se) {
                fprintf(stderr, "lazaret-view: cannot create the FUSE session\n");
                return NULL;
        }
        if (fuse_session_custom_io(se, &view_io, fuse_fd) < 0) {
                fprintf(stderr, "lazaret-view: cannot take over the FUSE connection\n");
                return NULL;
        }
        v->se = se;
        return se;
}

static int watcher_start(View *v) {
        pthread_t t;

        /* The reader end blocks; the handlers' end never does. */
        (void) fcntl(v->inval_pipe[0], F_SETFL, 0);
        return -pthread_create(&t, NULL, watcher, v);
}

int main(int argc, char *argv[]) {
        Options o = { .workspace_fd = -1, .state_fd = -1, .fuse_fd = -1, .ignored_fd = -1, .excludes_fd = -1,
                      .relay_fd = -1, .journal_fd = -1, .timeout = 3600 };
        struct fuse_session *se;
        View *v;
        int r;

        if (parse_argv(argc, argv, &o) < 0) {
                fprintf(stderr, "lazaret-view is started by lazaret-supervisor only.\n");
                return 2;
        }
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
                return 2;
        v = view_new();
        if (!v) {
                fprintf(stderr, "lazaret-view: out of memory\n");
                return 1;
        }
        if (view_open(v, &o) < 0) {
                fprintf(stderr, "lazaret-view: the workspace and state fds must be directories\n");
                return 2;
        }
        r = ign_setup(v, &o);
        if (r < 0) {
                fprintf(stderr, "lazaret-view: cannot set up ignored workspace state: %s\n", strerror(-r));
                return 1;
        }
        watch_setup(v, &o);
        /* Without news of host changes the journal would miss them: left empty, git inside then scans. */
        if (o.journal_fd >= 0 && (v->ifd < 0 || o.git_dir))
                o.journal_fd = safe_close(o.journal_fd);
        journal_start(v, o.journal_fd);
        umask(0);
        raise_fd_limit();

        se = session_new(v, o.fuse_fd);
        if (!se)
                return 1;
        if (v->ifd >= 0)
                notifier_start(v, o.fuse_fd, argc, argv);
        r = harden();
        if (r < 0) {
                fprintf(stderr, "lazaret-view: cannot drop its privileges: %s\n", strerror(-r));
                return 1;
        }
        if (v->ifd >= 0 && watcher_start(v) < 0) {
                fprintf(stderr, "lazaret-view: cannot start the watcher thread\n");
                return 1;
        }
        object_staging_sweep(v);
        /* Ready: the supervisor may let runsc bind the mount. */
        (void) !write(3, "1", 1);
        (void) close(3);

        /* A fixed set of workers reading the one connection. */
        r = fuse_pool_run(se, VIEW_WORKERS);
        fuse_session_destroy(se);
        return r == 0 ? 0 : 1;
}
