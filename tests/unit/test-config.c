/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <criterion/criterion.h>

#include "trusted-scratch.h"
#include <errno.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "fs-util.h"
#include "macro.h"
#include "strv.h"

#define FILE_NAME "/etc/lazaret-test/config.json"

static const ConfigEnv env = {
        .home = "/home/u",
        .xdg_data_home = "/nonexistent-lazaret-unit/share",
};

/* Both steps, as config_load() takes them. */
static Config *parse_ok(const char *text) {
        Config *c = NULL;
        _cleanup_free_ char *err = NULL, *rerr = NULL;
        int r = config_parse(text, text ? strlen(text) : 0, text ? FILE_NAME : NULL, &env, &c, &err);
        cr_assert_eq(r, 0, "config should parse, got: %s", err ?: "(no message)");
        cr_assert_not_null(c);
        cr_assert_not(c->resolved);
        r = config_resolve(c, &rerr);
        cr_assert_eq(r, 0, "config should resolve, got: %s", rerr ?: "(no message)");
        cr_assert(c->resolved);
        return c;
}

typedef struct BadCase {
        const char *text;
        const char *message;   /* must appear in the error, after "FILE: " */
} BadCase;

/*
 * Every bad input gets a message of the shape "FILE: KEY.PATH: what". The
 * table covers each class the issue names: unknown keys, wrong types,
 * duplicate keys, bad CIDRs, bad tokens, names, paths and limits.
 */
