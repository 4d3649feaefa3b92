/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha1.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-index.h"
#include "macro.h"
#include "util.h"

/* An index written here byte by byte, as git lays it out. */
typedef struct Buf {
        uint8_t d[65536];
        size_t n;
} Buf;

static void put32(Buf *b, uint32_t v) {
        b->d[b->n++] = (uint8_t) (v >> 24);
        b->d[b->n++] = (uint8_t) (v >> 16);
        b->d[b->n++] = (uint8_t) (v >> 8);
        b->d[b->n++] = (uint8_t) v;
}

static void put16(Buf *b, uint16_t v) {
        b->d[b->n++] = (uint8_t) (v >> 8);
        b->d[b->n++] = (uint8_t) v;
}

static void header(Buf *b, uint32_t version, uint32_t n) {
        memcpy(b->d, "DIRC", 4);
        b->n = 4;
        put32(b, version);
        put32(b, n);
}

typedef struct Entry {
        const char *name;
        uint32_t mode;
        unsigned stage;
        uint16_t extended;      /* written when nonzero */
        uint8_t oid;            /* every byte of its object name; 0: 0xab */
} Entry;

static char prev[2 * GIT_INDEX_PATH_MAX];

static void entry(Buf *b, unsigned version, Entry e) {
        size_t start = b->n, len = strlen(e.name);
        if (version == 2 && e.extended == 0x4000)
                e.extended = 0; /* git writes version 3 for those */
        for (int i = 0; i < 6; i++)
                put32(b, 0);
        put32(b, e.mode);
        for (int i = 0; i < 3; i++)
                put32(b, 0);
        memset(b->d + b->n, e.oid ? e.oid : 0xab, 20);
        b->n += 20;
        put16(b, (uint16_t) ((e.extended ? 0x4000 : 0) | e.stage << 12 | (len < 0xfff ? len : 0xfff)));
        if (e.extended)
                put16(b, e.extended);
        if (version == 4) {
                size_t common = 0, plen = strlen(prev);
                while (common < plen && common < len && prev[common] == e.name[common])
                        common++;
                size_t strip = plen - common;
                /* git's offset varint */
                uint8_t v[16];
                int k = 15;
                v[k] = strip & 0x7f;
                while (strip >>= 7)
                        v[--k] = 0x80 | (--strip & 0x7f);
                memcpy(b->d + b->n, v + k, 16 - k);
                b->n += 16 - k;
                memcpy(b->d + b->n, e.name + common, len - common + 1);
                b->n += len - common + 1;
        } else {
                memcpy(b->d + b->n, e.name, len);
                b->n += len;
                size_t total = ((b->n - start) + 8) & ~(size_t) 7;
                memset(b->d + b->n, 0, start + total - b->n);
                b->n = start + total;
        }
        strcpy(prev, e.name);
}

static void finish(Buf *b) {
        struct sha1_ctx c;
        sha1_init(&c);
        sha1_update(&c, b->n, b->d);
        sha1_digest(&c, SHA1_DIGEST_SIZE, b->d + b->n);
        b->n += SHA1_DIGEST_SIZE;
}

static Buf *build(unsigned version, const Entry *e, size_t n) {
        Buf *b = calloc(1, sizeof(Buf));
        prev[0] = 0;
        header(b, version, (uint32_t) n);
        for (size_t i = 0; i < n; i++)
                entry(b, version, e[i]);
        return b;
}

static const Entry sample[] = {
        { "README", 0100644 },
        { "a-b", 0100644 },
        { "a/b/c.c", 0100644 },
        { "a/b/d.c", 0100755 },
        { "a/link", 0120000 },
        { "conflict", 0100644, 1 },
        { "conflict", 0100644, 2 },
        { "conflict", 0100644, 3 },
        { "node_modules/x/package.json", 0100644, 0, 0x4000 /* skip-worktree */ },
        { "sub", 0160000 },
        { "vendor/lib", 0160000 },
};

static GitIndex *parse_ok(Buf *b) {
        _cleanup_free_ char *error = NULL;
        GitIndex *i = NULL;
        int r = git_index_parse(b->d, b->n, GIT_HASH_SHA1, &i, &error);
        cr_assert_eq(r, 0, "refused (%d): %s", r, error ? error : "");
        return i;
}

static void parse_bad(Buf *b, int want, const char *msg) {
        _cleanup_free_ char *error = NULL;
        GitIndex *i = NULL;
        int r = git_index_parse(b->d, b->n, GIT_HASH_SHA1, &i, &error);
        cr_assert_eq(r, want, "got %d (%s), want %d", r, error ? error : "", want);
        cr_assert_null(i);
        cr_assert(error && strstr(error, msg), "message '%s' lacks '%s'", error ? error : "", msg);
}

