/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anchor.h"
#include "bundle.h"
#include "checkout-state.h"
#include "checkout.h"
#include "cleanup.h"
#include "escalation-proto.h"
#include "fs-util.h"
#include "fsmonitor-proto.h"
#include "view-ignored.h"
#include "git-sentry.h"
#include "host-git.h"
#include "host-hooks.h"
#include "json-util.h"
#include "mount-plan.h"
#include "net-policy.h"
#include "oci-spec.h"
#include "path-util.h"
#include "strv.h"
#include "test-hooks.h"
#include "util.h"
#include "view-git-kept.h"
#include "view-policy.h"

/* One of Lazaret's own files or directories, just written: opened without following anything. */
static int add_own(MountPlan *plan, MountPart part, const char *dest, const char *source, bool read_only,
                   unsigned nests_in, char **ret_error) {
        _cleanup_close_ int fd = open(source, O_PATH | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0)
                return errorf(ret_error, -errno, "cannot open %s: %m", source);
        return mount_plan_add_bind_fd(plan, part, dest, source, fd, read_only, nests_in, ret_error);
}

/*
 * /etc/resolv.conf (the helper's DNS forwarder), /etc/hosts and /etc/hostname:
 * Lazaret's own read-only files, mounted over whatever the image or a persistent
 * /etc holds, so that none of them is ever persisted (seed 001, state-anchor.h).
 */
static int add_etc_files(MountPlan *plan, const char *control_dir, const char *resolv, const char *hostname,
                         char **ret_error) {
        _cleanup_free_ char *hosts = path_join(control_dir, "hosts"), *hostname_file = path_join(control_dir, "hostname"),
                            *hosts_text = NULL, *hostname_text = NULL;
        unsigned nests = MOUNT_PART_BIT(MOUNT_PART_VOLUME) | MOUNT_PART_BIT(MOUNT_PART_STATE_ANCHOR);
        int r;

        if (!hosts || !hostname_file ||
            asprintf(&hosts_text, "# Written by Lazaret.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
                     "127.0.1.1\t%s\n", hostname) < 0 ||
            asprintf(&hostname_text, "%s\n", hostname) < 0)
                return -ENOMEM;
        r = write_file(hosts, hosts_text, 0644);
        if (r >= 0)
                r = write_file(hostname_file, hostname_text, 0644);
        if (r < 0)
                return errorf(ret_error, r, "cannot write the sandbox's /etc files in %s: %s", control_dir, strerror(-r));
        r = add_own(plan, MOUNT_PART_RESOLVER, "/etc/resolv.conf", resolv, true, nests, ret_error);
        if (r >= 0)
                r = add_own(plan, MOUNT_PART_RESOLVER, "/etc/hosts", hosts, true, nests, ret_error);
        if (r >= 0)
                r = add_own(plan, MOUNT_PART_RESOLVER, "/etc/hostname", hostname_file, true, nests, ret_error);
        return r;
}

/* A directory of the Escalation Mailbox, which the supervisor makes, at /run/lazaret/mailbox/NAME. */
static int add_mailbox_dir(MountPlan *plan, const char *name, bool read_only, const char *options, char **ret_error) {
        _cleanup_free_ char *dest = path_join(ESC_MAILBOX_SANDBOX, name);

        if (!dest)
                return -ENOMEM;
        return mount_plan_add(plan, &(MountEntry) {
                                      .part = MOUNT_PART_MAILBOX,
                                      .kind = MOUNT_SUPERVISOR,
                                      .destination = dest,
                                      .source = (char *) name,
                                      .fstype = (char *) ESC_MAILBOX_FSTYPE,
                                      .data = (char *) options,
                                      .read_only = read_only,
                                      .nests_in = MOUNT_PART_BIT(MOUNT_PART_CONTROL),
                              }, ret_error);
}