static const BadCase bad_cases[] = {
        { "[]", "expected an object, got an array" },
        { "{\"dat_root\": \"/x\"}", "dat_root: unknown key (known keys here: data_root, default_profile, network, escalation, profiles, retention, runtime)" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"imgae\": 1}}}", "profiles.dev.imgae: unknown key" },
        { "{\"network\": {\"allow\": [], \"block\": []}}", "network.block: unknown key" },
        { "{\"escalation\": {\"auto_approve\": [{\"argv\": [\"/usr/bin/make\"], \"trailing\": true}]}}", "escalation.auto_approve[0].trailing: unknown key" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\", \"container\": \"/b\", \"opts\": \"z\"}]}}}", "profiles.dev.volumes[0].opts: unknown key" },
        { "{\"default_profile\": 3}", "default_profile: expected a string, got an integer" },
        { "{\"data_root\": null}", "data_root: null is not a valid value" },
        { "{\"escalation\": {\"enabled\": \"yes\"}}", "escalation.enabled: expected true or false, got a string" },
        { "{\"escalation\": {\"timeout_s\": 1.5}}", "escalation.timeout_s: expected an integer number of seconds, got a number" },
        { "{\"escalation\": {\"timeout_s\": 0}}", "escalation.timeout_s: 0 is out of range" },
        { "{\"escalation\": {\"timeout_s\": 86401}}", "escalation.timeout_s: 86401 is out of range" },
        /* Above INT64_MAX json-c would clamp: refused with the number as written. */
        { "{\"escalation\": {\"timeout_s\": 9223372036854775808}}", "escalation.timeout_s: 9223372036854775808 is too large" },
        { "{\"profiles\": []}", "profiles: expected an object of profiles, got an array" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"command\": \"bash\"}}}", "profiles.dev.command: expected an array of strings, got a string" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"command\": []}}}", "profiles.dev.command: must not be an empty array" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"command\": [\"a\", 1]}}}", "profiles.dev.command[1]: expected a string, got an integer" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"isolate_ignored\": 0}}}", "profiles.dev.isolate_ignored: expected true or false" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": []}}}", "profiles.dev.env: expected an object" },
        /* duplicate keys */
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\"},\n \"dev\": {\"image\": \"builtin:default\"}}}", "line 2, column 2: profiles.dev: duplicate key" },
        { "{\"data_root\": \"/a\", \"data_root\": \"/b\"}", "data_root: duplicate key" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {\"A\": \"1\", \"A\": \"2\"}}}}", "profiles.dev.env.A: duplicate key" },
        /* NUL in keys: json-c cuts keys at NUL, so these would alias "dev" and "data_root" */
        { "{\"profiles\": {\"dev\\u0000a\": {\"image\": \"builtin:default\"},\n \"dev\\u0000b\": {\"image\": \"oci:/evil\"}}}",
          FILE_NAME ": line 1, column 19: profiles[\"dev\\x00a\"]: key contains a NUL character (\\u0000)" },
        { "{\"data_root\": \"/a\", \"data_root\\u0000x\": \"/b\"}", FILE_NAME ": line 1, column 31: [\"data_root\\x00x\"]: key contains a NUL character (\\u0000)" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {\"A\\u0000\": \"1\"}}}}", "profiles.dev.env[\"A\\x00\"]: key contains a NUL character" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"command\": [\"/bin/true\\u0000x\"]}}}", "profiles.dev.command[0]: string contains a NUL character (\\u0000)" },
        { "{\"profiles\": {\"\\ud800x\": {\"image\": \"builtin:default\"}, \"\\udc00x\": {\"image\": \"builtin:default\"}}}", "key contains an unpaired UTF-16 surrogate escape" },
        /* CIDRs */
        { "{\"network\": {\"deny\": [\"10.0.0.1/8\"]}}", "network.deny[0]: \"10.0.0.1/8\" has host bits set" },
        { "{\"network\": {\"allow\": [\"fd00::/8\"]}}", "network.allow[0]: \"fd00::/8\" is an IPv6 prefix" },
        { "{\"network\": {\"allow\": [\"10.1.0.0/33\"]}}", "network.allow[0]: \"10.1.0.0/33\" is not an IPv4 prefix" },
        { "{\"network\": {\"allow\": [\"example.com\"]}}", "network.allow[0]: \"example.com\" is not an IPv4 prefix" },
        { "{\"network\": {\"allow\": [\"10.1.0.0/16\", \"10.1.0.0/16\"]}}", "network.allow[1]: \"10.1.0.0/16\" is listed twice" },
        { "{\"network\": {\"allow\": [\"10.1.0.0/16\"], \"deny\": [\"10.1.0.0/16\"]}}", "network.allow[0]: \"10.1.0.0/16\" is also denied by network.deny[0]" },
        { "{\"network\": {\"allow\": [\"192.168.0.0/16\"]}}", "network.allow[0]: \"192.168.0.0/16\" is exactly a default-denied range" },
        { "{\"network\": {\"allow\": [\"169.254.0.0/16\"]}}", "network.allow[0]: \"169.254.0.0/16\" is exactly a default-denied range" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_egress\": [\"100.64.0.0/10\"]}}}", "profiles.dev.allow_egress[0]: \"100.64.0.0/10\" is exactly a default-denied range" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_egress\": [\"10.137.55.2/32\"]}}}", "profiles.dev.allow_egress[0]: \"10.137.55.2/32\" overlaps 10.137.54.0/23" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"deny_egress\": [\"10.137.54.0/23\"]}}}", "profiles.dev.deny_egress[0]: \"10.137.54.0/23\" lies inside 10.137.54.0/23" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"deny_egress\": [\"8.8.0.0/16\"]}}, \"network\": {\"allow\": [\"8.8.0.0/16\"]}}", "network.allow[0]: \"8.8.0.0/16\" is also denied by profiles.dev.deny_egress[0]" },
        { "{\"network\": {\"allow\": [\"10.137.54.0/24\"]}}", "network.allow[0]: \"10.137.54.0/24\" overlaps 10.137.54.0/23" },
        { "{\"network\": {\"allow\": [\"10.128.0.0/9\"]}}", "network.allow[0]: \"10.128.0.0/9\" overlaps 10.137.54.0/23" },
        { "{\"network\": {\"deny\": [\"10.137.55.0/29\"]}}", "network.deny[0]: \"10.137.55.0/29\" lies inside 10.137.54.0/23" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_egress\": [\"172.20.0.0/16\"]}}, \"network\": {\"deny\": [\"172.20.0.0/16\"]}}", "profiles.dev.allow_egress[0]: \"172.20.0.0/16\" is also denied by network.deny[0]" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"deny_egress\": [\"1.2.3.4/33\"]}}}", "profiles.dev.deny_egress[0]" },
        /* tokens and paths */
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"{home}/x\", \"container\": \"/x\"}]}}}", "profiles.dev.volumes[0].host: unknown token \"{home}\"" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"{profile_dir/x\", \"container\": \"/x\"}]}}}", "profiles.dev.volumes[0].host: unterminated \"{\"" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"~other/x\", \"container\": \"/x\"}]}}}", "profiles.dev.volumes[0].host: \"~user\" is not supported" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"{profile_dir}/../x\", \"container\": \"/x\"}]}}}", "profiles.dev.volumes[0].host: \"{profile_dir}/../x\" contains a \"..\" segment" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"relative/x\", \"container\": \"/x\"}]}}}", "profiles.dev.volumes[0].host: \"relative/x\" is not an absolute path" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\", \"container\": \"x\"}]}}}", "profiles.dev.volumes[0].container: \"x\" is not an absolute path" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\", \"container\": \"/x/../etc\"}]}}}", "profiles.dev.volumes[0].container: \"/x/../etc\" contains a \"..\" segment" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\", \"container\": \"/workspace/.git/hooks\"}]}}}", "profiles.dev.volumes[0].container: \"/workspace/.git/hooks\" is inside /workspace" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\", \"container\": \"/run/lazaret/x\"}]}}}", "is inside /run/lazaret" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\", \"container\": \"/\"}]}}}", "profiles.dev.volumes[0].container: the sandbox root" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\", \"container\": \"/x\", \"mode\": \"z\"}]}}}", "profiles.dev.volumes[0].mode: \"z\" is not a mount mode" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\"}]}}}", "profiles.dev.volumes[0]: missing required key \"container\"" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\", \"container\": \"/x\"}, {\"host\": \"/b\", \"container\": \"/x/y\"}]}}}", "profiles.dev.volumes[1]: container path \"/x/y\" overlaps volumes[0]" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"persistent_dirs\": [\"/proc/x\"]}}}", "profiles.dev.persistent_dirs[0]: \"/proc/x\" is inside /proc" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"persistent_dirs\": [\"/usr\", \"/usr/local\"]}}}", "profiles.dev.persistent_dirs[1]: \"/usr/local\" overlaps \"/usr\"" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"persistent_dirs\": [\"usr\"]}}}", "profiles.dev.persistent_dirs[0]: \"usr\" is not an absolute path" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"protected_paths\": [\"a/../b\"]}}}", "profiles.dev.protected_paths[0]: \"a/../b\": an empty, \".\" or \"..\" component" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"protected_paths\": [\"!Makefile\"]}}}", "profiles.dev.protected_paths[0]: \"!Makefile\": \"!\" removes only a built-in name" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"protected_paths\": [\".git/hooks\"]}}}", "profiles.dev.protected_paths[0]: \".git/hooks\": \".git\"" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"protected_paths\": [\"a/b\", \"/a/b/\"]}}}", "profiles.dev.protected_paths[1]: \"/a/b\" is listed twice" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"protected_paths\": [\"\"]}}}", "profiles.dev.protected_paths[0]" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"shared_ignored\": [\"/etc/x\"]}}}", "profiles.dev.shared_ignored[0]: \"/etc/x\" must be a path relative to the workspace's top" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"shared_ignored\": [\"a/../b\"]}}}", "profiles.dev.shared_ignored[0]: \"a/../b\" must be a path relative" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"shared_ignored\": [\".env\", \".env\"]}}}", "profiles.dev.shared_ignored[1]: \".env\" is listed twice" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"shared_ignored\": \".env\"}}}", "profiles.dev.shared_ignored" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"publish_ports\": [\"80\"]}}}", "profiles.dev.publish_ports[0]: host port 80 is below 1024" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_hosts\": [\"192.0.2.1\"]}}}", "profiles.dev.allow_hosts[0]: " },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_hosts\": [\"*.com\"]}}}", "profiles.dev.allow_hosts[0]: " },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_hosts\": [\"a.example\", \"A.example.:443\"]}}}", "profiles.dev.allow_hosts[1]: " },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_hosts\": \"a.example\"}}}", "profiles.dev.allow_hosts" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"publish_ports\": [\"8080:0\"]}}}", "profiles.dev.publish_ports[0]: \"8080:0\" is not PORT or HOST_PORT:PORT" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"publish_ports\": [\"8080\", \"8080:81\"]}}}", "profiles.dev.publish_ports[1]: host port 8080 is published twice" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"publish_ports\": [8080]}}}", "profiles.dev.publish_ports[0]" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"publish_ports\": \"8080\"}}}", "profiles.dev.publish_ports" },
        { "{\"data_root\": \"{profile_dir}\"}", "data_root: token \"{profile_dir}\" is not allowed here" },
        { "{\"data_root\": \"data\"}", "data_root: \"data\" is not an absolute path" },
        { "{\"data_root\": \"/\"}", "data_root: the file system root" },
        /* names */
        { "{\"profiles\": {\"Dev\": {\"image\": \"builtin:default\"}}}", "profiles.Dev: invalid profile name" },
        { "{\"profiles\": {\"a\": {\"image\": \"builtin:default\"}}}", "profiles.a: invalid profile name" },
        { "{\"profiles\": {\"a.b\": {\"image\": \"builtin:default\"}}}", "profiles[\"a.b\"]: invalid profile name" },
        { "{\"profiles\": {\"../x\": {\"image\": \"builtin:default\"}}}", "profiles[\"../x\"]: invalid profile name" },
        { "{\"profiles\": {\"abcdefghijklmnopqrstuvwxyz0123456\": {\"image\": \"builtin:default\"}}}", "invalid profile name" },
        { "{\"default_profile\": \"Nope\"}", "default_profile: \"Nope\" is not a valid profile name" },
        { "{\"default_profile\": \"nope\"}", "default_profile: no profile named \"nope\" is defined" },
        /* profile contents */
        { "{\"profiles\": {\"dev\": {}}}", "profiles.dev: missing required key \"image\"" },
        { "{\"profiles\": {\"dev\": {\"image\": \"docker.io/library/debian\"}}}", "profiles.dev.image: \"docker.io/library/debian\" is not a supported image reference" },
        { "{\"profiles\": {\"dev\": {\"image\": \"oci:\"}}}", "profiles.dev.image: \"oci:\" names no directory" },
        { "{\"profiles\": {\"dev\": {\"image\": \"oci:{nope}/x\"}}}", "profiles.dev.image: unknown token" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\\u0000\"}}}", "profiles.dev.image: string contains a NUL character" },
        { "{\"profiles\": {\"dev\": {\"image\": \"\"}}}", "profiles.dev.image: must not be empty" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {\"1X\": \"v\"}}}}", "profiles.dev.env.1X: not a valid environment variable name" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {\"LAZARET_SESSION_ID\": \"v\"}}}}", "profiles.dev.env.LAZARET_SESSION_ID: LAZARET_* variables are set by Lazaret itself" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {\"A\": \"env:\"}}}}", "profiles.dev.env.A: \"env:\": \"env:\" must be followed by a host variable name" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {\"A\": 1}}}}", "profiles.dev.env.A: expected a string, got an integer" },
        /* escalation rules */
        { "{\"escalation\": {\"auto_approve\": [{\"argv\": [\"make\", \"test\"]}]}}", "escalation.auto_approve[0].argv[0]: \"make\" must be an absolute program path" },
        { "{\"escalation\": {\"auto_approve\": [{\"argv\": [\"/usr/bin/git\", \"status\"]}]}}", "escalation.auto_approve[0].argv[0]: \"/usr/bin/git\" can run arbitrary commands (matches \"git\")" },
        { "{\"escalation\": {\"auto_approve\": [{\"argv\": [\"/usr/lib/git-core/git-log\"]}]}}", "can run arbitrary commands (matches \"git-*\")" },
        { "{\"escalation\": {\"auto_approve\": [{\"argv\": [\"/bin/sh\", \"-c\", \"x\"]}]}}", "escalation.auto_approve[0].argv[0]: \"/bin/sh\" can run arbitrary commands" },
        { "{\"escalation\": {\"auto_approve\": [{\"argv\": [\"/usr/bin/python3.11\"]}]}}", "matches \"python*\"" },
        { "{\"escalation\": {\"auto_approve\": [{\"argv\": []}]}}", "escalation.auto_approve[0].argv: must not be an empty array" },
        { "{\"escalation\": {\"auto_approve\": [{\"trailing_args\": true}]}}", "escalation.auto_approve[0]: missing required key \"argv\"" },
        { "{\"escalation\": {\"auto_approve\": [{\"argv\": [\"/usr/bin/make\"], \"trailing_args\": \"no\"}]}}", "escalation.auto_approve[0].trailing_args: expected true or false" },
        { "{\"escalation\": {\"auto_approve\": [\"/usr/bin/make test\"]}}", "escalation.auto_approve[0]: expected an object, got a string" },
        /* limits */
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": []}}}", "profiles.dev.limits: expected an object, got an array" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory\": \"1G\"}}}}", "profiles.dev.limits.memory: unknown key (known keys here: memory_max, memory_high, tasks_max, cpu_weight, tmp_size, processes, address_space, root_size)" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"8GB\"}}}}", "profiles.dev.limits.memory_max: \"8GB\" is not a size; use bytes or a number with K, M, G or T (binary multiples), or \"infinity\"" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"1.5G\"}}}}", "profiles.dev.limits.memory_max: \"1.5G\" is not a size" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \" 1G\"}}}}", "profiles.dev.limits.memory_max: \" 1G\" is not a size" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"-1G\"}}}}", "profiles.dev.limits.memory_max: \"-1G\" is not a size" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"99999999999T\"}}}}", "profiles.dev.limits.memory_max: \"99999999999T\" is too large" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": -5}}}}", "profiles.dev.limits.memory_max: -5 is negative" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": 18446744073709551615}}}}", "profiles.dev.limits.memory_max: 18446744073709551615 is too large" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"tasks_max\": 9223372036854775808}}}}", "profiles.dev.limits.tasks_max: 9223372036854775808 is too large" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": 1.5}}}}", "profiles.dev.limits.memory_max: expected a size (such as \"512M\", \"8G\" or a number of bytes), got a number" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"100M\"}}}}", "profiles.dev.limits.memory_max: 100M is too small; the least is 256M" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"4G\", \"memory_high\": \"5G\"}}}}", "profiles.dev.limits: memory_high (5G) must not exceed memory_max (4G)" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_high\": \"infinity\"}}}}", "profiles.dev.limits: memory_high (infinity) must not exceed memory_max (8G)" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"tmp_size\": \"infinity\"}}}}", "profiles.dev.limits.tmp_size: cannot be \"infinity\"" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"tmp_size\": 1000}}}}", "profiles.dev.limits.tmp_size: 1000 is too small; the least is 1M" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"root_size\": \"infinity\"}}}}", "profiles.dev.limits.root_size: cannot be \"infinity\"" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"root_size\": \"1M\"}}}}", "profiles.dev.limits.root_size: 1M is too small; the least is 4M" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"cpu_weight\": 0}}}}", "profiles.dev.limits.cpu_weight: 0 is out of range; use 1 to 10000" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"cpu_weight\": 10001}}}}", "profiles.dev.limits.cpu_weight: 10001 is out of range; use 1 to 10000" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"cpu_weight\": \"infinity\"}}}}", "profiles.dev.limits.cpu_weight: expected an integer, got a string" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"processes\": \"64\"}}}}", "profiles.dev.limits.processes: expected an integer or \"infinity\", got a string" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"processes\": 8}}}}", "profiles.dev.limits.processes: 8 is out of range; the least is 16" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"tasks_max\": 1000, \"processes\": 512}}}}", "profiles.dev.limits: tasks_max (1000) must be at least 2 × processes + 256 (1280)" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"processes\": \"infinity\"}}}}", "profiles.dev.limits: tasks_max (4096) must be at least 2 × processes + 256 (processes is infinity)" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"address_space\": \"1M\"}}}}", "profiles.dev.limits.address_space: 1M is too small; the least is 64M" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": null}}}}", "profiles.dev.limits.memory_max: null is not a valid value" },
        /* runtime and directfs */
        { "{\"runtime\": {\"runsc\": 1}}", "runtime.runsc: expected a string, got an integer" },
        { "{\"runtime\": {\"runsc\": \"\"}}", "runtime.runsc: must not be empty" },
        { "{\"runtime\": {\"platform\": \"kvm\"}}", "runtime.platform: unknown key (known keys here: runsc)" },
        { "{\"runtime\": \"/usr/bin/runsc\"}", "runtime: expected an object, got a string" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"directfs\": \"yes\"}}}", "profiles.dev.directfs: expected true or false, got a string" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"git_fsmonitor\": \"no\"}}}", "profiles.dev.git_fsmonitor: expected true or false, got a string" },
        /* egress allows that can never be reached (issue 18 item 5) */
        { "{\"network\": {\"allow\": [\"127.0.0.1/32\"]}}", "network.allow[0]: \"127.0.0.1/32\" lies in loopback, which the sandbox's network never reaches on the host; no egress can reach it" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"allow_egress\": [\"10.0.0.0/8\", \"239.1.2.0/24\"]}}}", "profiles.dev.allow_egress[1]: \"239.1.2.0/24\" lies in multicast" },
        { "{\"network\": {\"allow\": [\"0.0.0.0/8\"]}}", "network.allow[0]: \"0.0.0.0/8\" lies in \"this network\"" },
        { "{\"network\": {\"allow\": [\"255.255.255.255/32\"]}}", "lies in reserved (240.0.0.0/4 and the broadcast address)" },
        /* control characters in paths (issue 18 item 5): a path cannot forge a line */
        { "{\"data_root\": \"/x\\ny\"}", "data_root: contains a control character (0x0a at byte 2); a path may not" },
        { "{\"profiles\": {\"dev\": {\"image\": \"oci:/img\\u001b[31m\"}}}", "profiles.dev.image: contains a control character (0x1b at byte 4)" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\\tb\", \"container\": \"/b\"}]}}}", "profiles.dev.volumes[0].host: contains a control character (0x09 at byte 2)" },
        { "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"/a\", \"container\": \"/b\\u007f\"}]}}}", "profiles.dev.volumes[0].container: contains a control character (0x7f at byte 2)" },
        /* syntax */
        { "{\"a\": 1,,}", "line 1, column 9: invalid JSON" },
        { "{\"profiles\": {}} trailing", "unexpected text after the top-level value" },
        { "", "document is empty or incomplete" },
        { "{\"retention\": {\"audit_days\": 0}}", "retention.audit_days: 0 is out of range; use 1 to 36500 days" },
        { "{\"retention\": {\"audit_events\": 99}}", "retention.audit_events: 99 is out of range; use 100 to 100000000 events" },
        { "{\"retention\": {\"generations\": \"5\"}}", "retention.generations: expected an integer, got a string" },
        { "{\"retention\": {\"days\": 5}}", "retention.days: unknown key (known keys here: audit_days, audit_events, generations)" },
};

/*
 * Criterion may run each parameter in a freshly executed process, where
 * pointers into this binary differ (ASLR); pass indices, not pointers.
 */
static size_t bad_indices[sizeof(bad_cases) / sizeof(bad_cases[0])];

ParameterizedTestParameters(config, bad) {
        for (size_t i = 0; i < sizeof(bad_indices) / sizeof(bad_indices[0]); i++)
                bad_indices[i] = i;
        return cr_make_param_array(size_t, bad_indices, sizeof(bad_indices) / sizeof(bad_indices[0]));
}

ParameterizedTest(size_t *idx, config, bad) {
        const BadCase *bc = &bad_cases[*idx];
        Config *c = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        r = config_parse(bc->text, strlen(bc->text), FILE_NAME, &env, &c, &err);
        cr_assert_lt(r, 0, "config should be refused: %s", bc->text);
        cr_assert_null(c);
        cr_assert_not_null(err, "no message for: %s", bc->text);
        cr_assert_not_null(strstr(err, FILE_NAME ": "), "message does not name the file: %s", err);
        cr_assert_not_null(strstr(err, bc->message), "message \"%s\" lacks \"%s\"", err, bc->message);
}

Test(config, builtin_has_default_profile) {
        _cleanup_config_ Config *c = parse_ok(NULL);
        const Profile *p = config_find_profile(c, "default");

        cr_assert_null(c->path);
        cr_assert_not_null(p);
        cr_assert(p->builtin);
        cr_assert_eq(p->image.kind, IMAGE_BUILTIN);
        cr_assert_null(p->command);
        cr_assert(p->isolate_ignored);
        cr_assert_str_eq(c->default_profile, "default");
        cr_assert_str_eq(c->data_root, "/nonexistent-lazaret-unit/share/lazaret");
        cr_assert(c->escalation_enabled);
        cr_assert_eq(c->escalation_timeout_s, 300);
}

Test(config, full_document) {
        _cleanup_config_ Config *c = parse_ok(
                "{\n"
                "  // everything the schema has\n"
                "  \"data_root\": \"~/lz\",\n"
                "  \"default_profile\": \"dev\",\n"
                "  \"network\": { \"allow\": [\"10.20.0.0/16\"], \"deny\": [\"203.0.113.0/24\"], },\n"
                "  \"escalation\": { \"enabled\": false, \"timeout_s\": 60,\n"
                "    \"auto_approve\": [ {\"argv\": [\"/usr/bin/make\", \"test\"]},\n"
                "                      {\"argv\": [\"/usr/bin/cargo\", \"build\"], \"trailing_args\": true} ] },\n"
                "  \"profiles\": {\n"
                "    \"dev\": { \"image\": \"oci:{profile_dir}/image:v2\", \"command\": [\"/bin/bash\", \"-l\"],\n"
                "      \"persistent_dirs\": [\"/usr\", \"/home/agent/\"], \"allow_egress\": [\"192.168.7.0/24\"],\n"
                "      \"deny_egress\": [\"198.51.100.0/24\"], \"env\": {\"EDITOR\": \"vi\", \"TOKEN\": \"env:GH_TOKEN\"},\n"
                "      \"volumes\": [ {\"host\": \"~/.cache/pip\", \"container\": \"/root/.cache/pip\", \"mode\": \"rw\"},\n"
                "                   {\"host\": \"{domain_dir}/extra\", \"container\": \"/extra\"} ],\n"
                "      \"isolate_ignored\": false },\n"
                "    \"ci_runner\": { \"image\": \"builtin:default\" },\n"
                "  },\n"
                "}\n");
        const Profile *dev = config_find_profile(c, "dev");

        cr_assert_str_eq(c->path, FILE_NAME);
        cr_assert_str_eq(c->data_root, "/home/u/lz");
        cr_assert_str_eq(c->default_profile, "dev");
        cr_assert_eq(c->allow.n, 1);
        cr_assert_eq(c->deny.n, 1);
        cr_assert_not(c->escalation_enabled);
        cr_assert_eq(c->escalation_timeout_s, 60);
        cr_assert_eq(c->n_auto_approve, 2);
        cr_assert_not(c->auto_approve[0].trailing_args);
        cr_assert(c->auto_approve[1].trailing_args);
        /* ci_runner, default (built-in), dev: sorted */
        cr_assert_eq(c->n_profiles, 3);
        cr_assert_str_eq(c->profiles[0].name, "ci_runner");
        cr_assert_str_eq(c->profiles[1].name, "default");
        cr_assert_str_eq(c->profiles[2].name, "dev");

        cr_assert_not_null(dev);
        cr_assert_eq(dev->image.kind, IMAGE_OCI_LAYOUT);
        cr_assert_str_eq(dev->image.path, "{profile_dir}/image");
        cr_assert_str_eq(dev->image.tag, "v2");
        cr_assert_str_eq(dev->command[1], "-l");
        cr_assert_str_eq(dev->persistent_dirs[1], "/home/agent");
        cr_assert_eq(dev->n_env, 2);
        cr_assert_str_eq(dev->env[1].name, "TOKEN");
        cr_assert(dev->env[1].from_host);
        cr_assert_str_eq(dev->env[1].value, "GH_TOKEN");
        cr_assert_eq(dev->n_volumes, 2);
        cr_assert_eq(dev->volumes[0].mode, VOLUME_RW);
        cr_assert_eq(dev->volumes[1].mode, VOLUME_RO);  /* read-only unless asked */
        cr_assert_not(dev->isolate_ignored);
}

Test(config, image_without_tag_and_with_colon_in_path) {
        _cleanup_config_ Config *c = parse_ok(
                "{\"profiles\": {\"aa\": {\"image\": \"oci:/img/layout\"}, \"bb\": {\"image\": \"oci:/img/a:b/layout\"}}}");
        cr_assert_str_eq(config_find_profile(c, "aa")->image.tag, "latest");
        cr_assert_str_eq(config_find_profile(c, "bb")->image.path, "/img/a:b/layout");
        cr_assert_str_eq(config_find_profile(c, "bb")->image.tag, "latest");
}

Test(config, fingerprint_ignores_presentation_only) {
        _cleanup_config_ Config *a = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {\"A\": \"1\", \"B\": \"2\"}}}, \"default_profile\": \"dev\"}");
        _cleanup_config_ Config *b = parse_ok("// same thing\n{ \"default_profile\": \"dev\",\n \"profiles\": { \"dev\": { \"env\": {\"B\": \"2\", \"A\": \"1\",}, \"image\": \"builtin:default\" } } }");
        _cleanup_config_ Config *c = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {\"A\": \"1\", \"B\": \"3\"}}}, \"default_profile\": \"dev\"}");
        _cleanup_config_ Config *d = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {\"A\": \"1\", \"B\": \"2\"}, \"isolate_ignored\": true}}, \"default_profile\": \"dev\"}");

        cr_assert_eq(memcmp(a->fingerprint, b->fingerprint, SHA256_DIGEST_LEN), 0, "key order and comments changed the fingerprint");
        cr_assert_neq(memcmp(a->fingerprint, c->fingerprint, SHA256_DIGEST_LEN), 0, "a changed value kept the fingerprint");
        /* An explicit default is the same configuration. */
        cr_assert_eq(memcmp(a->fingerprint, d->fingerprint, SHA256_DIGEST_LEN), 0);
}

Test(config, empty_file_equals_builtin) {
        _cleanup_config_ Config *a = parse_ok(NULL);
        _cleanup_config_ Config *b = parse_ok("{}");
        cr_assert_eq(memcmp(a->fingerprint, b->fingerprint, SHA256_DIGEST_LEN), 0);
}

/* Which literal env values lazaretctl warns about (lazaret.conf(5), env). */
Test(config, literal_secret_names) {
        _cleanup_config_ Config *c = parse_ok(
                "{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"env\": {"
                "\"API_KEY\": \"v\", \"apiKey\": \"v\", \"SSH_KEYS\": \"v\", \"KEY\": \"v\", \"GPG_KEY_ID\": \"v\", "
                "\"STRIPE_KEY\": \"v\", \"gh_token\": \"v\", \"DB_PASSWD\": \"v\", \"X_AUTH\": \"v\", "
                "\"KEYBOARD\": \"v\", \"XKB_KEYMAP\": \"v\", \"KEYSTONE_URL\": \"v\", \"LANG\": \"C\", "
                "\"FROM_HOST_KEY\": \"env:HOME\", \"EMPTY_KEY\": \"\"}}}}");
        _cleanup_strv_free_ char **names = NULL;
        const char *const want[] = {
                "dev.API_KEY", "dev.DB_PASSWD", "dev.GPG_KEY_ID", "dev.KEY", "dev.SSH_KEYS", "dev.STRIPE_KEY",
                "dev.X_AUTH", "dev.apiKey", "dev.gh_token",
        };

        cr_assert_eq(config_literal_secrets(c, &names), 0);
        cr_assert_eq(strv_length(names), ELEMENTSOF(want), "%zu names", strv_length(names));
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                cr_assert_str_eq(names[i], want[i]);
}

Test(config, canonical_encoding_is_sorted_and_complete) {
        _cleanup_config_ Config *c = parse_ok("{\"profiles\": {\"zz\": {\"image\": \"builtin:default\"}}}");
        _cleanup_free_ char *j = NULL;
        char hex[SHA256_HEX_LEN + 1];
        uint8_t d[SHA256_DIGEST_LEN];

        cr_assert_eq(config_canonical_json(c, &j), 0);
        cr_assert_not_null(strstr(j, "{\"data_root\":\"/nonexistent-lazaret-unit/share/lazaret\",\"default_profile\":\"default\",\"escalation\":{\"auto_approve\":[],\"enabled\":true,\"timeout_s\":300},\"format\":\"lazaret-config/1\",\"network\":{\"allow\":[],\"deny\":[]},\"profiles\":{\"default\":{"), "%s", j);
        cr_assert_not_null(strstr(j, "\"zz\":{\"allow_egress\":[],\"command\":null,\"deny_egress\":[],\"directfs\":true,\"env\":{},\"image\":\"builtin:default\",\"isolate_ignored\":true,\"limits\":{\"address_space\":17179869184,\"cpu_weight\":100,\"memory_high\":6442450944,\"memory_max\":8589934592,\"processes\":1024,\"root_size\":4294967296,\"tasks_max\":4096,\"tmp_size\":1073741824},\"persistent_dirs\":[],\"volumes\":[]}}"), "%s", j);
        /* The runtime section is last, and absent means null. */
        cr_assert_not_null(strstr(j, "},\"runtime\":{\"runsc\":null}}"), "%s", j);
        sha256_buf(j, strlen(j), d);
        cr_assert_eq(memcmp(d, c->fingerprint, SHA256_DIGEST_LEN), 0);
        cr_assert_eq(strlen(config_fingerprint_hex(c, hex)), SHA256_HEX_LEN);
}

/*
 * The canonical encoder (config-encode.c) emits fixed bytes. These were
 * written by the json-c serialiser it replaced, so a configuration keeps its
 * fingerprint across that change: every escape json-c used (quote,
 * backslash, \b \f \n \r \t, \u00xx for other control characters, the slash
 * and DEL and UTF-8 as they are), every default, sorted env and profiles,
 * unresolvable programs as null.
 */
static const char known_config[] =
        "{\n"
        "  \"data_root\": \"~/lz\",\n"
        "  \"default_profile\": \"dev\",\n"
        "  \"network\": { \"allow\": [\"10.20.0.0/16\", \"8.8.8.8/32\"], \"deny\": [\"203.0.113.0/24\"] },\n"
        "  \"escalation\": { \"enabled\": false, \"timeout_s\": 60,\n"
        "    \"auto_approve\": [ {\"argv\": [\"/nonexistent-lazaret-unit/make\", \"test\"]},\n"
        "                      {\"argv\": [\"/nonexistent-lazaret-unit/cargo\", \"build\"], \"trailing_args\": true} ] "
        "},\n"
        "  \"profiles\": {\n"
        "    \"dev\": { \"image\": \"oci:{profile_dir}/image:v2\", \"command\": [\"/bin/bash\", \"-l\", \"q\\\"b\\\\s/t"
        "\\tn\\nr\\rb\\bf\\fc\\u0001\\u001fd\\u007f\\u00e9\\u20ac\\ud83d\\ude00\"],\n"
        "      \"persistent_dirs\": [\"/usr\", \"/home/agent/\"], \"allow_egress\": [\"192.168.7.0/24\"],\n"
        "      \"deny_egress\": [\"198.51.100.0/24\"], \"env\": {\"ZED\": \"z\", \"EDITOR\": \"vi\", \"TOKEN\": \"env:G"
        "H_TOKEN\", \"EMPTY\": \"\"},\n"
        "      \"volumes\": [ {\"host\": \"~/.cache/pip\", \"container\": \"/root/.cache/pip\", \"mode\": \"rw\"},\n"
        "                   {\"host\": \"{domain_dir}/extra\", \"container\": \"/extra\", \"force\": true} ],\n"
        "      \"isolate_ignored\": false, \"directfs\": false,\n"
        "      \"limits\": {\"memory_max\": \"infinity\", \"memory_high\": \"12G\", \"tasks_max\": \"infinity\", \"proc"
        "esses\": \"infinity\", \"cpu_weight\": 7, \"tmp_size\": \"3M\", \"address_space\": 68719476736} },\n"
        "    \"ci_runner\": { \"image\": \"builtin:default\" }\n"
        "  }\n"
        "}\n";

static const char known_canonical[] =
        "{\"data_root\":\"/home/u/lz\",\"default_profile\":\"dev\",\"escalation\":{\"auto_approve\":[{\"argv\":[\"/no"
        "nexistent-lazaret-unit/make\",\"test\"],\"program\":null,\"trailing_args\":false},{\"argv\":[\"/nonexistent-"
        "lazaret-unit/cargo\",\"build\"],\"program\":null,\"trailing_args\":true}],\"enabled\":false,\"timeout_s\":60"
        "},\"format\":\"lazaret-config/1\",\"network\":{\"allow\":[\"10.20.0.0/16\",\"8.8.8.8/32\"],\"deny\":[\"203.0"
        ".113.0/24\"]},\"profiles\":{\"ci_runner\":{\"allow_egress\":[],\"command\":null,\"deny_egress\":[],\"directf"
        "s\":true,\"env\":{},\"image\":\"builtin:default\",\"isolate_ignored\":true,\"limits\":{\"address_space\":171"
        "79869184,\"cpu_weight\":100,\"memory_high\":6442450944,\"memory_max\":8589934592,\"processes\":1024,\"root_s"
        "ize\":4294967296,\"tasks_max\":4096,\"tmp_size\":1073741824},\"persistent_dirs\":[],\"volumes\":[]},\"defaul"
        "t\":{\"allow_egress\":[],\"command\":null,\"deny_egress\":[],\"directfs\":true,\"env\":{},\"image\":\"builti"
        "n:default\",\"isolate_ignored\":true,\"limits\":{\"address_space\":17179869184,\"cpu_weight\":100,\"memory_h"
        "igh\":6442450944,\"memory_max\":8589934592,\"processes\":1024,\"root_size\":4294967296,\"tasks_max\":4096,\""
        "tmp_size\":1073741824},\"persistent_dirs\":[\"/usr\",\"/etc\",\"/var/lib\",\"/root\",\"/opt\"],\"volumes\":[]},"
        "\"dev\":{\"allow_egress\":[\"192.168.7.0/24\"],\"command\":[\"/bin/bash\",\"-l\",\"q\\\"b\\\\s/t\\tn\\nr\\rb"
        "\\bf\\fc\\u0001\\u001fd\177\303\251\342\202\254\360\237\230\200\"],\"deny_egress\":[\"198.51.100.0/24\"],\"d"
        "irectfs\":false,\"env\":{\"EDITOR\":\"vi\",\"EMPTY\":\"\",\"TOKEN\":\"env:GH_TOKEN\",\"ZED\":\"z\"},\"image"
        "\":\"oci:{profile_dir}/image:v2\",\"isolate_ignored\":false,\"limits\":{\"address_space\":68719476736,\"cpu_"
        "weight\":7,\"memory_high\":12884901888,\"memory_max\":\"infinity\",\"processes\":\"infinity\",\"root_size\":"
        "4294967296,\"tasks_max\":\"infinity\",\"tmp_size\":3145728},\"persistent_dirs\":[\"/usr\",\"/home/agent\"],"
        "\"volumes\":[{\"container\":\"/root/.cache/pip\",\"force\":false,\"host\":\"~/.cache/pip\",\"mode\":\"rw\"},"
        "{\"container\":\"/extra\",\"force\":true,\"host\":\"{domain_dir}/extra\",\"mode\":\"ro\"}]}},\"runtime\":{\""
        "runsc\":null}}";

static const char builtin_canonical[] =
        "{\"data_root\":\"/nonexistent-lazaret-unit/share/lazaret\",\"default_profile\":\"default\",\"escalation\":{"
        "\"auto_approve\":[],\"enabled\":true,\"timeout_s\":300},\"format\":\"lazaret-config/1\",\"network\":{\"allow"
        "\":[],\"deny\":[]},\"profiles\":{\"default\":{\"allow_egress\":[],\"command\":null,\"deny_egress\":[],\"dire"
        "ctfs\":true,\"env\":{},\"image\":\"builtin:default\",\"isolate_ignored\":true,\"limits\":{\"address_space\":"
        "17179869184,\"cpu_weight\":100,\"memory_high\":6442450944,\"memory_max\":8589934592,\"processes\":1024,\"roo"
        "t_size\":4294967296,\"tasks_max\":4096,\"tmp_size\":1073741824},\"persistent_dirs\":[\"/usr\",\"/etc\",\"/var/lib\",\"/ro"
        "ot\",\"/opt\"],\"volumes\":[]}},\"runtime\":{\"runsc\":null}}";

Test(config, canonical_encoding_fixed_bytes) {
        _cleanup_config_ Config *c = parse_ok(known_config), *d = parse_ok(NULL);
        _cleanup_free_ char *j = NULL, *k = NULL;
        char hex[SHA256_HEX_LEN + 1];

        cr_assert_eq(config_canonical_json(c, &j), 0);
        cr_assert_str_eq(j, known_canonical);
        cr_assert_str_eq(config_fingerprint_hex(c, hex), "c3704e19bb6562dddea3708b2a3ca27bc8680c623006035c347c933f668bb0ea");
        cr_assert_eq(config_canonical_json(d, &k), 0);
        cr_assert_str_eq(k, builtin_canonical);
        cr_assert_str_eq(config_fingerprint_hex(d, hex), "8e5fa2310ca6bae24b3c6138d606f52fabeb7cfe8dfdea258cad4f8fa17c52c7");
}

Test(config, profile_can_replace_builtin_default) {
        _cleanup_config_ Config *c = parse_ok("{\"profiles\": {\"default\": {\"image\": \"oci:/x\"}}}");
        const Profile *p = config_find_profile(c, "default");
        cr_assert_eq(c->n_profiles, 1);
        cr_assert_not(p->builtin);
        cr_assert_eq(p->image.kind, IMAGE_OCI_LAYOUT);
}

Test(config, names) {
        cr_assert(profile_name_is_valid("ab"));
        cr_assert(profile_name_is_valid("my-agent_2"));
        cr_assert(profile_name_is_valid("abcdefghijklmnopqrstuvwxyz012345"));
        cr_assert_not(profile_name_is_valid("abcdefghijklmnopqrstuvwxyz0123456"));
        cr_assert_not(profile_name_is_valid("a"));
        cr_assert_not(profile_name_is_valid("A1"));
        cr_assert_not(profile_name_is_valid("a b"));
        cr_assert_not(profile_name_is_valid("a;b"));
        cr_assert_not(profile_name_is_valid(""));
        cr_assert(env_name_is_valid("_A1"));
        cr_assert_not(env_name_is_valid("A-B"));
        cr_assert_not(env_name_is_valid("A=B"));
}

/* An auto-approve rule records where its program resolved; that is fingerprinted. */
Test(config, rule_program_resolution_is_fingerprinted) {
        _cleanup_config_ Config *a = parse_ok("{\"escalation\": {\"auto_approve\": [{\"argv\": [\"/nonexistent-lazaret-unit/tool\"]}]}}");
        _cleanup_free_ char *j = NULL, *real = realpath("/bin/true", NULL);
        _cleanup_config_ Config *b = parse_ok("{\"escalation\": {\"auto_approve\": [{\"argv\": [\"/bin/true\"]}]}}");

        cr_assert_null(a->auto_approve[0].program);
        cr_assert_eq(config_canonical_json(a, &j), 0);
        cr_assert_not_null(strstr(j, "{\"argv\":[\"/nonexistent-lazaret-unit/tool\"],\"program\":null,\"trailing_args\":false}"), "%s", j);
        cr_assert_not_null(real);
        cr_assert_str_eq(b->auto_approve[0].program, real);
}

/* ----------------------------------------------------------------- runtime */

/*
 * Refused with exactly "FILE: runtime.runsc: want": a path's shape when the
 * document is parsed, the file it names when the parsed document is resolved.
 */
static void runsc_refused(const char *value, const char *want) {
        _cleanup_free_ char *text = NULL, *err = NULL, *full = NULL;
        _cleanup_config_ Config *c = NULL;
        int r;

        cr_assert(asprintf(&text, "{\"runtime\": {\"runsc\": \"%s\"}}", value) > 0);
        r = config_parse(text, strlen(text), FILE_NAME, &env, &c, &err);
        if (r >= 0) {
                cr_assert_null(err);
                r = config_resolve(c, &err);
                cr_assert_not(c->resolved);
        } else
                cr_assert_null(c);
        cr_assert_lt(r, 0, "accepted: %s", text);
        cr_assert(asprintf(&full, FILE_NAME ": runtime.runsc: %s", want) > 0);
        cr_assert_str_eq(err, full);
}

/*
 * A scratch directory whose parents are all trusted: below the build tree
 * (meson passes it), never below the world-writable /tmp.
 */
static char *trusted_scratch(void) {
        const char *base = trusted_scratch_base();
        char *p;

        cr_assert_not_null(base, "neither the build tree nor $HOME has only trusted parents");
        cr_assert(asprintf(&p, "%s/runsc-scratch-XXXXXX", base) > 0);
        cr_assert_not_null(mkdtemp(p));
        chmod(p, 0755);
        return p;
}

static void write_exec(const char *path, mode_t mode) {
        FILE *f = fopen(path, "we");
        cr_assert_not_null(f);
        fputs("#!/bin/true\n", f);
        fclose(f);
        cr_assert_eq(chmod(path, mode), 0);
}

#define RUNSC_RULE                                                                                          \
        "runsc and every directory above it must belong to root or to you and be writable by nobody else " \
        "(a sticky directory such as /tmp excepted)"

Test(config, runtime_runsc_bad_inputs) {
        _cleanup_free_ char *dir = trusted_scratch(), *gw = NULL, *bin = NULL, *msg = NULL, *plain = NULL,
                            *link = NULL, *real_true = realpath("/bin/true", NULL);

        runsc_refused("runsc", "\"runsc\" is not an absolute path");
        runsc_refused("/nonexistent-lazaret-unit/runsc", "\"/nonexistent-lazaret-unit\" does not exist");
        runsc_refused("/usr/bin", "\"/usr/bin\" is not a regular file");
        runsc_refused("/usr/../usr/bin/true", "\"/usr/../usr/bin/true\" contains a \"..\" segment");
        runsc_refused("/tmp", "\"/tmp\" is writable by group or others (mode 1777), who could swap the binary; " RUNSC_RULE);

        /* A group-writable parent. */
        cr_assert(asprintf(&gw, "%s/gw", dir) > 0 && asprintf(&bin, "%s/gw/runsc", dir) > 0);
        cr_assert_eq(mkdir(gw, 0755), 0);
        write_exec(bin, 0755);
        cr_assert_eq(chmod(gw, 0775), 0);
        cr_assert(asprintf(&msg, "\"%s\" is writable by group or others (mode 0775), who could swap the binary; " RUNSC_RULE, gw) > 0);
        runsc_refused(bin, msg);

        /* The same binary once the directory is fixed: accepted, and fingerprinted. */
        cr_assert_eq(chmod(gw, 0755), 0);
        {
                _cleanup_free_ char *text = NULL, *j = NULL;
                cr_assert(asprintf(&text, "{\"runtime\": {\"runsc\": \"%s\"}}", bin) > 0);
                _cleanup_config_ Config *c = parse_ok(text), *d = parse_ok("{}");
                cr_assert_str_eq(c->runsc, bin);
                cr_assert_null(d->runsc);
                cr_assert_neq(memcmp(c->fingerprint, d->fingerprint, SHA256_DIGEST_LEN), 0);
                cr_assert_eq(config_canonical_json(c, &j), 0);
                cr_assert_not_null(strstr(j, "\"runtime\":{\"runsc\":\""), "%s", j);
        }

        /* The binary itself writable by others; not executable; a symlink. */
        cr_assert_eq(chmod(bin, 0757), 0);
        free(msg);
        cr_assert(asprintf(&msg, "\"%s\" is writable by group or others (mode 0757), who could swap the binary; " RUNSC_RULE, bin) > 0);
        runsc_refused(bin, msg);
        cr_assert(asprintf(&plain, "%s/plain", dir) > 0);
        write_exec(plain, 0644);
        free(msg);
        cr_assert(asprintf(&msg, "\"%s\" is not executable", plain) > 0);
        runsc_refused(plain, msg);
        cr_assert_not_null(real_true);
        cr_assert(asprintf(&link, "%s/link", dir) > 0);
        cr_assert_eq(symlink(real_true, link), 0);
        free(msg);
        cr_assert(asprintf(&msg, "\"%s\" is a symbolic link (\"%s\"); name its resolved path \"%s\" instead", link, link, real_true) > 0);
        runsc_refused(link, msg);

        cr_assert_eq(rm_rf(dir), 0);
}

/* An ACL granting write to a named user (system.posix_acl_access, written directly: no setfacl here). */
Test(config, runtime_runsc_acl_refused) {
        _cleanup_free_ char *dir = trusted_scratch(), *sub = NULL, *bin = NULL, *msg = NULL;
        /* version 2; user::rwx, user:65534:rwx, group::r-x, mask::rwx, other::r-x */
        const uint8_t acl[] = {
                2, 0, 0, 0,
                0x01, 0, 7, 0, 0xff, 0xff, 0xff, 0xff,
                0x02, 0, 7, 0, 0xfe, 0xff, 0, 0,
                0x04, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
                0x10, 0, 7, 0, 0xff, 0xff, 0xff, 0xff,
                0x20, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
        };

        cr_assert(asprintf(&sub, "%s/acl", dir) > 0 && asprintf(&bin, "%s/acl/runsc", dir) > 0);
        cr_assert_eq(mkdir(sub, 0755), 0);
        write_exec(bin, 0755);
        if (setxattr(sub, "system.posix_acl_access", acl, sizeof(acl), 0) < 0)
                cr_log_warn("cannot set an ACL on %s (%m): not exercised", sub);
        else {
                cr_assert(asprintf(&msg, "\"%s\" has an ACL that lets ID 65534 write it; " RUNSC_RULE, sub) > 0);
                runsc_refused(bin, msg);
        }
        cr_assert_eq(rm_rf(dir), 0);
}

/* A sticky directory above the binary is a passage (only owners rename there); the binary's own one is not. */
Test(config, runtime_runsc_below_sticky) {
        _cleanup_free_ char *dir = trusted_scratch(), *sticky = NULL, *bin = NULL, *text = NULL;

        cr_assert(asprintf(&sticky, "%s/sticky", dir) > 0 && asprintf(&bin, "%s/sticky/runsc", dir) > 0);
        cr_assert_eq(mkdir(sticky, 0755), 0);
        cr_assert_eq(chmod(sticky, 01777), 0);
        write_exec(bin, 0755);
        cr_assert(asprintf(&text, "{\"runtime\": {\"runsc\": \"%s\"}}", bin) > 0);
        {
                _cleanup_config_ Config *c = parse_ok(text);
                cr_assert_str_eq(c->runsc, bin);
        }
        cr_assert_eq(chmod(sticky, 01775), 0);  /* still sticky: group write is the same passage */
        {
                _cleanup_config_ Config *c = parse_ok(text);
                cr_assert_str_eq(c->runsc, bin);
        }
        cr_assert_eq(rm_rf(dir), 0);
}

/* The file system is asked only once the document is valid: its own mistakes come first. */
Test(config, document_errors_before_file_checks) {
        static const char text[] = "{\"runtime\": {\"runsc\": \"/tmp\"}, \"profiles\": {\"Dev\": {\"image\": \"builtin:default\"}}}";
        _cleanup_free_ char *err = NULL;
        _cleanup_config_ Config *c = NULL;

        cr_assert_lt(config_parse(text, strlen(text), FILE_NAME, &env, &c, &err), 0);
        cr_assert_str_eq(err, FILE_NAME ": profiles.Dev: invalid profile name; names are 2 to 32 characters of a-z, 0-9, '_' and '-'");
}

Test(config, runtime_section_shape) {
        _cleanup_config_ Config *c = parse_ok("{\"runtime\": {}}"), *d = NULL;
        cr_assert_null(c->runsc);
        d = parse_ok("{\"runtime\": {\"runsc\": \"/usr/bin/true\"}}");
        cr_assert_str_eq(d->runsc, "/usr/bin/true");
}

Test(config, directfs_per_profile_default_true) {
        _cleanup_config_ Config *a = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\"}, \"slow\": {\"image\": \"builtin:default\", \"directfs\": false}}}");
        _cleanup_config_ Config *b = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"directfs\": true}, \"slow\": {\"image\": \"builtin:default\", \"directfs\": false}}}");
        _cleanup_config_ Config *d = parse_ok(NULL);
        _cleanup_free_ char *j = NULL;

        cr_assert(config_find_profile(a, "dev")->directfs);
        cr_assert_not(config_find_profile(a, "slow")->directfs);
        cr_assert(config_find_profile(d, "default")->directfs);
        /* An explicit default is the same configuration; the setting is in the fingerprint. */
        cr_assert_eq(memcmp(a->fingerprint, b->fingerprint, SHA256_DIGEST_LEN), 0);
        cr_assert_eq(config_canonical_json(a, &j), 0);
        cr_assert_not_null(strstr(j, "\"slow\":{\"allow_egress\":[],\"command\":null,\"deny_egress\":[],\"directfs\":false,"), "%s", j);
}

