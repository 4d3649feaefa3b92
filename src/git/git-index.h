/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A reader of git's index file ($GIT_DIR/index, gitformat-index(5)),
 * versions 2, 3 and 4, for one question: which paths are tracked. The
 * sandbox writes the index, so the reader treats it as hostile: every
 * length is checked before it is used, totals are bounded, the trailing
 * checksum is verified (an all-zero one, which git writes with
 * index.skipHash, is accepted and reported), entries must be in git's order,
 * and anything it cannot read completely is refused with -EBADMSG (malformed,
 * with a message), -EFBIG / -E2BIG (a bound below), or -EOPNOTSUPP (a split
 * index, an unknown required extension: the tracked set would be incomplete).
 * Optional extensions (TREE, REUC, UNTR, ...) are skipped.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"

/* An index file larger than this is refused (-EFBIG). */
#define GIT_INDEX_SIZE_MAX (128U * 1024U * 1024U)
/* More entries than this are refused (-E2BIG). */
#define GIT_INDEX_ENTRIES_MAX (2U * 1024U * 1024U)
/* A path longer than this (bytes) is refused (-EBADMSG). */
#define GIT_INDEX_PATH_MAX 4096U
/* All paths together, after version 4 expands them, at most this many bytes (-E2BIG). */
#define GIT_INDEX_NAMES_MAX (256U * 1024U * 1024U)

typedef enum GitHashAlgo {
        GIT_HASH_SHA1,          /* 20-byte object names, the default */
        GIT_HASH_SHA256,        /* extensions.objectFormat = sha256 */
} GitHashAlgo;

typedef struct GitIndex {
        unsigned version;
        bool checksum_verified; /* false: the file's checksum is all zero (index.skipHash) */
        /*
         * Every tracked path once (whatever its stages), in git's order
         * (strcmp). A sparse-index directory entry keeps its trailing '/'.
         */
        char **paths;
        size_t n_paths;
        /* The entries of mode 160000 (submodules, nested repositories), in order. */
        char **gitlinks;
        size_t n_gitlinks;
        size_t n_sparse_dirs;
        /*
         * For each path (same order): a SHA-256 of its entries' modes,
         * stages and object names, so that two indexes can be compared by
         * what they would check out (issue 32 item 3); stat data and flags
         * are not in it.
         */
        uint8_t (*entry_digests)[32];
        size_t entries_end;     /* the file's offset where its extensions begin */
        /* Its TREE and UNTR extensions (git writes one of each at most), each kind's bytes' SHA-256, in order. */
        unsigned n_trees, n_untracked;
        uint8_t trees_digest[32], untracked_digest[32];
        /* Its FSMN extensions (the fsmonitor's token and dirty entries), the first one's offset. */
        unsigned n_fsmonitor;
        size_t fsmonitor_off;
        /*
         * Every entry in order: a SHA-256 of each one's path, mode, flags
         * (stage, assume-unchanged), extended flags (skip-worktree,
         * intent-to-add) and object name, its stat data left out. Two
         * indexes with the same one have the same entries at the same
         * positions (what the fsmonitor extension's bitmap counts).
         */
        uint32_t n_entries;
        uint8_t entries_digest[32];
        char *names;            /* the storage the pointers point into */
} GitIndex;

/* Parses size bytes at data. algo: the repository's object format. */
int git_index_parse(const void *data, size_t size, GitHashAlgo algo, GitIndex **ret, char **ret_error);
/* Reads name beneath dirfd (O_NOFOLLOW: a symlink is refused with -ELOOP) and parses it. */
int git_index_load_at(int dirfd, const char *name, GitHashAlgo algo, GitIndex **ret, char **ret_error);

GitIndex *git_index_free(GitIndex *i);
static inline void git_index_freep(GitIndex **i) {
        if (*i)
                git_index_free(*i);
}
#define _cleanup_git_index_ _cleanup_(git_index_freep)

/* Whether path (relative, no trailing '/') is tracked: an entry, or below a sparse directory entry. */
bool git_index_is_tracked(const GitIndex *i, const char *path);
/* Whether anything is tracked strictly below directory dir ("": the whole tree). */
bool git_index_has_tracked_below(const GitIndex *i, const char *dir);
/* Whether path is a gitlink entry. */
bool git_index_is_gitlink(const GitIndex *i, const char *path);

/*
 * The first path, in git's order, for which want() is true and whose
 * entries differ between before and after: added, removed, or another
 * mode, object or set of stages. Returns 1 with the path in *ret_path, 0
 * when there is none, -ENOMEM. A sparse directory entry ("dir/") is asked
 * about with its trailing '/': want() says whether anything it protects
 * lies below.
 */
int git_index_first_change(const GitIndex *before, const GitIndex *after, bool (*want)(const char *path, void *userdata),
                           void *userdata, char **ret_path);

/* What git_index_without_caches() keeps. */
#define GIT_INDEX_KEEP_TREE 1u
#define GIT_INDEX_KEEP_UNTRACKED 2u

