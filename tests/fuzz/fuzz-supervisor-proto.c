/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the coordinator's decoder of the Runtime Supervisor's reports
 * (supervisor_msg_decode(), src/codec/supervisor-proto.c), one datagram per
 * input. The grammar has one spelling per message, so an accepted datagram
 * must encode back to exactly its own bytes: the decoder can neither accept
 * a variant spelling nor read a field other than the encoder wrote it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "supervisor-proto.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char buf[SUPERVISOR_MSG_MAX];
        SupervisorMsg m;
        int n;

        if (supervisor_msg_decode((const char *) data, size, &m) < 0)
                return 0;
        fuzz_accepted = true;
        n = supervisor_msg_encode(&m, buf);
        if (n < 0 || (size_t) n != size || memcmp(buf, data, size) != 0)
                abort();
        return 0;
}
