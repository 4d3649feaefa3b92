/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which literal environment values of the profiles look like secrets, for
 * lazaretctl's warning (lazaret.conf(5), env).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "macro.h"
#include "strv.h"

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * A name that looks like it holds a secret: one of the words below anywhere
 * in it, or KEY/KEYS as a whole word ('_'-separated) or at its end (API_KEY,
 * SSH_KEYS, GPG_KEY_ID, apiKey); not KEYBOARD or XKB_KEYMAP, which would
 * warn for nothing. Case-insensitive.
 */
static bool name_looks_secret(const char *name) {
        static const char *const words[] = {
                "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTH",
        };
        char up[256];
        size_t i;

        for (i = 0; name[i] && i < sizeof(up) - 1; i++)
                up[i] = (char) (name[i] >= 'a' && name[i] <= 'z' ? name[i] - 'a' + 'A' : name[i]);
        up[i] = 0;
        for (size_t w = 0; w < ELEMENTSOF(words); w++)
                if (strstr(up, words[w]))
                        return true;
        for (const char *k = strstr(up, "KEY"); k; k = strstr(k + 1, "KEY")) {
                const char *e = k + 3 + (k[3] == 'S');
                bool starts = k == up || k[-1] == '_';

                if (*e == 0 || (starts && *e == '_'))
                        return true;
        }
        return false;
}

int config_literal_secrets(const Config *c, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;

        for (size_t p = 0; p < c->n_profiles; p++)
                for (size_t e = 0; e < c->profiles[p].n_env; e++) {
                        const EnvEntry *x = &c->profiles[p].env[e];
                        _cleanup_free_ char *s = NULL;

                        if (x->from_host || isempty(x->value) || !name_looks_secret(x->name))
                                continue;
                        if (asprintf(&s, "%s.%s", c->profiles[p].name, x->name) < 0 || strv_push(&l, s) < 0)
                                return -ENOMEM;
                        TAKE_PTR(s);
                }
        if (l)
                qsort(l, strv_length(l), sizeof(char *), strcmp_ptr);
        *ret = TAKE_PTR(l);
        return 0;
}
