/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl changes: the workspace view's pending protected changes
 * (spec §4.6). Listing reads the Domain's view state and the host's
 * workspace, both by fd; apply and discard also hold the Domain's
 * coordinator.lock, which a running coordinator holds for its whole life
 * (so they refuse while the Domain runs, and no coordinator starts while
 * they work). Nothing here talks to the bus.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "changes.h"
#include "checkout.h"
#include "cleanup.h"
#include "ctl.h"
#include "domain-lock.h"
#include "domain.h"
#include "fs-util.h"
#include "git-refs.h"
#include "git-sentry.h"
#include "host-git.h"
#include "host-hooks.h"
#include "json-util.h"
#include "macro.h"
#include "mount-plan.h"
#include "path-util.h"
#include "spawn-util.h"
#include "strv.h"
#include "util.h"
#include "view-changes.h"
#include "view-git-kept.h"
#include "view-ignored.h"
#include "view-policy.h"

/* --diff shows text files up to this size; larger ones are refused. */
#define DIFF_MAX (1024 * 1024)

static const char *arg_diff = NULL;
static bool arg_all = false;
static bool arg_force = false;
static bool arg_git_control = false;
static bool arg_ignored = false;

void changes_set_diff(const char *path) {
        arg_diff = path;
}
void changes_set_all(bool b) {
        arg_all = b;
}
void changes_set_force(bool b) {
        arg_force = b;
}
void changes_set_git_control(bool b) {
        arg_git_control = b;
}
void changes_set_ignored(bool b) {
        arg_ignored = b;
}

/* What a verb needs of the Domain's view: its state, the workspace, the derived protected paths. */
typedef struct ViewContext {
        Domain *domain;
        int workspace_fd;               /* O_PATH */
        int state_fd;                   /* -ENOENT: the Domain has no view state (yet) */
        int git_state_fd;               /* the git dir view's (linked.root); -ENOENT: none */
        int lock_fd;
        char **protect;                 /* the core.hooksPath directories and included files inside the workspace */
        char **hook_named;              /* the workspace paths the host's hooks name (issue 32 item 2) */
        char **paths, **names, **unprotect; /* those and the profile's protected_paths, as the view takes them */
        GitLinked linked;               /* a linked worktree's or a submodule's git dirs (root NULL otherwise) */
        char checkout_key[CHECKOUT_KEY_MAX]; /* the checkout now at the workspace path (checkout.h) */
        char *checkout_dir;             /* its state directory, or NULL (none yet) */
        unsigned set_aside;             /* the Domain's other checkouts' state directories */
} ViewContext;

/* Every fd closed (-EBADF), nothing held. */
#define VIEW_CONTEXT_NULL_FIELDS \
        { .workspace_fd = -EBADF, .state_fd = -EBADF, .git_state_fd = -EBADF, .lock_fd = -EBADF, \
          .linked.root_fd = -EBADF }

static void view_context_done(ViewContext *c) {
        domain_free(c->domain);
        safe_close(c->workspace_fd);
        safe_close(c->state_fd);
        safe_close(c->git_state_fd);
        safe_close(c->lock_fd);
        strv_free(c->protect);
        strv_free(c->hook_named);
        strv_free(c->paths);
        strv_free(c->names);
        strv_free(c->unprotect);
        free(c->checkout_dir);
        git_linked_done(&c->linked);
        *c = (ViewContext) VIEW_CONTEXT_NULL_FIELDS;
}

/*
 * The workspace-relative core.hooksPath directories, and the paths the
 * host's hooks name, as the coordinator passes them to the view (bundle.c,
 * plan_workspace()); the latter as the hooks are now, the view's as they
 * were at the Domain's start.
 */
