/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "fs-util.h"
#include "macro.h"
#include "mountinfo.h"
#include "parse-util.h"
#include "path-util.h"
#include "util.h"

/* One space-separated field of line at *p, NUL-terminated in place. */
static char *next_field(char **p) {
        char *s = *p, *e;

        if (!s || !*s)
                return NULL;
        e = strchr(s, ' ');
        if (e) {
                *e = 0;
                *p = e + 1;
        } else
                *p = NULL;
        return s;
}

/* A path field with the kernel's escapes, decoded; -EBADMSG unless well formed (and, with absolute, absolute). */
static int unescape_path(const char *s, bool absolute, char **ret) {
        _cleanup_free_ char *out = malloc(strlen(s) + 1);
        size_t n = 0;

        if (!out)
                return -ENOMEM;
        if (absolute && s[0] != '/')
                return -EBADMSG;
        for (const char *c = s; *c; c++) {
                if (*c != '\\') {
                        out[n++] = *c;
                        continue;
                }
                if (c[1] < '0' || c[1] > '3' || c[2] < '0' || c[2] > '7' || c[3] < '0' || c[3] > '7')
                        return -EBADMSG;
                out[n] = (char) ((c[1] - '0') * 64 + (c[2] - '0') * 8 + (c[3] - '0'));
                if (out[n] == 0)
                        return -EBADMSG;
                n++;
                c += 3;
        }
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

static int parse_line(char *line, HostMount *ret) {
        _cleanup_free_ char *root = NULL, *point = NULL;
        char *p = line, *f[5], *colon;
        int id, parent, major, minor, r;
        bool dash = false;

        for (size_t i = 0; i < ELEMENTSOF(f); i++) {
                f[i] = next_field(&p);
                if (!f[i])
                        return -EBADMSG;
        }
        for (char *x; (x = next_field(&p));)
                if (streq(x, "-")) {
                        dash = true;
                        break;
                }
        colon = strchr(f[2], ':');
        if (!dash || !colon)
                return -EBADMSG;
        *colon = 0;
        if (parse_int(f[0], 0, INT32_MAX, &id) < 0 || parse_int(f[1], 0, INT32_MAX, &parent) < 0 ||
            parse_int(f[2], 0, INT32_MAX, &major) < 0 || parse_int(colon + 1, 0, INT32_MAX, &minor) < 0)
                return -EBADMSG;
        /* A namespace file's bind has a root such as "net:[4026531840]": no path, never matched. */
        r = unescape_path(f[3], false, &root);
        if (r >= 0)
                r = unescape_path(f[4], true, &point);
        if (r < 0)
                return r;
        *ret = (HostMount) { .id = id, .major = (unsigned) major, .minor = (unsigned) minor,
                             .root = TAKE_PTR(root), .point = TAKE_PTR(point) };
        return 0;
}

int mountinfo_parse(const char *text, size_t len, HostMounts *ret) {
        const char *end = text + len;

        if (len > MOUNTINFO_MAX || memchr(text, 0, len))
                return -EBADMSG;
        for (const char *s = text; s < end;) {
                const char *e = memchr(s, '\n', (size_t) (end - s));
                _cleanup_free_ char *line = NULL;
                HostMount m, *grown;
                int r;

                if (!e)
                        return -EBADMSG;        /* the kernel ends every line */
                if (ret->n >= MOUNTINFO_LINES_MAX)
                        return -E2BIG;
                line = strndup(s, (size_t) (e - s));
                if (!line)
                        return -ENOMEM;
                s = e + 1;
                r = parse_line(line, &m);
                if (r < 0)
                        return r;
                grown = reallocarray(ret->m, ret->n + 1, sizeof(*grown));
                if (!grown) {
                        free(m.root);
                        free(m.point);
                        return -ENOMEM;
                }
                ret->m = grown;
                ret->m[ret->n++] = m;
        }
        return 0;
}

int mountinfo_read(HostMounts *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = read_full_file("/proc/self/mountinfo", MOUNTINFO_MAX, &text, &len);
        if (r < 0)
                return r;
        return mountinfo_parse(text, len, ret);
}

void host_mounts_done(HostMounts *m) {
        for (size_t i = 0; i < m->n; i++) {
                free(m->m[i].root);
                free(m->m[i].point);
        }
        m->m = mfree(m->m);
        m->n = 0;
}

const HostMount *host_mounts_find(const HostMounts *m, int id) {
        for (size_t i = 0; i < m->n; i++)
                if (m->m[i].id == id)
                        return &m->m[i];
        return NULL;
}

int fd_mount_id(int fd) {
        struct statx sx;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &sx) < 0)
                return -errno;
        if (!(sx.stx_mask & STATX_MNT_ID) || sx.stx_mnt_id > INT32_MAX)
                return -EOPNOTSUPP;
        return (int) sx.stx_mnt_id;
}

const char *path_below(const char *path, const char *dir) {
        if (!path_is_at_or_below(path, dir))
                return NULL;
        if (streq(dir, "/"))
                return path + 1;
        path += strlen(dir);
        return *path == '/' ? path + 1 : path;
}

int host_mount_fs_path(const HostMount *m, const char *abs, char **ret) {
        const char *below = path_below(abs, m->point);
        char *out;

        if (!below)
                return -EXDEV;
        out = isempty(below) ? strdup(m->root) : path_join(m->root, below);
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}
