/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "mount-plan.h"

/*
 * The Git Sentry (SR-4): the mounts that keep the sandbox from planting code
 * that git on the host would run. Added to the mount plan (part
 * MOUNT_PART_GIT_SENTRY, nesting in the workspace and in its own earlier
 * mounts) after the read-write workspace bind, in this order:
 *
 *   /workspace/.git          rw bind of the host's .git   (a mount point: it
 *                            cannot be renamed away and replaced by a copy)
 *   /workspace/.git/config   ro bind of the host's file   (EROFS, EBUSY; host
 *                            edits stay visible: runsc revalidates by path)
 *   /workspace/.git/hooks    rw bind of <domain_dir>/git-sentry/hooks
 *   for every core.hooksPath inside the workspace (repository or global git
 *   configuration): a self-bind of each of its ancestors below the workspace
 *   root (pins them), then a bind of <domain_dir>/git-sentry/hooks-path-HASH
 *
 * Refused (-EPERM with a one-line message): a workspace without .git (run git
 * init on the host first: an unprotected git init inside would create config
 * and hooks that the host runs), a .git that is a file (linked worktree,
 * submodule: not supported yet) or a symlink, a .git/config or .git/hooks
 * that is not a plain file or directory, an include of a file inside the
 * workspace in .git/config, a core.hooksPath inside the workspace that goes
 * through a symlink or ".." there or names the workspace itself. "Inside"
 * is judged on the host by fd: the host's own symlinks outside the
 * workspace are followed (dangling ones too: the sandbox can create their
 * targets) until the directory reached is the workspace, or a linked
 * workspace's served git dir, by device and inode; a relative
 * core.hooksPath is taken from the worktree's top, as git does.
 *
 * Nothing is executed: git is never run against the untrusted repository
 * configuration; it is read by a small strict parser. Paths inside the
 * workspace are opened by fd with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
 * below the workspace fd that the workspace's own check opened; each mount
 * source's identity in the plan is that of the fd that was judged.
 * Missing .git/hooks and missing core.hooksPath directories inside the
 * workspace are created (empty, 0755) so that they can be masked.
 */

#define GIT_SENTRY_DIR "git-sentry"
#define GIT_CONFIG_MAX (1024 * 1024)

/*
 * A workspace whose .git is a file (spec §4.6, "Linked workspaces"): a
 * linked worktree ("gitdir: <main>/.git/worktrees/<name>", whose
 * commondir leads to <main>/.git) or a submodule's working tree
 * ("gitdir: <super>/.git/modules/<name>"). The git dir and the common dir
 * are resolved on the host by fd from "/", following no symbolic link, and
 * must lie outside the workspace (and it outside them). The workspace view
 * serves root (the common dir, or the git dir when there is none) a second
 * time, as a git dir, at its host path inside the sandbox.
 */
typedef struct GitLinked {
        char *git_dir;                  /* the real git dir, absolute, simplified */
        char *root;                     /* what the git dir view serves: the common dir, else git_dir */
        char *worktree;                 /* the name below <root>/worktrees/ of a linked worktree, else NULL */
        bool relative;                  /* the .git file names git_dir relative to the workspace */
        int root_fd;                    /* root, O_PATH | O_DIRECTORY, as judged */
        char **protect;                 /* root-relative paths the git dir view protects */
} GitLinked;

void git_linked_done(GitLinked *l);

/* The bounds of a .git file, a commondir or a worktree's gitdir file. */
#define GIT_LINK_FILE_MAX 4096

/*
 * A strict reader of git's one-line files: prefix ("gitdir: " for a .git
 * file, "" for commondir and gitdir), a path, at most one "\n" or "\r\n"
 * after it and nothing else. -EBADMSG for anything else: an empty path, a
 * control byte or NUL, a second line, more than GIT_LINK_FILE_MAX bytes.
 */
int git_link_file_parse(const char *text, size_t len, const char *prefix, char **ret_path);

typedef struct GitSentryParams {
        const char *workspace;          /* canonical host path */
        int workspace_fd;               /* the workspace, as its check opened it (O_PATH will do) */
        const char *sandbox_workspace;  /* where it is mounted inside, e.g. "/workspace" */
        const char *domain_dir;         /* host; the masks' storage goes below it */
        const char *home;               /* for "~/" in paths; may be NULL */
        const char *xdg_config_home;    /* the host user's $XDG_CONFIG_HOME; may be NULL */
        /* Trusted git config files (missing ones are skipped); NULL: the host's
         * own, /etc/gitconfig, ~/.gitconfig and $XDG_CONFIG_HOME/git/config. */
        const char *const *global_configs;
        bool view;                      /* the workspace view serves it: no mounts, only checks and ret_protect */
        char ***ret_protect;            /* view: the workspace-relative core.hooksPath directories are appended */
        /*
         * view: the workspace paths the hooks git would run name
         * (host_hooks_scan_paths(), issue 32 item 2) are appended: the
         * hooks of the git dir's hooks/ (a linked workspace's common
         * dir's), and of every core.hooksPath the configuration names,
         * inside the workspace, in the served git dir or outside both,
         * each directory opened as it was judged. Read, never run.
         */
        char ***ret_hook_named;
        GitLinked *ret_linked;          /* view: a linked workspace's dirs (root NULL when .git is a directory) */
} GitSentryParams;

/*
 * The first refusals above, alone: a workspace (as an fd) without a .git
 * directory or .git file (judged in full by git_sentry_plan()). lazaretctl asks before it creates or starts anything; the
 * coordinator's git_sentry_plan() asks again.
 */
int git_sentry_check_workspace(int workspace_fd, const char *workspace, char **ret_error);

/*
 * A linked workspace's git dir and common dir alone, resolved and judged as
 * git_sentry_plan() does (for lazaretctl state, which needs the checkout's
 * identity, checkout.h, and nothing else of the Sentry); *ret's root is
 * NULL when .git is no file.
 */
int git_sentry_resolve_linked(const char *workspace, int workspace_fd, GitLinked *ret, char **ret_error);

/* Adds the mounts to plan; on failure plan is as it was. */
int git_sentry_plan(const GitSentryParams *p, MountPlan *plan, char **ret_error);

/*
 * A strict reader of git's configuration syntax. Collects the values of
 * core.hooksPath and of include.path / includeIf.*.path in the order
 * given. Malformed text is -EBADMSG with a message naming the line.
 */
typedef struct GitConfigPaths {
        char **hooks_paths;
        char **include_paths;
} GitConfigPaths;

int git_config_parse_paths(const char *text, GitConfigPaths *ret, char **ret_error);
void git_config_paths_done(GitConfigPaths *p);

/*
 * Where a git path value (absolute, "~/..." or relative to base) lies
 * relative to the workspace, lexically: 1 and *ret_rel set (relative to the
 * workspace; "" for the workspace itself) when inside, 0 when outside. On
 * both, *ret_abs (if not NULL) is the simplified absolute path, which is what
 * a check for host symlinks leading back into the workspace must look at.
 * -ELOOP when a ".." follows a component inside the workspace (the sandbox
 * could make that component a symlink), -EINVAL for a "~user" path or one
 * that is empty.
 */
int git_path_in_workspace(const char *value, const char *base, const char *home, const char *workspace,
                          char **ret_abs, char **ret_rel);
