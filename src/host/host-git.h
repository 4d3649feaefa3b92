/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * What the host's own git says about the host user's configuration: the
 * part of the ignore rules (git-ignore.h, which reads files only) that
 * runs git and reads the environment, for the callers that start a view
 * (the coordinator, once before its event loop) or scan for it
 * (lazaretctl changes --ignored); and about a repository's commits, read
 * from its object store alone (lazaretctl changes, status and launch).
 */

/*
 * The host user's core.excludesFile, as host git finds it: the host's git
 * is run as `git config --path --get core.excludesFile` in "/" with an
 * environment that names no repository (so only the system and global
 * files, includes followed, are read; nothing from a workspace), and when
 * it is unset, git's default (ignore_default_excludes_file()) from this
 * process's $XDG_CONFIG_HOME and $HOME. *ret = NULL when neither applies
 * (no HOME). The value is git's, "~" expanded; a relative one (git would
 * take it from the work tree's top) is returned as is. -ENOENT when git is
 * not installed. The repository's own .git/config can set core.excludesFile
 * too; that one is not read here (the caller has the Git Sentry's reader).
 */
int host_git_excludes_file(char **ret, char **ret_error);

/*
 * Where the view reads the host user's core.excludesFile from (runs git
 * config, waits for it): host_git_excludes_file()'s value when absolute,
 * *ret_source = NULL when there is none, git is not installed, or the value
 * is relative (a file of the workspace's, which the sandbox writes, is never
 * taken). Its text: view_excludes_text() (view-ignored.h).
 */
int host_git_excludes_source(char **ret_source, char **ret_error);

/*
 * Issue 32: the commits reachable from new_oids and from none of base_oids,
 * with the paths each changes, as the host's git reads them from the
 * object store at objects_dir (a repository's objects/, the host's own
 * path) without reading anything else of that repository: git runs in a
 * private, empty git dir of ours (made below $XDG_RUNTIME_DIR or /tmp,
 * removed after) that names the object store by GIT_OBJECT_DIRECTORY, holds
 * the object names as refs of its own (refs/lazaret/base/N, .../new/N),
 * and a configuration of its own; with no system or global configuration
 * and no git variable of ours, so no hook, filter, driver, pager, signature
 * check, replace ref or commit-graph (which the sandbox can write) takes
 * part: the commits are read from their objects. `git log` walks the
 * newest first, at most max_commits (then *ret_cut), and gives each
 * commit's changed paths against its parent (all of a root commit's; for a
 * merge, the paths it differs in from every parent: what the merge itself
 * brought); an object name that is missing is passed over. Each commit's
 * ref is the index into new_oids of the one it was reached from.
 * All object names must be of one length (SHA-1 or SHA-256). -ENOENT when
 * git is not installed; -EFBIG when the output passes
 * HOST_GIT_LOG_MAX bytes (a message says so).
 */
#define HOST_GIT_LOG_MAX (32U * 1024U * 1024U)

typedef struct HostGitCommit {
        char oid[65];
        size_t ref;                     /* index into new_oids */
        char **paths;
} HostGitCommit;

void host_git_commits_free(HostGitCommit *c, size_t n);

int host_git_commits_since(const char *objects_dir, char *const *base_oids, char *const *new_oids,
                           unsigned max_commits, HostGitCommit **ret, size_t *ret_n, bool *ret_cut,
                           char **ret_error);
