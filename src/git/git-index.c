/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-index.h"
#include "path-util.h"
#include "util.h"

#define INDEX_HEADER_SIZE 12
/* ctime, mtime (seconds, nanoseconds), dev, ino, mode, uid, gid, size: ten 32-bit fields. */
#define ENTRY_STAT_SIZE 40
#define FLAG_EXTENDED 0x4000U
#define FLAG_STAGE_SHIFT 12
#define NAME_MASK 0xfffU
/* The extended flags git knows: skip-worktree and intent-to-add. */
#define EXTENDED_KNOWN 0x6000U

#define MODE_GITLINK 0160000U
#define MODE_SPARSE_DIR 0040000U

static uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static uint16_t be16(const uint8_t *p) {
        return (uint16_t) (p[0] << 8 | p[1]);
}

static bool mode_known(uint32_t mode) {
        return mode == 0100644U || mode == 0100755U || mode == 0120000U || mode == MODE_GITLINK ||
               mode == MODE_SPARSE_DIR;
}

/* A path git could have written; a sparse directory entry ends in '/'. */
static bool name_valid(const char *s, size_t n, bool dir) {
        if (dir) {
                if (n < 2 || s[n - 1] != '/')
                        return false;
                n--;
        }
        return path_is_plain_relative(s, n);
}

/*
 * git's offset varint (version 4 path prefixes): 7 bits a byte, high bit
 * "more", and each continuation adds one before the shift. Refuses values
 * above max and reading past end.
 */
static int read_varint(const uint8_t **p, const uint8_t *end, size_t max, size_t *ret) {
        const uint8_t *q = *p;
        uint64_t v;

        if (q >= end)
                return -EBADMSG;
        v = *q & 0x7f;
        while (*q++ & 0x80) {
                if (q >= end)
                        return -EBADMSG;
                v += 1;
                if (v > max)
                        return -EBADMSG;
                v = (v << 7) | (*q & 0x7f);
        }
        if (v > max)
                return -EBADMSG;
        *p = q;
        *ret = (size_t) v;
        return 0;
}

typedef struct Builder {
        char *names;
        size_t n_names, cap_names;
        size_t *paths, *gitlinks;
        size_t n_paths, n_gitlinks;
        uint8_t (*digests)[32];
        struct sha256_ctx digest;       /* of the current path's entries */
        struct sha256_ctx all;          /* of every entry, flags included (GitIndex.entries_digest) */
} Builder;

static void builder_done(Builder *b) {
        free(b->names);
        free(b->paths);
        free(b->gitlinks);
        free(b->digests);
}

/* The entry's mode, stage and object name, into its path's digest. */
static void digest_entry(Builder *b, uint32_t mode, unsigned stage, const uint8_t *oid, size_t hash_len) {
        uint8_t head[5] = { mode >> 24, mode >> 16, mode >> 8, mode, (uint8_t) stage };

        sha256_update(&b->digest, sizeof(head), head);
        sha256_update(&b->digest, hash_len, oid);
}

static int builder_add_name(Builder *b, const char *s, size_t n, size_t *ret) {
        if (n + 1 > GIT_INDEX_NAMES_MAX - b->n_names)
                return -E2BIG;
        if (b->n_names + n + 1 > b->cap_names) {
                size_t cap = b->cap_names ? b->cap_names : 64 * 1024;
                char *p;
                while (cap < b->n_names + n + 1)
                        cap *= 2;
                p = realloc(b->names, cap);
                if (!p)
                        return -ENOMEM;
                b->names = p;
                b->cap_names = cap;
        }
        memcpy(b->names + b->n_names, s, n);
        b->names[b->n_names + n] = 0;
        *ret = b->n_names;
        b->n_names += n + 1;
        return 0;
}

