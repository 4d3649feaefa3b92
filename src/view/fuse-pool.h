/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <fuse_lowlevel.h>
#include <sys/types.h>

/*
 * What lazaret-view and the benchmark's reference passthrough
 * (bench/fuse-ref.c) do alike with their connection, so that the two are
 * measured on the same footing.
 */

/*
 * Serves se with n threads (the caller's among them) that each read the
 * one connection: libfuse 3.14's own multi-threaded loop started and ended
 * a thread, with its splice pipe, for nearly every request. Returns 0 once
 * the file system is unmounted, 1 when reading the connection failed.
 */
int fuse_pool_run(struct fuse_session *se, unsigned n);

/* Answers a READ of size bytes at off with the contents of fd (spliced where libfuse can). */
void fuse_pool_reply_read(fuse_req_t req, int fd, size_t size, off_t off);

/* Writes a WRITE's data to fd at off: the bytes written, or a negative errno. */
ssize_t fuse_pool_write(struct fuse_bufvec *in, int fd, off_t off);

/* FLUSH: ENOSYS, so the kernel sends no more of them. The backing files are
 * local: close(2) has nothing to report that write(2) did not. */
void fuse_pool_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* RELEASE: closes the handle's fd, if the open made one. */
void fuse_pool_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
