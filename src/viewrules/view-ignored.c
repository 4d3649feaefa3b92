/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-index.h"
#include "path-util.h"
#include "util.h"
#include "view-ignored.h"
#include "view-policy.h"

typedef struct Scan {
        int workspace_fd;
        IgnoreSet set;
        IgnoreCache *cache;
        GitIndex *index;
        char *const *shared;
        ViewIgnored *out;
} Scan;

void view_ignored_done(ViewIgnored *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->paths[i].path);
        free(l->paths);
        *l = (ViewIgnored) {};
}

int view_read_gitignore(int workspace_fd, const char *dir, IgnoreList **ret, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *source = NULL;

        *ret = NULL;
        fd = openat_beneath(workspace_fd, dir, O_PATH | O_DIRECTORY, 0, true);
        if (fd < 0)
                return fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP ? 0 : fd;
        if (asprintf(&source, "%s%s.gitignore", dir, *dir ? "/" : "") < 0)
                return -ENOMEM;
        return ignore_list_load_at(fd, ".gitignore", dir, source, ret, ret_error);
}

static int read_dir(void *userdata, const char *dir, IgnoreList **ret, char **ret_error) {
        return view_read_gitignore(((Scan *) userdata)->workspace_fd, dir, ret, ret_error);
}

static int cmp_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names in directory fd (not "." and ".."), sorted. */
static int list_names(int fd, char ***ret, size_t *ret_n) {
        _cleanup_(closedirp) DIR *d = NULL;
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        int r;

        r = opendir_at(fd, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d))) {
                char **grown;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                grown = realloc(names, (n + 2) * sizeof(char *));
                if (!grown || !(grown[n] = strdup(de->d_name))) {
                        names = grown ?: names;
                        r = -ENOMEM;
                        break;
                }
                names = grown;
                names[++n] = NULL;
        }
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(names[i]);
                free(names);
                return r;
        }
        if (n > 0)
                qsort(names, n, sizeof(char *), cmp_names);
        *ret = names;
        *ret_n = n;
        return 0;
}

static void free_names(char **names, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

/* Bytes of the regular files at and below name in fd. */
static uint64_t tree_size(int fd, const char *name, unsigned depth) {
        _cleanup_close_ int sub = -EBADF;
        char **names = NULL;
        size_t n = 0;
        uint64_t sum = 0;
        struct stat st;

        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        if (S_ISREG(st.st_mode))
                return (uint64_t) st.st_size;
        if (!S_ISDIR(st.st_mode) || depth >= VIEW_IGNORED_MAX_DEPTH)
                return 0;
        sub = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0 || list_names(sub, &names, &n) < 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                sum += tree_size(sub, names[i], depth + 1);
        free_names(names, n);
        return sum;
}

static int add_path(Scan *s, const char *rel, bool directory, uint64_t size) {
        ViewIgnored *l = s->out;
        ViewIgnoredPath *grown;

        if (l->n >= VIEW_IGNORED_LIST_MAX) {
                l->truncated = true;
                return 0;
        }
        grown = realloc(l->paths, (l->n + 1) * sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        l->paths = grown;
        l->paths[l->n] = (ViewIgnoredPath) { .path = strdup(rel), .directory = directory,
                                             .shared = view_path_listed(s->shared, rel), .size = size };
        if (!l->paths[l->n].path)
                return -ENOMEM;
        l->n++;
        return 0;
}

static int walk(Scan *s, int fd, const char *rel, unsigned depth) {
        char **names = NULL;
        size_t n = 0;
        int r;

        if (depth >= VIEW_IGNORED_MAX_DEPTH || s->out->truncated)
                return 0;
        r = list_names(fd, &names, &n);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *child = NULL;
                struct stat st;
                bool is_dir;
                int v;

                /* No repository's storage is ever ignored state (the view's rule too). */
                if (streq(names[i], ".git") || fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                is_dir = S_ISDIR(st.st_mode);
                child = *rel ? path_join(rel, names[i]) : strdup(names[i]);
                if (!child) {
                        r = -ENOMEM;
                        break;
                }
                if (strlen(child) >= IGNORE_PATH_MAX)
                        continue;
                if (!s->index || (!git_index_is_tracked(s->index, child) && !git_index_has_tracked_below(s->index, child))) {
                        v = ignore_match(&s->set, child, is_dir, NULL, NULL);
                        if (v < 0 || v == IGNORE_EXCLUDED) {
                                r = add_path(s, child, is_dir, tree_size(fd, names[i], 0));
                                continue;
                        }
                }
                if (is_dir) {
                        _cleanup_close_ int sub = openat(fd, names[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                r = walk(s, sub, child, depth + 1);
                }
        }
        free_names(names, n);
        return r;
}

int view_ignored_scan(int workspace_fd, const IgnoreList *excludes, char *const *shared, ViewIgnored *ret,
                      char **ret_error) {
        _cleanup_(view_ignored_done) ViewIgnored out = {};
        _cleanup_ignore_list_ IgnoreList *info = NULL;
        _cleanup_close_ int git = -EBADF, infofd = -EBADF;
        Scan s = { .workspace_fd = workspace_fd, .shared = shared, .out = &out };
        int r;

        r = ignore_cache_new(read_dir, &s, &s.cache);
        if (r < 0)
                return r;
        git = openat(workspace_fd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (git >= 0) {
                r = git_index_load_at(git, "index", GIT_HASH_SHA1, &s.index, NULL);
                if (r == -EBADMSG)
                        (void) git_index_load_at(git, "index", GIT_HASH_SHA256, &s.index, NULL);
                infofd = openat(git, "info", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (infofd >= 0)
                        (void) ignore_list_load_at(infofd, "exclude", "", ".git/info/exclude", &info, NULL);
        }
        s.set = (IgnoreSet) { .load_dir = ignore_cache_load, .userdata = s.cache, .info_exclude = info,
                              .excludes_file = excludes };
        r = walk(&s, workspace_fd, "", 0);
        ignore_cache_free(s.cache);
        if (s.index)
                git_index_free(s.index);
        if (r < 0)
                return errorf(ret_error, r, "cannot list the workspace's ignored paths: %s", strerror(-r));
        *ret = out;
        out = (ViewIgnored) {};
        return 0;
}

int view_excludes_text(const char *source, char **ret_text, size_t *ret_len, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r;

        if (source) {
                r = read_full_file(source, IGNORE_FILE_MAX, &text, &len);
                if (r < 0 && r != -ENOENT)
                        return errorf(ret_error, r, "cannot read the host's core.excludesFile %s: %s", source,
                                      strerror(-r));
        }
        if (!text) {
                text = strdup("");
                len = 0;
                if (!text)
                        return -ENOMEM;
        }
        *ret_text = TAKE_PTR(text);
        *ret_len = len;
        return 0;
}
