/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "checkout.h"
#include "cleanup.h"
#include "fs-util.h"
#include "git-refs.h"
#include "git-sentry.h"
#include "hash.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "util.h"
#include "view-policy.h"

int checkout_dir_id_of_fd(int fd, CheckoutDirId *ret) {
        struct statx sx;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO | STATX_BTIME, &sx) < 0)
                return -errno;
        if (!(sx.stx_mask & STATX_INO))
                return -EOPNOTSUPP;
        if (!S_ISDIR(sx.stx_mode))
                return -ENOTDIR;
        *ret = (CheckoutDirId) {
                .ino = sx.stx_ino,
                .dev_major = sx.stx_dev_major,
                .dev_minor = sx.stx_dev_minor,
                .has_btime = (sx.stx_mask & STATX_BTIME) != 0,
                .btime_sec = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime.tv_sec : 0,
                .btime_nsec = (sx.stx_mask & STATX_BTIME) ? sx.stx_btime.tv_nsec : 0,
        };
        return 0;
}

int checkout_id_of_fds(int git_dir_fd, int common_dir_fd, CheckoutId *ret) {
        CheckoutId id = {};
        int r;

        if (git_dir_fd >= 0) {
                id.repository = true;
                r = checkout_dir_id_of_fd(git_dir_fd, &id.git_dir);
                if (r < 0)
                        return r;
                if (common_dir_fd >= 0) {
                        id.linked = true;
                        r = checkout_dir_id_of_fd(common_dir_fd, &id.common_dir);
                        if (r < 0)
                                return r;
                }
        }
        *ret = id;
        return 0;
}

int checkout_git_dirs_of_workspace(int workspace_fd, const GitLinked *linked, int *ret_git_dir_fd,
                                   int *ret_common_dir_fd) {
        _cleanup_close_ int gfd = -EBADF, cfd = -EBADF;

        if (linked && linked->root) {
                /* A submodule's git dir is the root itself; a linked worktree's is its registration below it. */
                if (!linked->worktree) {
                        gfd = fcntl(linked->root_fd, F_DUPFD_CLOEXEC, 3);
                        if (gfd < 0)
                                return -errno;
                } else {
                        cfd = openat_beneath(linked->root_fd, "worktrees", O_PATH | O_DIRECTORY, 0, false);
                        if (cfd >= 0) {
                                gfd = openat_beneath(cfd, linked->worktree, O_PATH | O_DIRECTORY, 0, false);
                                safe_close(cfd);
                                cfd = -EBADF;
                        }
                        if (gfd < 0)
                                return gfd;
                        cfd = fcntl(linked->root_fd, F_DUPFD_CLOEXEC, 3);
                        if (cfd < 0)
                                return -errno;
                }
        } else {
                gfd = openat_beneath(workspace_fd, ".git", O_PATH | O_DIRECTORY, 0, false);
                if (gfd < 0)
                        return gfd;
        }
        *ret_git_dir_fd = TAKE_FD(gfd);
        *ret_common_dir_fd = TAKE_FD(cfd);
        return 0;
}

int checkout_id_of_workspace(int workspace_fd, const GitLinked *linked, CheckoutId *ret) {
        _cleanup_close_ int gfd = -EBADF, cfd = -EBADF;
        int r;

        r = checkout_git_dirs_of_workspace(workspace_fd, linked, &gfd, &cfd);
        if (r == -ENOENT && !(linked && linked->root))
                return checkout_id_of_fds(-EBADF, -EBADF, ret);
        if (r < 0)
                return r;
        return checkout_id_of_fds(gfd, cfd, ret);
}

static bool has_btime(const CheckoutId *id) {
        return id->git_dir.has_btime && (!id->linked || id->common_dir.has_btime);
}