static void check_sample(GitIndex *i) {
        cr_assert_eq(i->n_paths, 9);
        cr_assert_eq(i->n_gitlinks, 2);
        cr_assert_str_eq(i->gitlinks[1], "vendor/lib");
        cr_assert(git_index_is_tracked(i, "a/b/c.c"));
        cr_assert(git_index_is_tracked(i, "conflict"));
        cr_assert(!git_index_is_tracked(i, "a/b"));
        cr_assert(!git_index_is_tracked(i, "a"));
        cr_assert(!git_index_is_tracked(i, "a/b/e.c"));
        cr_assert(git_index_has_tracked_below(i, "a"));
        cr_assert(git_index_has_tracked_below(i, "a/b"));
        cr_assert(git_index_has_tracked_below(i, "node_modules"));
        cr_assert(git_index_has_tracked_below(i, "node_modules/x"));
        cr_assert(!git_index_has_tracked_below(i, "node_modules/x/package.json"));
        cr_assert(!git_index_has_tracked_below(i, "a-b"));
        cr_assert(!git_index_has_tracked_below(i, "a/b/c"));
        cr_assert(!git_index_has_tracked_below(i, "vendo"));
        cr_assert(git_index_has_tracked_below(i, ""));
        cr_assert(git_index_is_gitlink(i, "sub"));
        cr_assert(!git_index_is_gitlink(i, "README"));
}

Test(git_index, versions) {
        for (unsigned v = 2; v <= 4; v++) {
                _cleanup_free_ Buf *b = build(v, sample, sizeof(sample) / sizeof(sample[0]));
                _cleanup_git_index_ GitIndex *i = NULL;
                /* An optional extension is skipped. */
                memcpy(b->d + b->n, "TREE", 4);
                b->n += 4;
                put32(b, 3);
                memcpy(b->d + b->n, "abc", 3);
                b->n += 3;
                finish(b);
                i = parse_ok(b);
                cr_assert_eq(i->version, v);
                cr_assert(i->checksum_verified);
                check_sample(i);
        }
}

Test(git_index, skip_hash) {
        _cleanup_free_ Buf *b = build(2, sample, 3);
        _cleanup_git_index_ GitIndex *i = NULL;
        b->n += SHA1_DIGEST_SIZE; /* all zero */
        i = parse_ok(b);
        cr_assert(!i->checksum_verified);
}

Test(git_index, empty) {
        _cleanup_free_ Buf *b = build(2, NULL, 0);
        _cleanup_git_index_ GitIndex *i = NULL;
        finish(b);
        i = parse_ok(b);
        cr_assert_eq(i->n_paths, 0);
        cr_assert(!git_index_has_tracked_below(i, ""));
        cr_assert(!git_index_is_tracked(i, "a"));
}

Test(git_index, refused) {
        Buf *b;

        b = build(2, sample, 3);
        finish(b);
        b->d[20] ^= 1;
        parse_bad(b, -EBADMSG, "checksum");
        free(b);

        b = build(2, sample, 3);
        finish(b);
        b->n -= 1;
        parse_bad(b, -EBADMSG, "checksum");
        free(b);

        b = build(5, sample, 3);
        finish(b);
        parse_bad(b, -EBADMSG, "version 5");
        free(b);

        /* Claims more entries than there are. */
        b = build(2, sample, 3);
        b->d[11] = 4;
        finish(b);
        parse_bad(b, -EBADMSG, "more than its size holds");
        free(b);

        b = build(2, sample, 3);
        b->d[8] = 0x7f;
        finish(b);
        parse_bad(b, -E2BIG, "entries");
        free(b);

        const Entry unordered[] = { { "b", 0100644 }, { "a", 0100644 } };
        b = build(2, unordered, 2);
        finish(b);
        parse_bad(b, -EBADMSG, "out of order");
        free(b);

        const Entry twice[] = { { "a", 0100644 }, { "a", 0100644 } };
        b = build(2, twice, 2);
        finish(b);
        parse_bad(b, -EBADMSG, "out of order");
        free(b);

        const Entry mode[] = { { "a", 0100666 } };
        b = build(2, mode, 1);
        finish(b);
        parse_bad(b, -EBADMSG, "mode");
        free(b);

        const char *bad_names[] = { "../x", "a//b", "/a", "a/", "a/./b", ".", "a/.." };
        for (size_t k = 0; k < sizeof(bad_names) / sizeof(bad_names[0]); k++) {
                const Entry e[] = { { bad_names[k], 0100644 } };
                b = build(2, e, 1);
                finish(b);
                parse_bad(b, -EBADMSG, "not a path");
                free(b);
        }

        const Entry ext[] = { { "a", 0100644, 0, 0x0001 } };
        b = build(3, ext, 1);
        finish(b);
        parse_bad(b, -EBADMSG, "extended flags");
        free(b);
        const Entry ext_ok[] = { { "a", 0100644, 0, 0x2000 } };
        b = build(2, ext_ok, 1);
        finish(b);
        parse_bad(b, -EBADMSG, "version 2");
        free(b);

        /* The name length in the flags must agree. */
        b = build(2, sample, 1);
        b->d[12 + 61] = 5;
        finish(b);
        parse_bad(b, -EBADMSG, "flags say");
        free(b);

        /* Version 4: a prefix longer than the previous path. */
        b = build(4, sample, 2);
        b->d[12 + 70 + 62] = 9; /* the second entry's varint: strip 9 of "README" */
        finish(b);
        parse_bad(b, -EBADMSG, "prefix");
        free(b);

        b = build(2, sample, 1);
        memcpy(b->d + b->n, "link", 4);
        b->n += 4;
        put32(b, 0);
        finish(b);
        parse_bad(b, -EOPNOTSUPP, "split index");
        free(b);

        b = build(2, sample, 1);
        memcpy(b->d + b->n, "abcd", 4);
        b->n += 4;
        put32(b, 0);
        finish(b);
        parse_bad(b, -EOPNOTSUPP, "abcd");
        free(b);

        b = build(2, sample, 1);
        memcpy(b->d + b->n, "TREE", 4);
        b->n += 4;
        put32(b, 100);
        finish(b);
        parse_bad(b, -EBADMSG, "runs past");
        free(b);

        b = build(2, sample, 1);
        b->n += 3;
        finish(b);
        parse_bad(b, -EBADMSG, "stray");
        free(b);

        b = calloc(1, sizeof(Buf));
        memcpy(b->d, "DIRX", 4);
        b->n = 40;
        parse_bad(b, -EBADMSG, "DIRC");
        b->n = 10;
        parse_bad(b, -EBADMSG, "shorter");
        free(b);
}

