/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "setid-mode.h"

#ifndef FUSE_SUPER_MAGIC
#  define FUSE_SUPER_MAGIC 0x65735546
#endif

mode_t setid_permitted_mode(mode_t requested, mode_t current) {
        const mode_t setid = S_ISUID | S_ISGID;

        requested &= 07777;
        return (requested & ~setid) | (requested & current & setid);
}

int anchor_id_of_fd(int fd, AnchorId *ret) {
        struct statfs sf;
        struct stat st;
        uint32_t fsid[2];

        if (fstatfs(fd, &sf) < 0)
                return -errno;
        *ret = (AnchorId) { .type = (uint64_t) (unsigned long) sf.f_type };
        if (sf.f_type == FUSE_SUPER_MAGIC) {
                if (fstat(fd, &st) < 0)
                        return -errno;
                ret->key = (uint64_t) st.st_dev;
                return 0;
        }
        memcpy(fsid, &sf.f_fsid, sizeof(fsid));
        ret->key = (uint64_t) fsid[0] << 32 | fsid[1];
        return 0;
}

void anchor_id_format(const AnchorId *id, char *buf) {
        snprintf(buf, ANCHOR_ID_STRING_MAX, "%" PRIx64 ":%" PRIx64, id->type, id->key);
}

/* 1 to 16 lower-case hex digits: the one spelling anchor_id_format() writes. */
static int parse_hex(const char *s, const char **ret_end, uint64_t *ret) {
        uint64_t v = 0;
        size_t n = 0;

        for (; (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'); s++, n++)
                v = v << 4 | (uint64_t) (*s <= '9' ? *s - '0' : *s - 'a' + 10);
        if (n == 0 || n > 16)
                return -EINVAL;
        *ret = v;
        *ret_end = s;
        return 0;
}

int anchor_id_parse(const char *s, AnchorId *ret) {
        AnchorId id;
        const char *p;

        if (parse_hex(s, &p, &id.type) < 0 || *p != ':' || parse_hex(p + 1, &p, &id.key) < 0 || *p != 0)
                return -EINVAL;
        *ret = id;
        return 0;
}

bool anchor_id_in(const AnchorId *id, const AnchorId *set, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (set[i].type == id->type && set[i].key == id->key)
                        return true;
        return false;
}
