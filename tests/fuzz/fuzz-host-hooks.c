/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the reader of the paths a hook or a hook manager's
 * configuration names (host-hooks.h), which the view then protects. The
 * configuration (.pre-commit-config.yaml, lefthook.yml) is a workspace file
 * the sandbox can write. The first byte picks the key ('e': "entry:", 'r':
 * "run:", else none) and whether the hook is beside the workspace's top.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "host-hooks.h"
#include "strv.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_strv_free_ char **paths = NULL;
        _cleanup_free_ char *text = NULL;
        const char *key;
        int r;

        if (size < 1)
                return 0;
        key = data[0] == 'e' ? "entry:" : data[0] == 'r' ? "run:" : NULL;
        text = strndup((const char *) data + 1, size - 1);
        if (!text)
                return 0;
        r = host_hooks_named_paths(text, key, (data[0] & 1) ? "ci/hooks" : NULL, "/home/dev/proj", &paths);
        if (r < 0)
                abort();
        /* Every path: relative, inside (no ".." segment), not the git dir, within the bound. */
        if ((size_t) r != strv_length(paths) || strv_length(paths) > HOST_HOOKS_PATHS_MAX)
                abort();
        STRV_FOREACH(p, paths) {
                size_t n = strlen(*p);
                if (n == 0 || (*p)[0] == '/' || (*p)[n - 1] == '/' || strstr(*p, "//") || streq(*p, ".git") ||
                    strncmp(*p, ".git/", 5) == 0 || strcmp(*p, "..") == 0 || strncmp(*p, "../", 3) == 0 ||
                    strstr(*p, "/../") || strstr(*p, "/./") || strncmp(*p, "./", 2) == 0)
                        abort();
        }
        fuzz_accepted = r > 0;
        return 0;
}