Test(config, git_fsmonitor_per_profile_default_true) {
        _cleanup_config_ Config *a = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\"}, \"scan\": {\"image\": \"builtin:default\", \"git_fsmonitor\": false}}}");
        _cleanup_config_ Config *b = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"git_fsmonitor\": true}, \"scan\": {\"image\": \"builtin:default\", \"git_fsmonitor\": false}}}");
        _cleanup_config_ Config *c = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\"}, \"scan\": {\"image\": \"builtin:default\"}}}");
        _cleanup_config_ Config *d = parse_ok(NULL);
        _cleanup_free_ char *j = NULL;

        cr_assert(config_find_profile(a, "dev")->git_fsmonitor);
        cr_assert_not(config_find_profile(a, "scan")->git_fsmonitor);
        cr_assert(config_find_profile(d, "default")->git_fsmonitor);
        /* An explicit default is the same configuration; turning it off is not. */
        cr_assert_eq(memcmp(a->fingerprint, b->fingerprint, SHA256_DIGEST_LEN), 0);
        cr_assert_neq(memcmp(a->fingerprint, c->fingerprint, SHA256_DIGEST_LEN), 0);
        cr_assert_eq(config_canonical_json(a, &j), 0);
        cr_assert_not_null(strstr(j, "\"env\":{},\"git_fsmonitor\":false,\"image\""), "%s", j);
        /* On, it is left out: the fingerprints of earlier configurations stay. */
        cr_assert_null(strstr(strstr(j, "\"dev\":"), "\"git_fsmonitor\":true"), "%s", j);
}