static bool checksum_ok(const uint8_t *data, size_t n, GitHashAlgo algo, const uint8_t *want) {
        uint8_t got[SHA256_DIGEST_SIZE];

        if (algo == GIT_HASH_SHA256) {
                struct sha256_ctx c;
                sha256_init(&c);
                sha256_update(&c, n, data);
                sha256_digest(&c, SHA256_DIGEST_SIZE, got);
                return memcmp(got, want, SHA256_DIGEST_SIZE) == 0;
        }
        struct sha1_ctx c;
        sha1_init(&c);
        sha1_update(&c, n, data);
        sha1_digest(&c, SHA1_DIGEST_SIZE, got);
        return memcmp(got, want, SHA1_DIGEST_SIZE) == 0;
}

static int parse_entries(const uint8_t *data, size_t end, size_t hash_len, unsigned version, uint32_t n_entries,
                         Builder *b, size_t *ret_off, char **ret_error) {
        /* The previous entry's path (version 4 prefixes are cut from it) and stage. */
        char prev[GIT_INDEX_PATH_MAX + 1] = "";
        size_t prev_len = 0, off = INDEX_HEADER_SIZE;
        unsigned prev_stage = 0;
        bool have_prev = false;
        int r;

        for (uint32_t k = 0; k < n_entries; k++) {
                char name[GIT_INDEX_PATH_MAX + 1];
                size_t fixed = ENTRY_STAT_SIZE + hash_len + 2, name_len, name_field;
                const uint8_t *e = data + off, *p;
                uint32_t mode;
                uint16_t flags, extended = 0;
                unsigned stage;

                if (end - off < fixed)
                        return errorf(ret_error, -EBADMSG, "entry %u is cut short", k);
                mode = be32(e + 24);
                flags = be16(e + ENTRY_STAT_SIZE + hash_len);
                stage = (flags >> FLAG_STAGE_SHIFT) & 3;
                name_field = flags & NAME_MASK;
                p = e + fixed;
                if (flags & FLAG_EXTENDED) {
                        if (version < 3)
                                return errorf(ret_error, -EBADMSG, "entry %u has extended flags in a version %u index",
                                              k, version);
                        if ((size_t) (data + end - p) < 2)
                                return errorf(ret_error, -EBADMSG, "entry %u is cut short", k);
                        if (be16(p) & ~EXTENDED_KNOWN)
                                return errorf(ret_error, -EBADMSG, "entry %u has unknown extended flags 0x%04x", k,
                                              be16(p));
                        extended = be16(p);
                        p += 2;
                }
                if (version == 4) {
                        size_t strip;
                        const uint8_t *nul;

                        r = read_varint(&p, data + end, prev_len, &strip);
                        if (r < 0)
                                return errorf(ret_error, r, "entry %u: prefix length out of range", k);
                        nul = memchr(p, 0, (size_t) (data + end - p));
                        if (!nul)
                                return errorf(ret_error, -EBADMSG, "entry %u: path not terminated", k);
                        name_len = prev_len - strip;
                        if ((size_t) (nul - p) > GIT_INDEX_PATH_MAX - name_len)
                                return errorf(ret_error, -EBADMSG, "entry %u: path longer than %u bytes", k,
                                              GIT_INDEX_PATH_MAX);
                        memcpy(name, prev, name_len);
                        memcpy(name + name_len, p, (size_t) (nul - p));
                        name_len += (size_t) (nul - p);
                        off = (size_t) (nul + 1 - data);
                } else {
                        size_t avail = (size_t) (data + end - p), entry_len;
                        const uint8_t *nul = memchr(p, 0, avail < GIT_INDEX_PATH_MAX + 1 ? avail : GIT_INDEX_PATH_MAX + 1);

                        if (!nul)
                                return errorf(ret_error, -EBADMSG, "entry %u: path not terminated within %u bytes", k,
                                              GIT_INDEX_PATH_MAX);
                        name_len = (size_t) (nul - p);
                        memcpy(name, p, name_len);
                        /* Padded with 1 to 8 NULs to a multiple of eight bytes. */
                        entry_len = ((size_t) (p - e) + name_len + 8) & ~(size_t) 7;
                        if (entry_len > end - off)
                                return errorf(ret_error, -EBADMSG, "entry %u: padding runs past the entries", k);
                        off += entry_len;
                }
                name[name_len] = 0;
                if (name_field != NAME_MASK ? name_field != name_len : name_len < NAME_MASK)
                        return errorf(ret_error, -EBADMSG, "entry %u: path length %zu, flags say %zu", k, name_len,
                                      name_field);
                if (!mode_known(mode))
                        return errorf(ret_error, -EBADMSG, "entry %u: unknown mode %o", k, mode);
                if (!name_valid(name, name_len, mode == MODE_SPARSE_DIR))
                        return errorf(ret_error, -EBADMSG, "entry %u: not a path git writes", k);
                if (have_prev) {
                        int c = strcmp(prev, name);
                        if (c > 0 || (c == 0 && (prev_stage == 0 || prev_stage >= stage)))
                                return errorf(ret_error, -EBADMSG, "entry %u is out of order", k);
                }
                if (!have_prev || strcmp(prev, name) != 0) {
                        size_t at;
                        if (b->n_paths > 0)
                                sha256_digest(&b->digest, 32, b->digests[b->n_paths - 1]);
                        sha256_init(&b->digest);
                        r = builder_add_name(b, name, name_len, &at);
                        if (r == -E2BIG)
                                return errorf(ret_error, r, "paths longer than %u bytes in all", GIT_INDEX_NAMES_MAX);
                        if (r < 0)
                                return r;
                        b->paths[b->n_paths++] = at;
                        if (mode == MODE_GITLINK)
                                b->gitlinks[b->n_gitlinks++] = at;
                }
                digest_entry(b, mode, stage, e + ENTRY_STAT_SIZE, hash_len);
                {
                        /* Path, mode, flags (stage, assume-unchanged, the name's length),
                         * extended flags (skip-worktree, intent-to-add), object name: all but
                         * the stat data. */
                        uint8_t head[8] = { mode >> 24, mode >> 16, mode >> 8, mode, flags >> 8, (uint8_t) flags,
                                            extended >> 8, (uint8_t) extended };
                        sha256_update(&b->all, name_len + 1, (const uint8_t *) name);
                        sha256_update(&b->all, sizeof(head), head);
                        sha256_update(&b->all, hash_len, e + ENTRY_STAT_SIZE);
                }
                memcpy(prev, name, name_len + 1);
                prev_len = name_len;
                prev_stage = stage;
                have_prev = true;
        }
        if (b->n_paths > 0)
                sha256_digest(&b->digest, 32, b->digests[b->n_paths - 1]);
        *ret_off = off;
        return 0;
}