static int derive_protect(const Domain *d, int wfd, char ***ret, char ***ret_named, GitLinked *ret_linked,
                          char **ret_error) {
        _cleanup_(mount_plan_done) MountPlan plan = {};
        _cleanup_strv_free_ char **protect = NULL, **named = NULL;
        int r;

        r = mount_plan_init(&plan);
        if (r < 0)
                return r;
        r = git_sentry_plan(&(GitSentryParams) {
                                    .workspace = d->workspace,
                                    .workspace_fd = wfd,
                                    .sandbox_workspace = "/workspace",
                                    .domain_dir = d->domain_dir,
                                    .home = d->host.home,
                                    .xdg_config_home = d->host.xdg_config_home,
                                    .view = true,
                                    .ret_protect = &protect,
                                    .ret_hook_named = &named,
                                    .ret_linked = ret_linked,
                            }, &plan, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(protect);
        *ret_named = TAKE_PTR(named);
        return 0;
}

/*
 * A view's state directory of the current checkout (checkout.h: found below
 * the Domain Root by the identity of the checkout at the workspace path now),
 * O_PATH, or -ENOENT in *ret when it has none (yet). Prints why on failure.
 */
static int open_state(const char *checkout_dir, const char *name, const char *what, int *ret) {
        _cleanup_free_ char *state = NULL;
        int fd;

        if (!checkout_dir) {
                *ret = -ENOENT;
                return 0;
        }
        state = path_join(checkout_dir, name);
        if (!state)
                return -ENOMEM;
        fd = open(state, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT) {
                fprintf(stderr, "Cannot open the %s's state %s: %m\n", what, state);
                return -errno;
        }
        *ret = fd < 0 ? -ENOENT : fd;
        return 0;
}

/* Opens what the verbs need; with lock, takes coordinator.lock or refuses. Prints why on failure. */
static int view_context_open(const Config *config, const char *profile, const char *workspace, bool lock,
                             ViewContext *ret) {
        _cleanup_(view_context_done) ViewContext c = VIEW_CONTEXT_NULL_FIELDS;
        _cleanup_free_ char *error = NULL, *checkout_dir = NULL;
        CheckoutId id;
        int r;

        r = domain_new(config, &arg_host, profile, workspace, &c.domain, &error);
        if (r < 0) {
                fprintf(stderr, "%s\n", error ?: strerror(-r));
                return r;
        }
        if (lock) {
                r = ctl_domain_lock_stopped(c.domain->domain_dir, c.domain->id, "apply or discard", false, &c.lock_fd);
                if (r < 0)
                        return r;
        }
        c.workspace_fd = open(c.domain->workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (c.workspace_fd < 0) {
                fprintf(stderr, "Cannot open the workspace %s: %m\n", c.domain->workspace);
                return -errno;
        }
        r = derive_protect(c.domain, c.workspace_fd, &c.protect, &c.hook_named, &c.linked, &error);
        if (r < 0) {
                fprintf(stderr, "%s\n", error ?: strerror(-r));
                return r;
        }
        /* The state of the checkout now at this path, by the git dirs the Sentry judged; another's is set aside. */
        r = checkout_id_of_workspace(c.workspace_fd, &c.linked, &id);
        if (r >= 0) {
                r = checkout_state_find(c.domain->domain_dir, &id, &checkout_dir);
                if (r == -ENOENT)
                        r = 0;
        }
        if (r < 0) {
                fprintf(stderr, "Cannot find the state of the checkout at %s in %s: %s\n", c.domain->workspace,
                        c.domain->domain_dir, strerror(-r));
                return r;
        }
        checkout_id_key(&id, c.checkout_key);
        {
                /* The other checkouts' state, said by status (lazaretctl state list names them). */
                _cleanup_free_ char *cks = path_join(c.domain->domain_dir, CHECKOUTS_DIR);
                _cleanup_(closedirp) DIR *d = cks ? opendir(cks) : NULL;
                struct dirent *de;

                while (d && (de = readdir(d)))
                        if (checkout_key_is_valid(de->d_name) && !streq(de->d_name, c.checkout_key))
                                c.set_aside++;
        }
        r = open_state(checkout_dir, VIEW_STATE_DIR, "view", &c.state_fd);
        if (r < 0)
                return r;
        c.git_state_fd = -ENOENT;
        if (c.linked.root) {
                /* The git dir view's state: its changes are named by their host paths. */
                r = open_state(checkout_dir, VIEW_GIT_STATE_DIR, "git dir view", &c.git_state_fd);
                if (r < 0)
                        return r;
        }
        r = strv_extend_strv(&c.paths, c.protect);
        if (r >= 0)
                r = strv_extend_strv(&c.paths, c.hook_named);
        if (r >= 0)
                r = view_lists_add_profile(c.domain->profile->protected_paths, &c.paths, &c.names, &c.unprotect);
        if (r < 0)
                return r;
        c.checkout_dir = TAKE_PTR(checkout_dir);
        *ret = c;
        c = (ViewContext) VIEW_CONTEXT_NULL_FIELDS;
        return 0;
}

/* The workspace's changes, then the git dir view's (named by host path), in one list. */
static int scan(const ViewContext *c, ViewChanges *ret) {
        _cleanup_(view_changes_done) ViewChanges w = {}, g = {};
        _cleanup_free_ char *error = NULL;
        ViewChange *all;
        int r = 0;

        if (c->state_fd >= 0)
                r = view_changes_scan(c->state_fd, c->workspace_fd, NULL,
                                      &(ViewLists) { .paths = c->paths, .names = c->names, .unprotect = c->unprotect },
                                      c->protect, &w, &error);
        if (r >= 0 && c->git_state_fd >= 0)
                /* As the git dir view was told: its --protect list alone (bundle.c, add_git_view()). */
                r = view_changes_scan(c->git_state_fd, c->linked.root_fd, c->linked.root,
                                      &(ViewLists) { .paths = c->linked.protect }, c->linked.protect, &g, &error);
        if (r < 0) {
                fprintf(stderr, "%s\n", error ?: strerror(-r));
                return r;
        }
        if (g.n > 0) {
                all = reallocarray(w.changes, w.n + g.n, sizeof(ViewChange));
                if (!all)
                        return -ENOMEM;
                memcpy(all + w.n, g.changes, g.n * sizeof(ViewChange));
                w.changes = all;
                w.n += g.n;
                g.changes = mfree(g.changes);   /* the paths moved */
                g.n = 0;
        }
        *ret = w;
        w = (ViewChanges) {};
        return 0;
}

/* The state and host directories a change lives in. */
static int state_fd_of(const ViewContext *c, const ViewChange *ch) {
        return ch->root ? c->git_state_fd : c->state_fd;
}

static int host_fd_of(const ViewContext *c, const ViewChange *ch) {
        return ch->root ? c->linked.root_fd : c->workspace_fd;
}

/* The git operations under way inside and the kept names the host's git dirs hold (view-git-kept.h). */
static int git_kept(const ViewContext *c, char ***ret_ops, char ***ret_host) {
        int r = view_git_kept_scan(c->workspace_fd, c->state_fd, c->linked.root ? c->linked.root_fd : -EBADF,
                                   c->linked.root, c->git_state_fd, ret_ops, ret_host);
        if (r < 0)
                fprintf(stderr, "Cannot read the workspace's git state: %s\n", strerror(-r));
        return r;
}

/* Issue 32 item 4: the host's hooks that run project code (host-hooks.h), from .git/hooks and the core.hooksPath ones. */
static int host_hooks(const ViewContext *c, char ***ret) {
        _cleanup_strv_free_ char **dirs = NULL;
        int r = strv_extend(&dirs, ".git/hooks");

        if (r >= 0)
                r = strv_extend_strv(&dirs, c->protect);
        if (r >= 0)
                r = host_hooks_scan(c->workspace_fd, dirs, ret);
        if (r < 0)
                fprintf(stderr, "Cannot read the host's git hooks: %s\n", strerror(-r));
        return r;
}

/*
 * Issue 32: what the sandbox commits is shared. A commit made inside (a
 * private GIT_INDEX_FILE, commit-tree and update-ref) can hold a protected
 * path's new content and move a ref of the host's repository; a host
 * checkout, reset --hard or merge of that ref would write it. The refs the
 * coordinator recorded at the checkout's first Domain start, or since the
 * last accept-commits (checkout.h, CHECKOUT_REFS_FILE), against the refs
 * now: every commit reachable from a
 * ref that moved and from no recorded ref, newest first, at most
 * COMMITS_WALK_MAX, read by the host's git from the object store alone
 * (host_git_commits_since()), and each changed path judged as the view
 * judges what the index may take (view_index_path_protected()).
 */
#define COMMITS_WALK_MAX 1000U

typedef struct CommitFinding {
        char oid[GIT_OID_HEX_MAX + 1];
        char *ref;
        char *path;
} CommitFinding;

typedef struct CommitReport {
        bool checked;                   /* a record to count from was found and the refs compared */
        int64_t since;                  /* when that record was taken */
        size_t moved;                   /* refs that moved since */
        size_t walked;                  /* commits read */
        bool cut;                       /* COMMITS_WALK_MAX reached: older ones not read */
        bool refs_cut;                  /* a record or the refs now held more than GIT_REFS_MAX */
        size_t n_commits;               /* commits with a protected change */
        CommitFinding *findings;
        size_t n;
        char *error;                    /* why they could not be checked, or NULL */
} CommitReport;

static void commit_report_done(CommitReport *r) {
        for (size_t i = 0; i < r->n; i++) {
                free(r->findings[i].ref);
                free(r->findings[i].path);
        }
        free(r->findings);
        free(r->error);
        *r = (CommitReport) {};
}

/* The record the count begins at (checkout.h, CHECKOUT_REFS_FILE), or -ENOENT. */
static int read_refs_record(const char *checkout_dir, GitRefs *ret, int64_t *ret_taken) {
        _cleanup_close_ int fd = open(checkout_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        return checkout_refs_record_read(fd, ret, ret_taken);
}

static int add_finding(CommitReport *rep, const char *oid, const char *ref, const char *path) {
        CommitFinding *a = reallocarray(rep->findings, rep->n + 1, sizeof(CommitFinding));

        if (!a)
                return -ENOMEM;
        rep->findings = a;
        a[rep->n] = (CommitFinding) { .ref = strdup(ref), .path = strdup(path) };
        snprintf(a[rep->n].oid, sizeof(a[rep->n].oid), "%s", oid);
        rep->n++;
        return a[rep->n - 1].ref && a[rep->n - 1].path ? 0 : -ENOMEM;
}

/* Fills *rep; a failure to check is said in rep->error, only memory fails. */
static int protected_commits(const ViewContext *c, CommitReport *rep) {
        _cleanup_(git_refs_done) GitRefs base = {}, now = {};
        _cleanup_strv_free_ char **base_oids = NULL, **new_oids = NULL, **new_names = NULL;
        _cleanup_free_ char *objects = NULL, *why = NULL;
        HostGitCommit *commits = NULL;
        size_t n_commits = 0;
        bool cut = false;
        int r;

        *rep = (CommitReport) {};
        if (!c->checkout_dir || streq(c->checkout_key, CHECKOUT_KEY_NONE))
                return 0;
        r = read_refs_record(c->checkout_dir, &base, &rep->since);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0;       /* nothing recorded yet (a Lazaret before this record) */
        r = checkout_refs_now(c->workspace_fd, &c->linked, &now);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return asprintf(&rep->error, "cannot read the repository's refs: %s", git_refs_strerror(r)) < 0 ? -ENOMEM : 0;
        rep->refs_cut = base.cut || now.cut;
        for (size_t i = 0; i < base.n; i++)
                if (strv_extend(&base_oids, base.refs[i].oid) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < now.n; i++) {
                const GitRef *b = git_refs_find(&base, now.refs[i].name);

                if (b && streq(b->oid, now.refs[i].oid))
                        continue;
                if (strv_extend(&new_oids, now.refs[i].oid) < 0 || strv_extend(&new_names, now.refs[i].name) < 0)
                        return -ENOMEM;
        }
        rep->moved = strv_length(new_oids);
        rep->checked = true;
        if (rep->moved == 0)
                return 0;
        objects = c->linked.root ? path_join(c->linked.root, "objects") : path_join(c->domain->workspace, ".git/objects");
        if (!objects)
                return -ENOMEM;
        r = host_git_commits_since(objects, base_oids, new_oids, COMMITS_WALK_MAX, &commits, &n_commits, &cut, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                rep->checked = false;
                rep->error = TAKE_PTR(why);
                return rep->error ? 0 : -ENOMEM;
        }
        rep->walked = n_commits;
        rep->cut = cut;
        r = 0;
        for (size_t i = 0; r >= 0 && i < n_commits; i++) {
                bool any = false;

                STRV_FOREACH(p, commits[i].paths) {
                        if (!view_index_path_protected(&(ViewLists) { .paths = c->paths, .names = c->names,
                                                                      .unprotect = c->unprotect }, *p))
                                continue;
                        r = add_finding(rep, commits[i].oid, new_names[commits[i].ref], *p);
                        if (r < 0)
                                break;
                        any = true;
                }
                rep->n_commits += any;
        }
        host_git_commits_free(commits, n_commits);
        return r;
}

static int commit_report_json(const CommitReport *rep, json_object *o) {
        _cleanup_json_ json_object *a = json_object_new_array(), *k = json_object_new_object();
        int r = a && k ? 0 : -ENOMEM;

        for (size_t i = 0; r >= 0 && i < rep->n; i++) {
                _cleanup_json_ json_object *e = json_object_new_object();

                r = e ? json_add_string(e, "commit", rep->findings[i].oid) : -ENOMEM;
                if (r >= 0)
                        r = json_add_bytes(e, "ref", rep->findings[i].ref);
                if (r >= 0)
                        r = json_add_bytes(e, "path", rep->findings[i].path);
                if (r >= 0)
                        r = json_append(a, TAKE_PTR(e));
        }
        if (r >= 0)
                r = json_add_bool(k, "checked", rep->checked);
        if (r >= 0)
                r = rep->checked || rep->since ? json_add_int64(k, "since", rep->since) : json_add_null(k, "since");
        if (r >= 0)
                r = json_add_uint64(k, "moved_refs", rep->moved);
        if (r >= 0)
                r = json_add_uint64(k, "walked", rep->walked);
        if (r >= 0)
                r = json_add_bool(k, "cut", rep->cut || rep->refs_cut);
        if (r >= 0)
                r = rep->error ? json_add_string(k, "error", rep->error) : json_add_null(k, "error");
        if (r >= 0)
                r = json_add(o, "protected_commits", TAKE_PTR(a));
        if (r >= 0)
                r = json_add(o, "commits_checked", TAKE_PTR(k));
        return r;
}

static void format_since(int64_t t, char buf[static 64]) {
        time_t tt = (time_t) t;
        struct tm tm;

        if (!localtime_r(&tt, &tm) || strftime(buf, 64, "%Y-%m-%d %H:%M", &tm) == 0)
                snprintf(buf, 64, "the Domain's start");
}

static void print_escaped(const char *prefix, const char *s, const char *suffix) {
        _cleanup_free_ char *e = escape_control(s);
        printf("%s%s%s", prefix, e ?: "?", suffix);
}

/* A change's name (view_change_shown()) between prefix and suffix, control bytes escaped. */
static void print_change(const char *prefix, const ViewChange *ch, const char *suffix) {
        _cleanup_free_ char *shown = view_change_shown(ch);
        print_escaped(prefix, shown ?: "?", suffix);
}

/* The commits made inside that change protected paths, each with how to review it. */
static void print_commits(const CommitReport *rep) {
        char since[64];

        if (rep->error)
                print_escaped("Cannot check the commits made inside: ", rep->error, "\n");
        format_since(rep->since, since);
        if (rep->n == 0) {
                if (rep->cut || rep->refs_cut)
                        printf("No protected path changed by the newest %zu commits made since %s; older ones were not "
                               "read (review them with git log).\n", rep->walked, since);
                return;
        }
        printf("Commits made since %s (inside, or on the host: they cannot be told apart) that change protected paths; "
               "a host checkout, reset --hard or merge of the ref writes them:\n", since);
        for (size_t i = 0; i < rep->n; i++) {
                printf("  commit %.12s on ", rep->findings[i].oid);
                print_escaped("", rep->findings[i].ref, " changes protected ");
                print_escaped("", rep->findings[i].path, "\n");
        }
        printf("Review: git show %.12s -- ", rep->findings[0].oid);
        print_escaped("'", rep->findings[0].path, "'");
        printf(" (each likewise); undo with git reset or git branch -f on the host before a checkout, merge or reset "
               "--hard; once reviewed: lazaretctl changes accept-commits (counts from then on).\n");
        if (rep->cut || rep->refs_cut)
                printf("Only the newest %zu commits were read; older ones were not (review them with git log).\n",
                       rep->walked);
        printf("\n");
}

/*
 * lazaretctl changes accept-commits: the count of commits made inside
 * begins again at the refs now (CHECKOUT_REFS_FILE written, atomically):
 * the developer has reviewed what it listed. Needs the checkout's state
 * (a Domain started on it once).
 */
static int accept_commits(const ViewContext *c) {
        _cleanup_(git_refs_done) GitRefs now = {};
        _cleanup_free_ char *own = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        /* checkouts/<key> itself, not an older Lazaret's state that the next start adopts. */
        r = checkout_state_path(c->domain->domain_dir, c->checkout_key, NULL, &own);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || !c->checkout_dir || !streq(c->checkout_dir, own) || streq(c->checkout_key, CHECKOUT_KEY_NONE)) {
                fprintf(stderr, "Domain %s has no state of this checkout yet: there is nothing to accept.\n",
                        c->domain->id);
                return -ENOENT;
        }
        r = checkout_refs_now(c->workspace_fd, &c->linked, &now);
        if (r < 0) {
                fprintf(stderr, "Cannot read the repository's refs: %s\n", strerror(-r));
                return r;
        }
        fd = open(c->checkout_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        r = fd < 0 ? -errno : checkout_refs_record_write(fd, &now, (int64_t) time(NULL));
        if (r < 0) {
                fprintf(stderr, "Cannot write %s/%s: %s\n", c->checkout_dir, CHECKOUT_REFS_FILE, strerror(-r));
                return r;
        }
        if (arg_json)
                printf("{\"domain_id\":\"%s\",\"accepted_refs\":%zu}\n", c->domain->id, now.n);
        else
                printf("Commits made inside are counted from now on (%zu refs recorded) in Domain %s.\n", now.n,
                       c->domain->id);
        return 0;
}

static bool strv_is_empty(char *const *l) {
        return !l || !l[0];
}

/* ------------------------------------------------------------ listing */

static int change_json(const ViewChange *ch, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        const char *type = ch->type == S_IFDIR ? "directory" : ch->type == S_IFLNK ? "symlink" : ch->type ? "file" : NULL;
        _cleanup_free_ char *shown = view_change_shown(ch);
        int r;

        if (!o || !shown)
                return -ENOMEM;
        r = json_add_string(o, "path", shown);
        if (r >= 0)
                r = json_add_bool(o, "git_dir_view", ch->root != NULL);
        if (r >= 0)
                r = json_add_string(o, "kind", view_change_label(ch));
        if (r >= 0)
                r = json_add_string(o, "change", view_change_kind_to_string(ch->kind));
        if (r >= 0)
                r = json_add_bool(o, "git_control", ch->git_control);
        if (r >= 0)
                r = type ? json_add_string(o, "type", type) : json_add_null(o, "type");
        if (r >= 0)
                r = json_add_uint64(o, "size", ch->size);
        if (r >= 0)
                r = json_add_string(o, "host", view_host_state_to_string(ch->host));
        if (r >= 0)
                r = json_add_bool(o, "host_changed", ch->host != VIEW_HOST_SAME);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static int list_changes(const ViewContext *c, const ViewChanges *l) {
        _cleanup_strv_free_ char **ops = NULL, **host = NULL;
        _cleanup_(commit_report_done) CommitReport rep = {};
        int r;

        r = git_kept(c, &ops, &host);
        if (r < 0)
                return r;
        r = protected_commits(c, &rep);
        if (r < 0)
                return r;
        if (arg_json) {
                _cleanup_json_ json_object *o = json_object_new_object(), *a = json_object_new_array();

                r = o && a ? 0 : -ENOMEM;
                if (r >= 0)
                        r = json_add_strv(o, "git_in_progress", (const char *const *) (ops ?: (char *[]) { NULL }));
                if (r >= 0)
                        r = json_add_string(o, "domain_id", c->domain->id);
                if (r >= 0)
                        r = json_add_string(o, "workspace", c->domain->workspace);
                for (size_t i = 0; r >= 0 && i < l->n; i++) {
                        json_object *e = NULL;
                        r = change_json(&l->changes[i], &e);
                        if (r >= 0)
                                r = json_append(a, e);
                }
                if (r >= 0)
                        r = json_add(o, "changes", TAKE_PTR(a));
                if (r >= 0)
                        r = commit_report_json(&rep, o);
                return r < 0 ? ctl_json_failed(r) : ctl_print_json(o);
        }

        /* First: such a change is not one to apply, but an operation to finish inside. */
        STRV_FOREACH(p, ops)
                print_escaped("", *p, "\n");
        /* Then what is already in the shared repository: nothing to apply or discard, a commit to review. */
        print_commits(&rep);
        if (l->n == 0) {
                printf("No pending protected changes in Domain %s.\n", c->domain->id);
                return 0;
        }
        printf("%-12s %10s  %-10s %s\n", "KIND", "SIZE", "HOST", "PATH");
        for (size_t i = 0; i < l->n; i++) {
                const ViewChange *ch = &l->changes[i];
                char size[32];

                if (ch->kind == VIEW_CHANGE_DELETED)
                        snprintf(size, sizeof(size), "-");
                else
                        snprintf(size, sizeof(size), "%llu", (unsigned long long) ch->size);
                printf("%-12s %10s  %-10s ", view_change_label(ch), size,
                       ch->host == VIEW_HOST_SAME ? "-" : view_host_state_to_string(ch->host));
                print_change("", ch, ch->type == S_IFDIR ? "/\n" : "\n");
        }
        printf("\n%zu pending change%s in Domain %s, kept from the host. Review: lazaretctl changes --diff PATH; "
               "then lazaretctl changes apply|discard PATH... (with the Domain stopped).\n",
               l->n, l->n == 1 ? "" : "s", c->domain->id);
        return 0;
}

/* ------------------------------------------------------------ --ignored */

static int scan_ignored(const ViewContext *c, ViewIgnored *ret) {
        _cleanup_ignore_list_ IgnoreList *excludes = NULL;
        _cleanup_free_ char *source = NULL, *text = NULL, *error = NULL;
        size_t len;
        int r;

        r = host_git_excludes_source(&source, &error);
        if (r >= 0)
                r = view_excludes_text(source, &text, &len, &error);
        if (r >= 0)
                r = ignore_list_parse(text, len, "", "core.excludesFile", &excludes, &error);
        if (r >= 0)
                r = view_ignored_scan(c->workspace_fd, excludes, c->domain->profile->shared_ignored, ret, &error);
        if (r < 0)
                fprintf(stderr, "%s\n", error ?: strerror(-r));
        return r;
}

static int ignored_json(const ViewContext *c, const ViewIgnored *l, bool isolate) {
        _cleanup_json_ json_object *o = json_object_new_object(), *a = json_object_new_array();
        int r = o && a ? 0 : -ENOMEM;

        if (r >= 0)
                r = json_add_string(o, "domain_id", c->domain->id);
        if (r >= 0)
                r = json_add_bool(o, "isolate_ignored", isolate);
        for (size_t i = 0; r >= 0 && i < l->n; i++) {
                _cleanup_json_ json_object *e = json_object_new_object();

                r = e ? json_add_string(e, "path", l->paths[i].path) : -ENOMEM;
                if (r >= 0)
                        r = json_add_string(e, "type", l->paths[i].directory ? "directory" : "file");
                if (r >= 0)
                        r = json_add_uint64(e, "size", l->paths[i].size);
                if (r >= 0)
                        r = json_add_bool(e, "shared_read_only", l->paths[i].shared);
                if (r >= 0)
                        r = json_append(a, TAKE_PTR(e));
        }
        if (r >= 0)
                r = json_add_bool(o, "truncated", l->truncated);
        if (r >= 0)
                r = json_add(o, "ignored", TAKE_PTR(a));
        return r < 0 ? ctl_json_failed(r) : ctl_print_json(o);
}

/* The host paths that ignored state shadows: names and sizes, never contents. */
static int list_ignored(const ViewContext *c) {
        _cleanup_(view_ignored_done) ViewIgnored l = {};
        bool isolate = c->domain->profile->isolate_ignored;
        int r;

        if (isolate) {
                r = scan_ignored(c, &l);
                if (r < 0)
                        return r;
        }
        if (arg_json)
                return ignored_json(c, &l, isolate);
        if (!isolate) {
                printf("Ignored paths are shared with the sandbox in Domain %s (isolate_ignored: false).\n",
                       c->domain->id);
                return 0;
        }
        if (l.n == 0) {
                printf("No host paths are shadowed by ignored state in Domain %s.\n", c->domain->id);
                return 0;
        }
        printf("%10s  %s\n", "SIZE", "PATH");
        for (size_t i = 0; i < l.n; i++) {
                printf("%10llu  ", (unsigned long long) l.paths[i].size);
                print_escaped("", l.paths[i].path, l.paths[i].directory ? "/" : "");
                printf("%s\n", l.paths[i].shared ? "  (shared read-only)" : "");
        }
        printf("\n%zu host path%s%s ignored by git: invisible inside Domain %s, which keeps its own copies in "
               "ignored state.\n", l.n, l.n == 1 ? "" : "s", l.truncated ? " (and more)" : "", c->domain->id);
        return 0;
}

/* ------------------------------------------------------------ --diff */

/* A text file the diff may show: regular, at most DIFF_MAX bytes, no NUL byte. */
static int judge_text(int fd, const char *side, const char *path) {
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode)) {
                fprintf(stderr, "The %s entry of %s is not a regular file; --diff shows text files only.\n", side, path);
                return -EINVAL;
        }
        if (st.st_size > DIFF_MAX) {
                fprintf(stderr, "The %s file %s is larger than %d bytes; --diff shows small text files only.\n", side,
                        path, DIFF_MAX);
                return -EFBIG;
        }
        r = read_full_fd(fd, DIFF_MAX, &buf, &n);
        if (r < 0)
                return r;
        if (memchr(buf, 0, n)) {
                fprintf(stderr, "The %s file %s is binary; --diff shows text files only.\n", side, path);
                return -EINVAL;
        }
        return lseek(fd, 0, SEEK_SET) < 0 ? -errno : 0;
}

/* One line of diff output for the terminal: control bytes but tab shown as \xNN. */
static void put_diff_line(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char) s[i];
                if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
                        printf("\\x%02x", ch);
                else
                        putchar(ch);
        }
        putchar('\n');
}

