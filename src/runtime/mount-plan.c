/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "json-util.h"
#include "macro.h"
#include "mount-plan.h"
#include "path-util.h"
#include "strv.h"
#include "util.h"

static const char *const part_names[_MOUNT_PART_MAX] = {
        [MOUNT_PART_SYSTEM] = "system",
        [MOUNT_PART_TMP] = "tmp",
        [MOUNT_PART_ROOT] = "root",
        [MOUNT_PART_WORKSPACE] = "workspace",
        [MOUNT_PART_GIT_SENTRY] = "git-sentry",
        [MOUNT_PART_CONTROL] = "control",
        [MOUNT_PART_VOLUME] = "volume",
        [MOUNT_PART_RESOLVER] = "resolver",
        [MOUNT_PART_WORKSPACE_VIEW] = "workspace-view",
        [MOUNT_PART_STATE_ANCHOR] = "state-anchor",
        [MOUNT_PART_MAILBOX] = "mailbox",
};

static const char *const kind_names[_MOUNT_KIND_MAX] = {
        [MOUNT_BIND] = "bind",
        [MOUNT_SUPERVISOR] = "supervisor",
        [MOUNT_SANDBOX] = "sandbox",
        [MOUNT_VIEW] = "view",
};

const char *mount_part_to_string(MountPart p) {
        return (unsigned) p < _MOUNT_PART_MAX ? part_names[p] : NULL;
}

int mount_part_from_string(const char *s) {
        for (size_t i = 0; i < _MOUNT_PART_MAX; i++)
                if (streq(s, part_names[i]))
                        return (int) i;
        return -EINVAL;
}

const char *mount_kind_to_string(MountKind k) {
        return (unsigned) k < _MOUNT_KIND_MAX ? kind_names[k] : NULL;
}

int mount_kind_from_string(const char *s) {
        for (size_t i = 0; i < _MOUNT_KIND_MAX; i++)
                if (streq(s, kind_names[i]))
                        return (int) i;
        return -EINVAL;
}

static void entry_done(MountEntry *e) {
        e->destination = mfree(e->destination);
        e->source = mfree(e->source);
        e->fstype = mfree(e->fstype);
        e->data = mfree(e->data);
}

void mount_plan_truncate(MountPlan *p, size_t n) {
        while (p->n_entries > n)
                entry_done(&p->entries[--p->n_entries]);
}

void mount_plan_done(MountPlan *p) {
        for (size_t i = 0; i < p->n_entries; i++)
                entry_done(&p->entries[i]);
        p->entries = mfree(p->entries);
        p->n_entries = 0;
}

/* What oci-spec.c renders before everything else, kept here so that nothing lands on it unasked. */
int mount_plan_init(MountPlan *p) {
        static const struct {
                MountPart part;
                const char *dest, *fstype;
        } base[] = {
                { MOUNT_PART_SYSTEM, "/proc", "proc" },
                { MOUNT_PART_SYSTEM, "/dev", "tmpfs" },
                { MOUNT_PART_SYSTEM, "/sys", "sysfs" },
                { MOUNT_PART_TMP, "/tmp", "tmpfs" },
        };
        int r;

        *p = (MountPlan) {};
        for (size_t i = 0; i < ELEMENTSOF(base); i++) {
                r = mount_plan_add(p, &(MountEntry) {
                                           .part = base[i].part,
                                           .kind = MOUNT_SANDBOX,
                                           .destination = (char *) base[i].dest,
                                           .source = (char *) base[i].fstype,
                                           .fstype = (char *) base[i].fstype,
                                   }, NULL);
                if (r < 0) {
                        mount_plan_done(p);
                        return r;
                }
        }
        return 0;
}

