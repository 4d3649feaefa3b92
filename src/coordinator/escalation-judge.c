/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the coordinator judges about an escalation request: which records
 * are accepted, the auto-approve rules, the table of decisions
 * (escalation-judge.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escalation-judge.h"
#include "fs-util.h"
#include "strv.h"
#include "util.h"

bool esc_is_id_name(const char *name) {
        if (strlen(name) != ESC_ID_LEN)
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

int esc_mailbox_take(int dirfd, const char *name, char **ret_buf, size_t *ret_len, char **ret_why) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len;
        int k;

        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        k = fd < 0 ? -errno : 0;
        /* Whatever it is, it goes: the sandbox's space is bounded, and a record is read once. */
        (void) unlinkat(dirfd, name, 0);
        if (!esc_is_id_name(name))
                return errorf(ret_why, -EINVAL, "not a request name");
        if (k < 0)
                return errorf(ret_why, k, "cannot be opened (a symlink?): %s", strerror(-k));
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return errorf(ret_why, -EBADF, "not a regular file");
        if (st.st_size > ESC_REQUEST_MAX)
                return errorf(ret_why, -EFBIG, "larger than %d bytes", ESC_REQUEST_MAX);
        k = read_full_fd(fd, ESC_REQUEST_MAX, &buf, &len);
        if (k < 0)
                return errorf(ret_why, k, "cannot be read: %s", strerror(-k));
        *ret_buf = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int esc_seen_init(EscSeen *s) {
        *s = (EscSeen) { .ids = calloc(ESC_SEEN_MAX, sizeof(*s->ids)) };
        return s->ids ? 0 : -ENOMEM;
}

void esc_seen_done(EscSeen *s) {
        s->ids = mfree(s->ids);
        s->n = s->next = 0;
}

bool esc_seen_check_add(EscSeen *s, const char *id) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->ids[i], id))
                        return true;
        snprintf(s->ids[s->next], sizeof(s->ids[s->next]), "%s", id);
        s->next = (s->next + 1) % ESC_SEEN_MAX;
        if (s->n < ESC_SEEN_MAX)
                s->n++;
        return false;
}

int esc_request_check(const EscCheck *c, const char *buf, const EscRequest *q, char **ret_why) {
        uint8_t certified[ESC_KEY_LEN];
        _cleanup_free_ char *error = NULL;
        TrustBinding binding;
        int k;

        if (!streq(q->id, c->name))
                return errorf(ret_why, -EINVAL, "its ID is not its name");
        if (!streq(q->sandbox, c->sandbox_id))
                return errorf(ret_why, -ESTALE, "it names another sandbox (another generation?)");
        if (!c->session_key)
                return errorf(ret_why, -ESRCH, "it names no session of this Domain");
        if (!c->trust)
                return errorf(ret_why, -ENOKEY, "this generation has no Trust Anchor yet");
        /* SR-9: the credential binds (session, profile, Domain, generation, the session named) to a key ... */
        binding = (TrustBinding) {
                .role = TRUST_ROLE_SESSION,
                .profile = c->profile,
                .domain = c->domain_id,
                .generation = c->sandbox_id,
                .component = q->session,
        };
        k = trust_anchor_verify(c->trust, q->cred, q->cred_len, &binding, certified, &error);
        if (k < 0)
                return errorf(ret_why, k, "out of memory");
        if (k != TRUST_OK)
                return errorf(ret_why, -EKEYREJECTED, "%s", strna(error));
        /* ... which is the one registered for that session ... */
        if (memcmp(certified, c->session_key, ESC_KEY_LEN) != 0)
                return errorf(ret_why, -EPERM, "its credential certifies another key than the session's");
        /* ... and which signed these exact bytes. */
        if (!esc_request_verify(buf, q, certified))
                return errorf(ret_why, -EBADMSG, "its signature is not the session's (not by the key its credential certifies)");
        if (q->time_usec + ESC_CLOCK_SKEW_USEC < c->now_usec || q->time_usec > c->now_usec + ESC_CLOCK_SKEW_USEC)
                return errorf(ret_why, -ETIME, "its time is too far from the host's");
        /* Only a request that is the session's own is remembered: nobody else can spend its ID. */
        if (esc_seen_check_add(c->seen, q->id))
                return errorf(ret_why, -EALREADY, "replayed (its ID was seen before)");
        if (c->n_pending >= c->max_pending)
                return errorf(ret_why, -EBUSY, "too many requests are pending");
        return 0;
}

