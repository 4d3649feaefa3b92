/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Writes the seed corpora of fuzz-escalation-request and
 * fuzz-trust-credential into DIR/escalation-request and
 * DIR/trust-credential: accepted and refused requests and credentials,
 * made with the fixed identities of fuzz-corpus-key.h. Run by hand when
 * the record format changes: make-escalation-corpus tests/fuzz/corpus
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "escalation-proto.h"
#include "fuzz-corpus-key.h"
#include "trust-anchor.h"

static const char *dir;

static void put(const char *sub, const char *name, const void *data, size_t n) {
        char path[4096];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, sub);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
        f = fopen(path, "we");
        if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
                fprintf(stderr, "cannot write %s\n", path);
                exit(1);
        }
}

/* buf with the first occurrence of from replaced by to (same file otherwise). */
static void put_replaced(const char *sub, const char *name, const char *buf, size_t n, const char *from, const char *to) {
        const char *at = memmem(buf, n, from, strlen(from));
        size_t head, out_n;
        char *out;

        if (!at)
                exit(2);
        head = (size_t) (at - buf);
        out_n = n - strlen(from) + strlen(to);
        out = malloc(out_n);
        memcpy(out, buf, head);
        memcpy(out + head, to, strlen(to));
        memcpy(out + head + strlen(to), at + strlen(from), n - head - strlen(from));
        put(sub, name, out, out_n);
        free(out);
}

static uint8_t *issue(TrustAnchor *ta, const char *role, const char *session, const uint8_t pub[ESC_KEY_LEN], size_t *n) {
        const TrustBinding b = { role, CORPUS_PROFILE, CORPUS_DOMAIN, CORPUS_GENERATION, session };
        uint8_t *cred;

        /* Valid for 100 years: the replay must keep accepting it. */
        if (trust_anchor_issue(ta, &b, pub, 100ULL * 366 * 24 * 3600, &cred, n, NULL) < 0)
                exit(3);
        return cred;
}

int main(int argc, char **argv) {
        uint8_t cakey[ESC_KEY_LEN], key[ESC_KEY_LEN], pub[ESC_KEY_LEN], okey[ESC_KEY_LEN], opub[ESC_KEY_LEN], *cred, *c2;
        char *touch[] = { "/usr/bin/touch", "/tmp/x", NULL }, *echo[] = { "/bin/echo", "a b", "", NULL };
        TrustAnchor *ta, *other;
        EscRequest q;
        size_t n, len, n2;
        char *buf;

        if (argc != 2)
                return 1;
        dir = argv[1];
        memset(cakey, CORPUS_CA_KEY_BYTE, sizeof(cakey));
        memset(key, CORPUS_SESSION_KEY_BYTE, sizeof(key));
        esc_key_public(key, pub);
        if (trust_anchor_new_from_key(CORPUS_DOMAIN, CORPUS_GENERATION, cakey, &ta, NULL) < 0 ||
            trust_anchor_new(CORPUS_DOMAIN, CORPUS_GENERATION, &other, NULL) < 0 || esc_key_generate(okey, opub) < 0)
                return 3;

        /* Credentials. */
        cred = issue(ta, TRUST_ROLE_SESSION, CORPUS_SESSION, pub, &n);
        put("trust-credential", "accept-session", cred, n);
        c2 = issue(ta, TRUST_ROLE_SESSION, "00000000000000000000000000000000", pub, &n2);
        put("trust-credential", "reject-other-session", c2, n2);
        free(c2);
        c2 = issue(ta, TRUST_ROLE_COORDINATOR, CORPUS_SESSION, pub, &n2);
        put("trust-credential", "reject-coordinator-role", c2, n2);
        free(c2);
        c2 = issue(other, TRUST_ROLE_SESSION, CORPUS_SESSION, pub, &n2);
        put("trust-credential", "reject-other-generation", c2, n2);
        free(c2);
        c2 = malloc(n + 1);
        memcpy(c2, cred, n);
        c2[n - 10] ^= 1;
        put("trust-credential", "reject-tampered-signature", c2, n);
        memcpy(c2, cred, n);
        c2[n / 2] ^= 0x20;
        put("trust-credential", "reject-tampered-body", c2, n);
        memcpy(c2, cred, n);
        c2[n] = 0;
        put("trust-credential", "reject-trailing", c2, n + 1);
        put("trust-credential", "reject-truncated", cred, n - 1);
        free(c2);
        put("trust-credential", "reject-empty", "", 0);
        put("trust-credential", "reject-garbage", "\x30\x82\xff\xff garbage", 12);

        /* Requests, carrying the session's real credential. */
        q = (EscRequest) {
                .id = "b3bc5ca1b3947ec52b472bbbdbc95f58",
                .session = CORPUS_SESSION,
                .sandbox = CORPUS_GENERATION,
                .time_usec = 1796123527770737ULL,
                .timeout_s = 1,
                .cwd = "/tmp",
                .why = "",
                .argv = touch,
                .argc = 2,
                .cred = cred,
                .cred_len = n,
        };
        if (esc_request_format(&q, key, &buf, &len) < 0)
                return 4;
        put("escalation-request", "accept-touch", buf, len);
        free(buf);
        strcpy(q.id, "e33fcbc63629f1be89d8043205816f04");
        q.why = "because";
        q.argv = echo;
        q.argc = 3;
        if (esc_request_format(&q, key, &buf, &len) < 0)
                return 4;
        put("escalation-request", "accept-echo-why", buf, len);
        put_replaced("escalation-request", "reject-extra-field", buf, len, "argc 1:3\n", "env 3:x=y\nargc 1:3\n");
        put_replaced("escalation-request", "reject-nul-in-arg", buf, len, "arg 3:a b\n", "arg 3:a\0b\n");
        put_replaced("escalation-request", "reject-tampered-arg", buf, len, "arg 9:/bin/echo", "arg 9:/bin/ecHo");
        put_replaced("escalation-request", "reject-uppercase-id", buf, len, "e33fcbc63629f1be89d8043205816f04",
                     "E33FCBC63629F1BE89D8043205816F04");
        put_replaced("escalation-request", "reject-version-1", buf, len, "request 2\n", "request 1\n");
        put_replaced("escalation-request", "reject-no-cred", buf, len, "cred ", "crud ");
        put("escalation-request", "reject-truncated", buf, len - 10);
        {
                char *t = malloc(len + 1);
                memcpy(t, buf, len);
                t[len] = 'x';
                put("escalation-request", "reject-trailing", t, len + 1);
                /* Unsigned: everything up to the sig field. */
                put("escalation-request", "reject-no-sig", t, (size_t) ((char *) memmem(t, len, "\nsig 128:", 9) - t) + 1);
                free(t);
        }
        free(buf);
        if (esc_request_format(&q, okey, &buf, &len) < 0)
                return 4;
        put("escalation-request", "reject-other-key", buf, len);
        free(buf);
        put("escalation-request", "reject-empty", "", 0);
        put("escalation-request", "reject-garbage", "\0\xff garbage\n", 11);
        free(cred);
        trust_anchor_free(ta);
        trust_anchor_free(other);
        return 0;
}
