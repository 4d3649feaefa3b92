/* SPDX-License-Identifier: LGPL-2.1-or-later */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuse-pool.h"

static void *pool_worker(void *arg) {
        struct fuse_session *se = arg;
        struct fuse_buf buf = {};
        intptr_t r = 0;

        while (!fuse_session_exited(se)) {
                int k = fuse_session_receive_buf(se, &buf);

                if (k == -EINTR || k == -EAGAIN)
                        continue;
                if (k <= 0) {
                        /* Unmounted (-ENODEV, or 0): every worker ends. */
                        r = k < 0 && k != -ENODEV ? 1 : 0;
                        fuse_session_exit(se);
                        break;
                }
                fuse_session_process_buf(se, &buf);
        }
        free(buf.mem);
        return (void *) r;
}

int fuse_pool_run(struct fuse_session *se, unsigned n) {
        pthread_t t[64];
        unsigned made = 0;
        int r;

        if (n > 64)
                n = 64;
        for (; made + 1 < n; made++)
                if (pthread_create(&t[made], NULL, pool_worker, se) != 0)
                        break;
        r = (int) (intptr_t) pool_worker(se);
        for (unsigned i = 0; i < made; i++) {
                void *k;
                if (pthread_join(t[i], &k) == 0 && k)
                        r = 1;
        }
        return r;
}

void fuse_pool_reply_read(fuse_req_t req, int fd, size_t size, off_t off) {
        struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);

        buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
        buf.buf[0].fd = fd;
        buf.buf[0].pos = off;
        fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

ssize_t fuse_pool_write(struct fuse_bufvec *in, int fd, off_t off) {
        struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));

        out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
        out.buf[0].fd = fd;
        out.buf[0].pos = off;
        return fuse_buf_copy(&out, in, 0);
}

void fuse_pool_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        (void) ino, (void) fi;
        fuse_reply_err(req, ENOSYS);
}

void fuse_pool_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        (void) ino;
        if (fi->fh)
                (void) close((int) fi->fh);
        fuse_reply_err(req, 0);
}
