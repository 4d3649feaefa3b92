/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "domain.h"
#include "fs-util.h"
#include "hash.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"
#include "tokens.h"
#include "util.h"


/* ------------------------------------------------------------- identity */

int domain_id_compute(const char *profile, const char *canonical_workspace, char ret[DOMAIN_ID_LEN + 1]) {
        _cleanup_free_ char *s = NULL;
        uint8_t digest[SHA256_DIGEST_LEN];
        char hex[SHA256_HEX_LEN + 1];

        if (!profile_name_is_valid(profile) || !path_is_absolute(canonical_workspace))
                return -EINVAL;
        if (asprintf(&s, "%s:%s", profile, canonical_workspace) < 0)
                return -ENOMEM;
        sha256_buf(s, strlen(s), digest);
        hexify(digest, SHA256_DIGEST_LEN, hex);
        memcpy(ret, hex, DOMAIN_ID_LEN);
        ret[DOMAIN_ID_LEN] = 0;
        return 0;
}

bool domain_id_is_valid(const char *s) {
        if (!s || strlen(s) != DOMAIN_ID_LEN)
                return false;
        for (size_t i = 0; i < DOMAIN_ID_LEN; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

int workspace_canonicalize(const char *path, char **ret) {
        _cleanup_free_ char *c = NULL;
        struct stat st;

        c = realpath(path, NULL);
        if (!c)
                return -errno;
        if (stat(c, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        if (strlen(c) > LAZARET_PATH_MAX)
                return -ENAMETOOLONG;
        *ret = TAKE_PTR(c);
        return 0;
}

int workspace_discover(const char *dir, char **ret) {
        _cleanup_free_ char *c = NULL, *cur = NULL;
        int r;

        r = workspace_canonicalize(dir, &c);
        if (r < 0)
                return r;
        cur = strdup(c);
        if (!cur)
                return -ENOMEM;

        for (;;) {
                _cleanup_free_ char *g = path_join(cur, ".git");
                struct stat st;

                if (!g)
                        return -ENOMEM;
                /* A directory (normal repository) or a file (worktree, submodule). */
                if (lstat(g, &st) >= 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
                        *ret = TAKE_PTR(cur);
                        return 0;
                }
                if (streq(cur, "/"))
                        break;
                char *slash = strrchr(cur, '/');
                if (slash == cur)
                        cur[1] = 0;
                else
                        *slash = 0;
        }

        *ret = TAKE_PTR(c);
        return 0;
}

/* --------------------------------------------------------------- domain */

Domain *domain_free(Domain *d) {
        if (!d)
                return NULL;
        free(d->workspace);
        host_context_done(&d->host);
        free(d->profile_dir);
        free(d->domain_dir);
        free(d);
        return NULL;
}

int domain_new(const Config *c, const HostContext *hc, const char *profile, const char *workspace,
               Domain **ret, char **ret_error) {
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *sub = NULL;
        int r;

        *ret_error = NULL;
        profile = profile ?: c->default_profile;

        /* An unresolved configuration has a runsc nobody judged and no fingerprint: refuse to build on it. */
        if (!c->resolved)
                return errorf(ret_error, -ESTALE, "%s: the configuration was parsed but not resolved (config_resolve())",
                              c->path ?: "the built-in configuration");

        if (!profile_name_is_valid(profile))
                return errorf(ret_error, -EINVAL,
                              "\"%s\" is not a valid profile name (2 to 32 characters of a-z, 0-9, '_' and '-')", profile);

        d = calloc(1, sizeof(Domain));
        if (!d)
                return -ENOMEM;
        d->config = c;
        d->profile = config_find_profile(c, profile);
        if (!d->profile)
                return errorf(ret_error, -ENOENT, "no profile named \"%s\" in %s", profile,
                              c->path ?: "the built-in configuration");

        if (workspace) {
                _cleanup_free_ char *written = NULL;

                r = workspace_canonicalize(workspace, &d->workspace);
                if (r < 0)
                        return errorf(ret_error, r, "workspace \"%s\": %s", workspace, strerror(-r));
                /* Hole 3/4: the path as written must be the path itself, with no
                 * symbolic link on the way (which another party could re-point). */
                r = path_absolute_lexical(workspace, hc->cwd, &written);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && !streq(written, d->workspace))
                        return errorf(ret_error, -ELOOP,
                                      "workspace \"%s\" goes through a symbolic link; name its resolved path \"%s\" instead",
                                      workspace, d->workspace);
        } else {
                if (!hc->cwd)
                        return errorf(ret_error, -hc->cwd_errno, "cannot determine the current directory: %s",
                                      strerror(hc->cwd_errno));
                r = workspace_discover(hc->cwd, &d->workspace);
                if (r < 0)
                        return errorf(ret_error, r, "workspace \"%s\": %s", hc->cwd, strerror(-r));
        }

        /* The Domain record, the launch request and the mount plan are JSON, which holds UTF-8 only. */
        if (!utf8_is_valid(d->workspace)) {
                _cleanup_free_ char *shown = utf8_escape_invalid(d->workspace);
                return errorf(ret_error, -EILSEQ,
                              "workspace \"%s\": the path is not valid UTF-8, and Lazaret records and mounts UTF-8 paths only; "
                              "rename the directory", strna(shown));
        }
        if (!hc->home)
                return errorf(ret_error, -ENXIO, "cannot determine the home directory: %s", strerror(ENXIO));
        r = host_context_copy(hc, &d->host);
        if (r < 0)
                return r;

        if (streq(d->workspace, "/"))
                return errorf(ret_error, -EPERM, "the file system root cannot be a workspace");
        {
                _cleanup_free_ char *home_canon = NULL;
                if (path_canonicalize(d->host.home, &home_canon) >= 0 && path_is_at_or_below(home_canon, d->workspace))
                        return errorf(ret_error, -EPERM,
                                      "workspace \"%s\" contains your home directory; choose a project directory",
                                      d->workspace);
        }

        r = domain_id_compute(d->profile->name, d->workspace, d->id);
        if (r < 0)
                return errorf(ret_error, r, "cannot compute the Domain ID: %s", strerror(-r));

        if (asprintf(&sub, "profiles/%s", d->profile->name) < 0)
                return -ENOMEM;
        d->profile_dir = path_join(c->data_root, sub);
        free(sub);
        sub = NULL;
        if (asprintf(&sub, "domains/%s", d->id) < 0)
                return -ENOMEM;
        d->domain_dir = path_join(c->data_root, sub);
        if (!d->profile_dir || !d->domain_dir)
                return -ENOMEM;

        *ret = TAKE_PTR(d);
        return 0;
}

static void token_context(const Domain *d, TokenContext *tc) {
        *tc = (TokenContext) {
                .home = d->host.home,
                .profile_name = d->profile->name,
                .profile_dir = d->profile_dir,
                .domain_hash = d->id,
                .domain_dir = d->domain_dir,
                .workspace_dir = d->workspace,
        };
}

static const char *cfg_name(const Domain *d) {
        return d->config->path ?: "built-in configuration";
}

/*
 * Expands a host path template. Mount sources (resolve false) are only
 * normalised: domain_check_sources() then refuses any symbolic link on the
 * way instead of following it. Other paths (an oci: image) are resolved.
 */
static int expand_host_path(const Domain *d, const char *in, const char *keypath, bool resolve, char **ret, char **ret_error) {
        _cleanup_free_ char *expanded = NULL, *why = NULL;
        TokenContext tc;
        int r;

        token_context(d, &tc);
        r = tokens_expand(in, TOKEN_ALL, &tc, &expanded, &why);
        if (r < 0)
                return errorf(ret_error, r, "%s: %s: %s", cfg_name(d), keypath, why ?: "cannot expand");
        if (!path_is_absolute(expanded) || path_has_dotdot(expanded))
                return errorf(ret_error, -EINVAL, "%s: %s: \"%s\" expands to \"%s\", which is not an absolute path without \"..\"",
                              cfg_name(d), keypath, in, expanded);
        r = resolve ? path_canonicalize(expanded, ret) : path_normalize(expanded, ret);
        if (r < 0)
                return errorf(ret_error, r, "%s: %s: \"%s\" cannot be resolved: %s", cfg_name(d), keypath, expanded, strerror(-r));
        return 0;
}

void resolved_volumes_free(ResolvedVolume *v, size_t n) {
        for (size_t i = 0; v && i < n; i++) {
                free(v[i].host);
                free(v[i].container);
                safe_close(v[i].fd);
        }
        free(v);
}

int domain_resolve_volumes(const Domain *d, ResolvedVolume **ret, size_t *ret_n, char **ret_error) {
        const Profile *p = d->profile;
        ResolvedVolume *v;
        int r;

        *ret_error = NULL;
        v = calloc(p->n_volumes ?: 1, sizeof(ResolvedVolume));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_volumes; i++)
                v[i].fd = -EBADF;
        for (size_t i = 0; i < p->n_volumes; i++) {
                _cleanup_free_ char *kp = NULL;

                if (asprintf(&kp, "profiles.%s.volumes[%zu].host", p->name, i) < 0) {
                        resolved_volumes_free(v, i);
                        return -ENOMEM;
                }
                r = expand_host_path(d, p->volumes[i].host, kp, false, &v[i].host, ret_error);
                if (r >= 0) {
                        v[i].container = strdup(p->volumes[i].container);
                        if (!v[i].container)
                                r = -ENOMEM;
                }
                if (r < 0) {
                        resolved_volumes_free(v, i + 1);
                        return r;
                }
                v[i].mode = p->volumes[i].mode;
                v[i].force = p->volumes[i].force;
        }
        *ret = v;
        *ret_n = p->n_volumes;
        return 0;
}

int domain_resolve_image(const Domain *d, char **ret_dir, char **ret_tag, char **ret_error) {
        const ImageRef *img = &d->profile->image;
        _cleanup_free_ char *dir = NULL, *tag = NULL, *kp = NULL;
        int r;

        *ret_error = NULL;
        if (img->kind == IMAGE_BUILTIN) {
                dir = path_join(d->config->data_root, STORAGE_BUILTIN_IMAGE_DIR);
                tag = strdup("latest");
        } else {
                if (asprintf(&kp, "profiles.%s.image", d->profile->name) < 0)
                        return -ENOMEM;
                r = expand_host_path(d, img->path, kp, true, &dir, ret_error);
                if (r < 0)
                        return r;
                tag = strdup(img->tag);
        }
        if (!dir || !tag)
                return -ENOMEM;
        *ret_dir = TAKE_PTR(dir);
        *ret_tag = TAKE_PTR(tag);
        return 0;
}

int runtime_dir_path(const HostContext *hc, char **ret) {
        const char *e = hc->xdg_runtime_dir;
        _cleanup_free_ char *n = NULL;
        int r;

        if (isempty(e) || !path_is_absolute(e))
                return -ENXIO;
        r = path_normalize(e, &n);
        if (r < 0)
                return r;
        *ret = path_join(n, "lazaret");
        return *ret ? 0 : -ENOMEM;
}

/* One mount source against every protected location. */
static int check_one_mount(const Domain *d, const char *what, const char *m, bool is_workspace,
                           char *const *protected, const char *runtime, char **ret_error) {
        const char *data_root = d->config->data_root;

        for (size_t i = 0; protected[i]; i++)
                if (path_is_at_or_below(protected[i], m))
                        return errorf(ret_error, -EPERM,
                                      "%s \"%s\" contains the Lazaret configuration location \"%s\"; host configuration must never be visible in the sandbox",
                                      what, m, protected[i]);

        if (path_is_at_or_below(data_root, m))
                return errorf(ret_error, -EPERM, "%s \"%s\" contains the Lazaret data root \"%s\"", what, m, data_root);
        if (path_is_at_or_below(m, data_root) &&
            (is_workspace || !(path_is_at_or_below(m, d->profile_dir) || path_is_at_or_below(m, d->domain_dir))))
                return errorf(ret_error, -EPERM,
                              "%s \"%s\" lies inside the Lazaret data root; only this profile's {profile_dir} and this Domain's {domain_dir} may be mounted",
                              what, m);

        /* Issue 33: the State Anchor's layers keep owners and set-ID bits as
         * written inside; no mount of the sandbox's may reach them. */
        if (d->domain_dir && path_is_at_or_below(m, d->domain_dir))
                for (const char *const *sub = (const char *const[]) { STATE_ANCHOR_DIR, STATE_ANCHOR_TRASH_DIR, NULL }; *sub; sub++) {
                        _cleanup_free_ char *layers = path_join(d->domain_dir, *sub);
                        if (!layers)
                                return -ENOMEM;
                        if (path_is_at_or_below(layers, m) || path_is_at_or_below(m, layers))
                                return errorf(ret_error, -EPERM, "%s \"%s\" reaches the Domain's persistent layers \"%s\"",
                                              what, m, layers);
                }
        if (runtime && (path_is_at_or_below(runtime, m) || path_is_at_or_below(m, runtime)))
                return errorf(ret_error, -EPERM, "%s \"%s\" overlaps the Lazaret runtime directory \"%s\"", what, m, runtime);
        return 0;
}

/*
 * Hole 3: a mount source nested in another mount (or in the workspace) has a
 * parent the sandbox can write, so the sandbox could replace it with a
 * symbolic link that the next launch would mount. No nesting at all: not in
 * the workspace, not around it, not in or around another volume.
 */
static int check_nesting(const Domain *d, const ResolvedVolume *v, size_t i, char **ret_error) {
        const char *m = v[i].host;
        const char *name = d->profile->name;

        if (path_is_at_or_below(m, d->workspace))
                return errorf(ret_error, -EPERM,
                              "%s: profiles.%s.volumes[%zu].host: \"%s\" lies inside the workspace \"%s\"; a volume may not lie inside or contain the workspace or another volume",
                              cfg_name(d), name, i, m, d->workspace);
        if (path_is_at_or_below(d->workspace, m))
                return errorf(ret_error, -EPERM,
                              "%s: profiles.%s.volumes[%zu].host: \"%s\" contains the workspace \"%s\"; a volume may not lie inside or contain the workspace or another volume",
                              cfg_name(d), name, i, m, d->workspace);
        for (size_t j = 0; j < i; j++) {
                const char *o = v[j].host;

                if (path_is_at_or_below(m, o) || path_is_at_or_below(o, m))
                        return errorf(ret_error, -EPERM,
                                      "%s: profiles.%s.volumes[%zu].host: \"%s\" %s profiles.%s.volumes[%zu].host \"%s\"; a volume may not lie inside or contain the workspace or another volume",
                                      cfg_name(d), name, i, m,
                                      streq(m, o) ? "is the same as" : path_is_at_or_below(m, o) ? "lies inside" : "contains",
                                      name, j, o);
        }
        return 0;
}

/*
 * The host's kernel file systems are never a volume, "force" or not: /proc
 * would show every host process's command line and environment, /sys and
 * /dev the machine's devices.
 */
static int check_kernel_fs(const Domain *d, const char *what, const char *m, char **ret_error) {
        static const char *const kernel[] = { "/proc", "/sys", "/dev", NULL };

        for (size_t i = 0; kernel[i]; i++)
                if (path_is_at_or_below(m, kernel[i]))
                        return errorf(ret_error, -EPERM,
                                      "%s: %s: \"%s\" lies in %s, a kernel file system of the host; it cannot be mounted into a sandbox",
                                      cfg_name(d), what, m, kernel[i]);
        return 0;
}

/* Below the home directory: what holds credentials or starts programs on the host. */
static const char *const sensitive_in_home[] = {
        ".ssh", ".gnupg",
        ".config/systemd", ".config/autostart", ".config/fish",
        ".bashrc", ".profile", ".bash_profile", ".zshrc", ".zprofile",
        NULL,
};
/* Below $XDG_CONFIG_HOME and $XDG_DATA_HOME, where systemd and desktops look too. */
static const char *const sensitive_in_config[] = { "systemd", "autostart", "fish", NULL };
static const char *const sensitive_in_data[] = { "systemd", NULL };

static int sensitive_add(char ***list, const char *base, const char *rel) {
        _cleanup_free_ char *p = NULL, *canon = NULL;
        int r;

        if (!base)
                return 0;
        p = rel ? path_join(base, rel) : strdup(base);
        if (!p)
                return -ENOMEM;
        r = strv_extend(list, p);
        if (r < 0)
                return r;
        /* Also as the file system resolves it today: a source is compared as written,
         * and only a symlink-free source gets past domain_check_sources(). */
        if (path_canonicalize(p, &canon) >= 0 && !streq(canon, p))
                return strv_extend(list, canon);
        return 0;
}

/*
 * The locations a volume may not be, lie in or contain unless "force": true:
 * ~/.ssh, ~/.gnupg, systemd and autostart directories, shell start-up files,
 * $XDG_RUNTIME_DIR and the bus socket (from the HostContext), as written and
 * as resolved today. *ret may be NULL (nothing known to protect).
 */
static int sensitive_paths(const Domain *d, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r = 0;

        for (size_t i = 0; r >= 0 && sensitive_in_home[i]; i++)
                r = sensitive_add(&l, d->host.home, sensitive_in_home[i]);
        for (size_t i = 0; r >= 0 && sensitive_in_config[i]; i++)
                r = sensitive_add(&l, d->host.xdg_config_home, sensitive_in_config[i]);
        for (size_t i = 0; r >= 0 && sensitive_in_data[i]; i++)
                r = sensitive_add(&l, d->host.xdg_data_home, sensitive_in_data[i]);
        if (r >= 0 && d->host.xdg_runtime_dir && path_is_absolute(d->host.xdg_runtime_dir)) {
                _cleanup_free_ char *rt = NULL;
                r = path_normalize(d->host.xdg_runtime_dir, &rt);
                if (r >= 0)
                        r = sensitive_add(&l, rt, NULL);
                if (r >= 0)
                        r = sensitive_add(&l, rt, "bus");       /* the user bus socket */
        }
        if (r == -ENOMEM)
                return r;
        *ret = TAKE_PTR(l);     /* NULL: nothing to protect */
        return 0;
}

static int check_sensitive(const Domain *d, char **sensitive, const char *what, const char *m, char **ret_error) {
        STRV_FOREACH(s, sensitive) {
                const char *how;

                if (streq(m, *s))
                        how = "is";
                else if (path_is_at_or_below(m, *s))
                        how = "lies inside";
                else if (path_is_at_or_below(*s, m))
                        how = "contains";
                else
                        continue;
                return errorf(ret_error, -EPERM,
                              "%s: %s: \"%s\" %s \"%s\", which holds credentials or starts programs on the host; "
                              "add \"force\": true to this volume to mount it anyway",
                              cfg_name(d), what, m, how, *s);
        }
        return 0;
}

int domain_check_exposure(const Domain *d, const ResolvedVolume *v, size_t n, char **ret_error) {
        _cleanup_free_ char *def = NULL, *def_canon = NULL, *xdg_default = NULL, *xdg_canon = NULL,
                            *runtime = NULL, *runtime_canon = NULL;
        _cleanup_strv_free_ char **sensitive = NULL;
        bool have_sensitive = false;
        char *protected[4] = {};
        size_t np = 0;
        int r;

        *ret_error = NULL;
        /* The file in use, and the places a configuration would be read from. */
        if (d->config->path)
                protected[np++] = d->config->path;
        if (config_default_path(&d->host, &def) >= 0 && path_is_absolute(def) && path_canonicalize(def, &def_canon) >= 0)
                protected[np++] = def_canon;
        if (d->host.xdg_config_home) {
                xdg_default = path_join(d->host.xdg_config_home, "lazaret/config.json");
                if (xdg_default && path_canonicalize(xdg_default, &xdg_canon) >= 0)
                        protected[np++] = xdg_canon;
        }

        if (runtime_dir_path(&d->host, &runtime) >= 0)
                (void) path_canonicalize(runtime, &runtime_canon);

        r = check_one_mount(d, "workspace", d->workspace, true, protected, runtime_canon, ret_error);
        if (r < 0)
                return r;
        /* The runsc binary is canonical (config_resolve() refuses symlinks): compare it as it is. */
        if (d->config->runsc && path_is_at_or_below(d->config->runsc, d->workspace))
                return errorf(ret_error, -EPERM, "%s: runtime.runsc: \"%s\" lies inside the workspace \"%s\", which the sandbox can write",
                              cfg_name(d), d->config->runsc, d->workspace);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what, "profiles.%s.volumes[%zu].host", d->profile->name, i) < 0)
                        return -ENOMEM;
                r = check_one_mount(d, what, v[i].host, false, protected, runtime_canon, ret_error);
                if (r < 0)
                        return r;
                r = check_kernel_fs(d, what, v[i].host, ret_error);
                if (r < 0)
                        return r;
                if (d->config->runsc && path_is_at_or_below(d->config->runsc, v[i].host))
                        return errorf(ret_error, -EPERM, "%s: runtime.runsc: \"%s\" lies inside %s \"%s\", which is mounted into the sandbox",
                                      cfg_name(d), d->config->runsc, what, v[i].host);
                r = check_nesting(d, v, i, ret_error);
                if (r < 0)
                        return r;
                if (!v[i].force) {
                        if (!have_sensitive) {  /* built once, and only when a volume needs it */
                                r = sensitive_paths(d, &sensitive);
                                if (r < 0)
                                        return r;
                                have_sensitive = true;
                        }
                        r = check_sensitive(d, sensitive, what, v[i].host, ret_error);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* What path_walk() requires of a mount source, for its messages. */
static const char source_rule[] =
        "every directory from / down to a mount source, and the source itself, must belong to root or to you and be "
        "writable by nobody else (a sticky directory such as /tmp excepted)";

/* One mount source, opened component by component (see path_walk()). */
static int check_source(const char *label, const char *path, PathWalkFlags flags, bool missing_ok, int *ret_fd,
                        char **ret_error) {
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        int r;

        r = path_walk(path, flags | PATH_WALK_TRUSTED, ret_fd, &w);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOENT && w.failure == PATH_WALK_MISSING && missing_ok)
                return 0;
        if (r < 0)
                return path_walk_error(label, path, &w, r, "what is mounted", source_rule, ret_error);
        return 0;
}

/* The workspace: as any source, but what the sandbox may have changed names its repair. */
static int check_workspace(const char *label, const char *path, int *ret_fd, char **ret_error) {
        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        int r;

        r = path_walk(path, PATH_WALK_TRUSTED, ret_fd, &w);
        if (r == -ENOMEM)
                return r;
        if (r < 0 && w.at && path_is_at_or_below(w.at, path))
                return path_repair_error(label, path, &w, r, "its .git, and so what host git runs", ret_error);
        if (r < 0)
                return path_walk_error(label, path, &w, r, "what is mounted", source_rule, ret_error);
        return 0;
}

int domain_check_sources(const Domain *d, ResolvedVolume *v, size_t n, bool create, int *ret_workspace_fd,
                         char **ret_error) {
        _cleanup_free_ char *label = NULL;
        _cleanup_close_ int wfd = -EBADF;
        int r;

        *ret_error = NULL;
        if (asprintf(&label, "workspace \"%s\"", d->workspace) < 0)
                return -ENOMEM;
        r = check_workspace(label, d->workspace, &wfd, ret_error);
        if (r < 0)
                return r;

        /* The data root is created (0700, by us) when it is missing. */
        free(label);
        if (asprintf(&label, "%s: data_root", cfg_name(d)) < 0)
                return -ENOMEM;
        r = check_source(label, d->config->data_root, 0, true, NULL, ret_error);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                /* Lazaret's own directories: created on the way when asked, never by a path. */
                bool own = path_is_at_or_below(v[i].host, d->profile_dir) || path_is_at_or_below(v[i].host, d->domain_dir);

                free(label);
                if (asprintf(&label, "%s: profiles.%s.volumes[%zu].host", cfg_name(d), d->profile->name, i) < 0)
                        return -ENOMEM;
                v[i].fd = safe_close(v[i].fd);
                r = check_source(label, v[i].host, own && create ? PATH_WALK_MKDIR : 0, own && !create, &v[i].fd,
                                 ret_error);
                if (r < 0)
                        return r;
        }
        if (ret_workspace_fd)
                *ret_workspace_fd = TAKE_FD(wfd);
        return 0;
}

