/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: what lazaret-runsc reads from runsc (src/runtime/runsc-control.c):
 * the control server's replies, measured by runsc_reply_length() as they
 * arrive and read by runsc_reply_parse(), and the container's state file
 * (runsc_state_parse()). A reply's length never passes the input; an
 * accepted reply's words hold no control byte (they reach the Domain's log
 * and a client's terminal); an accepted state names an absolute socket path.
 * "Accepted" is a complete reply that parses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "runsc-control.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        RunscReply reply = {};
        RunscState state = {};
        char *why = NULL;
        ssize_t l;

        fuzz_accepted = false;
        if (size > RUNSC_REPLY_MAX)
                return 0;
        l = runsc_reply_length((const char *) data, size);
        if (l > (ssize_t) size)
                abort();
        /* Every prefix is incomplete or the same object. */
        for (size_t cut = 0; l > 0 && cut < (size_t) l; cut += 1 + cut / 4) {
                ssize_t k = runsc_reply_length((const char *) data, cut);
                if (k != 0 && k != -EBADMSG)
                        abort();
        }
        if (l > 0 && runsc_reply_parse((const char *) data, (size_t) l, &reply, &why) == 0) {
                fuzz_accepted = true;
                for (const char *p = reply.err; p && *p; p++)
                        if ((unsigned char) *p < 0x20 || *p == 0x7f)
                                abort();
        }
        runsc_reply_done(&reply);
        free(why);
        why = NULL;
        if (runsc_state_parse((const char *) data, size, &state, &why) == 0 && state.control_socket[0] != '/')
                abort();
        runsc_state_done(&state);
        free(why);
        return 0;
}