Test(git_index, sparse_directories) {
        const Entry e[] = { { "a", 0100644 }, { "big/", 0040000, 0, 0x4000 }, { "c", 0100644 } };
        _cleanup_free_ Buf *b = build(3, e, 3);
        _cleanup_git_index_ GitIndex *i = NULL;

        finish(b);
        parse_bad(b, -EBADMSG, "sdir");
        b->n -= SHA1_DIGEST_SIZE;
        memcpy(b->d + b->n, "sdir", 4);
        b->n += 4;
        put32(b, 0);
        finish(b);
        i = parse_ok(b);
        cr_assert(git_index_is_tracked(i, "big/x/y"));
        cr_assert(!git_index_is_tracked(i, "big"));
        cr_assert(git_index_has_tracked_below(i, "big"));
        cr_assert(git_index_has_tracked_below(i, "big/x"));
        cr_assert(!git_index_is_tracked(i, "bi"));
}

Test(git_index, long_names) {
        char name[GIT_INDEX_PATH_MAX + 2];
        memset(name, 'n', sizeof(name));
        name[0x1000] = 0;
        const Entry e[] = { { name, 0100644 } };
        Buf *b = build(2, e, 1);
        _cleanup_git_index_ GitIndex *i = NULL;
        finish(b);
        i = parse_ok(b); /* 4096 bytes: flags say 0xfff, the NUL decides */
        cr_assert_eq(strlen(i->paths[0]), 0x1000);
        free(b);
        name[0x1000] = 'n';
        name[GIT_INDEX_PATH_MAX + 1] = 0;
        b = build(2, e, 1);
        finish(b);
        parse_bad(b, -EBADMSG, "path not terminated");
        free(b);
}

static bool protected_husky(const char *path, void *userdata) {
        (void) userdata;
        return strncmp(path, ".husky/", 7) == 0 || strcmp(path, ".husky") == 0;
}

static char *first_change(const Entry *a, size_t na, const Entry *b, size_t nb) {
        _cleanup_(git_index_freep) GitIndex *x = NULL, *y = NULL;
        Buf *ba = build(2, a, na), *bb;
        char *path = NULL;
        int r;

        finish(ba);
        x = parse_ok(ba);
        bb = build(2, b, nb);
        finish(bb);
        y = parse_ok(bb);
        free(ba);
        free(bb);
        r = git_index_first_change(x, y, protected_husky, NULL, &path);
        cr_assert_geq(r, 0);
        cr_assert_eq(r == 1, path != NULL);
        return path;
}

