/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apt-mirror.h"
#include "cleanup.h"
#include "fs-util.h"
#include "macro.h"
#include "spawn-util.h"
#include "util.h"

/* What apt prints is small; a configuration listing more is refused. */
#define APT_OUTPUT_MAX (4U * 1024U * 1024U)
#define INDEXTARGETS_FIELDS 5

void apt_mirror_done(AptMirror *m) {
        free(m->uri);
        free(m->updates_uri);
        free(m->security_uri);
        *m = (AptMirror) {};
}

/* An archive URI that a one-line sources entry and mmdebstrap take as it is. */
static bool uri_usable(const char *uri) {
        if (!startswith(uri, "http://") && !startswith(uri, "https://"))
                return false;
        for (const char *p = uri; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == 0x7f || strchr("\"'[]\\", *p))
                        return false;
        return true;
}

/* Splits line (modified) at tabs into exactly n fields. */
static int split_tabs(char *line, char **fields, size_t n) {
        size_t i = 0;

        for (char *p = line;; p++) {
                if (*p != '\t' && *p != 0)
                        continue;
                if (i == n)
                        return -EINVAL;
                fields[i++] = line;
                if (*p == 0)
                        break;
                *p = 0;
                line = p + 1;
        }
        return i == n ? 0 : -EINVAL;
}

int apt_mirror_pick(const char *indextargets, const char *suite, AptMirror *ret) {
        _cleanup_free_ char *text = strdup(indextargets ?: ""), *updates = NULL, *security = NULL;
        _cleanup_(apt_mirror_done) AptMirror m = {};
        char *line, *next;

        if (!text || asprintf(&updates, "%s-updates", suite) < 0 || asprintf(&security, "%s-security", suite) < 0)
                return -ENOMEM;

        for (line = text; *line; line = next) {
                char *f[INDEXTARGETS_FIELDS], **slot = NULL;
                int r;

                next = strchrnul(line, '\n');
                if (*next)
                        *next++ = 0;
                if (!*line)
                        continue;
                r = split_tabs(line, f, ELEMENTSOF(f));
                if (r < 0)
                        return r;
                /* TARGET_OF IDENTIFIER COMPONENT RELEASE REPO_URI */
                if (!streq(f[0], "deb") || !streq(f[1], "Packages") || !streq(f[2], "main") || !uri_usable(f[4]))
                        continue;
                if (streq(f[3], suite))
                        slot = &m.uri;
                else if (streq(f[3], updates))
                        slot = &m.updates_uri;
                else if (streq(f[3], security))
                        slot = &m.security_uri;
                if (!slot || *slot)
                        continue;
                *slot = strdup(f[4]);
                if (!*slot)
                        return -ENOMEM;
        }
        if (!m.uri)
                return -ENOENT;
        *ret = m;
        m = (AptMirror) {};
        return 0;
}

int apt_mirror_sources_list(const AptMirror *m, const char *suite, char **ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = asprintf(&text, "deb %s %s main\n", m->uri, suite);
        if (r >= 0 && m->updates_uri) {
                char *t = NULL;
                r = asprintf(&t, "%sdeb %s %s-updates main\n", text, m->updates_uri, suite);
                free(text);
                text = r >= 0 ? t : NULL;
        }
        if (r >= 0 && m->security_uri) {
                char *t = NULL;
                r = asprintf(&t, "%sdeb %s %s-security main\n", text, m->security_uri, suite);
                free(text);
                text = r >= 0 ? t : NULL;
        }
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
}

static bool span_of(const char *s, const char *set, const char **end) {
        size_t n = strspn(s, set);

        *end = s + n;
        return n > 0;
}

