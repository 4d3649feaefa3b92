/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cleanup.h"
#include "git-object.h"
#include "macro.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

typedef struct Hasher {
        GitHashAlgo algo;
        union {
                struct sha1_ctx sha1;
                struct sha256_ctx sha256;
        };
} Hasher;

static size_t oid_len(GitHashAlgo a) {
        return a == GIT_HASH_SHA256 ? SHA256_DIGEST_SIZE : SHA1_DIGEST_SIZE;
}

static void hasher_init(Hasher *h, GitHashAlgo a) {
        h->algo = a;
        if (a == GIT_HASH_SHA256)
                sha256_init(&h->sha256);
        else
                sha1_init(&h->sha1);
}

static void hasher_update(Hasher *h, const void *p, size_t n) {
        if (h->algo == GIT_HASH_SHA256)
                sha256_update(&h->sha256, n, p);
        else
                sha1_update(&h->sha1, n, p);
}

static void hasher_digest(Hasher *h, uint8_t out[static GIT_OID_MAX]) {
        if (h->algo == GIT_HASH_SHA256)
                sha256_digest(&h->sha256, SHA256_DIGEST_SIZE, out);
        else
                sha1_digest(&h->sha1, SHA1_DIGEST_SIZE, out);
}

_printf_(2, 3) static int why(char **ret_why, const char *fmt, ...) {
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(ret_why, fmt, ap);
        va_end(ap);
        if (k < 0) {
                *ret_why = NULL;
                return -ENOMEM;
        }
        return -EBADMSG;
}

static void hex_of(const uint8_t *oid, size_t n, char out[static 2 * GIT_OID_MAX + 1]) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[oid[i] >> 4];
                out[2 * i + 1] = digits[oid[i] & 15];
        }
        out[2 * n] = 0;
}

int git_oid_from_hex(const char *hex, size_t len, uint8_t ret[static GIT_OID_MAX], GitHashAlgo *ret_algo) {
        if (len != 2 * SHA1_DIGEST_SIZE && len != 2 * SHA256_DIGEST_SIZE)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                char c = hex[i];
                unsigned d = c >= '0' && c <= '9' ? (unsigned) (c - '0') : c >= 'a' && c <= 'f' ? (unsigned) (c - 'a' + 10) : 16;

                if (d == 16)
                        return -EINVAL;
                if (i % 2 == 0)
                        ret[i / 2] = (uint8_t) (d << 4);
                else
                        ret[i / 2] |= (uint8_t) d;
        }
        *ret_algo = len == 2 * SHA256_DIGEST_SIZE ? GIT_HASH_SHA256 : GIT_HASH_SHA1;
        return 0;
}

/* ---- loose objects -------------------------------------------------------- */

/* "<type> <size>" as git's parse_loose_header() takes it: a known type, decimal digits without a leading zero. */
static int parse_header(const char *hdr, uint64_t *ret_size) {
        static const char *const types[] = { "blob ", "tree ", "commit ", "tag " };
        const char *p = NULL;
        uint64_t size = 0;

        for (size_t i = 0; i < ELEMENTSOF(types) && !p; i++)
                if (strncmp(hdr, types[i], strlen(types[i])) == 0)
                        p = hdr + strlen(types[i]);
        if (!p || *p < '0' || *p > '9' || (p[0] == '0' && p[1] != 0))
                return -EBADMSG;
        for (; *p; p++) {
                if (*p < '0' || *p > '9' || size > (GIT_OBJECT_SIZE_MAX - 9) / 10)
                        return -EBADMSG;
                size = size * 10 + (uint64_t) (*p - '0');
        }
        *ret_size = size;
        return 0;
}

typedef struct Loose {
        z_stream z;
        bool z_ready, ended;
        Hasher h;
        char hdr[32];
        size_t n_hdr;
        bool hdr_done;
        uint64_t size, seen;
} Loose;

static void loose_done(Loose *l) {
        if (l->z_ready)
                inflateEnd(&l->z);
}

