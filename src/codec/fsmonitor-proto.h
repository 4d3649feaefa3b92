/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The workspace view's change journal and git's fsmonitor hook (spec 4.6,
 * "git asks the view"). The view appends a record for every change it makes or
 * sees in the workspace to a file in the control directory, which the
 * sandbox reads at SANDBOX_CONTROL_MOUNT "/" FSMON_JOURNAL_FILE (read-only:
 * the sandbox can only read it, the host never looks at it). The hook
 * that git inside runs (core.fsmonitor, protocol v2: lazaret-init under the
 * name FSMON_HOOK_FILE) answers git's token from it.
 *
 * The file: a header of FSMON_HEADER_SIZE bytes, "lazaret-view-journal 1 "
 * and the instance (16 lowercase hex digits, random per start of the view
 * and per reset) then newlines; then records, each a type byte, a
 * workspace-relative path ("" is the workspace root; no NUL) and a NUL:
 *   'f'  the path changed (a file, or a directory's own metadata)
 *   'd'  the directory at the path came, went or moved: it and everything below
 *   'D'  the directory's host watch is gone: it and everything below count as
 *        changed from now until a 'W' for the same path
 *   'W'  the directory is watched (again): it and everything below changed
 * Records are appended after the change they name is made, before the
 * request that made it is answered. When the file would outgrow
 * FSMON_JOURNAL_MAX the view empties it and writes a new header (a new
 * instance): every token of the old one then gets "everything changed".
 *
 * A token: "lazaret:<instance hex>:<offset>:<unwatched-from>", the offset
 * the next answer reads from, and the offset of the oldest 'D' record whose
 * directory was not watched again by then (the offset itself when there is
 * none), so that an answer still names the directories dropped before it.
 *
 * No dependency beyond libc: the static init links this file alone.
 */

#define FSMON_JOURNAL_FILE "view-journal"
#define FSMON_HOOK_FILE "fsmonitor"
#define FSMON_CONFIG_FILE "fsmonitor.gitconfig"
#define FSMON_HEADER_SIZE 64u
#define FSMON_MAGIC "lazaret-view-journal 1 "
/* The journal's bound (the control directory is on the user's runtime tmpfs). */
#define FSMON_JOURNAL_MAX (8u * 1024u * 1024u)
/* Directories the hook keeps as unwatched: more answer "everything changed". */
#define FSMON_UNWATCHED_MAX 4096u
#define FSMON_TOKEN_MAX 96u

/* The header for instance, FSMON_HEADER_SIZE bytes into buf (no NUL). */
void fsmon_header_format(uint64_t instance, char buf[static FSMON_HEADER_SIZE]);
/* The instance of a header; -EBADMSG when buf is not one. */
int fsmon_header_parse(const char *buf, size_t len, uint64_t *ret_instance);

/* A token for (instance, offset, unwatched_from) into buf (at least FSMON_TOKEN_MAX bytes). */
void fsmon_token_format(uint64_t instance, uint64_t offset, uint64_t unwatched_from, char *buf, size_t size);
/* -EINVAL when token is not one of ours (git's first, empty token included). */
int fsmon_token_parse(const char *token, uint64_t *ret_instance, uint64_t *ret_offset, uint64_t *ret_unwatched_from);

/*
 * One answer. data: the journal's bytes from file offset base (>=
 * FSMON_HEADER_SIZE) to what was read; a record not complete in it (no NUL
 * yet) ends the scan. Every record from offset `from` on, and every
 * directory unwatched at the end, is passed to emit() as a path relative
 * to the worktree at prefix ("" for the workspace root, else
 * "dir/sub/", workspace-relative with a trailing '/'), with a trailing '/'
 * for a directory. A path that covers the worktree itself makes the answer
 * trivial ("everything changed"), and emit() is called no more.
 * base must be <= from; records before from only count for the unwatched set.
 */
typedef struct FsmonScan {
        bool trivial;
        uint64_t end;                   /* the offset after the last whole record */
        uint64_t unwatched_from;        /* for the next token */
        size_t n_unwatched;
} FsmonScan;

typedef void (*fsmon_emit_t)(const char *path, size_t len, bool dir, void *userdata);

int fsmon_scan(const char *data, size_t size, uint64_t base, uint64_t from, const char *prefix, fsmon_emit_t emit,
               void *userdata, FsmonScan *ret);
