/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "host-context.h"
#include "macro.h"
#include "path-util.h"

static int home_dir(char **ret) {
        const char *e = getenv("HOME");
        _cleanup_free_ char *buf = NULL;
        struct passwd pw, *result = NULL;
        long bufsize;
        char *h;

        if (e && path_is_absolute(e) && !path_has_dotdot(e))
                return path_normalize(e, ret);

        bufsize = sysconf(_SC_GETPW_R_SIZE_MAX);
        if (bufsize <= 0)
                bufsize = 16384;
        buf = malloc(bufsize);
        if (!buf)
                return -ENOMEM;
        if (getpwuid_r(getuid(), &pw, buf, bufsize, &result) != 0 || !result)
                return -ENXIO;
        if (!path_is_absolute(pw.pw_dir))
                return -ENXIO;
        h = strdup(pw.pw_dir);
        if (!h)
                return -ENOMEM;
        *ret = h;
        return 0;
}

static int xdg_dir(const char *env, const char *home, const char *fallback, char **ret) {
        const char *e = getenv(env);
        char *j;

        /* The XDG spec says relative values are invalid and must be ignored. */
        if (e && path_is_absolute(e))
                return path_normalize(e, ret);
        if (!home)
                return -ENXIO;
        j = path_join(home, fallback);
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}

static int dup_env(const char *name, char **ret) {
        const char *e = getenv(name);

        *ret = NULL;
        if (isempty(e))
                return 0;
        *ret = strdup(e);
        return *ret ? 0 : -ENOMEM;
}

void host_context_done(HostContext *hc) {
        free(hc->home);
        free(hc->xdg_config_home);
        free(hc->xdg_data_home);
        free(hc->xdg_runtime_dir);
        free(hc->config_env);
        free(hc->cwd);
        *hc = (HostContext) {};
}

int host_context_from_environment(HostContext *ret) {
        HostContext hc = {};
        int r;

        /* A missing input stays NULL; only running out of memory is fatal here. */
        r = home_dir(&hc.home);
        if (r == -ENOMEM)
                goto fail;
        r = xdg_dir("XDG_CONFIG_HOME", hc.home, ".config", &hc.xdg_config_home);
        if (r == -ENOMEM)
                goto fail;
        r = xdg_dir("XDG_DATA_HOME", hc.home, ".local/share", &hc.xdg_data_home);
        if (r == -ENOMEM)
                goto fail;
        r = dup_env("XDG_RUNTIME_DIR", &hc.xdg_runtime_dir);
        if (r < 0)
                goto fail;
        r = dup_env("LAZARET_CONFIG", &hc.config_env);
        if (r < 0)
                goto fail;
        hc.cwd = getcwd(NULL, 0);
        if (!hc.cwd) {
                if (errno == ENOMEM) {
                        r = -ENOMEM;
                        goto fail;
                }
                hc.cwd_errno = errno;
        }
        *ret = hc;
        return 0;

fail:
        host_context_done(&hc);
        return -ENOMEM;
}

static int dup_field(const char *s, char **ret) {
        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int host_context_copy(const HostContext *hc, HostContext *ret) {
        HostContext c = { .cwd_errno = hc->cwd_errno };

        if (dup_field(hc->home, &c.home) < 0 ||
            dup_field(hc->xdg_config_home, &c.xdg_config_home) < 0 ||
            dup_field(hc->xdg_data_home, &c.xdg_data_home) < 0 ||
            dup_field(hc->xdg_runtime_dir, &c.xdg_runtime_dir) < 0 ||
            dup_field(hc->config_env, &c.config_env) < 0 ||
            dup_field(hc->cwd, &c.cwd) < 0) {
                host_context_done(&c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}
