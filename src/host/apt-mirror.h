/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The Debian mirror and proxy of the host's apt configuration, for the
 * default image. apt reads its own configuration: the sources (one-line
 * sources.list and deb822 *.sources alike) come from `apt-get indextargets`,
 * the proxy from `apt-config dump`, both honouring APT_CONFIG. Lazaret
 * names no mirror of its own.
 */

/* `apt-get indextargets --no-release-info --format` that apt_mirror_pick() reads. */
#define APT_INDEXTARGETS_FORMAT "$(TARGET_OF)\t$(IDENTIFIER)\t$(COMPONENT)\t$(RELEASE)\t$(REPO_URI)"
/* `apt-config dump --format` that apt_proxy_config() reads. */
#define APT_CONFIG_DUMP_FORMAT "%f\t%v%n"

typedef struct AptMirror {
        char *uri;              /* the suite's binary "main" archive, as apt lists it */
        char *updates_uri;      /* SUITE-updates; NULL: not configured */
        char *security_uri;     /* SUITE-security; NULL: not configured */
} AptMirror;

void apt_mirror_done(AptMirror *m);

/*
 * Picks from indextargets (lines in APT_INDEXTARGETS_FORMAT) the first
 * http(s) archive that apt would read binary packages of component main of
 * suite from, and the same for SUITE-updates and SUITE-security. -ENOENT
 * when suite itself has none; -EINVAL on a line that is not in the format.
 */
int apt_mirror_pick(const char *indextargets, const char *suite, AptMirror *ret);

/* The one-line sources.list of m: "deb URI SUITE main" for each suite found. */
int apt_mirror_sources_list(const AptMirror *m, const char *suite, char **ret);

/*
 * The proxy settings among dump (lines in APT_CONFIG_DUMP_FORMAT of the
 * Acquire tree), as apt.conf text: Acquire::SCHEME::Proxy,
 * Acquire::SCHEME::Proxy::HOST and Acquire::SCHEME::Proxy-Auto-Detect.
 * *ret is "" when there are none. -EINVAL on a value that apt.conf text
 * cannot hold (a quote or a control character).
 */
int apt_proxy_config(const char *dump, char **ret);

/*
 * Runs apt-get indextargets (found with find_program()) and returns the
 * host's mirror for suite. On failure *ret_why (optional) is one line:
 * -ENOENT when apt lists no mirror for suite or is not installed, -EPROTO
 * when apt failed.
 */
int apt_host_mirror(const char *suite, AptMirror *ret, char **ret_why);

/*
 * Runs apt-config dump and returns the host's proxy settings as
 * apt_proxy_config() does ("" when there are none). *ret_why as above.
 */
int apt_host_proxy(char **ret, char **ret_why);