static int check_entry(const MountPlan *p, const MountEntry *e, const char *dest, char **ret_error) {
        const char *part = mount_part_to_string(e->part);

        if (!part)
                return errorf(ret_error, -EINVAL, "mount plan: unknown part %d", (int) e->part);
        if (!mount_kind_to_string(e->kind))
                return errorf(ret_error, -EINVAL, "mount plan: %s: unknown kind %d", part, (int) e->kind);
        if (e->nests_in >= MOUNT_PART_BIT(_MOUNT_PART_MAX))
                return errorf(ret_error, -EINVAL, "mount plan: %s at %s: unknown parts to nest in", part, dest);
        if (p->n_entries >= MOUNT_PLAN_MAX_ENTRIES)
                return errorf(ret_error, -E2BIG, "mount plan: more than %d mounts", MOUNT_PLAN_MAX_ENTRIES);

        switch (e->kind) {
        case MOUNT_BIND:
        case MOUNT_VIEW:
                if (isempty(e->source) || !path_is_absolute(e->source) || path_has_dotdot(e->source))
                        return errorf(ret_error, -EINVAL, "mount plan: %s at %s: the source must be an absolute host path without \"..\"",
                                      part, dest);
                if (e->fstype || (e->kind == MOUNT_BIND && e->data))
                        return errorf(ret_error, -EINVAL, "mount plan: %s at %s: a bind has no file system type or data", part, dest);
                if (e->kind == MOUNT_VIEW && (isempty(e->data) || !e->id.directory || e->part != MOUNT_PART_WORKSPACE_VIEW))
                        return errorf(ret_error, -EINVAL, "mount plan: %s at %s: the workspace view serves a directory and needs its "
                                      "arguments", part, dest);
                break;
        case MOUNT_SUPERVISOR:
        case MOUNT_SANDBOX:
                if (isempty(e->source) || isempty(e->fstype))
                        return errorf(ret_error, -EINVAL, "mount plan: %s at %s: a file system needs a source and a type", part, dest);
                if (e->part == MOUNT_PART_ROOT)
                        return errorf(ret_error, -EINVAL, "mount plan: the root file system must be a bind");
                break;
        default:
                assert_not_reached();
        }
        if (e->kind == MOUNT_SANDBOX && e->part != MOUNT_PART_SYSTEM && e->part != MOUNT_PART_TMP)
                return errorf(ret_error, -EINVAL, "mount plan: %s at %s: only the system mounts and /tmp are made by gVisor itself",
                              part, dest);
        if ((e->part == MOUNT_PART_SYSTEM || e->part == MOUNT_PART_TMP) && e->kind != MOUNT_SANDBOX)
                return errorf(ret_error, -EINVAL, "mount plan: %s at %s: must be made by gVisor itself", part, dest);

        if (e->part == MOUNT_PART_ROOT || streq(dest, "/")) {
                if (e->part != MOUNT_PART_ROOT || !streq(dest, "/"))
                        return errorf(ret_error, -EINVAL, "mount plan: %s: only the root file system is mounted at /",
                                      e->part == MOUNT_PART_ROOT ? "the root file system" : part);
                for (size_t i = 0; i < p->n_entries; i++)
                        if (p->entries[i].part == MOUNT_PART_ROOT)
                                return errorf(ret_error, -EEXIST, "mount plan: a second root file system");
                return 0;
        }

        for (size_t i = 0; i < p->n_entries; i++) {
                const MountEntry *x = &p->entries[i];
                const char *xpart = mount_part_to_string(x->part);

                if (x->part == MOUNT_PART_ROOT)
                        continue;
                if (streq(dest, x->destination))
                        return errorf(ret_error, -EEXIST, "mount plan: %s at %s would cover the %s mount at the same place",
                                      part, dest, xpart);
                if (path_is_at_or_below(x->destination, dest))
                        return errorf(ret_error, -EPERM, "mount plan: %s at %s would hide the %s mount at %s below it",
                                      part, dest, xpart, x->destination);
                if (path_is_at_or_below(dest, x->destination) && !(e->nests_in & MOUNT_PART_BIT(x->part)))
                        return errorf(ret_error, -EPERM, "mount plan: %s at %s lies inside the %s mount at %s, which %s does not nest in",
                                      part, dest, xpart, x->destination, part);
        }
        return 0;
}

