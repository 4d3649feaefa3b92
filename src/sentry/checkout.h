/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

/*
 * A Domain's per-checkout state (spec §4.3, §4.6 "Domain state belongs to its
 * checkout"): the view's Domain state, the git dir view's and the Ignored
 * Workspace State belong to one repository, not to a path. Each checkout the
 * Domain's workspace path has held gets a directory of its own,
 *
 *   <Domain Root>/checkouts/<key>/{view,view-git,ignored,checkout.json}
 *
 * keyed by the checkout's identity: the inode number and birth time
 * (statx STATX_BTIME, to the nanosecond) of its git dir, and for a linked
 * worktree also of its common dir. Inode numbers alone come back after a
 * delete and a re-clone; an inode number with its birth time names one
 * directory's creation. The device number is not part of the key where the
 * birth time is known: it is given out at mount time (btrfs subvolumes,
 * removable and network disks) and may differ after a reboot. Where the file
 * system reports no birth time, the key is device and inode number
 * (a re-clone that gets the same inode is then not told apart; the record
 * says so). Nothing the sandbox wrote takes part: the coordinator judges the
 * host's git dirs by fd (git-sentry.h) before it computes the key.
 *
 * The State Anchor (state/), the Domain Store, the Domain record and lock
 * stay per Domain.
 */

#define CHECKOUTS_DIR "checkouts"
#define CHECKOUT_RECORD_FILE "checkout.json"
/*
 * The repository's refs when this checkout's count of commits made inside
 * began (git-refs.h's record): written by the coordinator at a Domain's
 * start when there is none, and by lazaretctl changes accept-commits;
 * lazaretctl changes, status and launch report the commits made since that
 * change protected paths (spec §4.6, "Commits made inside").
 */
#define CHECKOUT_REFS_FILE "refs.json"
#define CHECKOUT_KEY_HEX_LEN 16
/* The key of a workspace that is not a git repository (no git dir to identify). */
#define CHECKOUT_KEY_NONE "none"
/* Set-aside state of a Lazaret without checkout identities: "legacy-" and 16 hex digits. */
#define CHECKOUT_LEGACY_PREFIX "legacy-"
/* Long enough for every valid key. */
#define CHECKOUT_KEY_MAX 32

typedef struct CheckoutDirId {
        uint64_t ino;
        uint32_t dev_major, dev_minor;
        bool has_btime;
        int64_t btime_sec;
        uint32_t btime_nsec;
} CheckoutDirId;

typedef struct CheckoutId {
        bool repository;                /* false: no git dir at all (key "none") */
        bool linked;                    /* a linked worktree: common_dir is set */
        CheckoutDirId git_dir;          /* .git, a submodule's git dir, or <common>/worktrees/<name> */
        CheckoutDirId common_dir;       /* a linked worktree's common dir */
} CheckoutId;

/* The identity of the directory fd refers to (an O_PATH fd will do), by statx. */
int checkout_dir_id_of_fd(int fd, CheckoutDirId *ret);

/*
 * The checkout's identity from its git dir and (a linked worktree) its common
 * dir, both opened by the caller as judged (git_dir_fd -EBADF: not a git
 * repository; common_dir_fd -EBADF: none).
 */
int checkout_id_of_fds(int git_dir_fd, int common_dir_fd, CheckoutId *ret);

typedef struct GitLinked GitLinked;

/*
 * The identity of the checkout at workspace_fd as the Git Sentry resolved it
 * (git_sentry_plan()'s *ret_linked: linked->root NULL for a .git directory,
 * which is then opened beneath workspace_fd without following a link). A
 * workspace without .git is no repository.
 */
int checkout_id_of_workspace(int workspace_fd, const GitLinked *linked, CheckoutId *ret);

/*
 * The git dir and (a linked worktree) the common dir of the checkout at
 * workspace_fd as the Git Sentry resolved it, O_PATH, opened as
 * checkout_id_of_workspace() opens them: *ret_common_dir_fd -EBADF when
 * there is none. -ENOENT: no .git (no repository).
 */