const AutoApproveRule *esc_rule_match(const AutoApproveRule *rules, size_t n_rules, char *const *argv, const char *real) {
        size_t argc = strv_length((char **) argv);

        if (argc == 0 || esc_argv_has_metachar(argv, NULL) || argv[0][0] != '/')
                return NULL;
        for (size_t i = 0; i < n_rules; i++) {
                const AutoApproveRule *rule = &rules[i];
                size_t n = strv_length(rule->argv), k;

                if (argc < n || (argc > n && !rule->trailing_args))
                        continue;
                for (k = 0; k < n; k++)
                        if (!streq(rule->argv[k], argv[k]))
                                break;
                if (k < n)
                        continue;
                /* The file it names now is the one the configuration judged. */
                if (!rule->program || !real || !streq(rule->program, real))
                        continue;
                return rule;
        }
        return NULL;
}

static const char *const state_names[_ESC_REQUEST_STATE_MAX] = {
        [ESC_REQUEST_WAITING] = "waiting",
        [ESC_REQUEST_PROMPTING] = "prompting",
        [ESC_REQUEST_RUNNING] = "running",
};

const char *esc_request_state_to_string(EscRequestState s) {
        return s < _ESC_REQUEST_STATE_MAX ? state_names[s] : NULL;
}

static bool by_is_valid(const char *by) {
        return by && (streq(by, ESC_BY_TERMINAL) || streq(by, ESC_BY_BUS) || streq(by, ESC_BY_NOTIFICATION));
}

int esc_decide(EscRequestState state, EscDecision d, const char *by, EscStep *ret) {
        if ((unsigned) state >= _ESC_REQUEST_STATE_MAX)
                return -EINVAL;
        if (d == ESC_DECIDE_EXPIRE) {
                /* The deadline covers both the decision and the command's run. */
                *ret = (EscStep) {
                        .outcome = ESC_TIMEOUT,
                        .message = state == ESC_REQUEST_RUNNING ? "the host command ran out of time and was killed"
                                                                : "no decision in time",
                };
                return 0;
        }
        if (!by_is_valid(by))
                return -EINVAL;
        /* The first decision wins: an approved request's command runs, nobody takes that back. */
        if (state == ESC_REQUEST_RUNNING)
                return -EBUSY;
        switch (d) {
        case ESC_DECIDE_APPROVE:
                *ret = (EscStep) {
                        .run = true,
                        .end_prompt = state == ESC_REQUEST_PROMPTING,
                        /* On the terminal, the key's echo was the prompt's last line. */
                        .say_who = state == ESC_REQUEST_PROMPTING && !streq(by, ESC_BY_TERMINAL),
                };
                return 0;
        case ESC_DECIDE_DENY:
                *ret = (EscStep) {
                        .outcome = ESC_DENIED,
                        .message = "the developer denied the request",
                        .event = "denied",
                };
                return 0;
        case ESC_DECIDE_ABORT:
                /* Only the person at the session's own terminal ends it from a prompt. */
                if (!streq(by, ESC_BY_TERMINAL) || state != ESC_REQUEST_PROMPTING)
                        return -EPERM;
                *ret = (EscStep) {
                        .outcome = ESC_DENIED,
                        .message = "the developer aborted the session",
                        .event = "aborted",
                        .detail = "the developer ended the session",
                        .abort_session = true,
                };
                return 0;
        default:
                return -EINVAL;
        }
}
