/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>

#include "bus-names.h"
#include "macro.h"

void domain_bus_name(const char *id, char ret[BUS_NAME_MAX]) {
        snprintf(ret, BUS_NAME_MAX, "%s%s", LAZARET_BUS_NAME_PREFIX, id);
}

void domain_unit_name(const char *id, const char *suffix, char ret[UNIT_NAME_MAX]) {
        snprintf(ret, UNIT_NAME_MAX, "lazaret@%s.%s", id, suffix);
}

void domain_scope_name(const char *id, char ret[UNIT_NAME_MAX]) {
        snprintf(ret, UNIT_NAME_MAX, "lazaret-%s-sandbox.scope", id);
}

const char *domain_id_from_bus_name(const char *name) {
        const char *id = startswith(name, LAZARET_BUS_NAME_PREFIX);
        return id && domain_id_is_valid(id) ? id : NULL;
}
