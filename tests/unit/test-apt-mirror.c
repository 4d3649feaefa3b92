/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apt-mirror.h"
#include "cleanup.h"
#include "fs-util.h"

/* Mirror names below are in .invalid: nothing here reaches a network. */

Test(apt_mirror, picks_the_first_main_archive_of_each_suite) {
        _cleanup_(apt_mirror_done) AptMirror m = {};
        _cleanup_free_ char *list = NULL;
        const char *targets =
                "deb-src\tSources\tmain\tbookworm\thttp://src.invalid/debian/\n"
                "deb\tPackages\tcontrib\tbookworm\thttp://contrib.invalid/debian/\n"
                "deb\tTranslations\tmain\tbookworm\thttp://tr.invalid/debian/\n"
                "deb\tPackages\tmain\tbookworm\tcdrom://[Debian 12]/\n"          /* not usable here */
                "deb\tPackages\tmain\tcloud-sdk-bookworm\thttp://other.invalid/apt/\n"
                "deb\tPackages\tmain\tbookworm\thttp://site.invalid/debian/\n"
                "deb\tPackages\tmain\tbookworm\thttp://second.invalid/debian/\n"
                "deb\tPackages\tmain\tbookworm-security\thttps://sec.invalid/debian-security/\n"
                "\n";

        cr_assert_eq(apt_mirror_pick(targets, "bookworm", &m), 0);
        cr_assert_str_eq(m.uri, "http://site.invalid/debian/");
        cr_assert_null(m.updates_uri);
        cr_assert_str_eq(m.security_uri, "https://sec.invalid/debian-security/");
        cr_assert_eq(apt_mirror_sources_list(&m, "bookworm", &list), 0);
        cr_assert_str_eq(list, "deb http://site.invalid/debian/ bookworm main\n"
                               "deb https://sec.invalid/debian-security/ bookworm-security main\n");
}

Test(apt_mirror, refuses_what_it_cannot_use) {
        AptMirror m = {};

        cr_assert_eq(apt_mirror_pick("", "bookworm", &m), -ENOENT);
        cr_assert_eq(apt_mirror_pick(NULL, "bookworm", &m), -ENOENT);
        /* Only the updates suite, or a URI that would break a sources line. */
        cr_assert_eq(apt_mirror_pick("deb\tPackages\tmain\tbookworm-updates\thttp://a.invalid/debian/\n", "bookworm", &m), -ENOENT);
        cr_assert_eq(apt_mirror_pick("deb\tPackages\tmain\tbookworm\thttp://a.invalid/de bian/\n", "bookworm", &m), -ENOENT);
        cr_assert_eq(apt_mirror_pick("deb\tPackages\tmain\tbookworm\tftp://a.invalid/debian/\n", "bookworm", &m), -ENOENT);
        /* Not the format asked for. */
        cr_assert_eq(apt_mirror_pick("deb\tPackages\tmain\tbookworm\n", "bookworm", &m), -EINVAL);
        cr_assert_eq(apt_mirror_pick("deb\tPackages\tmain\tbookworm\thttp://a.invalid/\tx\n", "bookworm", &m), -EINVAL);
        cr_assert_null(m.uri, "a failure must not write the mirror");
}

Test(apt_mirror, proxy_settings_only) {
        _cleanup_free_ char *conf = NULL;
        char *bad = NULL;
        const char *dump =
                "Acquire\t\n"
                "Acquire::http\t\n"
                "Acquire::http::Proxy\thttp://proxy.invalid:3142/\n"
                "Acquire::http::Proxy::local.invalid\tDIRECT\n"
                "Acquire::https::Proxy-Auto-Detect\t/usr/bin/auto-apt-proxy\n"
                "Acquire::http::Timeout\t10\n"
                "Acquire::http::Proxy::a b\tDIRECT\n"
                "Acquire::Languages\tnone\n";

        cr_assert_eq(apt_proxy_config(dump, &conf), 0);
        cr_assert_str_eq(conf, "Acquire::http::Proxy \"http://proxy.invalid:3142/\";\n"
                               "Acquire::http::Proxy::local.invalid \"DIRECT\";\n"
                               "Acquire::https::Proxy-Auto-Detect \"/usr/bin/auto-apt-proxy\";\n");
        free(conf);
        cr_assert_eq(apt_proxy_config("Acquire::Retries\t3\n", &conf), 0);
        cr_assert_str_eq(conf, "");
        cr_assert_eq(apt_proxy_config("Acquire::http::Proxy\thttp://x.invalid/\"; Dir \"/\n", &bad), -EINVAL);
        cr_assert_eq(apt_proxy_config("Acquire::http::Proxy\n", &bad), -EINVAL);
        cr_assert_null(bad);
}

/* A fake apt configuration that apt itself reads through APT_CONFIG. */
static char scratch[] = "/tmp/test-apt-mirror.XXXXXX";

