/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The coordinator's judgement of escalation requests (escalation-judge.h):
 * which records are taken and accepted before anyone is asked, the
 * auto-approve rules, and the table every decision goes through. The
 * end-to-end proof stays test-escalation and test-escalation-prompt.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "escalation-judge.h"
#include "escalation-proto.h"
#include "trust-anchor.h"

#define DOMAIN "0123456789ab"
#define PROFILE "dev"
#define GEN "lazaret-0123456789ab-1"
#define SESSION "fedcba9876543210fedcba9876543210"
#define REQ_ID "0123456789abcdef0123456789abcdef"
#define NOW 1700000000000000ULL

/* ------------------------------------------------------ taking a record */

Test(judge, id_name) {
        cr_assert(esc_is_id_name(REQ_ID));
        cr_assert_not(esc_is_id_name("0123456789ABCDEF0123456789abcdef"));     /* upper case */
        cr_assert_not(esc_is_id_name("0123456789abcdef0123456789abcde"));      /* 31 */
        cr_assert_not(esc_is_id_name("0123456789abcdef0123456789abcdef0"));    /* 33 */
        cr_assert_not(esc_is_id_name("0123456789abcdef0123456789abcdeg"));
        cr_assert_not(esc_is_id_name("../3456789abcdef0123456789abcdef"));
        cr_assert_not(esc_is_id_name(""));
}

static int tmpdir(char path[static 64]) {
        int fd;

        snprintf(path, 64, "/tmp/test-judge-XXXXXX");
        cr_assert_not_null(mkdtemp(path));
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        return fd;
}

static void put(int dirfd, const char *name, const char *content, size_t len) {
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        cr_assert_geq(fd, 0, "%s: %m", name);
        cr_assert_eq(write(fd, content, len), (ssize_t) len);
        close(fd);
}