/* Exactly one change: the path as listed ("./" before it and "/" after it aside), its shown name in *ret_shown. */
static int find_change(const ViewChanges *l, const char *path, const ViewChange **ret, char **ret_shown) {
        _cleanup_free_ char *shown = NULL;
        const ViewChange *ch = NULL;

        while (startswith(path, "./"))
                path += 2;
        for (size_t i = 0, len = strlen(path); i < l->n; i++) {
                _cleanup_free_ char *s = view_change_shown(&l->changes[i]);
                if (!s)
                        return -ENOMEM;
                if (view_change_named(&l->changes[i], path) && strlen(s) <= len) {
                        ch = &l->changes[i];
                        free(shown);
                        shown = TAKE_PTR(s);
                }
        }
        if (!ch) {
                _cleanup_free_ char *e = escape_control(path);
                fprintf(stderr, "No pending change at %s; see lazaretctl changes.\n", strna(e));
                return -ENOENT;
        }
        *ret = ch;
        *ret_shown = TAKE_PTR(shown);
        return 0;
}

/* Both sides by fd, never following a symbolic link, each judged text; a missing side is /dev/null. */
static int open_sides(const ViewContext *c, const ViewChange *ch, const char *shown, int *ret_hfd, int *ret_sfd) {
        _cleanup_close_ int hfd = -EBADF, sfd = -EBADF;
        int r;

        if (ch->kind != VIEW_CHANGE_DELETED) {
                sfd = openat_beneath(state_fd_of(c, ch), ch->path, O_RDONLY | O_NOCTTY, 0, false);
                if (sfd < 0)
                        return sfd == -ELOOP ? (fprintf(stderr, "%s is a symbolic link; --diff shows text files only.\n",
                                                        shown), -EINVAL) : sfd;
                r = judge_text(sfd, "sandbox's", shown);
                if (r < 0)
                        return r;
        }
        hfd = openat_beneath(host_fd_of(c, ch), ch->path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, false);
        if (hfd < 0 && hfd != -ENOENT) {
                fprintf(stderr, "Cannot open the host's %s: %s\n", shown, strerror(-hfd));
                return hfd;
        }
        if (hfd >= 0) {
                r = judge_text(hfd, "host's", shown);
                if (r < 0)
                        return r;
        }
        if (hfd < 0)
                hfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (sfd < 0)
                sfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (hfd < 0 || sfd < 0)
                return -errno;
        *ret_hfd = TAKE_FD(hfd);
        *ret_sfd = TAKE_FD(sfd);
        return 0;
}

