/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * git's ignore rules (gitignore(5)), evaluated without git. Everything a
 * rule file holds can come from the sandbox (a .gitignore anywhere in the
 * workspace), so every input is bounded and matching is polynomial: a
 * pattern is cut at its slashes into segments, a path into components, and
 * both levels match with a single backtrack point (the classic wildcard
 * algorithm), so one pattern against one path costs at most
 * O(pattern length x path length) byte comparisons, whatever its stars.
 *
 * Semantics, as git 2.39 implements them (checked against `git check-ignore`
 * by tests/unit/test-git-ignore-git.c):
 *   - a line is split at '\n', one trailing '\r' is dropped, a UTF-8 BOM at
 *     the start of the file is skipped; empty lines and lines starting with
 *     '#' are skipped; trailing spaces are dropped unless escaped ("\ ");
 *   - "!" first negates; "\!" and "\#" start a pattern with '!' or '#';
 *   - one trailing '/' makes the pattern match directories only;
 *   - a pattern with no other '/' matches the last component of a path at
 *     any depth below the file's directory; one with a '/' at the start or
 *     middle matches the path relative to that directory (a leading '/' is
 *     dropped);
 *   - '*' matches within one component, '?' one byte other than '/',
 *     "[...]" one byte of a class ("!" or "^" negates, ranges, "[:alpha:]"
 *     and the other POSIX names; an unterminated class or an unknown class
 *     name makes the pattern match nothing), '\' quotes the next byte (a
 *     trailing '\' matches nothing); "**" as a whole segment matches any
 *     number of components ("**" + "/x": x at any depth; "a/" + "**" + "/b":
 *     zero or more components between; a trailing "/" + "**": everything
 *     inside); any other "**" is '*';
 *   - byte-wise and case-sensitive (core.ignoreCase is not honoured);
 *   - within one list the last matching line decides; lists are consulted in
 *     precedence order and the first with a match decides: the .gitignore of
 *     the deepest directory first, up to the top-level one, then
 *     $GIT_DIR/info/exclude, then core.excludesFile;
 *   - a path below an excluded directory is excluded whatever the rules say
 *     of the path itself, and the .gitignore files of an excluded directory
 *     are not read (git cannot re-include a file whose parent is excluded).
 * Tracking is the caller's: git ignores only untracked paths (git-index.h).
 *
 * A parsed IgnoreList never changes, so any number of threads may match
 * against it; an IgnoreCache is not locked (one thread, or the caller's
 * lock), and a list it replaces or forgets is freed at once.
 *
 * For a FUSE view: keep the verdict of each directory it has looked up;
 * a directory's children are then decided by ignore_lists_match() against
 * the chain [the directory's own list, its parent's, ..., the top-level
 * list, info/exclude, excludesFile] (or excluded outright when the
 * directory is), which is one step per lookup rather than a walk from the
 * top. When a .gitignore changes, ignore_cache_put() the reparsed list (or
 * ignore_cache_forget()) and drop the verdicts below that directory.
 */

#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"

/* A rule file larger than this is refused (-EFBIG). Real ones are a few KiB. */
#define IGNORE_FILE_MAX (512U * 1024U)
/* A pattern line longer than this (bytes, after trimming) is refused (-E2BIG). */
#define IGNORE_PATTERN_MAX 1024U
/* More pattern lines than this in one file are refused (-E2BIG). */
#define IGNORE_PATTERNS_MAX 16384U
/* Paths handed to the matchers are at most this long (-ENAMETOOLONG). */
#define IGNORE_PATH_MAX 4096U

typedef enum IgnoreVerdict {
        IGNORE_NO_MATCH,        /* no rule speaks of the path */
        IGNORE_EXCLUDED,        /* ignored (by the path's rule or a parent directory's) */
        IGNORE_INCLUDED,        /* a "!" rule matched last: not ignored */
} IgnoreVerdict;

/* One parsed rule file: its patterns and the directory they are relative to. */
typedef struct IgnoreList IgnoreList;

/* The line that decided, as `git check-ignore -v` names it. */
typedef struct IgnoreMatch {
        const IgnoreList *list;
        const char *source;     /* the list's source name, as given to ignore_list_parse() */
        unsigned line;          /* 1-based line number in the source */
        const char *pattern;    /* the line as git shows it ("!" included, trailing "/" kept) */
} IgnoreMatch;

/*
 * Parses the rule file text[0..len) (any bytes; a NUL ends a line's pattern
 * where git's reader would see it too). base is the directory the file
 * lives in, relative to the top of the work tree, without leading or
 * trailing '/' ("" for the top level, info/exclude and core.excludesFile);
 * source is a name for messages and IgnoreMatch (copied). Returns 0, or
 * -EFBIG / -E2BIG with a message when a bound above is exceeded, -EINVAL for
 * a malformed base, -ENOMEM.
 */
