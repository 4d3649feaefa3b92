/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>

#include "trusted-scratch.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "domain.h"
#include "host-context.h"
#include "macro.h"
#include "path-util.h"

/* A private scratch tree per test: HOME, XDG dirs and a project inside it. */
static char *top;
static HostContext host;

/* The tests set the environment; callers collect it like this, once per use. */
static const HostContext *env_now(void) {
        host_context_done(&host);
        cr_assert_eq(host_context_from_environment(&host), 0);
        return &host;
}

static char *sub(const char *rel) {
        char *p;
        cr_assert(asprintf(&p, "%s/%s", top, rel) > 0);
        return p;
}

static void mkdirs(const char *rel) {
        _cleanup_free_ char *cmd = NULL, *p = sub(rel);
        cr_assert(asprintf(&cmd, "mkdir -p '%s'", p) > 0);
        cr_assert_eq(system(cmd), 0);
}

static void setup(void) {
        char tmpl[] = "/tmp/lazaret-unit-domain-XXXXXX";
        _cleanup_free_ char *home = NULL, *cfg = NULL, *data = NULL, *run = NULL;

        cr_assert_not_null(mkdtemp(tmpl));
        top = realpath(tmpl, NULL);
        home = sub("home");
        cfg = sub("home/.config");
        data = sub("home/.local/share");
        run = sub("run");
        mkdirs("home/.config");
        mkdirs("run");
        chmod(run, 0700);
        setenv("HOME", home, 1);
        setenv("XDG_CONFIG_HOME", cfg, 1);
        setenv("XDG_DATA_HOME", data, 1);
        setenv("XDG_RUNTIME_DIR", run, 1);
        unsetenv("LAZARET_CONFIG");
}

static void teardown(void) {
        _cleanup_free_ char *cmd = NULL;
        host_context_done(&host);
        cr_assert(asprintf(&cmd, "rm -rf '%s'", top) > 0);
        if (system(cmd) != 0)
                cr_log_warn("cleanup of %s failed", top);
        free(top);
}

static Config *load(const char *text) {
        Config *c = NULL;
        _cleanup_free_ char *err = NULL, *path = NULL;

        if (text) {
                FILE *f;
                path = sub("home/.config/lazaret/config.json");
                mkdirs("home/.config/lazaret");
                f = fopen(path, "we");
                cr_assert_not_null(f);
                fputs(text, f);
                fclose(f);
                chmod(path, 0600);
        }
        cr_assert_eq(config_load(env_now(), NULL, &c, &err), 0, "%s", err ?: "");
        return c;
}

Test(domain, id_matches_independent_sha256) {
        char id[DOMAIN_ID_LEN + 1];

        /* Expected values computed with: printf %s 'PROFILE:PATH' | sha256sum | cut -c1-12 */
        cr_assert_eq(domain_id_compute("default", "/tmp/ws/proj", id), 0);
        cr_assert_str_eq(id, "382cf293f5db");
        cr_assert_eq(domain_id_compute("dev", "/home/u/p", id), 0);
        cr_assert_str_eq(id, "7a4a5428c1c2");
        cr_assert_eq(domain_id_compute("my-agent_2", "/srv/code/proj x", id), 0);
        cr_assert_str_eq(id, "b0c8bc8b3137");
        cr_assert_eq(domain_id_compute("Bad", "/x", id), -EINVAL);
        cr_assert_eq(domain_id_compute("dev", "relative", id), -EINVAL);
        cr_assert(domain_id_is_valid("0123456789ab"));
        cr_assert_not(domain_id_is_valid("0123456789AB"));
        cr_assert_not(domain_id_is_valid("0123456789a"));
        cr_assert_not(domain_id_is_valid("../../etc/xx"));
}

Test(domain, workspace_is_git_top_level, .init = setup, .fini = teardown) {
        _cleanup_free_ char *repo = sub("home/src/repo"), *deep = sub("home/src/repo/a/b"), *plain = sub("home/src/plain"),
                            *wt = sub("home/src/worktree/x"), *wtop = sub("home/src/worktree"), *gitfile = NULL,
                            *out = NULL, *out2 = NULL, *out3 = NULL;

        mkdirs("home/src/repo/.git");
        mkdirs("home/src/repo/a/b");
        mkdirs("home/src/plain");
        mkdirs("home/src/worktree/x");
        gitfile = sub("home/src/worktree/.git");
        close(open(gitfile, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));

        cr_assert_eq(workspace_discover(deep, &out), 0);
        cr_assert_str_eq(out, repo);
        cr_assert_eq(workspace_discover(plain, &out2), 0);
        cr_assert_str_eq(out2, plain);
        cr_assert_eq(workspace_discover(wt, &out3), 0);
        cr_assert_str_eq(out3, wtop);
}

Test(domain, new_refuses_root_and_home, .init = setup, .fini = teardown) {
        _cleanup_config_ Config *c = load(NULL);
        _cleanup_free_ char *home = sub("home"), *err = NULL;
        Domain *d = NULL;

        cr_assert_eq(domain_new(c, env_now(), NULL, "/", &d, &err), -EPERM);
        cr_assert_not_null(strstr(err, "root cannot be a workspace"));
        free(err);
        err = NULL;
        cr_assert_eq(domain_new(c, env_now(), NULL, home, &d, &err), -EPERM);
        cr_assert_not_null(strstr(err, "contains your home directory"), "%s", err);
        free(err);
        err = NULL;
        cr_assert_eq(domain_new(c, env_now(), NULL, top, &d, &err), -EPERM);
        free(err);
        err = NULL;
        cr_assert_eq(domain_new(c, env_now(), "nope", NULL, &d, &err), -ENOENT);
        cr_assert_not_null(strstr(err, "no profile named \"nope\""));
        cr_assert_null(d);
}

