/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the index reader (git-index.c); the sandbox writes
 * .git/index. The first input byte picks a mode: bit 0 appends the right
 * checksum to the rest (so that mutations reach the entries rather than
 * stopping at the checksum), bit 1 reads it as a SHA-256 repository's index.
 * Accepted means parsed; what was read must then be consistent: paths in
 * strict strcmp order, each tracked, each gitlink one of them, each parent
 * directory with something tracked below it. Bits 2 and 3 pick what
 * git_index_without_caches_kept() keeps in the landed file; what it leaves
 * out, spliced back (git_index_kept_read(), in pieces of a size the input
 * picks), must give the input back byte for byte.
 */
#include <errno.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "git-index.h"

bool fuzz_accepted = false;

typedef struct Landed {
        const uint8_t *d;
        size_t n;
} Landed;

static ssize_t read_landed(void *userdata, void *buf, size_t n, uint64_t off) {
        const Landed *l = userdata;

        if (off >= l->n)
                return 0;
        if (n > l->n - off)
                n = (size_t) (l->n - off);
        memcpy(buf, l->d + off, n);
        return (ssize_t) n;
}

/* Left out, kept and spliced back: the file read as i from buf (n bytes) again. */
static void check_kept(const uint8_t *buf, size_t n, const GitIndex *i, GitHashAlgo algo, unsigned keep, size_t step) {
        _cleanup_free_ char *out = NULL;
        _cleanup_free_ uint8_t *whole = NULL;
        _cleanup_git_index_kept_ GitIndexKept *k = NULL;
        size_t landed = 0, off = 0;
        Landed l;
        int r = git_index_without_caches_kept(buf, n, i, algo, keep, &out, &landed, &k);

        if (r == -ENOMEM)
                return;
        if (r < 0 || (!out) != (!k))
                abort();
        if (!k)
                return;
        if (k->size != n || k->landed_size != landed || landed > n)
                abort();
        whole = malloc(n);
        if (!whole)
                return;
        l = (Landed) { (const uint8_t *) out, landed };
        while (off < n) {
                ssize_t got = git_index_kept_read(k, off, whole + off, step, read_landed, &l);
                if (got <= 0 || (size_t) got > step)
                        abort();
                off += (size_t) got;
        }
        if (memcmp(whole, buf, n) != 0 || git_index_kept_read(k, n, whole, 1, read_landed, &l) != 0)
                abort();

        /* What was left out are whole extensions: appended to the input before its checksum, the
         * result reads as an index with the same entries. */
        {
                _cleanup_git_index_kept_ GitIndexKept *a = NULL;
                _cleanup_git_index_ GitIndex *j = NULL;
                _cleanup_free_ char *error = NULL;
                _cleanup_free_ uint8_t *more = NULL;
                size_t o, len;

                if (git_index_extension_find(k->bytes, k->n_bytes, "UNTR", &o, &len) < 0 ||
                    git_index_extension_find(k->bytes, k->n_bytes, "TREE", &o, &len) < 0)
                        abort();
                r = git_index_kept_append(buf, n, i, algo, k->bytes, k->n_bytes, &a);
                if (r == -ENOMEM)
                        return;
                if (r < 0 || a->size != n + k->n_bytes)
                        abort();
                more = malloc(a->size);
                if (!more)
                        return;
                l = (Landed) { buf, n };
                if (git_index_kept_read(a, 0, more, a->size, read_landed, &l) != (ssize_t) a->size)
                        abort();
                r = git_index_parse(more, a->size, algo, &j, &error);
                if (r == -ENOMEM)
                        return;
                if (r < 0 || j->n_entries != i->n_entries || memcmp(j->entries_digest, i->entries_digest, 32) != 0)
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_git_index_ GitIndex *idx = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_free_ char *err = NULL;
        GitHashAlgo algo;
        size_t n;
        int r;

        if (size < 1 || size > 4 * 1024 * 1024)
                return 0;
        algo = data[0] & 2 ? GIT_HASH_SHA256 : GIT_HASH_SHA1;
        n = size - 1;
        buf = malloc(n + SHA256_DIGEST_SIZE);
        if (!buf)
                return 0;
        memcpy(buf, data + 1, n);
        if (data[0] & 1) {
                if (algo == GIT_HASH_SHA256) {
                        struct sha256_ctx c;
                        sha256_init(&c);
                        sha256_update(&c, n, buf);
                        sha256_digest(&c, SHA256_DIGEST_SIZE, buf + n);
                        n += SHA256_DIGEST_SIZE;
                } else {
                        struct sha1_ctx c;
                        sha1_init(&c);
                        sha1_update(&c, n, buf);
                        sha1_digest(&c, SHA1_DIGEST_SIZE, buf + n);
                        n += SHA1_DIGEST_SIZE;
                }
        }
        r = git_index_parse(buf, n, algo, &idx, &err);
        if (r < 0) {
                if ((r != -EBADMSG && r != -E2BIG && r != -EFBIG && r != -EOPNOTSUPP && r != -ENOMEM) ||
                    (r != -ENOMEM && !err) || idx)
                        abort();
                return 0;
        }
        if (err || !idx || idx->version < 2 || idx->version > 4 || idx->n_gitlinks > idx->n_paths)
                abort();
        fuzz_accepted = true;
        for (size_t i = 0; i < idx->n_paths; i++) {
                const char *p = idx->paths[i];
                size_t len = strlen(p);
                if (len == 0 || len > GIT_INDEX_PATH_MAX || p[0] == '/')
                        abort();
                if (i > 0 && strcmp(idx->paths[i - 1], p) >= 0)
                        abort();
                if (p[len - 1] != '/' && !git_index_is_tracked(idx, p))
                        abort();
                if (!git_index_has_tracked_below(idx, ""))
                        abort();
                const char *slash = strrchr(p, '/');
                if (slash && slash != p + len - 1) {
                        _cleanup_free_ char *dir = strndup(p, (size_t) (slash - p));
                        if (dir && !git_index_has_tracked_below(idx, dir))
                                abort();
                }
        }
        for (size_t i = 0; i < idx->n_gitlinks; i++)
                if (!git_index_is_gitlink(idx, idx->gitlinks[i]) || !git_index_is_tracked(idx, idx->gitlinks[i]))
                        abort();
        check_kept(buf, n, idx, algo, (data[0] >> 2) & 3, (size_t) (data[0] >> 4) * 97 + 1);
        return 0;
}
