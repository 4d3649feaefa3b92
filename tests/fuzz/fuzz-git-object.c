/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: whether a loose object, a pack or a pack index is what its
 * name says (git-object.c); the sandbox writes them into the shared object
 * store. The first input byte picks the check (its low bits) and whether
 * the checksums are made right after the mutation (0x80, so that mutations
 * reach the entries rather than stopping at a checksum):
 *   0, 1  a loose object, SHA-1 or SHA-256: the name in hex, then the file;
 *   2     a pack: its name in hex (40 digits), then the pack;
 *   3, 4  a pack index, SHA-1 or SHA-256: the pack's length (4 bytes, big
 *         endian), the pack, then the index.
 * Accepted means the check passed; it must then hold: a loose object that
 * passed inflates to its name's hash (checked again with the streaming
 * reader on a file), an index that passed names the pack's checksum.
 */
#include <errno.h>
#include <nettle/sha1.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fuzz.h"
#include "git-object.h"

bool fuzz_accepted = false;

static void rehash(uint8_t *p, size_t size, size_t hl) {
        if (size < hl)
                return;
        if (hl == SHA256_DIGEST_SIZE) {
                struct sha256_ctx c;
                sha256_init(&c);
                sha256_update(&c, size - hl, p);
                sha256_digest(&c, hl, p + size - hl);
        } else {
                struct sha1_ctx c;
                sha1_init(&c);
                sha1_update(&c, size - hl, p);
                sha1_digest(&c, hl, p + size - hl);
        }
}

static void check_result(int r, const char *why) {
        if (r < 0) {
                if ((r != -EBADMSG && r != -EFBIG && r != -E2BIG && r != -ENOMEM) || (r != -ENOMEM && !why))
                        abort();
                return;
        }
        if (r != 0 || why)
                abort();
        fuzz_accepted = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_free_ char *why = NULL, *hex = NULL;
        unsigned mode;
        bool fix;
        int r;

        if (size < 1 || size > 4 * 1024 * 1024)
                return 0;
        mode = data[0] & 0x7f;
        fix = data[0] & 0x80;
        data++, size--;
        buf = malloc(size ?: 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);

        if (mode <= 2) {
                size_t hl = mode == 1 ? 64 : 40;

                if (size < hl)
                        return 0;
                hex = strndup((const char *) buf, hl);
                if (!hex || strlen(hex) != hl)
                        return 0;
                if (mode == 2) {
                        if (fix)
                                rehash(buf + hl, size - hl, 20);
                        r = git_pack_check_name(buf + hl, size - hl, hex, &why);
                        check_result(r, why);
                        return 0;
                }
                r = git_loose_check(buf + hl, size - hl, hex, &why);
                check_result(r, why);
                if (r == 0) {
                        /* The streaming reader agrees, on a file. */
                        char path[] = "/tmp/fuzz-git-object-XXXXXX";
                        _cleanup_close_ int fd = mkstemp(path);
                        _cleanup_free_ char *why2 = NULL;

                        if (fd < 0)
                                return 0;
                        (void) unlink(path);
                        if (write(fd, buf + hl, size - hl) != (ssize_t) (size - hl))
                                return 0;
                        if (git_loose_check_fd(fd, hex, &why2) != 0)
                                abort();
                }
                return 0;
        }
        if (mode == 3 || mode == 4) {
                GitHashAlgo algo = mode == 4 ? GIT_HASH_SHA256 : GIT_HASH_SHA1;
                size_t hl = mode == 4 ? 32 : 20, pack_size, idx_size;
                uint8_t *pack, *idx;

                if (size < 4)
                        return 0;
                pack_size = (size_t) buf[0] << 24 | (size_t) buf[1] << 16 | (size_t) buf[2] << 8 | buf[3];
                if (pack_size > size - 4)
                        return 0;
                pack = buf + 4;
                idx = pack + pack_size;
                idx_size = size - 4 - pack_size;
                if (fix && pack_size >= hl && idx_size >= 2 * hl) {
                        rehash(pack, pack_size, hl);
                        memcpy(idx + idx_size - 2 * hl, pack + pack_size - hl, hl);
                        rehash(idx, idx_size, hl);
                }
                r = git_pack_check_idx(pack, pack_size, idx, idx_size, algo, &why);
                check_result(r, why);
                if (r == 0 && memcmp(idx + idx_size - 2 * hl, pack + pack_size - hl, hl) != 0)
                        abort();
        }
        return 0;
}