/* The canonical text the key hashes; the device only without birth times (see checkout.h). */
static int key_text(const CheckoutId *id, char **ret) {
        const bool bt = has_btime(id);
        char *s = NULL;
        int n;

        if (bt)
                n = asprintf(&s, "lazaret-checkout-1 btime git-dir %" PRIu64 " %" PRIi64 ".%09" PRIu32 " common-dir %s%" PRIu64
                             " %" PRIi64 ".%09" PRIu32, id->git_dir.ino, id->git_dir.btime_sec, id->git_dir.btime_nsec,
                             id->linked ? "" : "none ", id->linked ? id->common_dir.ino : 0,
                             id->linked ? id->common_dir.btime_sec : 0, id->linked ? id->common_dir.btime_nsec : 0);
        else
                n = asprintf(&s, "lazaret-checkout-1 device git-dir %" PRIu32 ":%" PRIu32 " %" PRIu64 " common-dir %s%" PRIu32
                             ":%" PRIu32 " %" PRIu64, id->git_dir.dev_major, id->git_dir.dev_minor, id->git_dir.ino,
                             id->linked ? "" : "none ", id->linked ? id->common_dir.dev_major : 0,
                             id->linked ? id->common_dir.dev_minor : 0, id->linked ? id->common_dir.ino : 0);
        if (n < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

void checkout_id_key(const CheckoutId *id, char ret[static CHECKOUT_KEY_MAX]) {
        uint8_t digest[SHA256_DIGEST_LEN];
        _cleanup_free_ char *text = NULL;

        if (!id->repository || key_text(id, &text) < 0) {
                /* Out of memory gives no key that could name another checkout's state. */
                snprintf(ret, CHECKOUT_KEY_MAX, "%s", id->repository ? "" : CHECKOUT_KEY_NONE);
                return;
        }
        sha256_buf(text, strlen(text), digest);
        hexify(digest, CHECKOUT_KEY_HEX_LEN / 2, ret);
}

bool checkout_id_equal(const CheckoutId *a, const CheckoutId *b) {
        char ka[CHECKOUT_KEY_MAX], kb[CHECKOUT_KEY_MAX];

        checkout_id_key(a, ka);
        checkout_id_key(b, kb);
        return ka[0] && streq(ka, kb);
}

static bool is_hex(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return s[n] == 0;
}

bool checkout_key_is_valid(const char *s) {
        const char *l;

        if (!s)
                return false;
        if (streq(s, CHECKOUT_KEY_NONE))
                return true;
        l = startswith(s, CHECKOUT_LEGACY_PREFIX);
        if (l)
                return strlen(l) == CHECKOUT_KEY_HEX_LEN && is_hex(l, CHECKOUT_KEY_HEX_LEN);
        return strlen(s) == CHECKOUT_KEY_HEX_LEN && is_hex(s, CHECKOUT_KEY_HEX_LEN);
}

static int describe_dir(const char *what, const CheckoutDirId *d, char **ret) {
        char when[64] = "";
        struct tm tm;
        time_t t = (time_t) d->btime_sec;

        if (d->has_btime && gmtime_r(&t, &tm))
                strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
        if (d->has_btime)
                return asprintf(ret, "%s inode %" PRIu64 " born %s.%09" PRIu32 "Z", what, d->ino, when, d->btime_nsec) < 0
                               ? -ENOMEM : 0;
        return asprintf(ret, "%s inode %" PRIu64 " on device %" PRIu32 ":%" PRIu32 " (no birth time)", what, d->ino,
                        d->dev_major, d->dev_minor) < 0 ? -ENOMEM : 0;
}

int checkout_id_describe(const CheckoutId *id, char **ret) {
        _cleanup_free_ char *g = NULL, *c = NULL;
        int r;

        if (!id->repository) {
                *ret = strdup("not a git repository");
                return *ret ? 0 : -ENOMEM;
        }
        r = describe_dir("git dir", &id->git_dir, &g);
        if (r >= 0 && id->linked)
                r = describe_dir("common dir", &id->common_dir, &c);
        if (r < 0)
                return r;
        if (!c) {
                *ret = TAKE_PTR(g);
                return 0;
        }
        return asprintf(ret, "%s, %s", g, c) < 0 ? -ENOMEM : 0;
}

int checkout_state_path(const char *domain_dir, const char *key, const char *sub, char **ret) {
        char *s;
        int n;

        if (!domain_dir || domain_dir[0] != '/' || !checkout_key_is_valid(key))
                return -EINVAL;
        if (sub && (!sub[0] || strchr(sub, '/') || streq(sub, ".") || streq(sub, "..")))
                return -EINVAL;
        n = sub ? asprintf(&s, "%s/" CHECKOUTS_DIR "/%s/%s", domain_dir, key, sub)
                : asprintf(&s, "%s/" CHECKOUTS_DIR "/%s", domain_dir, key);
        if (n < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* ------------------------------------------------------- state of older Lazarets */

static int btime_cmp(const CheckoutDirId *a, const CheckoutDirId *b) {
        if (a->btime_sec != b->btime_sec)
                return a->btime_sec < b->btime_sec ? -1 : 1;
        return a->btime_nsec < b->btime_nsec ? -1 : a->btime_nsec > b->btime_nsec;
}

bool checkout_legacy_belongs(const CheckoutId *id, const CheckoutDirId *legacy, size_t n_legacy) {
        const CheckoutDirId *newest;

        if (!id->repository || !has_btime(id) || n_legacy == 0)
                return false;
        newest = id->linked && btime_cmp(&id->common_dir, &id->git_dir) > 0 ? &id->common_dir : &id->git_dir;
        for (size_t i = 0; i < n_legacy; i++)
                if (!legacy[i].has_btime || btime_cmp(&legacy[i], newest) <= 0)
                        return false;
        return true;
}

int checkout_legacy_scan(int domain_fd, CheckoutDirId ret[static 3], const char *ret_names[static 3], size_t *ret_n) {
        static const char *const names[] = { VIEW_STATE_DIR, VIEW_GIT_STATE_DIR, VIEW_IGNORED_DIR };
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_close_ int fd = openat(domain_fd, names[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                int r;

                if (fd < 0 && errno == ENOENT)
                        continue;
                if (fd < 0)
                        return -errno;
                r = checkout_dir_id_of_fd(fd, &ret[n]);
                if (r < 0)
                        return r;
                ret_names[n++] = names[i];
        }
        *ret_n = n;
        return 0;
}

int checkout_state_find(const char *domain_dir, const CheckoutId *id, char **ret_dir) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int dfd = -EBADF;
        char key[CHECKOUT_KEY_MAX];
        CheckoutDirId legacy[3];
        const char *names[3];
        struct stat st;
        size_t n = 0;
        int r;

        checkout_id_key(id, key);
        if (!key[0])
                return -ENOMEM;
        r = checkout_state_path(domain_dir, key, NULL, &dir);
        if (r < 0)
                return r;
        if (lstat(dir, &st) >= 0 && S_ISDIR(st.st_mode)) {
                *ret_dir = TAKE_PTR(dir);
                return 1;
        }
        dfd = open(domain_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT ? -ENOENT : -errno;
        r = checkout_legacy_scan(dfd, legacy, names, &n);
        if (r < 0)
                return r;
        if (!checkout_legacy_belongs(id, legacy, n))
                return -ENOENT;
        *ret_dir = strdup(domain_dir);
        return *ret_dir ? 2 : -ENOMEM;
}

/* ---------------------------------------------------------------- the record */

void checkout_record_done(CheckoutRecord *r) {
        free(r->key);
        free(r->workspace);
        free(r->note);
        *r = (CheckoutRecord) {};
}

static int dir_to_json(const CheckoutDirId *d, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add_uint64(o, "inode", d->ino);
        if (r >= 0)
                r = json_add_uint64(o, "device_major", d->dev_major);
        if (r >= 0)
                r = json_add_uint64(o, "device_minor", d->dev_minor);
        if (r >= 0 && d->has_btime) {
                r = json_add_int64(o, "birth_sec", d->btime_sec);
                if (r >= 0)
                        r = json_add_uint64(o, "birth_nsec", d->btime_nsec);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int checkout_id_to_json(const CheckoutId *id, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *x = NULL;
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add_bool(o, "repository", id->repository);
        if (r >= 0 && id->repository) {
                r = dir_to_json(&id->git_dir, &x);
                if (r >= 0)
                        r = json_add(o, "git_dir", x);
        }
        if (r >= 0 && id->repository && id->linked) {
                r = dir_to_json(&id->common_dir, &x);
                if (r >= 0)
                        r = json_add(o, "common_dir", x);
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static int get_u64(json_object *o, const char *key, uint64_t max, bool required, uint64_t *ret) {
        json_object *v;
        uint64_t u;
        int64_t x;

        if (!json_object_object_get_ex(o, key, &v))
                return required ? -EBADMSG : 0;
        if (!json_object_is_type(v, json_type_int))
                return -EBADMSG;
        /* json-c keeps a value past INT64_MAX as unsigned: get_int64 clamps it, get_uint64 gives it whole. */
        x = json_object_get_int64(v);
        if (x < 0)
                return -EBADMSG;
        u = x == INT64_MAX ? json_object_get_uint64(v) : (uint64_t) x;
        if (u > max)
                return -EBADMSG;
        *ret = u;
        return 1;
}

static int dir_from_json(json_object *o, CheckoutDirId *ret) {
        CheckoutDirId d = {};
        uint64_t v, s = 0, ns = 0;
        int r, have_s, have_ns;

        if (!json_object_is_type(o, json_type_object))
                return -EBADMSG;
        json_object_object_foreach(o, k, val) {
                (void) val;
                if (!streq(k, "inode") && !streq(k, "device_major") && !streq(k, "device_minor") &&
                    !streq(k, "birth_sec") && !streq(k, "birth_nsec"))
                        return -EBADMSG;
        }
        r = get_u64(o, "inode", UINT64_MAX, true, &d.ino);
        if (r >= 0)
                r = get_u64(o, "device_major", UINT32_MAX, true, &v);
        if (r < 0)
                return r;
        d.dev_major = (uint32_t) v;
        r = get_u64(o, "device_minor", UINT32_MAX, true, &v);
        if (r < 0)
                return r;
        d.dev_minor = (uint32_t) v;
        have_s = get_u64(o, "birth_sec", INT64_MAX, false, &s);
        have_ns = get_u64(o, "birth_nsec", 999999999, false, &ns);
        if (have_s < 0 || have_ns < 0 || have_s != have_ns)
                return -EBADMSG;
        d.has_btime = have_s > 0;
        d.btime_sec = (int64_t) s;
        d.btime_nsec = (uint32_t) ns;
        *ret = d;
        return 0;
}

int checkout_id_from_json(json_object *o, CheckoutId *ret) {
        CheckoutId id = {};
        json_object *v;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return -EBADMSG;
        json_object_object_foreach(o, k, val) {
                (void) val;
                if (!streq(k, "repository") && !streq(k, "git_dir") && !streq(k, "common_dir"))
                        return -EBADMSG;
        }
        if (!json_object_object_get_ex(o, "repository", &v) || !json_object_is_type(v, json_type_boolean))
                return -EBADMSG;
        id.repository = json_object_get_boolean(v);
        if (id.repository) {
                if (!json_object_object_get_ex(o, "git_dir", &v))
                        return -EBADMSG;
                r = dir_from_json(v, &id.git_dir);
                if (r < 0)
                        return r;
                if (json_object_object_get_ex(o, "common_dir", &v)) {
                        id.linked = true;
                        r = dir_from_json(v, &id.common_dir);
                        if (r < 0)
                                return r;
                }
        } else if (json_object_object_get_ex(o, "git_dir", &v) || json_object_object_get_ex(o, "common_dir", &v))
                return -EBADMSG;
        *ret = id;
        return 0;
}

int checkout_record_to_string(const CheckoutRecord *rec, char **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *x = NULL;
        int r;

        if (!o)
                return -ENOMEM;
        if (!checkout_key_is_valid(rec->key))
                return -EINVAL;
        r = json_add_int64(o, "version", 1);
        if (r >= 0)
                r = json_add_string(o, "key", rec->key);
        if (r >= 0 && rec->has_id) {
                r = checkout_id_to_json(&rec->id, &x);
                if (r >= 0)
                        r = json_add(o, "identity", x);
        } else if (r >= 0)
                r = json_add_null(o, "identity");
        if (r >= 0 && rec->workspace)
                r = json_add_bytes(o, "workspace", rec->workspace);
        if (r >= 0)
                r = json_add_int64(o, "first_used", rec->first_used);
        if (r >= 0)
                r = json_add_int64(o, "last_used", rec->last_used);
        if (r >= 0 && rec->note)
                r = json_add_string(o, "note", rec->note);
        if (r >= 0)
                r = json_to_string(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, ret);
        return r;
}

int checkout_record_parse(const char *text, size_t len, CheckoutRecord *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_(checkout_record_done) CheckoutRecord rec = {};
        json_object *v;
        uint64_t u;
        int r;

        r = json_parse_strict(text, len, &o, ret_error);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object))
                return errorf(ret_error, -EBADMSG, "not a JSON object");
        json_object_object_foreach(o, k, val) {
                (void) val;
                if (!streq(k, "version") && !streq(k, "key") && !streq(k, "identity") && !streq(k, "workspace") &&
                    !streq(k, "first_used") && !streq(k, "last_used") && !streq(k, "note"))
                        return errorf(ret_error, -EBADMSG, "unknown key \"%s\"", k);
        }
        if (get_u64(o, "version", UINT32_MAX, true, &u) < 0 || u != 1)
                return errorf(ret_error, -EBADMSG, "version: not 1");
        if (!json_object_object_get_ex(o, "key", &v) || !json_object_is_type(v, json_type_string) ||
            !checkout_key_is_valid(json_object_get_string(v)))
                return errorf(ret_error, -EBADMSG, "key: missing or not a checkout key");
        rec.key = strdup(json_object_get_string(v));
        if (!rec.key)
                return -ENOMEM;
        if (!json_object_object_get_ex(o, "identity", &v))
                return errorf(ret_error, -EBADMSG, "identity: missing");
        if (v) {
                char key[CHECKOUT_KEY_MAX];

                if (checkout_id_from_json(v, &rec.id) < 0)
                        return errorf(ret_error, -EBADMSG, "identity: malformed");
                rec.has_id = true;
                checkout_id_key(&rec.id, key);
                if (!streq(key, rec.key))
                        return errorf(ret_error, -EBADMSG, "key: does not match the identity");
        } else if (!startswith(rec.key, CHECKOUT_LEGACY_PREFIX))
                return errorf(ret_error, -EBADMSG, "identity: null, but the key is no legacy key");
        if (json_object_object_get_ex(o, "workspace", &v)) {
                r = json_get_bytes(v, &rec.workspace);
                if (r < 0)
                        return errorf(ret_error, -EBADMSG, "workspace: malformed");
        }
        if (get_u64(o, "first_used", INT64_MAX, true, &u) < 0)
                return errorf(ret_error, -EBADMSG, "first_used: missing or malformed");
        rec.first_used = (int64_t) u;
        if (get_u64(o, "last_used", INT64_MAX, true, &u) < 0)
                return errorf(ret_error, -EBADMSG, "last_used: missing or malformed");
        rec.last_used = (int64_t) u;
        if (json_object_object_get_ex(o, "note", &v)) {
                if (!json_object_is_type(v, json_type_string))
                        return errorf(ret_error, -EBADMSG, "note: not a string");
                rec.note = strdup(json_object_get_string(v));
                if (!rec.note)
                        return -ENOMEM;
        }
        *ret = rec;
        rec = (CheckoutRecord) {};
        return 0;
}

/* ------------------------------------------------------- the refs record */

int checkout_refs_now(int workspace_fd, const GitLinked *linked, GitRefs *ret) {
        _cleanup_close_ int gfd = -EBADF, cfd = -EBADF;
        int r;

        r = checkout_git_dirs_of_workspace(workspace_fd, linked, &gfd, &cfd);
        if (r < 0)
                return r;
        return git_refs_read(gfd, cfd >= 0 ? cfd : gfd, ret);
}

int checkout_refs_record_read(int dir_fd, GitRefs *ret, int64_t *ret_taken) {
        _cleanup_close_ int fd = openat(dir_fd, CHECKOUT_REFS_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *text = NULL;
        _cleanup_json_ json_object *o = NULL;
        size_t n;
        int r;

        if (fd < 0)
                return -errno;
        r = read_full_fd(fd, JSON_DOC_MAX_BYTES, &text, &n);
        if (r >= 0)
                r = json_parse_strict(text, n, &o, NULL);
        if (r >= 0)
                r = git_refs_from_json(o, ret, ret_taken);
        return r;
}

int checkout_refs_record_write(int dir_fd, const GitRefs *refs, int64_t taken) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *text = NULL;
        int r;

        r = git_refs_to_json(refs, taken, &o);
        if (r >= 0)
                r = json_to_string(o, JSON_C_TO_STRING_PLAIN, &text);
        if (r < 0)
                return r;
        return write_line_file_replace_at(dir_fd, CHECKOUT_REFS_FILE, text, 0600);
}
