/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the parser of what a developer's terminal sends while an
 * approval prompt is up (term_input_feed(), term-prompt.h). The sandbox
 * reaches it through the replies it provokes from the terminal. Accepted
 * means some byte of the input reached the prompt as a key. Checked: a key
 * is never ESC nor a C1 byte outside a UTF-8 character; and whatever the
 * input left the parser in, eight CANs, the end of a paste and a 'd' give
 * the 'd', so no input leaves the prompt deaf for good.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "term-prompt.h"

bool fuzz_accepted = false;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char tail[] = "\x18\x18\x18\x18\x18\x18\x18\x18\x1b[201~";
        TermInput t = {};
        unsigned utf8_left = 0;

        fuzz_accepted = false;
        for (size_t i = 0; i < size; i++) {
                int c = term_input_feed(&t, data[i]);
                if (c < 0)
                        continue;
                fuzz_accepted = true;
                if (c == 0x1b)
                        abort();
                if (utf8_left > 0 && (c & 0xc0) == 0x80)
                        utf8_left--;
                else if (c >= 0x80 && c <= 0x9f)
                        abort();        /* a C1 control passed as a key */
                else
                        utf8_left = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
        }
        for (size_t i = 0; i < sizeof(tail) - 1; i++)
                (void) term_input_feed(&t, (unsigned char) tail[i]);
        if (term_input_feed(&t, 'd') != 'd')
                abort();
        return 0;
}
