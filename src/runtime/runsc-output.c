/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "cleanup.h"
#include "json-util.h"
#include "runsc-output.h"
#include "util.h"

int runsc_wait_status(const char *text, size_t len, int *ret_status, char **ret_error) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *why = NULL;
        json_object *v;
        int64_t status;
        int r;

        *ret_error = NULL;
        r = json_parse_strict(text, len, &o, &why);
        if (r < 0)
                return errorf(ret_error, r, "runsc wait: %s", why ?: "out of memory");
        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "exitStatus", &v) ||
            !json_object_is_type(v, json_type_int))
                return errorf(ret_error, -EBADMSG, "runsc wait: no integer \"exitStatus\" in its answer");
        status = json_object_get_int64(v);
        if (status < 0 || status > 255)
                return errorf(ret_error, -ERANGE, "runsc wait: exit status %lld is not one a process can have",
                              (long long) status);
        *ret_status = (int) status;
        return 0;
}
