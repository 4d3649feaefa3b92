/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "git-sentry.h"
#include "macro.h"
#include "strv.h"

/* ------------------------------------------------------------ the parser */

static GitConfigPaths parse_ok(const char *text) {
        GitConfigPaths p = {};
        _cleanup_free_ char *error = NULL;
        int r = git_config_parse_paths(text, &p, &error);
        cr_assert_eq(r, 0, "parse failed (%d): %s\n%s", r, error ? error : "", text);
        return p;
}

static void parse_bad(const char *text, const char *want) {
        GitConfigPaths p = {};
        _cleanup_free_ char *error = NULL;
        cr_assert_eq(git_config_parse_paths(text, &p, &error), -EBADMSG, "accepted: %s", text);
        cr_assert_not_null(error);
        cr_assert(strstr(error, want), "message '%s' lacks '%s'", error, want);
        cr_assert_null(p.hooks_paths);
}

Test(git_config, hooks_path_forms) {
        GitConfigPaths p = parse_ok("[core]\n\trepositoryformatversion = 0\n\thooksPath = .husky\n");
        cr_assert_eq(strv_length(p.hooks_paths), 1);
        cr_assert_str_eq(p.hooks_paths[0], ".husky");
        git_config_paths_done(&p);

        /* Case-insensitive section and key, quotes, escapes, comments, a key on the header's line. */
        p = parse_ok("# c\n[CORE] HOOKSPATH = \"a b\\\\c\" ; comment\n[core]\nhookspath=\"x\"y # z\n");
        cr_assert_eq(strv_length(p.hooks_paths), 2);
        cr_assert_str_eq(p.hooks_paths[0], "a b\\c");
        cr_assert_str_eq(p.hooks_paths[1], "xy");
        git_config_paths_done(&p);

        /* Continuation lines, trailing blanks dropped outside quotes, kept inside. */
        p = parse_ok("[core]\n  hooksPath = .hu\\\nsky  \n[core]\n hooksPath = \"sp \"\n");
        cr_assert_str_eq(p.hooks_paths[0], ".husky");
        cr_assert_str_eq(p.hooks_paths[1], "sp ");
        git_config_paths_done(&p);

        /* Not core.hooksPath: other sections, subsections, other keys. */
        p = parse_ok("[core \"x\"]\nhooksPath = no\n[hooks]\npath = no\n[core.sub]\nhooksPath = no\n[core]\nhooksPathx = no\n");
        cr_assert_null(p.hooks_paths);
        git_config_paths_done(&p);

        p = parse_ok("");
        cr_assert_null(p.hooks_paths);
        cr_assert_null(p.include_paths);
}

Test(git_config, includes) {
        GitConfigPaths p = parse_ok("[include]\n\tpath = ../x.cfg\n[includeIf \"gitdir:~/w/\"]\n\tpath = /etc/y\n"
                                    "[includeIf]\npath = not-a-conditional-include\n");
        cr_assert_eq(strv_length(p.include_paths), 2);
        cr_assert_str_eq(p.include_paths[0], "../x.cfg");
        cr_assert_str_eq(p.include_paths[1], "/etc/y");
        git_config_paths_done(&p);
}

Test(git_config, malformed) {
        parse_bad("hooksPath = x\n", "line 1");
        parse_bad("[core\nhooksPath = x\n", "line 1");
        parse_bad("[core]\n\n hooksPath x\n", "line 3");
        parse_bad("[core]\nhooksPath = \"x\n", "unterminated quote");
        parse_bad("[core]\nhooksPath = \\q\n", "bad escape");
        parse_bad("[core]\nhooksPath\n", "needs a value");
        parse_bad("[core \"x]\n", "unterminated subsection");
        parse_bad("[]\n", "section name");
        parse_bad("[core]\n=x\n", "line 2");
}

/* ------------------------------------------------------------ paths */

static int in_ws(const char *v, char **rel) {
        return git_path_in_workspace(v, "/w/ws", "/h", "/w/ws", NULL, rel);
}

Test(git_path, inside_and_outside) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;

        cr_assert_eq(in_ws(".husky", &a), 1);
        cr_assert_str_eq(a, ".husky");
        cr_assert_eq(in_ws("./x//y/", &b), 1);
        cr_assert_str_eq(b, "x/y");
        cr_assert_eq(in_ws("/w/ws/.git/hooks", &c), 1);
        cr_assert_str_eq(c, ".git/hooks");
        cr_assert_eq(in_ws(".", &d), 1);
        cr_assert_str_eq(d, "");
        cr_assert_eq(in_ws("../ws/h", &e), 1);   /* out of the root and back: the root is not the sandbox's */
        cr_assert_str_eq(e, "h");

        cr_assert_eq(in_ws("/etc/hooks", NULL), 0);
        cr_assert_eq(in_ws("/w/wsx", NULL), 0);
        cr_assert_eq(in_ws("../other", NULL), 0);
        cr_assert_eq(in_ws("~/hooks", NULL), 0);
        cr_assert_eq(git_path_in_workspace("~/ws/h", "/", "/w", "/w/ws", NULL, NULL), 1);
}

Test(git_path, absolute_form) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *rel = NULL;

        /* Outside: the simplified absolute path, for the host symlink check. */
        cr_assert_eq(git_path_in_workspace("../link/./x", "/w/ws", "/h", "/w/ws", &a, &rel), 0);
        cr_assert_str_eq(a, "/w/link/x");
        cr_assert_null(rel);
        cr_assert_eq(git_path_in_workspace("~//hooks", "/w/ws", "/h", "/w/ws", &b, NULL), 0);
        cr_assert_str_eq(b, "/h/hooks");
        cr_assert_eq(git_path_in_workspace("x/y", "/w/ws", "/h", "/w/ws", &c, &rel), 1);
        cr_assert_str_eq(c, "/w/ws/x/y");
        cr_assert_str_eq(rel, "x/y");
}