static int loose_output(Loose *l, const uint8_t *p, size_t n, char **ret_why) {
        hasher_update(&l->h, p, n);
        while (n > 0 && !l->hdr_done) {
                char c = (char) *p++;

                n--;
                if (l->n_hdr == sizeof(l->hdr) - 1)
                        return why(ret_why, "its header is longer than %zu bytes", sizeof(l->hdr) - 1);
                l->hdr[l->n_hdr++] = c;
                if (c == 0) {
                        l->hdr_done = true;
                        if (parse_header(l->hdr, &l->size) < 0)
                                return why(ret_why, "its header is not \"<type> <size>\"");
                }
        }
        l->seen += n;
        if (l->hdr_done && l->seen > l->size)
                return why(ret_why, "it holds more than the %ju bytes its header says", (uintmax_t) l->size);
        return 0;
}

static int loose_feed(Loose *l, const uint8_t *in, size_t n, char **ret_why) {
        uint8_t out[16384];
        int r;

        if (l->ended)
                return n > 0 ? why(ret_why, "bytes follow its compressed stream") : 0;
        l->z.next_in = (Bytef *) in;
        l->z.avail_in = (uInt) n;
        for (;;) {
                size_t got;
                int zr;

                l->z.next_out = out;
                l->z.avail_out = sizeof(out);
                zr = inflate(&l->z, Z_NO_FLUSH);
                got = sizeof(out) - l->z.avail_out;
                r = loose_output(l, out, got, ret_why);
                if (r < 0)
                        return r;
                if (zr == Z_STREAM_END) {
                        l->ended = true;
                        return l->z.avail_in > 0 ? why(ret_why, "bytes follow its compressed stream") : 0;
                }
                if (zr == Z_MEM_ERROR)
                        return -ENOMEM;
                if (zr != Z_OK && zr != Z_BUF_ERROR)
                        return why(ret_why, "it is not a zlib stream (%s)", l->z.msg ?: "corrupt");
                if (l->z.avail_in == 0 && l->z.avail_out > 0)
                        return 0;
                if (zr == Z_BUF_ERROR && got == 0)
                        return l->z.avail_in > 0 ? why(ret_why, "its compressed stream stalls") : 0;
        }
}

static int loose_begin(Loose *l, const char *hex, uint8_t oid[static GIT_OID_MAX], char **ret_why) {
        GitHashAlgo algo;

        *l = (Loose) {};
        if (git_oid_from_hex(hex, strlen(hex), oid, &algo) < 0)
                return why(ret_why, "its name is not an object name");
        hasher_init(&l->h, algo);
        if (inflateInit(&l->z) != Z_OK)
                return -ENOMEM;
        l->z_ready = true;
        return 0;
}

static int loose_finish(Loose *l, const uint8_t oid[static GIT_OID_MAX], char **ret_why) {
        uint8_t got[GIT_OID_MAX];
        char hex[2 * GIT_OID_MAX + 1];
        size_t n = oid_len(l->h.algo);

        if (!l->ended)
                return why(ret_why, "its compressed stream is cut short");
        if (!l->hdr_done || l->seen != l->size)
                return why(ret_why, "it holds %ju bytes where its header says %ju", (uintmax_t) l->seen,
                           (uintmax_t) l->size);
        hasher_digest(&l->h, got);
        if (memcmp(got, oid, n) != 0) {
                hex_of(got, n, hex);
                return why(ret_why, "its content is object %s", hex);
        }
        return 0;
}

int git_loose_check(const void *data, size_t size, const char *hex, char **ret_why) {
        _cleanup_(loose_done) Loose l = {};
        uint8_t oid[GIT_OID_MAX];
        const uint8_t *p = data;
        int r;

        *ret_why = NULL;
        r = loose_begin(&l, hex, oid, ret_why);
        /* In pieces that fit zlib's counters. */
        while (r >= 0 && size > 0) {
                size_t k = MIN(size, (size_t) 1 << 30);

                r = loose_feed(&l, p, k, ret_why);
                p += k;
                size -= k;
        }
        return r < 0 ? r : loose_finish(&l, oid, ret_why);
}