static int strdup_or_null(const char *s, char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int mount_plan_add(MountPlan *p, const MountEntry *e, char **ret_error) {
        _cleanup_free_ char *dest = NULL;
        MountEntry copy = {}, *n;
        int r;

        if (!e->destination || !path_is_absolute(e->destination))
                return errorf(ret_error, -EINVAL, "mount plan: %s: the destination \"%s\" is not an absolute path",
                              mount_part_to_string(e->part) ?: "?", e->destination ?: "");
        r = path_normalize(e->destination, &dest);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return errorf(ret_error, -EINVAL, "mount plan: %s: the destination \"%s\" is not a clean absolute path",
                              mount_part_to_string(e->part) ?: "?", e->destination);
        r = check_entry(p, e, dest, ret_error);
        if (r < 0)
                return r;

        copy = *e;
        copy.destination = TAKE_PTR(dest);
        copy.source = copy.fstype = copy.data = NULL;
        if (strdup_or_null(e->source, &copy.source) < 0 || strdup_or_null(e->fstype, &copy.fstype) < 0 ||
            strdup_or_null(e->data, &copy.data) < 0) {
                entry_done(&copy);
                return -ENOMEM;
        }
        n = reallocarray(p->entries, p->n_entries + 1, sizeof(MountEntry));
        if (!n) {
                entry_done(&copy);
                return -ENOMEM;
        }
        p->entries = n;
        p->entries[p->n_entries++] = copy;
        return 0;
}

int mount_plan_add_bind_fd(MountPlan *p, MountPart part, const char *destination, const char *source, int fd,
                           bool read_only, unsigned nests_in, char **ret_error) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return errorf(ret_error, -errno, "cannot inspect %s: %m", source);
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return errorf(ret_error, -EPERM, "%s is neither a directory nor a regular file; it cannot be mounted", source);
        return mount_plan_add(p, &(MountEntry) {
                                      .part = part,
                                      .kind = MOUNT_BIND,
                                      .destination = (char *) destination,
                                      .source = (char *) source,
                                      .read_only = read_only,
                                      .id = { .dev = (uint64_t) st.st_dev, .ino = (uint64_t) st.st_ino,
                                              .directory = S_ISDIR(st.st_mode) },
                                      .nests_in = nests_in,
                              }, ret_error);
}

const MountEntry *mount_plan_find(const MountPlan *p, const char *destination) {
        for (size_t i = 0; i < p->n_entries; i++)
                if (streq(p->entries[i].destination, destination))
                        return &p->entries[i];
        return NULL;
}

bool mount_plan_point_in_image(const MountPlan *p, size_t i) {
        const MountEntry *e;

        if (i >= p->n_entries)
                return false;
        e = &p->entries[i];
        if (e->kind == MOUNT_SANDBOX || e->part == MOUNT_PART_ROOT)
                return false;
        /* The plan refuses a mount above an earlier one: only an earlier entry can hold this one. */
        for (size_t j = 0; j < i; j++) {
                const MountEntry *x = &p->entries[j];

                if (x->kind != MOUNT_SANDBOX && x->part != MOUNT_PART_ROOT && x->part != MOUNT_PART_STATE_ANCHOR &&
                    !streq(x->destination, e->destination) && path_is_at_or_below(e->destination, x->destination))
                        return false;
        }
        return true;
}

char *mount_plan_staged_path(const char *stage_dir, size_t i) {
        char *s;

        if (asprintf(&s, "%s/%zu", stage_dir, i) < 0)
                return NULL;
        return s;
}

int mount_plan_oci_mounts(const MountPlan *p, const char *stage_dir, OciMount **ret, size_t *ret_n,
                          char ***ret_strings) {
        static const char *const rw[] = { "rbind", "rw", NULL };
        static const char *const ro[] = { "rbind", "ro", NULL };
        _cleanup_strv_free_ char **strings = NULL;
        _cleanup_free_ OciMount *m = NULL;
        size_t n = 0;
        int r;

        m = calloc(p->n_entries + 1, sizeof(OciMount));
        if (!m)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_entries; i++) {
                const MountEntry *e = &p->entries[i];
                char *staged;

                if (e->kind == MOUNT_SANDBOX || e->part == MOUNT_PART_ROOT)
                        continue;
                staged = mount_plan_staged_path(stage_dir, i);
                if (!staged)
                        return -ENOMEM;
                r = strv_push(&strings, staged);
                if (r < 0)
                        return r;
                m[n++] = (OciMount) { e->destination, "bind", staged, e->read_only ? ro : rw };
        }
        *ret = TAKE_PTR(m);
        *ret_n = n;
        *ret_strings = TAKE_PTR(strings);
        return 0;
}

/* ---------------------------------------------------------------- JSON */

/* Built with json-util's checked adds; a NULL string leaves its key out. */
static int add_string(json_object *o, const char *key, const char *s) {
        return s ? json_add_string(o, key, s) : 0;
}

