/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "setid-mode.h"

mode_t setid_permitted_mode(mode_t requested, mode_t current) {
        const mode_t setid = S_ISUID | S_ISGID;

        requested &= 07777;
        return (requested & ~setid) | (requested & current & setid);
}
