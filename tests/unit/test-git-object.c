/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * git-object.c (whether a loose object, a pack or a pack index is what its
 * name says) against objects and packs git made, in SHA-1 and SHA-256
 * repositories, with offset and ref deltas; and against forgeries: another
 * object's file under a name, bytes after the stream, a pack with a byte
 * changed, an index whose offsets are swapped (its checksum made right
 * again, as an attacker would).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-object.h"
#include "macro.h"
#include "util.h"

static char *base;

static void setup(void) {
        base = strdup("/tmp/lazaret-test-git-object-XXXXXX");
        cr_assert_not_null(base);
        cr_assert_not_null(mkdtemp(base));
}

static void teardown(void) {
        rm_rf(base);
        free(base);
}

_printf_(1, 2) static void run(const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL, *full = NULL;
        va_list ap;

        va_start(ap, fmt);
        cr_assert_geq(vasprintf(&cmd, fmt, ap), 0);
        va_end(ap);
        cr_assert_geq(asprintf(&full, "cd %s && export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null "
                                      "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t "
                                      "GIT_COMMITTER_EMAIL=t@t && (%s) >/dev/null 2>&1", base, cmd), 0);
        cr_assert_eq(system(full), 0, "%s", cmd);
}

/* The first line a command prints, in base. */
_printf_(1, 2) static char *out(const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL, *full = NULL;
        char line[256] = "";
        va_list ap;
        FILE *f;

        va_start(ap, fmt);
        cr_assert_geq(vasprintf(&cmd, fmt, ap), 0);
        va_end(ap);
        cr_assert_geq(asprintf(&full, "cd %s && (%s) 2>/dev/null", base, cmd), 0);
        f = popen(full, "r");
        cr_assert_not_null(f);
        if (!fgets(line, sizeof(line), f))
                line[0] = 0;
        pclose(f);
        line[strcspn(line, "\n")] = 0;
        return strdup(line);
}

static void *slurp(const char *path, size_t *ret_size) {
        _cleanup_free_ char *full = NULL, *data = NULL;
        size_t size;

        cr_assert_geq(asprintf(&full, "%s/%s", base, path), 0);
        cr_assert_geq(read_full_file(full, 1u << 30, &data, &size), 0, "%s", full);
        *ret_size = size;
        return TAKE_PTR(data);
}

/* A history with files that delta against each other. */
static void make_repo(const char *format) {
        run("git init -q --object-format=%s r", format);
        for (int i = 0; i < 12; i++)
                run("cd r && seq 1 %d > a && seq %d 400 > b && echo %d > c && git add . && git commit -qm c%d", 300 + i,
                    i, i, i);
}

static void check_loose(const char *hex, bool want_ok) {
        _cleanup_free_ char *path = NULL, *why = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        cr_assert_geq(asprintf(&path, "%s/r/.git/objects/%.2s/%s", base, hex, hex + 2), 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0, "%s", path);
        r = git_loose_check_fd(fd, hex, &why);
        if (want_ok)
                cr_assert_eq(r, 0, "%s: %s", hex, why ?: strerror(-r));
        else
                cr_assert_eq(r, -EBADMSG, "%s: %d", hex, r);
}

static void loose_objects(const char *format) {
        _cleanup_free_ char *commit = NULL, *tree = NULL, *forged = NULL, *why = NULL, *data = NULL;
        _cleanup_free_ char *garbage = NULL;
        size_t size;

        make_repo(format);
        commit = out("cd r && git rev-parse HEAD");
        tree = out("cd r && git rev-parse HEAD^{tree}");
        check_loose(commit, true);
        check_loose(tree, true);
        /* A blob that compresses to more than one read of the file. */
        _cleanup_free_ char *big = NULL;
        run("cd r && head -c 300000 /dev/urandom > big && git hash-object -w big");
        big = out("cd r && git hash-object big");
        check_loose(big, true);
        /* The tree's file under the commit's name. */
        run("cd r/.git/objects && cp %.2s/%s %.2s/%s", tree, tree + 2, commit, commit + 2);
        check_loose(commit, false);
        /* Bytes after the stream. */
        cr_assert_geq(asprintf(&forged, "r/.git/objects/%.2s/%s", tree, tree + 2), 0);
        data = slurp(forged, &size);
        cr_assert_eq(git_loose_check(data, size, tree, &why), 0, "%s", why);
        garbage = malloc(size + 1);
        memcpy(garbage, data, size);
        garbage[size] = 'x';
        cr_assert_eq(git_loose_check(garbage, size + 1, tree, &why), -EBADMSG);
        cr_assert_not_null(why);
        why = mfree(why);
        /* Cut short. */
        cr_assert_eq(git_loose_check(data, size - 3, tree, &why), -EBADMSG);
        why = mfree(why);
        /* Not a name. */
        cr_assert_eq(git_loose_check(data, size, "xyz", &why), -EBADMSG);
}

Test(git_object, loose_sha1, .init = setup, .fini = teardown) {
        loose_objects("sha1");
}

Test(git_object, loose_sha256, .init = setup, .fini = teardown) {
        loose_objects("sha256");
}

