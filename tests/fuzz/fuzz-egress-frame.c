/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the egress helper's frame filter (frame_parse(),
 * src/egress/egress-frame.c) on a frame the sandbox wrote to tap0, and the
 * helper's own replies built from what it read. Every pointer it returns
 * lies inside the frame, a reply re-reads as the kind it is, and the
 * builders never write past the size given.
 */
#include <stdlib.h>
#include <string.h>

#include "egress-frame.h"
#include "fuzz.h"

bool fuzz_accepted = false;

static void inside(const uint8_t *p, size_t n, const uint8_t *data, size_t size) {
        if (p && (p < data || p + n > data + size))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static uint8_t out[EGRESS_FRAME_MAX + 64];
        FrameInfo f, g;
        size_t n;

        frame_parse(data, size, &f);
        fuzz_accepted = f.kind != FRAME_DROP;
        if (f.kind == FRAME_DROP) {
                if (!f.why)
                        abort();
                return 0;
        }
        inside(f.ip, f.ip_len, data, size);
        inside(f.payload, f.payload_len, data, size);
        if (f.kind == FRAME_UDP) {
                n = frame_build_udp_reply(&f, f.payload, f.payload_len, out, sizeof(out));
                frame_parse(out, n, &g);
                if (n > 0 && (g.kind != FRAME_UDP || g.payload_len != f.payload_len || g.src != f.dst))
                        abort();
        }
        if (f.ip) {
                n = frame_build_icmp_unreach(&f, ICMP_UNREACH_PORT, out, 40);
                if (n > 40)
                        abort();
                n = frame_build_icmp_unreach(&f, ICMP_UNREACH_PORT, out, sizeof(out));
                frame_parse(out, n, &g);
                if (n == 0 || g.kind != FRAME_ICMP)
                        abort();
        }
        if (f.kind == FRAME_TCP_SYN) {
                n = frame_build_tcp_rst(&f, out, sizeof(out));
                frame_parse(out, n, &g);
                if (g.kind != FRAME_TCP || g.dport != f.sport)
                        abort();
        }
        return 0;
}