int git_loose_check_fd(int fd, const char *hex, char **ret_why) {
        _cleanup_(loose_done) Loose l = {};
        uint8_t oid[GIT_OID_MAX], buf[65536];
        uint64_t total = 0;
        int r;

        *ret_why = NULL;
        r = loose_begin(&l, hex, oid, ret_why);
        while (r >= 0) {
                ssize_t k = pread(fd, buf, sizeof(buf), (off_t) total);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                total += (uint64_t) k;
                if (total > GIT_OBJECT_SIZE_MAX) {
                        *ret_why = strdup("it is too large to check");
                        return *ret_why ? -EFBIG : -ENOMEM;
                }
                r = loose_feed(&l, buf, (size_t) k, ret_why);
        }
        return r < 0 ? r : loose_finish(&l, oid, ret_why);
}

/* ---- packs ---------------------------------------------------------------- */

static uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p) {
        return (uint64_t) be32(p) << 32 | be32(p + 4);
}

int git_pack_check_name(const void *data, size_t size, const char *hex, char **ret_why) {
        uint8_t oid[GIT_OID_MAX], got[GIT_OID_MAX];
        GitHashAlgo algo;
        Hasher h;
        size_t n;

        *ret_why = NULL;
        if (git_oid_from_hex(hex, strlen(hex), oid, &algo) < 0)
                return why(ret_why, "its name is not a pack name");
        n = oid_len(algo);
        if (size < 12 + n || memcmp(data, "PACK", 4) != 0)
                return why(ret_why, "it is not a pack");
        hasher_init(&h, algo);
        hasher_update(&h, data, size - n);
        hasher_digest(&h, got);
        if (memcmp(got, (const uint8_t *) data + size - n, n) != 0)
                return why(ret_why, "its trailing checksum is not the hash of its content");
        if (memcmp(got, oid, n) != 0)
                return why(ret_why, "its checksum is not its name");
        return 0;
}

typedef struct Map {
        void *p;
        size_t size;
} Map;

static void map_done(Map *m) {
        if (m->p && m->p != MAP_FAILED && m->size > 0)
                (void) munmap(m->p, m->size);
}

static int map_fd(int fd, Map *ret) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        if ((uint64_t) st.st_size > SIZE_MAX / 2)
                return -EFBIG;
        ret->size = (size_t) st.st_size;
        if (ret->size == 0) {
                ret->p = NULL;
                return 0;
        }
        ret->p = mmap(NULL, ret->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (ret->p == MAP_FAILED) {
                ret->p = NULL;
                return -errno;
        }
        return 0;
}

int git_pack_check_name_fd(int fd, const char *hex, char **ret_why) {
        _cleanup_(map_done) Map m = {};
        int r = map_fd(fd, &m);

        *ret_why = NULL;
        if (r < 0)
                return r == -EBADMSG ? why(ret_why, "it is not a regular file") : r;
        return git_pack_check_name(m.p ?: "", m.size, hex, ret_why);
}

enum { OBJ_COMMIT = 1, OBJ_TREE = 2, OBJ_BLOB = 3, OBJ_TAG = 4, OBJ_OFS_DELTA = 6, OBJ_REF_DELTA = 7 };

typedef struct Entry {
        uint64_t off, end;              /* the entry's bytes in the pack */
        uint64_t data;                  /* where its compressed stream begins */
        uint64_t size;                  /* what its header says: the object's size, or the delta's */
        uint32_t pos;                   /* its place in the index */
        uint32_t base;                  /* a delta's base, an entry; UINT32_MAX for none */
        uint32_t uses;                  /* deltas still to come whose base it is */
        int type;
        uint8_t *cached;                /* its object, kept for those deltas */
        uint64_t cached_size;
        int obj_type;
} Entry;

typedef struct Pack {
        const uint8_t *pack, *idx;
        size_t pack_size, n, hl;
        const uint8_t *names;
        Entry *e;                       /* sorted by offset */
        uint32_t *by_pos;               /* the entry of each index position */
        uint64_t cached, work;
} Pack;

static void pack_done(Pack *p) {
        for (size_t i = 0; p->e && i < p->n; i++)
                free(p->e[i].cached);
        free(p->e);
        free(p->by_pos);
}

static int cmp_off(const void *a, const void *b) {
        const Entry *x = a, *y = b;
        return x->off < y->off ? -1 : x->off > y->off;
}

