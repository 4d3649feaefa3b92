/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cidr.h"
#include "cleanup.h"
#include "hash.h"
#include "host-context.h"
#include "port-forward.h"
#include "resource-limits.h"

/*
 * The host configuration (lazaret.conf(5)): one JSON document, trusted, read
 * only by host-side Lazaret processes. config_parse() validates everything it
 * can without knowing the Domain or asking the file system; config_resolve()
 * then judges the files it names and takes the fingerprint (config_load()
 * does both); domain_validate() (domain.h) expands the Domain-dependent
 * tokens and checks what would be exposed to the sandbox.
 */

#define PROFILE_NAME_MIN 2
#define PROFILE_NAME_MAX 32
#define CONFIG_MAX_PROFILES 128
#define CONFIG_MAX_LIST 256          /* entries in any one list or map */
#define CONFIG_MAX_ARGV 64           /* elements of a command or rule argv */
#define CONFIG_MAX_STRING 4096       /* bytes in any one string value */
#define ESCALATION_TIMEOUT_DEFAULT 300
#define ESCALATION_TIMEOUT_MAX 86400
/* retention: what a Domain Store keeps (issue 31 item 4); not part of the fingerprint. */
#define RETENTION_AUDIT_DAYS_DEFAULT 180
#define RETENTION_AUDIT_EVENTS_DEFAULT 100000
#define RETENTION_GENERATIONS_DEFAULT 1000
#define RETENTION_AUDIT_DAYS_MIN 1
#define RETENTION_AUDIT_DAYS_MAX 36500
#define RETENTION_AUDIT_EVENTS_MIN 100
#define RETENTION_AUDIT_EVENTS_MAX 100000000
#define RETENTION_GENERATIONS_MIN 1
#define RETENTION_GENERATIONS_MAX 1000000

/* The bounds lazaret.conf(5) accepts, also for a retention given on the bus (ApplyRetention). */
static inline bool retention_is_valid(unsigned days, unsigned events, unsigned generations) {
        return days >= RETENTION_AUDIT_DAYS_MIN && days <= RETENTION_AUDIT_DAYS_MAX &&
               events >= RETENTION_AUDIT_EVENTS_MIN && events <= RETENTION_AUDIT_EVENTS_MAX &&
               generations >= RETENTION_GENERATIONS_MIN && generations <= RETENTION_GENERATIONS_MAX;
}

/* Fixed paths inside the sandbox that configuration may not claim. */
#define SANDBOX_WORKSPACE "/workspace"
#define SANDBOX_CONTROL_DIR "/run/lazaret"

#define BUILTIN_PROFILE_NAME "default"
#define BUILTIN_IMAGE "builtin:default"

typedef enum VolumeMode {
        VOLUME_RO,
        VOLUME_RW,
} VolumeMode;

typedef struct Volume {
        char *host;             /* as written: may hold tokens and a leading ~ */
        char *container;        /* normalised absolute sandbox path */
        VolumeMode mode;
        bool force;             /* mount even a source that holds credentials or host autostart */
} Volume;

typedef struct EnvEntry {
        char *name;
        char *value;            /* literal value, unless from_host */
        bool from_host;         /* "env:VAR": value names the host variable */
} EnvEntry;

typedef struct CidrList {
        Cidr *items;
        size_t n;
} CidrList;

typedef enum ImageKind {
        IMAGE_BUILTIN,          /* builtin:default, built by `lazaretctl image build-default` */
        IMAGE_OCI_LAYOUT,       /* oci:DIR[:TAG] */
} ImageKind;

typedef struct ImageRef {
        ImageKind kind;
        char *path;             /* IMAGE_OCI_LAYOUT: directory as written (tokens allowed) */
        char *tag;              /* IMAGE_OCI_LAYOUT: tag, "latest" when omitted */
} ImageRef;

typedef struct Profile {
        char *name;
        char *image_raw;
        ImageRef image;
        char **command;         /* NULL: the user's login shell */
        char **persistent_dirs;
        char **protected_paths; /* the workspace view's: "NAME", "/PATH", "!NAME" (view-policy.h), normalised */
        CidrList allow_egress;
        CidrList deny_egress;
        char **allow_hosts;     /* host rules (spec 4.5 "Egress by name"), canonical (host_rule_format()) */
        EnvEntry *env;
        size_t n_env;
        Volume *volumes;
        size_t n_volumes;
        bool isolate_ignored;
        char **shared_ignored;  /* ignored workspace paths shared read-only instead (workspace-relative) */
        PortForward *publish_ports; /* published at each start (spec 4.5), host ports distinct */
        size_t n_publish_ports;
        bool directfs;          /* runsc --directfs; default true (gVisor's own default) */
        bool git_fsmonitor;     /* git inside asks the workspace view what changed (spec 4.6); default true */
        Limits limits;          /* "limits"; unset keys have the defaults of resource-limits.h */
        bool builtin;
} Profile;

