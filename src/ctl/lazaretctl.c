/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl: the thin client. Each verb does one thing; the ones that talk
 * to a running Domain make one D-Bus call. Human output by default, --json
 * for machines.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "bus-util.h"
#include "changes.h"
#include "cleanup.h"
#include "config.h"
#include "ctl.h"
#include "domain.h"
#include "domains.h"
#include "image.h"
#include "json-util.h"
#include "launch.h"
#include "macro.h"
#include "strv.h"
#include "state.h"
#include "parse-util.h"
#include "unshare.h"

const char *arg_config = NULL;
const char *arg_profile = NULL;
const char *arg_workspace = NULL;
bool arg_json = false;
HostContext arg_host = {};
/* The first of --source/--force given, if any: options of "image" only (--force also of "changes"). */
static const char *arg_image_option = NULL;
static bool arg_yes_given = false;
/* The first of --diff/--all/--git-control/--ignored given, if any: options of "changes" only. */
static const char *arg_changes_option = NULL;
static bool arg_source_given = false;
/* --lines/-n, of "log" only: how many of the last lines to show, 0 for all. */
static const char *arg_lines_option = NULL;
static const char *arg_scope_option = NULL;

typedef enum VerbFlags {
        VERB_CONFIG = 1 << 0,           /* needs the validated configuration */
        VERB_COMMAND = 1 << 1,          /* arguments after the verb's options are a command line */
        VERB_IMAGE_OPTIONS = 1 << 2,    /* takes --source and --force */
        VERB_YES = 1 << 3,              /* takes --yes */
        VERB_CHANGES_OPTIONS = 1 << 4,  /* takes --diff, --all, --force and --git-control */
        VERB_LINES = 1 << 5,            /* takes --lines */
        VERB_EGRESS_SCOPE = 1 << 6,     /* takes --once, --domain, --keep */
} VerbFlags;

typedef struct Verb {
        const char *name;
        unsigned min_args, max_args;   /* including the verb itself */
        VerbFlags flags;
        int (*dispatch)(int argc, char *argv[], const Config *config);
        const char *synopsis;
} Verb;

static int help(void);

int ctl_json_failed(int r) {
        fprintf(stderr, "Cannot build the JSON output: %s\n", strerror(-r));
        return r;
}

int ctl_print_json(json_object *o) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = json_to_string(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, &s);
        if (r < 0)
                return ctl_json_failed(r);
        puts(s);
        return 0;
}

/* Loads and validates the configuration, printing the message on failure. */
/* A configuration others may read should not hold secrets: warn, once per run. */
static void warn_readable_secrets(const Config *c) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *list = NULL;

        if (!c->path || (c->mode & 0044) == 0)
                return;
        if (config_literal_secrets(c, &names) < 0 || !names)
                return;
        list = strv_join(names, ", ");
        fprintf(stderr, "Warning: %s is readable by other users and holds literal values for %s; "
                "take them from your environment with \"env:NAME\", or: chmod go-r %s\n",
                c->path, strna(list), c->path);
}

static int load_config(Config **ret) {
        _cleanup_free_ char *error = NULL;
        int r;

        r = config_load(&arg_host, arg_config, ret, &error);
        if (r < 0)
                fprintf(stderr, "%s\n", error ?: strerror(-r));
        else
                warn_readable_secrets(*ret);
        return r;
}

static int make_domain(const Config *c, const char *profile, Domain **ret) {
        _cleanup_free_ char *error = NULL;
        int r;

        r = domain_new(c, &arg_host, profile, arg_workspace, ret, &error);
        if (r < 0)
                fprintf(stderr, "%s\n", error ?: strerror(-r));
        return r;
}

/* ------------------------------------------------------------ domain-id */