Test(git_path, refused) {
        cr_assert_eq(in_ws("a/../../x", NULL), -ELOOP);
        cr_assert_eq(in_ws("a/../b", NULL), -ELOOP);
        cr_assert_eq(in_ws("~other/x", NULL), -EINVAL);
        cr_assert_eq(in_ws("", NULL), -EINVAL);
        cr_assert_eq(git_path_in_workspace("~/x", "/", NULL, "/w/ws", NULL, NULL), -EINVAL);
}

/* ------------------------------------------------------------ the mounts */

static char *top, *ws, *dom, *home;

static char *sub(const char *rel) {
        char *p;
        cr_assert(asprintf(&p, "%s/%s", top, rel) > 0);
        return p;
}

_printf_(1, 2) static void sh(const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL;
        va_list ap;

        va_start(ap, fmt);
        cr_assert(vasprintf(&cmd, fmt, ap) > 0);
        va_end(ap);
        cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void setup(void) {
        char tmpl[] = "/tmp/lazaret-unit-git-sentry-XXXXXX";

        cr_assert_not_null(mkdtemp(tmpl));
        top = realpath(tmpl, NULL);
        ws = sub("ws");
        dom = sub("domain");
        home = sub("home");
        sh("mkdir -p '%1$s/ws/.git/hooks' '%1$s/domain' '%1$s/home' && chmod 700 '%1$s/domain' && "
           "printf '[core]\\n\\tbare = false\\n' > '%1$s/ws/.git/config'", top);
}

static void teardown(void) {
        sh("rm -rf '%s'", top);
        free(top);
        free(ws);
        free(dom);
        free(home);
}

/* What the Git Sentry added to a plan that holds the base mounts and the workspace. */
typedef struct Sentry {
        MountPlan plan;
        size_t n_mounts;
        const MountEntry *mounts;
} Sentry;

static void sentry_done(Sentry *s) {
        mount_plan_done(&s->plan);
        s->n_mounts = 0;
        s->mounts = NULL;
}

static int prepare(Sentry *s, char **error, const char *const *globals) {
        _cleanup_close_ int wfd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
        size_t first;
        int r;

        cr_assert(wfd >= 0);
        cr_assert_eq(mount_plan_init(&s->plan), 0);
        cr_assert_eq(mount_plan_add_bind_fd(&s->plan, MOUNT_PART_WORKSPACE, "/workspace", ws, wfd, false, 0, NULL), 0);
        first = s->plan.n_entries;
        r = git_sentry_plan(&(GitSentryParams) { .workspace = ws, .workspace_fd = wfd, .sandbox_workspace = "/workspace",
                                                 .domain_dir = dom, .home = home, .global_configs = globals },
                            &s->plan, error);
        if (r < 0)
                cr_assert_eq(s->plan.n_entries, first, "a failed Git Sentry left mounts in the plan");
        s->n_mounts = s->plan.n_entries - first;
        s->mounts = s->plan.entries + first;
        return r;
}

static void write_config(const char *text) {
        _cleanup_free_ char *p = sub("ws/.git/config");
        FILE *f = fopen(p, "we");
        cr_assert_not_null(f);
        fputs(text, f);
        fclose(f);
}

static const MountEntry *find(const Sentry *s, const char *dest, size_t *ret_index) {
        for (size_t i = 0; i < s->n_mounts; i++)
                if (strcmp(s->mounts[i].destination, dest) == 0) {
                        if (ret_index)
                                *ret_index = i;
                        return &s->mounts[i];
                }
        return NULL;
}

/* The identity the plan recorded is that of what the Sentry judged. */
static void assert_identity(const MountEntry *m) {
        struct stat st;

        cr_assert_eq(m->kind, MOUNT_BIND);
        cr_assert_eq(m->part, MOUNT_PART_GIT_SENTRY);
        cr_assert_eq(lstat(m->source, &st), 0, "%s", m->source);
        cr_assert_eq(m->id.dev, (uint64_t) st.st_dev, "%s", m->source);
        cr_assert_eq(m->id.ino, (uint64_t) st.st_ino, "%s", m->source);
        cr_assert_eq(m->id.directory, !!S_ISDIR(st.st_mode), "%s", m->source);
}

static void refused(const char *want) {
        _cleanup_(sentry_done) Sentry s = {};
        _cleanup_free_ char *error = NULL;
        cr_assert_eq(prepare(&s, &error, NULL), -EPERM);
        cr_assert_not_null(error);
        cr_assert(strstr(error, want), "message '%s' lacks '%s'", error, want);
        cr_assert_eq(s.n_mounts, 0);
}

Test(git_sentry, basic_layout, .init = setup, .fini = teardown) {
        _cleanup_(sentry_done) Sentry s = {};
        _cleanup_free_ char *error = NULL, *git = sub("ws/.git"), *cfg = sub("ws/.git/config"),
                                  *mask = sub("domain/git-sentry/hooks");
        const MountEntry *m;
        struct stat st;

        cr_assert_eq(prepare(&s, &error, NULL), 0, "%s", error ? error : "");
        cr_assert_eq(s.n_mounts, 3);
        cr_assert_str_eq(s.mounts[0].destination, "/workspace/.git");
        cr_assert_str_eq(s.mounts[0].source, git);
        cr_assert(!s.mounts[0].read_only);
        assert_identity(&s.mounts[0]);
        cr_assert_str_eq(s.mounts[1].destination, "/workspace/.git/config");
        cr_assert_str_eq(s.mounts[1].source, cfg);
        cr_assert(s.mounts[1].read_only);
        assert_identity(&s.mounts[1]);
        m = &s.mounts[2];
        cr_assert_str_eq(m->destination, "/workspace/.git/hooks");
        cr_assert_str_eq(m->source, mask);
        cr_assert(!m->read_only);
        assert_identity(m);
        cr_assert_eq(stat(mask, &st), 0);
        cr_assert(S_ISDIR(st.st_mode));
        cr_assert_eq(st.st_mode & 07777, 0700);
}

Test(git_sentry, missing_hooks_created, .init = setup, .fini = teardown) {
        _cleanup_(sentry_done) Sentry s = {};
        _cleanup_free_ char *error = NULL, *hooks = sub("ws/.git/hooks");
        struct stat st;

        cr_assert_eq(rmdir(hooks), 0);
        cr_assert_eq(prepare(&s, &error, NULL), 0, "%s", error ? error : "");
        cr_assert_eq(lstat(hooks, &st), 0);
        cr_assert(S_ISDIR(st.st_mode));
}

Test(git_sentry, refusals, .init = setup, .fini = teardown) {
        sh("rm -rf '%s/ws/.git'", top);
        refused("git init");
        sh("echo 'gitdir: /elsewhere' > '%s/ws/.git'", top);
        refused("only the workspace view protects");
        sh("rm -f '%1$s/ws/.git' && mkdir '%1$s/real' && ln -s ../real '%1$s/ws/.git'", top);
        refused("not a directory");
        sh("rm -f '%1$s/ws/.git' && mkdir -p '%1$s/ws/.git/hooks'", top);
        refused("config is missing");
        sh("ln -s /etc/gitconfig '%s/ws/.git/config'", top);
        refused("config is missing");
        sh("rm -f '%1$s/ws/.git/config' && touch '%1$s/ws/.git/config' && rmdir '%1$s/ws/.git/hooks' && "
           "ln -s /tmp '%1$s/ws/.git/hooks'", top);
        refused("hooks is not a directory");
}

/* Modes and owners an older Lazaret's sandbox could leave: the line names the repair. */
Test(git_sentry, modes_and_owners_refused, .init = setup, .fini = teardown) {
        sh("chmod 0777 '%s/ws/.git'", top);
        refused("/ws/.git\" is writable by group or others (mode 0777)");
        refused("repair with 'chmod go-w ");
        sh("chmod 0755 '%1$s/ws/.git' && chmod 0666 '%1$s/ws/.git/config'", top);
        refused("/ws/.git/config\" is writable by group or others (mode 0666)");
        sh("chmod 0664 '%s/ws/.git/config'", top);
        refused("/ws/.git/config\" is writable by group or others (mode 0664)");
        sh("chmod 0644 '%1$s/ws/.git/config' && chmod 0757 '%1$s/ws/.git/hooks'", top);
        refused("/ws/.git/hooks\" is writable by group or others (mode 0757)");
        sh("chmod 0755 '%s/ws/.git/hooks'", top);
        /* A foreign owner needs root to make; a subordinate ID is what the sandbox left. */
        if (geteuid() == 0) {
                sh("chown 100999 '%s/ws/.git/config'", top);
                refused("/ws/.git/config\" is owned by UID 100999, not by you");
                refused("'lazaretctl unshare -- chown -R 0:0 ");
                sh("chown 0 '%1$s/ws/.git/config' && chown -h 100999 '%1$s/ws/.git'", top);
                refused("/ws/.git\" is owned by UID 100999");
                sh("chown 0 '%s/ws/.git'", top);
        }
        {
                _cleanup_(sentry_done) Sentry s = {};
                _cleanup_free_ char *error = NULL;
                cr_assert_eq(prepare(&s, &error, NULL), 0, "%s", error ? error : "");
        }
}

Test(git_sentry, bad_config_refused, .init = setup, .fini = teardown) {
        _cleanup_(sentry_done) Sentry s = {};
        _cleanup_free_ char *error = NULL;

        write_config("[core\n");
        cr_assert_eq(prepare(&s, &error, NULL), -EBADMSG);
        cr_assert(strstr(error, "line 1"), "%s", error);
}

Test(git_sentry, includes, .init = setup, .fini = teardown) {
        write_config("[include]\n\tpath = shared.cfg\n");
        refused("includes 'shared.cfg'");
        write_config("[includeIf \"onbranch:main\"]\n\tpath = ../../ws/x\n");
        refused("includes");
        sh("ln -s ws '%s/link-to-ws'", top);
        _cleanup_free_ char *cfg = NULL;
        cr_assert(asprintf(&cfg, "[include]\n\tpath = %s/link-to-ws/cfg\n", top) > 0);
        write_config(cfg);
        refused("includes");

        _cleanup_(sentry_done) Sentry s = {};
        _cleanup_free_ char *error = NULL;
        write_config("[include]\n\tpath = /etc/lazaret-unit-no-such.cfg\n[include]\npath = ~/.gitconfig-extra\n");
        cr_assert_eq(prepare(&s, &error, NULL), 0, "%s", error ? error : "");
}

Test(git_sentry, hooks_path_masked_and_pinned, .init = setup, .fini = teardown) {
        _cleanup_(sentry_done) Sentry s = {};
        _cleanup_free_ char *error = NULL, *husky = sub("ws/.husky"), *created = sub("ws/.husky/_");
        size_t pin, mask, hooks;
        struct stat st;

        /* .husky exists, .husky/_ does not yet: it is created so that it can be masked. */
        cr_assert_eq(mkdir(husky, 0755), 0);
        write_config("[core]\n\thooksPath = .husky/_\n");
        cr_assert_eq(prepare(&s, &error, NULL), 0, "%s", error ? error : "");
        cr_assert_eq(stat(created, &st), 0);
        cr_assert_eq(s.n_mounts, 5);
        cr_assert_not_null(find(&s, "/workspace/.git/hooks", &hooks));
        const MountEntry *p = find(&s, "/workspace/.husky", &pin);
        cr_assert_not_null(p);
        cr_assert_str_eq(p->source, husky);     /* pinned: a self-bind */
        const MountEntry *m = find(&s, "/workspace/.husky/_", &mask);
        cr_assert_not_null(m);
        cr_assert(strstr(m->source, "/domain/git-sentry/hooks-path-"), "%s", m->source);
        cr_assert_lt(pin, mask);
        cr_assert_lt(hooks, pin);
}

Test(git_sentry, hooks_path_variants, .init = setup, .fini = teardown) {
        _cleanup_(sentry_done) Sentry s = {};
        _cleanup_free_ char *error = NULL, *cfg = NULL, *global = sub("home/.gitconfig");
        FILE *f;

        /* Nested and repeated paths: the outer one is masked once, nothing inside it,
         * and every pin comes before every mask. An absolute path into the workspace
         * and one in a global configuration count; paths outside do not. */
        cr_assert(asprintf(&cfg, "[core]\nhooksPath = a/b/c\nhooksPath = %s/a/b\nhooksPath = a/b\n"
                                 "hooksPath = .git/hooks/x\nhooksPath = /etc/hooks\nhooksPath = ../outside\n",
                          ws) > 0);
        write_config(cfg);
        f = fopen(global, "we");
        cr_assert_not_null(f);
        fputs("[core]\n\thooksPath = .githooks\n", f);
        fclose(f);
        cr_assert_eq(prepare(&s, &error, (const char *const[]) { "/nonexistent/gitconfig", global, NULL }), 0, "%s",
                     error ? error : "");
        /* .git, config, hooks; pin a; masks a/b and .githooks */
        cr_assert_eq(s.n_mounts, 6, "%zu mounts", s.n_mounts);
        size_t pin, m1, m2;
        cr_assert_not_null(find(&s, "/workspace/a", &pin));
        cr_assert_not_null(find(&s, "/workspace/a/b", &m1));
        cr_assert_not_null(find(&s, "/workspace/.githooks", &m2));
        cr_assert_null(find(&s, "/workspace/a/b/c", NULL));
        cr_assert_lt(pin, m1);
        cr_assert_lt(pin, m2);
}

Test(git_sentry, hooks_path_refused, .init = setup, .fini = teardown) {
        write_config("[core]\nhooksPath = .\n");
        refused("workspace itself");
        write_config("[core]\nhooksPath = .git\n");
        refused("names .git");
        write_config("[core]\nhooksPath = sub/../hooks\n");
        refused("'..'");
        sh("mkdir '%1$s/ws/real' && ln -s real '%1$s/ws/link'", top);
        write_config("[core]\nhooksPath = link/hooks\n");
        refused("symlink");
        sh("touch '%s/ws/file'", top);
        write_config("[core]\nhooksPath = file/hooks\n");
        refused("not a directory");
}

Test(git_sentry, hooks_path_through_host_symlink, .init = setup, .fini = teardown) {
        _cleanup_(sentry_done) Sentry s = {};
        _cleanup_free_ char *error = NULL, *cfg = NULL;

        /* Outside the workspace lexically, inside after the host's own symlink. */
        sh("mkdir -p '%1$s/ws/hk' && ln -s ws/hk '%1$s/hooks-link'", top);
        cr_assert(asprintf(&cfg, "[core]\nhooksPath = %s/hooks-link\n", top) > 0);
        write_config(cfg);
        cr_assert_eq(prepare(&s, &error, NULL), 0, "%s", error ? error : "");
        cr_assert_not_null(find(&s, "/workspace/hk", NULL));
}

Test(git_sentry, relative_hooks_path_through_host_symlink, .init = setup, .fini = teardown) {
        _cleanup_(sentry_done) Sentry s = {};
        _cleanup_free_ char *error = NULL, *evil = sub("ws/evil");
        struct stat st;

        /* "../link" is outside the workspace lexically (relative to the
         * worktree's top, as git reads it), but the host's own symlink
         * leads back in: the sandbox could plant hooks in ws/evil. */
        sh("ln -s ws/evil '%s/link'", top);
        write_config("[core]\nhooksPath = ../link\n");
        cr_assert_eq(prepare(&s, &error, NULL), 0, "%s", error ? error : "");
        const MountEntry *m = find(&s, "/workspace/evil", NULL);
        cr_assert_not_null(m, "no mask for a relative core.hooksPath that a host symlink leads into the workspace");
        cr_assert(strstr(m->source, "/domain/git-sentry/hooks-path-"), "%s", m->source);
        cr_assert_eq(stat(evil, &st), 0);       /* created so that it can be masked */
        sentry_done(&s);

        /* The same through a symlinked directory further down, and in a global configuration. */
        _cleanup_free_ char *global = sub("home/.gitconfig");
        FILE *f = fopen(global, "we");
        cr_assert_not_null(f);
        fputs("[core]\n\thooksPath = ../dirlink/hk\n", f);
        fclose(f);
        sh("ln -s ws/sub '%s/dirlink' && mkdir '%s/ws/sub'", top, top);
        write_config("[core]\n\tbare = false\n");
        free(error);
        error = NULL;
        cr_assert_eq(prepare(&s, &error, (const char *const[]) { global, NULL }), 0, "%s", error ? error : "");
        cr_assert_not_null(find(&s, "/workspace/sub/hk", NULL));
        cr_assert_not_null(find(&s, "/workspace/sub", NULL));     /* its parent pinned */
}

Test(git_sentry, host_symlink_into_a_sandbox_symlink, .init = setup, .fini = teardown) {
        _cleanup_free_ char *cfg = NULL;

        /* A host symlink into the workspace, then a symlink the sandbox made
         * there (pointing out, for now): judged by the workspace's rule. */
        sh("mkdir '%1$s/out' && ln -s ../out '%1$s/ws/a' && ln -s ws/a/hooks '%1$s/link'", top);
        write_config("[core]\nhooksPath = ../link\n");
        refused("symlink");
        /* And one that steps back out with '..' from inside the workspace. */
        sh("rm '%1$s/link' && ln -s ws/b/../../out '%1$s/link'", top);
        refused("'..'");
        /* A dangling host symlink to an include in the workspace: the sandbox could create it. */
        sh("rm '%1$s/link' && ln -s ws/new.cfg '%1$s/link'", top);
        cr_assert(asprintf(&cfg, "[include]\n\tpath = %s/link\n", top) > 0);
        write_config(cfg);
        refused("includes");
}

/* ------------------------------------------------------------ the host's includes (view) */

static void put_file(const char *rel, const char *text) {
        _cleanup_free_ char *p = sub(rel);
        FILE *f = fopen(p, "we");
        cr_assert_not_null(f, "%s", p);
        fputs(text, f);
        fclose(f);
}

/* git_sentry_plan() as the view asks it: no mounts, the protected paths. */
static int protect_of(const char *const *globals, char ***ret, char **error) {
        _cleanup_close_ int wfd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(mount_plan_done) MountPlan plan = {};
        size_t n;
        int r;

        cr_assert(wfd >= 0);
        cr_assert_eq(mount_plan_init(&plan), 0);
        n = plan.n_entries;
        r = git_sentry_plan(&(GitSentryParams) { .workspace = ws, .workspace_fd = wfd, .sandbox_workspace = "/workspace",
                                                 .domain_dir = dom, .home = home, .global_configs = globals,
                                                 .view = true, .ret_protect = ret },
                            &plan, error);
        cr_assert_eq(plan.n_entries, n, "the view's Git Sentry added mounts");
        return r;
}

Test(git_sentry, global_includes_inside_protected, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **protect = NULL;
        _cleanup_free_ char *error = NULL, *global = sub("home/.gitconfig"), *text = NULL;
        struct stat st;

        /* ~/.gitconfig includes a file outside (relative to itself), which includes,
         * under an includeIf taken as true, a file inside the workspace, which
         * includes another one there and sets core.hooksPath. */
        sh("mkdir -p '%s/home/conf'", top);
        put_file("home/.gitconfig", "[include]\n\tpath = conf/more\n");
        cr_assert(asprintf(&text, "[includeIf \"gitdir:/nowhere/\"]\n\tpath = %s/tools/git.cfg\n", ws) > 0);
        put_file("home/conf/more", text);
        sh("mkdir -p '%s/ws/tools'", top);
        put_file("ws/tools/git.cfg", "[core]\n\thooksPath = .hooks\n[include]\n\tpath = extra.cfg\n");
        put_file("ws/tools/extra.cfg", "[include]\n\tpath = ~/../ws/.git/extra.cfg\n");
        cr_assert_eq(protect_of((const char *const[]) { global, NULL }, &protect, &error), 0, "%s", error ? error : "");
        cr_assert(strv_contains((const char *const *) protect, "tools/git.cfg"), "%s", strv_join(protect, " "));
        cr_assert(strv_contains((const char *const *) protect, "tools/extra.cfg"), "%s", strv_join(protect, " "));
        cr_assert(strv_contains((const char *const *) protect, ".git/extra.cfg"), "%s", strv_join(protect, " "));
        cr_assert(strv_contains((const char *const *) protect, ".hooks"), "%s", strv_join(protect, " "));
        cr_assert_eq(stat(sub("ws/.hooks"), &st), 0, "the hooks directory was made so that it cannot be a symlink");
}

Test(git_sentry, global_include_of_missing_workspace_file, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **protect = NULL;
        _cleanup_free_ char *error = NULL, *global = sub("home/.gitconfig"), *text = NULL, *dir = sub("ws/not/yet");
        struct stat st;

        /* Missing: protected all the same (the sandbox may create it), its directories made. */
        cr_assert(asprintf(&text, "[include]\n\tpath = %s/not/yet/there.cfg\n", ws) > 0);
        put_file("home/.gitconfig", text);
        cr_assert_eq(protect_of((const char *const[]) { global, NULL }, &protect, &error), 0, "%s", error ? error : "");
        cr_assert(strv_contains((const char *const *) protect, "not/yet/there.cfg"));
        cr_assert_eq(stat(dir, &st), 0);
        cr_assert(S_ISDIR(st.st_mode));
}

Test(git_sentry, global_includes_refused, .init = setup, .fini = teardown) {
        _cleanup_free_ char *global = sub("home/.gitconfig"), *text = NULL;

        /* Through a symlink in the workspace. */
        sh("mkdir '%1$s/ws/real' && ln -s real '%1$s/ws/link' && ln -s ../real/x '%1$s/ws/real/y'", top);
        cr_assert(asprintf(&text, "[include]\n\tpath = %s/link/cfg\n", ws) > 0);
        put_file("home/.gitconfig", text);
        {
                _cleanup_strv_free_ char **protect = NULL;
                _cleanup_free_ char *error = NULL;
                cr_assert_eq(protect_of((const char *const[]) { global, NULL }, &protect, &error), -EPERM);
                cr_assert(strstr(error, "symlink"), "%s", error);
        }
        free(text);
        cr_assert(asprintf(&text, "[include]\n\tpath = %s/real/y\n", ws) > 0);
        put_file("home/.gitconfig", text);
        {
                _cleanup_strv_free_ char **protect = NULL;
                _cleanup_free_ char *error = NULL;
                cr_assert_eq(protect_of((const char *const[]) { global, NULL }, &protect, &error), -EPERM);
                cr_assert(strstr(error, "symlink"), "%s", error);
        }
        /* A cycle ends at git's depth. */
        put_file("home/.gitconfig", "[include]\n\tpath = .gitconfig\n");
        {
                _cleanup_strv_free_ char **protect = NULL;
                _cleanup_free_ char *error = NULL;
                cr_assert_eq(protect_of((const char *const[]) { global, NULL }, &protect, &error), -ELOOP);
                cr_assert(strstr(error, "deeper"), "%s", error);
        }
        /* Without the view nothing would protect it. */
        free(text);
        cr_assert(asprintf(&text, "[include]\n\tpath = %s/x.cfg\n", ws) > 0);
        put_file("home/.gitconfig", text);
        {
                _cleanup_(sentry_done) Sentry s = {};
                _cleanup_free_ char *error = NULL;
                cr_assert_eq(prepare(&s, &error, (const char *const[]) { global, NULL }), -EPERM);
                cr_assert(strstr(error, "only the workspace view"), "%s", error);
        }
}

Test(git_sentry, repository_includes_outside_followed, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **protect = NULL;
        _cleanup_free_ char *error = NULL, *text = NULL, *cfg = sub("home/repo-extra");

        /* .git/config includes a host file outside, which sets core.hooksPath into the workspace. */
        put_file("home/repo-extra", "[core]\n\thooksPath = .husky\n");
        cr_assert(asprintf(&text, "[include]\n\tpath = %s\n", cfg) > 0);
        write_config(text);
        cr_assert_eq(protect_of(NULL, &protect, &error), 0, "%s", error ? error : "");
        cr_assert(strv_contains((const char *const *) protect, ".husky"));
        /* ... and one it includes inside is refused, as .git/config's own. */
        free(text);
        cr_assert(asprintf(&text, "[core]\n[include]\n\tpath = %s/inner.cfg\n", ws) > 0);
        put_file("home/repo-extra", text);
        strv_free(protect);
        protect = NULL;
        free(error);
        error = NULL;
        cr_assert_eq(protect_of(NULL, &protect, &error), -EPERM);
        cr_assert(strstr(error, "sandbox could write"), "%s", error);
}

/* ------------------------------------------------------------ linked workspaces */

Test(git_link, one_line_files) {
        char *p = NULL;

        cr_assert_eq(git_link_file_parse("gitdir: /a/b\n", 13, "gitdir: ", &p), 0);
        cr_assert_str_eq(p, "/a/b");
        free(p);
        cr_assert_eq(git_link_file_parse("../..\r\n", 7, "", &p), 0);
        cr_assert_str_eq(p, "../..");
        free(p);
        cr_assert_eq(git_link_file_parse("x y", 3, "", &p), 0);
        cr_assert_str_eq(p, "x y");
        free(p);
        p = NULL;
        cr_assert_eq(git_link_file_parse("gitdir: \n", 9, "gitdir: ", &p), -EBADMSG);
        cr_assert_eq(git_link_file_parse("gitdir:/a\n", 10, "gitdir: ", &p), -EBADMSG);
        cr_assert_eq(git_link_file_parse("gitdir: /a\n/b\n", 14, "gitdir: ", &p), -EBADMSG);
        cr_assert_eq(git_link_file_parse("/a\n\n", 4, "", &p), -EBADMSG);
        cr_assert_eq(git_link_file_parse("/a\0b", 4, "", &p), -EBADMSG);
        cr_assert_eq(git_link_file_parse("", 0, "", &p), -EBADMSG);
        cr_assert_null(p);
}

/* main/.git with linked worktrees "wt" (the workspace ws) and "other". */
static void make_worktree(void) {
        sh("rm -rf '%1$s/ws' && mkdir -p '%1$s/ws' '%1$s/main/.git/hooks' '%1$s/main/.git/worktrees/wt' "
           "'%1$s/main/.git/worktrees/other' && cd '%1$s/main/.git' && echo 'ref: refs/heads/main' > HEAD && "
           "printf '[core]\\n\\tbare = false\\n' > config && echo 'ref: refs/heads/wt' > worktrees/wt/HEAD && "
           "echo ../.. > worktrees/wt/commondir && echo '%1$s/ws/.git' > worktrees/wt/gitdir && "
           "echo 'ref: refs/heads/o' > worktrees/other/HEAD && echo 'gitdir: %1$s/main/.git/worktrees/wt' > '%1$s/ws/.git'",
           top);
}

static int linked_of(GitLinked *l, char ***protect, char **error) {
        _cleanup_close_ int wfd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(mount_plan_done) MountPlan plan = {};

        cr_assert(wfd >= 0);
        cr_assert_eq(mount_plan_init(&plan), 0);
        return git_sentry_plan(&(GitSentryParams) { .workspace = ws, .workspace_fd = wfd, .sandbox_workspace = "/workspace",
                                                    .domain_dir = dom, .home = home, .view = true, .ret_protect = protect,
                                                    .ret_linked = l },
                               &plan, error);
}

static void linked_refused(const char *want) {
        _cleanup_(git_linked_done) GitLinked l = { .root_fd = -EBADF };
        _cleanup_strv_free_ char **protect = NULL;
        _cleanup_free_ char *error = NULL;

        cr_assert_eq(linked_of(&l, &protect, &error), -EPERM, "accepted, want '%s'", want);
        cr_assert(strstr(error, want), "message '%s' lacks '%s'", error, want);
        cr_assert_null(strchr(error, '\n'), "not one line: %s", error);
        cr_assert_null(l.root);
}

Test(git_sentry, linked_worktree, .init = setup, .fini = teardown) {
        _cleanup_(git_linked_done) GitLinked l = { .root_fd = -EBADF };
        _cleanup_strv_free_ char **protect = NULL;
        _cleanup_free_ char *error = NULL, *common = sub("main/.git"), *gd = sub("main/.git/worktrees/wt");
        struct stat a, b;

        make_worktree();
        {
                _cleanup_free_ char *text = NULL;
                cr_assert(asprintf(&text, "[core]\n\thooksPath = %s/main/.git/my-hooks\n[include]\n\tpath = extra.cfg\n",
                                   top) > 0);
                put_file("main/.git/config", text);
        }
        put_file("main/.git/worktrees/wt/config.worktree", "[core]\n\thooksPath = .husky\n");
        cr_assert_eq(linked_of(&l, &protect, &error), 0, "%s", error ? error : "");
        cr_assert_str_eq(l.root, common);
        cr_assert_str_eq(l.git_dir, gd);
        cr_assert_str_eq(l.worktree, "wt");
        cr_assert_not(l.relative);
        cr_assert(fstat(l.root_fd, &a) == 0 && stat(common, &b) == 0 && a.st_ino == b.st_ino);
        /* The other worktree's registration, the common dir's hooks path and included file, by the git dir view. */
        cr_assert(strv_contains((const char *const *) l.protect, "worktrees/other"), "%s", strv_join(l.protect, " "));
        cr_assert_not(strv_contains((const char *const *) l.protect, "worktrees/wt"));
        cr_assert(strv_contains((const char *const *) l.protect, "my-hooks"), "%s", strv_join(l.protect, " "));
        cr_assert(strv_contains((const char *const *) l.protect, "extra.cfg"), "%s", strv_join(l.protect, " "));
        /* config.worktree's core.hooksPath, by the workspace view. */
        cr_assert(strv_contains((const char *const *) protect, ".husky"), "%s", strv_join(protect, " "));
}

/* A core.hooksPath or include that reaches the common dir through a host symlink is protected there. */
Test(git_sentry, linked_through_host_symlinks, .init = setup, .fini = teardown) {
        _cleanup_(git_linked_done) GitLinked l = { .root_fd = -EBADF };
        _cleanup_strv_free_ char **protect = NULL;
        _cleanup_free_ char *error = NULL, *text = NULL;

        make_worktree();
        /* link -> main/.git; a dangling one, inner -> main/.git/sub, whose target does not exist yet. */
        sh("ln -s main/.git '%1$s/link' && ln -s '%1$s/main/.git/sub' '%1$s/inner'", top);
        cr_assert(asprintf(&text, "[core]\n\thooksPath = %s/link/my-hooks\n", top) > 0);
        put_file("main/.git/config", text);
        free(text);
        /* The host's own configuration includes a file there, which names a hooks path in the workspace. */
        cr_assert(asprintf(&text, "[include]\n\tpath = %s/link/extra.cfg\n[include]\n\tpath = ../inner/x.cfg\n",
                           top) > 0);
        put_file("home/.gitconfig", text);
        put_file("main/.git/extra.cfg", "[core]\n\thooksPath = .husky\n");
        cr_assert_eq(linked_of(&l, &protect, &error), 0, "%s", error ? error : "");
        cr_assert(strv_contains((const char *const *) l.protect, "my-hooks"), "%s", strv_join(l.protect, " "));
        cr_assert(strv_contains((const char *const *) l.protect, "extra.cfg"), "%s", strv_join(l.protect, " "));
        cr_assert(strv_contains((const char *const *) l.protect, "sub/x.cfg"), "%s", strv_join(l.protect, " "));
        /* What the included file says was read (beneath the common dir's fd). */
        cr_assert(strv_contains((const char *const *) protect, ".husky"), "%s", strv_join(protect, " "));
        git_linked_done(&l);
        strv_free(protect);
        protect = NULL;

        /* Through a symlink inside the common dir (one the sandbox could have made): refused, in one line. */
        sh("mkdir -p '%1$s/elsewhere' && ln -s '%1$s/elsewhere' '%1$s/main/.git/my-hooks'", top);
        linked_refused("symbolic link in the git dir");
        sh("rm '%1$s/main/.git/my-hooks' && ln -s '%1$s/elsewhere' '%1$s/main/.git/sub'", top);
        linked_refused("symbolic link in the git dir");
        /* The common dir itself is no hooks path. */
        sh("rm '%1$s/main/.git/sub'", top);
        free(text);
        cr_assert(asprintf(&text, "[core]\n\thooksPath = %s/link\n", top) > 0);
        put_file("main/.git/config", text);
        linked_refused("names the git dir");
}

Test(git_sentry, linked_submodule, .init = setup, .fini = teardown) {
        _cleanup_(git_linked_done) GitLinked l = { .root_fd = -EBADF };
        _cleanup_strv_free_ char **protect = NULL;
        _cleanup_free_ char *error = NULL, *gd = NULL;

        /* super/sub is the workspace; its git dir super/.git/modules/sub, named relatively. */
        sh("rm -rf '%1$s/ws' && mkdir -p '%1$s/super/sub' '%1$s/super/.git/modules/sub' && cd '%1$s/super/.git/modules/sub' && "
           "echo 'ref: refs/heads/main' > HEAD && printf '[core]\\n\\tworktree = ../../../sub\\n' > config && "
           "echo 'gitdir: ../.git/modules/sub' > '%1$s/super/sub/.git'", top);
        free(ws);
        ws = sub("super/sub");
        gd = sub("super/.git/modules/sub");
        cr_assert_eq(linked_of(&l, &protect, &error), 0, "%s", error ? error : "");
        cr_assert_str_eq(l.root, gd);
        cr_assert_str_eq(l.git_dir, gd);
        cr_assert_null(l.worktree);
        cr_assert(l.relative);
}

Test(git_sentry, linked_refusals, .init = setup, .fini = teardown) {
        make_worktree();
        /* The workspace's .git names a git dir that is not one line. */
        sh("printf 'gitdir: %1$s/main/.git/worktrees/wt\\nmore\\n' > '%1$s/ws/.git'", top);
        linked_refused("one-line");
        /* A git dir inside the workspace. */
        sh("mkdir -p '%1$s/ws/real' && echo HEAD > '%1$s/ws/real/HEAD' && echo 'gitdir: real' > '%1$s/ws/.git'", top);
        linked_refused("inside the workspace");
        /* Through a symlink. */
        sh("ln -s main '%1$s/main-link' && echo 'gitdir: %1$s/main-link/.git/worktrees/wt' > '%1$s/ws/.git'", top);
        linked_refused("symbolic link");
        /* Not a git dir. */
        sh("echo 'gitdir: %1$s/home' > '%1$s/ws/.git'", top);
        linked_refused("no HEAD");
        /* A registration that names another checkout. */
        make_worktree();
        sh("echo '%1$s/elsewhere/.git' > '%1$s/main/.git/worktrees/wt/gitdir'", top);
        linked_refused("git worktree repair");
        /* A commondir that does not hold the git dir as worktrees/NAME. */
        make_worktree();
        sh("mkdir -p '%1$s/other-repo' && echo 'ref: refs/heads/x' > '%1$s/other-repo/HEAD' && "
           "echo '%1$s/other-repo' > '%1$s/main/.git/worktrees/wt/commondir'", top);
        linked_refused("worktrees/");
        /* An include of a file in the workspace from the common dir's config. */
        make_worktree();
        {
                _cleanup_free_ char *text = NULL;
                cr_assert(asprintf(&text, "[include]\n\tpath = %s/x.cfg\n", ws) > 0);
                put_file("main/.git/config", text);
        }
        linked_refused("sandbox could write");
        /* Without the view nothing would protect it. */
        make_worktree();
        refused("only the workspace view protects");
}

Test(git_sentry, main_checkout_protects_registrations, .init = setup, .fini = teardown) {
        _cleanup_strv_free_ char **protect = NULL;
        _cleanup_free_ char *error = NULL;

        /* Launched in the main checkout: its linked worktrees' checkouts are not inside, so a prune
         * there would drop their registrations; they are protected. */
        sh("mkdir -p '%1$s/ws/.git/worktrees/a' '%1$s/ws/.git/worktrees/b'", top);
        cr_assert_eq(protect_of(NULL, &protect, &error), 0, "%s", error ? error : "");
        cr_assert(strv_contains((const char *const *) protect, ".git/worktrees/a"), "%s", strv_join(protect, " "));
        cr_assert(strv_contains((const char *const *) protect, ".git/worktrees/b"), "%s", strv_join(protect, " "));
}

Test(git_sentry, included_fifo_does_not_stall, .init = setup, .fini = teardown, .timeout = 10) {
        _cleanup_strv_free_ char **protect = NULL;
        _cleanup_free_ char *error = NULL, *global = sub("home/.gitconfig"), *text = NULL;

        sh("mkfifo '%s/ws/fifo.cfg'", top);
        cr_assert(asprintf(&text, "[include]\n\tpath = %s/fifo.cfg\n", ws) > 0);
        put_file("home/.gitconfig", text);
        cr_assert_eq(protect_of((const char *const[]) { global, NULL }, &protect, &error), -EINVAL);
        cr_assert(strstr(error, "fifo.cfg"), "%s", error);
}

/* git_sentry_plan() as the coordinator asks it for the view: the paths the host's hooks name (issue 32 item 2). */
static int named_of(const char *const *globals, GitLinked *l, char ***ret, char **error) {
        _cleanup_close_ int wfd = open(ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(mount_plan_done) MountPlan plan = {};
        _cleanup_strv_free_ char **protect = NULL;

        cr_assert(wfd >= 0);
        cr_assert_eq(mount_plan_init(&plan), 0);
        return git_sentry_plan(&(GitSentryParams) { .workspace = ws, .workspace_fd = wfd, .sandbox_workspace = "/workspace",
                                                    .domain_dir = dom, .home = home, .global_configs = globals,
                                                    .view = true, .ret_protect = &protect, .ret_hook_named = ret,
                                                    .ret_linked = l },
                               &plan, error);
}

static void assert_named(char **named, const char *want) {
        _cleanup_free_ char *all = strv_join(named, " ");
        cr_assert(strv_contains((const char *const *) named, want), "'%s' not in '%s'", want, all);
}

Test(git_sentry, hook_named_paths, .init = setup, .fini = teardown) {
        _cleanup_(git_linked_done) GitLinked l = { .root_fd = -EBADF };
        _cleanup_strv_free_ char **named = NULL;
        _cleanup_free_ char *error = NULL, *global = sub("home/.gitconfig"), *text = NULL;

        /* .git/hooks, a core.hooksPath inside (the repository's), one outside (the global
         * configuration's), and pre-commit's configuration, which the hook runs. */
        put_file("ws/.git/hooks/pre-commit", "#!/bin/sh\n# pre-commit.com\nexec ./scripts/check.sh\n");
        put_file("ws/.pre-commit-config.yaml", "repos:\n  - repo: local\n    hooks:\n      - id: x\n        entry: tools/x.py\n");
        write_config("[core]\n\thooksPath = .hooks\n");
        sh("mkdir -p '%1$s/ws/.hooks' '%1$s/home/hooks'", top);
        put_file("ws/.hooks/pre-push", "#!/bin/sh\n\"$(dirname \"$0\")/helper\" && bin/lint --config=conf/lint.yml\n");
        cr_assert(asprintf(&text, "[core]\n\thooksPath = %s/home/hooks\n", top) > 0);
        put_file("home/.gitconfig", text);
        free(text);
        cr_assert(asprintf(&text, "#!/bin/sh\nsh %s/ws/ci/run.sh\nsh ../outside.sh\n", top) > 0);
        put_file("home/hooks/commit-msg", text);
        cr_assert_eq(named_of((const char *const[]) { global, NULL }, &l, &named, &error), 0, "%s", error ? error : "");
        assert_named(named, "scripts/check.sh");
        assert_named(named, "tools/x.py");
        assert_named(named, ".hooks/helper");
        assert_named(named, "bin/lint");
        assert_named(named, "conf/lint.yml");
        assert_named(named, "ci/run.sh");
        cr_assert_eq(strv_length(named), 6, "%s", strv_join(named, " "));
}

Test(git_sentry, hook_named_paths_of_a_linked_worktree, .init = setup, .fini = teardown) {
        _cleanup_(git_linked_done) GitLinked l = { .root_fd = -EBADF };
        _cleanup_strv_free_ char **named = NULL;
        _cleanup_free_ char *error = NULL;

        /* git runs a linked worktree's hooks from the common dir's hooks/, and from a
         * core.hooksPath in it; a hook that is a symbolic link is not read. */
        make_worktree();
        put_file("main/.git/hooks/pre-commit", "#!/bin/sh\n./scripts/common.sh\n");
        sh("ln -s pre-commit '%s/main/.git/hooks/pre-push'", top);
        {
                _cleanup_free_ char *text = NULL;
                cr_assert(asprintf(&text, "[core]\n\thooksPath = %s/main/.git/my-hooks\n", top) > 0);
                put_file("main/.git/worktrees/wt/config.worktree", text);
        }
        sh("mkdir -p '%s/main/.git/my-hooks'", top);
        put_file("main/.git/my-hooks/post-checkout", "#!/bin/sh\nmake -C build/dir check\nsh gen/make.sh\n");
        cr_assert_eq(named_of((const char *const[]) { NULL }, &l, &named, &error), 0, "%s", error ? error : "");
        cr_assert_not_null(l.root);
        assert_named(named, "scripts/common.sh");
        assert_named(named, "build/dir");
        assert_named(named, "gen/make.sh");
        cr_assert_eq(strv_length(named), 3, "%s", strv_join(named, " "));
}