int ignore_list_parse(const char *text, size_t len, const char *base, const char *source, IgnoreList **ret,
                      char **ret_error);
IgnoreList *ignore_list_free(IgnoreList *l);
static inline void ignore_list_freep(IgnoreList **l) {
        if (*l)
                ignore_list_free(*l);
}
#define _cleanup_ignore_list_ _cleanup_(ignore_list_freep)

const char *ignore_list_base(const IgnoreList *l);
size_t ignore_list_size(const IgnoreList *l);

/*
 * Reads and parses the rule file name beneath dirfd, as git reads a
 * .gitignore: opened with O_NOFOLLOW, so a symlink is not followed; a
 * missing file, a symlink or anything but a regular file give 0 and *ret =
 * NULL (git treats them as absent). Errors as ignore_list_parse(), and the
 * open/read errno.
 */
int ignore_list_load_at(int dirfd, const char *name, const char *base, const char *source, IgnoreList **ret,
                        char **ret_error);

/*
 * Evaluates relpath (relative to the top of the work tree, no leading or
 * trailing '/', no empty, "." or ".." components) against lists in
 * precedence order, highest first, NULL entries skipped. This is the rule
 * for the path alone: whether a parent directory is excluded is the
 * caller's to know (ignore_match() does it). is_dir: the path is a
 * directory (not a symlink to one). *ret_match (optional) is set on a match.
 * Returns the verdict, or -ENAMETOOLONG / -EINVAL for a path out of shape.
 */
int ignore_lists_match(const IgnoreList *const *lists, size_t n_lists, const char *relpath, bool is_dir,
                       IgnoreMatch *ret_match);

/*
 * Supplies the parsed .gitignore of directory dir ("" for the top level):
 * *ret = NULL when it has none. The list stays owned by the loader (a cache
 * the caller keeps: a FUSE view parses each directory's file once and
 * reparses it when it changes). A negative return stops ignore_match().
 */
typedef int (*IgnoreLoadDir)(void *userdata, const char *dir, const IgnoreList **ret, char **ret_error);

typedef struct IgnoreSet {
        IgnoreLoadDir load_dir;         /* NULL: no per-directory files */
        void *userdata;
        const IgnoreList *info_exclude; /* $GIT_DIR/info/exclude, or NULL */
        const IgnoreList *excludes_file;/* core.excludesFile, or NULL */
} IgnoreSet;

/*
 * The verdict for relpath with git's whole rule: each parent directory,
 * top-down, is matched (as a directory) against the files of its own
 * parents; the first excluded one excludes the path, and its files are not
 * loaded. Otherwise the path is matched against every file from its parent
 * directory up. Returns the verdict or a negative errno (from the loader,
 * or for a path out of shape).
 */
int ignore_match(const IgnoreSet *set, const char *relpath, bool is_dir, IgnoreMatch *ret_match,
                 char **ret_error);

/*
 * A simple cache of per-directory lists for IgnoreSet.load_dir: directories
 * map to lists (or to "none"); a miss calls the reader, which returns a
 * freshly parsed list (or NULL) that the cache then owns. Put replaces (a
 * reparsed file), forget drops a directory so that the next lookup reads it
 * again.
 */
typedef int (*IgnoreReadDir)(void *userdata, const char *dir, IgnoreList **ret, char **ret_error);
typedef struct IgnoreCache IgnoreCache;

int ignore_cache_new(IgnoreReadDir read_dir, void *userdata, IgnoreCache **ret);
IgnoreCache *ignore_cache_free(IgnoreCache *c);
static inline void ignore_cache_freep(IgnoreCache **c) {
        if (*c)
                ignore_cache_free(*c);
}
#define _cleanup_ignore_cache_ _cleanup_(ignore_cache_freep)
/* Takes l (NULL: the directory has no file). */
int ignore_cache_put(IgnoreCache *c, const char *dir, IgnoreList *l);
void ignore_cache_forget(IgnoreCache *c, const char *dir);
/* An IgnoreLoadDir over the cache: pass the cache as userdata. */
int ignore_cache_load(void *userdata, const char *dir, const IgnoreList **ret, char **ret_error);

/*
 * git's default core.excludesFile from the given environment values (NULL:
 * unset): $XDG_CONFIG_HOME/git/ignore, or $HOME/.config/git/ignore; *ret =
 * NULL when neither applies. The caller read them (host-git.h asks the
 * host's git itself).
 */
int ignore_default_excludes_file(const char *xdg_config_home, const char *home, char **ret);
