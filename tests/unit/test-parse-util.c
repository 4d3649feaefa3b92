/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "parse-util.h"

#define SENTINEL UINT64_C(0x5a5a5a5a5a5a5a5a)

/* Every refusal leaves *ret alone. */
static int u(const char *s, ParseFlags f, uint64_t min, uint64_t max, uint64_t *ret) {
        uint64_t v = SENTINEL;
        int r = parse_unsigned(s, f, min, max, &v);

        if (r < 0)
                cr_assert_eq(v, SENTINEL, "\"%s\" refused but *ret written", s ?: "(null)");
        *ret = v;
        return r;
}

static int s64(const char *s, ParseFlags f, int64_t min, int64_t max, int64_t *ret) {
        int64_t v = INT64_C(0x5a5a5a5a);
        int r = parse_signed(s, f, min, max, &v);

        if (r < 0)
                cr_assert_eq(v, INT64_C(0x5a5a5a5a), "\"%s\" refused but *ret written", s ?: "(null)");
        *ret = v;
        return r;
}

Test(parse_util, unsigned_decimal) {
        uint64_t v;

        cr_assert_eq(u("0", 0, 0, UINT64_MAX, &v), 0);
        cr_assert_eq(v, 0);
        cr_assert_eq(u("42", 0, 0, UINT64_MAX, &v), 0);
        cr_assert_eq(v, 42);
        cr_assert_eq(u("18446744073709551615", 0, 0, UINT64_MAX, &v), 0);
        cr_assert_eq(v, UINT64_MAX);
        cr_assert_eq(u("18446744073709551616", 0, 0, UINT64_MAX, &v), -ERANGE);
        cr_assert_eq(u("99999999999999999999999", 0, 0, UINT64_MAX, &v), -ERANGE);

        /* Garbage: signs, spaces, prefixes, empty, NULL. */
        const char *bad[] = { "", " 1", "1 ", "\t1", "1\n", "+1", "-1", "-0", "1a", "a1", "0x10", "1.0", "1e3", "1_000", NULL };
        for (size_t i = 0; bad[i]; i++)
                cr_assert_eq(u(bad[i], 0, 0, UINT64_MAX, &v), -EINVAL, "\"%s\" accepted", bad[i]);
        cr_assert_eq(u(NULL, 0, 0, UINT64_MAX, &v), -EINVAL);
        /* Garbage wins over overflow: the text is checked whole first. */
        cr_assert_eq(u("99999999999999999999999x", 0, 0, UINT64_MAX, &v), -EINVAL);
}

Test(parse_util, bounds) {
        uint64_t v;

        cr_assert_eq(u("1024", 0, 1024, 65535, &v), 0);
        cr_assert_eq(v, 1024);
        cr_assert_eq(u("65535", 0, 1024, 65535, &v), 0);
        cr_assert_eq(u("1023", 0, 1024, 65535, &v), -ERANGE);
        cr_assert_eq(u("65536", 0, 1024, 65535, &v), -ERANGE);
        cr_assert_eq(u("0", 0, 1, 1, &v), -ERANGE);
}

Test(parse_util, leading_zeros) {
        uint64_t v;

        cr_assert_eq(u("007", 0, 0, UINT64_MAX, &v), -EINVAL);
        cr_assert_eq(u("00", 0, 0, UINT64_MAX, &v), -EINVAL);
        cr_assert_eq(u("007", PARSE_LEADING_ZEROS, 0, UINT64_MAX, &v), 0);
        cr_assert_eq(v, 7);
        cr_assert_eq(u("00000000000000000000000000018446744073709551615", PARSE_LEADING_ZEROS, 0, UINT64_MAX, &v), 0);
        cr_assert_eq(v, UINT64_MAX);
}

Test(parse_util, hex) {
        uint64_t v;

        cr_assert_eq(u("ff", PARSE_HEX, 0, UINT64_MAX, &v), 0);
        cr_assert_eq(v, 255);
        cr_assert_eq(u("DeadBeef", PARSE_HEX, 0, UINT32_MAX, &v), 0);
        cr_assert_eq(v, 0xdeadbeef);
        cr_assert_eq(u("0100007F", PARSE_HEX | PARSE_LEADING_ZEROS, 0, UINT32_MAX, &v), 0);
        cr_assert_eq(v, 0x0100007f);
        cr_assert_eq(u("0100007F", PARSE_HEX, 0, UINT32_MAX, &v), -EINVAL);
        cr_assert_eq(u("100000000", PARSE_HEX, 0, UINT32_MAX, &v), -ERANGE);
        cr_assert_eq(u("ffffffffffffffff", PARSE_HEX, 0, UINT64_MAX, &v), 0);
        cr_assert_eq(v, UINT64_MAX);
        cr_assert_eq(u("10000000000000000", PARSE_HEX, 0, UINT64_MAX, &v), -ERANGE);
        cr_assert_eq(u("0x1f", PARSE_HEX, 0, UINT64_MAX, &v), -EINVAL);
        cr_assert_eq(u("fg", PARSE_HEX, 0, UINT64_MAX, &v), -EINVAL);
        cr_assert_eq(u(" ff", PARSE_HEX, 0, UINT64_MAX, &v), -EINVAL);
        /* Without PARSE_HEX, hex digits are garbage. */
        cr_assert_eq(u("ff", 0, 0, UINT64_MAX, &v), -EINVAL);
}