int git_index_parse(const void *buf, size_t size, GitHashAlgo algo, GitIndex **ret, char **ret_error) {
        const uint8_t *data = buf;
        size_t hash_len = algo == GIT_HASH_SHA256 ? SHA256_DIGEST_SIZE : SHA1_DIGEST_SIZE, end, off, entries_end;
        _cleanup_(builder_done) Builder b = {};
        _cleanup_free_ GitIndex *idx = NULL;
        bool zero = true, sparse = false;
        uint32_t version, n_entries;
        struct sha256_ctx trees, untracked;
        unsigned n_trees = 0, n_untracked = 0, n_fsmonitor = 0;
        size_t fsmonitor_off = 0;
        int r;

        if (size > GIT_INDEX_SIZE_MAX)
                return errorf(ret_error, -EFBIG, "index of %zu bytes, more than %u", size, GIT_INDEX_SIZE_MAX);
        if (size < INDEX_HEADER_SIZE + hash_len)
                return errorf(ret_error, -EBADMSG, "index of %zu bytes is shorter than a header and checksum", size);
        if (memcmp(data, "DIRC", 4) != 0)
                return errorf(ret_error, -EBADMSG, "not an index file (no DIRC signature)");
        version = be32(data + 4);
        if (version < 2 || version > 4)
                return errorf(ret_error, -EBADMSG, "index version %u (2, 3 and 4 are known)", version);
        n_entries = be32(data + 8);
        if (n_entries > GIT_INDEX_ENTRIES_MAX)
                return errorf(ret_error, -E2BIG, "index of %u entries, more than %u", n_entries, GIT_INDEX_ENTRIES_MAX);
        end = size - hash_len;
        for (size_t k = 0; k < hash_len; k++)
                zero = zero && data[end + k] == 0;
        if (!zero && !checksum_ok(data, end, algo, data + end))
                return errorf(ret_error, -EBADMSG, "index checksum does not match its content");
        /* Each entry takes at least its fixed part and two bytes: bound the arrays by the size. */
        if (n_entries > (end - INDEX_HEADER_SIZE) / (ENTRY_STAT_SIZE + hash_len + 4))
                return errorf(ret_error, -EBADMSG, "index claims %u entries, more than its size holds", n_entries);
        b.paths = calloc((size_t) n_entries + 1, sizeof(size_t));
        b.gitlinks = calloc((size_t) n_entries + 1, sizeof(size_t));
        b.digests = calloc((size_t) n_entries + 1, 32);
        if (!b.paths || !b.gitlinks || !b.digests)
                return -ENOMEM;
        sha256_init(&b.all);
        r = parse_entries(data, end, hash_len, version, n_entries, &b, &off, ret_error);
        if (r < 0)
                return r;
        entries_end = off;

        sha256_init(&trees);
        sha256_init(&untracked);
        while (off < end) {
                const uint8_t *x = data + off;
                uint32_t len;

                if (end - off < 8)
                        return errorf(ret_error, -EBADMSG, "%zu stray bytes after the entries", end - off);
                len = be32(x + 4);
                if (len > end - off - 8)
                        return errorf(ret_error, -EBADMSG, "extension at offset %zu runs past the end", off);
                /* The caches' bytes whole, header included: compared, never read. */
                if (memcmp(x, "TREE", 4) == 0) {
                        sha256_update(&trees, 8 + (size_t) len, x);
                        n_trees++;
                } else if (memcmp(x, "UNTR", 4) == 0) {
                        sha256_update(&untracked, 8 + (size_t) len, x);
                        n_untracked++;
                } else if (memcmp(x, "FSMN", 4) == 0) {
                        if (n_fsmonitor++ == 0)
                                fsmonitor_off = off;
                } else if (memcmp(x, "sdir", 4) == 0)
                        sparse = true;
                else if (memcmp(x, "link", 4) == 0)
                        return errorf(ret_error, -EOPNOTSUPP, "a split index (core.splitIndex): its entries are "
                                      "in another file");
                else if (!(x[0] >= 'A' && x[0] <= 'Z'))
                        return errorf(ret_error, -EOPNOTSUPP, "unknown required index extension '%c%c%c%c'",
                                      x[0] >= 0x20 && x[0] < 0x7f ? x[0] : '?', x[1] >= 0x20 && x[1] < 0x7f ? x[1] : '?',
                                      x[2] >= 0x20 && x[2] < 0x7f ? x[2] : '?', x[3] >= 0x20 && x[3] < 0x7f ? x[3] : '?');
                off += 8 + (size_t) len;
        }

        idx = calloc(1, sizeof(*idx));
        if (!idx)
                return -ENOMEM;
        idx->version = version;
        idx->checksum_verified = !zero;
        idx->n_trees = n_trees;
        sha256_digest(&trees, 32, idx->trees_digest);
        idx->n_untracked = n_untracked;
        sha256_digest(&untracked, 32, idx->untracked_digest);
        idx->n_fsmonitor = n_fsmonitor;
        idx->fsmonitor_off = fsmonitor_off;
        idx->n_entries = n_entries;
        sha256_digest(&b.all, 32, idx->entries_digest);
        /* The offsets become pointers now that the storage no longer moves. */
        idx->paths = calloc(b.n_paths + 1, sizeof(char *));
        idx->gitlinks = calloc(b.n_gitlinks + 1, sizeof(char *));
        if (!idx->paths || !idx->gitlinks) {
                free(idx->paths);
                free(idx->gitlinks);
                return -ENOMEM;
        }
        for (size_t k = 0; k < b.n_paths; k++) {
                idx->paths[k] = b.names + b.paths[k];
                if (idx->paths[k][strlen(idx->paths[k]) - 1] == '/')
                        idx->n_sparse_dirs++;
        }
        for (size_t k = 0; k < b.n_gitlinks; k++)
                idx->gitlinks[k] = b.names + b.gitlinks[k];
        if (idx->n_sparse_dirs > 0 && !sparse) {
                free(idx->paths);
                free(idx->gitlinks);
                return errorf(ret_error, -EBADMSG, "directory entries in an index without the sdir extension");
        }
        idx->n_paths = b.n_paths;
        idx->n_gitlinks = b.n_gitlinks;
        idx->entry_digests = TAKE_PTR(b.digests);
        idx->entries_end = entries_end;
        idx->names = TAKE_PTR(b.names);
        *ret = TAKE_PTR(idx);
        return 0;
}

