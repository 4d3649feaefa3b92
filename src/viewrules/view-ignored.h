/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Ignored Workspace State seen from the host (spec §4.6): which host paths
 * the view keeps from the sandbox because they are untracked and excluded
 * by git's ignore rules (view-policy.h, view_ignored_class()), for
 * `lazaretctl changes --ignored`. The rules are read as the view reads
 * them: every .gitignore of the workspace, .git/info/exclude, the host
 * user's core.excludesFile (git-ignore.h), the index by the fuzzed reader
 * (git-index.h). Everything is opened by fd beneath the workspace, nothing
 * followed; nothing here logs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "git-ignore.h"

/* At most this many paths are listed (the rest: truncated). */
#define VIEW_IGNORED_LIST_MAX 10000U
/* How deep the workspace is walked. */
#define VIEW_IGNORED_MAX_DEPTH 128U

typedef struct ViewIgnoredPath {
        char *path;                     /* workspace-relative; the top-most ignored one (a directory: all below it) */
        bool directory;
        bool shared;                    /* at or below a shared_ignored entry: read-only inside, not hidden */
        uint64_t size;                  /* bytes of regular files (a directory: below it) */
} ViewIgnoredPath;

typedef struct ViewIgnored {
        ViewIgnoredPath *paths;         /* in path order */
        size_t n;
        bool truncated;
} ViewIgnored;

void view_ignored_done(ViewIgnored *l);

/*
 * Walks the host's workspace (workspace_fd, a directory) and lists the
 * untracked paths git's rules exclude. excludes: the host user's
 * core.excludesFile (NULL: none); shared: shared_ignored. A rule file or
 * index that cannot be read counts as the view counts it: nothing
 * tracked, everything below excluded.
 */
int view_ignored_scan(int workspace_fd, const IgnoreList *excludes, char *const *shared, ViewIgnored *ret,
                      char **ret_error);

/*
 * The .gitignore of directory dir ("" for the top) beneath workspace_fd,
 * as git reads it (a symlink or a missing directory: none, *ret = NULL),
 * for an IgnoreCache.
 */
int view_read_gitignore(int workspace_fd, const char *dir, IgnoreList **ret, char **ret_error);

/*
 * The text of the host user's core.excludesFile at source, the absolute
 * path host_git_excludes_source() (host-git.h) found, or NULL for none
 * (at most IGNORE_FILE_MAX bytes); "" when there is none or it is missing.
 */
int view_excludes_text(const char *source, char **ret_text, size_t *ret_len, char **ret_error);
