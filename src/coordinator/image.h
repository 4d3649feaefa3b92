/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

#include "domain.h"
#include "cleanup.h"
#include "subid.h"

/*
 * The prepared lower of a Domain's image (SR-15): the OCI image unpacked
 * once by `umoci unpack` as root of a user namespace mapped like the
 * sandbox's (so the image's owners survive), into a staging directory
 * beside the tree, then published by rename as
 * <data_root>/images/prepared/<prepared-artifact ID> (oci-image.h: the
 * manifest digest, the preparer version and the mapping), holding
 * prepared.json (what made it), config.json and rootfs/. A failed or
 * interrupted preparation is set aside as .quarantine-<name>, never
 * published. Nothing writes the tree afterwards.
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
int image_prepare(sd_event *e, const Domain *d, const SubidRange *uids, const SubidRange *gids, ImagePrepDone done,
                  void *userdata, ImagePrep **ret_prep, PreparedImage *ret_image, char **ret_why);
/* After done(ip, 0, ...): the prepared image. */
int image_prep_take(ImagePrep *ip, PreparedImage *ret_image, char **ret_why);
/* Stops an unpack that still runs and removes its staging directory. */
ImagePrep *image_prep_free(ImagePrep *ip);

/* What is being prepared, for a person: "DIR:TAG". */
const char *image_prep_name(const ImagePrep *ip);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImagePrep *, image_prep_free);
