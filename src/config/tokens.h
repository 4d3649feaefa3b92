/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The expansion tokens of host paths in the configuration. Nothing else is
 * expanded: no environment variables, no globbing, no "~user".
 */
typedef enum TokenFlags {
        TOKEN_TILDE         = 1 << 0, /* a leading "~" or "~/" is $HOME */
        TOKEN_PROFILE_NAME  = 1 << 1,
        TOKEN_PROFILE_DIR   = 1 << 2,
        TOKEN_DOMAIN_HASH   = 1 << 3,
        TOKEN_DOMAIN_DIR    = 1 << 4,
        TOKEN_WORKSPACE_DIR = 1 << 5,
        TOKEN_ALL           = (1 << 6) - 1,
} TokenFlags;

typedef struct TokenContext {
        const char *home;
        const char *profile_name;
        const char *profile_dir;
        const char *domain_hash;
        const char *domain_dir;
        const char *workspace_dir;
} TokenContext;

/*
 * Expands the tokens allowed by flags. With ctx == NULL only checks the
 * syntax (used while parsing, before a Domain is known). On error returns a
 * negative errno and, if ret_error is non-NULL, a sentence saying what is
 * wrong (for example: unknown token "{home}").
 */
int tokens_expand(const char *in, TokenFlags flags, const TokenContext *ctx, char **ret, char **ret_error);
