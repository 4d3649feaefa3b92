/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "config.h"

/*
 * lazaretctl image: local images, never pulled from a registry.
 *
 *   image build-default [--source SOURCE] [--force]
 *
 * builds the built-in default image (builtin:default) at
 * <data_root>/images/default, an OCI image layout with the tag "latest",
 * from Debian packages, as an ordinary user: mmdebstrap --mode=unshare
 * writes a root file system tarball, umoci turns it into a one-layer image.
 * SOURCE is a local flat repository directory (.deb files and a Packages
 * index, for offline use) or the http(s) URL of a Debian mirror; without it
 * the packages come from the Debian mirror of the host's apt sources (its
 * release, -updates and -security suites), which a local repository's
 * image also lists as its apt sources. apt's proxy settings apply to the
 * build either way.
 */

/*
 * The packages installed on top of Debian's minbase variant (Essential:yes
 * plus Priority:required). apt is part of minbase, but named here because a
 * local repository indexed by plain dpkg-scanpackages carries the priority
 * of apt's control file ("important"), not the archive's ("required"). One
 * line, read verbatim by tests/harness/make-offline-repo: keep it a single
 * string literal of comma-separated package names.
 */
#define IMAGE_DEFAULT_PACKAGES "apt,ca-certificates,git,less,procps,bash,coreutils,findutils,grep,sed,tar,gzip,xz-utils,curl,nano"

#define IMAGE_DEFAULT_TAG "latest"

/* --source and --force: lazaretctl's one option parser sets them. */
void image_set_source(const char *source);
void image_set_force(bool force);

/*
 * argv[0] is "image", argv[1] the subcommand; nothing may follow (options
 * are parsed before the verb is called). Prints its own messages; returns
 * < 0 on failure. Tools are found with find_program().
 */
int verb_image(int argc, char *argv[], const Config *config);