Test(config, limits_defaults_and_settings) {
        _cleanup_config_ Config *a = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\"}, "
                                              "\"small\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"2G\", "
                                              "\"tasks_max\": 512, \"cpu_weight\": 50, \"tmp_size\": 8388608, \"processes\": 64, "
                                              "\"address_space\": \"infinity\", \"root_size\": \"16M\"}}, "
                                              "\"big\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"infinity\", "
                                              "\"memory_high\": \"12G\", \"tasks_max\": \"infinity\", \"processes\": \"infinity\"}}}}");
        _cleanup_config_ Config *b = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {"
                                              "\"memory_max\": \"8G\", \"memory_high\": \"6G\", \"tasks_max\": 4096, \"cpu_weight\": 100, "
                                              "\"tmp_size\": \"1024M\", \"processes\": 1024, \"address_space\": 17179869184}}, "
                                              "\"small\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"2048M\", "
                                              "\"memory_high\": \"1536M\", \"tasks_max\": 512, \"cpu_weight\": 50, \"tmp_size\": \"8M\", "
                                              "\"processes\": 64, \"address_space\": \"infinity\", \"root_size\": 16777216}}, "
                                              "\"big\": {\"image\": \"builtin:default\", \"limits\": {\"memory_max\": \"infinity\", "
                                              "\"memory_high\": \"12G\", \"tasks_max\": \"infinity\", \"processes\": \"infinity\"}}}}");
        _cleanup_config_ Config *d = parse_ok(NULL);
        _cleanup_free_ char *j = NULL;
        const Profile *p;
        Limits def;

        limits_default(&def);
        cr_assert_eq(def.memory_max, 8ULL << 30);
        cr_assert_eq(def.memory_high, 6ULL << 30);
        cr_assert_eq(memcmp(&config_find_profile(d, "default")->limits, &def, sizeof(def)), 0);
        cr_assert_eq(memcmp(&config_find_profile(a, "dev")->limits, &def, sizeof(def)), 0);

        p = config_find_profile(a, "small");
        cr_assert_eq(p->limits.memory_max, 2ULL << 30);
        cr_assert_eq(p->limits.memory_high, 1536ULL << 20);   /* 3/4 of memory_max when not given */
        cr_assert_eq(p->limits.tasks_max, 512);
        cr_assert_eq(p->limits.cpu_weight, 50);
        cr_assert_eq(p->limits.tmp_size, 8ULL << 20);
        cr_assert_eq(p->limits.processes, 64);
        cr_assert_eq(p->limits.address_space, LIMIT_INFINITY);
        cr_assert_eq(p->limits.root_size, 16ULL << 20);

        p = config_find_profile(a, "big");
        cr_assert_eq(p->limits.memory_max, LIMIT_INFINITY);
        cr_assert_eq(p->limits.memory_high, 12ULL << 30);
        cr_assert_eq(p->limits.processes, LIMIT_INFINITY);

        /* Explicit defaults and other spellings of the same numbers are the same configuration. */
        cr_assert_eq(memcmp(a->fingerprint, b->fingerprint, SHA256_DIGEST_LEN), 0);
        cr_assert_eq(config_canonical_json(a, &j), 0);
        cr_assert_not_null(strstr(j, "\"small\":{\"allow_egress\":[],\"command\":null,\"deny_egress\":[],\"directfs\":true,\"env\":{},"
                                     "\"image\":\"builtin:default\",\"isolate_ignored\":true,\"limits\":{\"address_space\":\"infinity\","
                                     "\"cpu_weight\":50,\"memory_high\":1610612736,\"memory_max\":2147483648,\"processes\":64,"
                                     "\"root_size\":16777216,\"tasks_max\":512,\"tmp_size\":8388608},"), "%s", j);
}

