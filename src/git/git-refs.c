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
#include "git-refs.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "util.h"

void git_refs_done(GitRefs *r) {
        for (size_t i = 0; r && i < r->n; i++)
                free(r->refs[i].name);
        if (r) {
                free(r->refs);
                *r = (GitRefs) {};
        }
}

bool git_oid_is_valid(const char *s) {
        size_t n = 0;

        for (; s[n]; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == 40 || n == 64;
}

/* A linked worktree's name as git makes it below worktrees/: one component, no dot first, no character refs forbid. */
static bool worktree_name_is_valid(const char *s, size_t n) {
        if (n == 0 || n > 255 || s[0] == '.' || (n >= 5 && strncmp(s + n - 5, ".lock", 5) == 0))
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] <= ' ' || s[i] == 0x7f || s[i] == '/' || strchr("~^:?*[\\", s[i]))
                        return false;
        return true;
}

bool git_ref_name_is_valid(const char *s) {
        const char *rest = startswith(s, "worktrees/"), *slash;
        size_t n = strlen(s);

        if (streq(s, "HEAD"))
                return true;
        if (rest) {
                /* A linked worktree's own: "worktrees/<name>/HEAD" or "worktrees/<name>/refs/...", as git names them. */
                slash = strchr(rest, '/');
                if (!slash || !worktree_name_is_valid(rest, (size_t) (slash - rest)) || !utf8_is_valid(rest))
                        return false;
                return streq(slash + 1, "HEAD") ||
                       (strncmp(slash + 1, "refs/", 5) == 0 && git_ref_name_is_valid(slash + 1));
        }
        if (strncmp(s, "refs/", 5) != 0 || n <= 5 || n > GIT_REF_NAME_MAX || !utf8_is_valid(s))
                return false;
        if (s[n - 1] == '/' || s[n - 1] == '.' || (n >= 5 && streq(s + n - 5, ".lock")))
                return false;
        if (strstr(s, "..") || strstr(s, "//") || strstr(s, "@{") || strstr(s, "/."))
                return false;
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == 0x7f || strchr("~^:?*[\\", *p))
                        return false;
        return true;
}

/* Adds name = oid (both checked by the caller), up to GIT_REFS_MAX. */
static int add_ref(GitRefs *r, const char *name, size_t name_len, const char *oid) {
        GitRef *a;

        if (r->n >= GIT_REFS_MAX || r->name_bytes + name_len > GIT_REFS_NAMES_MAX) {
                r->cut = true;
                return 0;
        }
        a = reallocarray(r->refs, r->n + 1, sizeof(GitRef));
        if (!a)
                return -ENOMEM;
        r->refs = a;
        a[r->n].name = strndup(name, name_len);
        if (!a[r->n].name)
                return -ENOMEM;
        snprintf(a[r->n].oid, sizeof(a[r->n].oid), "%s", oid);
        r->n++;
        r->name_bytes += name_len;
        return 0;
}

/* Whether text is "<oid>\n" and nothing else (then the "\n" is cut off): not a symbolic ref, nothing else. */
static bool parse_value(char *text, size_t len) {
        if (len > 0 && text[len - 1] == '\n')
                text[--len] = 0;
        return len == strlen(text) && git_oid_is_valid(text);
}

int git_packed_refs_parse(char *text, size_t len, GitRefs *r) {
        int k;

        for (char *l = text; l < text + len;) {
                char *end = memchr(l, '\n', text + len - l), *sp;

                if (!end)
                        end = text + len;
                *end = 0;
                /* "# pack-refs with: ..." and "^<oid>" (the object a tag peels to) say nothing of a ref;
                 * a line with a NUL in it is nothing git wrote. */
                sp = strchr(l, ' ');
                if (l[0] != '#' && l[0] != '^' && sp && strlen(l) == (size_t) (end - l)) {
                        *sp = 0;
                        if (git_oid_is_valid(l) && git_ref_name_is_valid(sp + 1) && strncmp(sp + 1, "refs/", 5) == 0) {
                                k = add_ref(r, sp + 1, strlen(sp + 1), l);
                                if (k < 0)
                                        return k;
                        }
                }
                l = end + 1;
        }
        return 0;
}

static int read_packed(int cfd, GitRefs *r) {
        _cleanup_close_ int fd = openat_beneath(cfd, "packed-refs", O_RDONLY | O_NONBLOCK, 0, false);
        _cleanup_free_ char *text = NULL;
        size_t len;
        int k;

        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return fd;
        k = read_full_fd(fd, GIT_PACKED_REFS_MAX, &text, &len);
        if (k < 0)
                return k;
        return git_packed_refs_parse(text, len, r);
}