static bool exists(int dirfd, const char *name) {
        struct stat st;

        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int take(int dirfd, const char *name, char **ret_why) {
        char *buf = NULL;
        size_t len = 0;
        int k = esc_mailbox_take(dirfd, name, &buf, &len, ret_why);

        if (k >= 0)
                cr_assert_not_null(buf);
        free(buf);
        return k;
}

Test(judge, mailbox_take) {
        char dir[64], *why = NULL, *buf = NULL, *big;
        int dfd = tmpdir(dir);
        size_t len;

        /* A record: read whole, and gone from requests/. */
        put(dfd, REQ_ID, "record\0bytes", 12);
        cr_assert_eq(esc_mailbox_take(dfd, REQ_ID, &buf, &len, &why), 0, "%s", why ?: "");
        cr_assert_eq(len, 12);
        cr_assert_eq(memcmp(buf, "record\0bytes", 12), 0);
        cr_assert_not(exists(dfd, REQ_ID));
        free(buf);

        /* Not a request name: removed, never read. */
        put(dfd, "notes.txt", "x", 1);
        cr_assert_eq(take(dfd, "notes.txt", &why), -EINVAL);
        cr_assert_str_eq(why, "not a request name");
        cr_assert_not(exists(dfd, "notes.txt"));
        why = (free(why), NULL);

        /* A symlink to a host file is not followed; the link goes. */
        cr_assert_eq(symlinkat("/etc/passwd", dfd, REQ_ID), 0);
        cr_assert_eq(take(dfd, REQ_ID, &why), -ELOOP);
        cr_assert(strstr(why, "cannot be opened"), "%s", why);
        cr_assert_not(exists(dfd, REQ_ID));
        why = (free(why), NULL);

        /* A FIFO would block a reader: refused without a read. */
        cr_assert_eq(mkfifoat(dfd, REQ_ID, 0600), 0);
        cr_assert_eq(take(dfd, REQ_ID, &why), -EBADF);
        cr_assert_str_eq(why, "not a regular file");
        cr_assert_not(exists(dfd, REQ_ID));
        why = (free(why), NULL);

        /* One byte over the limit. */
        big = calloc(1, ESC_REQUEST_MAX + 1);
        cr_assert_not_null(big);
        put(dfd, REQ_ID, big, ESC_REQUEST_MAX + 1);
        cr_assert_eq(take(dfd, REQ_ID, &why), -EFBIG);
        cr_assert_not(exists(dfd, REQ_ID));
        why = (free(why), NULL);
        /* At the limit: taken. */
        put(dfd, REQ_ID, big, ESC_REQUEST_MAX);
        cr_assert_eq(take(dfd, REQ_ID, NULL), 0);
        free(big);

        /* Gone before it was looked at. */
        cr_assert_eq(take(dfd, REQ_ID, &why), -ENOENT);
        free(why);
        close(dfd);
        cr_assert_eq(rmdir(dir), 0);
}

/* ------------------------------------------------ accepting a request */

Test(judge, seen_remembers_the_last) {
        EscSeen seen;
        char id[ESC_ID_LEN + 1];

        cr_assert_eq(esc_seen_init(&seen), 0);
        cr_assert_not(esc_seen_check_add(&seen, REQ_ID));
        cr_assert(esc_seen_check_add(&seen, REQ_ID));
        /* ESC_SEEN_MAX more push the first out. */
        for (unsigned i = 0; i < ESC_SEEN_MAX; i++) {
                snprintf(id, sizeof(id), "%032x", i);
                cr_assert_not(esc_seen_check_add(&seen, id));
        }
        cr_assert_not(esc_seen_check_add(&seen, REQ_ID));
        snprintf(id, sizeof(id), "%032x", ESC_SEEN_MAX - 1);
        cr_assert(esc_seen_check_add(&seen, id));
        esc_seen_done(&seen);
}

/* A generation's Trust Anchor, a session's key pair and its credential, and a record it signed. */
typedef struct Fixture {
        TrustAnchor *ta;
        uint8_t priv[ESC_KEY_LEN], pub[ESC_KEY_LEN];
        uint8_t *cred;
        size_t cred_len;
        EscSeen seen;
        EscCheck check;
} Fixture;

static const TrustBinding session_binding = {
        .role = TRUST_ROLE_SESSION,
        .profile = PROFILE,
        .domain = DOMAIN,
        .generation = GEN,
        .component = SESSION,
};

static void fixture_init(Fixture *f) {
        char *error = NULL;

        *f = (Fixture) {};
        cr_assert_eq(trust_anchor_new(DOMAIN, GEN, &f->ta, &error), 0, "%s", error ?: "");
        cr_assert_eq(esc_key_generate(f->priv, f->pub), 0);
        cr_assert_eq(trust_anchor_issue(f->ta, &session_binding, f->pub, 3600, &f->cred, &f->cred_len, &error), 0,
                     "%s", error ?: "");
        cr_assert_eq(esc_seen_init(&f->seen), 0);
        f->check = (EscCheck) {
                .name = REQ_ID,
                .sandbox_id = GEN,
                .profile = PROFILE,
                .domain_id = DOMAIN,
                .trust = f->ta,
                .session_key = f->pub,
                .now_usec = NOW,
                .n_pending = 0,
                .max_pending = 32,
                .seen = &f->seen,
        };
}

static void fixture_done(Fixture *f) {
        trust_anchor_free(f->ta);
        free(f->cred);
        esc_seen_done(&f->seen);
}

static char *argv_touch[] = { (char *) "/usr/bin/touch", (char *) "a", NULL };

/* A record as lazaret-escalate writes it: signed with key, carrying cred. */
static char *record(const char *id, const char *sandbox, uint64_t time_usec, const uint8_t *cred, size_t cred_len,
                    const uint8_t key[ESC_KEY_LEN], size_t *ret_len) {
        EscRequest q = {
                .time_usec = time_usec,
                .cwd = (char *) "/workspace",
                .why = (char *) "a test",
                .argv = argv_touch,
                .argc = 2,
                .cred = (uint8_t *) cred,
                .cred_len = cred_len,
        };
        char *buf;

        snprintf(q.id, sizeof(q.id), "%s", id);
        snprintf(q.session, sizeof(q.session), "%s", SESSION);
        snprintf(q.sandbox, sizeof(q.sandbox), "%s", sandbox);
        cr_assert_eq(esc_request_format(&q, key, &buf, ret_len), 0);
        return buf;
}

/* The record's verdict, with its message in *ret_why (optional). */
static int check_record(const EscCheck *c, const char *buf, size_t len, char **ret_why) {
        EscRequest q = {};
        char *error = NULL;
        int k;

        cr_assert_eq(esc_request_parse(buf, len, &q, &error), 0, "%s", error ?: "");
        k = esc_request_check(c, buf, &q, ret_why);
        esc_request_done(&q);
        return k;
}

/* A record with ID id, under its own name. */
static int check_with(const EscCheck *c, const char *id, const char *sandbox, uint64_t time_usec, const uint8_t *cred,
                      size_t cred_len, const uint8_t key[ESC_KEY_LEN], char **ret_why) {
        EscCheck named = *c;
        size_t len;
        char *buf = record(id, sandbox, time_usec, cred, cred_len, key, &len);
        int k;

        named.name = id;
        k = check_record(&named, buf, len, ret_why);

        free(buf);
        return k;
}

Test(judge, request_accepted) {
        Fixture f;
        char *why = NULL;

        fixture_init(&f);
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, &why), 0, "%s", why ?: "");
        /* Within the clock skew on either side. */
        f.check.now_usec = NOW + ESC_CLOCK_SKEW_USEC;
        cr_assert_eq(check_with(&f.check, "1123456789abcdef0123456789abcdef", GEN, NOW, f.cred, f.cred_len, f.priv, NULL), 0);
        f.check.now_usec = NOW - ESC_CLOCK_SKEW_USEC;
        cr_assert_eq(check_with(&f.check, "2123456789abcdef0123456789abcdef", GEN, NOW, f.cred, f.cred_len, f.priv, NULL), 0);
        fixture_done(&f);
}

