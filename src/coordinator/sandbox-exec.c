/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle.h"
#include "cleanup.h"
#include "escalation-proto.h"
#include "fs-util.h"
#include "fsmonitor-proto.h"
#include "oci-spec.h"
#include "parse-util.h"
#include "process.h"
#include "sandbox-exec.h"
#include "spawn-util.h"
#include "strv.h"
#include "util.h"

struct SandboxExec {
        const SandboxRuntime *rt;
        char *spec_path;
        char *pid_path;         /* where runsc writes the PID inside the sandbox */
};

SandboxExec *sandbox_exec_free(SandboxExec *x) {
        if (!x)
                return NULL;
        if (x->spec_path)
                (void) unlink(x->spec_path);
        if (x->pid_path)
                (void) unlink(x->pid_path);
        free(x->spec_path);
        free(x->pid_path);
        free(x);
        return NULL;
}

static int env_set(char ***env, const char *name, const char *value) {
        _cleanup_free_ char *kv = NULL;
        size_t l = strlen(name);

        if (asprintf(&kv, "%s=%s", name, value) < 0)
                return -ENOMEM;
        /* Later entries replace earlier ones of the same name. */
        for (char **e = *env; e && *e; e++)
                if (strncmp(*e, name, l) == 0 && (*e)[l] == '=') {
                        free(*e);
                        *e = TAKE_PTR(kv);
                        return 0;
                }
        if (strv_push(env, kv) < 0)
                return -ENOMEM;
        TAKE_PTR(kv);
        return 0;
}

static const char *env_get(char **env, const char *name) {
        size_t l = strlen(name);

        STRV_FOREACH(e, env)
                if (strncmp(*e, name, l) == 0 && (*e)[l] == '=')
                        return *e + l + 1;
        return NULL;
}

/*
 * The host's terminfo entry for TERM, copied where the sandbox finds it
 * (TERMINFO_DIRS), so that the terminal works even when the image lacks it.
 */
static void install_terminfo(const char *control_dir, const char *term) {
        static const char *const dirs[] = { "/etc/terminfo", "/lib/terminfo", "/usr/share/terminfo", NULL };
        char sub[2] = { term[0], 0 };

        if (isempty(term) || strchr(term, '/') || strlen(term) > 64 || term[0] == '.')
                return;
        for (size_t i = 0; dirs[i]; i++) {
                _cleanup_free_ char *src = NULL, *dstdir = NULL, *dst = NULL;
                if (asprintf(&src, "%s/%s/%s", dirs[i], sub, term) < 0 ||
                    asprintf(&dstdir, "%s/terminfo/%s", control_dir, sub) < 0 ||
                    asprintf(&dst, "%s/%s", dstdir, term) < 0)
                        return;
                if (access(src, R_OK) < 0)
                        continue;
                (void) mkdir_mode(dstdir, 0755);
                if (access(dst, F_OK) < 0)
                        (void) copy_file(src, dst, 0644);
                return;
        }
}