int git_index_load_at(int dirfd, const char *name, GitHashAlgo algo, GitIndex **ret, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *data = NULL;
        struct stat st;
        size_t n;
        int r;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return errorf(ret_error, -errno, "cannot open the index: %s", strerror(errno));
        if (fstat(fd, &st) < 0)
                return errorf(ret_error, -errno, "cannot stat the index: %s", strerror(errno));
        if (!S_ISREG(st.st_mode))
                return errorf(ret_error, -EBADMSG, "the index is not a regular file");
        r = read_full_fd(fd, GIT_INDEX_SIZE_MAX, &data, &n);
        if (r == -EFBIG)
                return errorf(ret_error, r, "index of more than %u bytes", GIT_INDEX_SIZE_MAX);
        if (r < 0)
                return errorf(ret_error, r, "cannot read the index: %s", strerror(-r));
        return git_index_parse(data, n, algo, ret, ret_error);
}

GitIndex *git_index_free(GitIndex *i) {
        if (!i)
                return NULL;
        free(i->paths);
        free(i->gitlinks);
        free(i->entry_digests);
        free(i->names);
        free(i);
        return NULL;
}

/* The first of l[0..n) that is not below s in strcmp order. */
static size_t lower_bound(char *const *l, size_t n, const char *s) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (strcmp(l[mid], s) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static bool contains(char *const *l, size_t n, const char *s) {
        size_t k = lower_bound(l, n, s);
        return k < n && strcmp(l[k], s) == 0;
}

bool git_index_is_tracked(const GitIndex *i, const char *path) {
        if (contains(i->paths, i->n_paths, path))
                return true;
        if (i->n_sparse_dirs == 0)
                return false;
        /* Below a sparse directory entry ("dir/")? */
        size_t n = strnlen(path, GIT_INDEX_PATH_MAX + 1);
        char buf[GIT_INDEX_PATH_MAX + 2];
        if (n > GIT_INDEX_PATH_MAX)
                return false;
        memcpy(buf, path, n);
        for (size_t k = 0; k < n; k++)
                if (path[k] == '/') {
                        buf[k + 1] = 0;
                        if (contains(i->paths, i->n_paths, buf))
                                return true;
                        buf[k + 1] = path[k + 1];
                }
        return false;
}

bool git_index_has_tracked_below(const GitIndex *i, const char *dir) {
        size_t n = strnlen(dir, GIT_INDEX_PATH_MAX + 1), k;
        char buf[GIT_INDEX_PATH_MAX + 2];

        if (n == 0)
                return i->n_paths > 0;
        if (n > GIT_INDEX_PATH_MAX)
                return false;
        memcpy(buf, dir, n);
        buf[n] = '/';
        buf[n + 1] = 0;
        k = lower_bound(i->paths, i->n_paths, buf);
        if (k < i->n_paths && strncmp(i->paths[k], buf, n + 1) == 0)
                return true;
        /* Or dir is itself below a sparse directory entry. */
        return i->n_sparse_dirs > 0 && git_index_is_tracked(i, dir);
}

bool git_index_is_gitlink(const GitIndex *i, const char *path) {
        return contains(i->gitlinks, i->n_gitlinks, path);
}

int git_index_first_change(const GitIndex *before, const GitIndex *after, bool (*want)(const char *path, void *userdata),
                           void *userdata, char **ret_path) {
        size_t i = 0, j = 0;

        /* Both lists are sorted (strcmp) and hold each path once: one merge walk. */
        while (i < before->n_paths || j < after->n_paths) {
                const char *a = i < before->n_paths ? before->paths[i] : NULL,
                           *b = j < after->n_paths ? after->paths[j] : NULL, *path;
                int c = !a ? 1 : !b ? -1 : strcmp(a, b);
                bool differs;

                if (c < 0) {
                        path = a;               /* removed */
                        differs = true;
                        i++;
                } else if (c > 0) {
                        path = b;               /* added */
                        differs = true;
                        j++;
                } else {
                        path = a;
                        differs = memcmp(before->entry_digests[i], after->entry_digests[j], 32) != 0;
                        i++;
                        j++;
                }
                if (differs && want(path, userdata)) {
                        char *p = strdup(path);
                        if (!p)
                                return -ENOMEM;
                        *ret_path = p;
                        return 1;
                }
        }
        *ret_path = NULL;
        return 0;
}

static bool want_any(const char *path, void *userdata) {
        return true;
}

unsigned git_index_same_caches(const GitIndex *before, const GitIndex *after) {
        _cleanup_free_ char *path = NULL;
        unsigned same = 0;

        if (!before || !after || git_index_first_change(before, after, want_any, NULL, &path) != 0)
                return 0;
        if (before->n_trees == 1 && after->n_trees == 1 && memcmp(before->trees_digest, after->trees_digest, 32) == 0)
                same |= GIT_INDEX_KEEP_TREE;
        if (before->n_untracked == 1 && after->n_untracked == 1 &&
            memcmp(before->untracked_digest, after->untracked_digest, 32) == 0)
                same |= GIT_INDEX_KEEP_UNTRACKED;
        return same;
}

GitIndexKept *git_index_kept_free(GitIndexKept *k) {
        if (!k)
                return NULL;
        free(k->at);
        free(k->len);
        free(k->bytes);
        free(k);
        return NULL;
}

/* Piece `len` bytes at data, to go before the landed file's byte `at`; joined to the last one where it goes there too. */
static int kept_add(GitIndexKept *k, size_t at, const uint8_t *data, size_t len) {
        if (k->n_pieces > 0 && k->at[k->n_pieces - 1] == at)
                k->len[k->n_pieces - 1] += len;
        else {
                k->at[k->n_pieces] = at;
                k->len[k->n_pieces] = len;
                k->n_pieces++;
        }
        memcpy(k->bytes + k->n_bytes, data, len);
        k->n_bytes += len;
        return 0;
}

static void index_checksum(const uint8_t *data, size_t n, GitHashAlgo algo, bool zero, uint8_t *out) {
        if (zero)
                memset(out, 0, algo == GIT_HASH_SHA256 ? SHA256_DIGEST_SIZE : SHA1_DIGEST_SIZE);
        else if (algo == GIT_HASH_SHA256) {
                struct sha256_ctx c;
                sha256_init(&c);
                sha256_update(&c, n, data);
                sha256_digest(&c, SHA256_DIGEST_SIZE, out);
        } else {
                struct sha1_ctx c;
                sha1_init(&c);
                sha1_update(&c, n, data);
                sha1_digest(&c, SHA1_DIGEST_SIZE, out);
        }
}

int git_index_without_caches_kept(const void *buf, size_t size, const GitIndex *i, GitHashAlgo algo, unsigned keep,
                                  char **ret, size_t *ret_size, GitIndexKept **ret_kept) {
        const uint8_t *data = buf;
        size_t hash_len = algo == GIT_HASH_SHA256 ? SHA256_DIGEST_SIZE : SHA1_DIGEST_SIZE, end, off = i->entries_end, n,
               n_ext = 0;
        _cleanup_free_ uint8_t *out = NULL;
        _cleanup_git_index_kept_ GitIndexKept *k = NULL;

        if (ret_kept)
                *ret_kept = NULL;
        if (size < INDEX_HEADER_SIZE + hash_len || off < INDEX_HEADER_SIZE || off > size - hash_len)
                return -EINVAL;
        end = size - hash_len;
        out = malloc(size);
        if (!out)
                return -ENOMEM;
        /* At most one piece per extension: the arrays' bound. */
        for (size_t o = off; o < end; n_ext++) {
                uint32_t len;

                if (end - o < 8 || (len = be32(data + o + 4)) > end - o - 8)
                        return -EINVAL;
                o += 8 + (size_t) len;
        }
        if (ret_kept && n_ext > 0) {
                k = calloc(1, sizeof(*k));
                if (!k || !(k->at = calloc(n_ext, sizeof(size_t))) || !(k->len = calloc(n_ext, sizeof(size_t))) ||
                    !(k->bytes = malloc(end - off)))
                        return -ENOMEM;
        }
        memcpy(out, data, off);
        n = off;
        /* The extensions, bounds checked again: data must be what i was parsed from. */
        while (off < end) {
                uint32_t len = be32(data + off + 4);

                if (memcmp(data + off, "REUC", 4) == 0 || (!(keep & GIT_INDEX_KEEP_TREE) && memcmp(data + off, "TREE", 4) == 0) ||
                    (!(keep & GIT_INDEX_KEEP_UNTRACKED) && memcmp(data + off, "UNTR", 4) == 0)) {
                        if (k)
                                kept_add(k, n, data + off, 8 + (size_t) len);
                } else {
                        memcpy(out + n, data + off, 8 + (size_t) len);
                        n += 8 + (size_t) len;
                }
                off += 8 + (size_t) len;
        }
        if (n == end) {
                *ret = NULL;
                *ret_size = size;
                return 0;
        }
        index_checksum(out, n, algo, !i->checksum_verified, out + n);
        if (k) {
                k->size = size;
                k->landed_size = n + hash_len;
                k->hash_len = hash_len;
                memcpy(k->trailer, data + end, hash_len);
                memcpy(k->landed_trailer, out + n, hash_len);
                *ret_kept = TAKE_PTR(k);
        }
        *ret_size = n + hash_len;
        *ret = (char *) TAKE_PTR(out);
        return 0;
}

int git_index_without_caches(const void *buf, size_t size, const GitIndex *i, GitHashAlgo algo, unsigned keep,
                             char **ret, size_t *ret_size) {
        return git_index_without_caches_kept(buf, size, i, algo, keep, ret, ret_size, NULL);
}

/* Copies what of segment [pos, pos + len) of the written file lies in [off, off + n) to out (done bytes there). */
static size_t segment_overlap(uint64_t off, size_t n, size_t done, size_t pos, size_t len, size_t *ret_skip) {
        size_t skip;

        if (!(off < (uint64_t) pos + len && off + n > pos))
                return 0;
        skip = off > pos ? (size_t) (off - pos) : 0;
        *ret_skip = skip;
        return len - skip < n - done ? len - skip : n - done;
}

/*
 * The written file is the landed one's bytes before its checksum with the
 * pieces between them, then the written checksum: a walk over those
 * segments in order, each copied where it meets [off, off + n).
 */
ssize_t git_index_kept_read(const GitIndexKept *k, uint64_t off, void *buf, size_t n, GitIndexReadFn read_landed,
                            void *userdata) {
        uint8_t *out = buf;
        size_t done = 0, landed_body, pos = 0, landed_pos = 0, piece_off = 0, skip = 0, take;

        if (k->landed_size < k->hash_len || k->size != k->landed_size + k->n_bytes)
                return -EINVAL;
        if (off >= k->size || n == 0)
                return 0;
        if (n > k->size - off)
                n = (size_t) (k->size - off);
        landed_body = k->landed_size - k->hash_len;
        for (size_t s = 0; s <= k->n_pieces && done < n; s++) {
                size_t until = s < k->n_pieces ? k->at[s] : landed_body, len;

                if (until < landed_pos || until > landed_body)
                        return -EINVAL;
                /* The landed bytes before piece s (the last time: up to the checksum). */
                len = until - landed_pos;
                take = segment_overlap(off, n, done, pos, len, &skip);
                while (take > 0) {
                        ssize_t r = read_landed(userdata, out + done, take, (uint64_t) (landed_pos + skip));

                        if (r < 0)
                                return r;
                        if (r == 0 || (size_t) r > take)
                                return -EIO;    /* the landed file is shorter than the one the pieces were kept for */
                        done += (size_t) r;
                        skip += (size_t) r;
                        take -= (size_t) r;
                }
                pos += len;
                landed_pos = until;
                if (s == k->n_pieces)
                        break;
                /* Piece s. */
                len = k->len[s];
                if (len > k->n_bytes - piece_off)
                        return -EINVAL;
                take = segment_overlap(off, n, done, pos, len, &skip);
                memcpy(out + done, k->bytes + piece_off + skip, take);
                done += take;
                pos += len;
                piece_off += len;
        }
        /* The written file's checksum. */
        take = segment_overlap(off, n, done, pos, k->hash_len, &skip);
        memcpy(out + done, k->trailer + skip, take);
        done += take;
        return (ssize_t) done;
}

int git_index_extension_find(const void *buf, size_t n, const char sig[static 4], size_t *ret_off, size_t *ret_len) {
        const uint8_t *data = buf;

        for (size_t off = 0; off < n;) {
                uint32_t len;

                if (n - off < 8 || (len = be32(data + off + 4)) > n - off - 8)
                        return -EBADMSG;
                if (memcmp(data + off, sig, 4) == 0) {
                        *ret_off = off;
                        *ret_len = 8 + (size_t) len;
                        return 1;
                }
                off += 8 + (size_t) len;
        }
        return 0;
}

int git_index_kept_append(const void *buf, size_t size, const GitIndex *i, GitHashAlgo algo, const void *exts, size_t n,
                          GitIndexKept **ret) {
        const uint8_t *data = buf;
        size_t hash_len = algo == GIT_HASH_SHA256 ? SHA256_DIGEST_SIZE : SHA1_DIGEST_SIZE, end;
        _cleanup_git_index_kept_ GitIndexKept *k = NULL;

        if (size < INDEX_HEADER_SIZE + hash_len || i->entries_end < INDEX_HEADER_SIZE || i->entries_end > size - hash_len ||
            n > SIZE_MAX - size)
                return -EINVAL;
        end = size - hash_len;
        k = calloc(1, sizeof(*k));
        if (!k || !(k->at = calloc(1, sizeof(size_t))) || !(k->len = calloc(1, sizeof(size_t))) ||
            !(k->bytes = malloc(n ?: 1)))
                return -ENOMEM;
        memcpy(k->bytes, exts, n);
        k->n_bytes = n;
        k->n_pieces = 1;
        k->at[0] = end;
        k->len[0] = n;
        k->size = size + n;
        k->landed_size = size;
        k->hash_len = hash_len;
        memcpy(k->landed_trailer, data + end, hash_len);
        if (!i->checksum_verified)
                memset(k->trailer, 0, hash_len);
        else if (algo == GIT_HASH_SHA256) {
                struct sha256_ctx c;
                sha256_init(&c);
                sha256_update(&c, end, data);
                sha256_update(&c, n, exts);
                sha256_digest(&c, SHA256_DIGEST_SIZE, k->trailer);
        } else {
                struct sha1_ctx c;
                sha1_init(&c);
                sha1_update(&c, end, data);
                sha1_update(&c, n, exts);
                sha1_digest(&c, SHA1_DIGEST_SIZE, k->trailer);
        }
        *ret = TAKE_PTR(k);
        return 0;
}
