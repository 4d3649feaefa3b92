/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Set by each target for the input it last saw: whether the parser accepted
 * it. The replay driver checks it for corpus files whose names say what must
 * happen: "accept-*" must parse, "reject-*" must be refused. libFuzzer ignores it.
 */
extern bool fuzz_accepted;