/* Issue 32 item 3: what a new index would check out for protected paths, against the old one. */
Test(git_index, first_change) {
        const Entry host[] = { { ".husky/pre-push", 0100755 }, { "README", 0100644 }, { "src/a.c", 0100644 } };
        const Entry same_but_other[] = { { ".husky/pre-push", 0100755 }, { "README", 0100644, 0, 0, 0x11 },
                                         { "src/a.c", 0100644, 0, 0, 0x12 }, { "src/b.c", 0100644 } };
        const Entry other_blob[] = { { ".husky/pre-push", 0100755, 0, 0, 0x66 }, { "README", 0100644 },
                                     { "src/a.c", 0100644 } };
        const Entry other_mode[] = { { ".husky/pre-push", 0100644 }, { "README", 0100644 }, { "src/a.c", 0100644 } };
        const Entry added[] = { { ".husky/pre-commit", 0100755 }, { ".husky/pre-push", 0100755 },
                                { "README", 0100644 }, { "src/a.c", 0100644 } };
        const Entry removed[] = { { "README", 0100644 }, { "src/a.c", 0100644 } };
        const Entry conflict[] = { { ".husky/pre-push", 0100755, 1 }, { ".husky/pre-push", 0100755, 2, 0, 0x66 },
                                   { "README", 0100644 }, { "src/a.c", 0100644 } };
        const Entry skip_worktree[] = { { ".husky/pre-push", 0100755, 0, 0x4000 }, { "README", 0100644 },
                                        { "src/a.c", 0100644 } };
        char *p;

        cr_expect_null(first_change(host, 3, host, 3));
        cr_expect_null(first_change(host, 3, same_but_other, 4), "unprotected paths change freely");
        p = first_change(host, 3, other_blob, 3);
        cr_expect(p && strcmp(p, ".husky/pre-push") == 0, "another object: %s", p);
        free(p);
        p = first_change(host, 3, other_mode, 3);
        cr_expect(p && strcmp(p, ".husky/pre-push") == 0, "another mode: %s", p);
        free(p);
        p = first_change(host, 3, added, 4);
        cr_expect(p && strcmp(p, ".husky/pre-commit") == 0, "added: %s", p);
        free(p);
        p = first_change(host, 3, removed, 2);
        cr_expect(p && strcmp(p, ".husky/pre-push") == 0, "removed: %s", p);
        free(p);
        p = first_change(host, 3, conflict, 4);
        cr_expect(p && strcmp(p, ".husky/pre-push") == 0, "stages: %s", p);
        free(p);
        cr_expect_null(first_change(host, 3, skip_worktree, 3), "flags are not what is checked out");
}

static void extension(Buf *b, const char *sig, const char *payload) {
        memcpy(b->d + b->n, sig, 4);
        b->n += 4;
        put32(b, (uint32_t) strlen(payload));
        memcpy(b->d + b->n, payload, strlen(payload));
        b->n += strlen(payload);
}

/* TREE, REUC and UNTR go, the other extensions stay in order, the checksum is git's again. */
Test(git_index, without_caches) {
        for (unsigned v = 2; v <= 4; v++) {
                _cleanup_free_ Buf *b = build(v, sample, sizeof(sample) / sizeof(sample[0]));
                _cleanup_git_index_ GitIndex *i = NULL, *j = NULL;
                _cleanup_free_ char *out = NULL, *error = NULL;
                size_t entries_end = b->n, n = 0;

                extension(b, "TREE", "\0011 0\n");
                extension(b, "UNTR", "untracked");
                extension(b, "REUC", "a\0100644 100644 100644\n");
                extension(b, "FSMN", "token");
                finish(b);
                i = parse_ok(b);
                cr_assert_eq(i->entries_end, entries_end);
                cr_assert_eq(git_index_without_caches(b->d, b->n, i, GIT_HASH_SHA1, 0, &out, &n), 0);
                cr_assert_eq(n, entries_end + 8 + 5 + SHA1_DIGEST_SIZE);
                cr_assert_eq(memcmp(out, b->d, entries_end), 0);
                cr_assert_eq(memcmp(out + entries_end, "FSMN", 4), 0);
                cr_assert_eq(git_index_parse(out, n, GIT_HASH_SHA1, &j, &error), 0, "%s", error ? error : "");
                cr_assert(j->checksum_verified);
                cr_assert_eq(j->n_paths, i->n_paths);
                cr_assert_eq(memcmp(j->entry_digests, i->entry_digests, 32 * i->n_paths), 0);
                check_sample(j);
        }
}

Test(git_index, without_caches_skip_hash) {
        _cleanup_free_ Buf *b = build(2, sample, 3);
        _cleanup_git_index_ GitIndex *i = NULL;
        _cleanup_free_ char *out = NULL;
        static const uint8_t zero[SHA1_DIGEST_SIZE];
        size_t n = 0;

        extension(b, "TREE", "x");
        b->n += SHA1_DIGEST_SIZE; /* all zero */
        i = parse_ok(b);
        cr_assert_eq(git_index_without_caches(b->d, b->n, i, GIT_HASH_SHA1, 0, &out, &n), 0);
        cr_assert_eq(n, i->entries_end + SHA1_DIGEST_SIZE);
        cr_assert_eq(memcmp(out + i->entries_end, zero, SHA1_DIGEST_SIZE), 0);
        /* Data that is not what i was parsed from is refused. */
        cr_assert_eq(git_index_without_caches(b->d, 20, i, GIT_HASH_SHA1, 0, &out, &n), -EINVAL);
}

