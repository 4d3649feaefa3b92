/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A Domain's resource limits (a profile's "limits", lazaret.conf(5)). Four
 * are enforced inside the sandbox (tmp_size, processes and address_space
 * by gVisor, root_size by the tmpfs that holds the root overlay's file
 * store, supervisor.c); the others are properties of the sandbox's transient
 * scope, enforced where the host delegates the controllers to the user
 * manager. LIMIT_INFINITY means "no limit".
 */

#define LIMIT_INFINITY UINT64_MAX

typedef struct Limits {
        uint64_t memory_max;            /* bytes: scope MemoryMax= */
        uint64_t memory_high;           /* bytes: scope MemoryHigh= */
        uint64_t tasks_max;             /* host tasks: scope TasksMax= */
        uint64_t cpu_weight;            /* 1..10000: scope CPUWeight= (never infinity) */
        uint64_t tmp_size;              /* bytes: size= of the /tmp tmpfs (never infinity) */
        uint64_t processes;             /* RLIMIT_NPROC inside */
        uint64_t address_space;         /* bytes: RLIMIT_AS inside */
        uint64_t root_size;             /* bytes: the root overlay's file store (never infinity) */
} Limits;

/* The defaults (spec §6, C18). memory_high defaults to 3/4 of memory_max. */
#define LIMIT_DEFAULT_MEMORY_MAX (8ULL << 30)
#define LIMIT_DEFAULT_TASKS_MAX 4096ULL
#define LIMIT_DEFAULT_CPU_WEIGHT 100ULL
#define LIMIT_DEFAULT_TMP_SIZE (1ULL << 30)
#define LIMIT_DEFAULT_PROCESSES 1024ULL
#define LIMIT_DEFAULT_ADDRESS_SPACE (16ULL << 30)
#define LIMIT_DEFAULT_ROOT_SIZE (4ULL << 30)

/* Lower bounds: below these a sandbox cannot start or run a shell. */
#define LIMIT_MIN_MEMORY (256ULL << 20)
#define LIMIT_MIN_TASKS 64ULL
#define LIMIT_MIN_TMP_SIZE (1ULL << 20)
#define LIMIT_MIN_PROCESSES 16ULL
#define LIMIT_MIN_ADDRESS_SPACE (64ULL << 20)
#define LIMIT_MIN_ROOT_SIZE (4ULL << 20)
#define LIMIT_CPU_WEIGHT_MIN 1ULL
#define LIMIT_CPU_WEIGHT_MAX 10000ULL

/* gVisor needs about two host tasks per sandbox process (systrap stubs), plus its own threads. */
#define LIMIT_HOST_TASKS_PER_PROCESS 2ULL
#define LIMIT_HOST_TASKS_OVERHEAD 256ULL

void limits_default(Limits *ret);

/* memory_high when only memory_max was given. */
uint64_t limits_default_memory_high(uint64_t memory_max);

/*
 * Parses "N", "NK", "NM", "NG" or "NT" (binary multiples, upper case) into
 * bytes, and "infinity" into LIMIT_INFINITY. Strict: no spaces, signs,
 * fractions or other suffixes. -EINVAL for a malformed string, -ERANGE for
 * one that does not fit in 63 bits.
 */
int limit_parse_size(const char *s, uint64_t *ret);

#define LIMIT_STRING_MAX 24

/* "infinity", else with a K/M/G/T suffix when the value is an exact multiple, else the bytes. */
const char *limit_format_size(uint64_t v, char buf[static LIMIT_STRING_MAX]);
/* "infinity" or the decimal number. */
const char *limit_format_count(uint64_t v, char buf[static LIMIT_STRING_MAX]);

/* The names of the limits in configuration order, and their values by index. */
extern const char *const limit_names[];
uint64_t limits_get(const Limits *l, size_t i);
bool limit_is_size(size_t i);
