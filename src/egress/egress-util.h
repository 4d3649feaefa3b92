/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/param.h>

/*
 * Bytes from the sandbox or a configuration, made safe to quote in a
 * message: printable ASCII kept (but '"' and '\\' escaped), every other
 * byte as \xNN, cut after EGRESS_SHOW_BYTES input bytes with "...".
 */
#define EGRESS_SHOW_BYTES 48
#define EGRESS_SHOW_MAX (EGRESS_SHOW_BYTES * 4 + 4)
const char *egress_show(const void *s, size_t n, char buf[static EGRESS_SHOW_MAX]);

/* Big-endian reads from bytes the caller has checked are there. */
static inline uint16_t get_be16(const uint8_t *p) {
        return (uint16_t) ((uint16_t) p[0] << 8 | p[1]);
}
static inline uint32_t get_be24(const uint8_t *p) {
        return (uint32_t) p[0] << 16 | (uint32_t) p[1] << 8 | p[2];
}
static inline uint32_t get_be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}
static inline void put_be16(uint8_t *p, uint16_t v) {
        p[0] = (uint8_t) (v >> 8);
        p[1] = (uint8_t) v;
}
static inline void put_be32(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) (v >> 24);
        p[1] = (uint8_t) (v >> 16);
        p[2] = (uint8_t) (v >> 8);
        p[3] = (uint8_t) v;
}