/* Kept: TREE and UNTR stay, REUC goes; with nothing to leave out, nothing is written. */
Test(git_index, without_caches_keep_tree) {
        _cleanup_free_ Buf *b = build(2, sample, sizeof(sample) / sizeof(sample[0])), *c = NULL;
        _cleanup_git_index_ GitIndex *i = NULL, *k = NULL, *j = NULL;
        _cleanup_free_ char *out = NULL, *none = NULL, *error = NULL;
        size_t entries_end = b->n, n = 0, m = 0;

        extension(b, "TREE", "\0011 0\n");
        extension(b, "UNTR", "untracked");
        c = malloc(sizeof(*c));
        cr_assert_not_null(c);
        memcpy(c, b, sizeof(*c));
        extension(b, "REUC", "a\0100644 100644 100644\n");
        finish(b);
        i = parse_ok(b);
        cr_assert_eq(git_index_without_caches(b->d, b->n, i, GIT_HASH_SHA1, GIT_INDEX_KEEP_TREE, &out, &n), 0);
        cr_assert_not_null(out);
        cr_assert_eq(n, entries_end + 8 + 5 + SHA1_DIGEST_SIZE);
        cr_assert_eq(memcmp(out + entries_end, "TREE", 4), 0);
        free(out);
        cr_assert_eq(git_index_without_caches(b->d, b->n, i, GIT_HASH_SHA1,
                                              GIT_INDEX_KEEP_TREE | GIT_INDEX_KEEP_UNTRACKED, &out, &n), 0);
        cr_assert_not_null(out);
        cr_assert_eq(n, entries_end + 8 + 5 + 8 + 9 + SHA1_DIGEST_SIZE);
        cr_assert_eq(memcmp(out + entries_end + 13, "UNTR", 4), 0);
        cr_assert_eq(git_index_parse(out, n, GIT_HASH_SHA1, &j, &error), 0, "%s", error ? error : "");
        cr_assert_eq(j->n_trees, 1u);
        cr_assert_eq(memcmp(j->trees_digest, i->trees_digest, 32), 0);

        finish(c);
        k = parse_ok(c);
        cr_assert_eq(git_index_without_caches(c->d, c->n, k, GIT_HASH_SHA1, GIT_INDEX_KEEP_TREE | GIT_INDEX_KEEP_UNTRACKED,
                                              &none, &m), 0);
        cr_assert_null(none);
        cr_assert_eq(m, c->n);
}

/* An index of e with the extensions exts ("SIG=payload" each), the first entry's stat data changed with other_stat. */
static GitIndex *with_caches(const Entry *e, size_t n, bool other_stat, const char *const *exts) {
        _cleanup_free_ Buf *b = build(2, e, n);

        if (other_stat)
                b->d[12 + 3] ^= 0x5a;   /* the first entry's ctime */
        for (; exts && *exts; exts++)
                extension(b, (char[5]) { (*exts)[0], (*exts)[1], (*exts)[2], (*exts)[3], 0 }, *exts + 5);
        finish(b);
        return parse_ok(b);
}

#define CACHES(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* The host's caches stay only over the host's entries, each byte for byte. */
Test(git_index, same_caches) {
        const Entry host[] = { { "README", 0100644 }, { "src/a.c", 0100644 } };
        const Entry other_blob[] = { { "README", 0100644 }, { "src/a.c", 0100644, 0, 0, 0x66 } };
        const Entry other_mode[] = { { "README", 0100644 }, { "src/a.c", 0100755 } };
        const Entry added[] = { { "README", 0100644 }, { "src/a.c", 0100644 }, { "src/b.c", 0100644 } };
        const unsigned both = GIT_INDEX_KEEP_TREE | GIT_INDEX_KEEP_UNTRACKED;
        _cleanup_git_index_ GitIndex *a = with_caches(host, 2, false, CACHES("TREE=\0012 1\n", "UNTR=Location /h", "FSMN=t1"));
        struct {
                const char *what;
                const Entry *e;
                size_t n;
                bool other_stat;
                const char *const *exts;
                unsigned want;
        } cases[] = {
                { "the same entries and caches", host, 2, false, CACHES("TREE=\0012 1\n", "UNTR=Location /h", "FSMN=t1"), both },
                { "another token, stat data", host, 2, true, CACHES("TREE=\0012 1\n", "UNTR=Location /h", "FSMN=t2"), both },
                { "other trees", host, 2, false, CACHES("TREE=\0012 0\n", "UNTR=Location /h"), GIT_INDEX_KEEP_UNTRACKED },
                { "another untracked cache", host, 2, false, CACHES("TREE=\0012 1\n", "UNTR=Location /workspace"),
                  GIT_INDEX_KEEP_TREE },
                { "no caches", host, 2, false, NULL, 0 },
                { "two TREE extensions", host, 2, false, CACHES("TREE=\0012 1\n", "TREE=\0012 1\n", "UNTR=Location /h"),
                  GIT_INDEX_KEEP_UNTRACKED },
                { "another object", other_blob, 2, false, CACHES("TREE=\0012 1\n", "UNTR=Location /h"), 0 },
                { "another mode", other_mode, 2, false, CACHES("TREE=\0012 1\n", "UNTR=Location /h"), 0 },
                { "an entry added", added, 3, false, CACHES("TREE=\0012 1\n", "UNTR=Location /h"), 0 },
        };

        cr_assert_eq(a->n_trees, 1u);
        cr_assert_eq(a->n_untracked, 1u);
        cr_expect_eq(git_index_same_caches(a, a), both);
        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
                _cleanup_git_index_ GitIndex *b = with_caches(cases[k].e, cases[k].n, cases[k].other_stat, cases[k].exts);
                cr_expect_eq(git_index_same_caches(a, b), cases[k].want, "%s: %u", cases[k].what, git_index_same_caches(a, b));
        }
        {
                _cleanup_git_index_ GitIndex *b = with_caches(host, 2, false, NULL);
                cr_expect_eq(git_index_same_caches(b, a), 0u, "no caches in the host's index");
        }
        cr_expect_eq(git_index_same_caches(NULL, a), 0u);
        cr_expect_eq(git_index_same_caches(a, NULL), 0u);
}

