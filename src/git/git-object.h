/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Whether what is filed under an object's name in a repository's object
 * store is that object (issue 32): the host's git does not hash what it
 * reads, so a loose object whose bytes are another object, or a pack index
 * (.idx) that files another object's bytes under a name, makes a host
 * checkout write another tree than the commit names. The workspace view
 * asks these before it lets the sandbox put such a file in place
 * (src/view/object-guard.c). The input is the sandbox's: every length is
 * checked before it is used, sizes and work are bounded, and anything not
 * read completely is refused. Each check returns 0 when the file is what
 * its name says, or a negative errno and *ret_why (what is wrong, for a log
 * line): -EBADMSG for a file that is not, -EFBIG or -E2BIG for one too
 * large or too costly to check (refused too), -ENOMEM, or the errno of a
 * read. The object format follows from the name: 40 hex digits are SHA-1,
 * 64 are SHA-256 (gitformat-loose(5), gitformat-pack(5)).
 */

#include <stddef.h>
#include <stdint.h>

#include "git-index.h"

/* The longest object name, in bytes. */
#define GIT_OID_MAX 32
/* An object (a loose one inflated, or one of a pack after its deltas) larger than this is not checked: refused. */
#define GIT_OBJECT_SIZE_MAX (4ULL * 1024 * 1024 * 1024)
/* A pack's deltas are resolved through chains at most this long (git's --depth is at most 4095). */
#define GIT_PACK_DEPTH_MAX 5000
/* Resolved objects kept for the deltas still to come, at most this many bytes. */
#define GIT_PACK_CACHE_MAX (256ULL * 1024 * 1024)

/* The object name in hex (lower case, 40 or 64 digits) as bytes, and its format. -EINVAL for anything else. */
int git_oid_from_hex(const char *hex, size_t len, uint8_t ret[static GIT_OID_MAX], GitHashAlgo *ret_algo);

/* A loose object: the file's bytes inflate to "<type> <size>\0<content>", exactly, whose hash is hex. */
int git_loose_check_fd(int fd, const char *hex, char **ret_why);
int git_loose_check(const void *data, size_t size, const char *hex, char **ret_why);

/* A pack's name: its trailing checksum is the hash of the bytes before it, and is hex (pack-<hex>.pack). */
int git_pack_check_name_fd(int fd, const char *hex, char **ret_why);
int git_pack_check_name(const void *data, size_t size, const char *hex, char **ret_why);

/*
 * A pack index (version 2) of the pack it names: it lists each of the
 * pack's objects once, at the offset where the object starts, under the
 * object's name (every object inflated, its deltas resolved, and hashed),
 * with the CRC32 of its bytes; and it names the pack's checksum. algo is
 * the format of the pack's name.
 */
int git_pack_check_idx_fd(int pack_fd, int idx_fd, GitHashAlgo algo, char **ret_why);
int git_pack_check_idx(const void *pack, size_t pack_size, const void *idx, size_t idx_size, GitHashAlgo algo,
                       char **ret_why);
