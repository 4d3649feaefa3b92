/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * The INIT flags libfuse 3.14 does not pass on. It reads
 * FUSE_PARALLEL_DIROPS and FUSE_HANDLE_KILLPRIV from the kernel's INIT
 * request into conn->capable, and a file system may put them in conn->want,
 * but its INIT reply never carries them (libfuse 3.17 does). Without them
 * the kernel serialises lookups in a directory and sends a GETATTR before
 * every chown of a regular file to work out which set-ID bits to drop. The
 * view's own I/O callbacks (fuse_session_custom_io) see the INIT request go
 * by and add to the reply those of `want` that the kernel offered.
 *
 * Only the reply to the one INIT request of the connection is changed, and
 * only a successful one; every other message passes untouched.
 */
/* What the view wants added: FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV of
 * linux/fuse.h (spelled out here so that the view need not include the
 * kernel header beside libfuse's; fuse-init.c checks the values). */
#define FUSE_INIT_WANT ((UINT32_C(1) << 18) | (UINT32_C(1) << 19))

typedef struct FuseInitPatch {
        uint32_t want;          /* FUSE_* INIT flags (linux/fuse.h) to add where offered */
        uint32_t offered;       /* the kernel's INIT request flags */
        uint64_t unique;        /* the INIT request's, 0 once its reply went out */
        bool seen;              /* an INIT request was seen */
} FuseInitPatch;

/* A message read from /dev/fuse (len bytes at buf). */
void fuse_init_saw_request(FuseInitPatch *p, const void *buf, size_t len);

/*
 * A reply about to be written. When it is the INIT reply, *ret_flags is what
 * its flags become, *ret_offset the byte offset of the flags field within
 * iov[1], and true is returned; otherwise false.
 */
bool fuse_init_reply_flags(FuseInitPatch *p, const struct iovec *iov, int count, uint32_t *ret_flags,
                           size_t *ret_offset);

/*
 * The view's notifier (spec 4.6): the two notifications it writes to its
 * clone of the connection, as libfuse would write them (a header, the
 * struct, for an entry its name and a NUL). 0 or -errno: -ENOENT when
 * the kernel holds nothing of it, -ENODEV once unmounted.
 */
int fuse_notify_inval_entry_write(int fd, uint64_t parent, const char *name, size_t len);
int fuse_notify_inval_inode_write(int fd, uint64_t ino);

/* A new file of the connection that fd (/dev/fuse, mounted) belongs to: FUSE_DEV_IOC_CLONE. The fd, or -errno. */
int fuse_dev_clone(int fd);
