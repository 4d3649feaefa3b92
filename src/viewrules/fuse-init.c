/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

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

static int notify_write(int fd, int32_t code, const void *body, size_t blen, const char *name, size_t nlen) {
        struct fuse_out_header h = { .error = code, .unique = 0 };
        struct iovec iov[3] = { { &h, sizeof(h) }, { (void *) body, blen }, { (void *) name, nlen + 1 } };

        h.len = (uint32_t) (sizeof(h) + blen + (name ? nlen + 1 : 0));
        return writev(fd, iov, name ? 3 : 2) < 0 ? -errno : 0;
}

int fuse_notify_inval_entry_write(int fd, uint64_t parent, const char *name, size_t len) {
        struct fuse_notify_inval_entry_out e = { .parent = parent, .namelen = (uint32_t) len };

        /* The kernel refuses a name longer than its FUSE_NAME_MAX, 1024. */
        if (len == 0 || len > 1024 || memchr(name, 0, len))
                return -EINVAL;
        return notify_write(fd, FUSE_NOTIFY_INVAL_ENTRY, &e, sizeof(e), name, len);
}

int fuse_notify_inval_inode_write(int fd, uint64_t ino) {
        struct fuse_notify_inval_inode_out i = { .ino = ino, .off = 0, .len = 0 };      /* all of it */

        return notify_write(fd, FUSE_NOTIFY_INVAL_INODE, &i, sizeof(i), NULL, 0);
}

int fuse_dev_clone(int fd) {
        uint32_t from = (uint32_t) fd;
        int c = open("/dev/fuse", O_RDWR | O_CLOEXEC);

        if (c < 0)
                return -errno;
        if (ioctl(c, FUSE_DEV_IOC_CLONE, &from) < 0) {
                int r = -errno;
                close(c);
                return r;
        }
        return c;
}
