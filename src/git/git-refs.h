/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/*
 * A repository's refs as git stores them in files, read without git
 * (issue 32: what the sandbox commits is shared): the git dir's HEAD when it
 * is detached, every loose ref below the common dir's refs/ and its
 * packed-refs (a loose ref wins over a packed one of the same name), and
 * each linked worktree's own: its HEAD when detached and its loose refs
 * (refs/bisect/, refs/worktree/), named "worktrees/<name>/HEAD" and
 * "worktrees/<name>/refs/..." as git names them from another worktree. The
 * Domain records them at its start (checkout-state.h) and lazaretctl
 * changes compares them with the refs now, to find the commits made since.
 *
 * Read through fds, nothing followed: a symbolic link in refs/ (an old
 * git's symbolic ref) and a symbolic ref ("ref: ...", a HEAD on a branch)
 * are skipped; what they point to is recorded under its own name. A ref
 * whose name or value is not one git writes is skipped. Bounded: at most
 * GIT_REFS_MAX refs and GIT_REFS_NAMES_MAX bytes of names (then cut is
 * set, and the rest is not read),
 * packed-refs up to GIT_PACKED_REFS_MAX bytes, GIT_REFS_DEPTH_MAX
 * directories deep. A repository whose refs are in a reftable
 * (extensions.refStorage) is -EOPNOTSUPP. Pure.
 */
#define GIT_REFS_MAX 4096U
/* ... and names of at most this many bytes in all, so that the record stays far below JSON_DOC_MAX_BYTES. */
#define GIT_REFS_NAMES_MAX (512U * 1024U)
#define GIT_PACKED_REFS_MAX (16U * 1024U * 1024U)
#define GIT_REFS_DEPTH_MAX 16U
#define GIT_REF_NAME_MAX 1024U
/* An object name in hex: SHA-1 (40) or SHA-256 (64). */
#define GIT_OID_HEX_MAX 64U

typedef struct GitRef {
        char *name;                     /* "HEAD" or "refs/..." */
        char oid[GIT_OID_HEX_MAX + 1];  /* lowercase hex */
} GitRef;

typedef struct GitRefs {
        GitRef *refs;                   /* sorted by name, each name once */
        size_t n;
        bool cut;                       /* past GIT_REFS_MAX or GIT_REFS_NAMES_MAX: the rest not read */
        size_t name_bytes;              /* the names' bytes so far */
} GitRefs;

void git_refs_done(GitRefs *r);

/* Whether s is an object name as git writes it: 40 or 64 lowercase hex digits. */
bool git_oid_is_valid(const char *s);

/* Whether s is a ref name this reader keeps: "HEAD" or "refs/" and a name git could have made, or either after "worktrees/<name>/". */
bool git_ref_name_is_valid(const char *s);

/*
 * The refs of a repository: HEAD from git_dir_fd, the rest from
 * common_dir_fd (the same fd for a repository that is not a linked
 * worktree). O_PATH fds will do.
 */
int git_refs_read(int git_dir_fd, int common_dir_fd, GitRefs *ret);

/*
 * What a failure of git_refs_read() means, for the line a person reads: a
 * reftable is named as such (its refs are not read, so commits made inside
 * are not counted), anything else by strerror().
 */
const char *git_refs_strerror(int r);

/*
 * The refs of packed-refs text (text[len] a NUL; lines are cut in place)
 * added to *r, unsorted, bounded as git_refs_read() bounds them: a line
 * "<oid> refs/..." whose object name and ref name are valid; the header,
 * peeled lines and anything else passed over. git_refs_sort() then.
 */
int git_packed_refs_parse(char *text, size_t len, GitRefs *r);

/* Sorts *r by name and drops a second ref of one name. */
void git_refs_sort(GitRefs *r);

/* The ref of that name, or NULL. */
const GitRef *git_refs_find(const GitRefs *r, const char *name);

/*
 * The record's form: {"version": 1, "taken": SECONDS, "cut": BOOL, "refs":
 * {NAME: OID, ...}}. From JSON: strict (unknown keys, an invalid name or
 * object name, mixed object name lengths, more than GIT_REFS_MAX refs are
 * -EBADMSG).
 */
int git_refs_to_json(const GitRefs *r, int64_t taken, json_object **ret);
int git_refs_from_json(json_object *o, GitRefs *ret, int64_t *ret_taken);