/* Acquire::SCHEME::Proxy, Acquire::SCHEME::Proxy::HOST, Acquire::SCHEME::Proxy-Auto-Detect */
static bool proxy_key(const char *key) {
        const char *p = startswith(key, "Acquire::");

        if (!p || !span_of(p, "abcdefghijklmnopqrstuvwxyz0123456789+", &p))
                return false;
        p = startswith(p, "::Proxy");
        if (!p)
                return false;
        if (*p == 0 || streq(p, "-Auto-Detect"))
                return true;
        p = startswith(p, "::");
        return p && span_of(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-", &p) && *p == 0;
}

int apt_proxy_config(const char *dump, char **ret) {
        _cleanup_free_ char *text = strdup(dump ?: ""), *out = strdup("");
        char *line, *next;

        if (!text || !out)
                return -ENOMEM;
        for (line = text; *line; line = next) {
                char *value, *t = NULL;

                next = strchrnul(line, '\n');
                if (*next)
                        *next++ = 0;
                if (!*line)
                        continue;
                value = strchr(line, '\t');
                if (!value)
                        return -EINVAL;
                *value++ = 0;
                if (!proxy_key(line))
                        continue;
                for (const char *p = value; *p; p++)
                        if ((unsigned char) *p < ' ' || *p == 0x7f || *p == '"')
                                return -EINVAL;
                if (asprintf(&t, "%s%s \"%s\";\n", out, line, value) < 0)
                        return -ENOMEM;
                free(out);
                out = t;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/*
 * Runs argv (argv[0] looked up with find_program()) with our environment,
 * stdin and stderr on /dev/null, and returns what it wrote to stdout. The
 * exit status is returned (>= 0), or < 0 when it could not run.
 */
static int run_output(char *const *argv, char **ret) {
        _cleanup_free_ char *program = NULL;
        _cleanup_free_ char **args = NULL;
        size_t n = 0;
        int r;

        r = find_program(argv[0], &program);
        if (r < 0)
                return r;
        while (argv[n])
                n++;
        args = calloc(n + 1, sizeof(char *));
        if (!args)
                return -ENOMEM;
        args[0] = program;
        for (size_t i = 1; i < n; i++)
                args[i] = argv[i];
        return spawn_output(args, NULL, NULL, APT_OUTPUT_MAX, ret);
}

int apt_host_mirror(const char *suite, AptMirror *ret, char **ret_why) {
        char *argv[] = { (char *) "apt-get", (char *) "indextargets", (char *) "--no-release-info",
                         (char *) "--format", (char *) APT_INDEXTARGETS_FORMAT, NULL };
        _cleanup_free_ char *targets = NULL;
        int r;

        r = run_output(argv, &targets);
        if (r == -ENOENT)
                return errorf(ret_why, r, "apt-get is not installed, and the Debian mirror comes from apt's "
                              "configuration");
        if (r < 0)
                return errorf(ret_why, r, "cannot run apt-get indextargets: %s", strerror(-r));
        if (r > 0)
                return errorf(ret_why, -EPROTO, "apt-get indextargets failed (exit status %d); run it to see "
                              "what apt finds wrong in its sources", r);
        r = apt_mirror_pick(targets, suite, ret);
        if (r == -ENOENT)
                return errorf(ret_why, r, "apt's sources list no Debian mirror for %s (no \"deb\" entry with "
                              "an http or https URI, suite %s and component main)", suite, suite);
        if (r < 0)
                return errorf(ret_why, r, "cannot read the output of apt-get indextargets: %s", strerror(-r));
        return 0;
}

int apt_host_proxy(char **ret, char **ret_why) {
        char *argv[] = { (char *) "apt-config", (char *) "dump", (char *) "--format",
                         (char *) APT_CONFIG_DUMP_FORMAT, (char *) "Acquire", NULL };
        _cleanup_free_ char *dump = NULL;
        int r;

        r = run_output(argv, &dump);
        if (r < 0)
                return errorf(ret_why, r, "cannot run apt-config dump: %s", strerror(-r));
        if (r > 0)
                return errorf(ret_why, -EPROTO, "apt-config dump failed (exit status %d); run it to see what "
                              "apt finds wrong in its configuration", r);
        r = apt_proxy_config(dump, ret);
        if (r == -EINVAL)
                return errorf(ret_why, r, "apt's proxy settings (apt-config dump Acquire) hold a value with a "
                              "quote or a control character");
        return r;
}
