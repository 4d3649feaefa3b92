/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Escalation and its auto-approve rules: which programs a rule may name, the
 * rule and escalation tables, and the step that resolves each rule's program.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "config-escalation.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "strv.h"

/*
 * Programs that run other programs or code of the caller's choosing. A rule
 * naming one would let the sandbox choose what runs on the host, so they are
 * refused whatever the arguments. Names ending in '*' match as prefixes.
 */
static const char *const banned_programs[] = {
        "git", "git-*",
        "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox", "toybox",
        "env", "sudo", "su", "doas", "pkexec", "runuser", "setpriv", "chroot", "nsenter", "unshare",
        "systemd-run", "flatpak-spawn", "xargs", "nohup", "setsid", "timeout", "nice", "ionice", "stdbuf",
        "time", "watch", "script", "expect", "strace", "ltrace", "gdb", "valgrind", "ssh", "find",
        "python*", "perl*", "ruby*", "node", "nodejs", "deno", "bun", "lua*", "php*", "tclsh*", "wish*",
        "awk", "gawk", "mawk", "nawk", "sed", "vim", "vi", "nvim", "emacs", "less", "more", "man",
        NULL
};

/*
 * Programs that run code from the files around them (build tools, test
 * runners, package managers running scripts): allowed in a rule, since the
 * argv alone does not say what they read, but `config check` warns, since
 * a sandbox that writes the workspace chooses what they run on the host.
 */
static const char *const workspace_runners[] = {
        "make", "gmake", "bmake", "cmake", "ninja", "meson", "scons", "bazel*", "buck*", "please",
        "cargo", "go", "npm", "npx", "yarn", "pnpm", "pip*", "pipx", "poetry", "uv", "tox", "nox", "pytest*",
        "mvn", "gradle*", "ant", "sbt", "lein", "mix", "rebar3", "dotnet", "composer", "bundle", "rake",
        "jest", "vitest", "mocha", "tsc", "docker", "podman", "nix*", "just", "task",
        NULL
};

static const char *name_match(const char *const *names, const char *path) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;

        for (size_t i = 0; names[i]; i++) {
                size_t l = strlen(names[i]);
                if (names[i][l - 1] == '*') {
                        if (strncmp(base, names[i], l - 1) == 0)
                                return names[i];
                } else if (streq(base, names[i]))
                        return names[i];
        }
        return NULL;
}

int config_escalation_risky_rules(const Config *c, char ***ret) {
        char **l = NULL;

        for (size_t i = 0; i < c->n_auto_approve; i++) {
                const AutoApproveRule *rule = &c->auto_approve[i];
                const char *hit = name_match(workspace_runners, rule->argv[0]);
                char *line;

                if (!hit && rule->program)
                        hit = name_match(workspace_runners, rule->program);
                if (!hit)
                        continue;
                if (asprintf(&line, "escalation.auto_approve[%zu]: \"%s\" (matches \"%s\") runs code from files the "
                                    "sandbox can write: such a rule lets the sandbox choose what runs on the host",
                             i, rule->argv[0], hit) < 0 || strv_push(&l, line) < 0) {
                        strv_free(l);
                        return -ENOMEM;
                }
        }
        *ret = l;
        return 0;
}

static const char *banned_match(const char *path) {
        return name_match(banned_programs, path);
}

static int refuse_banned(ConfigParser *p, const char *path, const char *program, const char *hit) {
        return config_error(p, path, -EPERM, "\"%s\" can run arbitrary commands (matches \"%s\") and cannot be auto-approved",
                            program, hit);
}

static const ConfigStrvSpec argv_spec = { .max = CONFIG_MAX_ARGV };

/* char ***: a rule's argv, its program named by an absolute path and not one of banned_programs by that name. */
static int parse_rule_argv(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        _cleanup_free_ char *a0 = keypath_index(path, 0), *norm = NULL;
        char ***argv = field;
        const char *hit;
        int r;

        if (!a0)
                return config_oom(p);
        r = config_parse_strv(p, v, path, argv, &argv_spec);
        if (r < 0)
                return r;
        if (!path_is_absolute((*argv)[0]) || path_has_dotdot((*argv)[0]))
                return config_error(p, a0, -EINVAL, "\"%s\" must be an absolute program path without \"..\"", (*argv)[0]);
        r = path_normalize((*argv)[0], &norm);
        if (r < 0)
                return config_error(p, a0, r, "\"%s\" is not a valid path", (*argv)[0]);
        hit = banned_match(norm);
        if (hit)
                return refuse_banned(p, a0, (*argv)[0], hit);
        return 0;
}

static const ConfigKey rule_keys[] = {
        { "argv",          parse_rule_argv,   offsetof(AutoApproveRule, argv),          NULL, CONFIG_KEY_REQUIRED },
        { "trailing_args", config_parse_bool, offsetof(AutoApproveRule, trailing_args) },
        {}
};

static int rule_item(ConfigParser *p, json_object *v, const char *path, void *items, size_t i, void *userdata) {
        return config_dispatch(p, v, path, rule_keys, (AutoApproveRule *) items + i);
}

static int parse_auto_approve(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        Config *c = field;

        return config_parse_array(p, v, path, "an array of rule objects", CONFIG_MAX_LIST, sizeof(AutoApproveRule),
                                  (void **) &c->auto_approve, &c->n_auto_approve, rule_item, NULL);
}

static int parse_timeout(ConfigParser *p, json_object *v, const char *path, void *field, const void *data) {
        int64_t t;
        int r;

        r = config_expect_type(p, v, path, json_type_int, "an integer number of seconds");
        if (r < 0)
                return r;
        r = config_get_int64(p, v, path, &t);
        if (r < 0)
                return r;
        if (t < 1 || t > ESCALATION_TIMEOUT_MAX)
                return config_error(p, path, -ERANGE, "%" PRIi64 " is out of range; use 1 to %d seconds", t, ESCALATION_TIMEOUT_MAX);
        *(unsigned *) field = (unsigned) t;
        return 0;
}

const ConfigKey config_escalation_keys[] = {
        { "enabled",      config_parse_bool,  offsetof(Config, escalation_enabled) },
        { "timeout_s",    parse_timeout,      offsetof(Config, escalation_timeout_s) },
        { "auto_approve", parse_auto_approve, 0 },
        {}
};

int config_escalation_resolve(ConfigParser *p, Config *c) {
        for (size_t i = 0; i < c->n_auto_approve; i++) {
                AutoApproveRule *rule = &c->auto_approve[i];
                _cleanup_free_ char *a0 = NULL, *norm = NULL, *real = NULL;
                const char *hit;
                int r;

                if (asprintf(&a0, "escalation.auto_approve[%zu].argv[0]", i) < 0)
                        return config_oom(p);
                r = path_normalize(rule->argv[0], &norm);
                if (r < 0)
                        return config_error(p, a0, r, "\"%s\" is not a valid path", rule->argv[0]);
                /* A symlink such as /usr/bin/python3 -> python3.11 is judged by both names. */
                real = realpath(norm, NULL);
                if (!real && errno == ENOMEM)
                        return config_oom(p);
                hit = real ? banned_match(real) : NULL;
                if (hit)
                        return refuse_banned(p, a0, rule->argv[0], hit);
                /* What the file system said is part of the fingerprint: a reader that resolves differently fails it. */
                free(rule->program);
                rule->program = TAKE_PTR(real);
        }
        return 0;
}