/* ---- the kept caches: left out, kept, spliced back ---------------------------- */

typedef struct Landed {
        const uint8_t *d;
        size_t n;
        unsigned calls;
} Landed;

static ssize_t read_landed(void *userdata, void *buf, size_t n, uint64_t off) {
        Landed *l = userdata;

        l->calls++;
        if (off >= l->n)
                return 0;
        if (n > l->n - off)
                n = (size_t) (l->n - off);
        /* Short reads, as a file may give: at most 7 bytes a time. */
        if (n > 7)
                n = 7;
        memcpy(buf, l->d + off, n);
        return (ssize_t) n;
}

/* What git_index_kept_read() serves of (landed, kept): the whole file, read in chunks of step bytes. */
static uint8_t *spliced(const GitIndexKept *k, const uint8_t *landed, size_t landed_size, size_t step) {
        Landed l = { landed, landed_size };
        uint8_t *out = malloc(k->size + 1);
        size_t off = 0;

        cr_assert_not_null(out);
        while (off < k->size) {
                ssize_t r = git_index_kept_read(k, off, out + off, step, read_landed, &l);
                cr_assert_gt(r, 0, "at %zu of %zu: %zd", off, k->size, r);
                cr_assert_leq((size_t) r, step);
                off += (size_t) r;
        }
        cr_assert_eq(git_index_kept_read(k, off, out, step, read_landed, &l), 0, "nothing past the end");
        return out;
}

/* Each order of the caches and the other extensions, each keep: the written file comes back byte for byte. */
Test(git_index, kept_splice) {
        static const char *const orders[][5] = {
                { "TREE", "REUC", "UNTR", "FSMN", NULL },
                { "FSMN", "UNTR", NULL },
                { "UNTR", NULL },
                { "TREE", "FSMN", "UNTR", "EOIE", NULL },
                { "EOIE", "TREE", NULL },
                { "FSMN", NULL },
        };
        static const size_t steps[] = { 1, 3, 8, 13, 4096, 1u << 20 };

        for (size_t o = 0; o < ELEMENTSOF(orders); o++)
                for (unsigned keep = 0; keep <= (GIT_INDEX_KEEP_TREE | GIT_INDEX_KEEP_UNTRACKED); keep++) {
                        _cleanup_free_ Buf *b = build(o % 2 ? 4 : 2, sample, sizeof(sample) / sizeof(sample[0]));
                        _cleanup_git_index_ GitIndex *i = NULL, *j = NULL;
                        _cleanup_git_index_kept_ GitIndexKept *k = NULL;
                        _cleanup_free_ char *out = NULL, *error = NULL;
                        size_t n = 0;
                        bool leaves_out = false;

                        for (size_t e = 0; orders[o][e]; e++) {
                                const char *sig = orders[o][e];
                                extension(b, sig, streq(sig, "UNTR") ? "Location /workspace, system Linux\n..." :
                                                  streq(sig, "TREE") ? "\0011 0\n" : "payload");
                                leaves_out = leaves_out || streq(sig, "REUC") ||
                                             (streq(sig, "TREE") && !(keep & GIT_INDEX_KEEP_TREE)) ||
                                             (streq(sig, "UNTR") && !(keep & GIT_INDEX_KEEP_UNTRACKED));
                        }
                        finish(b);
                        i = parse_ok(b);
                        cr_assert_eq(git_index_without_caches_kept(b->d, b->n, i, GIT_HASH_SHA1, keep, &out, &n, &k), 0);
                        if (!leaves_out) {
                                cr_assert_null(out, "order %zu keep %u", o, keep);
                                cr_assert_null(k);
                                continue;
                        }
                        cr_assert_not_null(out);
                        cr_assert_not_null(k, "order %zu keep %u", o, keep);
                        cr_assert_eq(k->size, b->n);
                        cr_assert_eq(k->landed_size, n);
                        cr_assert_eq(memcmp(k->landed_trailer, out + n - SHA1_DIGEST_SIZE, SHA1_DIGEST_SIZE), 0);
                        cr_assert_eq(git_index_parse(out, n, GIT_HASH_SHA1, &j, &error), 0, "%s", error ?: "");
                        cr_assert_eq(j->n_untracked, keep & GIT_INDEX_KEEP_UNTRACKED ? i->n_untracked : 0u);
                        for (size_t s = 0; s < ELEMENTSOF(steps); s++) {
                                _cleanup_free_ uint8_t *whole = spliced(k, (uint8_t *) out, n, steps[s]);
                                cr_assert_eq(memcmp(whole, b->d, b->n), 0, "order %zu keep %u step %zu", o, keep, steps[s]);
                        }
                        /* Every start and length within a short distance. */
                        for (size_t off = 0; off < b->n; off += 5)
                                for (size_t len = 1; len < 40; len += 6) {
                                        Landed l = { (uint8_t *) out, n };
                                        uint8_t got[64];
                                        ssize_t r = git_index_kept_read(k, off, got, len, read_landed, &l);
                                        size_t want = len < b->n - off ? len : b->n - off;
                                        cr_assert_eq(r, (ssize_t) want);
                                        cr_assert_eq(memcmp(got, b->d + off, want), 0, "at %zu, %zu bytes", off, len);
                                }
                        /* A landed file that ends early is not the one kept for. */
                        {
                                Landed l = { (uint8_t *) out, i->entries_end / 2 };
                                uint8_t got[4096];
                                cr_assert_eq(git_index_kept_read(k, 0, got, sizeof(got), read_landed, &l), -EIO);
                        }
                }
}