static int verb_domain_id(int argc, char *argv[], const Config *c) {
        _cleanup_domain_ Domain *d = NULL;
        int r;

        r = make_domain(c, arg_profile, &d);
        if (r < 0)
                return r;

        if (arg_json) {
                _cleanup_json_ json_object *o = json_object_new_object();
                r = json_add_string(o, "domain_id", d->id);
                if (r >= 0)
                        r = json_add_string(o, "profile", d->profile->name);
                if (r >= 0)
                        r = json_add_string(o, "workspace", d->workspace);
                return r < 0 ? ctl_json_failed(r) : ctl_print_json(o);
        } else
                puts(d->id);
        return 0;
}

/* --------------------------------------------------------- config check */

static int add_cidrs(json_object *o, const char *key, const CidrList *l) {
        _cleanup_json_ json_object *a = json_object_new_array();
        char b[CIDR_STRING_MAX];
        int r;

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++) {
                r = json_append_string(a, cidr_to_string(&l->items[i], b));
                if (r < 0)
                        return r;
        }
        return json_add(o, key, TAKE_PTR(a));
}

static int profile_json(const Profile *p, const Domain *d, const char *img_dir, const char *tag,
                        const ResolvedVolume *v, size_t n, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object(), *env = json_object_new_object(),
                                   *vols = json_object_new_array();
        int r;

        if (!o || !env || !vols)
                return -ENOMEM;
        r = json_add_string(o, "name", p->name);
        if (r >= 0)
                r = json_add_bool(o, "builtin", p->builtin);
        if (r >= 0)
                r = json_add_string(o, "domain_id", d->id);
        if (r >= 0)
                r = json_add_string(o, "image", p->image_raw);
        if (r >= 0)
                r = json_add_string(o, "image_layout", img_dir);
        if (r >= 0)
                r = json_add_string(o, "image_tag", tag);
        if (r >= 0)
                r = p->command ? json_add_strv(o, "command", (const char *const *) p->command) : json_add_null(o, "command");
        if (r >= 0)
                r = json_add_strv(o, "persistent_dirs", (const char *const *) p->persistent_dirs);
        if (r >= 0)
                r = json_add_bool(o, "isolate_ignored", p->isolate_ignored);
        if (r >= 0)
                r = add_cidrs(o, "allow_egress", &p->allow_egress);
        if (r >= 0)
                r = add_cidrs(o, "deny_egress", &p->deny_egress);
        for (size_t i = 0; r >= 0 && i < p->n_env; i++) {
                _cleanup_json_ json_object *e = json_object_new_object();
                r = json_add_string(e, p->env[i].from_host ? "from_host" : "value", p->env[i].value);
                if (r >= 0)
                        r = json_add(env, p->env[i].name, TAKE_PTR(e));
        }
        if (r >= 0)
                r = json_add(o, "env", TAKE_PTR(env));
        for (size_t i = 0; r >= 0 && i < n; i++) {
                _cleanup_json_ json_object *jv = json_object_new_object();
                r = json_add_string(jv, "host", p->volumes[i].host);
                if (r >= 0)
                        r = json_add_string(jv, "host_resolved", v[i].host);
                if (r >= 0)
                        r = json_add_string(jv, "container", v[i].container);
                if (r >= 0)
                        r = json_add_string(jv, "mode", volume_mode_to_string(v[i].mode));
                if (r >= 0)
                        r = json_add_bool(jv, "force", v[i].force);
                if (r >= 0)
                        r = json_append(vols, TAKE_PTR(jv));
        }
        if (r >= 0)
                r = json_add(o, "volumes", TAKE_PTR(vols));
        if (r >= 0) {
                _cleanup_json_ json_object *ports = json_object_new_array();

                if (!ports)
                        r = -ENOMEM;
                for (size_t i = 0; r >= 0 && i < p->n_publish_ports; i++) {
                        char b[PORT_FORWARD_STRING_MAX];

                        port_forward_format(&p->publish_ports[i], b);
                        r = json_append_string(ports, b);
                }
                if (r >= 0)
                        r = json_add(o, "publish_ports", TAKE_PTR(ports));
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static void print_cidrs(int width, const char *label, const CidrList *l) {
        char b[CIDR_STRING_MAX];

        printf("%-*s", width, label);
        if (l->n == 0)
                fputs("(none)", stdout);
        for (size_t i = 0; i < l->n; i++)
                printf("%s%s", i ? " " : "", cidr_to_string(&l->items[i], b));
        putchar('\n');
}

/* Resolves one profile for the workspace; on failure prints why and returns < 0. */
static int check_profile(const Config *c, const Profile *p, json_object *jprofiles) {
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *error = NULL, *img_dir = NULL, *tag = NULL;
        ResolvedVolume *v = NULL;
        size_t n = 0;
        int r;

        r = make_domain(c, p->name, &d);
        if (r < 0)
                return r;
        r = domain_resolve_mounts(d, false, &v, &n, NULL, &error);
        if (r >= 0)
                r = domain_resolve_image(d, &img_dir, &tag, &error);
        if (r < 0) {
                fprintf(stderr, "%s\n", error ?: strerror(-r));
                resolved_volumes_free(v, n);
                return r;
        }

        if (arg_json) {
                json_object *o = NULL;
                r = profile_json(p, d, img_dir, tag, v, n, &o);
                if (r >= 0)
                        r = json_append(jprofiles, o);
                if (r < 0) {
                        resolved_volumes_free(v, n);
                        return ctl_json_failed(r);
                }
        } else {
                printf("\nProfile %s%s%s\n", p->name, p->builtin ? " (built-in)" : "",
                       streq(p->name, c->default_profile) ? " [default]" : "");
                printf("  %-18s%s\n", "Domain ID:", d->id);
                printf("  %-18s%s (layout %s, tag %s)\n", "Image:", p->image_raw, img_dir, tag);
                printf("  %-18s", "Command:");
                if (!p->command)
                        fputs("(login shell)", stdout);
                STRV_FOREACH(s, p->command)
                        printf("%s%s", s == p->command ? "" : " ", *s);
                putchar('\n');
                printf("  %-18s", "Persistent dirs:");
                if (!p->persistent_dirs || !p->persistent_dirs[0])
                        fputs("(none)", stdout);
                STRV_FOREACH(s, p->persistent_dirs)
                        printf("%s%s", s == p->persistent_dirs ? "" : " ", *s);
                putchar('\n');
                printf("  %-18s%s\n", "Isolate ignored:", p->isolate_ignored ? "yes" : "no");
                print_cidrs(20, "  Allow egress:", &p->allow_egress);
                print_cidrs(20, "  Deny egress:", &p->deny_egress);
                for (size_t i = 0; i < p->n_publish_ports; i++)
                        printf("  %-18s" PORT_HOST_ADDRESS ":%u -> sandbox port %u\n", i == 0 ? "Published ports:" : "",
                               (unsigned) p->publish_ports[i].host_port, (unsigned) p->publish_ports[i].guest_port);
                for (size_t i = 0; i < p->n_env; i++) {
                        if (p->env[i].from_host)
                                printf("  %-18s%s from host $%s\n", i == 0 ? "Environment:" : "", p->env[i].name, p->env[i].value);
                        else
                                printf("  %-18s%s=%s\n", i == 0 ? "Environment:" : "", p->env[i].name, p->env[i].value);
                }
                for (size_t i = 0; i < n; i++)
                        printf("  %-18s%s -> %s (%s%s)\n", i == 0 ? "Volumes:" : "", v[i].host, v[i].container,
                               volume_mode_to_string(v[i].mode), v[i].force ? ", forced" : "");
        }
        resolved_volumes_free(v, n);
        return 0;
}

/* The top of config check's --json output; *ret_profiles is the array of root the profiles go to. */
static int config_json(const Config *c, const char *fp, const char *ws, json_object **ret, json_object **ret_profiles) {
        _cleanup_json_ json_object *root = json_object_new_object(), *net = json_object_new_object(),
                                   *esc = json_object_new_object(), *rules = json_object_new_array(),
                                   *profiles = json_object_new_array();
        json_object *p;
        int r;

        if (!root || !net || !esc || !rules || !profiles)
                return -ENOMEM;
        r = c->path ? json_add_string(root, "config", c->path) : json_add_null(root, "config");
        if (r >= 0)
                r = json_add_bool(root, "builtin", !c->path);
        if (r >= 0)
                r = json_add_string(root, "fingerprint", fp);
        if (r >= 0)
                r = json_add_string(root, "data_root", c->data_root);
        if (r >= 0)
                r = json_add_string(root, "default_profile", c->default_profile);
        if (r >= 0)
                r = json_add_string(root, "workspace", ws);
        if (r >= 0)
                r = add_cidrs(net, "allow", &c->allow);
        if (r >= 0)
                r = add_cidrs(net, "deny", &c->deny);
        if (r >= 0)
                r = json_add(root, "network", TAKE_PTR(net));
        if (r >= 0)
                r = json_add_bool(esc, "enabled", c->escalation_enabled);
        if (r >= 0)
                r = json_add_int64(esc, "timeout_s", c->escalation_timeout_s);
        for (size_t i = 0; r >= 0 && i < c->n_auto_approve; i++) {
                _cleanup_json_ json_object *o = json_object_new_object();
                r = json_add_strv(o, "argv", (const char *const *) c->auto_approve[i].argv);
                if (r >= 0)
                        r = json_add_bool(o, "trailing_args", c->auto_approve[i].trailing_args);
                if (r >= 0)
                        r = json_append(rules, TAKE_PTR(o));
        }
        if (r >= 0)
                r = json_add(esc, "auto_approve", TAKE_PTR(rules));
        if (r >= 0)
                r = json_add(root, "escalation", TAKE_PTR(esc));
        p = profiles;
        if (r >= 0)
                r = json_add(root, "profiles", TAKE_PTR(profiles));
        if (r < 0)
                return r;
        *ret_profiles = p;
        *ret = TAKE_PTR(root);
        return 0;
}

static int verb_config(int argc, char *argv[], const Config *c) {
        _cleanup_free_ char *defpath = NULL, *ws = NULL, *error = NULL;
        _cleanup_json_ json_object *root = NULL;
        json_object *profiles = NULL;
        char fp[SHA256_HEX_LEN + 1];
        int r, ret = 0;

        if (argc < 2 || !streq(argv[1], "check")) {
                fprintf(stderr, "Unknown config command \"%s\"; the only one is \"config check\".\n", argc >= 2 ? argv[1] : "");
                return -EINVAL;
        }

        if (arg_profile && !config_find_profile(c, arg_profile)) {
                fprintf(stderr, "No profile named \"%s\" in %s.\n", arg_profile, c->path ?: "the built-in configuration");
                return -ENOENT;
        }

        /* The workspace the Domain tokens are resolved against. */
        {
                _cleanup_domain_ Domain *d = NULL;
                r = make_domain(c, NULL, &d);
                if (r < 0)
                        return r;
                ws = strdup(d->workspace);
                if (!ws)
                        return -ENOMEM;
        }
        (void) config_default_path(&arg_host, &defpath);
        config_fingerprint_hex(c, fp);
        {
                _cleanup_strv_free_ char **risky = NULL;
                r = config_escalation_risky_rules(c, &risky);
                if (r < 0)
                        return r;
                STRV_FOREACH(w, risky)
                        fprintf(stderr, "Warning: %s.\n", *w);
        }

        if (arg_json) {
                r = config_json(c, fp, ws, &root, &profiles);
                if (r < 0)
                        return ctl_json_failed(r);
        } else {
                if (c->path)
                        printf("%-20s%s\n", "Configuration:", c->path);
                else
                        printf("%-20sbuilt-in (no file at %s)\n", "Configuration:", strna(defpath));
                printf("%-20s%s\n", "Fingerprint:", fp);
                printf("%-20s%s\n", "Data root:", c->data_root);
                printf("%-20s%s\n", "Default profile:", c->default_profile);
                printf("%-20s%s\n", "Workspace:", ws);
                printf("%-20s%s, timeout %us, %zu auto-approve rule%s\n", "Escalation:",
                       c->escalation_enabled ? "enabled" : "disabled", c->escalation_timeout_s,
                       c->n_auto_approve, c->n_auto_approve == 1 ? "" : "s");
                for (size_t i = 0; i < c->n_auto_approve; i++) {
                        printf("%-20s", "");
                        STRV_FOREACH(s, c->auto_approve[i].argv)
                                printf("%s%s", s == c->auto_approve[i].argv ? "" : " ", *s);
                        puts(c->auto_approve[i].trailing_args ? " [trailing arguments allowed]" : "");
                }
                printf("%-20s", "Network:");
                print_cidrs(6, "allow", &c->allow);
                printf("%-20s", "");
                print_cidrs(6, "deny", &c->deny);
        }

        for (size_t i = 0; i < c->n_profiles; i++) {
                if (arg_profile && !streq(arg_profile, c->profiles[i].name))
                        continue;
                r = check_profile(c, &c->profiles[i], profiles);
                if (r < 0)
                        ret = r;
        }

        if (arg_json && ret >= 0)
                return ctl_print_json(root);
        return ret;
}

static int verb_help(int argc, char *argv[], const Config *c) {
        return help();
}

static const Verb verbs[] = {
        { "help",      1, 1,        0,                                 verb_help,      "help                        Show this help" },
        { "launch",    1, UINT_MAX, VERB_CONFIG | VERB_COMMAND,        verb_launch,    "launch [--] [CMD [ARG...]]  Run a command or a shell in the Domain's sandbox" },
        { "status",    1, 2,        VERB_CONFIG,                       verb_status,    "status [DOMAIN-ID]          Show the state of a Domain" },
        { "list",      1, 1,        0,                                 verb_list,      "list                        List running Domains" },
        { "stop",      1, 2,        VERB_CONFIG,                       verb_stop,      "stop [DOMAIN-ID]            Stop a Domain: end its sessions, tear it down" },
        { "escalations", 1, 3,      VERB_CONFIG,                       verb_escalations, "escalations [list|history|approve ID|deny ID] Host escalation requests: waiting ones, the audit trail" },
        { "ports",     1, 3,        VERB_CONFIG,                       verb_ports,     "ports [list|publish [HOST_PORT:]PORT|unpublish HOST_PORT]\n"
          "                              Sandbox ports published on the host's 127.0.0.1" },
        { "egress",    1, 3,        VERB_CONFIG | VERB_EGRESS_SCOPE,   verb_egress,    "egress [denied|allow RULE [--once|--domain|--keep]|kept|forget RULE]\n"
          "                              Names the sandbox was refused; allow one (once, for the Domain's\n"
          "                              life, or kept in the Domain Store)" },
        { "log",       1, 2,        VERB_CONFIG | VERB_LINES,          verb_log,       "log [DOMAIN-ID]             Show the last lines the Domain's coordinator logged" },
        { "image",     2, 2,        VERB_CONFIG | VERB_IMAGE_OPTIONS,  verb_image,     "image build-default         Build the built-in default image from Debian packages" },
        { "changes",   1, UINT_MAX, VERB_CONFIG | VERB_CHANGES_OPTIONS, verb_changes,  "changes [apply|discard ...|accept-commits] List, apply or discard pending protected-file changes; commits made inside" },
        { "domain-id", 1, 1,        VERB_CONFIG,                       verb_domain_id, "domain-id                   Print the Domain ID of a profile and workspace" },
        { "config",    2, 2,        VERB_CONFIG,                       verb_config,    "config check                Validate the configuration and show resolved profiles" },
        { "unshare",   2, UINT_MAX, VERB_COMMAND,                      verb_unshare,   "unshare [--] CMD [ARG...]   Run a host command in a user namespace mapped like the sandbox's" },
        { "state",     2, 4,        VERB_CONFIG | VERB_YES,            verb_state,     "state list|inspect|verify|reset|gc [DOMAIN-ID] [PATH]\n"
          "                              List, inspect, verify, reset persistent state (a PATH below /workspace:\n"
          "                              the ignored state there); gc unleased lowers and set-aside checkouts'\n"
          "                              state (--yes: do not ask)" },
};

static int help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n\n"
               "Control Lazaret sandboxes for AI coding agents.\n\n"
               "Commands:\n", program_invocation_short_name);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                printf("  %s\n", verbs[i].synopsis);
        printf("\nOptions:\n"
               "  -h --help                   Show this help\n"
               "     --version                Show the version\n"
               "  -c --config=FILE            Read this configuration file\n"
               "                              (default: $LAZARET_CONFIG, else\n"
               "                              $XDG_CONFIG_HOME/lazaret/config.json)\n"
               "  -p --profile=NAME           Use this profile instead of the default one\n"
               "  -w --workspace=DIR          Use this workspace instead of the git top level\n"
               "                              of the current directory\n"
               "     --json                   Print data as JSON\n"
               "     --source=DIR|URL         image build-default: local Debian repository or mirror\n"
               "     --force                  image build-default: rebuild an existing image;\n"
               "                              changes apply: even where the host's file changed\n"
               "     --diff=PATH              changes: show one pending change as a unified diff\n"
               "     --all                    changes apply|discard: every pending change\n"
               "     --git-control            changes apply: also the git control files named\n"
               "     --ignored                changes: list the host paths that ignored state shadows\n"
               "  -n --lines=N|all            log: show the last N lines (default 50) or all kept\n"
               "\nSee the lazaretctl(1) man page for details.\n");
        return 0;
}

