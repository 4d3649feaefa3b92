/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "parse-util.h"

static int digit_value(char c, ParseFlags flags) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (flags & PARSE_HEX) {
                if (c >= 'a' && c <= 'f')
                        return c - 'a' + 10;
                if (c >= 'A' && c <= 'F')
                        return c - 'A' + 10;
        }
        return -EINVAL;
}

/* The magnitude of the digit run s[0..n), which has no sign. */
static int parse_magnitude(const char *s, size_t n, ParseFlags flags, uint64_t *ret) {
        uint64_t base = flags & PARSE_HEX ? 16 : 10, v = 0;
        bool overflow = false;

        if (!s || n == 0)
                return -EINVAL;
        if (n > 1 && s[0] == '0' && !(flags & PARSE_LEADING_ZEROS))
                return -EINVAL;
        /* Garbage anywhere is -EINVAL, even after digits that overflow. */
        for (size_t i = 0; i < n; i++) {
                int d = digit_value(s[i], flags);

                if (d < 0)
                        return d;
                if (v > (UINT64_MAX - (uint64_t) d) / base)
                        overflow = true;
                else
                        v = v * base + (uint64_t) d;
        }
        if (overflow)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_unsigned_n(const char *s, size_t n, ParseFlags flags, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v;
        int r;

        r = parse_magnitude(s, n, flags, &v);
        if (r < 0)
                return r;
        if (v < min || v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int parse_signed_n(const char *s, size_t n, ParseFlags flags, int64_t min, int64_t max, int64_t *ret) {
        bool negative = false;
        uint64_t v;
        int64_t value;
        int r;

        if (s && n > 0 && s[0] == '-') {
                if (min >= 0)
                        return -EINVAL;         /* no sign where none can be meant */
                negative = true;
                s++;
                n--;
        }
        r = parse_magnitude(s, n, flags, &v);
        if (r < 0)
                return r;
        if (negative && v == 0 && !(flags & PARSE_LEADING_ZEROS))
                return -EINVAL;                 /* "-0": zero is spelled "0" */
        if (negative) {
                if (v > (uint64_t) INT64_MAX + 1)
                        return -ERANGE;
                value = v == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) v;
        } else {
                if (v > (uint64_t) INT64_MAX)
                        return -ERANGE;
                value = (int64_t) v;
        }
        if (value < min || value > max)
                return -ERANGE;
        *ret = value;
        return 0;
}

int parse_unsigned(const char *s, ParseFlags flags, uint64_t min, uint64_t max, uint64_t *ret) {
        if (!s)
                return -EINVAL;
        return parse_unsigned_n(s, strlen(s), flags, min, max, ret);
}

int parse_signed(const char *s, ParseFlags flags, int64_t min, int64_t max, int64_t *ret) {
        if (!s)
                return -EINVAL;
        return parse_signed_n(s, strlen(s), flags, min, max, ret);
}

int parse_int(const char *s, int min, int max, int *ret) {
        int64_t v;
        int r;

        r = parse_signed(s, 0, min, max, &v);
        if (r < 0)
                return r;
        *ret = (int) v;
        return 0;
}

int parse_uint32(const char *s, uint32_t min, uint32_t max, uint32_t *ret) {
        uint64_t v;
        int r;

        r = parse_unsigned(s, 0, min, max, &v);
        if (r < 0)
                return r;
        *ret = (uint32_t) v;
        return 0;
}

int parse_uint64(const char *s, uint64_t min, uint64_t max, uint64_t *ret) {
        return parse_unsigned(s, 0, min, max, ret);
}

static size_t digits(const char *s) {
        size_t n = 0;

        while (s[n] >= '0' && s[n] <= '9')
                n++;
        return n;
}

int parse_double(const char *s, double *ret) {
        const char *p = s;
        size_t n;
        double v;

        if (!s)
                return -EINVAL;
        if (*p == '-')
                p++;
        n = digits(p);
        if (n == 0 || (n > 1 && p[0] == '0'))
                return -EINVAL;
        p += n;
        if (*p == '.') {
                n = digits(++p);
                if (n == 0)
                        return -EINVAL;
                p += n;
        }
        if (*p == 'e' || *p == 'E') {
                p++;
                if (*p == '+' || *p == '-')
                        p++;
                n = digits(p);
                if (n == 0)
                        return -EINVAL;
                p += n;
        }
        if (*p)
                return -EINVAL;
        /* The grammar is strtod()'s decimal form less its extensions: it reads it all. */
        v = strtod(s, NULL);
        if (isinf(v))
                return -ERANGE;
        *ret = v;
        return 0;
}

int split_fields(char *line, const char *sep, char **fields, size_t max) {
        size_t n = 0;

        for (char *p = line + strspn(line, sep); *p; p += strspn(p, sep)) {
                size_t l = strcspn(p, sep);

                if (n == max)
                        return -E2BIG;
                fields[n++] = p;
                p += l;
                if (*p)
                        *p++ = 0;
        }
        return (int) n;
}
