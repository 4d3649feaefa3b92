/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cleanup.h"
#include "hash.h"
#include "json-util.h"
#include "oci-image.h"
#include "strv.h"
#include "util.h"

#define OCI_MAX_ENTRIES 256

int oci_index_digest(const char *index_json, size_t n, const char *tag, char **ret_digest, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *why = NULL;
        json_object *manifests;
        const char *found = NULL;
        int r;

        r = json_parse_strict(index_json, n, &o, &why);
        if (r == -ENOMEM)
                return errorf(ret_error, r, "out of memory");
        if (r < 0 || !json_object_object_get_ex(o, "manifests", &manifests) ||
            !json_object_is_type(manifests, json_type_array))
                return errorf(ret_error, -EBADMSG, "not an OCI image index (%s)", why ?: "no \"manifests\" array");
        /* Every entry is looked at: a tag given twice is refused, not read
         * as its first entry, since umoci (which unpacks the image) and we
         * must not pick different manifests. */
        for (size_t i = 0; i < json_object_array_length(manifests); i++) {
                json_object *e = json_object_array_get_idx(manifests, i), *ann, *name, *digest;
                const char *d;

                if (!json_object_object_get_ex(e, "annotations", &ann) ||
                    !json_object_object_get_ex(ann, "org.opencontainers.image.ref.name", &name) ||
                    !json_object_is_type(name, json_type_string) ||
                    !streq(json_object_get_string(name), tag))
                        continue;
                if (found)
                        return errorf(ret_error, -EBADMSG, "more than one manifest is tagged \"%s\"", tag);
                if (!json_object_object_get_ex(e, "digest", &digest) || !json_object_is_type(digest, json_type_string))
                        return errorf(ret_error, -EBADMSG, "the manifest tagged \"%s\" has no digest", tag);
                d = startswith(json_object_get_string(digest), "sha256:");
                if (!d || strlen(d) != 64 || strspn(d, "0123456789abcdef") != 64)
                        return errorf(ret_error, -EBADMSG, "the manifest tagged \"%s\" has no sha256 digest", tag);
                found = d;
        }
        if (!found)
                return errorf(ret_error, -ENOENT, "no image tagged \"%s\"", tag);
        *ret_digest = strdup(found);
        return *ret_digest ? 0 : -ENOMEM;
}

static int string_array(json_object *a, bool env, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;

        if (!json_object_is_type(a, json_type_array))
                return -EBADMSG;
        if (json_object_array_length(a) > OCI_MAX_ENTRIES)
                return -E2BIG;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *e = json_object_array_get_idx(a, i);
                const char *s;

                if (!json_object_is_type(e, json_type_string))
                        return -EBADMSG;
                s = json_object_get_string(e);
                if (env && (!strchr(s, '=') || s[0] == '=' || startswith(s, "LAZARET_")))
                        continue;
                if (strv_extend(&l, s) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int oci_bundle_process(const char *config_json, size_t n, char ***ret_env, char ***ret_cmd, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *why = NULL;
        _cleanup_strv_free_ char **env = NULL, **cmd = NULL;
        json_object *process, *a;
        int r;

        r = json_parse_strict(config_json, n, &o, &why);
        if (r == -ENOMEM)
                return errorf(ret_error, r, "out of memory");
        if (r < 0)
                return errorf(ret_error, -EBADMSG, "not a JSON document (%s)", strna(why));
        if (!json_object_is_type(o, json_type_object))
                return errorf(ret_error, -EBADMSG, "not a JSON object");
        if (json_object_object_get_ex(o, "process", &process)) {
                /* json-c finds no key in a non-object: say so, not "no env". */
                if (!json_object_is_type(process, json_type_object))
                        return errorf(ret_error, -EBADMSG, "process is not an object");
                if (json_object_object_get_ex(process, "env", &a)) {
                        r = string_array(a, true, &env);
                        if (r == -ENOMEM)
                                return errorf(ret_error, r, "out of memory");
                        if (r < 0)
                                return errorf(ret_error, r, "process.env is not an array of at most %d strings", OCI_MAX_ENTRIES);
                }
                if (json_object_object_get_ex(process, "args", &a)) {
                        r = string_array(a, false, &cmd);
                        if (r == -ENOMEM)
                                return errorf(ret_error, r, "out of memory");
                        if (r < 0)
                                return errorf(ret_error, r, "process.args is not an array of at most %d strings", OCI_MAX_ENTRIES);
                }
        }
        *ret_env = TAKE_PTR(env);
        *ret_cmd = TAKE_PTR(cmd);
        return 0;
}

static bool is_hex64(const char *s) {
        size_t n = 0;

        for (; s[n]; n++)
                if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
                        return false;
        return n == 64;
}

int prepared_artifact_id(const char *manifest_digest, const char *preparer, uint32_t uid, const SubidRange *uids,
                         uint32_t gid, const SubidRange *gids, char ret[PREPARED_ID_LEN + 1]) {
        _cleanup_free_ char *text = NULL;
        uint8_t h[SHA256_DIGEST_LEN];
        int n;

        if (!manifest_digest || !is_hex64(manifest_digest) || isempty(preparer) || strchr(preparer, '\n'))
                return -EINVAL;
        n = asprintf(&text, "lazaret-prepared-artifact-1\nmanifest=sha256:%s\npreparer=%s\n"
                     "uid_map=0 %" PRIu32 " 1,1 %" PRIu32 " %" PRIu32 "\ngid_map=0 %" PRIu32 " 1,1 %" PRIu32 " %" PRIu32 "\n",
                     manifest_digest, preparer, uid, uids->start, uids->count, gid, gids->start, gids->count);
        if (n < 0)
                return -ENOMEM;
        sha256_buf(text, (size_t) n, h);
        hexify(h, sizeof(h), ret);
        ret[PREPARED_ID_LEN] = 0;
        return 0;
}