enum {
        ARG_VERSION = 0x100,
        ARG_JSON,
        ARG_SOURCE,
        ARG_FORCE,
        ARG_YES,
        ARG_DIFF,
        ARG_ALL,
        ARG_GIT_CONTROL,
        ARG_IGNORED,
        ARG_ONCE,
        ARG_DOMAIN,
        ARG_KEEP,
};

static const struct option options[] = {
        { "help",      no_argument,       NULL, 'h'         },
        { "version",   no_argument,       NULL, ARG_VERSION },
        { "config",    required_argument, NULL, 'c'         },
        { "profile",   required_argument, NULL, 'p'         },
        { "workspace", required_argument, NULL, 'w'         },
        { "json",      no_argument,       NULL, ARG_JSON    },
        { "source",    required_argument, NULL, ARG_SOURCE  },
        { "force",     no_argument,       NULL, ARG_FORCE   },
        { "yes",       no_argument,       NULL, ARG_YES     },
        { "diff",        required_argument, NULL, ARG_DIFF        },
        { "all",         no_argument,       NULL, ARG_ALL         },
        { "git-control", no_argument,       NULL, ARG_GIT_CONTROL },
        { "ignored",     no_argument,       NULL, ARG_IGNORED },
        { "lines",       required_argument, NULL, 'n'             },
        { "once",        no_argument,       NULL, ARG_ONCE        },
        { "domain",      no_argument,       NULL, ARG_DOMAIN      },
        { "keep",        no_argument,       NULL, ARG_KEEP        },
        {}
};