/* control/bin/lazaret-escalate and the empty mount points control/mailbox/{requests,results,trust}. */
static int install_escalation(const char *control_dir, char **ret_error) {
        _cleanup_free_ char *bin = path_join(control_dir, "bin"), *dst = path_join(control_dir, "bin/lazaret-escalate"),
                            *src = path_join(LIBEXECDIR, "lazaret-escalate"), *mb = path_join(control_dir, "mailbox"),
                            *req = path_join(control_dir, "mailbox/" ESC_REQUESTS_DIR),
                            *res = path_join(control_dir, "mailbox/" ESC_RESULTS_DIR),
                            *trust = path_join(control_dir, "mailbox/" ESC_TRUST_DIR);
        int r;

        if (!bin || !dst || !src || !mb || !req || !res || !trust)
                return -ENOMEM;
        r = mkdir_mode(bin, 0755);
        if (r >= 0)
                r = copy_file(TEST_HOOK_PATH("LAZARET_ESCALATE", src), dst, 0755);
        if (r < 0)
                return errorf(ret_error, r, "cannot install %s into the sandbox: %s", src, strerror(-r));
        r = mkdir_mode(mb, 0755);
        if (r >= 0)
                r = mkdir_mode(req, 0755);
        if (r >= 0)
                r = mkdir_mode(res, 0755);
        if (r >= 0)
                r = mkdir_mode(trust, 0755);
        if (r < 0)
                return errorf(ret_error, r, "cannot create the mailbox's mount points in %s: %s", control_dir, strerror(-r));
        return 0;
}

/*
 * The host user's core.excludesFile (as host git finds it, run in "/"
 * with no repository, once before the event loop: bundle_find_host_excludes()),
 * copied into the control directory: the view reads
 * it (sandbox-written files cannot change it), and git inside finds it
 * through the control directory's gitconfig, so that both agree on what is
 * ignored. Empty when the host has none. *ret_path: the copy.
 */
static char *host_excludes_source, *host_excludes_error;
static int host_excludes_errno;

void bundle_find_host_excludes(void) {
        host_excludes_errno = host_git_excludes_source(&host_excludes_source, &host_excludes_error);
}

static int copy_host_excludes(const char *control_dir, char **ret_path, char **ret_error) {
        _cleanup_free_ char *text = NULL, *path = path_join(control_dir, VIEW_EXCLUDES_FILE);
        size_t len = 0;
        int r;

        if (!path)
                return -ENOMEM;
        if (host_excludes_errno < 0)
                return errorf(ret_error, host_excludes_errno, "%s", strempty(host_excludes_error));
        r = view_excludes_text(host_excludes_source, &text, &len, ret_error);
        if (r < 0)
                return r;
        r = write_file_bytes(path, text, len, 0644);
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s: %s", path, strerror(-r));
        *ret_path = TAKE_PTR(path);
        return 0;
}

/* Ignored Workspace State's arguments for the view (isolate_ignored): its directory, the excludes file, shared_ignored. */
static int add_view_ignored(json_object *args, const Domain *d, const char *key, const char *control_dir,
                            char **ret_error) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_free_ char *state = NULL, *excludes = NULL;
        int r;

        if (!o)
                return -ENOMEM;
        r = checkout_state_path(d->domain_dir, key, VIEW_IGNORED_DIR, &state);
        if (r < 0)
                return r;
        r = copy_host_excludes(control_dir, &excludes, ret_error);
        if (r < 0)
                return r;
        if (!d->profile->isolate_ignored)
                return 0;
        r = mkdir_mode(state, 0700);
        if (r < 0)
                return errorf(ret_error, r, "cannot create %s: %s", state, strerror(-r));
        r = json_add_string(o, "state", state);
        if (r >= 0)
                r = json_add_string(o, "excludes", excludes);
        if (r >= 0)
                r = json_add_strv(o, "shared", (const char *const *) (d->profile->shared_ignored ?: (char *[]) { NULL }));
        if (r >= 0)
                r = json_add(args, "ignored", TAKE_PTR(o));
        return r;
}

/*
 * git's fsmonitor inside (spec §4.6, "git asks the view"), on with the view
 * and the profile's git_fsmonitor: the journal the view writes (its path among the view's
 * arguments; the supervisor makes it), the hook (init under
 * FSMON_HOOK_FILE, a symbolic link that git runs without a shell) and the
 * configuration naming it, which the sessions' git includes for
 * repositories in /workspace (sandbox.c, sandbox-exec.c), with git's
 * untracked cache on: the view keeps the sandbox's for the sandbox alone
 * (index-guard.c), and git's directory scan then reads only the directories
 * the hook names, and without git's preload threads (in gVisor, starting
 * twenty of them cost more than the few lstat() calls the hook leaves).
 * Off, neither the configuration nor the hook exists: the
 * includes find nothing, and git inside scans as it did before, without an
 * untracked cache.
 */
