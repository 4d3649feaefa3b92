/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdlib.h>

/*
 * Test substitutions. They exist only in a build configured with
 * -Dtest_hooks=true (ENABLE_TEST_HOOKS, from config.h); in any other build
 * the code that reads them is not compiled, so neither the variable names
 * nor a getenv() of them are in the binaries, and setting them changes
 * nothing. The integration harness builds with them for the tests that
 * need them.
 *
 * TEST_HOOK_PATH(ENV, DEFAULT): the program named by $ENV instead of
 * DEFAULT (LAZARET_SUPERVISOR, LAZARET_INIT), in a test build only.
 */
#if ENABLE_TEST_HOOKS
#define TEST_HOOK_PATH(env, def) (getenv(env) ?: (def))
#else
#define TEST_HOOK_PATH(env, def) (def)
#endif