/* Parses options from argv[optind] up to the next non-option. Returns 0 to exit, 1 to go on. */
static int parse_options(int argc, char *argv[]) {
        int c;

        /* "+": stop at the first non-option; the caller decides what it is. */
        while ((c = getopt_long(argc, argv, "+hc:p:w:n:", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("lazaretctl %s\n", PROJECT_VERSION);
                        return 0;
                case 'c':
                        if (isempty(optarg)) {
                                fprintf(stderr, "--config needs a file name.\n");
                                return -EINVAL;
                        }
                        arg_config = optarg;
                        break;
                case 'p':
                        if (!profile_name_is_valid(optarg)) {
                                fprintf(stderr, "--profile: \"%s\" is not a valid profile name (2 to 32 characters of a-z, 0-9, '_' and '-').\n", optarg);
                                return -EINVAL;
                        }
                        arg_profile = optarg;
                        break;
                case 'w':
                        if (isempty(optarg)) {
                                fprintf(stderr, "--workspace needs a directory.\n");
                                return -EINVAL;
                        }
                        arg_workspace = optarg;
                        break;
                case ARG_JSON:
                        arg_json = true;
                        break;
                case ARG_SOURCE:
                        if (isempty(optarg)) {
                                fprintf(stderr, "--source needs a directory or mirror URL.\n");
                                return -EINVAL;
                        }
                        image_set_source(optarg);
                        arg_source_given = true;
                        arg_image_option = arg_image_option ?: "--source";
                        break;
                case ARG_FORCE:
                        image_set_force(true);
                        changes_set_force(true);
                        arg_image_option = arg_image_option ?: "--force";
                        break;
                case ARG_YES:
                        state_set_yes(true);
                        arg_yes_given = true;
                        break;
                case ARG_DIFF:
                        if (isempty(optarg)) {
                                fprintf(stderr, "--diff needs a path.\n");
                                return -EINVAL;
                        }
                        changes_set_diff(optarg);
                        arg_changes_option = arg_changes_option ?: "--diff";
                        break;
                case ARG_ALL:
                        changes_set_all(true);
                        arg_changes_option = arg_changes_option ?: "--all";
                        break;
                case ARG_GIT_CONTROL:
                        changes_set_git_control(true);
                        arg_changes_option = arg_changes_option ?: "--git-control";
                        break;
                case ARG_IGNORED:
                        changes_set_ignored(true);
                        arg_changes_option = arg_changes_option ?: "--ignored";
                        break;
                case 'n': {
                        uint32_t n;

                        if (streq(optarg, "all"))
                                n = 0;
                        else if (parse_uint32(optarg, 1, 1000000, &n) < 0) {
                                fprintf(stderr, "--lines: \"%s\" is not a number of lines from 1 to 1000000, nor \"all\".\n", optarg);
                                return -EINVAL;
                        }
                        log_set_lines(n);
                        arg_lines_option = "--lines";
                        break;
                }
                case ARG_ONCE:
                case ARG_DOMAIN:
                case ARG_KEEP: {
                        const char *opt = c == ARG_ONCE ? "--once" : c == ARG_DOMAIN ? "--domain" : "--keep";

                        if (arg_scope_option && !streq(arg_scope_option, opt)) {
                                fprintf(stderr, "%s and %s cannot be given together.\n", arg_scope_option, opt);
                                return -EINVAL;
                        }
                        arg_scope_option = opt;
                        egress_set_scope(c == ARG_ONCE ? EGRESS_SCOPE_ONCE : c == ARG_DOMAIN ? EGRESS_SCOPE_DOMAIN
                                                                                             : EGRESS_SCOPE_KEEP, opt);
                        break;
                }
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }
        return 1;
}

static const Verb *find_verb(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, name))
                        return &verbs[i];
        return NULL;
}