static int add_view_fsmonitor(json_object *args, const Domain *d, const char *control_dir, char **ret_error) {
        static const char config[] =
                "# Written by Lazaret: git inside asks the workspace view what changed (spec 4.6).\n"
                "# Included only for repositories in " SANDBOX_WORKSPACE " (GIT_CONFIG_SYSTEM and\n"
                "# GIT_CONFIG_COUNT of the sessions); the profile's git_fsmonitor turns it off.\n"
                "[core]\n"
                "\tfsmonitor = " SANDBOX_CONTROL_MOUNT "/" FSMON_HOOK_FILE "\n"
                "\tfsmonitorHookVersion = 2\n"
                "# git's untracked cache: the view keeps it for the sandbox, and the host's\n"
                "# index never holds it (spec 6.4, the sandbox's own index caches).\n"
                "\tuntrackedCache = true\n"
                "# No preload threads: with the hook's answer they have next to nothing to\n"
                "# check, and starting them cost a warm status a third of its time (spec 6.4).\n"
                "\tpreloadIndex = false\n";
        _cleanup_free_ char *journal = path_join(control_dir, FSMON_JOURNAL_FILE),
                            *hook = path_join(control_dir, FSMON_HOOK_FILE),
                            *conf = path_join(control_dir, FSMON_CONFIG_FILE);
        int r;

        if (!journal || !hook || !conf)
                return -ENOMEM;
        if ((unlink(hook) < 0 && errno != ENOENT) || (unlink(conf) < 0 && errno != ENOENT))
                return errorf(ret_error, -errno, "cannot remove git's fsmonitor hook from %s: %m", control_dir);
        if (!d->profile->git_fsmonitor)
                return 0;
        if (symlink("init", hook) < 0)
                return errorf(ret_error, -errno, "cannot install git's fsmonitor hook %s: %m", hook);
        r = write_file(conf, config, 0644);
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s: %s", conf, strerror(-r));
        return json_add_string(args, "journal", journal);
}

/*
 * The workspace through the view (spec §4.6.2): one MOUNT_VIEW entry with
 * the identity of the workspace fd that was checked, and the view's
 * arguments: its Domain state directory, the protected paths that the
 * host's git configuration and hooks name and the profile's
 * protected_paths (paths in "protect", names in "protect_names", removed
 * built-in names in "unprotect"), as view_lists() made them; "hook_named",
 * the paths of "protect" the hooks named, for lazaretctl status alone.
 */
static int add_view(MountPlan *plan, const Domain *d, const char *key, int wfd, char *const *protect,
                    char *const *names, char *const *unprotect, char *const *hook_named, const char *control_dir,
                    char **ret_error) {
        _cleanup_json_ json_object *args = json_object_new_object();
        _cleanup_free_ char *state = NULL, *data = NULL;
        struct stat st;
        int r;

        if (!args)
                return -ENOMEM;
        r = checkout_state_path(d->domain_dir, key, VIEW_STATE_DIR, &state);
        if (r < 0)
                return r;
        r = mkdir_mode(state, 0700);
        if (r < 0)
                return errorf(ret_error, r, "cannot create %s: %s", state, strerror(-r));
        r = json_add_string(args, "state", state);
        if (r >= 0)
                r = json_add_strv(args, "protect", (const char *const *) protect);
        if (r >= 0)
                r = json_add_strv(args, "protect_names", (const char *const *) names);
        if (r >= 0)
                r = json_add_strv(args, "unprotect", (const char *const *) unprotect);
        /* Which of "protect" the host's hooks named at this start: the view does not read it; lazaretctl
         * status does, through the MountPlan property, to show what the running view protects. */
        if (r >= 0)
                r = json_add_strv(args, "hook_named", (const char *const *) (hook_named ?: (char *[]) { NULL }));
        if (r >= 0)
                r = add_view_ignored(args, d, key, control_dir, ret_error);
        if (r >= 0)
                r = add_view_fsmonitor(args, d, control_dir, ret_error);
        if (r >= 0)
                r = json_to_string(args, JSON_C_TO_STRING_PLAIN, &data);
        if (r < 0)
                return r;
        if (fstat(wfd, &st) < 0)
                return errorf(ret_error, -errno, "cannot inspect the workspace %s: %m", d->workspace);
        return mount_plan_add(plan, &(MountEntry) {
                                      .part = MOUNT_PART_WORKSPACE_VIEW,
                                      .kind = MOUNT_VIEW,
                                      .destination = (char *) SANDBOX_WORKSPACE,
                                      .source = d->workspace,
                                      .data = data,
                                      .id = { .dev = (uint64_t) st.st_dev, .ino = (uint64_t) st.st_ino, .directory = true },
                              }, ret_error);
}