int checkout_git_dirs_of_workspace(int workspace_fd, const GitLinked *linked, int *ret_git_dir_fd,
                                   int *ret_common_dir_fd);

typedef struct GitRefs GitRefs;

/* The refs of the checkout at workspace_fd now (git_refs_read() of its git dirs); -ENOENT: no repository. */
int checkout_refs_now(int workspace_fd, const GitLinked *linked, GitRefs *ret);

/* CHECKOUT_REFS_FILE in the checkout directory dir_fd: read (-ENOENT: none), or written (atomically, 0600). */
int checkout_refs_record_read(int dir_fd, GitRefs *ret, int64_t *ret_taken);
int checkout_refs_record_write(int dir_fd, const GitRefs *refs, int64_t taken);

/* Pure: whether two identities name the same checkout (the key's rule). */
bool checkout_id_equal(const CheckoutId *a, const CheckoutId *b);

/* Pure: the key (16 lowercase hex digits, or "none"), written with its NUL into ret. */
void checkout_id_key(const CheckoutId *id, char ret[static CHECKOUT_KEY_MAX]);

/* Pure: whether s names a checkout directory Lazaret makes (a key, "none" or a legacy set-aside). */
bool checkout_key_is_valid(const char *s);

/* Pure: one line that says what the identity is, for lazaretctl state list ("git dir inode 12, born ..."). */
int checkout_id_describe(const CheckoutId *id, char **ret);

/*
 * Pure: <domain_dir>/checkouts/<key>, and with sub (VIEW_STATE_DIR,
 * VIEW_GIT_STATE_DIR, VIEW_IGNORED_DIR, CHECKOUT_RECORD_FILE) the path below
 * it. -EINVAL for a key checkout_key_is_valid() refuses or a sub that is not
 * one plain name. Every place that needs these paths (the coordinator's
 * bundle and manager, lazaretctl changes and state) takes them from here.
 */
int checkout_state_path(const char *domain_dir, const char *key, const char *sub, char **ret);

/*
 * State of a Lazaret without checkout identities: view/, view-git/ and
 * ignored/ directly in the Domain Root. It belongs to the checkout id when it
 * was begun after that checkout was made: every one of those directories was
 * born after the git dir (and common dir), so the checkout already lay at this
 * path when the state began, and the Domain's path never held another since.
 * Pure; false where a birth time is missing (then it cannot be told).
 */
bool checkout_legacy_belongs(const CheckoutId *id, const CheckoutDirId *legacy, size_t n_legacy);

/* The legacy directories that exist in the Domain Root (domain_fd), at most 3, with their identities. */
int checkout_legacy_scan(int domain_fd, CheckoutDirId ret[static 3], const char *ret_names[static 3], size_t *ret_n);

/*
 * Where the current checkout's state lies (the directory that holds view/,
 * view-git/ and ignored/): checkouts/<key> when it exists (1), else the
 * Domain Root itself when it holds legacy state that belongs to this
 * checkout and that its next launch adopts (2), else -ENOENT (none yet: the
 * next launch begins it). For lazaretctl, which never creates or moves state.
 */
int checkout_state_find(const char *domain_dir, const CheckoutId *id, char **ret_dir);

/*
 * The record in each checkout directory: {"version": 1, "key", "identity"
 * (checkout_id_to_json(), null for legacy state), "workspace" (the path it
 * was last used at), "first_used", "last_used" (seconds since the epoch),
 * "note" (optional)}.
 */
typedef struct CheckoutRecord {
        char *key;
        bool has_id;
        CheckoutId id;
        char *workspace;
        int64_t first_used, last_used;
        char *note;
} CheckoutRecord;

void checkout_record_done(CheckoutRecord *r);
int checkout_record_to_string(const CheckoutRecord *r, char **ret);
/* Strict: unknown keys, wrong types and a key that does not match the identity are -EBADMSG. */
int checkout_record_parse(const char *text, size_t len, CheckoutRecord *ret, char **ret_error);

int checkout_id_to_json(const CheckoutId *id, json_object **ret);
int checkout_id_from_json(json_object *o, CheckoutId *ret);
