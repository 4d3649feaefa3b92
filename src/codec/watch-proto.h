/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The host-edit relay's channel (spec section 4.6): the host watcher
 * (lazaret-watch) writes one workspace-relative path per line into a pipe
 * that is the standard input of the sandbox's init, whose relay
 * (lazaret-init) turns each into an inotify event inside gVisor.
 *
 * A path on the channel is relative to the workspace root: "." is the root
 * itself, otherwise components separated by single '/', none empty, "." or
 * "..", no leading or trailing '/', no control characters, at most
 * WATCH_PATH_MAX bytes. The reader drops a line that breaks these rules or
 * is longer, and carries on at the next newline.
 *
 * No dependency beyond libc: the static init links this file alone.
 */

#define WATCH_PATH_MAX 1024u
/* Within this much time, a change already seen on the other side is an echo. */
#define WATCH_ECHO_WINDOW_MS 500u
#define WATCH_RECENT_SLOTS 4096u

/* Whether p[0..len) is a valid workspace-relative path as above. */
bool watch_path_valid(const char *p, size_t len);

/* dir (a valid path, "." for the root) and one entry name: "name" or
 * "dir/name", newly allocated; NULL when out of memory. */
char *watch_path_join(const char *dir, const char *name);

/* Whether the relative path p lies in a git object store (".git/objects" at
 * any depth): churn that no watcher inside needs, never relayed. */
bool watch_path_skipped(const char *p);

/*
 * The workspace-relative path of each watched directory, by inotify watch
 * descriptor (small integers that inotify hands out in order), and how many
 * there are. set() copies rel, replacing what wd had (inotify gives the same
 * wd for a directory watched again, after a rename say): 0, or -ENOMEM
 * (wd left without a path), -EINVAL for a negative wd.
 */
typedef struct WatchDirs {
        char **path;
        size_t size;
        size_t n;
} WatchDirs;

int watch_dirs_set(WatchDirs *d, int wd, const char *rel);
const char *watch_dirs_get(const WatchDirs *d, int wd);
void watch_dirs_drop(WatchDirs *d, int wd);
void watch_dirs_done(WatchDirs *d);

/*
 * Splits a stream into lines. Fed with whatever read() returned, it calls
 * line() for each complete, valid line (NUL-terminated, without its
 * newline); an overlong line is dropped up to its newline. Returns how many
 * lines were dropped.
 */
typedef struct WatchLineReader {
        char buf[WATCH_PATH_MAX + 1];
        size_t n;
        bool discarding;
} WatchLineReader;

size_t watch_line_feed(WatchLineReader *r, const char *data, size_t len,
                       void (*line)(const char *path, void *userdata), void *userdata);

/*
 * A bounded, lossy memory of paths seen at a time: a direct-mapped table of
 * path hashes. Forgetting (a slot reused) only costs one echo, never a
 * missed event, so a fixed size is enough.
 */
typedef struct WatchRecent {
        uint64_t hash[WATCH_RECENT_SLOTS];
        uint64_t at_ms[WATCH_RECENT_SLOTS];
} WatchRecent;

void watch_recent_note(WatchRecent *t, const char *path, uint64_t now_ms);
/* Whether path was noted within window_ms before now_ms. */
bool watch_recent_seen(const WatchRecent *t, const char *path, uint64_t now_ms, uint64_t window_ms);

/*
 * The writer's side of the channel: paths queued one per line into a
 * bounded buffer and written as far as the pipe (non-blocking) takes them,
 * never blocking the writer. A path that does not fit is left out; once
 * there is room again, the root "." stands for everything left out. When
 * the reader is gone (EPIPE, or any other failure) fd is closed and set to
 * -1, and nothing is queued any more. size: the buffer's, at least 2.
 */
typedef struct WatchOut {
        int fd;
        char *buf;
        size_t size, n;
        bool left_out;
} WatchOut;

/* Queues path and its newline; false when it was left out (no room, or no reader). */
bool watch_out_add(WatchOut *o, const char *path);
/* Writes what the pipe takes now; true when "." was queued for what was left out. */
bool watch_out_flush(WatchOut *o);

/*
 * Whether a process under proc_root (a procfs mount, "/proc") other than
 * the one with PID self holds an inotify descriptor: its fd links read
 * "anon_inode:inotify" (Linux) or "anon_inode:[inotifyfd:N]" (gVisor). 1: one
 * does; 0: none does; negative errno when proc_root cannot be read. A
 * process whose descriptors it may not read counts as holding one, and so
 * does going past WATCH_SCAN_MAX processes and descriptors in all: what
 * cannot be known costs work, never an event.
 */
#define WATCH_SCAN_MAX 65536u
int watch_inotify_held(const char *proc_root, int self);