/* Issue 18 item 4: the record, request and plan are JSON; refused first, in one line, escaped. */
Test(domain, new_refuses_a_workspace_path_that_is_not_utf8, .init = setup, .fini = teardown) {
        _cleanup_config_ Config *c = load(NULL);
        _cleanup_free_ char *ws = sub("home/src/caf\xe9\nx"), *err = NULL, *want = NULL;
        Domain *d = NULL;

        mkdirs("home/src/caf\xe9\nx/.git");
        cr_assert_eq(domain_new(c, env_now(), NULL, ws, &d, &err), -EILSEQ);
        cr_assert_null(d);
        cr_assert(asprintf(&want, "workspace \"%s/home/src/caf\\xe9\\x0ax\": the path is not valid UTF-8", top) > 0);
        cr_assert_not_null(strstr(err, want), "%s", err);
        cr_assert_null(strchr(err, '\n'), "%s", err);
}

Test(domain, storage_layout_and_record, .init = setup, .fini = teardown) {
        _cleanup_config_ Config *c = load(NULL);
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *ws = sub("home/proj"), *err = NULL, *rec = NULL, *root = NULL;
        DomainRecord r = {};
        struct stat st;

        mkdirs("home/proj");
        cr_assert_eq(domain_new(c, env_now(), NULL, ws, &d, &err), 0, "%s", err ?: "");
        cr_assert_eq(domain_validate(d, &err), 0, "%s", err ?: "");
        cr_assert_eq(domain_storage_prepare(d, &err), 0, "%s", err ?: "");

        root = sub("home/.local/share/lazaret");
        cr_assert_str_eq(c->data_root, root);
        cr_assert_eq(stat(root, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0700);
        cr_assert_eq(stat(d->domain_dir, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0700);
        cr_assert_eq(stat(d->profile_dir, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0700);
        rec = path_join(d->domain_dir, DOMAIN_RECORD_NAME);
        cr_assert_eq(stat(rec, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0600);

        /* Reuse verifies and succeeds; load by ID gives the same identity. */
        cr_assert_eq(domain_storage_prepare(d, &err), 0, "%s", err ?: "");
        cr_assert_eq(domain_record_load(c->data_root, d->id, &r, &err), 0, "%s", err ?: "");
        cr_assert_str_eq(r.profile, "default");
        cr_assert_str_eq(r.workspace, ws);
        domain_record_done(&r);

        /* A record that names another workspace is refused, and left alone. */
        FILE *f = fopen(rec, "we");
        fprintf(f, "{\"version\": 1, \"domain_id\": \"%s\", \"profile\": \"default\", \"workspace\": \"/elsewhere\"}", d->id);
        fclose(f);
        cr_assert_eq(domain_storage_prepare(d, &err), -EBADMSG);
        cr_assert_not_null(strstr(err, "does not match"), "%s", err);
        free(err);
        err = NULL;
        cr_assert_eq(domain_record_load(c->data_root, d->id, &r, &err), -EBADMSG);
        free(err);
        err = NULL;
        cr_assert_eq(domain_record_load(c->data_root, "../../etc/xx", &r, &err), -EINVAL);
}

Test(domain, storage_refuses_open_data_root, .init = setup, .fini = teardown) {
        _cleanup_config_ Config *c = NULL;
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *ws = sub("home/proj"), *err = NULL, *data = sub("data");

        mkdirs("home/proj");
        mkdirs("data");
        chmod(data, 0755);
        {
                _cleanup_free_ char *text = NULL;
                cr_assert(asprintf(&text, "{\"data_root\": \"%s\"}", data) > 0);
                c = load(text);
        }
        cr_assert_eq(domain_new(c, env_now(), NULL, ws, &d, &err), 0, "%s", err ?: "");
        cr_assert_eq(domain_storage_prepare(d, &err), -EPERM);
        cr_assert_not_null(strstr(err, "accessible by other users"), "%s", err);
}

static void exposure_refused(const char *config_text, const char *ws_rel, const char *needle) {
        _cleanup_config_ Config *c = load(config_text);
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *ws = sub(ws_rel), *err = NULL;

        cr_assert_eq(domain_new(c, env_now(), NULL, ws, &d, &err), 0, "%s", err ?: "");
        cr_assert_lt(domain_validate(d, &err), 0, "should refuse: %s", config_text ?: "(built-in)");
        cr_assert_not_null(strstr(err, needle), "message \"%s\" lacks \"%s\"", err, needle);
}

Test(domain, exposure_workspace_holding_config, .init = setup, .fini = teardown) {
        /* XDG_CONFIG_HOME inside the project: the config would be visible. */
        _cleanup_free_ char *cfg = sub("home/proj/.config");
        mkdirs("home/proj/.config");
        setenv("XDG_CONFIG_HOME", cfg, 1);
        exposure_refused("{}", "home/proj", "contains the Lazaret configuration location");
}

Test(domain, exposure_workspace_holding_default_config_location, .init = setup, .fini = teardown) {
        /* No file yet, but the sandbox could create one there. */
        _cleanup_free_ char *cfg = sub("home/proj/.config");
        mkdirs("home/proj");
        setenv("XDG_CONFIG_HOME", cfg, 1);
        exposure_refused(NULL, "home/proj", "contains the Lazaret configuration location");
}

Test(domain, exposure_volumes, .init = setup, .fini = teardown) {
        mkdirs("home/proj");
        exposure_refused("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"~/.config\", \"container\": \"/c\"}]}}, \"default_profile\": \"dev\"}",
                         "home/proj", "profiles.dev.volumes[0].host");
}

Test(domain, exposure_data_root, .init = setup, .fini = teardown) {
        mkdirs("home/proj");
        exposure_refused("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"~/.local/share\", \"container\": \"/c\"}]}}, \"default_profile\": \"dev\"}",
                         "home/proj", "contains the Lazaret data root");
}

Test(domain, exposure_other_domain, .init = setup, .fini = teardown) {
        mkdirs("home/proj");
        exposure_refused("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"~/.local/share/lazaret/domains/0123456789ab\", \"container\": \"/c\"}]}}, \"default_profile\": \"dev\"}",
                         "home/proj", "only this profile's {profile_dir} and this Domain's {domain_dir} may be mounted");
}

/* Issue 33: the persistent layers keep subordinate IDs' set-ID files; no volume reaches them. */
Test(domain, exposure_state_anchor, .init = setup, .fini = teardown) {
        static const char *const hosts[] = { "{domain_dir}", "{domain_dir}/state", "{domain_dir}/state/usr/upper",
                                             "{domain_dir}/state-trash" };

        mkdirs("home/proj");
        for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
                _cleanup_free_ char *text = NULL;
                cr_assert(asprintf(&text, "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"%s\", \"container\": \"/c\"}]}}, \"default_profile\": \"dev\"}", hosts[i]) > 0);
                exposure_refused(text, "home/proj", "reaches the Domain's persistent layers");
        }
}

Test(domain, exposure_workspace_inside_data_root, .init = setup, .fini = teardown) {
        mkdirs("home/.local/share/lazaret/domains/x");
        exposure_refused(NULL, "home/.local/share/lazaret/domains/x", "lies inside the Lazaret data root");
}

Test(domain, exposure_runtime_dir, .init = setup, .fini = teardown) {
        mkdirs("home/proj");
        {
                _cleanup_free_ char *text = NULL, *run = sub("run");
                cr_assert(asprintf(&text, "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"%s\", \"container\": \"/c\"}]}}, \"default_profile\": \"dev\"}", run) > 0);
                exposure_refused(text, "home/proj", "overlaps the Lazaret runtime directory");
        }
}

Test(domain, own_dirs_may_be_mounted_and_tokens_resolve, .init = setup, .fini = teardown) {
        _cleanup_config_ Config *c = load("{\"profiles\": {\"dev\": {\"image\": \"oci:{workspace_dir}/img:t1\", \"volumes\": ["
                                          "{\"host\": \"{profile_dir}/cache\", \"container\": \"/cache\", \"mode\": \"rw\"},"
                                          "{\"host\": \"{domain_dir}/state-{domain_hash}\", \"container\": \"/state\"},"
                                          "{\"host\": \"~/shared-{profile_name}\", \"container\": \"/shared\"}]}}, \"default_profile\": \"dev\"}");
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *ws = sub("home/proj"), *err = NULL, *want = NULL, *img = NULL, *tag = NULL, *home = sub("home");
        ResolvedVolume *v = NULL;
        size_t n = 0;

        mkdirs("home/proj");
        mkdirs("home/shared-dev");
        cr_assert_eq(domain_new(c, env_now(), NULL, ws, &d, &err), 0, "%s", err ?: "");
        /* {profile_dir}/cache and the state directory do not exist yet: Lazaret creates them. */
        cr_assert_eq(domain_validate(d, &err), 0, "%s", err ?: "");
        cr_assert_eq(domain_resolve_volumes(d, &v, &n, &err), 0);
        cr_assert_eq(n, 3);
        cr_assert(asprintf(&want, "%s/profiles/dev/cache", c->data_root) > 0);
        cr_assert_str_eq(v[0].host, want);
        free(want);
        cr_assert(asprintf(&want, "%s/domains/%s/state-%s", c->data_root, d->id, d->id) > 0);
        cr_assert_str_eq(v[1].host, want);
        free(want);
        cr_assert(asprintf(&want, "%s/shared-dev", home) > 0);
        cr_assert_str_eq(v[2].host, want);
        resolved_volumes_free(v, n);

        cr_assert_eq(domain_resolve_image(d, &img, &tag, &err), 0);
        free(want);
        cr_assert(asprintf(&want, "%s/img", ws) > 0);
        cr_assert_str_eq(img, want);
        cr_assert_str_eq(tag, "t1");
}

Test(domain, runtime_dir, .init = setup, .fini = teardown) {
        _cleanup_free_ char *p = NULL, *err = NULL, *want = sub("run/lazaret");
        struct stat st;

        cr_assert_eq(runtime_dir_prepare(env_now(), &p, &err), 0, "%s", err ?: "");
        cr_assert_str_eq(p, want);
        cr_assert_eq(stat(p, &st), 0);
        cr_assert_eq(st.st_mode & 07777, 0700);

        unsetenv("XDG_RUNTIME_DIR");
        free(p);
        p = NULL;
        cr_assert_eq(runtime_dir_prepare(env_now(), &p, &err), -ENXIO);
        cr_assert_not_null(strstr(err, "XDG_RUNTIME_DIR is not set"));
}

/* The mode lazaretctl's secret warning reads is the one of the file config_load() opened. */
Test(domain, config_mode_kept, .init = setup, .fini = teardown) {
        _cleanup_free_ char *path = sub("home/.config/lazaret/config.json");
        _cleanup_config_ Config *a = load("{}"), *b = NULL, *builtin = NULL;

        cr_assert_eq(a->mode, 0600);
        cr_assert_eq(chmod(path, 0644), 0);
        b = load(NULL);
        cr_assert_eq(b->mode, 0644);
        cr_assert_eq(unlink(path), 0);
        builtin = load(NULL);
        cr_assert_null(builtin->path);
        cr_assert_eq(builtin->mode, 0);
}

/* The path a Config names is that of the file config_load() read, symlinks resolved. */
Test(domain, config_path_canonical, .init = setup, .fini = teardown) {
        _cleanup_free_ char *link = sub("cfg-link"), *real = sub("home/.config/lazaret"), *via = NULL,
                            *want = NULL;
        _cleanup_config_ Config *a = load("{}"), *b = NULL;
        _cleanup_free_ char *err = NULL;

        cr_assert_eq(symlink(real, link), 0);
        via = path_join(link, "config.json");
        want = path_join(real, "config.json");
        cr_assert_eq(config_load(env_now(), via, &b, &err), 0, "%s", err ?: "");
        cr_assert_str_eq(b->path, want);
        cr_assert_str_eq(a->path, want);
}

Test(domain, config_file_permissions, .init = setup, .fini = teardown) {
        _cleanup_free_ char *path = sub("home/.config/lazaret/config.json"), *err = NULL;
        Config *c = NULL;
        FILE *f;

        mkdirs("home/.config/lazaret");
        f = fopen(path, "we");
        fputs("{}", f);
        fclose(f);
        chmod(path, 0666);
        cr_assert_eq(config_load(env_now(), NULL, &c, &err), -EPERM);
        cr_assert_not_null(strstr(err, "writable by group or others"), "%s", err);
        free(err);
        err = NULL;
        cr_assert_eq(config_load(env_now(), "/nonexistent-lazaret/config.json", &c, &err), -ENOENT);
        cr_assert_not_null(strstr(err, "/nonexistent-lazaret/config.json: cannot read"), "%s", err);
        free(err);
        err = NULL;
        setenv("LAZARET_CONFIG", "/nonexistent-lazaret/env.json", 1);
        cr_assert_eq(config_load(env_now(), NULL, &c, &err), -ENOENT, "a file named by $LAZARET_CONFIG must exist");
}

/*
 * What a Domain is judged with is what its caller collected: a later change
 * of the environment (the coordinator runs with the user manager's) does not
 * reach it, and the workspace default comes from the collected directory.
 */
Test(domain, judged_with_the_callers_inputs, .init = setup, .fini = teardown) {
        _cleanup_config_ Config *c = load("{}");
        _cleanup_domain_ Domain *d = NULL, *d2 = NULL;
        _cleanup_free_ char *cfg = sub("home/proj/.config"), *elsewhere = sub("home/.config"), *err = NULL,
                            *deep = sub("home/proj/a/b"), *proj = sub("home/proj");
        HostContext hc = {};

        mkdirs("home/proj/.git");
        mkdirs("home/proj/.config");
        mkdirs("home/proj/a/b");
        setenv("XDG_CONFIG_HOME", cfg, 1);
        cr_assert_eq(host_context_from_environment(&hc), 0);
        setenv("XDG_CONFIG_HOME", elsewhere, 1);
        free(hc.cwd);
        hc.cwd = strdup(deep);

        cr_assert_eq(domain_new(c, &hc, NULL, NULL, &d, &err), 0, "%s", err ?: "");
        cr_assert_str_eq(d->workspace, proj);
        host_context_done(&hc);
        cr_assert_lt(domain_validate(d, &err), 0);
        cr_assert_not_null(strstr(err, "contains the Lazaret configuration location"), "%s", err);
        free(err);
        err = NULL;

        /* A fresh collection sees the new value and the workspace is fine. */
        cr_assert_eq(domain_new(c, env_now(), NULL, proj, &d2, &err), 0, "%s", err ?: "");
        cr_assert_eq(domain_validate(d2, &err), 0, "%s", err ?: "");
}

/*
 * runtime.runsc inside the workspace or a volume: the sandbox could replace
 * the binary Lazaret runs next time. Built below the build tree, whose
 * parents are trusted, so that only the exposure check can refuse it.
 */
Test(domain, exposure_runsc_in_workspace_or_volume) {
        const char *base = trusted_scratch_base();
        _cleanup_free_ char *dir = NULL, *proj = NULL, *tools = NULL, *bin = NULL, *text = NULL, *err = NULL,
                            *want = NULL, *cmd = NULL, *home = NULL, *data = NULL;
        ConfigEnv cenv;
        HostContext hc = {};
        FILE *f;

        cr_assert_not_null(base, "neither the build tree nor $HOME has only trusted parents");
        cr_assert(asprintf(&dir, "%s/runsc-domain-XXXXXX", base) > 0);
        cr_assert_not_null(mkdtemp(dir));
        chmod(dir, 0755);
        cr_assert(asprintf(&proj, "%s/proj", dir) > 0 && asprintf(&tools, "%s/tools", dir) > 0 &&
                  asprintf(&bin, "%s/tools/runsc", dir) > 0 && asprintf(&home, "%s/home", dir) > 0 &&
                  asprintf(&data, "%s/home/data", dir) > 0);
        cr_assert_eq(mkdir(proj, 0755), 0);
        {
                _cleanup_free_ char *git = NULL;
                cr_assert(asprintf(&git, "%s/.git", proj) > 0);
                cr_assert_eq(mkdir(git, 0755), 0);
        }
        cr_assert_eq(mkdir(home, 0755), 0);
        cr_assert_eq(mkdir(tools, 0755), 0);
        f = fopen(bin, "we");
        cr_assert_not_null(f);
        fclose(f);
        cr_assert_eq(chmod(bin, 0755), 0);

        cenv = (ConfigEnv) { .home = home, .xdg_data_home = data };
        hc = (HostContext) { .home = home, .xdg_config_home = home, .xdg_data_home = data, .cwd = proj };

        /* In a volume. */
        {
                _cleanup_config_ Config *c = NULL;
                _cleanup_domain_ Domain *d = NULL;
                cr_assert(asprintf(&text, "{\"runtime\": {\"runsc\": \"%s\"}, \"profiles\": {\"dev\": {\"image\": \"builtin:default\", "
                                   "\"volumes\": [{\"host\": \"%s\", \"container\": \"/tools\"}]}}, \"default_profile\": \"dev\"}", bin, tools) > 0);
                cr_assert_eq(config_parse(text, strlen(text), "/cfg.json", &cenv, &c, &err), 0, "%s", err ?: "");
                cr_assert_eq(config_resolve(c, &err), 0, "%s", err ?: "");
                cr_assert_eq(domain_new(c, &hc, NULL, NULL, &d, &err), 0, "%s", err ?: "");
                cr_assert_eq(domain_validate(d, &err), -EPERM);
                cr_assert(asprintf(&want, "/cfg.json: runtime.runsc: \"%s\" lies inside profiles.dev.volumes[0].host \"%s\", which is mounted into the sandbox",
                                   bin, tools) > 0);
                cr_assert_str_eq(err, want);
                free(err);
                free(want);
                free(text);
                err = want = text = NULL;
        }

        /* In the workspace. */
        {
                _cleanup_config_ Config *c = NULL;
                _cleanup_domain_ Domain *d = NULL;
                /* tools/runsc is inside the workspace "dir/tools"... */
                cr_assert(asprintf(&text, "{\"runtime\": {\"runsc\": \"%s\"}}", bin) > 0);
                cr_assert_eq(config_parse(text, strlen(text), "/cfg.json", &cenv, &c, &err), 0, "%s", err ?: "");
                cr_assert_eq(config_resolve(c, &err), 0, "%s", err ?: "");
                cr_assert_eq(domain_new(c, &hc, NULL, tools, &d, &err), 0, "%s", err ?: "");
                cr_assert_eq(domain_validate(d, &err), -EPERM);
                cr_assert(asprintf(&want, "/cfg.json: runtime.runsc: \"%s\" lies inside the workspace \"%s\", which the sandbox can write",
                                   bin, tools) > 0);
                cr_assert_str_eq(err, want);
                free(err);
                err = NULL;

                /* ...and not inside "dir/proj": fine there. */
                _cleanup_domain_ Domain *d2 = NULL;
                cr_assert_eq(domain_new(c, &hc, NULL, proj, &d2, &err), 0, "%s", err ?: "");
                cr_assert_eq(domain_validate(d2, &err), 0, "%s", err ?: "");
        }

        cr_assert(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
        cr_assert_eq(system(cmd), 0);
}

/* ------------------------------------------------ issue 9, holes 3 and 4 */

static char *profile_with_volumes(const char *volumes_json) {
        char *text;
        cr_assert(asprintf(&text, "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [%s]}}, \"default_profile\": \"dev\"}",
                           volumes_json) > 0);
        return text;
}

/* Validates the Domain of ws_rel under config_text and expects exactly want (with every "@" replaced by top). */
static void refused_exactly(const char *config_text, const char *ws_rel, int want_r, const char *want_tmpl) {
        _cleanup_config_ Config *c = load(config_text);
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *ws = sub(ws_rel), *err = NULL, *want = NULL, *cfgp = sub("home/.config/lazaret/config.json");
        size_t n = 0;

        /* "@" is the scratch directory, "%" the configuration file. */
        want = calloc(strlen(want_tmpl) * 2 + 64 * (strlen(top) + strlen(cfgp)), 1);
        cr_assert_not_null(want);
        for (const char *s = want_tmpl; *s; s++) {
                if (*s == '@')
                        strcat(want, top);
                else if (*s == '%')
                        strcat(want, cfgp);
                else
                        want[n = strlen(want)] = *s, want[n + 1] = 0;
        }
        cr_assert_eq(domain_new(c, env_now(), NULL, ws, &d, &err), 0, "%s", err ?: "");
        cr_assert_eq(domain_validate(d, &err), want_r, "want %d: %s", want_r, err ?: "(no message)");
        cr_assert_str_eq(err, want);
}

static void accepted(const char *config_text, const char *ws_rel) {
        _cleanup_config_ Config *c = load(config_text);
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *ws = sub(ws_rel), *err = NULL;

        cr_assert_eq(domain_new(c, env_now(), NULL, ws, &d, &err), 0, "%s", err ?: "");
        cr_assert_eq(domain_validate(d, &err), 0, "%s", err ?: "");
}

Test(domain, volume_nesting_refused, .init = setup, .fini = teardown) {
        _cleanup_free_ char *t1 = profile_with_volumes("{\"host\": \"{workspace_dir}/sub\", \"container\": \"/v\"}"),
                            *t2 = profile_with_volumes("{\"host\": \"~/src\", \"container\": \"/v\"}"),
                            *t3 = profile_with_volumes("{\"host\": \"~/a\", \"container\": \"/a\", \"mode\": \"rw\"}, {\"host\": \"~/a/b\", \"container\": \"/b\"}"),
                            *t4 = profile_with_volumes("{\"host\": \"~/a/b\", \"container\": \"/b\"}, {\"host\": \"~/a\", \"container\": \"/a\"}"),
                            *t5 = profile_with_volumes("{\"host\": \"~/a\", \"container\": \"/a\"}, {\"host\": \"~/a\", \"container\": \"/b\"}"),
                            *t6 = profile_with_volumes("{\"host\": \"~/a\", \"container\": \"/a\"}, {\"host\": \"~/ab\", \"container\": \"/b\"}");

        mkdirs("home/src/proj/sub");
        mkdirs("home/a/b");
        mkdirs("home/ab");
        refused_exactly(t1, "home/src/proj", -EPERM,
                        "%: profiles.dev.volumes[0].host: \"@/home/src/proj/sub\" lies inside the workspace \"@/home/src/proj\"; "
                        "a volume may not lie inside or contain the workspace or another volume");
        refused_exactly(t2, "home/src/proj", -EPERM,
                        "%: profiles.dev.volumes[0].host: \"@/home/src\" contains the workspace \"@/home/src/proj\"; "
                        "a volume may not lie inside or contain the workspace or another volume");
        refused_exactly(t3, "home/src/proj", -EPERM,
                        "%: profiles.dev.volumes[1].host: \"@/home/a/b\" lies inside profiles.dev.volumes[0].host \"@/home/a\"; "
                        "a volume may not lie inside or contain the workspace or another volume");
        refused_exactly(t4, "home/src/proj", -EPERM,
                        "%: profiles.dev.volumes[1].host: \"@/home/a\" contains profiles.dev.volumes[0].host \"@/home/a/b\"; "
                        "a volume may not lie inside or contain the workspace or another volume");
        refused_exactly(t5, "home/src/proj", -EPERM,
                        "%: profiles.dev.volumes[1].host: \"@/home/a\" is the same as profiles.dev.volumes[0].host \"@/home/a\"; "
                        "a volume may not lie inside or contain the workspace or another volume");
        /* Whole segments: "~/ab" is beside "~/a", not in it. */
        accepted(t6, "home/src/proj");
}

Test(domain, kernel_file_systems_never_volumes, .init = setup, .fini = teardown) {
        static const char *const hosts[] = { "/proc", "/proc/1", "/sys/fs/cgroup", "/dev", "/dev/shm" };

        mkdirs("proj");
        for (size_t i = 0; i < ELEMENTSOF(hosts); i++) {
                _cleanup_free_ char *vol = NULL, *forced = NULL, *text = NULL, *ftext = NULL, *want = NULL;
                const char *top_dir = hosts[i][1] == 'p' ? "/proc" : hosts[i][1] == 's' ? "/sys" : "/dev";

                cr_assert(asprintf(&vol, "{\"host\": \"%s\", \"container\": \"/v\"}", hosts[i]) > 0);
                cr_assert(asprintf(&forced, "{\"host\": \"%s\", \"container\": \"/v\", \"force\": true}", hosts[i]) > 0);
                text = profile_with_volumes(vol);
                ftext = profile_with_volumes(forced);
                cr_assert(asprintf(&want, "%%: profiles.dev.volumes[0].host: \"%s\" lies in %s, a kernel file system of the "
                                   "host; it cannot be mounted into a sandbox", hosts[i], top_dir) > 0);
                refused_exactly(text, "proj", -EPERM, want);
                refused_exactly(ftext, "proj", -EPERM, want);
        }
}

Test(domain, credential_and_autostart_sources_need_force, .init = setup, .fini = teardown) {
        static const struct {
                const char *host, *want;
        } cases[] = {
                { "~/.ssh", "\"@/home/.ssh\" is \"@/home/.ssh\"" },
                { "~/.ssh/keys", "\"@/home/.ssh/keys\" lies inside \"@/home/.ssh\"" },
                { "~/.gnupg", "\"@/home/.gnupg\" is \"@/home/.gnupg\"" },
                { "~/.config/systemd/user", "\"@/home/.config/systemd/user\" lies inside \"@/home/.config/systemd\"" },
                { "~/.config/autostart", "\"@/home/.config/autostart\" is \"@/home/.config/autostart\"" },
                { "~/.config/fish", "\"@/home/.config/fish\" is \"@/home/.config/fish\"" },
                { "~/.bashrc", "\"@/home/.bashrc\" is \"@/home/.bashrc\"" },
                { "~/.profile", "\"@/home/.profile\" is \"@/home/.profile\"" },
                { "~/.bash_profile", "\"@/home/.bash_profile\" is \"@/home/.bash_profile\"" },
                { "~/.zshrc", "\"@/home/.zshrc\" is \"@/home/.zshrc\"" },
                { "~/.zprofile", "\"@/home/.zprofile\" is \"@/home/.zprofile\"" },
                { "~/.local/share/systemd", "\"@/home/.local/share/systemd\" is \"@/home/.local/share/systemd\"" },
                { "@/run/bus", "\"@/run/bus\" lies inside \"@/run\"" },
        };

        /* The workspace lies outside the home directory, so that "~" is judged by what it holds. */
        mkdirs("proj");
        mkdirs("home/.ssh/keys");
        mkdirs("home/.gnupg");
        mkdirs("home/.config/systemd/user");
        mkdirs("home/.config/autostart");
        mkdirs("home/.config/fish");
        mkdirs("home/.local/share/systemd");
        mkdirs("run/bus");
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *hostp = NULL, *vol = NULL, *text = NULL, *forced = NULL, *ftext = NULL, *want = NULL;
                const char *h = cases[i].host;

                if (h[0] == '@')
                        cr_assert(asprintf(&hostp, "%s%s", top, h + 1) > 0);
                else
                        hostp = strdup(h);
                cr_assert(asprintf(&vol, "{\"host\": \"%s\", \"container\": \"/v\"}", hostp) > 0);
                cr_assert(asprintf(&forced, "{\"host\": \"%s\", \"container\": \"/v\", \"force\": true}", hostp) > 0);
                text = profile_with_volumes(vol);
                ftext = profile_with_volumes(forced);
                cr_assert(asprintf(&want, "%%: profiles.dev.volumes[0].host: %s, which holds credentials or starts programs on the host; "
                                   "add \"force\": true to this volume to mount it anyway", cases[i].want) > 0);
                if (strstr(h, "rc") || strstr(h, "profile")) {
                        _cleanup_free_ char *f = NULL;
                        cr_assert(asprintf(&f, "%s/home/%s", top, h + 2) > 0);
                        close(open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
                }
                refused_exactly(text, "proj", -EPERM, want);
                accepted(ftext, "proj");
        }

        /* Containing one: "~/.local" holds ~/.local/share/systemd (the data root is elsewhere here). */
        {
                _cleanup_free_ char *text = NULL, *data = sub("data");
                mkdirs("data");
                chmod(data, 0700);
                cr_assert(asprintf(&text, "{\"data_root\": \"%s\", \"profiles\": {\"dev\": {\"image\": \"builtin:default\", "
                                   "\"volumes\": [{\"host\": \"~/.local\", \"container\": \"/v\"}]}}, \"default_profile\": \"dev\"}", data) > 0);
                refused_exactly(text, "proj", -EPERM,
                                "%: profiles.dev.volumes[0].host: \"@/home/.local\" contains \"@/home/.local/share/systemd\", which holds "
                                "credentials or starts programs on the host; add \"force\": true to this volume to mount it anyway");
        }
}

Test(domain, symlinked_sources_refused_naming_the_resolved_path, .init = setup, .fini = teardown) {
        _cleanup_free_ char *real = sub("home/real"), *link = sub("home/link"), *t1 = NULL, *t2 = NULL, *t3 = NULL,
                            *wsreal = sub("projects/p"), *wslink = sub("wslink"), *err = NULL, *want = NULL,
                            *datareal = sub("data"), *datalink = sub("datalink");
        _cleanup_config_ Config *c = NULL;
        Domain *d = NULL;

        mkdirs("proj");
        mkdirs("home/real/sub");
        mkdirs("projects/p");
        mkdirs("data");
        chmod(datareal, 0700);
        cr_assert_eq(symlink(real, link), 0);
        cr_assert_eq(symlink(sub("projects"), wslink), 0);
        cr_assert_eq(symlink(datareal, datalink), 0);

        t1 = profile_with_volumes("{\"host\": \"~/link\", \"container\": \"/v\"}");
        refused_exactly(t1, "proj", -ELOOP,
                        "%: profiles.dev.volumes[0].host: \"@/home/link\" is a symbolic link (\"@/home/link\"); "
                        "name its resolved path \"@/home/real\" instead");
        t2 = profile_with_volumes("{\"host\": \"~/link/sub\", \"container\": \"/v\"}");
        refused_exactly(t2, "proj", -ELOOP,
                        "%: profiles.dev.volumes[0].host: \"@/home/link/sub\" goes through a symbolic link (\"@/home/link\"); "
                        "name its resolved path \"@/home/real/sub\" instead");
        cr_assert(asprintf(&t3, "{\"data_root\": \"%s/lazaret\"}", datalink) > 0);
        refused_exactly(t3, "proj", -ELOOP,
                        "%: data_root: \"@/datalink/lazaret\" goes through a symbolic link (\"@/datalink\") that does not resolve; "
                        "name the real path instead");
        mkdirs("data/lazaret");
        refused_exactly(t3, "proj", -ELOOP,
                        "%: data_root: \"@/datalink/lazaret\" goes through a symbolic link (\"@/datalink\"); "
                        "name its resolved path \"@/data/lazaret\" instead");

        /* The workspace: named through a link, refused at once. */
        c = load(NULL);
        cr_assert(asprintf(&want, "workspace \"%s/p\" goes through a symbolic link; name its resolved path \"%s\" instead",
                           wslink, wsreal) > 0);
        {
                _cleanup_free_ char *ws = NULL;
                cr_assert(asprintf(&ws, "%s/p", wslink) > 0);
                cr_assert_eq(domain_new(c, env_now(), NULL, ws, &d, &err), -ELOOP);
                cr_assert_str_eq(err, want);
                cr_assert_null(d);
        }

        /* A dangling volume source and a missing one. */
        free(t1);
        t1 = profile_with_volumes("{\"host\": \"~/missing\", \"container\": \"/v\"}");
        refused_exactly(t1, "proj", -ENOENT, "%: profiles.dev.volumes[0].host: \"@/home/missing\" does not exist");
}

Test(domain, sources_under_directories_others_can_change, .init = setup, .fini = teardown) {
        _cleanup_free_ char *open_dir = sub("open"), *sticky = sub("sticky"), *t1 = NULL, *t2 = NULL, *shared = sub("shared");

        mkdirs("open/proj");
        mkdirs("sticky/proj");
        mkdirs("proj");
        mkdirs("shared/v");
        cr_assert_eq(chmod(open_dir, 0777), 0);
        cr_assert_eq(chmod(sticky, 01777), 0);

        /* Hole 4: the workspace under a 0777 directory. */
        refused_exactly(NULL, "open/proj", -EPERM,
                        "workspace \"@/open/proj\": \"@/open\" is writable by group or others (mode 0777), who could swap what is mounted; "
                        "every directory from / down to a mount source, and the source itself, must belong to root or to you and be "
                        "writable by nobody else (a sticky directory such as /tmp excepted)");
        /* A sticky directory whose entry is ours is fine (like /tmp)... */
        accepted(NULL, "sticky/proj");
        /* ...but not as a source itself: others could plant files in it. */
        cr_assert(asprintf(&t1, "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"%s\", \"container\": \"/v\"}]}}, \"default_profile\": \"dev\"}", sticky) > 0);
        refused_exactly(t1, "proj", -EPERM,
                        "%: profiles.dev.volumes[0].host: \"@/sticky\" is writable by group or others (mode 1777), who could swap what is mounted; "
                        "every directory from / down to a mount source, and the source itself, must belong to root or to you and be "
                        "writable by nobody else (a sticky directory such as /tmp excepted)");
        /* Group-writable is refused too. */
        cr_assert_eq(chmod(open_dir, 0775), 0);
        refused_exactly("{}", "open/proj", -EPERM,
                        "workspace \"@/open/proj\": \"@/open\" is writable by group or others (mode 0775), who could swap what is mounted; "
                        "every directory from / down to a mount source, and the source itself, must belong to root or to you and be "
                        "writable by nobody else (a sticky directory such as /tmp excepted)");
        cr_assert_eq(chmod(open_dir, 0755), 0);
        accepted("{}", "open/proj");

        /* A volume source owned by another user (needs root to arrange). */
        if (getuid() == 0) {
                cr_assert_eq(chown(shared, 65534, 65534), 0);
                cr_assert(asprintf(&t2, "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"%s/v\", \"container\": \"/v\"}]}}, \"default_profile\": \"dev\"}", shared) > 0);
                refused_exactly(t2, "proj", -EPERM,
                                "%: profiles.dev.volumes[0].host: \"@/shared\" is owned by UID 65534, who could swap what is mounted; "
                                "every directory from / down to a mount source, and the source itself, must belong to root or to you and be "
                                "writable by nobody else (a sticky directory such as /tmp excepted)");
        } else
                cr_log_warn("not root: the foreign-owner case is not exercised");
}

/* An ACL granting write to a named user (system.posix_acl_access, written directly: no setfacl here). */
Test(domain, acl_granting_write_refused, .init = setup, .fini = teardown) {
        _cleanup_free_ char *dir = sub("acl");
        /* version 2; user::rwx, user:65534:rwx, group::r-x, mask::rwx, other::r-x */
        const uint8_t acl[] = {
                2, 0, 0, 0,
                0x01, 0, 7, 0, 0xff, 0xff, 0xff, 0xff,
                0x02, 0, 7, 0, 0xfe, 0xff, 0, 0,
                0x04, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
                0x10, 0, 7, 0, 0xff, 0xff, 0xff, 0xff,
                0x20, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
        };

        mkdirs("acl/proj");
        if (setxattr(dir, "system.posix_acl_access", acl, sizeof(acl), 0) < 0) {
                cr_log_warn("cannot set an ACL on %s (%m): not exercised", dir);
                return;
        }
        refused_exactly(NULL, "acl/proj", -EPERM,
                        "workspace \"@/acl/proj\": \"@/acl\" has an ACL that lets ID 65534 write it; "
                        "every directory from / down to a mount source, and the source itself, must belong to root or to you and be "
                        "writable by nobody else (a sticky directory such as /tmp excepted)");
}

/* A Domain is built only on a resolved configuration: runsc judged, fingerprint taken. */
Test(domain, unresolved_config_refused) {
        static const ConfigEnv cenv = { .home = "/home/u", .xdg_data_home = "/home/u/.local/share" };
        _cleanup_config_ Config *c = NULL;
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *err = NULL;

        cr_assert_eq(config_parse("{}", 2, "/cfg.json", &cenv, &c, &err), 0, "%s", err ?: "");
        cr_assert_eq(domain_new(c, env_now(), NULL, "/", &d, &err), -ESTALE);
        cr_assert_null(d);
        cr_assert_str_eq(err, "/cfg.json: the configuration was parsed but not resolved (config_resolve())");
}
