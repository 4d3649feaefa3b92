/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fsmonitor-hook.h"
#include "fsmonitor-proto.h"

#define JOURNAL_PATH "/run/lazaret/" FSMON_JOURNAL_FILE
/* More than the view ever writes (it resets at FSMON_JOURNAL_MAX): a file this long is not its journal. */
#define READ_MAX (FSMON_JOURNAL_MAX + 64u * 1024u)
/* A reset between the two looks at the header: read again, this many times. */
#define ATTEMPTS 3

/* The answer's paths, NUL-separated, as git reads them. */
typedef struct Answer {
        char *buf;
        size_t n, size;
        bool failed;
} Answer;

/* p[0..len), with a '/' after it when slash, and a NUL. */
static void put(Answer *a, const char *p, size_t len, bool slash) {
        size_t need = len + slash + 1;

        if (a->failed)
                return;
        if (a->size - a->n < need) {
                size_t size = a->size ? a->size * 2 : 64 * 1024;
                char *b;

                while (size - a->n < need)
                        size *= 2;
                b = realloc(a->buf, size);
                if (!b) {
                        a->failed = true;
                        return;
                }
                a->buf = b;
                a->size = size;
        }
        memcpy(a->buf + a->n, p, len);
        if (slash)
                a->buf[a->n + len] = '/';
        a->buf[a->n + len + slash] = 0;
        a->n += need;
}

static void emit(const char *path, size_t len, bool dir, void *userdata) {
        Answer *a = userdata;

        /* Both names of a directory: "dir" is its entry (a submodule's, say), "dir/" all below it. */
        put(a, path, len, false);
        if (dir)
                put(a, path, len, true);
}

static int write_all(const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(STDOUT_FILENO, p, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -errno;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

/* The worktree's path in the workspace ("" or "dir/sub/"), from the directory git runs the hook in. */
static int worktree_prefix(char *buf, size_t size) {
        char cwd[PATH_MAX];
        size_t w = strlen(SANDBOX_WORKSPACE);

        if (!getcwd(cwd, sizeof(cwd)) || strncmp(cwd, SANDBOX_WORKSPACE, w) != 0 || (cwd[w] != 0 && cwd[w] != '/'))
                return -ENOENT;
        if (cwd[w] == 0) {
                buf[0] = 0;
                return 0;
        }
        if ((size_t) snprintf(buf, size, "%s/", cwd + w + 1) >= size)
                return -ENAMETOOLONG;
        return 0;
}

static int read_header(int fd, uint64_t *ret) {
        char h[FSMON_HEADER_SIZE];

        if (pread(fd, h, sizeof(h), 0) != (ssize_t) sizeof(h))
                return -EBADMSG;
        return fsmon_header_parse(h, sizeof(h), ret);
}

/* The journal from offset start to its end, into *buf (grown as needed). */
static int read_from(int fd, uint64_t start, char **buf, size_t *size, size_t *ret_n) {
        size_t n = 0;

        for (;;) {
                ssize_t k;

                if (n == *size) {
                        size_t s = *size ? *size * 2 : 256 * 1024;
                        char *b;

                        if (*size >= READ_MAX)
                                return -EFBIG;
                        b = realloc(*buf, s);
                        if (!b)
                                return -ENOMEM;
                        *buf = b;
                        *size = s;
                }
                k = pread(fd, *buf + n, *size - n, (off_t) (start + n));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        *ret_n = n;
        return 0;
}

int fsmonitor_hook(int argc, char *argv[]) {
        const char *token = argc >= 3 ? argv[2] : "";
        char prefix[PATH_MAX + 1], next[FSMON_TOKEN_MAX];
        char *data = NULL;
        size_t size = 0;
        Answer a = {};
        bool trivial = true;
        int fd, r = -EBADMSG;

        if (argc < 2 || strcmp(argv[1], "2") != 0)
                return 1;
        /* A token that no instance has: the next answer is "everything" too. */
        fsmon_token_format(0, FSMON_HEADER_SIZE, FSMON_HEADER_SIZE, next, sizeof(next));
        fd = open(JOURNAL_PATH, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0 && worktree_prefix(prefix, sizeof(prefix)) >= 0)
                for (unsigned attempt = 0; attempt < ATTEMPTS; attempt++) {
                        uint64_t instance, again, t_instance = 0, t_offset = 0, t_from = 0, start;
                        bool ours;
                        size_t n = 0;
                        FsmonScan s;

                        free(a.buf);
                        a = (Answer) {};
                        r = read_header(fd, &instance);
                        if (r < 0)
                                break;
                        ours = fsmon_token_parse(token, &t_instance, &t_offset, &t_from) >= 0 && t_instance == instance;
                        /* Not ours: all of it is read, for the directories unwatched now. */
                        start = ours ? t_from : FSMON_HEADER_SIZE;
                        r = read_from(fd, start, &data, &size, &n);
                        if (r < 0)
                                break;
                        if (read_header(fd, &again) < 0 || again != instance)
                                continue;       /* emptied for a new instance meanwhile */
                        if (ours && t_offset > start + n) {
                                /* Beyond what the view wrote: not its token; all of it again. */
                                token = "";
                                continue;
                        }
                        r = fsmon_scan(data, n, start, ours ? t_offset : start + n, prefix, emit, &a, &s);
                        if (r < 0 || a.failed)
                                break;
                        trivial = !ours || s.trivial;
                        fsmon_token_format(instance, s.end, s.unwatched_from, next, sizeof(next));
                        break;
                }
        if (fd >= 0)
                close(fd);
        free(data);
        r = write_all(next, strlen(next) + 1);
        if (r >= 0)
                r = trivial || a.failed ? write_all("/", 2) : write_all(a.buf ?: "", a.n);
        free(a.buf);
        return r < 0 ? 1 : 0;
}
