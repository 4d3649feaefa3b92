/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "hash.h"

/*
 * The launch request: before activating a Domain, lazaretctl records which
 * configuration file it validated (and its fingerprint) in
 * $XDG_RUNTIME_DIR/lazaret/ID.launch, mode 0600, written atomically. The
 * coordinator, started by the user manager with its own environment, reads
 * it to load the same file, and refuses to start when the file no longer has
 * that fingerprint. The runtime directory is private to the user (SR-10).
 *
 * A maintenance request ("mode": "maintenance") asks for a coordinator
 * that starts no sandbox: it takes the Domain lock, opens the Domain Store
 * and answers lazaretctl's calls about it on the bus, then exits when idle
 * (lazaretctl(1), "escalations history" and "state gc" of a stopped Domain).
 */

typedef struct LaunchRequest {
        char *config_path;      /* NULL: the built-in configuration */
        char fingerprint[SHA256_HEX_LEN + 1];
        bool maintenance;       /* no sandbox: the store's owner only, until idle */
} LaunchRequest;

void launch_request_done(LaunchRequest *r);
/* Writes the request atomically; *ret_ino (optional) identifies the file written. */
int launch_request_write(const char *runtime_dir, const char *id, const LaunchRequest *req, ino_t *ret_ino,
                         char **ret_error);
/* Removes the request if it is still the file written as ino: 1 removed, 0 replaced by another launch since. */
int launch_request_remove(const char *runtime_dir, const char *id, ino_t ino);
/* Parses and checks a launch request's bytes; where names it in messages. */
int launch_request_parse(const char *buf, size_t n, const char *where, LaunchRequest *ret, char **ret_error);
int launch_request_read(const char *runtime_dir, const char *id, LaunchRequest *ret, char **ret_error);
