/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-ignore.h"
#include "host-git.h"
#include "path-util.h"
#include "spawn-util.h"
#include "strv.h"
#include "util.h"

extern char **environ;

/*
 * git's variables go, but for the three that say which of the user's own
 * files git reads: GIT_DIR, GIT_WORK_TREE, GIT_CONFIG_PARAMETERS and the
 * rest could name a repository or values of someone else's choosing.
 */
static bool env_is_git(const char *e) {
        return strncmp(e, "GIT_", 4) == 0 && strncmp(e, "GIT_CONFIG_NOSYSTEM=", 20) != 0 &&
               strncmp(e, "GIT_CONFIG_GLOBAL=", 18) != 0 && strncmp(e, "GIT_CONFIG_SYSTEM=", 18) != 0;
}

int host_git_excludes_file(char **ret, char **ret_error) {
        char *argv[] = { NULL, (char *) "config", (char *) "--path", (char *) "--get", (char *) "core.excludesFile",
                         NULL };
        _cleanup_free_ char *program = NULL, *out = NULL;
        _cleanup_free_ char **envp = NULL;
        size_t n = 0, k = 0;
        int r;

        r = find_program("git", &program);
        if (r < 0)
                return errorf(ret_error, r, "cannot find git to read core.excludesFile: %s", strerror(-r));
        argv[0] = program;
        while (environ[n])
                n++;
        envp = calloc(n + 1, sizeof(char *));
        if (!envp)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!env_is_git(environ[i]))
                        envp[k++] = environ[i];

        r = spawn_output(argv, envp, "/", 64 * 1024, &out);
        if (r < 0)
                return errorf(ret_error, r, "cannot run git config: %s", strerror(-r));
        if (r == 1) /* unset */
                return ignore_default_excludes_file(getenv("XDG_CONFIG_HOME"), getenv("HOME"), ret);
        if (r != 0)
                return errorf(ret_error, -EPROTO, "git config --get core.excludesFile failed (exit status %d)", r);
        size_t len = strlen(out);
        while (len > 0 && out[len - 1] == '\n')
                out[--len] = 0;
        if (len == 0 || memchr(out, '\n', len))
                return errorf(ret_error, -EBADMSG, "git config gave no single value for core.excludesFile");
        *ret = TAKE_PTR(out);
        return 0;
}

int host_git_excludes_source(char **ret_source, char **ret_error) {
        _cleanup_free_ char *source = NULL, *why = NULL;
        int r;

        r = host_git_excludes_file(&source, &why);
        if (r < 0 && r != -ENOENT)
                return errorf(ret_error, r, "cannot find the host's core.excludesFile: %s", why ?: strerror(-r));
        *ret_source = source && path_is_absolute(source) ? TAKE_PTR(source) : NULL;
        return 0;
}

void host_git_commits_free(HostGitCommit *c, size_t n) {
        for (size_t i = 0; c && i < n; i++)
                strv_free(c[i].paths);
        free(c);
}

/* Writes name below dir, a file of ours. */
static int put(const char *dir, const char *name, const char *text) {
        _cleanup_free_ char *p = path_join(dir, name);

        return p ? write_file(p, text, 0600) : -ENOMEM;
}

/*
 * The private git dir: HEAD, an empty refs/ and objects/ (git insists on
 * them; GIT_OBJECT_DIRECTORY is the store read), the configuration, and the
 * object names as packed refs of its own.
 */
static int make_git_dir(const char *dir, size_t oid_len, char *const *base, char *const *now) {
        _cleanup_free_ char *refs = path_join(dir, "refs"), *objects = path_join(dir, "objects"), *packed = NULL;
        size_t n = 0, len = 0;
        FILE *f;
        int r;

        if (!refs || !objects)
                return -ENOMEM;
        if (mkdir(refs, 0700) < 0 || mkdir(objects, 0700) < 0)
                return -errno;
        r = put(dir, "HEAD", "ref: refs/heads/lazaret\n");
        if (r >= 0)
                r = put(dir, "config", oid_len == 64 ? "[core]\n\trepositoryformatversion = 1\n[extensions]\n"
                                                       "\tobjectFormat = sha256\n" :
                                                       "[core]\n\trepositoryformatversion = 0\n");
        if (r < 0)
                return r;
        f = open_memstream(&packed, &len);
        if (!f)
                return -ENOMEM;
        for (char *const *o = base; o && *o; o++)
                fprintf(f, "%s refs/lazaret/base/%zu\n", *o, n++);
        n = 0;
        for (char *const *o = now; o && *o; o++)
                fprintf(f, "%s refs/lazaret/new/%zu\n", *o, n++);
        if (fclose(f) != 0 || !packed)
                return -ENOMEM;
        return put(dir, "packed-refs", packed);
}

