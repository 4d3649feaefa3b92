/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The change journal (spec 4.6, "git asks the view"): a record of every
 * change the view makes or sees in the workspace, appended to a file the
 * supervisor gave it (--journal-fd), which the sandbox reads read-only in
 * the control directory and git's fsmonitor hook inside answers from
 * (fsmonitor-proto.h). The host never reads it; nothing the sandbox does
 * reaches the view through it.
 *
 * Each record is written after its change is made and before the request
 * that made it is answered (for the watcher: once it judged the host's
 * event), so a token given out after a change was answered covers it. A
 * directory whose host watch is dropped ('D') counts as changed until it
 * is watched again ('W'); the view keeps the paths of those, to know a
 * directory watched again and to write them again after a reset. The
 * file never grows past FSMON_JOURNAL_MAX: at that point, after lost
 * inotify events and after a failed write it is emptied and gets a new
 * instance, so every token given out before answers "everything changed".
 */
#include <sys/random.h>

#include "fsmonitor-proto.h"
#include "view.h"

/* git never asks about its own directories: their churn (objects, the index's lock) is left out. */
static bool in_git_dir(const char *p) {
        for (const char *c = p; c; c = strchr(c, '/')) {
                if (*c == '/')
                        c++;
                if (startswith(c, ".git") && (c[4] == 0 || c[4] == '/'))
                        return true;
        }
        return false;
}

/* No journal any more: an empty file, which the hook answers with "everything" for good. */
static void journal_fail(Journal *j) {
        fprintf(stderr, "lazaret-view: cannot write the change journal (%m): git inside looks at every file from "
                "now on\n");
        (void) !ftruncate(j->fd, 0);
        j->fd = safe_close(j->fd);
}

static int journal_write_header(Journal *j) {
        char h[FSMON_HEADER_SIZE];
        uint64_t instance = 0;

        /* An instance of 0 is the hook's "none". */
        while (instance == 0)
                if (getrandom(&instance, sizeof(instance), 0) != (ssize_t) sizeof(instance))
                        instance = (uint64_t) now_msec() ^ ((uint64_t) getpid() << 32);
        fsmon_header_format(instance, h);
        if (ftruncate(j->fd, 0) < 0 || pwrite(j->fd, h, sizeof(h), 0) != (ssize_t) sizeof(h))
                return -errno ?: -EIO;
        j->instance = instance;
        j->size = FSMON_HEADER_SIZE;
        return 0;
}

static void append_locked(Journal *j, char type, const char *path);

/*
 * Empties the journal under a new instance; the directories still
 * unwatched are written again (the root for them when they would take
 * half the journal). A write that fails meanwhile ends the journal. With
 * j->lock held.
 */
static void journal_reset_locked(Journal *j) {
        size_t i;

        if (j->resetting || journal_write_header(j) < 0) {
                journal_fail(j);
                return;
        }
        j->resetting = true;
        for (i = 0; i < j->n_unwatched && !j->unwatched_lost && j->fd >= 0; i++) {
                if (j->size + strlen(j->unwatched[i]) + 2 > FSMON_JOURNAL_MAX / 2)
                        break;
                append_locked(j, 'D', j->unwatched[i]);
        }
        if (j->fd >= 0 && (j->unwatched_lost || i < j->n_unwatched))
                append_locked(j, 'D', "");
        j->resetting = false;
}

static void append_locked(Journal *j, char type, const char *path) {
        char buf[VIEW_PATH_MAX + 2];
        size_t len = strlen(path);

        if (j->fd < 0)
                return;
        if (len > VIEW_PATH_MAX) {
                /* Cannot happen (node_relpath() bounds it); if it did, everything changed. */
                type = 'd';
                path = "";
                len = 0;
        }
        if (j->size + len + 2 > FSMON_JOURNAL_MAX)
                journal_reset_locked(j);
        if (j->fd < 0)
                return;
        buf[0] = type;
        memcpy(buf + 1, path, len);
        buf[len + 1] = 0;
        if (pwrite(j->fd, buf, len + 2, (off_t) j->size) != (ssize_t) (len + 2)) {
                /* A record lost: no token of this instance may be answered from it. */
                journal_reset_locked(j);
                return;
        }
        j->size += len + 2;
}

static void journal_append(View *v, char type, const char *path) {
        if (v->journal.fd < 0 || in_git_dir(path))
                return;
        pthread_mutex_lock(&v->journal.lock);
        append_locked(&v->journal, type, path);
        pthread_mutex_unlock(&v->journal.lock);
}

void journal_start(View *v, int fd) {
        v->journal.fd = fd;
        if (fd < 0)
                return;
        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
        if (journal_write_header(&v->journal) < 0)
                journal_fail(&v->journal);
}

void journal_reset(View *v) {
        if (v->journal.fd < 0)
                return;
        pthread_mutex_lock(&v->journal.lock);
        journal_reset_locked(&v->journal);
        pthread_mutex_unlock(&v->journal.lock);
}

/* The path of dir/name (name NULL: dir's own), or "" (everything) when it has none. With v->lock held. */
static const char *path_of(View *v, Node *dir, const char *name, char buf[static VIEW_PATH_MAX], char *type) {
        if (node_relpath(v, dir, name, buf, VIEW_PATH_MAX) < 0) {
                *type = 'd';
                return "";
        }
        return buf;
}