static int entry_to_json(const MountEntry *e, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object(), *nests = json_object_new_array();
        int r;

        if (!o || !nests)
                return -ENOMEM;
        for (size_t i = 0; i < _MOUNT_PART_MAX; i++)
                if (e->nests_in & MOUNT_PART_BIT(i)) {
                        r = json_append_string(nests, part_names[i]);
                        if (r < 0)
                                return r;
                }
        r = add_string(o, "part", part_names[e->part]);
        if (r >= 0)
                r = add_string(o, "kind", kind_names[e->kind]);
        if (r >= 0)
                r = add_string(o, "destination", e->destination);
        if (r >= 0)
                r = add_string(o, "source", e->source);
        if (r >= 0)
                r = add_string(o, "fstype", e->fstype);
        if (r >= 0)
                r = add_string(o, "data", e->data);
        if (r >= 0)
                r = json_add_bool(o, "read_only", e->read_only);
        if (r >= 0 && (e->kind == MOUNT_BIND || e->kind == MOUNT_VIEW)) {
                r = add_string(o, "type", e->id.directory ? "directory" : "file");
                if (r >= 0)
                        r = json_add_uint64(o, "dev", e->id.dev);
                if (r >= 0)
                        r = json_add_uint64(o, "ino", e->id.ino);
        }
        if (r >= 0)
                r = json_add(o, "nests_in", TAKE_PTR(nests));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int mount_plan_to_json(const MountPlan *p, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object(), *a = json_object_new_array();
        int r;

        if (!o || !a)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_entries; i++) {
                json_object *e = NULL;

                r = entry_to_json(&p->entries[i], &e);
                if (r < 0)
                        return r;
                r = json_append(a, e);
                if (r < 0)
                        return r;
        }
        r = json_add(o, "entries", TAKE_PTR(a));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int mount_plan_to_string(const MountPlan *p, char **ret) {
        _cleanup_json_ json_object *o = NULL;
        int r;

        r = mount_plan_to_json(p, &o);
        if (r < 0)
                return r;
        return json_to_string(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, ret);
}

static int get_string(json_object *o, const char *key, bool required, const char *where, const char **ret,
                      char **ret_error) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v)) {
                *ret = NULL;
                return required ? errorf(ret_error, -EBADMSG, "mount plan: %s: \"%s\" is missing", where, key) : 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return errorf(ret_error, -EBADMSG, "mount plan: %s: \"%s\" is not a string", where, key);
        *ret = json_object_get_string(v);
        return 0;
}

static int get_u64(json_object *o, const char *key, const char *where, uint64_t *ret, char **ret_error) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v))
                return errorf(ret_error, -EBADMSG, "mount plan: %s: \"%s\" is missing", where, key);
        /* json-c reads non-negative integers up to UINT64_MAX as int (or uint64 above INT64_MAX). */
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
                return errorf(ret_error, -EBADMSG, "mount plan: %s: \"%s\" is not a non-negative integer", where, key);
        *ret = json_object_get_uint64(v);
        return 0;
}

