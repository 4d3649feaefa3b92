/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* Longest path Lazaret accepts anywhere (host or sandbox side). */
#define LAZARET_PATH_MAX 4095

bool path_is_absolute(const char *p);

/* True when any '/'-separated segment of p is exactly "..". */
bool path_has_dotdot(const char *p);

/*
 * Normalises an absolute path lexically: collapses repeated slashes, drops "."
 * segments and a trailing slash. Refuses (-EINVAL) relative paths and paths
 * with ".." segments, and (-ENAMETOOLONG) overlong ones. Never touches the
 * file system.
 */
int path_normalize(const char *p, char **ret);

/*
 * True when path equals dir or lies beneath it, comparing whole segments
 * ("/a/bc" is not beneath "/a/b"). Both must be normalised absolute paths.
 */
bool path_is_at_or_below(const char *path, const char *dir);

/*
 * Canonicalises an absolute host path: symlinks in the longest existing prefix
 * are resolved with realpath(3); the non-existing remainder is appended
 * lexically (it has no symlinks to resolve). ".." segments are refused before
 * anything is resolved.
 */
int path_canonicalize(const char *p, char **ret);

/* Joins two path fragments with exactly one '/' between them. */
char *path_join(const char *a, const char *b);