/*
 * Options may come before and after the verb. For verbs that take a command
 * line (launch), the first non-option after the verb, or everything after
 * "--", is the command, passed on untouched: `launch ls -la` runs "ls -la".
 * Returns the verb's argument vector (argv[0] is the verb) in *ret.
 */
static int parse_argv(int argc, char *argv[], const Verb **ret_verb, char ***ret_args) {
        _cleanup_strv_free_ char **args = NULL;
        const Verb *verb = NULL;
        int r;

        optind = 1;
        for (;;) {
                r = parse_options(argc, argv);
                if (r <= 0)
                        return r;
                if (optind >= argc)
                        break;
                if (streq(argv[optind], "--")) {
                        for (optind++; optind < argc; optind++)
                                if (strv_extend(&args, argv[optind]) < 0)
                                        return -ENOMEM;
                        break;
                }
                if (strv_extend(&args, argv[optind]) < 0)
                        return -ENOMEM;
                if (!verb) {
                        verb = find_verb(argv[optind]);
                        if (!verb) {
                                fprintf(stderr, "Unknown command \"%s\"; see %s --help.\n", argv[optind], program_invocation_short_name);
                                return -EINVAL;
                        }
                } else if (verb->flags & VERB_COMMAND) {
                        for (optind++; optind < argc; optind++)
                                if (strv_extend(&args, argv[optind]) < 0)
                                        return -ENOMEM;
                        break;
                }
                optind++;
        }

        if (!verb) {
                if (args) {
                        fprintf(stderr, "Unknown command \"%s\"; see %s --help.\n", args[0], program_invocation_short_name);
                        return -EINVAL;
                }
                fprintf(stderr, "No command given; see %s --help.\n", program_invocation_short_name);
                return -EINVAL;
        }
        *ret_verb = verb;
        *ret_args = TAKE_PTR(args);
        return 1;
}