Test(parse_util, signed_decimal) {
        int64_t v;

        cr_assert_eq(s64("-1", 0, INT64_MIN, INT64_MAX, &v), 0);
        cr_assert_eq(v, -1);
        cr_assert_eq(s64("9223372036854775807", 0, INT64_MIN, INT64_MAX, &v), 0);
        cr_assert_eq(v, INT64_MAX);
        cr_assert_eq(s64("-9223372036854775808", 0, INT64_MIN, INT64_MAX, &v), 0);
        cr_assert_eq(v, INT64_MIN);
        cr_assert_eq(s64("9223372036854775808", 0, INT64_MIN, INT64_MAX, &v), -ERANGE);
        cr_assert_eq(s64("-9223372036854775809", 0, INT64_MIN, INT64_MAX, &v), -ERANGE);
        cr_assert_eq(s64("-99999999999999999999", 0, INT64_MIN, INT64_MAX, &v), -ERANGE);
        cr_assert_eq(s64("-11", 0, -10, 10, &v), -ERANGE);
        cr_assert_eq(s64("-10", 0, -10, 10, &v), 0);
        cr_assert_eq(v, -10);

        const char *bad[] = { "", "-", "--1", "+1", " -1", "- 1", "-1 ", "-0", "-01", "1-", NULL };
        for (size_t i = 0; bad[i]; i++)
                cr_assert_eq(s64(bad[i], 0, INT64_MIN, INT64_MAX, &v), -EINVAL, "\"%s\" accepted", bad[i]);
        /* A sign only where a negative value can be meant. */
        cr_assert_eq(s64("-1", 0, 0, 10, &v), -EINVAL);
        cr_assert_eq(s64("-0", PARSE_LEADING_ZEROS, -1, 1, &v), 0);
        cr_assert_eq(v, 0);
}

Test(parse_util, length_bounded) {
        uint64_t v = 0;
        int64_t w = 0;

        /* The bytes after n do not count; a NUL inside n is garbage. */
        cr_assert_eq(parse_unsigned_n("123:456", 3, 0, 0, UINT64_MAX, &v), 0);
        cr_assert_eq(v, 123);
        cr_assert_eq(parse_unsigned_n("12\0" "3", 4, 0, 0, UINT64_MAX, &v), -EINVAL);
        cr_assert_eq(parse_unsigned_n("123", 0, 0, 0, UINT64_MAX, &v), -EINVAL);
        cr_assert_eq(parse_signed_n("-5x", 2, 0, -10, 10, &w), 0);
        cr_assert_eq(w, -5);
        cr_assert_eq(parse_signed_n("-5x", 1, 0, -10, 10, &w), -EINVAL);
}

Test(parse_util, typed) {
        uint32_t x = 7;
        uint64_t y = 7;
        int i = 7;

        cr_assert_eq(parse_int("-5", -10, 10, &i), 0);
        cr_assert_eq(i, -5);
        cr_assert_eq(parse_int("2147483648", INT32_MIN, INT32_MAX, &i), -ERANGE);
        cr_assert_eq(parse_int("-2147483648", INT32_MIN, INT32_MAX, &i), 0);
        cr_assert_eq(i, INT32_MIN);
        cr_assert_eq(parse_int("256", 0, 255, &i), -ERANGE);
        cr_assert_eq(i, INT32_MIN);
        cr_assert_eq(parse_uint32("4294967295", 0, UINT32_MAX, &x), 0);
        cr_assert_eq(x, UINT32_MAX);
        cr_assert_eq(parse_uint32("4294967296", 0, UINT32_MAX, &x), -ERANGE);
        cr_assert_eq(parse_uint32("-1", 0, UINT32_MAX, &x), -EINVAL);
        cr_assert_eq(parse_uint64("1", 2, 3, &y), -ERANGE);
        cr_assert_eq(y, 7);
}

Test(parse_util, split_fields) {
        char line[] = "  Iface\tDest  0100007F \t", two[] = "a b c", empty[] = " \t ";
        char *f[3];

        cr_assert_eq(split_fields(line, " \t", f, 3), 3);
        cr_assert_str_eq(f[0], "Iface");
        cr_assert_str_eq(f[1], "Dest");
        cr_assert_str_eq(f[2], "0100007F");
        cr_assert_eq(split_fields(two, " ", f, 2), -E2BIG);
        cr_assert_eq(split_fields(empty, " \t", f, 3), 0);
}

Test(parse_util, double_json_grammar) {
        static const char *const bad[] = { "", "-", "+1", " 1", "1 ", "01", "-01", "1.", ".5", "1e", "1e+", "0x10",
                                           "inf", "-inf", "nan", "1.5f", "1,5", "1e5.0", "--1" };
        double d = 7;

        cr_assert_eq(parse_double("0", &d), 0);
        cr_assert_eq(d, 0);
        cr_assert_eq(parse_double("-0.5", &d), 0);
        cr_assert_eq(d, -0.5);
        cr_assert_eq(parse_double("1.25E+2", &d), 0);
        cr_assert_eq(d, 125);
        cr_assert_eq(parse_double("25e-2", &d), 0);
        cr_assert_eq(d, 0.25);
        cr_assert_eq(parse_double("1e-400", &d), 0);    /* underflow rounds to zero */
        cr_assert_eq(d, 0);
        d = 7;
        cr_assert_eq(parse_double("1e400", &d), -ERANGE);
        cr_assert_eq(parse_double("-1e400", &d), -ERANGE);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_assert_eq(parse_double(bad[i], &d), -EINVAL, "%s", bad[i]);
        cr_assert_eq(parse_double(NULL, &d), -EINVAL);
        cr_assert_eq(d, 7);
}