typedef struct AutoApproveRule {
        char **argv;
        char *program;          /* argv[0] with symlinks resolved (config_resolve()), NULL when it does not exist; fingerprinted */
        bool trailing_args;
} AutoApproveRule;

typedef struct Config {
        char *path;             /* NULL for the built-in configuration */
        unsigned mode;          /* the file's mode (07777) from the fstat() of the opened file; 0 without one */
        char *data_root;        /* expanded and canonicalised */
        char *default_profile;
        char *runsc;            /* runtime.runsc: absolute, normalised; canonical once resolved; NULL when not configured */
        CidrList allow;
        CidrList deny;
        bool escalation_enabled;
        unsigned escalation_timeout_s;
        AutoApproveRule *auto_approve;
        size_t n_auto_approve;
        struct {
                unsigned audit_days, audit_events, generations;
        } retention;            /* the Domain Store's bound: not part of the fingerprint (it shapes no sandbox) */
        Profile *profiles;      /* sorted by name */
        size_t n_profiles;
        bool resolved;          /* config_resolve() ran: program, runsc judged, fingerprint set */
        uint8_t fingerprint[SHA256_DIGEST_LEN];
} Config;

typedef struct ConfigEnv {
        const char *home;               /* for "~"; required */
        const char *xdg_data_home;      /* default data_root parent; required */
} ConfigEnv;

Config *config_free(Config *c);

/*
 * Auto-approve rules whose program runs code from files around it (make,
 * cargo, npm, pytest, ...; config-escalation.c): one warning line each in
 * *ret, NULL when there are none. `lazaretctl config check` prints them.
 */
int config_escalation_risky_rules(const Config *c, char ***ret);
DEFINE_TRIVIAL_CLEANUP_FUNC(Config *, config_free);
#define _cleanup_config_ _cleanup_(config_freep)

/*
 * Parses and validates a configuration document, without asking the file
 * system anything. filename is used only in messages ("FILE: KEY.PATH: what
 * is wrong") and as Config.path; NULL text means "no file": the built-in
 * configuration. On error *ret_error holds the message. The result is not
 * yet resolved: config_resolve() completes it.
 */
int config_parse(const char *text, size_t len, const char *filename, const ConfigEnv *env,
                 Config **ret, char **ret_error);

/*
 * The second step, the only one that looks at files: judges runtime.runsc
 * (path_walk(), PATH_WALK_TRUSTED: owner, mode and ACL of every component, a
 * regular executable file), resolves each auto-approve program (refusing one
 * whose resolved name runs arbitrary commands), and takes the fingerprint
 * over the canonical encoding, those answers included. Messages have
 * config_parse()'s shape. On error the Config is not marked resolved (and
 * programs resolved before the failure stay filled in).
 */
int config_resolve(Config *c, char **ret_error);

/*
 * Reads, parses and resolves the configuration. Picks the file to read, in order: explicit (from --config), $LAZARET_CONFIG,
 * $XDG_CONFIG_HOME/lazaret/config.json (both as collected in hc). A missing file is an error only when
 * it was named explicitly; otherwise the built-in configuration is used. The
 * file must be a regular file owned by the caller (or root) and not writable by
 * group or others.
 */
int config_load(const HostContext *hc, const char *explicit_path, Config **ret, char **ret_error);

/* The built-in configuration, with the caller's home and XDG directories, parsed and resolved. */
int config_load_builtin(const HostContext *hc, Config **ret, char **ret_error);

/*
 * The path config_load() would read when nothing is named explicitly:
 * returns 1 when $LAZARET_CONFIG named it (it must exist), else 0.
 */
int config_default_path(const HostContext *hc, char **ret);

const Profile *config_find_profile(const Config *c, const char *name);

bool profile_name_is_valid(const char *name);
bool env_name_is_valid(const char *name);

/*
 * The canonical encoding the fingerprint is computed over (lazaret.conf(5),
 * FINGERPRINT), written by config-encode.c in a fixed key order.
 */
int config_canonical_json(const Config *c, char **ret);

/*
 * The names of profile environment entries given as literal values (not
 * "env:VAR") whose names look like secrets (containing TOKEN, SECRET,
 * PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL or AUTH, or with KEY or KEYS as a
 * '_'-separated word or at the end; case-insensitive), "PROFILE.NAME" each,
 * sorted; an empty list as NULL.
 */
int config_literal_secrets(const Config *c, char ***ret);

/* Hex of the fingerprint into buf (SHA256_HEX_LEN + 1 bytes). */
const char *config_fingerprint_hex(const Config *c, char *buf);

const char *volume_mode_to_string(VolumeMode m);