/* git's environment: ours without any GIT_ variable, then the ones that point it at the private git dir only. */
static int git_env(const char *dir, const char *objects_dir, char ***ret) {
        _cleanup_strv_free_ char **env = NULL;
        int r = 0;

        for (char **e = environ; *e && r >= 0; e++)
                if (strncmp(*e, "GIT_", 4) != 0)
                        r = strv_extend(&env, *e);
        if (r >= 0)
                r = strv_extendf(&env, "GIT_DIR=%s", dir);
        if (r >= 0)
                r = strv_extendf(&env, "GIT_OBJECT_DIRECTORY=%s", objects_dir);
        if (r >= 0)
                r = strv_extend_strv(&env, (char *[]) { (char *) "GIT_CONFIG_NOSYSTEM=1",
                                                        (char *) "GIT_CONFIG_GLOBAL=/dev/null",
                                                        (char *) "GIT_NO_REPLACE_OBJECTS=1",
                                                        (char *) "GIT_TERMINAL_PROMPT=0",
                                                        (char *) "GIT_OPTIONAL_LOCKS=0",
                                                        (char *) "GIT_PAGER=cat", NULL });
        if (r < 0)
                return r;
        *ret = TAKE_PTR(env);
        return 0;
}

/*
 * git log's output: for each commit "\x01NONCE OID refs/lazaret/new/N\0",
 * then its paths, each ended by "\0" (the first after a "\n"). The nonce
 * is random: a path cannot pass for a commit's line.
 */
static int parse_log(const char *out, size_t len, const char *nonce, size_t n_new, size_t oid_len,
                     HostGitCommit **ret, size_t *ret_n) {
        HostGitCommit *c = NULL;
        size_t n = 0, nn = strlen(nonce);
        bool first = false;
        int r = 0;

        for (const char *t = out; t < out + len && r >= 0;) {
                const char *end = memchr(t, 0, out + len - t);
                size_t tl;

                if (!end)
                        end = out + len;
                tl = (size_t) (end - t);
                if (tl > 1 + nn + 1 && t[0] == '\x01' && memcmp(t + 1, nonce, nn) == 0 && t[1 + nn] == ' ') {
                        const char *oid = t + 2 + nn, *src = oid + oid_len;
                        HostGitCommit *a;
                        size_t ref;

                        if (tl < 2 + nn + oid_len + 1 || *src != ' ' ||
                            strncmp(src + 1, "refs/lazaret/new/", 17) != 0) {
                                r = -EBADMSG;
                                break;
                        }
                        _cleanup_free_ char *num = strndup(src + 18, (size_t) (end - src - 18));
                        char *e = NULL;
                        if (!num) {
                                r = -ENOMEM;
                                break;
                        }
                        errno = 0;
                        ref = (size_t) strtoull(num, &e, 10);
                        if (errno || !e || *e || e == num || ref >= n_new) {
                                r = -EBADMSG;
                                break;
                        }
                        a = reallocarray(c, n + 1, sizeof(HostGitCommit));
                        if (!a) {
                                r = -ENOMEM;
                                break;
                        }
                        c = a;
                        c[n] = (HostGitCommit) { .ref = ref };
                        memcpy(c[n].oid, oid, oid_len);
                        c[n].oid[oid_len] = 0;
                        n++;
                        first = true;
                } else if (n > 0) {
                        if (first && tl > 0 && t[0] == '\n') {
                                t++;
                                tl--;
                        }
                        first = false;
                        if (tl > 0) {
                                _cleanup_free_ char *p = strndup(t, tl);
                                r = p ? strv_consume(&c[n - 1].paths, TAKE_PTR(p)) : -ENOMEM;
                        }
                } else if (tl > 0)
                        r = -EBADMSG;
                t = end + 1;
        }
        if (r < 0) {
                host_git_commits_free(c, n);
                return r;
        }
        *ret = c;
        *ret_n = n;
        return 0;
}