/* diff -u of the two sides, labelled host/... and sandbox/..., its output shown line by line (put_diff_line()). */
static int print_diff(const ViewChange *ch, const char *shown, int hfd, int sfd) {
        _cleanup_close_ int pipe_r = -EBADF, pipe_w = -EBADF;
        _cleanup_free_ char *diff = NULL, *la = NULL, *lb = NULL, *out = NULL;
        int p[2], status, r;
        pid_t pid;
        size_t n;

        r = find_program("diff", &diff);
        if (r < 0) {
                fprintf(stderr, "Cannot find diff in the system path: %s\n", strerror(-r));
                return r;
        }
        if (asprintf(&la, "host%s%s", ch->root ? "" : "/", shown) < 0 ||
            asprintf(&lb, "sandbox%s%s", ch->root ? "" : "/", shown) < 0)
                return -ENOMEM;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pipe_r = p[0];
        pipe_w = p[1];
        {
                SpawnOptions o = SPAWN_OPTIONS_INIT;
                const int fds[] = { hfd, sfd };
                char *argv[] = { diff, (char *) "-u", (char *) "--label", la, (char *) "--label", lb,
                                 (char *) "/dev/fd/3", (char *) "/dev/fd/4", NULL };

                o.argv = argv;
                o.stdio[1] = pipe_w;
                o.stdio[2] = STDERR_FILENO;
                o.pass_fds = fds;
                o.n_pass_fds = ELEMENTSOF(fds);
                o.die_with_parent = true;
                r = spawn(&o, &pid, NULL);
                if (r < 0) {
                        fprintf(stderr, "Cannot run %s: %s\n", diff, strerror(-r));
                        return r;
                }
        }
        pipe_w = safe_close(pipe_w);
        r = read_full_fd(pipe_r, 4 * DIFF_MAX, &out, &n);
        pipe_r = safe_close(pipe_r);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (r < 0) {
                fprintf(stderr, "Cannot read the output of diff: %s\n", strerror(-r));
                return r;
        }
        for (const char *s = out, *e; s < out + n; s = e + 1) {
                e = memchr(s, '\n', (size_t) (out + n - s));
                if (!e)
                        e = out + n;
                put_diff_line(s, (size_t) (e - s));
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) {
                fprintf(stderr, "diff failed.\n");
                return -EIO;
        }
        return 0;
}

