/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

#include "domain.h"
#include "cleanup.h"

/*
 * The prepared lower of a Domain's image: the OCI image unpacked once, with
 * `umoci unpack --rootless`, into a Lazaret-owned directory named after the
 * manifest digest, published by rename and never written again.
 */
typedef struct PreparedImage {
        char *rootfs;
        char **env;     /* the image's environment (never NULL after success) */
        char **cmd;     /* its default command, or NULL */
} PreparedImage;

void prepared_image_done(PreparedImage *img);

typedef struct ImagePrep ImagePrep;
/* r < 0: failed, why says so in one line. */
typedef void (*ImagePrepDone)(ImagePrep *ip, int r, const char *why, void *userdata);

/*
 * Returns 1 with *ret_image filled when the image is prepared already; 0 when
 * an unpack runs (done() follows from the loop, then image_prep_take()); < 0
 * with *ret_why on failure.
 */
int image_prepare(sd_event *e, const Domain *d, ImagePrepDone done, void *userdata, ImagePrep **ret_prep,
                  PreparedImage *ret_image, char **ret_why);
/* After done(ip, 0, ...): the prepared image. */
int image_prep_take(ImagePrep *ip, PreparedImage *ret_image, char **ret_why);
/* Stops an unpack that still runs and removes its staging directory. */
ImagePrep *image_prep_free(ImagePrep *ip);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImagePrep *, image_prep_free);