Test(judge, request_refused_for_its_place) {
        Fixture f;
        char *why = NULL, *buf;
        size_t len;

        fixture_init(&f);
        /* Its ID must be the name it came under (REQ_ID). */
        buf = record("ffffffffffffffffffffffffffffffff", GEN, NOW, f.cred, f.cred_len, f.priv, &len);
        cr_assert_eq(check_record(&f.check, buf, len, &why), -EINVAL);
        cr_assert_str_eq(why, "its ID is not its name");
        why = (free(why), NULL);
        free(buf);
        /* A record of an earlier generation. */
        cr_assert_eq(check_with(&f.check, REQ_ID, "lazaret-0123456789ab-0", NOW, f.cred, f.cred_len, f.priv, &why), -ESTALE);
        why = (free(why), NULL);
        /* A session the Domain does not have. */
        f.check.session_key = NULL;
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, &why), -ESRCH);
        cr_assert_str_eq(why, "it names no session of this Domain");
        why = (free(why), NULL);
        f.check.session_key = f.pub;
        /* Before the generation's Trust Anchor exists. */
        f.check.trust = NULL;
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, &why), -ENOKEY);
        why = (free(why), NULL);
        f.check.trust = f.ta;
        /* Nothing of this was remembered: the same ID is still accepted. */
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, &why), 0, "%s", why ?: "");
        fixture_done(&f);
}