Test(config, limits_change_the_fingerprint) {
        _cleanup_config_ Config *a = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\"}}}");
        _cleanup_config_ Config *b = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"limits\": {\"tmp_size\": \"2G\"}}}}");
        cr_assert_neq(memcmp(a->fingerprint, b->fingerprint, SHA256_DIGEST_LEN), 0);
}

Test(config, retention_defaults_settings_and_no_fingerprint) {
        _cleanup_config_ Config *a = parse_ok("{}");
        _cleanup_config_ Config *b = parse_ok("{\"retention\": {\"audit_days\": 7, \"audit_events\": 500, \"generations\": 3}}");

        cr_assert_eq(a->retention.audit_days, RETENTION_AUDIT_DAYS_DEFAULT);
        cr_assert_eq(a->retention.audit_events, RETENTION_AUDIT_EVENTS_DEFAULT);
        cr_assert_eq(a->retention.generations, RETENTION_GENERATIONS_DEFAULT);
        cr_assert_eq(b->retention.audit_days, 7);
        cr_assert_eq(b->retention.audit_events, 500);
        cr_assert_eq(b->retention.generations, 3);
        /* What the store keeps shapes no sandbox: a running Domain is not "configured otherwise" by it. */
        cr_assert_eq(memcmp(a->fingerprint, b->fingerprint, SHA256_DIGEST_LEN), 0);
}

