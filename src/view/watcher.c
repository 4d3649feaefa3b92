/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host changes: an inotify watch on each host directory the kernel holds,
 * the verdict on each event (the sandbox's own echo or a host change), and
 * the watcher thread.
 */
#include "view.h"

void watch_add(View *v, Node *n) {
        char pp[32];

        n->wd = -1;
        if (v->ifd < 0 || !n->is_dir || n->in_state || n->fd < 0)
                return;
        proc_path(n->fd, pp);
        n->wd = inotify_add_watch(v->ifd, pp, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY |
                                  IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |
                                  IN_EXCL_UNLINK);
        if (n->wd < 0) {
                /* Out of watches: its entries are not cached (timeout 0), its host edits not relayed
                 * and, for git's fsmonitor, changed at any time. */
                journal_unwatched_locked(v, n);
                if (errno == ENOSPC && !v->told_no_watch) {
                        char rel[VIEW_PATH_MAX];
                        v->told_no_watch = true;
                        if (node_relpath(v, n, NULL, rel, sizeof(rel)) < 0)
                                snprintf(rel, sizeof(rel), "?");
                        fprintf(stderr, "lazaret-view: the kernel's limit on inotify watches "
                                "(fs.inotify.max_user_watches) is reached: host edits in /%s and in directories "
                                "opened after it do not reach file watchers inside the sandbox, and the kernel "
                                "caches nothing of them (README.md, \"Troubleshooting\")\n", rel);
                }
                return;
        }
        for (Node *o = v->watches[(unsigned) n->wd % ELEMENTSOF(v->watches)]; o; o = o->wnext)
                if (o->wd == n->wd) {
                        /* The same directory as another node: that one keeps the watch,
                         * and its events name that node's path, not this one's. */
                        n->wd = -1;
                        journal_unwatched_locked(v, n);
                        return;
                }
        n->wnext = v->watches[(unsigned) n->wd % ELEMENTSOF(v->watches)];
        v->watches[(unsigned) n->wd % ELEMENTSOF(v->watches)] = n;
        /* What the host did in it before now was not seen. */
        journal_watched_locked(v, n);
}

void watch_forget(View *v, Node *n, bool remove) {
        if (n->wd < 0)
                return;
        for (Node **p = &v->watches[(unsigned) n->wd % ELEMENTSOF(v->watches)]; *p; p = &(*p)->wnext)
                if (*p == n) {
                        *p = n->wnext;
                        break;
                }
        if (remove)
                (void) inotify_rm_watch(v->ifd, n->wd);
        n->wd = -1;
}

static Node *watch_find(View *v, int wd) {
        for (Node *n = v->watches[(unsigned) wd % ELEMENTSOF(v->watches)]; n; n = n->wnext)
                if (n->wd == wd)
                        return n;
        return NULL;
}

/* How long the kernel may keep an entry of dir: long while a watch tells us of host changes. */
double timeout_in(View *v, const Node *dir) {
        /* Ignored state changes only through the view. */
        return dir && (dir->wd >= 0 || (dir->in_state && dir->cls == VIEW_IGNORED)) ? v->timeout : 0;
}

/* Asks the watcher thread to drop the kernel's entry name in dir (or, name NULL, what it caches of dir). */
void inval_later(View *v, Node *dir, const char *name) {
        Inval i = { .node = (uint64_t) (uintptr_t) dir };
        size_t len = name ? strlen(name) : 0;

        if (v->inval_pipe[1] < 0 || len > NAME_MAX)
                return;
        if (dir == &v->root)
                i.node = FUSE_ROOT_ID;
        i.len = (uint16_t) len;
        memcpy(i.name, name ?: "", len);
        /* One whole record per write, below PIPE_BUF: never interleaved. A full pipe loses
         * the invalidation; the entry then lives until its timeout. */
        (void) !write(v->inval_pipe[1], &i, sizeof(i));
}

/* After a change that moves names between the sides (a HEAD or a control name came or went). */
void inval_facts(View *v, Node *dir, const char *name) {
        /* A .gitignore the sandbox made, removed or renamed counts at once (a write: once the watcher sees it). */
        ign_note_change(v, dir, name);
        if (!view_name_needs_facts(&dir->dir, name))
                return;
        inval_later(v, dir, "HEAD");
        for (const char *const *p = view_fact_names(); *p; p++)
                inval_later(v, dir, *p);
}

/* ---- host changes -------------------------------------------------------- */

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

typedef enum EchoVerdict {
        ECHO,
        BUSY,
        CHANGED,
        CHANGED_OWN,                    /* changed by a request lately: invalidated, not relayed */
} EchoVerdict;


/* With v->lock held. name: NUL-terminated, in the watched directory dir; *ret_st what it is now. */
static EchoVerdict echo_verdict(View *v, Node *dir, const char *name, struct stat *ret_st, bool *ret_exists) {
        uint64_t now = now_msec();
        bool own = own_name_seen(v, dir, name, now);
        struct stat st;

        *ret_exists = false;
        if (__atomic_load_n(&dir->busy, __ATOMIC_SEQ_CST) > 0)
                return BUSY;
        if (fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return own ? CHANGED_OWN : CHANGED;
        *ret_st = st;
        *ret_exists = true;
        for (ViewClass c = 0; c < _VIEW_CLASS_MAX; c++)
                for (Node *n = v->hash[hash_of(st.st_dev, st.st_ino, false, c)]; n; n = n->hnext) {
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

/* The verdict for an event on watch wd (of node id node) naming name[len]; with want_relay, a
 * CHANGED one that the watchers inside are to be told of has its path in rel (else rel is ""). */
static EchoVerdict event_verdict(View *v, int wd, fuse_ino_t node, const char *name, size_t len, bool want_relay,
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
        pthread_mutex_lock(&v->lock);
        dir = watch_find(v, wd);
        if (dir && id_of(v, dir) == node) {
                r = echo_verdict(v, dir, buf, &st, &exists);
                relayed = r == CHANGED && want_relay && v->relay.fd >= 0 &&
                          relay_path(v, dir, buf, &st, exists, rel, WATCH_PATH_MAX + 1);
        }
        pthread_mutex_unlock(&v->lock);
        if (!relayed)
                rel[0] = 0;
        return r;
}

/* A host change for the journal: name[len] in the directory of watch wd (node id node). */
static void journal_event(View *v, int wd, fuse_ino_t node, const char *name, size_t len, bool dir_event) {
        char buf[NAME_MAX + 1];
        Node *dir;

        if (v->journal.fd < 0 || len == 0 || len > NAME_MAX)
                return;
        memcpy(buf, name, len);
        buf[len] = 0;
        pthread_mutex_lock(&v->lock);
        dir = watch_find(v, wd);
        if (dir && id_of(v, dir) == node)
                journal_name_locked(v, dir, buf, dir_event ? 'd' : 'f');
        pthread_mutex_unlock(&v->lock);
}

static void judge(View *v, fuse_ino_t node, int wd, const char *name, size_t len, bool listing, bool relay_it,
                  bool dir_event) {
        char rel[WATCH_PATH_MAX + 1];

        switch (event_verdict(v, wd, node, name, len, relay_it, rel)) {
        case ECHO:
                return;
        case BUSY:
                if (v->n_pending < ELEMENTSOF(v->pending)) {
                        v->pending[v->n_pending] = (PendingInval) { .node = node, .wd = wd, .listing = listing,
                                                              .relay = relay_it, .dir = dir_event,
                                                              .len = (uint16_t) len };
                        memcpy(v->pending[v->n_pending].name, name, len);
                        v->n_pending++;
                        return;
                }
                __attribute__((fallthrough));
        case CHANGED:
        case CHANGED_OWN:
                /* The kernel's cache first, then the watchers inside (whose relay
                 * gathers for a few ms before it acts): what they read is new. */
                apply_inval(v, node, name, len, listing);
                /* For git's fsmonitor: after the kernel's cache, before the
                 * watchers inside, as an answer may follow what they do. */
                journal_event(v, wd, node, name, len, dir_event);
                if (rel[0])
                        (void) watch_out_add(&v->relay, rel);
                return;
        }
}

/* Judges the held-back events again: each (node, name) once. */
static void pending_retry(View *v) {
        PendingInval copy[INVAL_PENDING_MAX];
        size_t n = v->n_pending;

        memcpy(copy, v->pending, n * sizeof(copy[0]));
        v->n_pending = 0;
        for (size_t i = 0; i < n; i++) {
                bool listing = copy[i].listing, relay_it = copy[i].relay, dir_event = copy[i].dir, seen = false;

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
                                dir_event = dir_event || copy[j].dir;
                        }
                judge(v, copy[i].node, copy[i].wd, copy[i].name, copy[i].len, listing, relay_it, dir_event);
        }
        relay_flush(v);
}

static void judge_all(View *v, const PendingInval *b, size_t n) {
        for (size_t j = 0; j < n; j++)
                judge(v, b[j].node, b[j].wd, b[j].name, b[j].len, b[j].listing, b[j].relay, b[j].dir);
        relay_flush(v);
}

/*
 * One read of the inotify queue: the bookkeeping of each event under one
 * hold of v->lock, then one judgement per (directory, name), since the
 * several events of one change (IN_CREATE, IN_MODIFY, IN_ATTRIB,
 * IN_CLOSE_WRITE of a file written) need the host looked at only once.
 */
static void watch_batch(View *v, const char *buf, size_t size) {
        size_t n = 0;

        pthread_mutex_lock(&v->lock);
        for (const char *q = buf; q + sizeof(struct inotify_event) <= buf + size;) {
                const struct inotify_event *ev = (const struct inotify_event *) q;
                bool listing = ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO), seen = false;
                /* As lazaret-watch: a directory's own metadata is no news for watchers. */
                bool relay_it = ev->len > 0 && !(!(ev->mask & ~(IN_ATTRIB | IN_ISDIR)) && (ev->mask & IN_ISDIR));
                /* A directory came, went or moved: for the journal, all below it too. */
                bool dir_event = listing && (ev->mask & IN_ISDIR);
                size_t len = 0;
                Node *n_dir;

                q += sizeof(*ev) + ev->len;
                if (ev->mask & IN_Q_OVERFLOW) {
                        /* Events were lost: whatever the kernel holds may be stale. */
                        fprintf(stderr, "lazaret-view: host change events were lost; "
                                "entries cached until their timeout may be stale\n");
                        /* git's fsmonitor: everything changed. */
                        journal_reset(v);
                        continue;
                }
                n_dir = watch_find(v, ev->wd);
                if (!n_dir)
                        continue;
                if (ev->mask & IN_IGNORED) {
                        journal_unwatched_locked(v, n_dir);
                        watch_forget(v, n_dir, false);
                }
                if (ev->len > 0) {
                        ign_note_change(v, n_dir, ev->name);
                        len = strnlen(ev->name, ev->len);
                        if (len > NAME_MAX)
                                continue;
                }
                for (size_t j = 0; j < n && !seen; j++)
                        if (v->batch[j].wd == ev->wd && v->batch[j].len == len && memcmp(v->batch[j].name, ev->name, len) == 0) {
                                v->batch[j].listing = v->batch[j].listing || listing;
                                v->batch[j].relay = v->batch[j].relay || relay_it;
                                v->batch[j].dir = v->batch[j].dir || dir_event;
                                seen = true;
                        }
                if (seen)
                        continue;
                if (n == ELEMENTSOF(v->batch)) {
                        /* A full batch: what it holds is judged, a new one begun. */
                        pthread_mutex_unlock(&v->lock);
                        judge_all(v, v->batch, n);
                        n = 0;
                        pthread_mutex_lock(&v->lock);
                }
                v->batch[n] = (PendingInval) { .node = id_of(v, n_dir), .wd = ev->wd, .listing = listing, .relay = relay_it,
                                            .dir = dir_event, .len = (uint16_t) len };
                memcpy(v->batch[n].name, ev->name, len);
                n++;
        }
        pthread_mutex_unlock(&v->lock);
        judge_all(v, v->batch, n);
}

/* One record of the handlers' invalidation pipe, applied. */
static void inval_pipe_apply(View *v) {
        Inval i;

        /* Records of one size, each written whole (below PIPE_BUF). */
        if (read(v->inval_pipe[0], &i, sizeof(i)) == (ssize_t) sizeof(i) && i.len <= NAME_MAX)
                apply_inval(v, (fuse_ino_t) i.node, i.name, i.len, i.listing);
}

/* How long the watcher lets inotify events gather before it reads them. */
#define WATCH_GATHER_MS 2

/*
 * The watcher: what the host changes, the kernel forgets (its entry and,
 * through the next lookup, its attributes), so long timeouts stay true.
 * It also runs the invalidations the request handlers queued, at once.
 */
void *watcher(void *arg) {
        char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
        uint64_t retry_at = 0;

        View *v = arg;

        for (;;) {
                struct pollfd p[3] = { { .fd = v->ifd, .events = POLLIN }, { .fd = v->inval_pipe[0], .events = POLLIN },
                                       { .fd = v->relay.n > 0 ? v->relay.fd : -1, .events = POLLOUT } };
                int timeout = -1;
                ssize_t k;

                if (v->n_pending > 0) {
                        uint64_t now = now_msec();
                        if (now >= retry_at) {
                                pending_retry(v);
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
                        relay_flush(v);
                if (p[1].revents & POLLIN)
                        inval_pipe_apply(v);
                if (!(p[0].revents & POLLIN))
                        continue;
                /* Most events are the echo of the view's own changes, several
                 * per file written: gathered for a moment, they cost one
                 * wakeup instead of one each. Invalidations asked for
                 * meanwhile are applied at once. */
                for (uint64_t until = now_msec() + WATCH_GATHER_MS, now; (now = now_msec()) < until;)
                        if (poll(&p[1], 1, (int) (until - now)) > 0 && (p[1].revents & POLLIN))
                                inval_pipe_apply(v);
                k = read(v->ifd, buf, sizeof(buf));
                if (k <= 0)
                        continue;
                if (v->n_pending == 0)
                        retry_at = now_msec() + INVAL_RETRY_MS;
                watch_batch(v, buf, (size_t) k);
        }
}