Test(judge, request_refused_for_its_credential) {
        Fixture f;
        TrustAnchor *other_ta = NULL;
        TrustBinding other_session = session_binding;
        uint8_t opriv[ESC_KEY_LEN], opub[ESC_KEY_LEN], *cred = NULL;
        size_t len;
        char *why = NULL;

        fixture_init(&f);
        /* Garbage for a credential. */
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, (const uint8_t *) "not a certificate", 17, f.priv, &why),
                     -EKEYREJECTED);
        why = (free(why), NULL);
        /* Issued by another generation's Trust Anchor (same Domain, same names). */
        cr_assert_eq(trust_anchor_new(DOMAIN, GEN, &other_ta, NULL), 0);
        cr_assert_eq(trust_anchor_issue(other_ta, &session_binding, f.pub, 3600, &cred, &len, NULL), 0);
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, cred, len, f.priv, &why), -EKEYREJECTED);
        why = (free(why), NULL);
        cred = (free(cred), NULL);
        trust_anchor_free(other_ta);
        /* This generation's, but for another session: one session cannot ask in another's name. */
        other_session.component = "00000000000000000000000000000000";
        cr_assert_eq(trust_anchor_issue(f.ta, &other_session, f.pub, 3600, &cred, &len, NULL), 0);
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, cred, len, f.priv, &why), -EKEYREJECTED);
        why = (free(why), NULL);
        cred = (free(cred), NULL);
        /* Right binding, but it certifies a key that is not the session's registered one. */
        cr_assert_eq(esc_key_generate(opriv, opub), 0);
        cr_assert_eq(trust_anchor_issue(f.ta, &session_binding, opub, 3600, &cred, &len, NULL), 0);
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, cred, len, opriv, &why), -EPERM);
        cr_assert_str_eq(why, "its credential certifies another key than the session's");
        why = (free(why), NULL);
        free(cred);
        /* The session's credential, signed by another key. */
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, opriv, &why), -EBADMSG);
        why = (free(why), NULL);
        /* The session's own: accepted (the refusals above did not spend its ID). */
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, &why), 0, "%s", why ?: "");
        fixture_done(&f);
}

Test(judge, request_refused_when_tampered) {
        Fixture f;
        size_t len;
        char *buf, *why = NULL, *p;

        fixture_init(&f);
        buf = record(REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, &len);
        /* One argument changed after signing ("a" becomes "b"): same length, still parses. */
        p = memmem(buf, len, "/usr/bin/touch", 14);
        cr_assert_not_null(p);
        p[9] = 'X';
        cr_assert_eq(check_record(&f.check, buf, len, &why), -EBADMSG);
        free(why);
        free(buf);
        fixture_done(&f);
}

Test(judge, request_refused_for_time_replay_and_load) {
        Fixture f;
        char *why = NULL;

        fixture_init(&f);
        /* Too old, too new. */
        f.check.now_usec = NOW + ESC_CLOCK_SKEW_USEC + 1;
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, &why), -ETIME);
        why = (free(why), NULL);
        f.check.now_usec = NOW - ESC_CLOCK_SKEW_USEC - 1;
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, &why), -ETIME);
        why = (free(why), NULL);
        f.check.now_usec = NOW;
        /* Once; the same bytes again are a replay. */
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, NULL), 0);
        cr_assert_eq(check_with(&f.check, REQ_ID, GEN, NOW, f.cred, f.cred_len, f.priv, &why), -EALREADY);
        why = (free(why), NULL);
        /* The Domain's limit of pending requests. */
        f.check.n_pending = f.check.max_pending;
        cr_assert_eq(check_with(&f.check, "3123456789abcdef0123456789abcdef", GEN, NOW, f.cred, f.cred_len, f.priv, &why), -EBUSY);
        cr_assert_str_eq(why, "too many requests are pending");
        free(why);
        f.check.n_pending = f.check.max_pending - 1;
        cr_assert_eq(check_with(&f.check, "4123456789abcdef0123456789abcdef", GEN, NOW, f.cred, f.cred_len, f.priv, NULL), 0);
        fixture_done(&f);
}

/* --------------------------------------------------- auto-approve rules */

#define V(...) ((char *[]) { __VA_ARGS__, NULL })

static const AutoApproveRule rules[] = {
        { .argv = V("/usr/bin/git", "status"), .program = (char *) "/usr/lib/git-core/git", .trailing_args = false },
        { .argv = V("/usr/bin/make"), .program = (char *) "/usr/bin/make", .trailing_args = true },
        { .argv = V("/usr/local/bin/gone"), .program = NULL, .trailing_args = true },
};
#define N_RULES (sizeof(rules) / sizeof(rules[0]))

