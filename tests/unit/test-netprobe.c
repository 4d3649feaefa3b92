/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The probe's reading of /proc/net/route (lazaret-init, inside the sandbox). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netprobe.h"

#define HEADER "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT"

static char *dump(const char *table) {
        char *buf = NULL;
        size_t len = 0;
        FILE *in = fmemopen((void *) table, strlen(table), "r"), *out = open_memstream(&buf, &len);

        cr_assert_not_null(in);
        cr_assert_not_null(out);
        netprobe_dump_routes(in, out);
        fclose(in);
        cr_assert_eq(fclose(out), 0);
        return buf;
}

Test(netprobe, routes_as_linux_and_gvisor_print_them) {
        /* gVisor pads every line to 127 columns with spaces. */
        char *r = dump(HEADER "                                              \n"
                       "tap0\t0236890A\t00000000\t0001\t0\t0\t5\tFFFFFFFF\t0\t0\t0                                 \n"
                       "deny0\t0000000A\t0A37890A\t0003\t0\t0\t100\t000000FF\t0\t0\t0\n");

        cr_assert_str_eq(r, "route tap0 0236890A 00000000 0001 FFFFFFFF 5\n"
                            "route deny0 0000000A 0A37890A 0003 000000FF 100\n");
        free(r);
}

Test(netprobe, an_unreadable_line_ends_the_table) {
        static const char *const bad[] = {
                "tap0\t0236890A\t00000000\t0001\t0\t0\t-1\tFFFFFFFF\t0\t0\t0\n",        /* a sign */
                "tap0\t0236890A\t00000000\t0001\t0\t0\t+5\tFFFFFFFF\t0\t0\t0\n",
                "tap0\t236890A\t00000000\t0001\t0\t0\t5\tFFFFFFFF\t0\t0\t0\n",          /* seven digits */
                "tap0\t0x36890A\t00000000\t0001\t0\t0\t5\tFFFFFFFF\t0\t0\t0\n",
                "tap0\t0236890A\t00000000\t0001\t0\t0\t4294967296\tFFFFFFFF\t0\t0\t0\n",
                "tap0\t0236890A\t00000000\t0001\t0\t0\t5\tFFFFFFFF\t0\t0\n",           /* a column short */
                "tap0\t0236890A\t00000000\t0001\t0\t0\t5\tFFFFFFFF\t0\t0\t0\t0\n",     /* one more */
                "tap0\t0236890A\t00000000\t0001\t0\t0\t5\tFFFFFFFF\t0\t0\t0",          /* cut short */
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char table[512], *r;

                snprintf(table, sizeof(table), "%s\n%s%s", HEADER,
                         "eth0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n", bad[i]);
                r = dump(table);
                cr_expect_str_eq(r, "route eth0 0000000A 00000000 0001 000000FF 0\n"
                                    "route-error unreadable line in /proc/net/route\n", "line %zu: %s", i, r);
                free(r);
        }
        char *r = dump("garbage\n");
        cr_expect_str_eq(r, "route-error no header in /proc/net/route\n");
        free(r);
}
