/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "path-util.h"
#include "state-anchor.h"
#include "strv.h"
#include "util.h"

const char *const state_anchor_excluded[] = { "/etc/resolv.conf", "/etc/hosts", "/etc/hostname", NULL };

static bool plain_char(char c, bool first) {
        if (first && c == '.')
                return false;
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
               c == ':';
}

int state_anchor_layer_name(const char *sandbox_path, char **ret) {
        _cleanup_free_ char *norm = NULL, *out = NULL;
        size_t n = 0;
        int r;

        if (!sandbox_path || !path_is_absolute(sandbox_path))
                return -EINVAL;
        r = path_normalize(sandbox_path, &norm);
        if (r < 0)
                return r;
        if (!streq(norm, sandbox_path) || streq(norm, "/"))
                return -EINVAL;
        out = malloc(strlen(norm) * 4 + 1);
        if (!out)
                return -ENOMEM;
        for (const char *p = norm + 1; *p; p++) {
                if (*p == '/')
                        out[n++] = '-';
                else if (plain_char(*p, p == norm + 1 || p[-1] == '/'))
                        out[n++] = *p;
                else
                        n += (size_t) sprintf(out + n, "\\x%02x", (unsigned char) *p);
        }
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int state_anchor_layer_path(const char *name, char **ret) {
        _cleanup_free_ char *out = NULL, *again = NULL;
        size_t n = 0;
        int r;

        if (isempty(name))
                return -EINVAL;
        out = malloc(strlen(name) + 2);
        if (!out)
                return -ENOMEM;
        out[n++] = '/';
        for (const char *p = name; *p; p++) {
                if (*p == '-')
                        out[n++] = '/';
                else if (*p == '\\') {
                        int hi, lo;

                        if (p[1] != 'x' || (hi = unhex(p[2])) < 0 || (lo = unhex(p[3])) < 0 || (hi == 0 && lo == 0))
                                return -EINVAL;
                        out[n++] = (char) (hi << 4 | lo);
                        p += 3;
                } else
                        out[n++] = *p;
        }
        out[n] = 0;
        /* Only the one spelling that state_anchor_layer_name() makes. */
        r = state_anchor_layer_name(out, &again);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || !streq(again, name))
                return -EINVAL;
        *ret = TAKE_PTR(out);
        return 0;
}

bool state_anchor_is_excluded(const char *path) {
        return path && strv_contains(state_anchor_excluded, path);
}

const char *state_change_to_string(StateChange c) {
        switch (c) {
        case STATE_CHANGE_WRITTEN:
                return "written";
        case STATE_CHANGE_DELETED:
                return "deleted";
        case STATE_CHANGE_REPLACED:
                return "replaced";
        default:
                return NULL;
        }
}

StateChange state_anchor_classify(const char *name, unsigned mode, unsigned long long rdev, bool opaque,
                                  const char **ret_name) {
        if (ret_name)
                *ret_name = name;
        if (streq(name, ".wh..wh..opq") || streq(name, ".wh..opq"))
                return STATE_CHANGE_NONE;
        if (S_ISCHR(mode) && rdev == 0)
                return STATE_CHANGE_DELETED;
        if (startswith(name, ".wh.") && name[4]) {
                if (ret_name)
                        *ret_name = name + 4;
                return STATE_CHANGE_DELETED;
        }
        if (S_ISDIR(mode) && opaque)
                return STATE_CHANGE_REPLACED;
        return STATE_CHANGE_WRITTEN;
}
