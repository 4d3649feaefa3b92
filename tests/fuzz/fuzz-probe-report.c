/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target: the supervisor's reading of the network probe's report,
 * the one text that comes out of a fresh sandbox before it is published
 * (supnet_judge(), src/supervisor/supervisor-net.c), against the default
 * derived policy and a fixed challenge, once without host rules and once
 * with one (the same routes: the judge compares the report's routes with
 * the policy's, and the host rules add the name canaries). An input is
 * accepted when either judgement accepts it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fuzz.h"
#include "net-policy.h"
#include "supervisor-net.h"
#include "../unit/line-buffer.h"

/* The challenge the seed corpus's accepted reports carry. */
#define FUZZ_CHALLENGE "lz-fuzz:00"

bool fuzz_accepted = false;

static bool has_line(const char *text, const char *line) {
        size_t n = strlen(line);

        for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == 0))
                        return true;
        return false;
}

/* One judgement; aborts when what it accepted breaks an invariant, or a refusal names no reason. */
static bool judge(NetPolicy *policy, const char *text) {
        SupNet net = SUPNET_INIT;
        char err[512] = "";
        int r;

        net.policy = policy;
        snprintf(net.challenge, sizeof(net.challenge), "%s", FUZZ_CHALLENGE);
        r = WITH_LINE(err, supnet_judge(&net, text, &line_));
        if (r < 0) {
                if (!err[0])
                        abort();        /* every refusal names its reason */
                return false;
        }
        /* Accepted means: the challenge came back, the report ended, no
         * hole, no IPv6; with host rules, every name canary as it must be
         * and no allowed address canary (the allowed name canary is its
         * proof), without them the allowed address canary's challenge. */
        if (!has_line(text, "end") ||
            strstr(text, "\ndenied reached") || strncmp(text, "denied reached", 14) == 0 || strstr(text, "\nipv6 "))
                abort();
        if (policy->n_hosts > 0 &&
            (!has_line(text, "name-allowed " FUZZ_CHALLENGE) || !has_line(text, "name-denied nxdomain") ||
             !has_line(text, "name-direct refused") || !has_line(text, "name-sni closed") || strstr(text, "-failed ") ||
             strncmp(text, "allowed", 7) == 0 || strstr(text, "\nallowed")))
                abort();
        if (policy->n_hosts == 0 && !has_line(text, "allowed " FUZZ_CHALLENGE))
                abort();
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static NetPolicy *policy, *with_hosts;
        static char *hosts[] = { (char *) "example.com", NULL };
        _cleanup_free_ char *text = NULL;
        bool a, b;

        if (!policy) {
                if (net_policy_derive(NULL, NULL, NULL, NULL, &policy, NULL) < 0 ||
                    net_policy_derive(NULL, NULL, NULL, NULL, &with_hosts, NULL) < 0)
                        abort();
                with_hosts->hosts = hosts;
                with_hosts->n_hosts = 1;
        }
        /* Where the supervisor stops reading, on the raw bytes (NULs included). */
        (void) supnet_report_complete((const char *) data, size);
        /* As the supervisor has it: read up to a NUL-terminated buffer. */
        text = strndup((const char *) data, size);
        if (!text)
                return 0;
        a = judge(policy, text);
        b = judge(with_hosts, text);
        fuzz_accepted = a || b;
        return 0;
}