static int entry_from_json(MountPlan *p, json_object *o, size_t i, char **ret_error) {
        static const char *const keys[] = { "part", "kind", "destination", "source", "fstype", "data", "read_only",
                                            "type", "dev", "ino", "nests_in", NULL };
        const char *part = NULL, *kind = NULL, *dest = NULL, *source = NULL, *fstype = NULL, *data = NULL, *type = NULL;
        MountEntry e = {};
        json_object *v;
        char where[32];
        int r;

        snprintf(where, sizeof(where), "entries[%zu]", i);
        if (!json_object_is_type(o, json_type_object))
                return errorf(ret_error, -EBADMSG, "mount plan: %s is not an object", where);
        json_object_object_foreach(o, key, val) {
                (void) val;
                if (!strv_contains(keys, key))
                        return errorf(ret_error, -EBADMSG, "mount plan: %s: unknown key \"%s\"", where, key);
        }
        r = get_string(o, "part", true, where, &part, ret_error);
        if (r >= 0)
                r = get_string(o, "kind", true, where, &kind, ret_error);
        if (r >= 0)
                r = get_string(o, "destination", true, where, &dest, ret_error);
        if (r >= 0)
                r = get_string(o, "source", true, where, &source, ret_error);
        if (r >= 0)
                r = get_string(o, "fstype", false, where, &fstype, ret_error);
        if (r >= 0)
                r = get_string(o, "data", false, where, &data, ret_error);
        if (r < 0)
                return r;
        r = mount_part_from_string(part);
        if (r < 0)
                return errorf(ret_error, -EBADMSG, "mount plan: %s: unknown part \"%s\"", where, part);
        e.part = r;
        r = mount_kind_from_string(kind);
        if (r < 0)
                return errorf(ret_error, -EBADMSG, "mount plan: %s: unknown kind \"%s\"", where, kind);
        e.kind = r;
        if (!json_object_object_get_ex(o, "read_only", &v) || !json_object_is_type(v, json_type_boolean))
                return errorf(ret_error, -EBADMSG, "mount plan: %s: \"read_only\" is missing or not a boolean", where);
        e.read_only = json_object_get_boolean(v);
        if (e.kind == MOUNT_BIND || e.kind == MOUNT_VIEW) {
                r = get_string(o, "type", true, where, &type, ret_error);
                if (r < 0)
                        return r;
                if (!streq(type, "directory") && !streq(type, "file"))
                        return errorf(ret_error, -EBADMSG, "mount plan: %s: \"type\" is neither \"directory\" nor \"file\"", where);
                e.id.directory = streq(type, "directory");
                r = get_u64(o, "dev", where, &e.id.dev, ret_error);
                if (r >= 0)
                        r = get_u64(o, "ino", where, &e.id.ino, ret_error);
                if (r < 0)
                        return r;
        } else if (json_object_object_get_ex(o, "type", NULL) || json_object_object_get_ex(o, "dev", NULL) ||
                   json_object_object_get_ex(o, "ino", NULL))
                return errorf(ret_error, -EBADMSG, "mount plan: %s: only a bind or the view has a type, dev and ino", where);
        if (!json_object_object_get_ex(o, "nests_in", &v) || !json_object_is_type(v, json_type_array))
                return errorf(ret_error, -EBADMSG, "mount plan: %s: \"nests_in\" is missing or not an array", where);
        for (size_t k = 0; k < json_object_array_length(v); k++) {
                json_object *s = json_object_array_get_idx(v, k);
                int np = json_object_is_type(s, json_type_string) ? mount_part_from_string(json_object_get_string(s)) : -EINVAL;
                if (np < 0 || (e.nests_in & MOUNT_PART_BIT(np)))
                        return errorf(ret_error, -EBADMSG, "mount plan: %s: nests_in[%zu] is not a part named once", where, k);
                e.nests_in |= MOUNT_PART_BIT(np);
        }
        e.destination = (char *) dest;
        e.source = (char *) source;
        e.fstype = (char *) fstype;
        e.data = (char *) data;
        return mount_plan_add(p, &e, ret_error);
}

int mount_plan_from_json(const char *text, size_t len, MountPlan *ret, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *why = NULL;
        _cleanup_(mount_plan_done) MountPlan p = {};
        json_object *a;
        size_t n;
        int r;

        if (len > MOUNT_PLAN_DOC_MAX)
                return errorf(ret_error, -EFBIG, "mount plan: larger than %d bytes", MOUNT_PLAN_DOC_MAX);
        r = json_parse_strict(text, len, &o, &why);
        if (r < 0)
                return errorf(ret_error, r == -ENOMEM ? r : -EBADMSG, "mount plan: %s", why ?: "not valid JSON");
        if (!json_object_is_type(o, json_type_object))
                return errorf(ret_error, -EBADMSG, "mount plan: not a JSON object");
        json_object_object_foreach(o, key, val) {
                (void) val;
                if (!streq(key, "entries"))
                        return errorf(ret_error, -EBADMSG, "mount plan: unknown key \"%s\"", key);
        }
        if (!json_object_object_get_ex(o, "entries", &a) || !json_object_is_type(a, json_type_array))
                return errorf(ret_error, -EBADMSG, "mount plan: \"entries\" is missing or not an array");
        n = json_object_array_length(a);
        if (n > MOUNT_PLAN_MAX_ENTRIES)
                return errorf(ret_error, -E2BIG, "mount plan: more than %d mounts", MOUNT_PLAN_MAX_ENTRIES);
        for (size_t i = 0; i < n; i++) {
                r = entry_from_json(&p, json_object_array_get_idx(a, i), i, ret_error);
                if (r < 0)
                        return r;
        }
        *ret = p;
        p = (MountPlan) {};
        return 0;
}
