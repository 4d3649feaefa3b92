/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>
#include <stdlib.h>

/*
 * For tests that keep a fixed buffer for a function's one-line message:
 * WITH_LINE(buf, f(..., &line_)) calls f with a fresh char *line_, copies
 * what it set into buf ("" when nothing) and yields f's result.
 */
#define WITH_LINE(buf, call)                                            \
        ({                                                              \
                char *line_ = NULL;                                     \
                int r_ = (call);                                        \
                snprintf((buf), sizeof(buf), "%s", line_ ? line_ : ""); \
                free(line_);                                            \
                r_;                                                     \
        })