int host_git_commits_since(const char *objects_dir, char *const *base_oids, char *const *new_oids,
                           unsigned max_commits, HostGitCommit **ret, size_t *ret_n, bool *ret_cut,
                           char **ret_error) {
        _cleanup_free_ char *program = NULL, *dir = NULL, *out = NULL, *max = NULL, *format = NULL;
        _cleanup_strv_free_ char **env = NULL;
        HostGitCommit *c = NULL;
        size_t oid_len = 0, len = 0, n = 0;
        uint8_t rnd[8];
        char nonce[17];
        int r;

        *ret = NULL;
        *ret_n = 0;
        *ret_cut = false;
        for (char *const *o = base_oids; o && *o; o++) {
                if (oid_len && strlen(*o) != oid_len)
                        return errorf(ret_error, -EINVAL, "object names of two lengths (SHA-1 and SHA-256)");
                oid_len = strlen(*o);
        }
        for (char *const *o = new_oids; o && *o; o++) {
                if (oid_len && strlen(*o) != oid_len)
                        return errorf(ret_error, -EINVAL, "object names of two lengths (SHA-1 and SHA-256)");
                oid_len = strlen(*o);
        }
        if (!new_oids || !new_oids[0])
                return 0;
        if (oid_len != 40 && oid_len != 64)
                return errorf(ret_error, -EINVAL, "an object name of %zu digits", oid_len);
        r = find_program("git", &program);
        if (r < 0)
                return errorf(ret_error, r, "cannot find git to read the commits: %s", strerror(-r));
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd))
                return errorf(ret_error, -EIO, "cannot get random bytes: %m");
        for (size_t i = 0; i < sizeof(rnd); i++)
                snprintf(nonce + 2 * i, 3, "%02x", rnd[i]);
        if (asprintf(&dir, "%s/lazaret-git-XXXXXX", getenv("XDG_RUNTIME_DIR") ?: "/tmp") < 0 ||
            asprintf(&max, "--max-count=%u", max_commits + 1) < 0 ||
            asprintf(&format, "--format=%%x01%s %%H %%S", nonce) < 0)
                return -ENOMEM;
        if (!mkdtemp(dir))
                return errorf(ret_error, -errno, "cannot make a directory for git: %m");
        r = make_git_dir(dir, oid_len, base_oids, new_oids);
        if (r >= 0)
                r = git_env(dir, objects_dir, &env);
        if (r >= 0) {
                char *argv[] = { program,
                                 (char *) "-c", (char *) "core.commitGraph=false",
                                 (char *) "-c", (char *) "core.useReplaceRefs=false",
                                 (char *) "-c", (char *) "log.showRoot=true",
                                 (char *) "-c", (char *) "log.showSignature=false",
                                 (char *) "log", (char *) "--ignore-missing", (char *) "--no-color",
                                 (char *) "--no-ext-diff", (char *) "--no-textconv", (char *) "--no-mailmap",
                                 (char *) "--source", format, (char *) "-z", (char *) "--name-only", (char *) "-c",
                                 (char *) "-r", (char *) "--no-renames", max, (char *) "--glob=refs/lazaret/new/*",
                                 (char *) "--not", (char *) "--glob=refs/lazaret/base/*", NULL };
                r = spawn_output_len(argv, env, dir, HOST_GIT_LOG_MAX, &out, &len);
        }
        (void) rm_rf(dir);
        if (r == -EFBIG)
                return errorf(ret_error, r, "the commits' changes are more than git log may print here (%u MiB)",
                              HOST_GIT_LOG_MAX / (1024U * 1024U));
        if (r < 0)
                return errorf(ret_error, r, "cannot run git log: %s", strerror(-r));
        if (r != 0)
                return errorf(ret_error, -EPROTO, "git log failed (exit status %d)", r);
        r = parse_log(out, len, nonce, strv_length(new_oids), oid_len, &c, &n);
        if (r < 0)
                return errorf(ret_error, r, "cannot read git log's output: %s", strerror(-r));
        if (n > max_commits) {
                for (size_t i = max_commits; i < n; i++)
                        strv_free(c[i].paths);
                n = max_commits;
                *ret_cut = true;
        }
        *ret = c;
        *ret_n = n;
        return 0;
}