/* The loose refs below dfd (at prefix, "refs/..."), depth directories deep at most. */
static int read_loose(int dfd, const char *prefix, unsigned depth, GitRefs *r) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int k;

        if (depth > GIT_REFS_DEPTH_MAX)
                return 0;
        k = opendir_at(dfd, &d);
        if (k < 0)
                return k;
        while ((de = readdir(d))) {
                _cleanup_free_ char *name = NULL;
                _cleanup_close_ int fd = -EBADF;

                if (r->cut)
                        break;          /* the bound is reached: nothing more is read */
                if (dot_or_dot_dot(de->d_name))
                        continue;
                name = path_join(prefix, de->d_name);
                if (!name)
                        return -ENOMEM;
                if (!git_ref_name_is_valid(name))
                        continue;       /* a .lock, a name git would not make */
                /* Never waiting on a FIFO: whatever is not a directory or a regular file is passed over. */
                fd = openat_beneath(dirfd(d), de->d_name, O_RDONLY | O_NONBLOCK, 0, false);
                if (fd < 0)
                        continue;       /* a symbolic link, gone */
                struct stat st;
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (S_ISDIR(st.st_mode)) {
                        k = read_loose(fd, name, depth + 1, r);
                        if (k < 0)
                                return k;
                } else if (S_ISREG(st.st_mode)) {
                        _cleanup_free_ char *text = NULL;
                        size_t len;

                        if (read_full_fd(fd, 256, &text, &len) < 0)
                                continue;
                        if (parse_value(text, len)) {
                                k = add_ref(r, name, strlen(name), text);
                                if (k < 0)
                                        return k;
                        }
                }
        }
        return 0;
}

static int cmp_ref(const void *a, const void *b) {
        return strcmp(((const GitRef *) a)->name, ((const GitRef *) b)->name);
}

/* Sorted by name, each name once (of two, either: only a malformed file holds two). */
void git_refs_sort(GitRefs *r) {
        size_t k = 0;

        if (r->n == 0)
                return;
        qsort(r->refs, r->n, sizeof(GitRef), cmp_ref);
        for (size_t i = 0; i < r->n; i++) {
                if (k > 0 && streq(r->refs[k - 1].name, r->refs[i].name)) {
                        free(r->refs[i].name);
                        continue;
                }
                r->refs[k++] = r->refs[i];
        }
        r->n = k;
}

/* loose over packed, both sorted and unique, into *ret (both emptied). */
static int merge_refs(GitRefs *packed, GitRefs *loose, GitRefs *ret) {
        GitRefs m = { .cut = packed->cut || loose->cut };
        size_t i = 0, j = 0;

        m.refs = calloc(packed->n + loose->n + 1, sizeof(GitRef));
        if (!m.refs)
                return -ENOMEM;
        while (i < packed->n || j < loose->n) {
                int c = i >= packed->n ? 1 : j >= loose->n ? -1 : strcmp(packed->refs[i].name, loose->refs[j].name);

                if (c == 0) {
                        free(packed->refs[i++].name);
                        c = 1;
                }
                m.refs[m.n++] = c < 0 ? packed->refs[i++] : loose->refs[j++];
        }
        packed->n = loose->n = 0;
        /* Each list was bounded alone; together they are bounded again, in name order. */
        for (size_t k = 0; k < m.n; k++) {
                size_t l = strlen(m.refs[k].name);

                if (k >= GIT_REFS_MAX || m.name_bytes + l > GIT_REFS_NAMES_MAX) {
                        for (size_t x = k; x < m.n; x++)
                                free(m.refs[x].name);
                        m.n = k;
                        m.cut = true;
                        break;
                }
                m.name_bytes += l;
        }
        *ret = m;
        return 0;
}

/* HEAD, when detached, of the git dir dfd, as name. */
static int read_head(int dfd, const char *name, GitRefs *r) {
        _cleanup_close_ int hfd = openat_beneath(dfd, "HEAD", O_RDONLY | O_NONBLOCK, 0, false);
        _cleanup_free_ char *text = NULL;
        size_t len;

        if (hfd < 0 || read_full_fd(hfd, 256, &text, &len) < 0 || !parse_value(text, len))
                return 0;
        return add_ref(r, name, strlen(name), text);
}

/*
 * Each linked worktree's own refs, from the common dir's worktrees/<name>/:
 * its HEAD when detached and its loose refs (refs/bisect/, refs/worktree/,
 * refs/rewritten/; git never packs them), as "worktrees/<name>/...", the
 * names git gives them from another worktree. A commit made inside on a
 * detached HEAD of another worktree, or in its bisect, is then seen too.
 */
