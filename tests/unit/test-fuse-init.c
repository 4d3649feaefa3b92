/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuse_init_*(): the INIT flags the view adds to libfuse 3.14's reply. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/fuse.h>
#include <string.h>
#include <unistd.h>

#include "fuse-init.h"

static size_t init_request(void *buf, uint64_t unique, uint32_t opcode, uint32_t flags) {
        struct fuse_in_header h = { .opcode = opcode, .unique = unique };
        struct fuse_init_in in = { .major = 7, .minor = 45, .flags = flags };

        h.len = sizeof(h) + sizeof(in);
        memcpy(buf, &h, sizeof(h));
        memcpy((char *) buf + sizeof(h), &in, sizeof(in));
        return h.len;
}

/* The reply as libfuse 3.14 sends it: header and struct, two iovecs. */
typedef struct Reply {
        struct fuse_out_header h;
        struct fuse_init_out out;
        struct iovec iov[2];
} Reply;

static void init_reply(Reply *r, uint64_t unique, int32_t error, uint32_t flags) {
        *r = (Reply) { .h = { .len = sizeof(r->h) + sizeof(r->out), .error = error, .unique = unique },
                       .out = { .major = 7, .minor = 31, .flags = flags } };
        r->iov[0] = (struct iovec) { &r->h, sizeof(r->h) };
        r->iov[1] = (struct iovec) { &r->out, sizeof(r->out) };
}

Test(fuse_init, adds_wanted_and_offered) {
        FuseInitPatch p = { .want = FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV };
        char buf[256];
        uint32_t flags = 0;
        size_t off = 0;
        Reply r;

        fuse_init_saw_request(&p, buf, init_request(buf, 2, FUSE_INIT, FUSE_PARALLEL_DIROPS | FUSE_ASYNC_READ));
        init_reply(&r, 2, 0, FUSE_ASYNC_READ | FUSE_BIG_WRITES);
        cr_assert(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
        /* HANDLE_KILLPRIV was not offered: not added. */
        cr_assert_eq(flags, FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_PARALLEL_DIROPS);
        cr_assert_eq(off, offsetof(struct fuse_init_out, flags));
        /* Once only. */
        cr_assert_not(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
        fuse_init_saw_request(&p, buf, init_request(buf, 4, FUSE_INIT, FUSE_HANDLE_KILLPRIV));
        init_reply(&r, 4, 0, 0);
        cr_assert_not(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
}

Test(fuse_init, other_messages_untouched) {
        FuseInitPatch p = { .want = FUSE_PARALLEL_DIROPS };
        char buf[256];
        uint32_t flags;
        size_t off;
        Reply r;

        /* No INIT seen: nothing is an INIT reply. */
        init_reply(&r, 2, 0, 0);
        cr_assert_not(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
        /* Not an INIT request; a short one. */
        fuse_init_saw_request(&p, buf, init_request(buf, 2, FUSE_LOOKUP, FUSE_PARALLEL_DIROPS));
        cr_assert_not(p.seen);
        fuse_init_saw_request(&p, buf, sizeof(struct fuse_in_header) + 4);
        cr_assert_not(p.seen);
        fuse_init_saw_request(&p, buf, init_request(buf, 6, FUSE_INIT, FUSE_PARALLEL_DIROPS));
        cr_assert(p.seen);
        /* Another request's reply, one of another shape. */
        init_reply(&r, 8, 0, 0);
        cr_assert_not(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
        init_reply(&r, 6, 0, 0);
        cr_assert_not(fuse_init_reply_flags(&p, r.iov, 1, &flags, &off));
        r.iov[1].iov_len = sizeof(r.out) + 8;
        cr_assert_not(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
        /* A failed INIT: sent as it is, and the patch is spent. */
        init_reply(&r, 6, -EPROTO, 0);
        cr_assert_not(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
        init_reply(&r, 6, 0, 0);
        cr_assert_not(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
}

Test(fuse_init, short_reply_of_an_old_protocol) {
        FuseInitPatch p = { .want = FUSE_HANDLE_KILLPRIV };
        char buf[256];
        uint32_t flags = 0;
        size_t off;
        Reply r;

        fuse_init_saw_request(&p, buf, init_request(buf, 2, FUSE_INIT, FUSE_HANDLE_KILLPRIV));
        init_reply(&r, 2, 0, FUSE_ASYNC_READ);
        r.iov[1].iov_len = FUSE_COMPAT_22_INIT_OUT_SIZE;
        cr_assert(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
        cr_assert_eq(flags, FUSE_ASYNC_READ | FUSE_HANDLE_KILLPRIV);
        r.iov[1].iov_len = 8;   /* no room for the flags */
        p.unique = 2;
        cr_assert_not(fuse_init_reply_flags(&p, r.iov, 2, &flags, &off));
}

/* The notifier's messages, read back from a pipe: header, struct, name and its NUL. */
Test(fuse_notify, inval_entry_and_inode) {
        struct {
                struct fuse_out_header h;
                struct fuse_notify_inval_entry_out e;
                char name[8];
        } m;
        struct {
                struct fuse_out_header h;
                struct fuse_notify_inval_inode_out i;
        } n;
        int p[2];

        cr_assert_eq(pipe(p), 0);
        cr_assert_eq(fuse_notify_inval_entry_write(p[1], 42, "a.js", 4), 0);
        cr_assert_eq(read(p[0], &m, sizeof(m)), (ssize_t) (sizeof(m.h) + sizeof(m.e) + 5));
        cr_assert_eq(m.h.len, sizeof(m.h) + sizeof(m.e) + 5);
        cr_assert_eq(m.h.error, FUSE_NOTIFY_INVAL_ENTRY);
        cr_assert_eq(m.h.unique, 0);
        cr_assert_eq(m.e.parent, 42);
        cr_assert_eq(m.e.namelen, 4);
        cr_assert_eq(memcmp(m.name, "a.js", 5), 0);

        cr_assert_eq(fuse_notify_inval_inode_write(p[1], 7), 0);
        cr_assert_eq(read(p[0], &n, sizeof(n)), (ssize_t) sizeof(n));
        cr_assert_eq(n.h.len, sizeof(n));
        cr_assert_eq(n.h.error, FUSE_NOTIFY_INVAL_INODE);
        cr_assert_eq(n.i.ino, 7);
        cr_assert_eq(n.i.off, 0);
        cr_assert_eq(n.i.len, 0);

        /* What the kernel would refuse is not written. */
        cr_assert_eq(fuse_notify_inval_entry_write(p[1], 42, "", 0), -EINVAL);
        cr_assert_eq(fuse_notify_inval_entry_write(p[1], 42, "a\0b", 3), -EINVAL);
        close(p[1]);
        cr_assert_eq(read(p[0], &n, sizeof(n)), 0);
        close(p[0]);

        /* Not a FUSE device: no clone. */
        cr_assert_lt(fuse_dev_clone(p[0]), 0);
}
