/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-ignore.h"
#include "host-git.h"
#include "path-util.h"
#include "spawn-util.h"
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