int main(int argc, char *argv[]) {
        _cleanup_strv_free_ char **args = NULL;
        _cleanup_config_ Config *config = NULL;
        const Verb *verb = NULL;
        unsigned n;
        int r;

        r = parse_argv(argc, argv, &verb, &args);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        (void) bus_register_error_map();

        if (arg_changes_option && !(verb->flags & VERB_CHANGES_OPTIONS)) {
                fprintf(stderr, "%s is an option of \"changes\" only, not of \"%s\".\n", arg_changes_option, verb->name);
                return 2;
        }
        if (arg_image_option && (verb->flags & VERB_CHANGES_OPTIONS) && streq(arg_image_option, "--force") &&
            !arg_source_given)
                arg_image_option = NULL;
        if (arg_image_option && !(verb->flags & VERB_IMAGE_OPTIONS)) {
                fprintf(stderr, "%s is an option of \"image build-default\" only, not of \"%s\".\n",
                        arg_image_option, verb->name);
                return 2;
        }

        if (arg_lines_option && !(verb->flags & VERB_LINES)) {
                fprintf(stderr, "%s is an option of \"log\" only, not of \"%s\".\n", arg_lines_option, verb->name);
                return 2;
        }
        if (arg_scope_option && !(verb->flags & VERB_EGRESS_SCOPE)) {
                fprintf(stderr, "%s is an option of \"egress allow\" only, not of \"%s\".\n", arg_scope_option, verb->name);
                return 2;
        }
        if (arg_yes_given && !(verb->flags & VERB_YES)) {
                fprintf(stderr, "--yes is an option of \"state reset\" and \"state gc\" only, not of \"%s\".\n", verb->name);
                return 2;
        }

        n = (unsigned) strv_length(args);
        if (n < verb->min_args && (verb->flags & VERB_COMMAND)) {
                fprintf(stderr, "No command given to \"%s\"; usage: %s %s\n", verb->name,
                        program_invocation_short_name, verb->synopsis);
                return 2;
        }
        if (n < verb->min_args || n > verb->max_args) {
                fprintf(stderr, "Wrong number of arguments for \"%s\"; usage: %s %s\n", verb->name,
                        program_invocation_short_name, verb->synopsis);
                return 2;
        }

        r = host_context_from_environment(&arg_host);
        if (r < 0) {
                fprintf(stderr, "Out of memory.\n");
                return 1;
        }

        if (verb->flags & VERB_CONFIG) {
                r = load_config(&config);
                if (r < 0)
                        return 1;
        }

        r = verb->dispatch((int) n, args, config);
        host_context_done(&arg_host);
        if (r < 0)
                return 1;
        return r > 255 ? 255 : r;
}
