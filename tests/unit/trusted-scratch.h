/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * A base directory whose every ancestor is owned by root or by us and not
 * writable by group or others, as Lazaret requires of runsc's directories:
 * the build tree (meson passes it) when it qualifies, else $HOME (a clone
 * under /tmp does not qualify: /tmp is writable by everyone).
 */
static inline bool trusted_path(const char *path) {
        char buf[PATH_MAX], *s;
        struct stat st;

        if (!path || path[0] != '/' || strlen(path) >= sizeof(buf) || !realpath(path, buf))
                return false;
        for (;;) {
                if (stat(buf[0] ? buf : "/", &st) < 0 || (st.st_uid != 0 && st.st_uid != geteuid()) ||
                    (st.st_mode & 022))
                        return false;
                s = strrchr(buf, '/');
                if (!s || !buf[0])
                        return true;
                *s = 0;
        }
}

static inline const char *trusted_scratch_base(void) {
        const char *b = getenv("LAZARET_TEST_BUILDDIR");

        if (trusted_path(b))
                return b;
        b = getenv("HOME");
        return trusted_path(b) ? b : NULL;
}
