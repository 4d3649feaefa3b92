/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * The one way Lazaret reads a number from text. The grammar is strict:
 *   - digits only (0-9, or 0-9a-fA-F with PARSE_HEX; no "0x" prefix);
 *   - a leading '-' only in the signed parsers, and only when min < 0;
 *     never a '+', never a space before, inside or after the digits;
 *   - no leading zeros ("007", "-0") unless PARSE_LEADING_ZEROS: a value
 *     has one spelling where Lazaret owns the format;
 *   - not empty.
 * Anything else is -EINVAL (checked over the whole text first), a value
 * outside [min, max] or beyond 64 bits -ERANGE. *ret is written only on
 * success. Only these headers: lazaret-init, static, compiles the .c alone.
 */
typedef enum ParseFlags {
        PARSE_HEX           = 1 << 0,   /* base 16 */
        PARSE_LEADING_ZEROS = 1 << 1,   /* files others write: /proc, /etc/subuid */
} ParseFlags;

/* The n bytes at s (no NUL needed); a NUL among them is garbage. */
int parse_unsigned_n(const char *s, size_t n, ParseFlags flags, uint64_t min, uint64_t max, uint64_t *ret);
int parse_signed_n(const char *s, size_t n, ParseFlags flags, int64_t min, int64_t max, int64_t *ret);

/* The same over a NUL-terminated string; NULL is -EINVAL. */
int parse_unsigned(const char *s, ParseFlags flags, uint64_t min, uint64_t max, uint64_t *ret);
int parse_signed(const char *s, ParseFlags flags, int64_t min, int64_t max, int64_t *ret);

/* Typed shorthands for the common cases: decimal, canonical spelling. */
int parse_int(const char *s, int min, int max, int *ret);
int parse_uint32(const char *s, uint32_t min, uint32_t max, uint32_t *ret);
int parse_uint64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/*
 * A decimal floating-point number as JSON spells it (RFC 8259, section 6):
 * an optional '-', "0" or digits with no leading zero, then optionally a
 * '.' and digits, then optionally 'e' or 'E', a sign and digits. No '+' in
 * front, no spaces, no hex, no "inf" or "nan": -EINVAL. -ERANGE when it is
 * too large for a double; one too small becomes 0 or a subnormal, as
 * strtod() rounds it. Lazaret sets no locale: the decimal point is '.'.
 */
int parse_double(const char *s, double *ret);

/*
 * Splits line in place at runs of the bytes in sep (leading and trailing
 * ones ignored) into fields[0..max). Returns the number of fields, or
 * -E2BIG when there are more than max: for the columns of /proc files.
 */
int split_fields(char *line, const char *sep, char **fields, size_t max);