/*
 * A linked worktree's or a submodule's workspace (git-sentry.h, GitLinked):
 * its git dir's root served a second time by the workspace view, as a git
 * dir, at its host path (the paths git wrote into the .git file and the
 * worktree registrations resolve inside); the workspace's host path as a
 * symbolic link to /workspace, which lazaret-init makes from the control
 * directory's workspace-path; a .git file that names the git dir
 * relatively (a submodule's) is shown inside with its absolute path, from
 * the view's Domain state.
 */
static int add_git_view(MountPlan *plan, const Domain *d, const char *key, const GitLinked *l, char *const *paths,
                        char *const *names, char *const *unprotect, const char *control_dir, char **ret_error) {
        _cleanup_json_ json_object *args = json_object_new_object();
        _cleanup_free_ char *state = NULL, *data = NULL,
                            *alias = path_join(control_dir, LAZARET_WORKSPACE_PATH_FILE), *line = NULL;
        struct stat st;
        int r;

        if (!args || !alias)
                return -ENOMEM;
        r = checkout_state_path(d->domain_dir, key, VIEW_GIT_STATE_DIR, &state);
        if (r < 0)
                return r;
        if (!l->root) {
                if (unlink(alias) < 0 && errno != ENOENT)
                        return errorf(ret_error, -errno, "cannot remove %s: %m", alias);
                return 0;
        }
        r = mkdir_mode(state, 0700);
        if (r < 0)
                return errorf(ret_error, r, "cannot create %s: %s", state, strerror(-r));
        r = json_add_string(args, "state", state);
        if (r >= 0)
                r = json_add_strv(args, "protect", (const char *const *) l->protect);
        if (r >= 0)
                r = json_add_bool(args, "git_dir", true);
        /* What the workspace's index may not take from the sandbox (issue 32 item 3): the workspace
         * view's lists, for the indexes of this git dir; names count in no directory of a git dir. */
        if (r >= 0)
                r = json_add_strv(args, "index_protect", (const char *const *) paths);
        if (r >= 0)
                r = json_add_strv(args, "protect_names", (const char *const *) names);
        if (r >= 0)
                r = json_add_strv(args, "unprotect", (const char *const *) unprotect);
        if (r >= 0)
                r = json_to_string(args, JSON_C_TO_STRING_PLAIN, &data);
        if (r < 0)
                return r;
        if (fstat(l->root_fd, &st) < 0)
                return errorf(ret_error, -errno, "cannot inspect %s: %m", l->root);
        r = mount_plan_add(plan, &(MountEntry) {
                                   .part = MOUNT_PART_WORKSPACE_VIEW,
                                   .kind = MOUNT_VIEW,
                                   .destination = l->root,
                                   .source = l->root,
                                   .data = data,
                                   .id = { .dev = (uint64_t) st.st_dev, .ino = (uint64_t) st.st_ino, .directory = true },
                           }, ret_error);
        if (r < 0)
                return r;
        if (asprintf(&line, "%s\n", d->workspace) < 0)
                return -ENOMEM;
        r = write_file(alias, line, 0644);
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s: %s", alias, strerror(-r));
        if (l->relative) {
                _cleanup_free_ char *vstate = NULL, *gitfile = NULL, *text = NULL;
                r = checkout_state_path(d->domain_dir, key, VIEW_STATE_DIR, &vstate);
                if (r < 0)
                        return r;
                if (asprintf(&text, "gitdir: %s\n", l->git_dir) < 0)
                        return -ENOMEM;
                gitfile = path_join(vstate, ".git");
                if (!gitfile)
                        return -ENOMEM;
                /* Whatever the sandbox left there (a whiteout, its own gitfile) gives way. */
                if (unlink(gitfile) < 0 && errno != ENOENT)
                        return errorf(ret_error, -errno, "cannot replace %s: %m", gitfile);
                r = write_file(gitfile, text, 0644);
                if (r < 0)
                        return errorf(ret_error, r, "cannot write %s: %s", gitfile, strerror(-r));
        }
        return 0;
}

