/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* Longest path Lazaret accepts anywhere (host or sandbox side). */
#define LAZARET_PATH_MAX 4095

bool path_is_absolute(const char *p);

/* True when any '/'-separated segment of p is exactly "..". */
bool path_has_dotdot(const char *p);

/*
 * True when p[0..n) is a relative path in the form git writes: not empty,
 * no leading or trailing '/', no empty, "." or ".." component.
 */
bool path_is_plain_relative(const char *p, size_t n);

/*
 * Normalises an absolute path lexically: collapses repeated slashes, drops "."
 * segments and a trailing slash. Refuses (-EINVAL) relative paths and paths
 * with ".." segments, and (-ENAMETOOLONG) overlong ones. Never touches the
 * file system.
 */
int path_normalize(const char *p, char **ret);

/*
 * Lexically simplifies an absolute path: "." dropped, ".." takes back the
 * segment before it. With guard, a ".." that would step out of a component
 * strictly below guard is -ELOOP (that component is guard's owner's to
 * replace with a symlink). Never touches the file system.
 */
int path_simplify(const char *p, const char *guard, char **ret);

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

/*
 * Makes p absolute against cwd (when relative) and resolves "." and ".."
 * lexically. Touches nothing; compare the result with realpath(3) to learn
 * whether the way p was written went through a symbolic link.
 */
int path_absolute_lexical(const char *p, const char *cwd, char **ret);

/*
 * Walks an absolute, normalised path from "/" one component at a time with
 * O_PATH|O_NOFOLLOW fds (so nothing is ever followed, whoever changes the
 * tree meanwhile), and judges every component, the path itself included:
 *
 *   - a symbolic link is PATH_WALK_SYMLINK;
 *   - with PATH_WALK_TRUSTED: each must be owned by root or by the caller
 *     (PATH_WALK_FOREIGN_OWNER), its POSIX ACL may grant write to nobody but
 *     its owner (PATH_WALK_ACL), and it may not be writable by group or
 *     others (PATH_WALK_WRITABLE) unless it is a sticky directory that is not
 *     the path itself: below a sticky directory only an entry's owner (root or
 *     the caller, as just said) and the directory's owner may rename it.
 *
 * A missing component is PATH_WALK_MISSING, unless PATH_WALK_MKDIR asks to
 * create it (mode 0700). On success *ret_fd (if not NULL) is the O_PATH fd of
 * the path. On failure ret_why says which component failed and why; its at
 * is freed with path_walk_result_done().
 */
typedef enum PathWalkFlags {
        PATH_WALK_TRUSTED = 1 << 0,
        PATH_WALK_MKDIR   = 1 << 1,
} PathWalkFlags;

typedef enum PathWalkFailure {
        PATH_WALK_OK,
        PATH_WALK_SYMLINK,
        PATH_WALK_MISSING,
        PATH_WALK_NOT_DIRECTORY,        /* a component above the last one */
        PATH_WALK_FOREIGN_OWNER,
        PATH_WALK_ACL,
        PATH_WALK_WRITABLE,
        PATH_WALK_ERRNO,                /* the returned error says what */
} PathWalkFailure;

typedef struct PathWalkResult {
        PathWalkFailure failure;
        char *at;                       /* the component judged (a prefix of the path) */
        unsigned uid;                   /* its owner */
        unsigned mode;                  /* its mode (07777 bits) */
        unsigned acl_id;                /* PATH_WALK_ACL: the ID the ACL lets write (-1: the owning group) */
} PathWalkResult;

int path_walk(const char *path, PathWalkFlags flags, int *ret_fd, PathWalkResult *ret_why);
void path_walk_result_done(PathWalkResult *r);

/*
 * What path_walk() found for path, as one line for the user in *ret_error
 * (see errorf()): "LABEL: what is wrong" (just the latter when label is
 * NULL), naming the component that failed. An ownership or permission
 * failure says "who could swap WHAT; RULE", rule being what the caller
 * requires. Returns r.
 */
int path_walk_error(const char *label, const char *path, const PathWalkResult *w, int r, const char *what,
                    const char *rule, char **ret_error);

/*
 * As path_walk_error(), for a path that the sandbox can write (the
 * workspace and what lies below it), where a foreign owner or write for
 * group or others is what a sandbox of an older Lazaret could leave (issue
 * 15): the line names that cause and the repair, `lazaretctl unshare --
 * chown -R 0:0 AT` (the owner is then one of the caller's subordinate IDs)
 * or `chmod go-w AT`. what names what the change exposes. Other failures
 * read as path_walk_error()'s. Returns r.
 */
int path_repair_error(const char *label, const char *path, const PathWalkResult *w, int r, const char *what,
                      char **ret_error);
