/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the host's own git says about the host user's configuration: the
 * part of the ignore rules (git-ignore.h, which reads files only) that
 * runs git and reads the environment, for the callers that start a view
 * (the coordinator, once before its event loop) or scan for it
 * (lazaretctl changes --ignored).
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