static int show_diff(const ViewContext *c, const ViewChanges *l, const char *path) {
        _cleanup_close_ int hfd = -EBADF, sfd = -EBADF;
        _cleanup_free_ char *shown = NULL;
        const ViewChange *ch;
        int r;

        r = find_change(l, path, &ch, &shown);
        if (r < 0)
                return r;
        if (ch->type == S_IFDIR) {
                fprintf(stderr, "%s is a directory; --diff shows one text file.\n", shown);
                return -EISDIR;
        }
        r = open_sides(c, ch, shown, &hfd, &sfd);
        if (r < 0)
                return r;
        return print_diff(ch, shown, hfd, sfd);
}

/* ------------------------------------------------------------ apply, discard */

static int apply_or_discard(const ViewContext *c, const ViewChanges *l, bool apply, char **paths) {
        _cleanup_free_ bool *selected = NULL;
        size_t n_selected = 0, n_refused = 0;

        if (!arg_all && strv_is_empty(paths)) {
                fprintf(stderr, "Name the paths to %s, or --all.\n", apply ? "apply" : "discard");
                return -EINVAL;
        }
        if (arg_all && !strv_is_empty(paths)) {
                fprintf(stderr, "Either --all or paths, not both.\n");
                return -EINVAL;
        }
        selected = calloc(l->n ?: 1, sizeof(bool));
        if (!selected)
                return -ENOMEM;
        STRV_FOREACH(p, paths) {
                bool any = false;
                for (size_t i = 0; i < l->n; i++)
                        if (view_change_named(&l->changes[i], *p))
                                selected[i] = any = true;
                if (!any) {
                        _cleanup_free_ char *e = escape_control(*p);
                        fprintf(stderr, "No pending change at %s; see lazaretctl changes. Nothing was changed.\n",
                                strna(e));
                        return -ENOENT;
                }
        }
        for (size_t i = 0; i < l->n; i++) {
                if (arg_all) {
                        /* A git-control entry is applied only when it is named. */
                        selected[i] = !(apply && l->changes[i].git_control);
                        if (!selected[i])
                                print_change("Skipped git control ", &l->changes[i],
                                              " (name it, with --git-control, to apply it).\n");
                }
                n_selected += selected[i];
        }

        if (apply)
                for (size_t i = 0; i < l->n; i++) {
                        _cleanup_free_ char *error = NULL, *e = NULL;
                        if (!selected[i] || view_change_check(&l->changes[i], arg_force, arg_git_control, &error) >= 0)
                                continue;
                        e = escape_control(error);
                        fprintf(stderr, "Refused: %s.\n", strna(e));
                        n_refused++;
                }
        if (n_refused > 0) {
                fprintf(stderr, "Nothing was changed.\n");
                return -EPERM;
        }

        for (size_t i = 0; i < l->n; i++) {
                _cleanup_free_ char *error = NULL;
                int r;

                if (!selected[i])
                        continue;
                r = apply ? view_change_apply(state_fd_of(c, &l->changes[i]), host_fd_of(c, &l->changes[i]),
                                              &l->changes[i], arg_force, &error)
                          : view_change_discard(state_fd_of(c, &l->changes[i]), &l->changes[i], &error);
                if (r < 0) {
                        _cleanup_free_ char *e = escape_control(error ?: strerror(-r));
                        fprintf(stderr, "%s: %s.\n", apply ? "Apply failed" : "Discard failed", strna(e));
                        return r;
                }
                if (!arg_json)
                        print_change(apply ? "Applied " : "Discarded ", &l->changes[i], "\n");
        }
        if (arg_json)
                printf("{\"domain_id\":\"%s\",\"%s\":%zu}\n", c->domain->id, apply ? "applied" : "discarded", n_selected);
        return 0;
}