void journal_name_locked(View *v, Node *dir, const char *name, char type) {
        char buf[VIEW_PATH_MAX];
        const char *p;

        if (v->journal.fd < 0 || !dir)
                return;
        p = path_of(v, dir, name, buf, &type);
        journal_append(v, type, p);
}

void journal_name(View *v, Node *dir, const char *name, char type) {
        char buf[VIEW_PATH_MAX];
        const char *p;

        if (v->journal.fd < 0)
                return;
        pthread_mutex_lock(&v->lock);
        p = path_of(v, dir, name, buf, &type);
        pthread_mutex_unlock(&v->lock);
        journal_append(v, type, p);
}

void journal_node_locked(View *v, Node *n) {
        if (v->journal.fd < 0 || n == &v->root || !n->parent)
                return;
        journal_name_locked(v, n->parent, n->name, 'f');
        if (n->alt_name)
                journal_name_locked(v, n->parent, n->alt_name, 'f');
}

/*
 * A request's records, taken in two steps: the paths under v->lock
 * (journal_note_*_locked()), the writes after it is let go and before the
 * request is answered (journal_note_write()). So the journal's pwrite()
 * never holds up the watcher or another request waiting for v->lock, and
 * a token given out after the answer still covers the change. A rename
 * between the two steps journals both of its names itself.
 */
void journal_note_name_locked(View *v, JournalNote *jn, Node *dir, const char *name, char type) {
        if (v->journal.fd < 0 || !dir || jn->n >= ELEMENTSOF(jn->path))
                return;
        jn->type[jn->n] = type;
        if (path_of(v, dir, name, jn->path[jn->n], &jn->type[jn->n]) != jn->path[jn->n])
                jn->path[jn->n][0] = 0;         /* no path: everything changed ('d' "") */
        jn->n++;
}

void journal_note_node_locked(View *v, JournalNote *jn, Node *n) {
        if (v->journal.fd < 0 || n == &v->root || !n->parent)
                return;
        journal_note_name_locked(v, jn, n->parent, n->name, 'f');
        if (n->alt_name)
                journal_note_name_locked(v, jn, n->parent, n->alt_name, 'f');
}

void journal_note_write(View *v, JournalNote *jn) {
        for (size_t i = 0; i < jn->n; i++)
                journal_append(v, jn->type[i], jn->path[i]);
        jn->n = 0;
}

void journal_node(View *v, Node *n) {
        JournalNote jn;

        if (v->journal.fd < 0)
                return;
        jn.n = 0;
        pthread_mutex_lock(&v->lock);
        journal_note_node_locked(v, &jn, n);
        pthread_mutex_unlock(&v->lock);
        journal_note_write(v, &jn);
}

/*
 * Host directory n is not watched any more (the kernel forgot it, or its
 * watch went), or could not be watched: what the host changes in it is
 * unknown from now on. A directory that is gone (deleted: no links) needs
 * nothing: its removal is its parent's event. With v->lock held.
 */
void journal_unwatched_locked(View *v, Node *n) {
        Journal *j = &v->journal;
        char buf[VIEW_PATH_MAX], type = 'D';
        const char *p;
        struct stat st;

        if (j->fd < 0 || n == &v->root || n->stale || !n->parent || n->fd < 0 ||
            (fstat(n->fd, &st) >= 0 && st.st_nlink == 0))
                return;
        p = path_of(v, n->parent, n->name, buf, &type);
        if (in_git_dir(p))
                return;
        pthread_mutex_lock(&j->lock);
        append_locked(j, type, p);
        if (type == 'D' && !j->unwatched_lost) {
                bool known = false;

                for (size_t i = 0; i < j->n_unwatched && !known; i++)
                        known = streq(j->unwatched[i], p);
                if (!known) {
                        char *copy = j->n_unwatched < FSMON_UNWATCHED_MAX ? strdup(p) : NULL;
                        if (copy)
                                j->unwatched[j->n_unwatched++] = copy;
                        else
                                j->unwatched_lost = true;
                }
        }
        pthread_mutex_unlock(&j->lock);
}

/*
 * Host directory n is watched (again). One whose watch was dropped ('D')
 * changed, unseen, until now: it and all below ('W'). One watched for the
 * first time needs nothing: the instance's first answer to git was
 * "everything", and git looks at a file only through its directory, which
 * is then watched. With v->lock held.
 */
void journal_watched_locked(View *v, Node *n) {
        Journal *j = &v->journal;
        char buf[VIEW_PATH_MAX], type = 'W';
        const char *p;
        bool dropped;

        if (j->fd < 0 || n == &v->root || !n->parent || (j->n_unwatched == 0 && !j->unwatched_lost))
                return;
        p = path_of(v, n->parent, n->name, buf, &type);
        pthread_mutex_lock(&j->lock);
        dropped = j->unwatched_lost;
        for (size_t i = 0; i < j->n_unwatched; i++)
                if (streq(j->unwatched[i], p)) {
                        free(j->unwatched[i]);
                        j->unwatched[i] = j->unwatched[--j->n_unwatched];
                        dropped = true;
                        break;
                }
        if (dropped)
                append_locked(j, type, p);
        pthread_mutex_unlock(&j->lock);
}
