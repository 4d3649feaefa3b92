/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/*
 * What runsc prints that Lazaret reads, read by the one JSON reader
 * (json_parse_strict()), never searched for with string functions.
 */

/*
 * `runsc wait` prints {"id": "...", "exitStatus": N}: N as a shell reports it,
 * the exit code or 128 + the signal. Writes N (0..255) to *ret_status, or
 * returns a negative errno and says why in *ret_error.
 */
int runsc_wait_status(const char *text, size_t len, int *ret_status, char **ret_error);