/* The image's environment, then ours, then the client's (which wins). */
static int session_env(const SandboxRuntime *rt, const SandboxExecParams *p, char ***ret) {
        _cleanup_strv_free_ char **env = strv_copy((char **) rt->image_env);
        int r;

        if (!env)
                return -ENOMEM;
        r = env_set(&env, "HOME", "/root");
        if (r >= 0)
                r = env_set(&env, "TERMINFO_DIRS", SANDBOX_CONTROL_MOUNT "/terminfo:");
        /* git compares only what host and sandbox agree on; an explicit
         * GIT_CONFIG_SYSTEM of the client, and any core.checkStat in the
         * user's or the repository's configuration, win. */
        if (r >= 0 && !env_get(p->client_env, "GIT_CONFIG_SYSTEM"))
                r = env_set(&env, "GIT_CONFIG_SYSTEM", SANDBOX_CONTROL_MOUNT "/gitconfig");
        /* git's fsmonitor wins over a repository's own core.fsmonitor in the
         * workspace (spec 4.6, "git asks the view"): the system
         * configuration's include once more, at the level of `git -c`, which
         * git reads after the repository's (and `git -c` itself after this).
         * A client's own GIT_CONFIG_COUNT replaces it. */
        if (r >= 0 && !env_get(p->client_env, "GIT_CONFIG_COUNT")) {
                r = env_set(&env, "GIT_CONFIG_COUNT", "1");
                if (r >= 0)
                        r = env_set(&env, "GIT_CONFIG_KEY_0", "includeIf.gitdir:" SANDBOX_WORKSPACE "/.path");
                if (r >= 0)
                        r = env_set(&env, "GIT_CONFIG_VALUE_0", SANDBOX_CONTROL_MOUNT "/" FSMON_CONFIG_FILE);
        }
        STRV_FOREACH(e, p->client_env) {
                _cleanup_free_ char *name = strndup(*e, strchr(*e, '=') - *e);
                if (!name)
                        return -ENOMEM;
                if (r >= 0)
                        r = env_set(&env, name, strchr(*e, '=') + 1);
        }
        if (r >= 0)
                r = env_set(&env, "LAZARET_DOMAIN_ID", rt->domain_id);
        if (r >= 0)
                r = env_set(&env, "LAZARET_SESSION_ID", p->session_id);
        /* The Escalation Client's identity (spec section 5.5). */
        if (r >= 0 && p->session_key)
                r = env_set(&env, ESC_ENV_SESSION_KEY, p->session_key);
        if (r >= 0 && p->session_key)
                r = env_set(&env, ESC_ENV_SANDBOX_ID, rt->container);
        if (r >= 0 && p->session_key) {
                _cleanup_free_ char *path = NULL;
                const char *old = env_get(env, "PATH");
                if (asprintf(&path, "%s%s" SANDBOX_CONTROL_MOUNT "/bin", strempty(old), old ? ":" : "") < 0)
                        return -ENOMEM;
                r = env_set(&env, "PATH", path);
        }
        if (r >= 0 && p->terminal && !env_get(env, "TERM"))
                r = env_set(&env, "TERM", "xterm");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(env);
        return 0;
}

int sandbox_exec(const SandboxRuntime *rt, const SandboxExecParams *p, SandboxExec **ret, pid_t *ret_pid, int *ret_pidfd) {
        _cleanup_(sandbox_exec_freep) SandboxExec *x = NULL;
        _cleanup_strv_free_ char **env = NULL, **args = NULL;
        _cleanup_free_ char *json = NULL;
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        int r;

        x = calloc(1, sizeof(SandboxExec));
        if (!x)
                return -ENOMEM;
        x->rt = rt;
        r = session_env(rt, p, &env);
        if (r < 0)
                return r;
        if (p->terminal)
                install_terminfo(rt->control_dir, env_get(env, "TERM"));

        /* lazaret-exec starts the command under the sandbox's FIFO filter (lazaret-exec.c). */
        if (strv_extend(&args, SANDBOX_CONTROL_MOUNT "/exec") < 0 || strv_extend_strv(&args, p->argv) < 0)
                return -ENOMEM;
        OciProcess proc = {
                .args = args,
                .env = env,
                .cwd = SANDBOX_WORKSPACE,
                .terminal = p->terminal,
                .rlimits = { .nproc = rt->limits->processes, .as = rt->limits->address_space },
        };
        r = oci_process_json(&proc, &json);
        if (r < 0)
                return r;
        if (asprintf(&x->spec_path, "%s/%s.json", rt->sessions_dir, p->session_id) < 0 ||
            asprintf(&x->pid_path, "%s/%s.pid", rt->sessions_dir, p->session_id) < 0)
                return -ENOMEM;
        r = write_file(x->spec_path, json, 0600);
        if (r < 0)
                return r;

        /* The command's streams as fds 3 to 5, its 0 to 2 inside; the exec
         * client's own 1 and 2 are diag_fd, so that its words never mix
         * with the command's output. lazaret-runsc takes runsc exec's
         * arguments (spec 4.4, "Sessions without runsc's start-up"). */
        o.argv = (char *[]) { (char *) rt->client, (char *) "--runsc", (char *) rt->runsc, (char *) "--root",
                              (char *) rt->root, (char *) "exec", (char *) "--process", x->spec_path,
                              (char *) "--internal-pid-file", x->pid_path, (char *) "--pass-fd", (char *) "3:0",
                              (char *) "--pass-fd", (char *) "4:1", (char *) "--pass-fd", (char *) "5:2",
                              (char *) rt->container, NULL };
        o.pass_fds = p->stdio;
        o.n_pass_fds = 3;
        /* Its standard input only as the controlling terminal; it reads nothing. */
        o.stdio[0] = p->terminal ? p->stdio[0] : -EBADF;
        o.stdio[1] = o.stdio[2] = p->diag_fd;
        /* With the PTY as its controlling terminal, the kernel sends this
         * client SIGINT/SIGQUIT/SIGTSTP/SIGWINCH, which it forwards to the
         * foreground process group inside. */
        o.new_session = true;
        o.controlling_tty = p->terminal;
        r = spawn(&o, ret_pid, ret_pidfd);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(x);
        return 0;
}