int verb_changes(int argc, char *argv[], const Config *config) {
        _cleanup_(view_context_done) ViewContext c = VIEW_CONTEXT_NULL_FIELDS;
        _cleanup_(view_changes_done) ViewChanges l = {};
        const char *sub = argc > 1 ? argv[1] : NULL;
        bool apply = streq_ptr(sub, "apply"), discard = streq_ptr(sub, "discard"),
             accept = streq_ptr(sub, "accept-commits");
        int r;

        if (sub && !apply && !discard && !accept) {
                _cleanup_free_ char *e = escape_control(sub);
                fprintf(stderr, "Unknown \"changes\" command \"%s\": apply, discard, accept-commits, or none to list.\n",
                        strna(e));
                return -EINVAL;
        }
        if (accept && argc > 2) {
                fprintf(stderr, "\"changes accept-commits\" takes no argument.\n");
                return -EINVAL;
        }
        if (!sub && (arg_all || arg_force || arg_git_control)) {
                fprintf(stderr, "--all, --force and --git-control go with \"changes apply\" or \"changes discard\".\n");
                return -EINVAL;
        }
        if ((sub || arg_diff) && arg_ignored) {
                fprintf(stderr, "--ignored goes with \"changes\" alone.\n");
                return -EINVAL;
        }
        if (sub && arg_diff) {
                fprintf(stderr, "--diff goes with \"changes\" alone.\n");
                return -EINVAL;
        }
        if (accept && (arg_all || arg_force || arg_git_control)) {
                fprintf(stderr, "--all, --force and --git-control go with \"changes apply\" or \"changes discard\".\n");
                return -EINVAL;
        }
        if (discard && (arg_force || arg_git_control)) {
                fprintf(stderr, "--force and --git-control go with \"changes apply\".\n");
                return -EINVAL;
        }
        r = view_context_open(config, arg_profile, arg_workspace, apply || discard, &c);
        if (r < 0)
                return r;
        if (arg_ignored)
                return list_ignored(&c);
        if (accept)
                return accept_commits(&c);
        r = scan(&c, &l);
        if (r < 0)
                return r;
        if (arg_diff)
                return show_diff(&c, &l, arg_diff);
        if (apply || discard)
                return apply_or_discard(&c, &l, apply, argv + 2);
        return list_changes(&c, &l);
}