/* Without a place to keep them, nothing is kept; a file with no extension keeps none. */
Test(git_index, kept_none) {
        _cleanup_free_ Buf *b = build(2, sample, 3);
        _cleanup_git_index_ GitIndex *i = NULL;
        _cleanup_git_index_kept_ GitIndexKept *k = NULL;
        _cleanup_free_ char *out = NULL;
        size_t n = 0;

        finish(b);
        i = parse_ok(b);
        cr_assert_eq(git_index_without_caches_kept(b->d, b->n, i, GIT_HASH_SHA1, 0, &out, &n, &k), 0);
        cr_assert_null(out);
        cr_assert_null(k);
        cr_assert_eq(n, b->n);
}

static int git_run(const char *dir, const char *fmt, ...) _printf_(2, 3);
static int git_run(const char *dir, const char *fmt, ...) {
        _cleanup_free_ char *args = NULL, *cmd = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&args, fmt, ap);
        va_end(ap);
        cr_assert_geq(r, 0);
        cr_assert_geq(asprintf(&cmd, "cd '%s' && unset GIT_DIR GIT_INDEX_FILE && export HOME=/nonexistent "
                                     "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null && { %s; } >/dev/null 2>&1",
                               dir, args), 0);
        return system(cmd);
}

static void real_index(const char *format, GitHashAlgo algo) {
        char dir[] = "/tmp/lazaret-git-index-XXXXXX";
        _cleanup_free_ char *data = NULL, *out = NULL, *error = NULL, *path = NULL;
        _cleanup_git_index_ GitIndex *i = NULL, *landed = NULL, *again = NULL;
        _cleanup_git_index_kept_ GitIndexKept *k = NULL;
        _cleanup_close_ int dfd = -EBADF;
        size_t size = 0, n = 0;
        int r;

        cr_assert_not_null(mkdtemp(dir));
        if (git_run(dir, "git init -q --object-format=%s .", format) != 0) {
                cr_log_warn("git cannot make a %s repository here: not tested", format);
                (void) git_run("/", "rm -rf '%s'", dir);
                return;
        }
        cr_assert_eq(git_run(dir, "mkdir -p src/a untracked/b && echo x >src/a/f && echo y >README && echo z >untracked/b/g "
                                  "&& echo '*.o' >.gitignore && touch src/a/f.o && git add README src .gitignore "
                                  "&& git -c user.name=t -c user.email=t@t commit -qm one && echo w >src/a/h "
                                  "&& git -c core.untrackedCache=true status --porcelain && sleep 1 "
                                  "&& git -c core.untrackedCache=true status --porcelain"), 0);
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(dfd, 0);
        cr_assert_geq(asprintf(&path, "%s/.git/index", dir), 0);
        r = read_full_file(path, GIT_INDEX_SIZE_MAX, &data, &size);
        cr_assert_eq(r, 0);
        cr_assert_eq(git_index_parse(data, size, algo, &i, &error), 0, "%s", error ?: "");
        cr_assert_eq(i->n_untracked, 1u, "git wrote an untracked cache");
        cr_assert_eq(i->n_trees, 1u, "git wrote its cached trees");
        cr_assert_eq(git_index_without_caches_kept(data, size, i, algo, 0, &out, &n, &k), 0);
        cr_assert_not_null(k);
        cr_assert_eq(git_index_parse(out, n, algo, &landed, &error), 0, "%s", error ?: "");
        cr_assert_eq(landed->n_untracked, 0u);
        cr_assert_eq(landed->n_trees, 0u);
        cr_assert_eq(k->size, size);
        {
                _cleanup_free_ uint8_t *whole = spliced(k, (uint8_t *) out, n, 4096);
                cr_assert_eq(memcmp(whole, data, size), 0, "the spliced file is git's, byte for byte");
                cr_assert_eq(git_index_parse(whole, size, algo, &again, &error), 0, "%s", error ?: "");
                cr_assert(again->checksum_verified);
        }
        /* git itself reads the spliced file, and the landed one, as the same index. */
        cr_assert_eq(write_file_bytes(path, out, n, 0644), 0);
        cr_assert_eq(git_run(dir, "git -c core.untrackedCache=false status --porcelain"), 0);
        (void) git_run("/", "rm -rf '%s'", dir);
}