Test(limits, size_parsing_and_formatting) {
        static const struct { const char *in; int r; uint64_t v; const char *out; } t[] = {
                { "0", 0, 0, "0" },
                { "1", 0, 1, "1" },
                { "1000", 0, 1000, "1000" },
                { "1024", 0, 1024, "1K" },
                { "4K", 0, 4096, "4K" },
                { "1536M", 0, 1536ULL << 20, "1536M" },
                { "8G", 0, 8ULL << 30, "8G" },
                { "2T", 0, 2ULL << 40, "2T" },
                { "infinity", 0, LIMIT_INFINITY, "infinity" },
                { "9223372036854775807", 0, INT64_MAX, "9223372036854775807" },
                { "9223372036854775808", -ERANGE, 0, NULL },
                { "8388608T", -ERANGE, 0, NULL },
                { "", -EINVAL, 0, NULL },
                { "G", -EINVAL, 0, NULL },
                { "8g", -EINVAL, 0, NULL },
                { "8GB", -EINVAL, 0, NULL },
                { "8 G", -EINVAL, 0, NULL },
                { "+8", -EINVAL, 0, NULL },
                { "0x10", -EINVAL, 0, NULL },
                { "Infinity", -EINVAL, 0, NULL },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                uint64_t v = 42;
                char buf[LIMIT_STRING_MAX];
                int r = limit_parse_size(t[i].in, &v);
                cr_assert_eq(r, t[i].r, "\"%s\": %d", t[i].in, r);
                if (r < 0) {
                        cr_assert_eq(v, 42, "\"%s\" wrote its output on failure", t[i].in);
                        continue;
                }
                cr_assert_eq(v, t[i].v, "\"%s\"", t[i].in);
                cr_assert_str_eq(limit_format_size(v, buf), t[i].out);
        }
}