/* ------------------------------------------------------------ status */

/* The names protected at any depth: the built-in ones the profile kept, then the profile's own. */
static int effective_names(const ViewContext *c, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        for (const char *const *p = view_integration_names(); *p; p++)
                if (!strv_contains((const char *const *) c->unprotect, *p)) {
                        r = strv_extend(&l, *p);
                        if (r < 0)
                                return r;
                }
        r = strv_extend_strv(&l, c->names);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

/* The profile's "/PATH" entries: the view's paths beyond the derived ones. */
static int profile_paths(const ViewContext *c, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        STRV_FOREACH(e, c->domain->profile->protected_paths)
                if ((*e)[0] == '/') {
                        r = strv_extend(&l, *e);
                        if (r < 0)
                                return r;
                }
        *ret = TAKE_PTR(l);
        return 0;
}

/*
 * The paths the running view was given as the ones the host's hooks name
 * (bundle.c, add_view(): "hook_named" in the workspace view's arguments),
 * from the Domain's MountPlan property in props: 1 and *ret when found, 0
 * when there is no such plan (the Domain does not run).
 */
static int running_hook_named(json_object *props, char ***ret) {
        _cleanup_json_ json_object *args = NULL;
        _cleanup_strv_free_ char **l = NULL;
        json_object *plan, *entries, *data = NULL, *named;

        if (!props || !json_object_object_get_ex(props, "MountPlan", &plan) ||
            !json_object_object_get_ex(plan, "entries", &entries) || !json_object_is_type(entries, json_type_array))
                return 0;
        for (size_t i = 0; i < json_object_array_length(entries); i++) {
                json_object *e = json_object_array_get_idx(entries, i), *k, *d;

                if (json_object_object_get_ex(e, "kind", &k) && streq_ptr(json_object_get_string(k), "view") &&
                    json_object_object_get_ex(e, "destination", &d) &&
                    streq_ptr(json_object_get_string(d), "/workspace") && json_object_object_get_ex(e, "data", &data))
                        break;
                data = NULL;
        }
        if (!data || !json_object_is_type(data, json_type_string) ||
            json_parse_strict(json_object_get_string(data), strlen(json_object_get_string(data)), &args, NULL) < 0)
                return 0;
        if (!json_object_object_get_ex(args, "hook_named", &named) || !json_object_is_type(named, json_type_array))
                return 0;       /* a coordinator before the list */
        for (size_t i = 0; i < json_object_array_length(named); i++) {
                json_object *p = json_object_array_get_idx(named, i);

                if (json_object_is_type(p, json_type_string) && strv_extend(&l, json_object_get_string(p)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 1;
}

/* What the hooks name now that the running view does not protect: protected from the Domain's next start. */
static int hook_named_pending(char *const *now, char *const *running, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;

        for (char *const *p = now; p && *p; p++)
                if (!strv_contains((const char *const *) running, *p) && strv_extend(&l, *p) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

static int status_json(const ViewContext *c, size_t n_pending, char *const *ops, char *const *host, char *const *hooks,
                       char *const *hook_named, char *const *hook_restart, const CommitReport *rep, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_strv_free_ char **names = NULL, **paths = NULL;
        int r = o ? 0 : -ENOMEM;

        if (r >= 0)
                r = effective_names(c, &names);
        if (r >= 0)
                r = profile_paths(c, &paths);
        if (r >= 0)
                r = json_add_strv(o, "protected_names", (const char *const *) names);
        if (r >= 0)
                r = json_add_strv(o, "unprotected_names", (const char *const *) c->unprotect);
        if (r >= 0)
                r = json_add_strv(o, "protected_paths", (const char *const *) paths);
        if (r >= 0)
                r = json_add_strv(o, "protected_git_paths", (const char *const *) c->protect);
        if (r >= 0)
                r = json_add_strv(o, "protected_hook_paths", (const char *const *) (hook_named ?: (char *[]) { NULL }));
        if (r >= 0)
                r = json_add_strv(o, "hook_paths_after_restart",
                                  (const char *const *) (hook_restart ?: (char *[]) { NULL }));
        if (r >= 0)
                r = json_add_uint64(o, "protected_commits", rep->n_commits);
        if (r >= 0)
                r = json_add_string(o, "git_dirs", "control files protected");
        if (r >= 0)
                r = json_add_string(o, "top_git_config", "read-only");
        if (r >= 0)
                r = json_add_string(o, "checkout", c->checkout_key);
        if (r >= 0)
                r = json_add_uint64(o, "set_aside_checkouts", c->set_aside);
        if (r >= 0 && c->linked.root) {
                /* A linked worktree's or a submodule's git dir, served by the git dir view. */
                _cleanup_json_ json_object *g = json_object_new_object();
                r = g ? json_add_string(g, "served", c->linked.root) : -ENOMEM;
                if (r >= 0)
                        r = json_add_string(g, "git_dir", c->linked.git_dir);
                if (r >= 0)
                        r = json_add_strv(g, "protected", (const char *const *) c->linked.protect);
                if (r >= 0)
                        r = json_add(o, "git_dir_view", TAKE_PTR(g));
        }
        if (r >= 0)
                r = json_add_strv(o, "git_in_progress", (const char *const *) (ops ?: (char *[]) { NULL }));
        if (r >= 0)
                r = json_add_strv(o, "git_kept_on_host", (const char *const *) (host ?: (char *[]) { NULL }));
        if (r >= 0)
                r = json_add_strv(o, "host_hooks_run_project", (const char *const *) (hooks ?: (char *[]) { NULL }));
        if (r >= 0)
                r = json_add_uint64(o, "pending_changes", n_pending);
        if (r >= 0)
                r = json_add_bool(o, "isolate_ignored", c->domain->profile->isolate_ignored);
        if (r >= 0)
                r = json_add_strv(o, "shared_ignored",
                                  (const char *const *) (c->domain->profile->shared_ignored ?: (char *[]) { NULL }));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int changes_status(const Config *config, const char *id, json_object *o, json_object *running) {
        _cleanup_(view_context_done) ViewContext c = VIEW_CONTEXT_NULL_FIELDS;
        _cleanup_(view_changes_done) ViewChanges l = {};
        _cleanup_(domain_record_done) DomainRecord rec = {};
        _cleanup_(commit_report_done) CommitReport rep = {};
        _cleanup_strv_free_ char **ops = NULL, **host = NULL, **hooks = NULL, **run_named = NULL, **restart = NULL;
        bool is_running;
        _cleanup_free_ char *error = NULL, *notice = NULL;
        json_object *v = NULL;
        int r;

        if (id) {
                r = domain_record_load(config->data_root, id, &rec, &error);
                if (r < 0)
                        return 0;       /* no record here: nothing to say about its view */
        }
        r = view_context_open(config, id ? rec.profile : arg_profile, id ? rec.workspace : arg_workspace, false, &c);
        if (r >= 0)
                r = scan(&c, &l);
        if (r >= 0)
                r = git_kept(&c, &ops, &host);
        if (r >= 0)
                r = host_hooks(&c, &hooks);
        if (r < 0)
                return 0;               /* printed why */
        /* Issue 32: what the running view protects as the hooks' paths is what the coordinator gave it. */
        r = running_hook_named(running, &run_named);
        if (r < 0)
                return r;
        is_running = r > 0;
        if (is_running) {
                r = hook_named_pending(c.hook_named, run_named, &restart);
                if (r < 0)
                        return r;
        }
        r = protected_commits(&c, &rep);
        if (r < 0)
                return r;
        if (o) {
                r = status_json(&c, l.n, ops, host, hooks, is_running ? run_named : c.hook_named, restart, &rep, &v);
                if (r >= 0)
                        r = json_add(o, "View", v);
                return r;
        }
        _cleanup_strv_free_ char **names = NULL, **paths = NULL;
        size_t col;
        r = effective_names(&c, &names);
        if (r >= 0)
                r = profile_paths(&c, &paths);
        if (r < 0)
                return r;
        printf("  %-16sat any depth, writes kept in Domain state:", "View:");
        col = 18 + strlen("at any depth, writes kept in Domain state:");
        STRV_FOREACH(p, names) {
                /* Lines of at most about 100 columns, indented under the heading. */
                if (col + 1 + strlen(*p) > 100) {
                        printf("\n%18s", "");
                        col = 18;
                } else {
                        putchar(' ');
                        col++;
                }
                print_escaped("", *p, "");
                col += strlen(*p);
        }
        printf("\n");
        if (!strv_is_empty(c.unprotect)) {
                printf("  %-16sshared by the profile:", "");
                STRV_FOREACH(p, c.unprotect)
                        print_escaped(" ", *p, "");
                printf("\n");
        }
        STRV_FOREACH(p, paths)
                print_escaped("                  protected path: ", *p + 1, "\n");
        printf("  %-16sgit dirs: control files protected (config, hooks, commondir, gitdir, HEAD outside git's "
               "places); .git/config read-only\n", "");
        if (strv_is_empty(c.protect))
                printf("  %-16score.hooksPath, included git config: none inside the workspace\n", "");
        STRV_FOREACH(p, c.protect)
                print_escaped("                  git configuration names: ", *p, "\n");
        STRV_FOREACH(p, is_running ? run_named : c.hook_named)
                print_escaped("                  the host's hooks name: ", *p, "\n");
        if (!strv_is_empty(restart)) {
                printf("  %-16srestart to protect:", "");
                STRV_FOREACH(p, restart)
                        print_escaped(" ", *p, "");
                printf(" (the hooks name them now; the running view protects what they named at its start: "
                       "lazaretctl stop, then launch)\n");
        } else if (!strv_is_empty(c.hook_named))
                printf("  %-16s(read from the hooks when the Domain starts; after a hook changes, restart the Domain "
                       "to protect what it names)\n", "");
        if (c.linked.root) {
                print_escaped("                  git dir view: ", c.linked.root, " at its host path (config, commondir, "
                              "gitdir read-only; hooks protected)\n");
                STRV_FOREACH(p, c.linked.protect)
                        print_escaped("                  git dir view protects: ", *p, "\n");
        }
        printf("  %-16sremotes/, branches/, sequencer state, alternates, info/grafts: kept in Domain state\n", "");
        printf("  %-16s%s", "Checkout:", c.checkout_key);
        if (c.set_aside)
                printf("; the state of %u other checkouts at this path is set aside (lazaretctl state list)", c.set_aside);
        printf("\n");
        printf("  %-16s%zu%s\n", "Pending:", l.n, l.n > 0 ? " (lazaretctl changes)" : "");
        if (rep.n_commits > 0) {
                char since[64];

                format_since(rep.since, since);
                printf("  %-16s%zu made since %s change protected paths (lazaretctl changes)\n", "Commits:",
                       rep.n_commits, since);
        }
        if (rep.error)
                print_escaped("  Commits:        cannot be checked: ", rep.error, "\n");
        STRV_FOREACH(p, ops)
                print_escaped("  Git:            ", *p, "\n");
        if (host) {
                r = view_git_kept_notice(host, &notice);
                if (r < 0)
                        return r;
                print_escaped("  Git:            ", notice, "\n");
        }
        STRV_FOREACH(p, hooks)
                print_escaped("  Hooks:          ", *p, "\n");
        if (c.domain->profile->isolate_ignored) {
                printf("  %-16sisolated: untracked git-ignored paths live in Domain state "
                       "(lazaretctl changes --ignored)\n", "Ignored:");
                STRV_FOREACH(p, c.domain->profile->shared_ignored)
                        print_escaped("                  shared read-only: ", *p, "\n");
        } else
                printf("  %-16sshared with the host (isolate_ignored: false)\n", "Ignored:");
        return 0;
}

char *changes_launch_notice(const Config *config) {
        _cleanup_(view_context_done) ViewContext c = VIEW_CONTEXT_NULL_FIELDS;
        _cleanup_(commit_report_done) CommitReport rep = {};
        _cleanup_free_ char *error_line = NULL, *commits_line = NULL;
        char since[64], *text = NULL;

        if (view_context_open(config, arg_profile, arg_workspace, false, &c) < 0)
                return NULL;    /* printed why */
        if (protected_commits(&c, &rep) < 0)
                return NULL;
        if (rep.error) {
                _cleanup_free_ char *e = escape_control(rep.error);
                if (asprintf(&error_line, "lazaretctl: git: cannot check the commits made inside: %s\n",
                             e ?: "(unprintable)") < 0)
                        return NULL;
        }
        if (rep.n_commits > 0) {
                _cleanup_free_ char *path = escape_control(rep.findings[0].path), *ref = escape_control(rep.findings[0].ref);

                format_since(rep.since, since);
                if (asprintf(&commits_line,
                             "lazaretctl: git: %zu commit%s made since %s change%s protected paths (%.12s on %s: %s%s); a "
                             "host checkout, reset --hard or merge of the ref writes them; review: lazaretctl changes (then "
                             "lazaretctl changes accept-commits)\n",
                             rep.n_commits, rep.n_commits == 1 ? "" : "s", since, rep.n_commits == 1 ? "s" : "",
                             rep.findings[0].oid, ref ?: "?", path ?: "?", rep.n > 1 ? ", ..." : "") < 0)
                        return NULL;
        }
        if (!error_line && !commits_line)
                return NULL;
        if (asprintf(&text, "%s%s", strempty(error_line), strempty(commits_line)) < 0)
                return NULL;
        return text;
}