static void scratch_setup(void) {
        cr_assert_not_null(mkdtemp(scratch));
}

static void scratch_teardown(void) {
        (void) rm_rf(scratch);
}

static void scratch_file(const char *name, const char *text) {
        _cleanup_free_ char *path = NULL;

        cr_assert_geq(asprintf(&path, "%s/%s", scratch, name), 0);
        cr_assert_eq(write_file(path, text, 0644), 0, "%s", path);
}

/* apt.conf pointing apt at scratch only, with extra appended. */
static void fake_apt(const char *extra) {
        _cleanup_free_ char *conf = NULL, *path = NULL, *d = NULL;

        cr_assert_geq(asprintf(&d, "%s/sources.list.d", scratch), 0);
        cr_assert_eq(mkdir(d, 0755), 0);
        free(d);
        cr_assert_geq(asprintf(&d, "%s/apt.conf.d", scratch), 0);
        cr_assert_eq(mkdir(d, 0755), 0);
        cr_assert_geq(asprintf(&conf,
                               "Dir::Etc::main \"%1$s/no-apt.conf\";\n"
                               "Dir::Etc::parts \"%1$s/apt.conf.d\";\n"
                               "Dir::Etc::sourcelist \"%1$s/sources.list\";\n"
                               "Dir::Etc::sourceparts \"%1$s/sources.list.d\";\n"
                               "Dir::State::lists \"%1$s/lists\";\n"
                               "%2$s",
                               scratch, extra), 0);
        scratch_file("apt.conf", conf);
        cr_assert_geq(asprintf(&path, "%s/apt.conf", scratch), 0);
        cr_assert_eq(setenv("APT_CONFIG", path, 1), 0);
}

Test(apt_mirror, host_mirror_from_both_source_formats, .init = scratch_setup, .fini = scratch_teardown) {
        _cleanup_(apt_mirror_done) AptMirror m = {};
        _cleanup_free_ char *proxy = NULL, *why = NULL;

        fake_apt("Acquire::http { Proxy \"http://proxy.invalid:3142\"; Proxy::site.invalid \"DIRECT\"; };\n");
        scratch_file("sources.list",
                     "# a one-line list\n"
                     "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                     "http://site.invalid/debian bookworm-updates main contrib\n");
        scratch_file("sources.list.d/vendor.sources",
                     "Types: deb\nURIs: https://vendor.invalid/apt\nSuites: bookworm\nComponents: stable\n");
        scratch_file("sources.list.d/debian.sources",
                     "Types: deb deb-src\n"
                     "URIs: http://site.invalid/debian\n"
                     "Suites: bookworm\n"
                     "Components: main non-free-firmware\n"
                     "\n"
                     "Types: deb\n"
                     "URIs: http://security.site.invalid/debian-security\n"
                     "Suites: bookworm-security\n"
                     "Components: main\n");

        cr_assert_eq(apt_host_mirror("bookworm", &m, &why), 0, "%s", why);
        cr_assert_eq(apt_host_proxy(&proxy, &why), 0, "%s", why);
        cr_assert_str_eq(m.uri, "http://site.invalid/debian/");
        cr_assert_str_eq(m.updates_uri, "http://site.invalid/debian/");
        cr_assert_str_eq(m.security_uri, "http://security.site.invalid/debian-security/");
        cr_assert_str_eq(proxy, "Acquire::http::Proxy \"http://proxy.invalid:3142\";\n"
                                "Acquire::http::Proxy::site.invalid \"DIRECT\";\n");
        cr_assert_null(why);
}

Test(apt_mirror, host_without_mirror_says_so, .init = scratch_setup, .fini = scratch_teardown) {
        AptMirror m = {};
        char *proxy = NULL;
        _cleanup_free_ char *why = NULL;

        fake_apt("");
        scratch_file("sources.list", "deb http://site.invalid/debian trixie main\n");
        cr_assert_eq(apt_host_mirror("bookworm", &m, &why), -ENOENT);
        cr_assert_str_eq(why, "apt's sources list no Debian mirror for bookworm (no \"deb\" entry with an http or "
                              "https URI, suite bookworm and component main)");
        cr_assert_null(m.uri);
        cr_assert_eq(apt_host_proxy(&proxy, NULL), 0);
        cr_assert_str_eq(proxy, "");
        free(proxy);
}

Test(apt_mirror, broken_sources_are_apts_to_report, .init = scratch_setup, .fini = scratch_teardown) {
        AptMirror m = {};
        _cleanup_free_ char *why = NULL;

        fake_apt("");
        scratch_file("sources.list", "deb http://site.invalid/debian bookworm\n");   /* no component */
        cr_assert_eq(apt_host_mirror("bookworm", &m, &why), -EPROTO);
        cr_assert(strstr(why, "apt-get indextargets failed (exit status 100)"), "%s", why);
}