Test(config, protected_paths) {
        _cleanup_config_ Config *a = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", "
                                              "\"protected_paths\": [\"tools/deploy.sh\", \".tool-versions\", \"!.vscode\", \"/Makefile/\"]}}}");
        _cleanup_config_ Config *b = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\"}}}");
        _cleanup_config_ Config *c = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"protected_paths\": []}}}");
        const Profile *p = config_find_profile(a, "dev");

        cr_assert_eq(strv_length(p->protected_paths), 4);
        cr_assert_str_eq(p->protected_paths[0], "/tools/deploy.sh");
        cr_assert_str_eq(p->protected_paths[1], ".tool-versions");
        cr_assert_str_eq(p->protected_paths[2], "!.vscode");
        cr_assert_str_eq(p->protected_paths[3], "/Makefile");
        cr_assert_eq(strv_length(config_find_profile(b, "dev")->protected_paths), 0);
        /* The list is part of the configuration; an empty one is the default. */
        cr_assert_neq(memcmp(a->fingerprint, b->fingerprint, SHA256_DIGEST_LEN), 0);
        cr_assert_eq(memcmp(b->fingerprint, c->fingerprint, SHA256_DIGEST_LEN), 0);
}

/* publish_ports: parsed in order; in the fingerprint only when set, as HOST_PORT:PORT. */
Test(config, publish_ports) {
        _cleanup_config_ Config *a = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\"}}}");
        _cleanup_config_ Config *b = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"publish_ports\": []}}}");
        _cleanup_config_ Config *c = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", "
                                              "\"publish_ports\": [\"8080\", \"13000:3000\"]}}}");
        _cleanup_config_ Config *d = parse_ok("{\"profiles\": {\"dev\": {\"image\": \"builtin:default\", "
                                              "\"publish_ports\": [\"8080:8080\", \"13000:3000\"]}}}");
        const Profile *p = NULL;

        for (size_t i = 0; i < c->n_profiles; i++)
                if (strcmp(c->profiles[i].name, "dev") == 0)
                        p = &c->profiles[i];
        cr_assert_not_null(p);
        cr_assert_eq(p->n_publish_ports, 2);
        cr_assert_eq(p->publish_ports[0].host_port, 8080);
        cr_assert_eq(p->publish_ports[0].guest_port, 8080);
        cr_assert_eq(p->publish_ports[1].host_port, 13000);
        cr_assert_eq(p->publish_ports[1].guest_port, 3000);
        cr_assert_eq(memcmp(a->fingerprint, b->fingerprint, sizeof(a->fingerprint)), 0);
        cr_assert_neq(memcmp(a->fingerprint, c->fingerprint, sizeof(a->fingerprint)), 0);
        cr_assert_eq(memcmp(c->fingerprint, d->fingerprint, sizeof(c->fingerprint)), 0);
}