static const char *type_name(int t) {
        switch (t) {
        case OBJ_COMMIT: return "commit";
        case OBJ_TREE: return "tree";
        case OBJ_BLOB: return "blob";
        case OBJ_TAG: return "tag";
        default: return NULL;
        }
}

/* The entry at off, by binary search; UINT32_MAX for none. */
static uint32_t entry_at(const Pack *p, uint64_t off) {
        size_t lo = 0, hi = p->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (p->e[mid].off == off)
                        return (uint32_t) mid;
                if (p->e[mid].off < off)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return UINT32_MAX;
}

/* The entry the index files under oid; UINT32_MAX for none. */
static uint32_t entry_named(const Pack *p, const uint8_t *oid) {
        size_t lo = 0, hi = p->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = memcmp(p->names + mid * p->hl, oid, p->hl);
                if (c == 0)
                        return p->by_pos[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return UINT32_MAX;
}

/* The entry's header (gitformat-pack(5)): type, size, and a delta's base. */
static int parse_entry(Pack *p, uint32_t i, char **ret_why) {
        Entry *e = &p->e[i];
        const uint8_t *q = p->pack + e->off, *end = p->pack + e->end;
        unsigned shift = 4;
        uint8_t c;

        if (q >= end)
                return why(ret_why, "the entry at %ju is empty", (uintmax_t) e->off);
        c = *q++;
        e->type = (c >> 4) & 7;
        e->size = c & 15;
        while (c & 0x80) {
                if (q >= end || shift > 57)
                        return why(ret_why, "the entry at %ju has a bad header", (uintmax_t) e->off);
                c = *q++;
                e->size |= (uint64_t) (c & 0x7f) << shift;
                shift += 7;
        }
        e->base = UINT32_MAX;
        if (e->type == OBJ_OFS_DELTA) {
                uint64_t rel;

                if (q >= end)
                        return why(ret_why, "the entry at %ju is cut short", (uintmax_t) e->off);
                c = *q++;
                rel = c & 0x7f;
                while (c & 0x80) {
                        if (q >= end || rel > (UINT64_MAX >> 8))
                                return why(ret_why, "the entry at %ju has a bad base offset", (uintmax_t) e->off);
                        c = *q++;
                        rel = ((rel + 1) << 7) | (c & 0x7f);
                }
                if (rel == 0 || rel > e->off || (e->base = entry_at(p, e->off - rel)) == UINT32_MAX)
                        return why(ret_why, "the delta at %ju names no entry as its base", (uintmax_t) e->off);
        } else if (e->type == OBJ_REF_DELTA) {
                if ((size_t) (end - q) < p->hl)
                        return why(ret_why, "the entry at %ju is cut short", (uintmax_t) e->off);
                e->base = entry_named(p, q);
                if (e->base == UINT32_MAX)
                        return why(ret_why, "the delta at %ju has a base that is not in the pack", (uintmax_t) e->off);
                q += p->hl;
        } else if (!type_name(e->type))
                return why(ret_why, "the entry at %ju has type %d", (uintmax_t) e->off, e->type);
        if (e->base == i)
                return why(ret_why, "the delta at %ju is its own base", (uintmax_t) e->off);
        if (e->size > GIT_OBJECT_SIZE_MAX)
                return -EFBIG;
        e->data = (uint64_t) (q - p->pack);
        return 0;
}

/* What deflate's best case makes of n bytes is at most this many (zlib's own bound is 1032:1). */
#define INFLATE_RATIO_MAX 1040

/* The entry's compressed stream inflated: exactly its size, ending exactly where the entry ends. */
static int inflate_entry(Pack *p, const Entry *e, uint8_t **ret, char **ret_why) {
        _cleanup_free_ uint8_t *out = NULL;
        const uint8_t *in = p->pack + e->data;
        uint64_t in_left = e->end - e->data, out_done = 0;
        z_stream z = {};
        int zr;

        /* A size its bytes cannot inflate to is not allocated. */
        if (e->size > in_left * INFLATE_RATIO_MAX + 64)
                return why(ret_why, "the entry at %ju says %ju bytes, more than its %ju bytes inflate to",
                           (uintmax_t) e->off, (uintmax_t) e->size, (uintmax_t) in_left);
        out = malloc(e->size ?: 1);
        if (!out)
                return -ENOMEM;
        if (inflateInit(&z) != Z_OK)
                return -ENOMEM;
        do {
                uInt ki = (uInt) MIN(in_left, (uint64_t) 1 << 30), ko = (uInt) MIN(e->size - out_done, (uint64_t) 1 << 30);
                uint8_t spare;

                z.next_in = (Bytef *) in;
                z.avail_in = ki;
                /* One byte of room past the size, so that an overlong stream shows. */
                z.next_out = ko > 0 ? out + out_done : &spare;
                z.avail_out = ko > 0 ? ko : 1;
                zr = inflate(&z, Z_NO_FLUSH);
                in += ki - z.avail_in;
                in_left -= ki - z.avail_in;
                out_done += (ko > 0 ? ko : 1) - z.avail_out;
                if (out_done > e->size)
                        break;
        } while (zr == Z_OK);
        inflateEnd(&z);
        if (zr == Z_MEM_ERROR)
                return -ENOMEM;
        if (zr != Z_STREAM_END || out_done != e->size)
                return why(ret_why, "the entry at %ju does not inflate to its %ju bytes", (uintmax_t) e->off,
                           (uintmax_t) e->size);
        if (in_left != 0)
                return why(ret_why, "the entry at %ju does not end where the next begins", (uintmax_t) e->off);
        *ret = TAKE_PTR(out);
        return 0;
}

static int delta_varint(const uint8_t **q, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;
        unsigned shift = 0;
        uint8_t c;

        do {
                if (*q >= end || shift > 63)
                        return -EBADMSG;
                c = *(*q)++;
                v |= (uint64_t) (c & 0x7f) << shift;
                shift += 7;
        } while (c & 0x80);
        *ret = v;
        return 0;
}

/* A delta applied to its base (gitformat-pack(5), "Deltified representation"). */
static int apply_delta(const uint8_t *base, uint64_t base_size, const uint8_t *d, uint64_t d_size, uint8_t **ret,
                       uint64_t *ret_size) {
        const uint8_t *q = d, *end = d + d_size;
        _cleanup_free_ uint8_t *out = NULL;
        uint64_t src, dst, done = 0;

        if (delta_varint(&q, end, &src) < 0 || delta_varint(&q, end, &dst) < 0 || src != base_size)
                return -EBADMSG;
        if (dst > GIT_OBJECT_SIZE_MAX)
                return -EFBIG;
        /* What its instructions make, counted before anything is allocated: exactly dst. */
        for (const uint8_t *c = q; c < end;) {
                uint8_t cmd = *c++;
                uint64_t size = 0;

                if (cmd & 0x80) {
                        for (unsigned b = 0; b < 4; b++)
                                if (cmd & (1u << b) && c++ >= end)
                                        return -EBADMSG;
                        for (unsigned b = 0; b < 3; b++)
                                if (cmd & (0x10u << b)) {
                                        if (c >= end)
                                                return -EBADMSG;
                                        size |= (uint64_t) *c++ << (8 * b);
                                }
                        size = size ?: 0x10000;
                } else if (cmd > 0) {
                        if (cmd > (uint64_t) (end - c))
                                return -EBADMSG;
                        size = cmd;
                        c += cmd;
                } else
                        return -EBADMSG;
                if (size > dst - done)
                        return -EBADMSG;
                done += size;
        }
        if (done != dst)
                return -EBADMSG;
        done = 0;
        out = malloc(dst ?: 1);
        if (!out)
                return -ENOMEM;
        while (q < end) {
                uint8_t cmd = *q++;

                if (cmd & 0x80) {
                        uint64_t off = 0, size = 0;

                        for (unsigned b = 0; b < 4; b++)
                                if (cmd & (1u << b)) {
                                        if (q >= end)
                                                return -EBADMSG;
                                        off |= (uint64_t) *q++ << (8 * b);
                                }
                        for (unsigned b = 0; b < 3; b++)
                                if (cmd & (0x10u << b)) {
                                        if (q >= end)
                                                return -EBADMSG;
                                        size |= (uint64_t) *q++ << (8 * b);
                                }
                        if (size == 0)
                                size = 0x10000;
                        if (off > base_size || size > base_size - off || size > dst - done)
                                return -EBADMSG;
                        memcpy(out + done, base + off, size);
                        done += size;
                } else if (cmd > 0) {
                        if (cmd > (uint64_t) (end - q) || cmd > dst - done)
                                return -EBADMSG;
                        memcpy(out + done, q, cmd);
                        q += cmd;
                        done += cmd;
                } else
                        return -EBADMSG;
        }
        if (done != dst)
                return -EBADMSG;
        *ret = TAKE_PTR(out);
        *ret_size = dst;
        return 0;
}

/*
 * The object of entry i, its deltas resolved: the chain down to a cached
 * object or a whole one, then each delta up. *ret_owned: the caller frees
 * *ret (otherwise it is the entry's cache).
 */
static int resolve(Pack *p, uint32_t i, uint8_t **ret, uint64_t *ret_size, int *ret_type, bool *ret_owned,
                   char **ret_why) {
        _cleanup_free_ uint32_t *chain = NULL;
        _cleanup_free_ uint8_t *cur = NULL;
        uint64_t cur_size;
        size_t n = 0;
        uint32_t j = i;
        int type = 0, r;

        if (p->e[i].cached) {
                *ret = p->e[i].cached;
                *ret_size = p->e[i].cached_size;
                *ret_type = p->e[i].obj_type;
                *ret_owned = false;
                return 0;
        }
        chain = malloc(sizeof(uint32_t) * (GIT_PACK_DEPTH_MAX + 1));
        if (!chain)
                return -ENOMEM;
        /* Down the chain. */
        for (;;) {
                if (n > GIT_PACK_DEPTH_MAX)
                        return why(ret_why, "the delta at %ju has a chain longer than %d (or a loop)",
                                   (uintmax_t) p->e[i].off, GIT_PACK_DEPTH_MAX);
                chain[n++] = j;
                if (p->e[j].base == UINT32_MAX || (n > 1 && p->e[j].cached))
                        break;
                j = p->e[j].base;
        }
        /* The bottom: a cached object, or a whole one. */
        j = chain[--n];
        if (p->e[j].cached) {
                cur = malloc(p->e[j].cached_size ?: 1);
                if (!cur)
                        return -ENOMEM;
                memcpy(cur, p->e[j].cached, p->e[j].cached_size);
                cur_size = p->e[j].cached_size;
                type = p->e[j].obj_type;
        } else {
                r = inflate_entry(p, &p->e[j], &cur, ret_why);
                if (r < 0)
                        return r;
                cur_size = p->e[j].size;
                type = p->e[j].type;
        }
        /* What is done again for an object not kept counts against the budget; each object's own work does not. */
        if (j != i)
                p->work += cur_size;
        /* Up the deltas. */
        while (n > 0) {
                _cleanup_free_ uint8_t *delta = NULL, *next = NULL;
                uint64_t next_size;

                /* An object on the way that deltas still to come need: kept, within bounds. */
                if (p->e[j].uses > 0 && !p->e[j].cached && p->cached + cur_size <= GIT_PACK_CACHE_MAX) {
                        p->e[j].cached = malloc(cur_size ?: 1);
                        if (!p->e[j].cached)
                                return -ENOMEM;
                        memcpy(p->e[j].cached, cur, cur_size);
                        p->e[j].cached_size = cur_size;
                        p->e[j].obj_type = type;
                        p->cached += cur_size;
                }
                j = chain[--n];
                r = inflate_entry(p, &p->e[j], &delta, ret_why);
                if (r < 0)
                        return r;
                r = apply_delta(cur, cur_size, delta, p->e[j].size, &next, &next_size);
                if (r == -EBADMSG)
                        return why(ret_why, "the delta at %ju does not apply to its base", (uintmax_t) p->e[j].off);
                if (r < 0)
                        return r;
                if (j != i)
                        p->work += next_size;
                free(cur);
                cur = TAKE_PTR(next);
                cur_size = next_size;
        }
        *ret_size = cur_size;
        *ret_type = type;
        /* Kept for the deltas to come that need it, within bounds. */
        if (p->e[i].uses > 0 && p->cached + cur_size <= GIT_PACK_CACHE_MAX) {
                p->e[i].cached = cur;
                p->e[i].cached_size = cur_size;
                p->e[i].obj_type = type;
                p->cached += cur_size;
                *ret = TAKE_PTR(cur);
                *ret_owned = false;
                return 0;
        }
        *ret = TAKE_PTR(cur);
        *ret_owned = true;
        return 0;
}

int git_pack_check_idx(const void *pack, size_t pack_size, const void *idx, size_t idx_size, GitHashAlgo algo,
                       char **ret_why) {
        _cleanup_(pack_done) Pack p = { .pack = pack, .pack_size = pack_size, .idx = idx, .hl = oid_len(algo) };
        const uint8_t *x = idx, *crcs, *off32, *off64;
        uint8_t got[GIT_OID_MAX];
        size_t n_large = 0, n;
        uint64_t budget;
        Hasher h;
        int r;

        *ret_why = NULL;
        /* The index's frame: header, fan-out, names in order, then its sizes. */
        if (idx_size < 8 + 256 * 4 + 2 * p.hl || be32(x) != 0xff744f63 || be32(x + 4) != 2)
                return why(ret_why, "the index is not a version 2 pack index");
        for (size_t b = 0; b < 256; b++)
                if (b > 0 && be32(x + 8 + 4 * b) < be32(x + 8 + 4 * (b - 1)))
                        return why(ret_why, "the index's fan-out table goes down");
        n = be32(x + 8 + 4 * 255);
        if (n > (idx_size - 8 - 1024 - 2 * p.hl) / (p.hl + 8))
                return why(ret_why, "the index is shorter than its %zu objects need", n);
        p.n = n;
        p.names = x + 8 + 1024;
        crcs = p.names + n * p.hl;
        off32 = crcs + 4 * n;
        off64 = off32 + 4 * n;
        for (size_t i = 0; i < n; i++)
                if (be32(off32 + 4 * i) & 0x80000000u)
                        n_large++;
        if (idx_size != (size_t) (off64 - x) + 8 * n_large + 2 * p.hl)
                return why(ret_why, "the index's size is not what its tables need");
        hasher_init(&h, algo);
        hasher_update(&h, x, idx_size - p.hl);
        hasher_digest(&h, got);
        if (memcmp(got, x + idx_size - p.hl, p.hl) != 0)
                return why(ret_why, "the index's trailing checksum is not the hash of its content");
        for (size_t i = 0; i < n; i++) {
                const uint8_t *name = p.names + i * p.hl;
                if (i > 0 && memcmp(name - p.hl, name, p.hl) >= 0)
                        return why(ret_why, "the index's names are not in order");
                if (be32(x + 8 + 4 * name[0]) <= i || (name[0] > 0 && be32(x + 8 + 4 * (name[0] - 1)) > i))
                        return why(ret_why, "the index's fan-out table does not match its names");
        }

        /* The pack's frame: header, count, checksum, and the index names that checksum. */
        if (pack_size < 12 + p.hl || memcmp(pack, "PACK", 4) != 0 ||
            (be32(p.pack + 4) != 2 && be32(p.pack + 4) != 3))
                return why(ret_why, "the pack is not a version 2 or 3 pack");
        if (be32(p.pack + 8) != n)
                return why(ret_why, "the pack holds %u objects, its index lists %zu", be32(p.pack + 8), n);
        if (memcmp(x + idx_size - 2 * p.hl, p.pack + pack_size - p.hl, p.hl) != 0)
                return why(ret_why, "the index is another pack's");
        hasher_init(&h, algo);
        hasher_update(&h, pack, pack_size - p.hl);
        hasher_digest(&h, got);
        if (memcmp(got, p.pack + pack_size - p.hl, p.hl) != 0)
                return why(ret_why, "the pack's trailing checksum is not the hash of its content");

        /* Each object at its offset, the entries tiling the pack with no gap. */
        p.e = calloc(n ?: 1, sizeof(Entry));
        p.by_pos = calloc(n ?: 1, sizeof(uint32_t));
        if (!p.e || !p.by_pos)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                uint32_t o = be32(off32 + 4 * i);
                uint64_t off = o;

                if (o & 0x80000000u) {
                        if ((o & 0x7fffffffu) >= n_large)
                                return why(ret_why, "the index names a large offset it does not hold");
                        off = be64(off64 + 8 * (o & 0x7fffffffu));
                }
                p.e[i] = (Entry) { .off = off, .pos = (uint32_t) i };
        }
        qsort(p.e, n, sizeof(Entry), cmp_off);
        for (size_t i = 0; i < n; i++) {
                p.e[i].end = i + 1 < n ? p.e[i + 1].off : pack_size - p.hl;
                if ((i == 0 && p.e[i].off != 12) || p.e[i].end <= p.e[i].off || p.e[i].end > pack_size - p.hl)
                        return why(ret_why, "the index's offsets do not each start one entry of the pack");
                p.by_pos[p.e[i].pos] = (uint32_t) i;
        }
        if (n == 0 && pack_size != 12 + p.hl)
                return why(ret_why, "the pack holds bytes its index does not list");
        for (size_t i = 0; i < n; i++) {
                uLong crc = crc32(0L, Z_NULL, 0);
                for (uint64_t o = p.e[i].off; o < p.e[i].end;) {
                        uInt k = (uInt) MIN(p.e[i].end - o, (uint64_t) 1 << 30);
                        crc = crc32(crc, p.pack + o, k);
                        o += k;
                }
                if ((uint32_t) crc != be32(crcs + 4 * p.e[i].pos))
                        return why(ret_why, "the index's CRC of the entry at %ju is wrong", (uintmax_t) p.e[i].off);
                r = parse_entry(&p, (uint32_t) i, ret_why);
                if (r == -EFBIG)
                        return why(ret_why, "the entry at %ju is too large to check", (uintmax_t) p.e[i].off) == -ENOMEM ?
                                       -ENOMEM : -EFBIG;
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < n; i++)
                if (p.e[i].base != UINT32_MAX)
                        p.e[p.e[i].base].uses++;

        /* Each object resolved and hashed: its name in the index. */
        budget = 16 * (uint64_t) pack_size + 4 * GIT_PACK_CACHE_MAX;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ uint8_t *owned = NULL;
                uint8_t *obj = NULL;
                uint64_t size = 0;
                char hdr[64];
                int type = 0, k;
                bool is_owned = false;

                r = resolve(&p, (uint32_t) i, &obj, &size, &type, &is_owned, ret_why);
                if (r < 0)
                        return r;
                if (is_owned)
                        owned = obj;
                k = snprintf(hdr, sizeof(hdr), "%s %ju", type_name(type), (uintmax_t) size);
                hasher_init(&h, algo);
                hasher_update(&h, hdr, (size_t) k + 1);
                hasher_update(&h, obj, size);
                hasher_digest(&h, got);
                if (memcmp(got, p.names + p.e[i].pos * p.hl, p.hl) != 0) {
                        char want[2 * GIT_OID_MAX + 1], is[2 * GIT_OID_MAX + 1];

                        hex_of(p.names + p.e[i].pos * p.hl, p.hl, want);
                        hex_of(got, p.hl, is);
                        return why(ret_why, "the index files object %s at %ju, where object %s is", want,
                                   (uintmax_t) p.e[i].off, is);
                }
                /* Its base is needed by one delta less. */
                if (p.e[i].base != UINT32_MAX) {
                        Entry *b = &p.e[p.e[i].base];
                        if (--b->uses == 0 && b->cached) {
                                p.cached -= b->cached_size;
                                b->cached = mfree(b->cached);
                        }
                }
                if (p.work > budget) {
                        *ret_why = strdup("its deltas cost too much to resolve");
                        return *ret_why ? -E2BIG : -ENOMEM;
                }
        }
        return 0;
}

int git_pack_check_idx_fd(int pack_fd, int idx_fd, GitHashAlgo algo, char **ret_why) {
        _cleanup_(map_done) Map pack = {}, idx = {};
        int r;

        *ret_why = NULL;
        r = map_fd(pack_fd, &pack);
        if (r >= 0)
                r = map_fd(idx_fd, &idx);
        if (r == -EBADMSG)
                return why(ret_why, "it or its pack is not a regular file");
        if (r < 0)
                return r;
        return git_pack_check_idx(pack.p ?: "", pack.size, idx.p ?: "", idx.size, algo, ret_why);
}
