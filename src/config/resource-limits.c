/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "resource-limits.h"
#include "macro.h"
#include "parse-util.h"

const char *const limit_names[] = {
        "memory_max", "memory_high", "tasks_max", "cpu_weight", "tmp_size", "processes", "address_space", "root_size", NULL
};

uint64_t limits_get(const Limits *l, size_t i) {
        switch (i) {
        case 0: return l->memory_max;
        case 1: return l->memory_high;
        case 2: return l->tasks_max;
        case 3: return l->cpu_weight;
        case 4: return l->tmp_size;
        case 5: return l->processes;
        case 6: return l->address_space;
        case 7: return l->root_size;
        }
        return LIMIT_INFINITY;
}

bool limit_is_size(size_t i) {
        return i == 0 || i == 1 || i == 4 || i == 6 || i == 7;
}

uint64_t limits_default_memory_high(uint64_t memory_max) {
        return memory_max == LIMIT_INFINITY ? LIMIT_INFINITY : memory_max / 4 * 3;
}

void limits_default(Limits *ret) {
        *ret = (Limits) {
                .memory_max = LIMIT_DEFAULT_MEMORY_MAX,
                .memory_high = limits_default_memory_high(LIMIT_DEFAULT_MEMORY_MAX),
                .tasks_max = LIMIT_DEFAULT_TASKS_MAX,
                .cpu_weight = LIMIT_DEFAULT_CPU_WEIGHT,
                .tmp_size = LIMIT_DEFAULT_TMP_SIZE,
                .processes = LIMIT_DEFAULT_PROCESSES,
                .address_space = LIMIT_DEFAULT_ADDRESS_SPACE,
                .root_size = LIMIT_DEFAULT_ROOT_SIZE,
        };
}

int limit_parse_size(const char *s, uint64_t *ret) {
        static const char suffixes[] = "KMGT";
        uint64_t v, mult = 1;
        size_t n;
        int r;

        if (!s || !*s)
                return -EINVAL;
        if (strcmp(s, "infinity") == 0) {
                *ret = LIMIT_INFINITY;
                return 0;
        }
        n = strlen(s);
        if (s[n - 1] < '0' || s[n - 1] > '9') {
                const char *x = strchr(suffixes, s[n - 1]);
                if (!x)
                        return -EINVAL;
                mult = 1ULL << (10 * (x - suffixes + 1));
                n--;
        }
        r = parse_unsigned_n(s, n, PARSE_LEADING_ZEROS, 0, INT64_MAX, &v);
        if (r < 0)
                return r;
        if (v > INT64_MAX / mult)
                return -ERANGE;
        *ret = v * mult;
        return 0;
}

const char *limit_format_size(uint64_t v, char buf[static LIMIT_STRING_MAX]) {
        static const char suffixes[] = "TGMK";

        if (v == LIMIT_INFINITY)
                return strcpy(buf, "infinity");
        for (size_t i = 0; v > 0 && i < 4; i++) {
                uint64_t unit = 1ULL << (10 * (4 - i));
                if (v % unit == 0) {
                        snprintf(buf, LIMIT_STRING_MAX, "%llu%c", (unsigned long long) (v / unit), suffixes[i]);
                        return buf;
                }
        }
        snprintf(buf, LIMIT_STRING_MAX, "%llu", (unsigned long long) v);
        return buf;
}

const char *limit_format_count(uint64_t v, char buf[static LIMIT_STRING_MAX]) {
        if (v == LIMIT_INFINITY)
                return strcpy(buf, "infinity");
        snprintf(buf, LIMIT_STRING_MAX, "%llu", (unsigned long long) v);
        return buf;
}