static void rehash(uint8_t *data, size_t size, size_t hl) {
        if (hl == SHA256_DIGEST_SIZE) {
                struct sha256_ctx c;
                sha256_init(&c);
                sha256_update(&c, size - hl, data);
                sha256_digest(&c, hl, data + size - hl);
        } else {
                struct sha1_ctx c;
                sha1_init(&c);
                sha1_update(&c, size - hl, data);
                sha1_digest(&c, hl, data + size - hl);
        }
}

static void packs(const char *format, const char *repack) {
        _cleanup_free_ char *pack_hex = NULL, *pack_path = NULL, *idx_path = NULL, *why = NULL;
        _cleanup_free_ uint8_t *pack = NULL, *idx = NULL;
        GitHashAlgo algo = streq(format, "sha256") ? GIT_HASH_SHA256 : GIT_HASH_SHA1;
        size_t hl = algo == GIT_HASH_SHA256 ? 32 : 20, pack_size, idx_size, n;
        uint8_t save[4];
        int r;

        make_repo(format);
        run("cd r && %s", repack);
        pack_hex = out("cd r/.git/objects/pack && ls pack-*.pack | sed 's/^pack-//; s/\\.pack$//'");
        cr_assert_geq(asprintf(&pack_path, "r/.git/objects/pack/pack-%s.pack", pack_hex), 0);
        cr_assert_geq(asprintf(&idx_path, "r/.git/objects/pack/pack-%s.idx", pack_hex), 0);
        pack = slurp(pack_path, &pack_size);
        idx = slurp(idx_path, &idx_size);

        cr_assert_eq(git_pack_check_name(pack, pack_size, pack_hex, &why), 0, "%s", why);
        r = git_pack_check_idx(pack, pack_size, idx, idx_size, algo, &why);
        cr_assert_eq(r, 0, "%s", why ?: strerror(-r));

        /* A byte of the pack changed: its name no longer fits, nor does its index. */
        pack[pack_size / 2] ^= 1;
        cr_assert_eq(git_pack_check_name(pack, pack_size, pack_hex, &why), -EBADMSG);
        why = mfree(why);
        rehash(pack, pack_size, hl);
        cr_assert_eq(git_pack_check_name(pack, pack_size, pack_hex, &why), -EBADMSG);
        why = mfree(why);
        cr_assert_eq(git_pack_check_idx(pack, pack_size, idx, idx_size, algo, &why), -EBADMSG);
        why = mfree(why);
        free(pack);
        pack = slurp(pack_path, &pack_size);

        /* Two objects' offsets and CRCs swapped, the index's checksum made right again. */
        n = (size_t) idx[8 + 1020] << 24 | (size_t) idx[8 + 1021] << 16 | (size_t) idx[8 + 1022] << 8 | idx[8 + 1023];
        cr_assert_geq(n, 2);
        for (int twice = 0; twice < 2; twice++)
                for (size_t t = 8 + 1024 + n * hl; t <= 8 + 1024 + n * (hl + 4); t += n * 4) {
                        memcpy(save, idx + t, 4);
                        memcpy(idx + t, idx + t + 4, 4);
                        memcpy(idx + t + 4, save, 4);
                        rehash(idx, idx_size, hl);
                        if (twice == 0 && t == 8 + 1024 + n * (hl + 4)) {
                                r = git_pack_check_idx(pack, pack_size, idx, idx_size, algo, &why);
                                cr_assert_eq(r, -EBADMSG, "%d", r);
                                cr_assert_not_null(strstr(why, "files object"), "%s", why);
                                why = mfree(why);
                        }
                }
        /* Swapped back, the right index again. */
        cr_assert_eq(git_pack_check_idx(pack, pack_size, idx, idx_size, algo, &why), 0, "%s", why);

        /* Another pack's index. */
        cr_assert_eq(git_pack_check_idx(pack, pack_size - 1, idx, idx_size, algo, &why), -EBADMSG);
        why = mfree(why);
        /* An index cut short. */
        cr_assert_eq(git_pack_check_idx(pack, pack_size, idx, idx_size - 1, algo, &why), -EBADMSG);
}

Test(git_object, pack_ofs_deltas_sha1, .init = setup, .fini = teardown) {
        packs("sha1", "git repack -adq -f --depth=50");
}

Test(git_object, pack_ref_deltas_sha1, .init = setup, .fini = teardown) {
        /* pack-objects without --delta-base-offset names each delta's base by its name. */
        packs("sha1", "git rev-list --objects --all | git pack-objects -q --no-reuse-delta .git/objects/pack/pack "
                      "&& git prune-packed");
}

Test(git_object, pack_sha256, .init = setup, .fini = teardown) {
        packs("sha256", "git repack -adq -f");
}

Test(git_object, oid_from_hex) {
        uint8_t oid[GIT_OID_MAX];
        GitHashAlgo a;

        cr_assert_eq(git_oid_from_hex("0123456789abcdef0123456789abcdef01234567", 40, oid, &a), 0);
        cr_assert_eq(a, GIT_HASH_SHA1);
        cr_assert_eq(oid[0], 0x01);
        cr_assert_eq(git_oid_from_hex("0123456789ABCDEF0123456789abcdef01234567", 40, oid, &a), -EINVAL);
        cr_assert_eq(git_oid_from_hex("0123", 4, oid, &a), -EINVAL);
}