static int read_inner_pid(SandboxExec *x) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int pid;

        if (read_full_file(x->pid_path, 32, &buf, &n) < 0)
                return -ESRCH;
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = 0;
        if (parse_int(buf, 1, INT32_MAX, &pid) < 0)
                return -ESRCH;
        return pid;
}

bool sandbox_exec_started(SandboxExec *x) {
        return read_inner_pid(x) > 0;
}

int sandbox_exec_signal(SandboxExec *x, int sig) {
        char spid[16], ssig[16];
        int inner = read_inner_pid(x);

        if (inner < 0)
                return inner;
        snprintf(spid, sizeof(spid), "%d", inner);
        snprintf(ssig, sizeof(ssig), "%d", sig);
        return process_run_detached(x->rt->event, (char *[]) { (char *) x->rt->client, (char *) "--runsc",
                                                              (char *) x->rt->runsc, (char *) "--root",
                                                              (char *) x->rt->root, (char *) "kill", (char *) "--pid",
                                                              spid, (char *) x->rt->container, ssig, NULL });
}

int sandbox_exec_kill_session(SandboxExec *x, ProcessDone done, void *userdata, Process **ret) {
        char sid[16];
        char *const argv[] = { (char *) x->rt->client, (char *) "--runsc", (char *) x->rt->runsc, (char *) "--root",
                               (char *) x->rt->root, (char *) "exec", (char *) x->rt->container,
                               (char *) SANDBOX_CONTROL_MOUNT "/init", (char *) "--kill-session", sid, NULL };
        int inner = read_inner_pid(x);

        if (inner < 0)
                return inner;
        snprintf(sid, sizeof(sid), "%d", inner);
        if (!done)
                return process_run_detached(x->rt->event, argv);
        return process_run(x->rt->event, argv, done, userdata, ret);
}

int sandbox_forget_mailbox(const SandboxRuntime *rt, char *const *session_ids) {
        _cleanup_strv_free_ char **argv = NULL;
        int r;

        r = strv_extend_strv(&argv, (char *const[]) { (char *) rt->client, (char *) "--runsc", (char *) rt->runsc,
                                                       (char *) "--root", (char *) rt->root, (char *) "exec",
                                                       (char *) rt->container, (char *) SANDBOX_CONTROL_MOUNT "/init",
                                                       (char *) "--forget-mailbox", NULL });
        if (r >= 0)
                r = strv_extend_strv(&argv, session_ids);
        if (r < 0)
                return r;
        return process_run_detached(rt->event, argv);
}