Test(judge, rule_exact) {
        cr_assert_eq(esc_rule_match(rules, N_RULES, V("/usr/bin/git", "status"), "/usr/lib/git-core/git"), &rules[0]);
        /* Without trailing_args, one argument more is another command. */
        cr_assert_null(esc_rule_match(rules, N_RULES, V("/usr/bin/git", "status", "--short"), "/usr/lib/git-core/git"));
        /* Fewer arguments than the rule names. */
        cr_assert_null(esc_rule_match(rules, N_RULES, V("/usr/bin/git"), "/usr/lib/git-core/git"));
        cr_assert_null(esc_rule_match(rules, N_RULES, V("/usr/bin/git", "push"), "/usr/lib/git-core/git"));
}

Test(judge, rule_trailing_args) {
        cr_assert_eq(esc_rule_match(rules, N_RULES, V("/usr/bin/make"), "/usr/bin/make"), &rules[1]);
        cr_assert_eq(esc_rule_match(rules, N_RULES, V("/usr/bin/make", "-j2", "check"), "/usr/bin/make"), &rules[1]);
}

Test(judge, rule_metacharacters_always_ask) {
        static const char *const bad[] = { "a;b", "a|b", "a&b", "$(x)", "`x`", "a>b", "a<b", "a\\b", "a\nb", "\x7f" };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_assert_null(esc_rule_match(rules, N_RULES, V("/usr/bin/make", (char *) bad[i]), "/usr/bin/make"),
                               "argument %zu", i);
}

Test(judge, rule_program_as_judged) {
        /* A relative or bare argv[0] names nothing the configuration judged. */
        cr_assert_null(esc_rule_match(rules, N_RULES, V("make"), "/usr/bin/make"));
        cr_assert_null(esc_rule_match(rules, N_RULES, V("./make"), "/usr/bin/make"));
        /* The path now leads elsewhere than when the configuration was read (a swapped symlink). */
        cr_assert_null(esc_rule_match(rules, N_RULES, V("/usr/bin/make"), "/tmp/evil"));
        /* It does not resolve now. */
        cr_assert_null(esc_rule_match(rules, N_RULES, V("/usr/bin/make"), NULL));
        /* It did not resolve when the configuration was read. */
        cr_assert_null(esc_rule_match(rules, N_RULES, V("/usr/local/bin/gone"), "/usr/local/bin/gone"));
        /* No rules, no approval. */
        cr_assert_null(esc_rule_match(NULL, 0, V("/usr/bin/make"), "/usr/bin/make"));
        cr_assert_null(esc_rule_match(rules, N_RULES, (char *[]) { NULL }, NULL));
}

/* ------------------------------------------------------------ decisions */

static const char *const humans[] = { ESC_BY_TERMINAL, ESC_BY_BUS, ESC_BY_NOTIFICATION };

Test(judge, approve) {
        EscStep step;

        for (size_t i = 0; i < 3; i++) {
                cr_assert_eq(esc_decide(ESC_REQUEST_WAITING, ESC_DECIDE_APPROVE, humans[i], &step), 0);
                cr_assert(step.run);
                cr_assert_not(step.end_prompt);
                cr_assert_not(step.abort_session);

                cr_assert_eq(esc_decide(ESC_REQUEST_PROMPTING, ESC_DECIDE_APPROVE, humans[i], &step), 0);
                cr_assert(step.run);
                cr_assert(step.end_prompt);
                /* Approved elsewhere: the terminal is told where; at the terminal, the key's echo says it. */
                cr_assert_eq(step.say_who, i != 0, "%s", humans[i]);
        }
}

Test(judge, deny) {
        EscStep step;

        for (size_t i = 0; i < 3; i++)
                for (EscRequestState s = ESC_REQUEST_WAITING; s <= ESC_REQUEST_PROMPTING; s++) {
                        cr_assert_eq(esc_decide(s, ESC_DECIDE_DENY, humans[i], &step), 0);
                        cr_assert_not(step.run);
                        cr_assert_eq(step.outcome, ESC_DENIED);
                        cr_assert_str_eq(step.event, "denied");
                        cr_assert_str_eq(step.message, "the developer denied the request");
                        cr_assert_not(step.abort_session);
                }
}