/*
 * The launch line's part of issue 29: a git operation the sandbox stopped
 * half-way (its state kept in the Domain, so the host sees none under way)
 * and the kept names the host's own git dirs already hold. Said, never
 * fatal: a Domain whose state cannot be read still starts.
 */
static int git_notices(const Domain *d, const char *key, int wfd, const GitLinked *l, char *const *derived,
                       char *const *named, char ***ret) {
        _cleanup_free_ char *state = NULL, *git_state = NULL, *line = NULL;
        _cleanup_strv_free_ char **ops = NULL, **host = NULL, **dirs = NULL, **hooks = NULL;
        _cleanup_close_ int sfd = -EBADF, gsfd = -EBADF;
        size_t n;
        int r;

        r = checkout_state_path(d->domain_dir, key, VIEW_STATE_DIR, &state);
        if (r >= 0)
                r = checkout_state_path(d->domain_dir, key, VIEW_GIT_STATE_DIR, &git_state);
        if (r < 0)
                return r;
        sfd = open(state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (l->root)
                gsfd = open(git_state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        r = view_git_kept_scan(wfd, sfd, l->root ? l->root_fd : -EBADF, l->root, gsfd, &ops, &host);
        if (r < 0)
                return r;
        if (host) {
                r = view_git_kept_notice(host, &line);
                if (r >= 0)
                        r = strv_push(&ops, TAKE_PTR(line));
                if (r < 0)
                        return r;
        }
        /* Issue 32 item 4: a host hook that runs the project's code. */
        r = strv_extend(&dirs, ".git/hooks");
        if (r >= 0)
                r = strv_extend_strv(&dirs, derived);
        if (r >= 0)
                r = host_hooks_scan(wfd, dirs, &hooks);
        if (r >= 0)
                r = strv_extend_strv(&ops, hooks);
        /* Issue 32 item 2: what the hooks name is protected as they are now; the view's set is fixed. */
        n = strv_length(named);
        if (r >= 0 && n > 0)
                r = strv_extendf(&ops, "%zu workspace path%s that the host's hooks name (%s%s) %s protected as the "
                                 "hooks are now; after a hook changes, restart the Domain (lazaretctl stop) to protect "
                                 "what it names", n, n == 1 ? "" : "s", named[0], n > 1 ? ", ..." : "",
                                 n == 1 ? "is" : "are");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(ops);
        return 0;
}

/*
 * The control directory, read inside by the sandbox's processes (mounted
 * read-only at SANDBOX_CONTROL_MOUNT): the container's init, the sessions'
 * starter (lazaret-exec), terminfo, the Escalation Client, and the
 * resolver's file (*ret_resolv), the helper's DNS address.
 */
static int control_dir_write(const BundleParams *p, char **ret_resolv, char **ret_error) {
        _cleanup_free_ char *init_src = NULL, *init_dst = NULL, *exec_src = NULL, *exec_dst = NULL, *terminfo = NULL,
                            *resolv = NULL;
        int r;

        r = mkdir_mode(p->control_dir, 0755);
        if (r < 0)
                return errorf(ret_error, r, "cannot create %s: %s", p->control_dir, strerror(-r));
        terminfo = path_join(p->control_dir, "terminfo");
        init_dst = path_join(p->control_dir, "init");
        init_src = path_join(LIBEXECDIR, "lazaret-init");
        exec_dst = path_join(p->control_dir, "exec");
        exec_src = path_join(LIBEXECDIR, "lazaret-exec");
        if (!terminfo || !init_dst || !init_src || !exec_dst || !exec_src)
                return -ENOMEM;
        r = mkdir_mode(terminfo, 0755);
        if (r < 0)
                return errorf(ret_error, r, "cannot create %s: %s", terminfo, strerror(-r));
        r = copy_file(TEST_HOOK_PATH("LAZARET_INIT", init_src), init_dst, 0755);
        if (r < 0)
                return errorf(ret_error, r, "cannot install %s into the sandbox: %s", init_src, strerror(-r));
        r = copy_file(exec_src, exec_dst, 0755);
        if (r < 0)
                return errorf(ret_error, r, "cannot install %s into the sandbox: %s", exec_src, strerror(-r));
        /* The Escalation Client, on the sessions' PATH (sandbox-exec.c), and the mailbox's mount points. */
        if (p->mailbox) {
                r = install_escalation(p->control_dir, ret_error);
                if (r < 0)
                        return r;
        }
        resolv = path_join(p->control_dir, "resolv.conf");
        if (!resolv)
                return -ENOMEM;
        r = write_file(resolv, "# Written by Lazaret: the network helper's DNS forwarder.\nnameserver " NET_DNS_STR "\n", 0644);
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s: %s", resolv, strerror(-r));
        *ret_resolv = TAKE_PTR(resolv);
        return 0;
}

/*
 * SR-4: the Git Sentry's checks of the workspace at wfd (and, without the
 * view, its mounts after the workspace bind); with the view, the Domain
 * state of the checkout now at this path, by the git dirs the Sentry
 * judged (checkout.h), the workspace view and a linked workspace's git dir
 * view, and what the launch says about git.
 */
static int plan_workspace(const BundleParams *p, MountPlan *plan, int wfd, bool view, char **ret_error) {
        const Domain *d = p->domain;
        _cleanup_strv_free_ char **protect = NULL, **named = NULL, **paths = NULL, **names = NULL, **unprotect = NULL;
        _cleanup_(git_linked_done) GitLinked linked = { .root_fd = -EBADF };
        _cleanup_free_ char *refs_error = NULL;
        CheckoutId id;
        char key[CHECKOUT_KEY_MAX];
        int r;

        r = git_sentry_plan(&(GitSentryParams) {
                                    .workspace = d->workspace,
                                    .workspace_fd = wfd,
                                    .sandbox_workspace = SANDBOX_WORKSPACE,
                                    .domain_dir = d->domain_dir,
                                    .home = d->host.home,
                                    .xdg_config_home = d->host.xdg_config_home,
                                    .view = view,
                                    .ret_protect = &protect,
                                    .ret_hook_named = view ? &named : NULL,
                                    .ret_linked = &linked,
                            }, plan, ret_error);
        if (r < 0 || !view)
                return r;
        /* The view's lists: the Sentry's paths, the paths the hooks name, the profile's. */
        r = strv_extend_strv(&paths, protect);
        if (r >= 0)
                r = strv_extend_strv(&paths, named);
        if (r >= 0)
                r = view_lists_add_profile(d->profile->protected_paths, &paths, &names, &unprotect);
        if (r < 0)
                return r;

        r = checkout_id_of_workspace(wfd, &linked, &id);
        if (r < 0)
                return errorf(ret_error, r, "cannot identify the checkout at %s (its git dir): %s", d->workspace,
                              strerror(-r));
        r = checkout_state_prepare(d->domain_dir, d->workspace, &id, key, p->ret_checkout_notice, ret_error);
        if (r < 0)
                return r;
        if (p->ret_checkout_key)
                memcpy(p->ret_checkout_key, key, CHECKOUT_KEY_MAX);
        /* Issue 32: the refs now, from which lazaretctl counts the commits made inside (never fatal: said). */
        r = checkout_state_record_refs(d->domain_dir, key, wfd, &linked, &refs_error);
        if (r == -ENOMEM)
                return r;
        r = add_view(plan, d, key, wfd, paths, names, unprotect, named, p->control_dir, ret_error);
        if (r < 0)
                return r;
        r = add_git_view(plan, d, key, &linked, paths, names, unprotect, p->control_dir, ret_error);
        if (r < 0)
                return r;
        if (p->ret_git_root && linked.root && !(*p->ret_git_root = strdup(linked.root)))
                return -ENOMEM;
        /* What cannot be read says nothing; only memory fails the start. */
        if (p->ret_git_notices && git_notices(d, key, wfd, &linked, protect, named, p->ret_git_notices) == -ENOMEM)
                return -ENOMEM;
        if (p->ret_git_notices && refs_error &&
            strv_extendf(p->ret_git_notices, "%s: the commits made inside are not checked this time (lazaretctl "
                         "changes)", refs_error) < 0)
                return -ENOMEM;
        return 0;
}

/*
 * SR-10: the mailbox, on file systems of the Domain's own that the
 * supervisor makes (escalation-proto.h): requests/ writable, results/ and
 * trust/ (the sessions' credentials, SR-9) read-only; the client also at
 * /usr/local/bin, on every shell's PATH (a login shell resets PATH).
 */
static int plan_mailbox(MountPlan *plan, const char *control_dir, char **ret_error) {
        _cleanup_free_ char *client = path_join(control_dir, "bin/lazaret-escalate");
        int r;

        if (!client)
                return -ENOMEM;
        r = add_mailbox_dir(plan, ESC_REQUESTS_DIR, false, ESC_REQUESTS_FS_OPTIONS, ret_error);
        if (r >= 0)
                r = add_mailbox_dir(plan, ESC_RESULTS_DIR, true, ESC_MAILBOX_FS_OPTIONS, ret_error);
        if (r >= 0)
                r = add_mailbox_dir(plan, ESC_TRUST_DIR, true, ESC_MAILBOX_FS_OPTIONS, ret_error);
        if (r >= 0)
                r = add_own(plan, MOUNT_PART_MAILBOX, "/usr/local/bin/lazaret-escalate", client, true,
                            MOUNT_PART_BIT(MOUNT_PART_STATE_ANCHOR), ret_error);
        return r;
}

/*
 * The plan made: the staging directory, mounts.json for the supervisor and
 * config.json for runsc, which sees only what the supervisor staged (spec
 * C19). *ret_plan (optional) is the plan as JSON.
 */
static int spec_write(const BundleParams *p, const MountPlan *plan, bool view, char **ret_plan, char **ret_error) {
        const Domain *d = p->domain;
        _cleanup_free_ char *json = NULL, *cfg = NULL, *stage = NULL, *staged_root = NULL, *plan_json = NULL,
                            *plan_path = NULL;
        _cleanup_strv_free_ char **mount_strings = NULL;
        _cleanup_free_ OciMount *mounts = NULL;
        char port[16], *args[12];
        size_t n = 0, n_args = 0;
        int r;

        stage = path_join(p->bundle_dir, MOUNT_PLAN_STAGE_DIR);
        if (!stage)
                return -ENOMEM;
        r = mkdir_mode(stage, 0700);
        if (r < 0)
                return errorf(ret_error, r, "cannot create %s: %s", stage, strerror(-r));
        r = mount_plan_oci_mounts(plan, stage, &mounts, &n, &mount_strings);
        if (r >= 0)
                r = mount_plan_to_string(plan, &plan_json);
        if (r < 0)
                return r;
        staged_root = mount_plan_staged_path(stage, (size_t) (mount_plan_find(plan, "/") - plan->entries));
        if (!staged_root)
                return -ENOMEM;

        snprintf(port, sizeof(port), "%u", p->canary_port);
        /* The init's first act is the network attestation's probe: the address canaries, and with
         * host rules the name canaries too (the resolver, the two names, the unbound address and
         * the one the helper bound to the allowed name). */
        args[n_args++] = (char *) SANDBOX_CONTROL_MOUNT "/init";
        args[n_args++] = (char *) "--attest";
        args[n_args++] = (char *) NET_CANARY_ALLOWED_STR;
        args[n_args++] = (char *) p->probe_denied;
        args[n_args++] = port;
        if (d->profile->allow_hosts && d->profile->allow_hosts[0]) {
                args[n_args++] = (char *) NET_DNS_STR;
                args[n_args++] = (char *) NET_CANARY_NAME_ALLOWED;
                args[n_args++] = (char *) NET_CANARY_NAME_DENIED;
                args[n_args++] = (char *) NET_EGRESS_UNBOUND_STR;
                args[n_args++] = (char *) p->probe_bound;
        }
        /* The view is the host-edit relay's source (spec 4.6). */
        if (view)
                args[n_args++] = (char *) "--judged-relay";
        args[n_args] = NULL;

        /* Writable, but only through runsc's root overlay, whose upper layer
         * lives in a Domain-owned directory (--overlay2=root:dir=): the
         * prepared lower on the host is never written. */
        OciContainer c = {
                .rootfs = staged_root,
                .rootfs_readonly = false,
                .hostname = d->profile->name,
                .args = args,
                .env = p->env,
                .cwd = "/",
                .mounts = mounts,
                .n_mounts = n,
                .netns_path = p->netns_path,
                .tmp_size = d->profile->limits.tmp_size,
                .rlimits = { .nproc = d->profile->limits.processes, .as = d->profile->limits.address_space },
        };
        r = oci_container_json(&c, &json);
        if (r < 0)
                return errorf(ret_error, r, "cannot build the OCI specification: %s", strerror(-r));
        plan_path = path_join(p->bundle_dir, MOUNT_PLAN_FILE);
        cfg = path_join(p->bundle_dir, "config.json");
        if (!cfg || !plan_path)
                return -ENOMEM;
        r = write_file(plan_path, plan_json, 0600);
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s: %s", plan_path, strerror(-r));
        r = write_file(cfg, json, 0600);
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s: %s", cfg, strerror(-r));
        if (ret_plan)
                *ret_plan = TAKE_PTR(plan_json);
        return 0;
}

int bundle_write(const BundleParams *p, char **ret_plan, char **ret_error) {
        const Domain *d = p->domain;
        _cleanup_free_ char *resolv = NULL, *error = NULL;
        _cleanup_(mount_plan_done) MountPlan plan = {};
        _cleanup_close_ int rootfd = -EBADF, wfd = -EBADF;
        ResolvedVolume *vols = NULL;
        size_t n_vols = 0;
        bool view = true;
        int r;

        r = control_dir_write(p, &resolv, ret_error);
        if (r < 0)
                return r;

        /* The mount plan, in mount order: each part adds what it checked, by fd. */
        r = mount_plan_init(&plan);
        if (r < 0)
                return r;
        rootfd = open(p->rootfs, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rootfd < 0)
                return errorf(ret_error, -errno, "cannot open the image's root file system %s: %m", p->rootfs);
        r = mount_plan_add_bind_fd(&plan, MOUNT_PART_ROOT, "/", p->rootfs, rootfd, false, 0, ret_error);
        if (r < 0)
                return r;
        /* SR-14: the persistent layers lie on the image's own directories, below everything else. */
        r = anchor_plan(d, rootfd, p->rootfs, &plan, p->ret_state_notice, ret_error);
        if (r < 0)
                return r;

        /* Holes 3/4: judged again, by fd, right before runsc is told the paths (spec §6). */
        r = domain_resolve_mounts(d, true, &vols, &n_vols, &wfd, &error);
        if (r < 0)
                return errorf(ret_error, r, "%s", error ?: "cannot resolve volumes");
#if ENABLE_TEST_HOOKS
        /* bench/workspace compares the view with the plain bind it replaced. */
        view = !getenv("LAZARET_TEST_PLAIN_WORKSPACE");
#endif
        if (!view) {
                r = mount_plan_add_bind_fd(&plan, MOUNT_PART_WORKSPACE, SANDBOX_WORKSPACE, d->workspace, wfd, false, 0,
                                           ret_error);
                if (r < 0)
                        goto finish;
        }
        r = plan_workspace(p, &plan, wfd, view, ret_error);
        if (r < 0)
                goto finish;
        r = add_own(&plan, MOUNT_PART_CONTROL, SANDBOX_CONTROL_MOUNT, p->control_dir, true, 0, ret_error);
        if (r < 0)
                goto finish;
        if (p->mailbox) {
                r = plan_mailbox(&plan, p->control_dir, ret_error);
                if (r < 0)
                        goto finish;
        }
        for (size_t i = 0; i < n_vols; i++) {
                r = mount_plan_add_bind_fd(&plan, MOUNT_PART_VOLUME, vols[i].container, vols[i].host, vols[i].fd,
                                           vols[i].mode != VOLUME_RW,
                                           MOUNT_PART_BIT(MOUNT_PART_TMP) | MOUNT_PART_BIT(MOUNT_PART_STATE_ANCHOR), ret_error);
                if (r < 0)
                        goto finish;
        }
        /* Last, so that they are on top of whatever a volume or a persistent /etc brings: never persisted. */
        r = add_etc_files(&plan, p->control_dir, resolv, d->profile->name, ret_error);
        if (r < 0)
                goto finish;
        r = spec_write(p, &plan, view, ret_plan, ret_error);
finish:
        resolved_volumes_free(vols, n_vols);
        return r;
}
