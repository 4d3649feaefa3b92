/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: the strict git config reader of the Git Sentry (the repository's .git/config is untrusted). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "git-sentry.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL, *err = NULL;
        GitConfigPaths p = {};
        int r;

        if (size > GIT_CONFIG_MAX)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;
        r = git_config_parse_paths(text, &p, &err);
        /* Refused means: -EBADMSG with a message and nothing returned. */
        if (r < 0 && (r != -EBADMSG || !err || p.hooks_paths || p.include_paths))
                abort();
        if (r >= 0 && err)
                abort();
        fuzz_accepted = r >= 0;
        git_config_paths_done(&p);
        return 0;
}
