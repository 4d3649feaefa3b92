/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the strict reader of git's one-line files that the Git
 * Sentry follows on the host for a linked workspace (the .git file, a
 * commondir, a worktree registration's gitdir; git-sentry.h). The first
 * byte picks the form ('g': "gitdir: PATH", else a bare path).
 */
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
        _cleanup_free_ char *path = NULL;
        const char *prefix;
        int r;

        if (size < 1)
                return 0;
        prefix = data[0] == 'g' ? "gitdir: " : "";
        r = git_link_file_parse((const char *) data + 1, size - 1, prefix, &path);
        /* Refused: -EBADMSG and nothing returned. Accepted: a non-empty path of
         * no control byte, within the input, under the bound. */
        if (r < 0 && (r != -EBADMSG || path))
                abort();
        if (r >= 0) {
                size_t n = strlen(path);
                if (n == 0 || n > GIT_LINK_FILE_MAX || n > size - 1 || !memmem(data + 1, size - 1, path, n))
                        abort();
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char) path[i] < 0x20 || path[i] == 0x7f)
                                abort();
        }
        fuzz_accepted = r >= 0;
        return 0;
}