Test(judge, abort_only_at_the_terminal) {
        EscStep step;

        cr_assert_eq(esc_decide(ESC_REQUEST_PROMPTING, ESC_DECIDE_ABORT, ESC_BY_TERMINAL, &step), 0);
        cr_assert_not(step.run);
        cr_assert_eq(step.outcome, ESC_DENIED);
        cr_assert_str_eq(step.event, "aborted");
        cr_assert(step.abort_session);
        /* Nobody but the person at the prompt ends the session from a request. */
        cr_assert_eq(esc_decide(ESC_REQUEST_PROMPTING, ESC_DECIDE_ABORT, ESC_BY_BUS, &step), -EPERM);
        cr_assert_eq(esc_decide(ESC_REQUEST_PROMPTING, ESC_DECIDE_ABORT, ESC_BY_NOTIFICATION, &step), -EPERM);
        cr_assert_eq(esc_decide(ESC_REQUEST_WAITING, ESC_DECIDE_ABORT, ESC_BY_TERMINAL, &step), -EPERM);
}

Test(judge, second_decision_loses) {
        EscStep step;

        /* Approved first: its command runs; nothing decides it again, from anywhere. */
        for (size_t i = 0; i < 3; i++) {
                cr_assert_eq(esc_decide(ESC_REQUEST_RUNNING, ESC_DECIDE_APPROVE, humans[i], &step), -EBUSY);
                cr_assert_eq(esc_decide(ESC_REQUEST_RUNNING, ESC_DECIDE_DENY, humans[i], &step), -EBUSY);
                cr_assert_eq(esc_decide(ESC_REQUEST_RUNNING, ESC_DECIDE_ABORT, humans[i], &step), -EBUSY);
        }
}

Test(judge, expiry) {
        EscStep step;

        cr_assert_eq(esc_decide(ESC_REQUEST_WAITING, ESC_DECIDE_EXPIRE, NULL, &step), 0);
        cr_assert_not(step.run);
        cr_assert_eq(step.outcome, ESC_TIMEOUT);
        cr_assert_str_eq(step.message, "no decision in time");
        cr_assert_null(step.event);
        cr_assert_eq(esc_decide(ESC_REQUEST_PROMPTING, ESC_DECIDE_EXPIRE, NULL, &step), 0);
        cr_assert_eq(step.outcome, ESC_TIMEOUT);
        cr_assert_str_eq(step.message, "no decision in time");
        /* The deadline also bounds the command's run. */
        cr_assert_eq(esc_decide(ESC_REQUEST_RUNNING, ESC_DECIDE_EXPIRE, NULL, &step), 0);
        cr_assert_eq(step.outcome, ESC_TIMEOUT);
        cr_assert_str_eq(step.message, "the host command ran out of time and was killed");
}

Test(judge, unknown_relay) {
        EscStep step;

        cr_assert_eq(esc_decide(ESC_REQUEST_WAITING, ESC_DECIDE_APPROVE, NULL, &step), -EINVAL);
        cr_assert_eq(esc_decide(ESC_REQUEST_WAITING, ESC_DECIDE_APPROVE, "rule", &step), -EINVAL);
        cr_assert_eq(esc_decide(ESC_REQUEST_WAITING, ESC_DECIDE_DENY, "", &step), -EINVAL);
        cr_assert_eq(esc_decide(_ESC_REQUEST_STATE_MAX, ESC_DECIDE_DENY, ESC_BY_BUS, &step), -EINVAL);
}

Test(judge, state_names) {
        /* What ListEscalations says (spec 5.6, lazaretctl escalations). */
        cr_assert_str_eq(esc_request_state_to_string(ESC_REQUEST_WAITING), "waiting");
        cr_assert_str_eq(esc_request_state_to_string(ESC_REQUEST_PROMPTING), "prompting");
        cr_assert_str_eq(esc_request_state_to_string(ESC_REQUEST_RUNNING), "running");
        cr_assert_null(esc_request_state_to_string(_ESC_REQUEST_STATE_MAX));
}
