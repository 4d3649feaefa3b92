/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "tokens.h"

static const TokenContext ctx = {
        .home = "/home/u",
        .profile_name = "dev",
        .profile_dir = "/data/profiles/dev",
        .domain_hash = "0123456789ab",
        .domain_dir = "/data/domains/0123456789ab",
        .workspace_dir = "/src/proj",
};

static void expand_ok(const char *in, const char *want) {
        _cleanup_free_ char *out = NULL, *err = NULL;
        cr_assert_eq(tokens_expand(in, TOKEN_ALL, &ctx, &out, &err), 0, "%s: %s", in, err ?: "");
        cr_assert_str_eq(out, want);
}

static void expand_fails(const char *in, TokenFlags flags, const char *needle) {
        _cleanup_free_ char *out = NULL, *err = NULL;
        cr_assert_lt(tokens_expand(in, flags, &ctx, &out, &err), 0, "%s should fail", in);
        cr_assert_null(out);
        cr_assert_not_null(err);
        cr_assert_not_null(strstr(err, needle), "message \"%s\" lacks \"%s\"", err, needle);
}

Test(tokens, expands_every_token) {
        expand_ok("{profile_dir}/cache", "/data/profiles/dev/cache");
        expand_ok("{domain_dir}/x-{profile_name}-{domain_hash}", "/data/domains/0123456789ab/x-dev-0123456789ab");
        expand_ok("{workspace_dir}", "/src/proj");
        expand_ok("~", "/home/u");
        expand_ok("~/.cache", "/home/u/.cache");
        expand_ok("/plain/path", "/plain/path");
        expand_ok("/a/~/b", "/a/~/b");    /* tilde only at the very start */
}

Test(tokens, refuses_bad_tokens) {
        expand_fails("{home}/x", TOKEN_ALL, "unknown token \"{home}\"");
        expand_fails("{profile_dir/x", TOKEN_ALL, "unterminated");
        expand_fails("/x}", TOKEN_ALL, "stray \"}\"");
        expand_fails("{{profile_dir}}", TOKEN_ALL, "unterminated");
        expand_fails("{}", TOKEN_ALL, "unknown token");
        expand_fails("~root/x", TOKEN_ALL, "~user");
        expand_fails("{domain_dir}", TOKEN_TILDE, "not allowed here");
        expand_fails("~/x", TOKEN_PROFILE_DIR, "not expanded here");
}

Test(tokens, syntax_only_without_context) {
        _cleanup_free_ char *err = NULL;
        cr_assert_eq(tokens_expand("{domain_dir}/a", TOKEN_ALL, NULL, NULL, &err), 0);
        cr_assert_lt(tokens_expand("{nope}", TOKEN_ALL, NULL, NULL, &err), 0);
}
