/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>

#include "fuse-init.h"

_Static_assert(FUSE_INIT_WANT == (FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV), "FUSE_INIT_WANT");

void fuse_init_saw_request(FuseInitPatch *p, const void *buf, size_t len) {
        struct fuse_in_header h;
        struct fuse_init_in in;

        if (p->seen || len < sizeof(h) + offsetof(struct fuse_init_in, flags) + sizeof(in.flags))
                return;
        memcpy(&h, buf, sizeof(h));
        if (h.opcode != FUSE_INIT || h.unique == 0)
                return;
        memcpy(&in, (const char *) buf + sizeof(h), offsetof(struct fuse_init_in, flags) + sizeof(in.flags));
        p->offered = in.flags;
        p->unique = h.unique;
        p->seen = true;
}

bool fuse_init_reply_flags(FuseInitPatch *p, const struct iovec *iov, int count, uint32_t *ret_flags,
                           size_t *ret_offset) {
        struct fuse_out_header h;
        uint32_t flags;
        const size_t off = offsetof(struct fuse_init_out, flags);

        if (p->unique == 0 || count != 2 || iov[0].iov_len != sizeof(h) ||
            iov[1].iov_len < off + sizeof(flags) || iov[1].iov_len > sizeof(struct fuse_init_out))
                return false;
        memcpy(&h, iov[0].iov_base, sizeof(h));
        if (h.unique != p->unique)
                return false;
        p->unique = 0;          /* whatever it says, the one INIT reply is this one */
        if (h.error != 0)
                return false;
        memcpy(&flags, (const char *) iov[1].iov_base + off, sizeof(flags));
        *ret_flags = flags | (p->want & p->offered);
        *ret_offset = off;
        return true;
}