static int read_worktrees(int cfd, GitRefs *r) {
        _cleanup_close_ int wfd = openat_beneath(cfd, "worktrees", O_RDONLY | O_DIRECTORY, 0, false);
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int k;

        if (wfd < 0)
                return 0;
        k = opendir_at(wfd, &d);
        if (k < 0)
                return k;
        while ((de = readdir(d)) && !r->cut) {
                _cleanup_free_ char *head = NULL, *prefix = NULL;
                _cleanup_close_ int gfd = -EBADF, rfd = -EBADF;

                if (!worktree_name_is_valid(de->d_name, strlen(de->d_name)))
                        continue;
                gfd = openat_beneath(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY, 0, false);
                if (gfd < 0)
                        continue;
                if (asprintf(&head, "worktrees/%s/HEAD", de->d_name) < 0 ||
                    asprintf(&prefix, "worktrees/%s/refs", de->d_name) < 0)
                        return -ENOMEM;
                k = read_head(gfd, head, r);
                if (k < 0)
                        return k;
                rfd = openat_beneath(gfd, "refs", O_RDONLY | O_DIRECTORY, 0, false);
                if (rfd >= 0) {
                        k = read_loose(rfd, prefix, 1, r);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

const char *git_refs_strerror(int r) {
        if (r == -EOPNOTSUPP)
                return "its refs are in a reftable (extensions.refStorage), which Lazaret does not read, so commits "
                       "made inside are not counted";
        return strerror(-r);
}

int git_refs_read(int git_dir_fd, int common_dir_fd, GitRefs *ret) {
        _cleanup_(git_refs_done) GitRefs r = {}, packed = {};
        _cleanup_close_ int hfd = -EBADF, rfd = -EBADF;
        int k;

        if (faccessat(common_dir_fd, "reftable", F_OK, AT_SYMLINK_NOFOLLOW) >= 0)
                return -EOPNOTSUPP;
        hfd = openat_beneath(git_dir_fd, "HEAD", O_RDONLY | O_NONBLOCK, 0, false);
        if (hfd >= 0) {
                _cleanup_free_ char *text = NULL;
                size_t len;

                if (read_full_fd(hfd, 256, &text, &len) >= 0 && parse_value(text, len)) {
                        k = add_ref(&r, "HEAD", 4, text);
                        if (k < 0)
                                return k;
                }
        }
        k = read_packed(common_dir_fd, &packed);
        if (k < 0)
                return k;
        rfd = openat_beneath(common_dir_fd, "refs", O_RDONLY | O_DIRECTORY, 0, false);
        if (rfd >= 0) {
                k = read_loose(rfd, "refs", 1, &r);
                if (k < 0)
                        return k;
        }
        k = read_worktrees(common_dir_fd, &r);
        if (k < 0)
                return k;
        git_refs_sort(&packed);
        git_refs_sort(&r);
        return merge_refs(&packed, &r, ret);
}

const GitRef *git_refs_find(const GitRefs *r, const char *name) {
        size_t lo = 0, hi = r->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(r->refs[mid].name, name);

                if (c == 0)
                        return &r->refs[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

int git_refs_to_json(const GitRefs *r, int64_t taken, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object(), *refs = json_object_new_object();
        int k = o && refs ? 0 : -ENOMEM;

        for (size_t i = 0; k >= 0 && i < r->n; i++)
                k = json_add_string(refs, r->refs[i].name, r->refs[i].oid);
        if (k >= 0)
                k = json_add_int64(o, "version", 1);
        if (k >= 0)
                k = json_add_int64(o, "taken", taken);
        if (k >= 0)
                k = json_add_bool(o, "cut", r->cut);
        if (k >= 0)
                k = json_add(o, "refs", TAKE_PTR(refs));
        if (k < 0)
                return k;
        *ret = TAKE_PTR(o);
        return 0;
}

int git_refs_from_json(json_object *o, GitRefs *ret, int64_t *ret_taken) {
        _cleanup_(git_refs_done) GitRefs r = {};
        json_object *v, *t, *c, *refs;
        size_t oid_len = 0;
        int k;

        if (!json_object_is_type(o, json_type_object) || json_object_object_length(o) != 4 ||
            !json_object_object_get_ex(o, "version", &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int64(v) != 1 || !json_object_object_get_ex(o, "taken", &t) ||
            !json_object_is_type(t, json_type_int) || !json_object_object_get_ex(o, "cut", &c) ||
            !json_object_is_type(c, json_type_boolean) || !json_object_object_get_ex(o, "refs", &refs) ||
            !json_object_is_type(refs, json_type_object) || json_object_object_length(refs) > (int) GIT_REFS_MAX)
                return -EBADMSG;
        json_object_object_foreach(refs, name, value) {
                const char *oid;

                if (!json_object_is_type(value, json_type_string))
                        return -EBADMSG;
                oid = json_object_get_string(value);
                if (!git_ref_name_is_valid(name) || !git_oid_is_valid(oid) || (oid_len && strlen(oid) != oid_len))
                        return -EBADMSG;
                oid_len = strlen(oid);
                k = add_ref(&r, name, strlen(name), oid);
                if (k < 0)
                        return k;
        }
        git_refs_sort(&r);
        r.cut = json_object_get_boolean(c);
        *ret = r;
        r = (GitRefs) {};
        if (ret_taken)
                *ret_taken = json_object_get_int64(t);
        return 0;
}
