/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-id128.h>

#include "checkout.h"
#include "cleanup.h"
#include "ctl.h"
#include "domain-lock.h"
#include "domain.h"
#include "maintenance.h"
#include "fs-util.h"
#include "git-sentry.h"
#include "json-util.h"
#include "path-util.h"
#include "state-anchor.h"
#include "state.h"
#include "storage-catalog.h"
#include "strv.h"
#include "unshare.h"
#include "util.h"
#include "view-policy.h"

static bool arg_yes = false;

void state_set_yes(bool yes) {
        arg_yes = yes;
}

/* How many changed paths inspect lists per layer (the count is always whole). */
#define STATE_CHANGES_MAX 1000
/* How deep inspect descends into an upper layer. */
#define STATE_WALK_DEPTH_MAX 64

typedef struct LayerScan {
        uint64_t bytes;
        uint64_t entries;
        uint64_t changes;
        uint64_t unreadable;            /* directories we could not open (a subordinate ID's 0700) */
        json_object *changed;           /* [{"path","change"}], up to STATE_CHANGES_MAX */
} LayerScan;

static bool dir_is_opaque(int dfd) {
        char v[2] = {};

        if (fgetxattr(dfd, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y')
                return true;
        return faccessat(dfd, ".wh..wh..opq", F_OK, AT_SYMLINK_NOFOLLOW) >= 0;
}

static int note_change(LayerScan *s, const char *path, StateChange c) {
        _cleanup_json_ json_object *o = NULL;
        int r;

        s->changes++;
        if (!s->changed || json_object_array_length(s->changed) >= STATE_CHANGES_MAX)
                return 0;
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        r = json_add_string(o, "path", path);
        if (r >= 0)
                r = json_add_string(o, "change", state_change_to_string(c));
        if (r >= 0)
                r = json_append(s->changed, TAKE_PTR(o));
        return r;
}

/* Walks dfd (the upper layer's directory at sandbox path prefix) without following anything. */
static int scan_dir(int dfd, const char *prefix, unsigned depth, LayerScan *s) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int r;

        d = fdopendir(dfd);
        if (!d) {
                safe_close(dfd);
                return -errno;
        }
        while ((errno = 0, de = readdir(d))) {
                _cleanup_free_ char *path = NULL;
                const char *name;
                struct stat st;
                StateChange c;
                int sub = -EBADF;
                bool opaque = false;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                s->entries++;
                s->bytes += (uint64_t) st.st_blocks * 512;
                if (S_ISDIR(st.st_mode)) {
                        sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                s->unreadable++;
                        else
                                opaque = dir_is_opaque(sub);
                }
                c = state_anchor_classify(de->d_name, st.st_mode, (unsigned long long) st.st_rdev, opaque, &name);
                path = path_join(prefix, name);
                if (!path) {
                        safe_close(sub);
                        return -ENOMEM;
                }
                if (c != STATE_CHANGE_NONE) {
                        r = note_change(s, path, c);
                        if (r < 0) {
                                safe_close(sub);
                                return r;
                        }
                }
                if (sub >= 0) {
                        if (depth >= STATE_WALK_DEPTH_MAX) {
                                safe_close(sub);
                                continue;
                        }
                        r = scan_dir(sub, path, depth + 1, s);
                        if (r == -ENOMEM)
                                return r;
                }
        }
        return errno > 0 ? -errno : 0;
}

/* ------------------------------------------------------------- the Domain */

typedef struct Target {
        char id[DOMAIN_ID_LEN + 1];
        char *domain_dir;
        char *state_dir;
        const char *path;               /* reset: the one persistent path, or NULL for all */
} Target;

static void target_done(Target *t) {
        free(t->domain_dir);
        free(t->state_dir);
}

/* argv[1..]: [DOMAIN-ID] [PATH] (PATH only where allow_path). */
static int resolve_target(int argc, char *argv[], const Config *config, bool allow_path, Target *ret) {
        _cleanup_domain_ Domain *d = NULL;
        _cleanup_free_ char *error = NULL, *domains = NULL;
        Target t = {};
        int i = 1, r;

        if (i < argc && argv[i][0] != '/') {
                if (!domain_id_is_valid(argv[i])) {
                        fprintf(stderr, "\"%s\" is not a Domain ID (12 lowercase hex digits).\n", argv[i]);
                        return -EINVAL;
                }
                memcpy(t.id, argv[i], DOMAIN_ID_LEN + 1);
                i++;
        } else {
                r = domain_new(config, &arg_host, arg_profile, arg_workspace, &d, &error);
                if (r < 0) {
                        fprintf(stderr, "%s\n", error ?: strerror(-r));
                        return r;
                }
                memcpy(t.id, d->id, DOMAIN_ID_LEN + 1);
        }
        if (i < argc) {
                if (!allow_path || argv[i][0] != '/') {
                        fprintf(stderr, "Unexpected argument \"%s\"; see lazaretctl --help.\n", argv[i]);
                        return -EINVAL;
                }
                t.path = argv[i++];
        }
        if (i < argc) {
                fprintf(stderr, "Unexpected argument \"%s\"; see lazaretctl --help.\n", argv[i]);
                return -EINVAL;
        }
        domains = path_join(config->data_root, "domains");
        t.domain_dir = domains ? path_join(domains, t.id) : NULL;
        t.state_dir = t.domain_dir ? path_join(t.domain_dir, STATE_ANCHOR_DIR) : NULL;
        if (!t.state_dir) {
                target_done(&t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

/* ------------------------------------------------------------- checkouts */

/*
 * The key of the checkout now at the Domain's workspace (checkout.h), found
 * as the coordinator finds it: the Git Sentry's resolution of a .git file,
 * else .git beneath the workspace, never through a link. The workspace is
 * the Domain record's. *ret_why says why not (a deleted workspace).
 */
static int current_checkout_key(const Config *config, const char *id, char ret_key[static CHECKOUT_KEY_MAX],
                                char **ret_why) {
        _cleanup_(domain_record_done) DomainRecord rec = {};
        _cleanup_(git_linked_done) GitLinked linked = { .root_fd = -EBADF };
        _cleanup_close_ int wfd = -EBADF;
        CheckoutId cid;
        int r;

        r = domain_record_load(config->data_root, id, &rec, ret_why);
        if (r < 0)
                return r;
        wfd = open(rec.workspace, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (wfd < 0)
                return errorf(ret_why, -errno, "cannot open the workspace %s: %m", rec.workspace);
        r = git_sentry_resolve_linked(rec.workspace, wfd, &linked, ret_why);
        if (r < 0)
                return r;
        r = checkout_id_of_workspace(wfd, &linked, &cid);
        if (r < 0)
                return errorf(ret_why, r, "cannot identify the checkout at %s: %s", rec.workspace, strerror(-r));
        checkout_id_key(&cid, ret_key);
        if (!ret_key[0])
                return -ENOMEM;
        return 0;
}

/* The checkout directories below <domain_dir>/checkouts/ (sorted). */
static int list_checkouts(const char *domain_dir, char ***ret) {
        _cleanup_free_ char *dir = path_join(domain_dir, CHECKOUTS_DIR);
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_strv_free_ char **l = NULL;
        struct dirent *de;

        if (!dir)
                return -ENOMEM;
        d = opendir(dir);
        if (!d && errno == ENOENT) {
                *ret = NULL;
                return 0;
        }
        if (!d)
                return -errno;
        while ((de = readdir(d)))
                if (checkout_key_is_valid(de->d_name) && strv_extend(&l, de->d_name) < 0)
                        return -ENOMEM;
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

/* Bytes below dfd (st_blocks), without following anything; consumes dfd. */
static uint64_t tree_bytes(int dfd, unsigned depth) {
        _cleanup_(closedirp) DIR *d = fdopendir(dfd);
        struct dirent *de;
        uint64_t n = 0;

        if (!d) {
                safe_close(dfd);
                return 0;
        }
        while ((de = readdir(d))) {
                struct stat st;

                if (streq(de->d_name, ".") || streq(de->d_name, "..") ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                n += (uint64_t) st.st_blocks * 512;
                if (S_ISDIR(st.st_mode) && depth < STATE_WALK_DEPTH_MAX) {
                        int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                n += tree_bytes(sub, depth + 1);
                }
        }
        return n;
}

/* One checkout of a Domain as JSON: key, current, workspace, identity, first/last use, bytes, note. */
static int checkout_json(const char *domain_dir, const char *key, const char *current, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_free_ char *dir = NULL, *rec_path = NULL, *text = NULL, *why = NULL, *desc = NULL;
        _cleanup_(checkout_record_done) CheckoutRecord rec = {};
        size_t n;
        int fd, r;

        if (!o)
                return -ENOMEM;
        r = checkout_state_path(domain_dir, key, NULL, &dir);
        if (r >= 0)
                r = checkout_state_path(domain_dir, key, CHECKOUT_RECORD_FILE, &rec_path);
        if (r < 0)
                return r;
        r = json_add_string(o, "key", key);
        if (r >= 0)
                r = json_add_string(o, "dir", dir);
        if (r >= 0)
                r = json_add_bool(o, "current", current && streq(current, key));
        if (r >= 0 && read_full_file(rec_path, 64 * 1024, &text, &n) >= 0 &&
            checkout_record_parse(text, n, &rec, &why) >= 0) {
                if (rec.workspace)
                        r = json_add_bytes(o, "workspace", rec.workspace);
                if (r >= 0 && rec.has_id && checkout_id_describe(&rec.id, &desc) >= 0)
                        r = json_add_string(o, "identity", desc);
                if (r >= 0)
                        r = json_add_int64(o, "first_used", rec.first_used);
                if (r >= 0)
                        r = json_add_int64(o, "last_used", rec.last_used);
                if (r >= 0 && rec.note)
                        r = json_add_string(o, "note", rec.note);
        }
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (r >= 0)
                r = json_add_uint64(o, "bytes", fd >= 0 ? tree_bytes(fd, 0) : 0);
        else
                safe_close(fd);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

/* The Domain's checkouts as a JSON array, the current one marked (none when the workspace cannot be identified). */
static int checkouts_json(const Config *config, const char *id, const char *domain_dir, json_object **ret) {
        _cleanup_json_ json_object *a = json_object_new_array();
        _cleanup_strv_free_ char **keys = NULL;
        _cleanup_free_ char *why = NULL;
        char current[CHECKOUT_KEY_MAX];
        bool known;
        int r;

        if (!a)
                return -ENOMEM;
        r = list_checkouts(domain_dir, &keys);
        if (r < 0)
                return r;
        known = keys && current_checkout_key(config, id, current, &why) >= 0;
        STRV_FOREACH(k, keys) {
                json_object *x = NULL;
                r = checkout_json(domain_dir, *k, known ? current : NULL, &x);
                if (r >= 0)
                        r = json_append(a, x);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

/* The names of the layers in state_dir (sorted), and the count of entries that are no layer. */
static int list_layers(const char *state_dir, char ***ret, unsigned *ret_strays) {
        _cleanup_(closedirp) DIR *d = opendir(state_dir);
        _cleanup_strv_free_ char **l = NULL;
        unsigned strays = 0;
        struct dirent *de;
        int r;

        if (!d && errno == ENOENT) {
                *ret = NULL;
                if (ret_strays)
                        *ret_strays = 0;
                return 0;
        }
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *p = NULL;

                /* Names with a leading dot are the Domain's own records (state-anchor.h), no layers. */
                if (de->d_name[0] == '.')
                        continue;
                r = state_anchor_layer_path(de->d_name, &p);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        strays++;
                        continue;
                }
                r = strv_extend(&l, de->d_name);
                if (r < 0)
                        return r;
        }
        strv_sort(l);
        *ret = TAKE_PTR(l);
        if (ret_strays)
                *ret_strays = strays;
        return 0;
}

static int read_layer_format(int layerfd, char **ret) {
        _cleanup_close_ int fd = openat(layerfd, "format", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        size_t n;
        int r;

        if (fd < 0)
                return -errno;
        r = read_full_fd(fd, 64, ret, &n);
        if (r < 0)
                return r;
        while (n > 0 && (*ret)[n - 1] == '\n')
                (*ret)[--n] = 0;
        return 0;
}

/* One layer as JSON: path, name, format, bytes, entries, changes (and the changed paths when detailed). */
static int layer_json(const char *state_dir, const char *name, bool detailed, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_free_ char *path = NULL, *layer = path_join(state_dir, name), *format = NULL;
        _cleanup_close_ int lfd = -EBADF;
        LayerScan s = {};
        int ufd, r;

        if (!o || !layer)
                return -ENOMEM;
        r = state_anchor_layer_path(name, &path);
        if (r < 0)
                return r;
        lfd = open(layer, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (lfd >= 0)
                (void) read_layer_format(lfd, &format);
        if (detailed) {
                s.changed = json_object_new_array();
                if (!s.changed)
                        return -ENOMEM;
        }
        ufd = lfd >= 0 ? openat(lfd, STATE_ANCHOR_UPPER, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -EBADF;
        if (ufd >= 0) {
                r = scan_dir(ufd, path, 0, &s);
                if (r == -ENOMEM) {
                        json_object_put(s.changed);
                        return r;
                }
        }
        r = json_add_string(o, "path", path);
        if (r >= 0)
                r = json_add_string(o, "layer", layer);
        if (r >= 0 && format)
                r = json_add_string(o, "format", format);
        if (r >= 0)
                r = json_add_uint64(o, "bytes", s.bytes);
        if (r >= 0)
                r = json_add_uint64(o, "entries", s.entries);
        if (r >= 0)
                r = json_add_uint64(o, "changes", s.changes);
        if (r >= 0)
                r = json_add_uint64(o, "unreadable_directories", s.unreadable);
        if (r >= 0 && detailed)
                r = json_add(o, "changed", TAKE_PTR(s.changed));
        json_object_put(s.changed);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static const char *human_size(uint64_t b, char buf[static 32]) {
        if (b >= 1024ull * 1024 * 1024)
                snprintf(buf, 32, "%.1fG", (double) b / (1024.0 * 1024 * 1024));
        else if (b >= 1024ull * 1024)
                snprintf(buf, 32, "%.1fM", (double) b / (1024.0 * 1024));
        else
                snprintf(buf, 32, "%.1fK", (double) b / 1024.0);
        return buf;
}

static uint64_t get_u64(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? (uint64_t) json_object_get_int64(v) : 0;
}

static const char *get_str(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

/* {"domain_id","profile","workspace","layers":[...]} of one Domain. */
static int domain_json(const Config *config, const char *id, const char *state_dir, bool detailed, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object(), *a = json_object_new_array();
        _cleanup_(domain_record_done) DomainRecord rec = {};
        _cleanup_strv_free_ char **layers = NULL;
        _cleanup_free_ char *why = NULL;
        int r;

        if (!o || !a)
                return -ENOMEM;
        r = list_layers(state_dir, &layers, NULL);
        if (r < 0)
                return r;
        STRV_FOREACH(l, layers) {
                json_object *x = NULL;
                r = layer_json(state_dir, *l, detailed, &x);
                if (r == -ENOMEM)
                        return r;
                if (r >= 0 && (r = json_append(a, x)) < 0)
                        return r;
        }
        r = json_add_string(o, "domain_id", id);
        if (r >= 0 && domain_record_load(config->data_root, id, &rec, &why) >= 0) {
                r = json_add_string(o, "profile", rec.profile);
                if (r >= 0)
                        r = json_add_string(o, "workspace", rec.workspace);
        }
        if (r >= 0)
                r = json_add(o, "layers", TAKE_PTR(a));
        if (r >= 0) {
                /* Domain state per checkout (checkout.h): the current one's and any set aside. */
                _cleanup_free_ char *domain_dir = path_join(config->data_root, "domains"), *dd = NULL, *legacy = NULL;
                json_object *c = NULL;
                struct stat st;

                dd = domain_dir ? path_join(domain_dir, id) : NULL;
                legacy = dd ? path_join(dd, VIEW_STATE_DIR) : NULL;
                if (!legacy)
                        return -ENOMEM;
                r = checkouts_json(config, id, dd, &c);
                if (r >= 0)
                        r = json_add(o, "checkouts", c);
                /* view/ of a Lazaret without checkout identities: sorted to its checkout at the next launch. */
                if (r >= 0 && lstat(legacy, &st) >= 0)
                        r = json_add_bool(o, "unsorted_view_state", true);
        }
        if (r >= 0) {
                /* The coordinator's verdict at the last launch (anchor.c). */
                _cleanup_free_ char *stale = path_join(state_dir, STATE_ANCHOR_DPKG_STALE), *text = NULL;
                size_t n;
                if (!stale)
                        return -ENOMEM;
                if (read_full_file(stale, 4096, &text, &n) >= 0 && n > 0) {
                        text[strcspn(text, "\n")] = 0;
                        r = json_add_string(o, "package_database_stale", text);
                }
        }
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

static void print_checkouts(json_object *o) {
        json_object *cs, *v;
        char b[32];

        if (json_object_object_get_ex(o, "unsorted_view_state", &v))
                printf("  view state of a Lazaret without checkout identities: sorted to its checkout at the next launch\n");
        if (!json_object_object_get_ex(o, "checkouts", &cs))
                return;
        for (size_t i = 0; i < json_object_array_length(cs); i++) {
                json_object *c = json_object_array_get_idx(cs, i), *cur;
                bool current = json_object_object_get_ex(c, "current", &cur) && json_object_get_boolean(cur);
                _cleanup_free_ char *ws = get_str(c, "workspace") ? escape_control(get_str(c, "workspace")) : NULL;
                char when[32] = "?";
                time_t t = (time_t) get_u64(c, "last_used");
                struct tm tm;

                if (t > 0 && localtime_r(&t, &tm))
                        strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
                printf("  checkout %s %s %8s  last used %s at %s\n", get_str(c, "key"),
                       current ? "(current)  " : "(set aside)", human_size(get_u64(c, "bytes"), b), when, ws ?: "?");
                if (get_str(c, "identity"))
                        printf("    %s\n", get_str(c, "identity"));
                if (get_str(c, "note"))
                        printf("    %s\n", get_str(c, "note"));
                if (!current)
                        printf("    %s (remove with: lazaretctl state gc)\n", get_str(c, "dir"));
        }
}

static void print_domain(json_object *o, bool detailed) {
        json_object *layers;
        char b[32];

        printf("Domain %s", get_str(o, "domain_id"));
        if (get_str(o, "profile"))
                printf(" (profile %s, workspace %s)", get_str(o, "profile"), get_str(o, "workspace"));
        printf("\n");
        if (get_str(o, "package_database_stale"))
                printf("  warning: %s\n", get_str(o, "package_database_stale"));
        print_checkouts(o);
        if (!json_object_object_get_ex(o, "layers", &layers) || json_object_array_length(layers) == 0) {
                printf("  no State Anchor layers\n");
                return;
        }
        for (size_t i = 0; i < json_object_array_length(layers); i++) {
                json_object *l = json_object_array_get_idx(layers, i), *changed;

                printf("  %-24s %8s  %" PRIu64 " entries, %" PRIu64 " changes%s%s\n", get_str(l, "path"),
                       human_size(get_u64(l, "bytes"), b), get_u64(l, "entries"), get_u64(l, "changes"),
                       get_str(l, "format") ? ", " : "", strempty(get_str(l, "format")));
                if (get_u64(l, "unreadable_directories"))
                        printf("    %" PRIu64 " directories not readable by you (a package's own user inside, a subordinate ID "
                               "on the host), not counted; all of it: lazaretctl unshare du -sh <layer>\n",
                               get_u64(l, "unreadable_directories"));
                if (!detailed || !json_object_object_get_ex(l, "changed", &changed))
                        continue;
                for (size_t j = 0; j < json_object_array_length(changed); j++) {
                        json_object *c = json_object_array_get_idx(changed, j);
                        _cleanup_free_ char *p = escape_control(get_str(c, "path"));
                        printf("    %-8s %s\n", get_str(c, "change"), p ?: "?");
                }
                if (get_u64(l, "changes") > json_object_array_length(changed))
                        printf("    ... and %" PRIu64 " more\n", get_u64(l, "changes") - json_object_array_length(changed));
        }
}

/* Every Domain with State Anchor layers or workspace state, as a JSON array of domain_json(). */
static int domains_json(const Config *config, json_object **ret) {
        _cleanup_free_ char *domains = path_join(config->data_root, "domains");
        _cleanup_json_ json_object *a = json_object_new_array();
        _cleanup_(closedirp) DIR *d = NULL;
        _cleanup_strv_free_ char **ids = NULL;
        struct dirent *de;
        int r;

        if (!domains || !a)
                return -ENOMEM;
        d = opendir(domains);
        if (!d && errno != ENOENT) {
                fprintf(stderr, "Cannot read %s: %m\n", domains);
                return -errno;
        }
        while (d && (de = readdir(d)))
                if (domain_id_is_valid(de->d_name) && strv_extend(&ids, de->d_name) < 0)
                        return -ENOMEM;
        strv_sort(ids);
        STRV_FOREACH(id, ids) {
                _cleanup_free_ char *dir = path_join(domains, *id), *state = dir ? path_join(dir, STATE_ANCHOR_DIR) : NULL,
                                    *cks = dir ? path_join(dir, CHECKOUTS_DIR) : NULL,
                                    *legacy = dir ? path_join(dir, VIEW_STATE_DIR) : NULL;
                json_object *o = NULL;
                struct stat st;

                if (!state || !cks || !legacy)
                        return -ENOMEM;
                if ((lstat(state, &st) < 0 || !S_ISDIR(st.st_mode)) && (lstat(cks, &st) < 0 || !S_ISDIR(st.st_mode)) &&
                    lstat(legacy, &st) < 0)
                        continue;
                r = domain_json(config, *id, state, false, &o);
                if (r >= 0)
                        r = json_append(a, o);
                if (r < 0)
                        return ctl_json_failed(r);
        }
        *ret = TAKE_PTR(a);
        return 0;
}

/*
 * What the state verbs show, measured as root of a user namespace mapped
 * like the sandbox's (unshare_call()): below a directory that a package's
 * own user inside owns with mode 0700 (a subordinate ID on the host), the
 * sizes and changes are whole. When that namespace cannot be made, the
 * caller measures as the user, and counts what it could not read.
 */
typedef struct MappedQuery {
        const Config *config;
        const char *id, *state_dir;     /* one Domain, detailed (inspect); NULL: every Domain (list) */
} MappedQuery;

static int mapped_query_write(int out_fd, void *userdata) {
        const MappedQuery *q = userdata;
        _cleanup_json_ json_object *o = NULL;
        const char *text;
        int r;

        r = q->id ? domain_json(q->config, q->id, q->state_dir, true, &o) : domains_json(q->config, &o);
        if (r < 0)
                return r;
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        return text ? write_all(out_fd, text, strlen(text)) : -ENOMEM;
}

static int mapped_query(const MappedQuery *q, json_object **ret) {
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r;

        r = unshare_call(mapped_query_write, (void *) q, JSON_DOC_MAX_BYTES, &text, &len);
        if (r < 0)
                return r;
        return json_parse_strict(text, len, ret, NULL);
}

static int state_list(const Config *config) {
        _cleanup_json_ json_object *a = NULL;
        int r;

        if (mapped_query(&(MappedQuery) { .config = config }, &a) < 0) {
                r = domains_json(config, &a);
                if (r < 0)
                        return r;
        }
        if (arg_json)
                return ctl_print_json(a);
        if (json_object_array_length(a) == 0)
                printf("No Domain has State Anchor layers or workspace state.\n");
        for (size_t i = 0; i < json_object_array_length(a); i++)
                print_domain(json_object_array_get_idx(a, i), false);
        return 0;
}

static int state_inspect(int argc, char *argv[], const Config *config) {
        _cleanup_(target_done) Target t = {};
        _cleanup_json_ json_object *o = NULL;
        int r;

        r = resolve_target(argc, argv, config, false, &t);
        if (r < 0)
                return r;
        r = mapped_query(&(MappedQuery) { .config = config, .id = t.id, .state_dir = t.state_dir }, &o);
        if (r < 0)
                r = domain_json(config, t.id, t.state_dir, true, &o);
        if (r < 0) {
                fprintf(stderr, "Cannot read the State Anchor of Domain %s in %s: %s\n", t.id, t.state_dir, strerror(-r));
                return r;
        }
        if (arg_json)
                return ctl_print_json(o);
        print_domain(o, true);
        return 0;
}

/* ---------------------------------------------------- the exclusive verbs */

/* The Domain lock, as the coordinator takes it (OR-1): held until the verb ends; a Domain going down is waited for. */
static int take_domain_lock(const Target *t, const char *verb, int *ret_fd) {
        int r = ctl_domain_lock_stopped(t->domain_dir, t->id, verb, true, ret_fd);

        if (r == -ENOENT)
                fprintf(stderr, "Domain %s has no Domain Root (%s); nothing to %s.\n", t->id, t->domain_dir, verb);
        return r;
}

static bool format_known(const char *f) {
        return f && (streq(f, "kernel-overlayfs-userxattr") || streq(f, "fuse-overlayfs"));
}

static int verify_layer(const char *state_dir, const char *name, unsigned *problems) {
        _cleanup_free_ char *layer = path_join(state_dir, name), *format = NULL, *path = NULL;
        _cleanup_close_ int lfd = -EBADF;
        struct stat st;
        int r;

        if (!layer)
                return -ENOMEM;
        r = state_anchor_layer_path(name, &path);
        if (r < 0)
                return r;
        if (lstat(layer, &st) < 0 || !S_ISDIR(st.st_mode)) {
                printf("  %s: %s is not a directory\n", path, layer);
                (*problems)++;
                return 0;
        }
        lfd = open(layer, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (lfd < 0) {
                printf("  %s: cannot open %s: %m\n", path, layer);
                (*problems)++;
                return 0;
        }
        for (const char *const *d = (const char *const[]) { STATE_ANCHOR_UPPER, STATE_ANCHOR_WORK, NULL }; *d; d++) {
                if (fstatat(lfd, *d, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT)
                                continue;       /* never mounted yet: made at the next launch */
                        printf("  %s: cannot inspect %s/%s: %m\n", path, layer, *d);
                        (*problems)++;
                } else if (!S_ISDIR(st.st_mode)) {
                        printf("  %s: %s/%s is not a directory\n", path, layer, *d);
                        (*problems)++;
                } else if (st.st_uid != getuid()) {
                        printf("  %s: %s/%s is owned by UID %u, not by you\n", path, layer, *d, (unsigned) st.st_uid);
                        (*problems)++;
                }
        }
        r = read_layer_format(lfd, &format);
        if (r < 0 && r != -ENOENT) {
                printf("  %s: cannot read %s/format: %s\n", path, layer, strerror(-r));
                (*problems)++;
        } else if (r >= 0 && !format_known(format)) {
                printf("  %s: %s/format names no overlay format Lazaret knows (\"%s\")\n", path, layer, format);
                (*problems)++;
        } else if (r == -ENOENT && fstatat(lfd, STATE_ANCHOR_UPPER, &st, AT_SYMLINK_NOFOLLOW) >= 0) {
                printf("  %s: %s has an upper layer but no format record\n", path, layer);
                (*problems)++;
        }
        return 0;
}

static int state_verify(int argc, char *argv[], const Config *config) {
        _cleanup_(target_done) Target t = {};
        _cleanup_strv_free_ char **layers = NULL;
        _cleanup_free_ char *trash = NULL;
        _cleanup_close_ int lock = -EBADF;
        unsigned problems = 0, strays = 0;
        struct stat st;
        int r;

        r = resolve_target(argc, argv, config, false, &t);
        if (r < 0)
                return r;
        r = take_domain_lock(&t, "verify", &lock);
        if (r < 0)
                return r;
        if (lstat(t.state_dir, &st) >= 0 && !S_ISDIR(st.st_mode)) {
                printf("Domain %s: %s is not a directory.\n", t.id, t.state_dir);
                return 1;
        }
        r = list_layers(t.state_dir, &layers, &strays);
        if (r < 0) {
                fprintf(stderr, "Cannot read %s: %s\n", t.state_dir, strerror(-r));
                return r;
        }
        printf("Domain %s: %zu State Anchor layers in %s\n", t.id, strv_length(layers), t.state_dir);
        STRV_FOREACH(l, layers) {
                r = verify_layer(t.state_dir, *l, &problems);
                if (r < 0)
                        return r;
        }
        if (strays) {
                printf("  %u entries in %s are no layer Lazaret makes\n", strays, t.state_dir);
                problems++;
        }
        trash = path_join(t.domain_dir, STATE_ANCHOR_TRASH_DIR);
        if (!trash)
                return -ENOMEM;
        if (lstat(trash, &st) >= 0)
                printf("  %s holds what an interrupted reset left; the next reset removes it\n", trash);
        if (problems) {
                printf("%u problems found.\n", problems);
                return 1;
        }
        printf("OK.\n");
        return 0;
}

static int confirm(const char *question) {
        char line[16];

        if (arg_yes)
                return 0;
        if (!isatty(STDIN_FILENO)) {
                fprintf(stderr, "%s\nRefusing to ask without a terminal; add --yes to go ahead.\n", question);
                return -ECANCELED;
        }
        fprintf(stderr, "%s [y/N] ", question);
        if (!fgets(line, sizeof(line), stdin) || (!streq(line, "y\n") && !streq(line, "yes\n"))) {
                fprintf(stderr, "Nothing was changed.\n");
                return -ECANCELED;
        }
        return 0;
}

/* Deletes DIR as root of a user namespace mapped like the sandbox's (files of subordinate IDs). */
static int remove_mapped(const char *dir, const Config *config) {
        char *argv[] = { (char *) "unshare", (char *) "rm", (char *) "-rf", (char *) "--one-file-system", (char *) "--",
                         (char *) dir, NULL };
        int r = verb_unshare((int) ELEMENTSOF(argv) - 1, argv, config);

        if (r != 0) {
                fprintf(stderr, "Could not remove all of %s (the layer is already out of use; the next reset "
                        "tries again).\n", dir);
                return r < 0 ? r : -EIO;
        }
        return 0;
}

/* One rename puts dirfd/name out of use, into the Domain's trash, under a random name; the caller then empties the trash. */
static int move_to_trash(int rootfd, const Target *t, int dirfd, const char *name) {
        _cleanup_close_ int trashfd = -EBADF;
        char dest[SD_ID128_STRING_MAX];
        sd_id128_t rnd;
        int r;

        trashfd = mkdir_open_at(rootfd, STATE_ANCHOR_TRASH_DIR, 0700);
        if (trashfd < 0) {
                fprintf(stderr, "Cannot make or open %s/%s: %s\n", t->domain_dir, STATE_ANCHOR_TRASH_DIR,
                        strerror(-trashfd));
                return trashfd;
        }
        r = sd_id128_randomize(&rnd);
        if (r < 0)
                return r;
        sd_id128_to_string(rnd, dest);
        if (renameat(dirfd, name, trashfd, dest) < 0 || fsync(dirfd) < 0)
                return -errno;
        (void) fsync(trashfd);
        return 0;
}

/*
 * Where the ignored state of rel (workspace-relative, clean) lies, as the
 * view lays it out (spec 4.6): M(root) is ignored/, M(P/N) is M(P)/d/N,
 * and the ignored entries of host directory P are M(P)/e/NAME, each whole
 * (below an ignored entry, the tree is plain). rel is either below such an
 * entry, or a host directory whose mirror M(rel) holds the ignored entries
 * below it. Opened component by component without following a link.
 * Returns the directory that holds it and its name there; -ENOENT: none.
 */
static char **split_path(const char *rel) {
        _cleanup_free_ char *copy = strdup(rel);
        char **l = NULL, *save = NULL;

        if (!copy)
                return NULL;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save))
                if (strv_extend(&l, c) < 0)
                        return strv_free(l);
        return l;
}

static int find_ignored(int ignfd, const char *rel, int *ret_dirfd, char **ret_name) {
        _cleanup_strv_free_ char **comps = split_path(rel);
        _cleanup_close_ int mfd = -EBADF;
        size_t n = strv_length(comps);

        if (!comps)
                return -ENOMEM;
        mfd = fcntl(ignfd, F_DUPFD_CLOEXEC, 3);
        if (mfd < 0)
                return -errno;
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int efd = openat(mfd, "e", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_close_ int dfd = -EBADF;
                struct stat st;

                if (efd >= 0 && fstatat(efd, comps[i], &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        /* An ignored entry: the rest of rel is a plain path below it. */
                        _cleanup_free_ char *below = NULL;
                        int fd;

                        if (i + 1 == n) {
                                *ret_name = strdup(comps[i]);
                                if (!*ret_name)
                                        return -ENOMEM;
                                *ret_dirfd = TAKE_FD(efd);
                                return 0;
                        }
                        below = strv_join(comps + i, "/");
                        if (!below)
                                return -ENOMEM;
                        *strrchr(below, '/') = 0;
                        fd = openat_beneath(efd, below, O_RDONLY | O_DIRECTORY, 0, true);
                        if (fd < 0)
                                return fd == -ENOTDIR ? -ENOENT : fd;
                        if (fstatat(fd, comps[n - 1], &st, AT_SYMLINK_NOFOLLOW) < 0) {
                                safe_close(fd);
                                return -ENOENT;
                        }
                        *ret_name = strdup(comps[n - 1]);
                        if (!*ret_name) {
                                safe_close(fd);
                                return -ENOMEM;
                        }
                        *ret_dirfd = fd;
                        return 0;
                }
                dfd = openat(mfd, "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (dfd < 0 || fstatat(dfd, comps[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        return -ENOENT;
                if (i + 1 == n) {
                        /* A host directory: every ignored entry below it. */
                        *ret_name = strdup(comps[i]);
                        if (!*ret_name)
                                return -ENOMEM;
                        *ret_dirfd = TAKE_FD(dfd);
                        return 0;
                }
                safe_close(mfd);
                mfd = openat(dfd, comps[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (mfd < 0)
                        return -errno;
        }
        return -ENOENT;
}

/*
 * state reset /workspace[/PATH]: the Ignored Workspace State (spec 4.6), all
 * of it or what lies at one git-ignored path, named as the sandbox sees it.
 * The host's files are never touched. Crash-consistent like a layer's reset:
 * one rename takes it out of use, the trash is emptied after.
 */
static int reset_ignored(const Config *config, const Target *t, const char *rel, int rootfd) {
        _cleanup_free_ char *question = NULL, *shown = NULL, *base = NULL, *why = NULL, *ckdir = NULL;
        _cleanup_close_ int ignfd = -EBADF, dirfd = -EBADF, ckfd = -EBADF;
        char key[CHECKOUT_KEY_MAX];
        const char *ck;
        int r;

        shown = rel[0] ? path_join(SANDBOX_WORKSPACE, rel) : strdup(SANDBOX_WORKSPACE);
        if (!shown)
                return -ENOMEM;
        /* The current checkout's (checkout.h); another checkout's set-aside state is gc's. */
        r = current_checkout_key(config, t->id, key, &why);
        if (r < 0) {
                fprintf(stderr, "Cannot tell which checkout's ignored state to reset: %s\n"
                        "The state of each checkout of Domain %s: lazaretctl state list; a set-aside one is removed by "
                        "lazaretctl state gc.\n", why ?: strerror(-r), t->id);
                return r;
        }
        r = checkout_state_path(t->domain_dir, key, NULL, &ckdir);
        if (r < 0)
                return r;
        ck = ckdir + strlen(t->domain_dir) + 1;
        ckfd = openat(rootfd, ck, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ckfd < 0 && errno == ENOENT) {
                /* State of a Lazaret without checkout identities: its next launch sorts it (adopts or sets aside). */
                if (faccessat(rootfd, VIEW_IGNORED_DIR, F_OK, AT_SYMLINK_NOFOLLOW) >= 0) {
                        printf("Domain %s's ignored state was written by a Lazaret without checkout identities; "
                               "launch once (it is sorted to its checkout then), stop, and reset again.\n", t->id);
                        return 0;
                }
                printf("Domain %s has no ignored workspace state for the checkout at its workspace; nothing to reset.\n",
                       t->id);
                return 0;
        }
        if (ckfd < 0) {
                fprintf(stderr, "Cannot open %s: %m\n", ckdir);
                return -errno;
        }
        ignfd = openat(ckfd, VIEW_IGNORED_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (ignfd < 0 && errno == ENOENT) {
                printf("Domain %s has no ignored workspace state; nothing to reset.\n", t->id);
                return 0;
        }
        if (ignfd < 0) {
                fprintf(stderr, "Cannot open %s/%s: %m\n", ckdir, VIEW_IGNORED_DIR);
                return -errno;
        }
        if (rel[0]) {
                r = find_ignored(ignfd, rel, &dirfd, &base);
                if (r == -ENOENT) {
                        printf("Domain %s has no ignored state at %s; nothing to reset.\n", t->id, shown);
                        return 0;
                }
                if (r < 0) {
                        fprintf(stderr, "Cannot open the ignored state of %s: %s\n", shown, strerror(-r));
                        return r;
                }
        }
        if (asprintf(&question, "Reset the ignored workspace state %s of Domain %s? What the sandbox wrote there "
                     "(dependencies, build output) is lost; the host's own files are not touched.", shown, t->id) < 0)
                return -ENOMEM;
        r = confirm(question);
        if (r < 0)
                return r;
        r = rel[0] ? move_to_trash(rootfd, t, dirfd, base) : move_to_trash(rootfd, t, ckfd, VIEW_IGNORED_DIR);
        if (r < 0) {
                fprintf(stderr, "Cannot move the ignored state of %s out of use: %s\n", shown, strerror(-r));
                return r;
        }
        printf("Reset the ignored workspace state %s of Domain %s; the next launch finds it empty.\n", shown, t->id);
        return 1;
}

/* The question state reset asks: what is reset, of which Domain, and which layers when it is all of them. */
static int reset_question(const Config *config, const Target *t, bool all, char **layers, char **ret) {
        _cleanup_(domain_record_done) DomainRecord rec = {};
        _cleanup_strv_free_ char **paths = NULL;
        _cleanup_free_ char *question = NULL, *scope = NULL, *why = NULL;

        (void) domain_record_load(config->data_root, t->id, &rec, &why);
        if (asprintf(&question, "Reset %s of Domain %s%s%s%s%s%s? Everything installed or changed there is lost.",
                     t->path ? t->path : "every persistent path", t->id, rec.profile ? " (profile " : "",
                     strempty(rec.profile), rec.profile ? ", workspace " : "", rec.profile ? strempty(rec.workspace) : "",
                     rec.profile ? ")" : "") < 0)
                return -ENOMEM;
        if (all) {
                _cleanup_free_ char *q = TAKE_PTR(question);

                STRV_FOREACH(l, layers) {
                        _cleanup_free_ char *p = NULL;
                        if (state_anchor_layer_path(*l, &p) < 0 || strv_extend(&paths, p) < 0)
                                return -ENOMEM;
                }
                scope = strv_join(paths, ", ");
                if (!scope || asprintf(&question, "%s\nLayers: %s (%s)", q, isempty(scope) ? "none" : scope,
                                       t->state_dir) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(question);
        return 0;
}

/*
 * The State Anchor's part of state reset: the layer name (NULL: all of
 * them) out of use by one rename, once confirmed. 0 when done or when there
 * was nothing to reset (said); the trash is emptied by the caller either way.
 */
static int reset_layers(const Config *config, const Target *t, int rootfd, const char *name) {
        _cleanup_strv_free_ char **layers = NULL;
        _cleanup_free_ char *question = NULL;
        struct stat st;
        int r;

        /* Never through a symbolic link: the state directory and the layer are opened below the Domain Root. */
        if (fstatat(rootfd, STATE_ANCHOR_DIR, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
                printf("Domain %s has no State Anchor layers; nothing to reset.\n", t->id);
                return 0;
        }
        r = list_layers(t->state_dir, &layers, NULL);
        if (r < 0) {
                fprintf(stderr, "Cannot read %s: %s\n", t->state_dir, strerror(-r));
                return r;
        }
        if (name && !strv_contains((const char *const *) layers, name)) {
                printf("Domain %s has no State Anchor layer for %s; nothing to reset.\n", t->id, t->path);
                return 0;
        }
        r = reset_question(config, t, !name, layers, &question);
        if (r < 0)
                return r;
        r = confirm(question);
        if (r < 0)
                return r;

        /* One rename takes the layer (or all of them) out of use: the old generation or a new empty one. */
        if (name) {
                _cleanup_close_ int sfd = openat(rootfd, STATE_ANCHOR_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                r = sfd < 0 ? -errno : move_to_trash(rootfd, t, sfd, name);
                if (r < 0) {
                        fprintf(stderr, "Cannot move %s/%s out of use: %s\n", t->state_dir, name, strerror(-r));
                        return r;
                }
        } else {
                r = move_to_trash(rootfd, t, rootfd, STATE_ANCHOR_DIR);
                if (r < 0) {
                        fprintf(stderr, "Cannot move %s out of use: %s\n", t->state_dir, strerror(-r));
                        return r;
                }
        }
        printf("Reset %s of Domain %s; the next launch starts %s from the image.\n",
               t->path ?: "every persistent path", t->id, t->path ? "it" : "them");
        return 0;
}

/* The Domain's trash, emptied in the mapped namespace (its files are of subordinate IDs): 0, or 1 when some stayed. */
static int empty_trash(const Config *config, const Target *t) {
        _cleanup_free_ char *trash = path_join(t->domain_dir, STATE_ANCHOR_TRASH_DIR);
        struct stat st;

        if (!trash)
                return -ENOMEM;
        if (lstat(trash, &st) < 0 || !S_ISDIR(st.st_mode))
                return 0;
        return remove_mapped(trash, config) < 0 ? 1 : 0;
}

static int state_reset(int argc, char *argv[], const Config *config) {
        _cleanup_(target_done) Target t = {};
        const char *ignored = NULL;
        _cleanup_free_ char *name = NULL;
        _cleanup_close_ int lock = -EBADF, rootfd = -EBADF;
        int r;

        r = resolve_target(argc, argv, config, true, &t);
        if (r < 0)
                return r;
        if (t.path) {
                r = state_anchor_layer_name(t.path, &name);
                if (r < 0) {
                        fprintf(stderr, "\"%s\" is not a clean absolute path.\n", t.path);
                        return r;
                }
                /* The workspace is never a persistent directory: below it, the path names ignored state. */
                if (streq(t.path, SANDBOX_WORKSPACE))
                        ignored = "";
                else
                        ignored = startswith(t.path, SANDBOX_WORKSPACE "/");
        }
        r = take_domain_lock(&t, "reset", &lock);
        if (r < 0)
                return r;
        rootfd = open(t.domain_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rootfd < 0) {
                fprintf(stderr, "Cannot open the Domain Root %s: %m\n", t.domain_dir);
                return -errno;
        }
        /* reset_ignored(): 1 when it reset something, 0 when there was nothing (said). */
        r = ignored ? reset_ignored(config, &t, ignored, rootfd) : reset_layers(config, &t, rootfd, name);
        if (r < 0 || (ignored && r == 0))
                return r;
        return empty_trash(config, &t);
}

/* ------------------------------------------------------------------ gc */

/* How old an unleased prepared lower must be before gc removes it: a coordinator
 * that has just prepared (or found) one records its lease right after. */
#define GC_MIN_AGE_SEC (10 * 60)

static bool is_artifact_name(const char *s) {
        size_t n = 0;

        for (; s[n]; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == 64;
}

/* The prepared lowers the Storage Catalog leases, in *ret (replaced); says why not on stderr. */
static int read_leased(StorageCatalog *catalog, char ***ret) {
        _cleanup_free_ char *why = NULL;
        int r;

        *ret = strv_free(*ret);
        r = storage_catalog_leased(catalog, ret, &why);
        if (r < 0)
                fprintf(stderr, "Cannot read the leases of the Storage Catalog: %s; nothing was removed.\n",
                        why ?: strerror(-r));
        return r;
}

/*
 * The state of set-aside checkouts (checkout.h): every checkout directory of a
 * stopped Domain (its lock held by the caller) but the one of the checkout now
 * at its workspace. A Domain whose workspace cannot be identified keeps all
 * (it may be moved away for a while); a running Domain is not touched.
 */
static int gc_checkouts(const Config *config, const char *domains, char **stopped, char **running) {
        _cleanup_strv_free_ char **doomed = NULL, **lines = NULL;
        _cleanup_free_ char *question = NULL, *list = NULL;
        size_t removed = 0;
        int r;

        STRV_FOREACH(id, running) {
                _cleanup_free_ char *dir = path_join(domains, *id);
                _cleanup_strv_free_ char **keys = NULL;

                if (!dir)
                        return -ENOMEM;
                if (list_checkouts(dir, &keys) >= 0 && strv_length(keys) > 1)
                        printf("Not looking at the checkouts of Domain %s: it runs (stop it to remove a set-aside "
                               "checkout's state).\n", *id);
        }
        STRV_FOREACH(id, stopped) {
                _cleanup_free_ char *dir = path_join(domains, *id), *why = NULL;
                _cleanup_strv_free_ char **keys = NULL;
                char current[CHECKOUT_KEY_MAX];

                if (!dir)
                        return -ENOMEM;
                r = list_checkouts(dir, &keys);
                if (r < 0) {
                        fprintf(stderr, "Cannot list %s/%s: %s\n", dir, CHECKOUTS_DIR, strerror(-r));
                        continue;
                }
                if (!keys)
                        continue;
                r = current_checkout_key(config, *id, current, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        printf("Keeping every checkout's state of Domain %s: %s, so which one is current cannot be "
                               "told.\n", *id, why ?: strerror(-r));
                        continue;
                }
                STRV_FOREACH(k, keys) {
                        _cleanup_json_ json_object *o = NULL;
                        _cleanup_free_ char *ws = NULL;
                        char b[32];

                        if (streq(*k, current))
                                continue;
                        r = checkout_json(dir, *k, current, &o);
                        if (r < 0)
                                return r;
                        ws = get_str(o, "workspace") ? escape_control(get_str(o, "workspace")) : NULL;
                        if (strv_extendf(&doomed, "%s/%s", *id, *k) < 0 ||
                            strv_extendf(&lines, "Domain %s, checkout %s (%s, last at %s)", *id, *k,
                                         human_size(get_u64(o, "bytes"), b), ws ?: "?") < 0)
                                return -ENOMEM;
                }
        }
        if (!doomed) {
                printf("No set-aside checkout state to remove.\n");
                return 0;
        }
        list = strv_join(lines, "\n  ");
        if (!list || asprintf(&question, "Remove the Domain state of these %zu set-aside checkouts (protected changes "
                              "never applied, ignored files, git state kept inside)?\n  %s", strv_length(doomed), list) < 0)
                return -ENOMEM;
        r = confirm(question);
        if (r < 0)
                return r;
        for (size_t i = 0; doomed[i]; i++) {
                const char *const *d = (const char *const *) doomed + i;
                _cleanup_free_ char *id = strndup(*d, strcspn(*d, "/")), *trash = NULL;
                _cleanup_(target_done) Target t = {};
                _cleanup_close_ int rootfd = -EBADF, csfd = -EBADF;
                const char *key = *d + strcspn(*d, "/") + 1;

                if (!id || !(t.domain_dir = path_join(domains, id)) || !(trash = path_join(t.domain_dir, STATE_ANCHOR_TRASH_DIR)))
                        return -ENOMEM;
                snprintf(t.id, sizeof(t.id), "%s", id);
                rootfd = open(t.domain_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                csfd = rootfd >= 0 ? openat(rootfd, CHECKOUTS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -EBADF;
                if (csfd < 0) {
                        fprintf(stderr, "Cannot open %s/%s: %m\n", t.domain_dir, CHECKOUTS_DIR);
                        continue;
                }
                r = move_to_trash(rootfd, &t, csfd, key);
                if (r < 0) {
                        fprintf(stderr, "Cannot move %s/%s/%s out of use: %s\n", t.domain_dir, CHECKOUTS_DIR, key,
                                strerror(-r));
                        continue;
                }
                if (remove_mapped(trash, config) >= 0) {
                        printf("Removed: %s\n", lines[i]);
                        removed++;
                }
        }
        printf("Removed the state of %zu set-aside checkouts.\n", removed);
        return removed == strv_length(doomed) ? 0 : 1;
}

/*
 * One Domain's part of gc that needs its store, asked of its coordinator
 * (maintenance.h; lazaretctl never opens a store): the retention of this
 * configuration applied (lazaret.conf(5) "retention", said when it removed
 * something), and the prepared lowers its store leases, in *ret_leased
 * (*ret_known false when they could not be had: said; they count only if
 * the Domain runs). A maintenance coordinator started for it is then
 * ended and its lock waited for, so that the caller can take the lock.
 * 1 done (a Domain that never ran here too); 0 the retention was not
 * applied (said).
 */
static int gc_ask_coordinator(const Config *config, sd_bus *bus, const char *id, const char *dir, char ***ret_leased,
                              bool *ret_known) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *leases = NULL;
        uint64_t events = 0, generations = 0;
        bool retained = true;
        int r;

        *ret_known = true;
        r = ctl_domain_call(config, bus, id, &reply, "ApplyRetention", "uuu", (uint32_t) config->retention.audit_days,
                            (uint32_t) config->retention.audit_events, (uint32_t) config->retention.generations);
        if (r == -ENOENT)
                return 1;       /* no record: no coordinator can start, and no store to trim */
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                retained = false;
        else if (sd_bus_message_read(reply, "tt", &events, &generations) < 0)
                retained = false;
        else if (events > 0 || generations > 0)
                printf("Domain %s: the retention removed %" PRIu64 " audit events and %" PRIu64 " generations from its "
                       "store.\n", id, events, generations);
        r = ctl_domain_call(config, bus, id, &leases, "LeasedLowers", NULL);
        if (r >= 0)
                r = sd_bus_message_read_strv(leases, ret_leased);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                *ret_known = false;
        if (ctl_domain_end_maintenance(bus, id) > 0)
                (void) ctl_domain_wait_stopped(dir, id, CTL_STOP_WAIT_SEC, false);
        return retained ? 1 : 0;
}

/* What state gc holds while it works: the Domains' locks it took, and what it learned on the way. */
typedef struct GcRun {
        const Config *config;
        char *domains, *prepared;
        int locks[1024];
        int n_locks;
        char **stopped;                 /* the Domains whose locks we hold */
        char **running;                 /* the others */
        char **keep;                    /* the prepared lowers leased by running Domains or the Storage Catalog */
        StorageCatalog *catalog;
        bool in_gc;                     /* a catalog transaction is open */
        bool retention_failed;
} GcRun;

static void gc_run_done(GcRun *g) {
        if (g->in_gc)
                (void) storage_catalog_gc_end(g->catalog, false, NULL);
        storage_catalog_close(g->catalog);
        for (int i = 0; i < g->n_locks; i++)
                safe_close(g->locks[i]);
        strv_free(g->stopped);
        strv_free(g->running);
        strv_free(g->keep);
        free(g->domains);
        free(g->prepared);
}

/*
 * Each Domain's store is trimmed and its leases told by its coordinator (a
 * maintenance one for a stopped Domain, ended right after); then every
 * Domain's lock that is free is held until the end: none of them starts
 * meanwhile.
 */
static int gc_hold_domains(GcRun *g, sd_bus *bus) {
        _cleanup_(closedirp) DIR *dd = opendir(g->domains);
        struct dirent *de;
        int r;

        while (dd && (de = readdir(dd))) {
                _cleanup_free_ char *dir = NULL, *lock = NULL;
                _cleanup_strv_free_ char **leased = NULL;
                bool known;
                int fd;

                if (!domain_id_is_valid(de->d_name))
                        continue;
                dir = path_join(g->domains, de->d_name);
                lock = dir ? path_join(dir, "coordinator.lock") : NULL;
                if (!lock)
                        return -ENOMEM;
                r = gc_ask_coordinator(g->config, bus, de->d_name, dir, &leased, &known);
                if (r < 0)
                        return r;
                if (r == 0)
                        g->retention_failed = true;
                fd = open(lock, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
                if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) >= 0 && g->n_locks < (int) ELEMENTSOF(g->locks)) {
                        g->locks[g->n_locks++] = fd;
                        /* stopped: it holds no lease that counts (a catalog lease of it is a dead owner's) */
                        if (strv_extend(&g->stopped, de->d_name) < 0)
                                return -ENOMEM;
                        continue;
                }
                safe_close(fd);
                /* Running (or started since): what its coordinator said it leases counts. */
                if (!known) {
                        fprintf(stderr, "Cannot learn which prepared lowers the running Domain %s leases; nothing was "
                                "removed.\n", de->d_name);
                        return -EIO;
                }
                if (strv_extend_strv(&g->keep, leased) < 0 || strv_extend(&g->running, de->d_name) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/*
 * The Storage Catalog's leases, shared by every Domain (what a running
 * Domain's store says counts too), added to what is kept. 0 done; 1 there
 * are no prepared lowers at all (said).
 */
static int gc_catalog_leases(GcRun *g) {
        _cleanup_free_ char *catalog_path = path_join(g->config->data_root, STORAGE_IMAGES_DIR "/" STORAGE_CATALOG_FILE),
                            *why = NULL;
        _cleanup_strv_free_ char **cataloged = NULL;
        int r;

        if (!catalog_path)
                return -ENOMEM;
        r = storage_catalog_open(catalog_path, &g->catalog, &why);
        if (r < 0 && access(g->prepared, F_OK) < 0 && errno == ENOENT) {
                printf("Nothing to remove: there are no prepared lowers in %s.\n", g->prepared);
                return 1;
        }
        /* A stopped Domain's lease is its dead owner's (a coordinator releases its own when its
         * sandbox has stopped): kept, since that sandbox's mounts may not be gone yet; the
         * Domain's next launch replaces it. */
        if (r >= 0)
                r = storage_catalog_leases(g->catalog, &cataloged, &why);
        STRV_FOREACH(l, cataloged) {
                const char *domain = strchr(*l, ' ');
                size_t n = domain ? strcspn(domain + 1, " ") : 0;

                STRV_FOREACH(d, g->stopped)
                        if (n == strlen(*d) && strncmp(domain + 1, *d, n) == 0)
                                printf("Keeping %.*s: leased by Domain %s, whose coordinator ended without releasing it "
                                       "(launch that Domain once to release it).\n", (int) (domain - *l), *l, *d);
        }
        if (r >= 0)
                r = read_leased(g->catalog, &cataloged);
        if (r < 0)
                return r;
        return strv_extend_strv(&g->keep, cataloged) < 0 ? -ENOMEM : 0;
}

/* The prepared lowers no one keeps and old enough, and failed preparations, sorted, in *ret (NULL: none). */
static int gc_find_doomed(GcRun *g, char ***ret) {
        _cleanup_(closedirp) DIR *pd = opendir(g->prepared);
        _cleanup_strv_free_ char **doomed = NULL;
        struct dirent *de;

        while (pd && (de = readdir(pd))) {
                struct stat st;

                if (fstatat(dirfd(pd), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (startswith(de->d_name, ".quarantine-") ||
                    (!strv_contains((const char *const *) g->keep, de->d_name) && de->d_name[0] != '.' &&
                     (!is_artifact_name(de->d_name) || st.st_mtime + GC_MIN_AGE_SEC < time(NULL))))
                        if (strv_extend(&doomed, de->d_name) < 0)
                                return -ENOMEM;
        }
        strv_sort(doomed);
        *ret = TAKE_PTR(doomed);
        return 0;
}

/*
 * The doomed prepared lowers, once confirmed, each out of use by one
 * rename into a trash directory of prepared/, inside one catalog
 * transaction (a Domain that leased one of them since the question keeps
 * it; one that leases after the commit finds it gone and prepares it
 * again), then deleted in the mapped namespace (their files are of
 * subordinate IDs). 0, or 1 when something could not be removed.
 */
static int gc_remove_lowers(GcRun *g, char **doomed) {
        _cleanup_free_ char *list = NULL, *question = NULL, *trash_name = NULL, *trash = NULL, *why = NULL;
        _cleanup_strv_free_ char **cataloged = NULL;
        _cleanup_close_ int pfd = -EBADF, tfd = -EBADF;
        sd_id128_t rnd;
        int r;

        list = strv_join(doomed, "\n  ");
        if (!list || asprintf(&question, "Remove these %zu unleased prepared lowers and failed preparations from %s?\n  %s",
                              strv_length(doomed), g->prepared, list) < 0)
                return -ENOMEM;
        r = confirm(question);
        if (r < 0)
                return r;
        r = sd_id128_randomize(&rnd);
        if (r < 0)
                return r;
        if (asprintf(&trash_name, ".gc-" SD_ID128_FORMAT_STR, SD_ID128_FORMAT_VAL(rnd)) < 0 ||
            !(trash = path_join(g->prepared, trash_name)))
                return -ENOMEM;
        pfd = open(g->prepared, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pfd < 0 || mkdirat(pfd, trash_name, 0700) < 0 ||
            (tfd = openat(pfd, trash_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
                r = -errno;
                fprintf(stderr, "Cannot create %s: %s\n", trash, strerror(-r));
                return r;
        }
        r = storage_catalog_gc_begin(g->catalog, &why);
        g->in_gc = r >= 0;
        if (r < 0) {
                fprintf(stderr, "Cannot begin a transaction of the Storage Catalog: %s; nothing was removed.\n",
                        why ?: strerror(-r));
                return r;
        }
        r = read_leased(g->catalog, &cataloged);
        if (r < 0)
                return r;
        STRV_FOREACH(d, doomed) {
                if (strv_contains((const char *const *) cataloged, *d)) {
                        printf("Kept %s: a Domain leased it meanwhile.\n", *d);
                        continue;
                }
                if (renameat(pfd, *d, tfd, *d) < 0)
                        fprintf(stderr, "Cannot move %s/%s out of use: %m\n", g->prepared, *d);
                else
                        (void) storage_catalog_forget(g->catalog, *d, NULL);
        }
        (void) fsync(pfd);
        why = mfree(why);
        r = storage_catalog_gc_end(g->catalog, true, &why);
        g->in_gc = false;
        if (r < 0)
                fprintf(stderr, "Cannot commit to the Storage Catalog: %s\n", why ?: strerror(-r));
        if (remove_mapped(trash, g->config) < 0)
                return 1;
        printf("Removed %zu entries from %s.\n", strv_length(doomed), g->prepared);
        return 0;
}

static int state_gc(int argc, char *argv[], const Config *config) {
        _cleanup_(gc_run_done) GcRun g = {
                .config = config,
                .domains = path_join(config->data_root, "domains"),
                .prepared = path_join(config->data_root, STORAGE_PREPARED_DIR),
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_strv_free_ char **doomed = NULL;
        int r;

        if (argc > 1) {
                fprintf(stderr, "\"state gc\" takes no arguments.\n");
                return -EINVAL;
        }
        if (!g.domains || !g.prepared)
                return -ENOMEM;
        r = ctl_bus_open(&bus);
        if (r < 0)
                return r;
        r = gc_hold_domains(&g, bus);
        /* Set-aside checkouts' state of the stopped Domains (their locks are held). */
        if (r >= 0)
                r = gc_checkouts(config, g.domains, g.stopped, g.running);
        if (r >= 0)
                r = gc_catalog_leases(&g);
        if (r == 0)
                r = gc_find_doomed(&g, &doomed);
        if (r == 0 && !doomed)
                printf("Nothing to remove: every prepared lower in %s is leased or new.\n", g.prepared);
        else if (r == 0)
                r = gc_remove_lowers(&g, doomed);
        if (r == 1 && !doomed)
                r = 0;          /* no prepared lowers at all */
        if (r == 0 && g.retention_failed)
                r = 1;
        return r;
}

int verb_state(int argc, char *argv[], const Config *config) {
        const char *sub = argc > 1 ? argv[1] : NULL;

        if (arg_yes && (!sub || (!streq(sub, "reset") && !streq(sub, "gc")))) {
                fprintf(stderr, "--yes is an option of \"state reset\" and \"state gc\" only.\n");
                return -EINVAL;
        }
        if (sub && streq(sub, "list")) {
                if (argc > 2) {
                        fprintf(stderr, "\"state list\" takes no arguments.\n");
                        return -EINVAL;
                }
                return state_list(config);
        }
        if (sub && streq(sub, "inspect"))
                return state_inspect(argc - 1, argv + 1, config);
        if (sub && streq(sub, "verify"))
                return state_verify(argc - 1, argv + 1, config);
        if (sub && streq(sub, "reset"))
                return state_reset(argc - 1, argv + 1, config);
        if (sub && streq(sub, "gc"))
                return state_gc(argc - 1, argv + 1, config);
        fprintf(stderr, "Unknown \"state\" command%s%s; use list, inspect, verify, reset or gc.\n", sub ? " " : "",
                strempty(sub));
        return -EINVAL;
}