int domain_resolve_mounts(const Domain *d, bool create, ResolvedVolume **ret, size_t *ret_n, int *ret_workspace_fd,
                          char **ret_error) {
        ResolvedVolume *v = NULL;
        size_t n = 0;
        int r;

        *ret_error = NULL;
        r = domain_resolve_volumes(d, &v, &n, ret_error);
        if (r < 0)
                return r;
        r = domain_check_exposure(d, v, n, ret_error);
        if (r >= 0)
                r = domain_check_sources(d, v, n, create, ret_workspace_fd, ret_error);
        if (r < 0) {
                resolved_volumes_free(v, n);
                return r;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int domain_validate(const Domain *d, char **ret_error) {
        _cleanup_free_ char *dir = NULL, *tag = NULL;
        ResolvedVolume *v = NULL;
        size_t n = 0;
        int r;

        *ret_error = NULL;
        r = domain_resolve_mounts(d, false, &v, &n, NULL, ret_error);
        if (r < 0)
                return r;
        resolved_volumes_free(v, n);
        return domain_resolve_image(d, &dir, &tag, ret_error);
}

/* -------------------------------------------------------------- storage */

/* A directory that only its owner may enter, not a symlink, owned by us. */
static int check_private_dir(int fd, const char *path, char **ret_error) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return errorf(ret_error, -errno, "%s: %m", path);
        if (!S_ISDIR(st.st_mode))
                return errorf(ret_error, -ENOTDIR, "%s: not a directory", path);
        if (st.st_uid != getuid())
                return errorf(ret_error, -EPERM, "%s: owned by UID %u, not by you", path, (unsigned) st.st_uid);
        if (st.st_mode & 077)
                return errorf(ret_error, -EPERM, "%s: accessible by other users (mode %04o); run chmod 0700 on it",
                              path, (unsigned) (st.st_mode & 07777));
        return 0;
}

static int mkdir_private_at(int dirfd, const char *parent, const char *name, int *ret_fd, char **ret_error) {
        _cleanup_free_ char *full = path_join(parent, name);
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!full)
                return -ENOMEM;
        if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
                return errorf(ret_error, -errno, "cannot create %s: %m", full);
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errorf(ret_error, -errno, "cannot open %s: %m", full);
        r = check_private_dir(fd, full, ret_error);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* mkdir -p for the Storage Root itself; missing parents are created 0700. */
static int open_storage_root(const char *root, int *ret_fd, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        _cleanup_(path_walk_result_done) PathWalkResult w = {};
        _cleanup_free_ char *label = NULL;

        /* By fd from "/", creating what is missing: no symlink, no directory another user can change. */
        r = path_walk(root, PATH_WALK_TRUSTED | PATH_WALK_MKDIR, &fd, &w);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (asprintf(&label, "data root %s", root) < 0)
                        return -ENOMEM;
                return path_walk_error(label, root, &w, r, "what is mounted", source_rule, ret_error);
        }
        r = check_private_dir(fd, root, ret_error);
        if (r < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int record_json(const Domain *d, char **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add_int64(o, "version", 1);
        if (r < 0)
                return r;
        r = json_add_string(o, "domain_id", d->id);
        if (r < 0)
                return r;
        r = json_add_string(o, "profile", d->profile->name);
        if (r < 0)
                return r;
        r = json_add_string(o, "workspace", d->workspace);
        if (r < 0)
                return r;
        return json_to_string(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, ret);
}

static int record_write(int domfd, const Domain *d, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *s = NULL;
        char tmp[64];
        uint64_t rnd;
        int r;

        r = record_json(d, &s);
        if (r == -EILSEQ)
                return errorf(ret_error, r, "%s: cannot build the Domain record: the workspace path is not valid UTF-8",
                              d->domain_dir);
        if (r < 0)
                return errorf(ret_error, r, "%s: cannot build the Domain record: %s", d->domain_dir, strerror(-r));
        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                return errorf(ret_error, -EIO, "getrandom failed");
        snprintf(tmp, sizeof(tmp), ".%s.%016llx", DOMAIN_RECORD_NAME, (unsigned long long) rnd);

        fd = openat(domfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return errorf(ret_error, -errno, "%s: cannot create %s: %m", d->domain_dir, tmp);
        r = write_all(fd, s, strlen(s));
        if (r >= 0)
                r = write_all(fd, "\n", 1);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && renameat(domfd, tmp, domfd, DOMAIN_RECORD_NAME) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(domfd, tmp, 0);
                return errorf(ret_error, r, "%s/%s: cannot write: %s", d->domain_dir, DOMAIN_RECORD_NAME, strerror(-r));
        }
        (void) fsync(domfd);
        return 0;
}

void domain_record_done(DomainRecord *rec) {
        free(rec->profile);
        free(rec->workspace);
        *rec = (DomainRecord) {};
}

static int record_read(int domfd, const char *where, DomainRecord *ret, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL, *why = NULL;
        _cleanup_json_ json_object *o = NULL;
        json_object *v, *id, *prof, *ws;
        struct stat st;
        size_t n;
        int r;

        fd = openat(domfd, DOMAIN_RECORD_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;   /* -ENOENT: no record yet, not an error to report */
        if (fstat(fd, &st) < 0)
                return errorf(ret_error, -errno, "%s: %m", where);
        if (!S_ISREG(st.st_mode) || st.st_uid != getuid())
                return errorf(ret_error, -EBADMSG, "%s: not a regular file of yours", where);
        r = read_full_fd(fd, DOMAIN_RECORD_MAX, &buf, &n);
        if (r < 0)
                return errorf(ret_error, r, "%s: cannot read: %s", where, strerror(-r));

        r = json_parse_strict(buf, n, &o, &why);
        if (r < 0)
                return errorf(ret_error, -EBADMSG, "%s: %s", where, why ?: "invalid");
        if (!json_object_is_type(o, json_type_object) || json_object_object_length(o) != 4 ||
            !json_object_object_get_ex(o, "version", &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int(v) != 1 ||
            !json_object_object_get_ex(o, "domain_id", &id) || !json_object_is_type(id, json_type_string) ||
            !json_object_object_get_ex(o, "profile", &prof) || !json_object_is_type(prof, json_type_string) ||
            !json_object_object_get_ex(o, "workspace", &ws) || !json_object_is_type(ws, json_type_string))
                return errorf(ret_error, -EBADMSG, "%s: not a version 1 domain record", where);

        const char *ids = json_object_get_string(id), *ps = json_object_get_string(prof), *wss = json_object_get_string(ws);
        char check[DOMAIN_ID_LEN + 1];
        if (!domain_id_is_valid(ids) || domain_id_compute(ps, wss, check) < 0 || !streq(check, ids))
                return errorf(ret_error, -EBADMSG, "%s: the record's Domain ID does not match its profile and workspace", where);

        memcpy(ret->id, ids, DOMAIN_ID_LEN + 1);
        ret->profile = strdup(ps);
        ret->workspace = strdup(wss);
        if (!ret->profile || !ret->workspace) {
                domain_record_done(ret);
                return -ENOMEM;
        }
        return 0;
}

int domain_record_load(const char *data_root, const char *id, DomainRecord *ret, char **ret_error) {
        _cleanup_free_ char *dir = NULL, *where = NULL;
        _cleanup_close_ int fd = -EBADF;
        DomainRecord rec = {};
        int r;

        *ret_error = NULL;
        if (!domain_id_is_valid(id))
                return errorf(ret_error, -EINVAL, "\"%s\" is not a Domain ID (12 lowercase hex digits)", id);
        if (asprintf(&dir, "%s/domains/%s", data_root, id) < 0 ||
            asprintf(&where, "%s/%s", dir, DOMAIN_RECORD_NAME) < 0)
                return -ENOMEM;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errorf(ret_error, -errno, "Domain %s is not known here (%s: %m)", id, dir);
        r = check_private_dir(fd, dir, ret_error);
        if (r < 0)
                return r;
        r = record_read(fd, where, &rec, ret_error);
        if (r == -ENOENT)
                return errorf(ret_error, r, "%s: missing", where);
        if (r < 0)
                return r;
        if (!streq(rec.id, id)) {
                domain_record_done(&rec);
                return errorf(ret_error, -EBADMSG, "%s: records Domain %s, not %s", where, rec.id, id);
        }
        *ret = rec;
        return 0;
}

int domain_storage_prepare(const Domain *d, char **ret_error) {
        _cleanup_close_ int rootfd = -EBADF, profsfd = -EBADF, proffd = -EBADF, domsfd = -EBADF, domfd = -EBADF;
        _cleanup_free_ char *profs = NULL, *doms = NULL, *where = NULL;
        DomainRecord rec = {};
        int r;

        *ret_error = NULL;
        profs = path_join(d->config->data_root, "profiles");
        doms = path_join(d->config->data_root, "domains");
        where = path_join(d->domain_dir, DOMAIN_RECORD_NAME);
        if (!profs || !doms || !where)
                return -ENOMEM;

        r = open_storage_root(d->config->data_root, &rootfd, ret_error);
        if (r < 0)
                return r;
        r = mkdir_private_at(rootfd, d->config->data_root, "profiles", &profsfd, ret_error);
        if (r < 0)
                return r;
        r = mkdir_private_at(profsfd, profs, d->profile->name, &proffd, ret_error);
        if (r < 0)
                return r;
        r = mkdir_private_at(rootfd, d->config->data_root, "domains", &domsfd, ret_error);
        if (r < 0)
                return r;
        r = mkdir_private_at(domsfd, doms, d->id, &domfd, ret_error);
        if (r < 0)
                return r;

        r = record_read(domfd, where, &rec, ret_error);
        if (r == -ENOENT) {
                r = record_write(domfd, d, ret_error);
                if (r < 0)
                        return r;
                /* Read back what is there now: a concurrent writer wrote the same or we fail below. */
                r = record_read(domfd, where, &rec, ret_error);
        }
        if (r < 0)
                return r;

        if (!streq(rec.id, d->id) || !streq(rec.profile, d->profile->name) || !streq(rec.workspace, d->workspace)) {
                r = errorf(ret_error, -EBADMSG,
                           "%s records profile \"%s\" and workspace \"%s\", not \"%s\" and \"%s\"; refusing to share its state",
                           where, rec.profile, rec.workspace, d->profile->name, d->workspace);
                domain_record_done(&rec);
                return r;
        }
        domain_record_done(&rec);
        return 0;
}

int runtime_dir_prepare(const HostContext *hc, char **ret, char **ret_error) {
        const char *e = hc->xdg_runtime_dir;
        _cleanup_close_ int fd = -EBADF, sub = -EBADF;
        _cleanup_free_ char *norm = NULL, *path = NULL;
        int r;

        *ret_error = NULL;
        if (isempty(e) || !path_is_absolute(e))
                return errorf(ret_error, -ENXIO,
                              "$XDG_RUNTIME_DIR is not set; Lazaret needs a per-user runtime directory (a systemd user session provides one)");
        r = path_normalize(e, &norm);
        if (r < 0)
                return errorf(ret_error, r, "$XDG_RUNTIME_DIR \"%s\" is not a valid path", e);
        fd = open(norm, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errorf(ret_error, -errno, "$XDG_RUNTIME_DIR %s: %m", norm);
        r = check_private_dir(fd, norm, ret_error);
        if (r < 0)
                return r;
        r = mkdir_private_at(fd, norm, "lazaret", &sub, ret_error);
        if (r < 0)
                return r;
        path = path_join(norm, "lazaret");
        if (!path)
                return -ENOMEM;
        *ret = TAKE_PTR(path);
        return 0;
}
