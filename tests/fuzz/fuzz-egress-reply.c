/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the egress helper's answers to add_host and remove_host as
 * the coordinator reads them (egress_reply_parse(), src/egress/egress-proto.c),
 * one answer per input. The helper parses what the sandbox sends, so its
 * answers are judged, never trusted: a return is 0 or 1 (removed) and says
 * nothing more; an error's description, shown to the developer, is
 * printable ASCII only (egress_show()), at most EGRESS_SHOW_MAX bytes; a
 * refused answer says why.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "egress-proto.h"
#include "egress-util.h"
#include "fuzz.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *why = NULL;
        int r;

        fuzz_accepted = false;
        r = egress_reply_parse((const char *) data, size, &why);
        if (r >= 0) {
                if (r > 1 || why)
                        abort();
                fuzz_accepted = true;
                return 0;
        }
        if (r != -EINVAL && r != -EBADMSG && r != -ENOMEM)
                abort();
        if (!why || strlen(why) >= EGRESS_SHOW_MAX)
                abort();
        for (const char *p = why; *p; p++)
                if (*p < 0x20 || *p >= 0x7f)
                        abort();
        /* An error the helper described is read (accepted as an answer); anything else is refused. */
        fuzz_accepted = r == -EINVAL;
        free(why);
        return 0;
}