/* A real git's index with an untracked cache and cached trees: left out, kept, spliced back byte for byte. */
Test(git_index, kept_real_git) {
        if (system("git --version >/dev/null 2>&1") != 0) {
                cr_log_warn("no git here: not tested");
                return;
        }
        real_index("sha1", GIT_HASH_SHA1);
        real_index("sha256", GIT_HASH_SHA256);
}

/* The entries' digest: stat data left out, flags and everything else in. */
Test(git_index, entries_digest) {
        const Entry base[] = { { "README", 0100644 }, { "src/a.c", 0100644 } };
        const Entry skip[] = { { "README", 0100644 }, { "src/a.c", 0100644, 0, 0x4000 } };
        const Entry blob[] = { { "README", 0100644 }, { "src/a.c", 0100644, 0, 0, 0x11 } };
        _cleanup_git_index_ GitIndex *a = with_caches(base, 2, false, NULL), *b = with_caches(base, 2, true, NULL),
                                     *c = NULL, *d = with_caches(blob, 2, false, NULL),
                                     *e = with_caches(base, 2, false, CACHES("FSMN=token", "UNTR=x"));
        _cleanup_free_ Buf *v3 = build(3, skip, 2);

        finish(v3);
        c = parse_ok(v3);
        cr_expect_eq(a->n_entries, 2u);
        cr_expect_eq(memcmp(a->entries_digest, b->entries_digest, 32), 0, "stat data are not in it");
        cr_expect_eq(memcmp(a->entries_digest, e->entries_digest, 32), 0, "extensions are not in it");
        cr_expect_neq(memcmp(a->entries_digest, c->entries_digest, 32), 0, "skip-worktree is");
        cr_expect_neq(memcmp(a->entries_digest, d->entries_digest, 32), 0, "the object is");
        cr_expect_eq(a->n_fsmonitor, 0u);
        cr_expect_eq(e->n_fsmonitor, 1u);
        cr_expect_eq(e->n_untracked, 1u);
}

/* Extensions appended before the checksum: git's checksum again, the entries as they were. */
Test(git_index, kept_append) {
        _cleanup_free_ Buf *b = build(2, sample, sizeof(sample) / sizeof(sample[0])), *exts = calloc(1, sizeof(Buf));
        _cleanup_git_index_ GitIndex *i = NULL, *j = NULL;
        _cleanup_git_index_kept_ GitIndexKept *k = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ uint8_t *whole = NULL;
        size_t off = 0, len = 0;

        extension(b, "TREE", "\0011 0\n");
        finish(b);
        i = parse_ok(b);
        extension(exts, "UNTR", "Location /workspace, system Linux");
        extension(exts, "FSMN", "token");
        cr_assert_eq(git_index_extension_find(exts->d, exts->n, "FSMN", &off, &len), 1);
        cr_assert_eq(off, 8u + 33u);
        cr_assert_eq(len, 8u + 5u);
        cr_assert_eq(git_index_extension_find(exts->d, exts->n, "REUC", &off, &len), 0);
        cr_assert_eq(git_index_extension_find(exts->d, exts->n - 1, "FSMN", &off, &len), -EBADMSG);
        cr_assert_eq(git_index_kept_append(b->d, b->n, i, GIT_HASH_SHA1, exts->d, exts->n, &k), 0);
        cr_assert_eq(k->size, b->n + exts->n);
        whole = spliced(k, b->d, b->n, 17);
        cr_assert_eq(memcmp(whole, b->d, b->n - SHA1_DIGEST_SIZE), 0);
        cr_assert_eq(memcmp(whole + b->n - SHA1_DIGEST_SIZE, exts->d, exts->n), 0);
        cr_assert_eq(git_index_parse(whole, k->size, GIT_HASH_SHA1, &j, &error), 0, "%s", error ?: "");
        cr_assert(j->checksum_verified);
        cr_assert_eq(j->n_untracked, 1u);
        cr_assert_eq(j->n_fsmonitor, 1u);
        cr_assert_eq(j->n_trees, 1u);
        cr_assert_eq(memcmp(j->entries_digest, i->entries_digest, 32), 0);
}