/*
 * Which of after's caches are before's: when both have the same entries
 * (paths, modes, stages, object names; git_index_first_change() finds no
 * path), GIT_INDEX_KEEP_TREE when each has one TREE extension, byte for
 * byte the same, and GIT_INDEX_KEEP_UNTRACKED likewise for UNTR. What a
 * trusted writer put in before then says of after what it said of before.
 * 0 when either is NULL.
 */
unsigned git_index_same_caches(const GitIndex *before, const GitIndex *after);

/*
 * The index file at data (size bytes, which git_index_parse() read as i
 * with algo) without the extensions that cache what its entries or the
 * working tree say elsewhere: TREE (cached tree objects, which git's
 * commit takes as they are when they look valid; kept with
 * GIT_INDEX_KEEP_TREE in keep), REUC (resolve-undo stages, which
 * `checkout -m` writes back) and UNTR (the untracked cache, which git's
 * status takes as it is for directories that look unchanged, and whose
 * identity names the writer's worktree path: a foreign one makes git warn
 * at every status; kept with GIT_INDEX_KEEP_UNTRACKED). A writer that is
 * not trusted could make them disagree with what they cache (issue 32
 * item 3); git rebuilds them. The checksum is computed again, or left all
 * zero where it was (index.skipHash). *ret is malloc()ed, or NULL
 * (*ret_size = size) when no extension is left out: data is what would
 * land. -EINVAL when i does not fit data, -ENOMEM.
 */
int git_index_without_caches(const void *data, size_t size, const GitIndex *i, GitHashAlgo algo, unsigned keep,
                             char **ret, size_t *ret_size);

/*
 * What git_index_without_caches_kept() left out of an index, kept aside so
 * that the writer alone can be given its file back whole (the workspace
 * view: the sandbox's own untracked cache, spec 6.4): the pieces, each with
 * the offset in the landed file (the file without them) before which it
 * stood, and both files' sizes and checksums. What git_index_kept_read()
 * serves is byte for byte the file the writer wrote, its checksum
 * included, as long as the landed file is what it reads from.
 */
typedef struct GitIndexKept {
        size_t size;                    /* the written file's size: what is served */
        size_t landed_size;             /* the landed file's */
        size_t hash_len;
        uint8_t trailer[32];            /* the written file's checksum (all zero with index.skipHash) */
        uint8_t landed_trailer[32];     /* the landed file's */
        size_t n_pieces;
        size_t *at;                     /* piece k goes before the landed file's byte at[k] (ascending, < landed_size - hash_len + 1) */
        size_t *len;                    /* piece k's length */
        uint8_t *bytes;                 /* the pieces, one after the other */
        size_t n_bytes;                 /* their total */
} GitIndexKept;

GitIndexKept *git_index_kept_free(GitIndexKept *k);
static inline void git_index_kept_freep(GitIndexKept **k) {
        if (*k)
                git_index_kept_free(*k);
}
#define _cleanup_git_index_kept_ _cleanup_(git_index_kept_freep)

/*
 * git_index_without_caches(), and, when something is left out and
 * ret_kept is not NULL, what was left out in *ret_kept (NULL otherwise).
 */
int git_index_without_caches_kept(const void *data, size_t size, const GitIndex *i, GitHashAlgo algo, unsigned keep,
                                  char **ret, size_t *ret_size, GitIndexKept **ret_kept);

/* Reads up to n bytes of the landed file at off into buf: the count (short only at its end), or -errno. */
typedef ssize_t (*GitIndexReadFn)(void *userdata, void *buf, size_t n, uint64_t off);

/*
 * Up to n bytes at off of the written file, the kept pieces spliced into
 * the landed file that read_landed() reads: the count (0 at or past k->size;
 * short only there), or -errno of read_landed(), or -EIO when the landed
 * file ends early (it is not the one the pieces were kept for).
 */
ssize_t git_index_kept_read(const GitIndexKept *k, uint64_t off, void *buf, size_t n, GitIndexReadFn read_landed,
                            void *userdata);

/*
 * The first extension with signature sig among the whole extensions at
 * data (n bytes, each its 8-byte header and payload, as an index holds
 * them between its entries and its checksum): 1 with its offset and
 * length (header included), 0 when there is none, -EBADMSG when one runs
 * past n.
 */
int git_index_extension_find(const void *data, size_t n, const char sig[static 4], size_t *ret_off, size_t *ret_len);

/*
 * What serves the index file at data (size bytes, which git_index_parse()
 * read as i with algo) with the whole extensions exts (n bytes) added
 * before its checksum, the checksum computed again (all zero where it
 * was: index.skipHash): a GitIndexKept whose landed file is data.
 * -EINVAL when i does not fit data, -ENOMEM.
 */
int git_index_kept_append(const void *data, size_t size, const GitIndex *i, GitHashAlgo algo, const void *exts, size_t n,
                          GitIndexKept **ret);
