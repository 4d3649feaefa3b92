/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Escalation Mailbox's record codec, the metacharacter rule, the
 * prompt's escaping and its edit syntax. Linked into the static
 * lazaret-escalate as well: libc and nettle only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <nettle/eddsa.h>

#include "escalation-proto.h"

#define REQUEST_MAGIC "lazaret-escalation-request 2\n"
#define RESULT_MAGIC "lazaret-escalation-result 1\n"

static const char *const outcome_names[_ESC_OUTCOME_MAX] = {
        [ESC_COMPLETED] = "completed",
        [ESC_DENIED] = "denied",
        [ESC_TIMEOUT] = "timeout",
        [ESC_CANCELLED] = "cancelled",
        [ESC_FAILED] = "failed",
};

const char *esc_outcome_to_string(EscOutcome o) {
        return o >= 0 && o < _ESC_OUTCOME_MAX ? outcome_names[o] : NULL;
}

int esc_outcome_from_string(const char *s) {
        for (int i = 0; i < _ESC_OUTCOME_MAX; i++)
                if (streq(s, outcome_names[i]))
                        return i;
        return -EINVAL;
}

/* Its own error helper: errorf() lives in util.c, which the static client does not link. */
_printf_(3, 4) static int fail(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;

        if (ret_error && !*ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

static void hex(const uint8_t *data, size_t n, char *ret) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                ret[2 * i] = digits[data[i] >> 4];
                ret[2 * i + 1] = digits[data[i] & 15];
        }
        ret[2 * n] = 0;
}

static int unhex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int esc_unhex(const char *s, uint8_t *ret, size_t n) {
        if (strlen(s) != 2 * n)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                int hi = unhex_digit(s[2 * i]), lo = unhex_digit(s[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                ret[i] = (uint8_t) (hi << 4 | lo);
        }
        return 0;
}

static int random_bytes(uint8_t *p, size_t n) {
        while (n > 0) {
                ssize_t k = getrandom(p, n, 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int esc_random_id(char ret[ESC_ID_LEN + 1]) {
        uint8_t b[ESC_ID_LEN / 2];
        int r = random_bytes(b, sizeof(b));

        if (r < 0)
                return r;
        hex(b, sizeof(b), ret);
        return 0;
}

int esc_key_generate(uint8_t priv[ESC_KEY_LEN], uint8_t pub[ESC_KEY_LEN]) {
        int r = random_bytes(priv, ESC_KEY_LEN);

        if (r < 0)
                return r;
        ed25519_sha512_public_key(pub, priv);
        return 0;
}

void esc_key_public(const uint8_t priv[ESC_KEY_LEN], uint8_t pub[ESC_KEY_LEN]) {
        ed25519_sha512_public_key(pub, priv);
}

/* ------------------------------------------------------------ validation */

static bool is_id(const char *s) {
        if (strlen(s) != ESC_ID_LEN)
                return false;
        for (const char *p = s; *p; p++)
                if (unhex_digit(*p) < 0)
                        return false;
        return true;
}

static bool is_sandbox_id(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > ESC_SANDBOX_ID_MAX)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                      *p == '_' || *p == '.'))
                        return false;
        return true;
}

int esc_request_validate(const EscRequest *r, char **ret_error) {
        if (!is_id(r->id))
                return fail(ret_error, -EINVAL, "the request ID is not %d lowercase hex digits", ESC_ID_LEN);
        if (!is_id(r->session))
                return fail(ret_error, -EINVAL, "the session ID is not %d lowercase hex digits", ESC_ID_LEN);
        if (!is_sandbox_id(r->sandbox))
                return fail(ret_error, -EINVAL, "the sandbox ID is not valid");
        if (r->timeout_s > ESC_TIMEOUT_MAX)
                return fail(ret_error, -EINVAL, "the timeout is out of range");
        if (!r->cwd || r->cwd[0] != '/' || strlen(r->cwd) > ESC_CWD_MAX)
                return fail(ret_error, -EINVAL, "the working directory is not an absolute path of at most %d bytes",
                            ESC_CWD_MAX);
        if (!r->why || strlen(r->why) > ESC_WHY_MAX)
                return fail(ret_error, -EINVAL, "the justification is longer than %d bytes", ESC_WHY_MAX);
        if (!r->argv || r->argc < 1 || r->argc > ESC_ARGC_MAX)
                return fail(ret_error, -EINVAL, "the command has no arguments or more than %d", ESC_ARGC_MAX);
        for (size_t i = 0; i < r->argc; i++)
                if (!r->argv[i] || strlen(r->argv[i]) > ESC_ARG_MAX)
                        return fail(ret_error, -EINVAL, "argument %zu is longer than %d bytes", i, ESC_ARG_MAX);
        if (r->argv[r->argc])
                return fail(ret_error, -EINVAL, "the argument vector is not terminated");
        if (r->argv[0][0] == 0)
                return fail(ret_error, -EINVAL, "the program name is empty");
        if (!r->cred || r->cred_len < 1 || r->cred_len > ESC_CRED_MAX)
                return fail(ret_error, -EINVAL, "the credential is missing or longer than %d bytes", ESC_CRED_MAX);
        return 0;
}

void esc_request_done(EscRequest *r) {
        if (!r)
                return;
        free(r->cwd);
        free(r->why);
        if (r->argv)
                for (size_t i = 0; r->argv[i]; i++)
                        free(r->argv[i]);
        free(r->argv);
        free(r->cred);
        *r = (EscRequest) {};
}

void esc_result_done(EscResult *r) {
        if (!r)
                return;
        free(r->message);
        free(r->out);
        free(r->err);
        *r = (EscResult) {};
}

/* ---------------------------------------------------------------- writer */

typedef struct Writer {
        char *buf;
        size_t len, cap;
        bool oom;
} Writer;

static void put(Writer *w, const void *data, size_t n) {
        if (w->oom)
                return;
        if (w->len + n + 1 > w->cap) {
                size_t cap = (w->len + n + 1) * 2;
                char *b = realloc(w->buf, cap);
                if (!b) {
                        w->oom = true;
                        return;
                }
                w->buf = b;
                w->cap = cap;
        }
        memcpy(w->buf + w->len, data, n);
        w->len += n;
        w->buf[w->len] = 0;
}

static void field(Writer *w, const char *name, const void *value, size_t n) {
        char head[64];
        int k = snprintf(head, sizeof(head), "%s %zu:", name, n);

        put(w, head, (size_t) k);
        put(w, value, n);
        put(w, "\n", 1);
}

static void field_str(Writer *w, const char *name, const char *value) {
        field(w, name, value, strlen(value));
}

static void field_u64(Writer *w, const char *name, uint64_t v) {
        char s[32];

        snprintf(s, sizeof(s), "%" PRIu64, v);
        field_str(w, name, s);
}

static int writer_finish(Writer *w, char **ret, size_t *ret_len) {
        if (w->oom) {
                free(w->buf);
                return -ENOMEM;
        }
        *ret = w->buf;
        *ret_len = w->len;
        return 0;
}

int esc_request_format(const EscRequest *r, const uint8_t key[ESC_KEY_LEN], char **ret, size_t *ret_len) {
        Writer w = {};
        uint8_t pub[ESC_KEY_LEN], sig[ESC_SIG_LEN];
        char sighex[2 * ESC_SIG_LEN + 1];
        int k = esc_request_validate(r, NULL);

        if (k < 0)
                return k;
        put(&w, REQUEST_MAGIC, strlen(REQUEST_MAGIC));
        field_str(&w, "id", r->id);
        field_str(&w, "session", r->session);
        field_str(&w, "sandbox", r->sandbox);
        field_u64(&w, "time", r->time_usec);
        field_u64(&w, "timeout", r->timeout_s);
        field_str(&w, "cwd", r->cwd);
        field_str(&w, "why", r->why);
        field_u64(&w, "argc", r->argc);
        for (size_t i = 0; i < r->argc; i++)
                field_str(&w, "arg", r->argv[i]);
        field(&w, "cred", r->cred, r->cred_len);
        if (w.oom) {
                free(w.buf);
                return -ENOMEM;
        }
        esc_key_public(key, pub);
        ed25519_sha512_sign(pub, key, w.len, (const uint8_t *) w.buf, sig);
        hex(sig, sizeof(sig), sighex);
        field_str(&w, "sig", sighex);
        return writer_finish(&w, ret, ret_len);
}

int esc_result_format(const EscResult *r, char **ret, size_t *ret_len) {
        Writer w = {};

        if (!is_id(r->id) || !esc_outcome_to_string(r->outcome) || r->status < 0 || r->status > 255 ||
            strlen(r->message ?: "") > ESC_MESSAGE_MAX || r->out_len > ESC_OUTPUT_MAX || r->err_len > ESC_OUTPUT_MAX)
                return -EINVAL;
        put(&w, RESULT_MAGIC, strlen(RESULT_MAGIC));
        field_str(&w, "id", r->id);
        field_str(&w, "outcome", esc_outcome_to_string(r->outcome));
        field_u64(&w, "status", (uint64_t) r->status);
        field_str(&w, "message", r->message ?: "");
        field(&w, "stdout", r->out ?: "", r->out_len);
        field(&w, "stderr", r->err ?: "", r->err_len);
        return writer_finish(&w, ret, ret_len);
}

/* ---------------------------------------------------------------- reader */

typedef struct Reader {
        const char *buf;
        size_t len, pos;
        char **error;
} Reader;

/*
 * The next field, which must be called name: *ret points into the buffer
 * (not NUL-terminated), *ret_n is its length, at most max.
 */
static int next(Reader *rd, const char *name, size_t max, const char **ret, size_t *ret_n) {
        size_t nl = strlen(name), n = 0, p = rd->pos, digits = 0;

        if (rd->len - p < nl + 1 || memcmp(rd->buf + p, name, nl) != 0 || rd->buf[p + nl] != ' ')
                return fail(rd->error, -EINVAL, "expected the field \"%s\" at byte %zu", name, p);
        p += nl + 1;
        while (p < rd->len && rd->buf[p] >= '0' && rd->buf[p] <= '9') {
                if (digits > 0 && n == 0)
                        return fail(rd->error, -EINVAL, "the length of \"%s\" has a leading zero", name);
                n = n * 10 + (size_t) (rd->buf[p] - '0');
                if (n > max)
                        return fail(rd->error, -E2BIG, "the field \"%s\" is longer than %zu bytes", name, max);
                digits++;
                p++;
        }
        if (digits == 0 || p >= rd->len || rd->buf[p] != ':')
                return fail(rd->error, -EINVAL, "the field \"%s\" has no valid length", name);
        p++;
        if (rd->len - p < n + 1 || rd->buf[p + n] != '\n')
                return fail(rd->error, -EINVAL, "the field \"%s\" is truncated", name);
        *ret = rd->buf + p;
        *ret_n = n;
        rd->pos = p + n + 1;
        return 0;
}

/* A field as a new NUL-terminated string; a NUL inside is refused. */
static int next_str(Reader *rd, const char *name, size_t max, char **ret) {
        const char *v;
        size_t n;
        int r = next(rd, name, max, &v, &n);

        if (r < 0)
                return r;
        if (memchr(v, 0, n))
                return fail(rd->error, -EINVAL, "the field \"%s\" contains a NUL byte", name);
        *ret = strndup(v, n);
        return *ret ? 0 : -ENOMEM;
}

/* A field into a fixed buffer of size (incl. NUL). */
static int next_fixed(Reader *rd, const char *name, char *ret, size_t size) {
        const char *v;
        size_t n;
        int r = next(rd, name, size - 1, &v, &n);

        if (r < 0)
                return r;
        if (memchr(v, 0, n))
                return fail(rd->error, -EINVAL, "the field \"%s\" contains a NUL byte", name);
        memcpy(ret, v, n);
        ret[n] = 0;
        return 0;
}

static int next_u64(Reader *rd, const char *name, uint64_t max, uint64_t *ret) {
        const char *v;
        size_t n;
        uint64_t x = 0;
        int r = next(rd, name, 20, &v, &n);

        if (r < 0)
                return r;
        if (n == 0 || (n > 1 && v[0] == '0'))
                return fail(rd->error, -EINVAL, "the field \"%s\" is not a number", name);
        for (size_t i = 0; i < n; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return fail(rd->error, -EINVAL, "the field \"%s\" is not a number", name);
                if (x > (max - (uint64_t) (v[i] - '0')) / 10)
                        return fail(rd->error, -ERANGE, "the field \"%s\" is out of range", name);
                x = x * 10 + (uint64_t) (v[i] - '0');
        }
        *ret = x;
        return 0;
}

static int expect_magic(Reader *rd, const char *magic) {
        size_t n = strlen(magic);

        if (rd->len < n || memcmp(rd->buf, magic, n) != 0)
                return fail(rd->error, -EINVAL, "not a Lazaret escalation record of this version (\"%.*s\")",
                            (int) n - 1, magic);
        rd->pos = n;
        return 0;
}

int esc_request_parse(const char *buf, size_t len, EscRequest *ret, char **ret_error) {
        Reader rd = { .buf = buf, .len = len, .error = ret_error };
        EscRequest q = {};
        char sighex[2 * ESC_SIG_LEN + 1];
        uint64_t t, argc;
        int r;

        if (len > ESC_REQUEST_MAX)
                return fail(ret_error, -E2BIG, "the request is larger than %d bytes", ESC_REQUEST_MAX);
        r = expect_magic(&rd, REQUEST_MAGIC);
        if (r >= 0)
                r = next_fixed(&rd, "id", q.id, sizeof(q.id));
        if (r >= 0)
                r = next_fixed(&rd, "session", q.session, sizeof(q.session));
        if (r >= 0)
                r = next_fixed(&rd, "sandbox", q.sandbox, sizeof(q.sandbox));
        if (r >= 0)
                r = next_u64(&rd, "time", UINT64_MAX, &q.time_usec);
        if (r >= 0)
                r = next_u64(&rd, "timeout", ESC_TIMEOUT_MAX, &t);
        if (r >= 0) {
                q.timeout_s = (unsigned) t;
                r = next_str(&rd, "cwd", ESC_CWD_MAX, &q.cwd);
        }
        if (r >= 0)
                r = next_str(&rd, "why", ESC_WHY_MAX, &q.why);
        if (r >= 0)
                r = next_u64(&rd, "argc", ESC_ARGC_MAX, &argc);
        if (r >= 0 && argc == 0)
                r = fail(ret_error, -EINVAL, "the command has no arguments");
        if (r >= 0) {
                q.argv = calloc(argc + 1, sizeof(char *));
                if (!q.argv)
                        r = -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < argc; i++) {
                r = next_str(&rd, "arg", ESC_ARG_MAX, &q.argv[i]);
                if (r >= 0)
                        q.argc++;
        }
        if (r >= 0) {
                const char *v;
                size_t n;
                r = next(&rd, "cred", ESC_CRED_MAX, &v, &n);
                if (r >= 0 && n > 0) {
                        q.cred = malloc(n);
                        if (!q.cred)
                                r = -ENOMEM;
                        else {
                                memcpy(q.cred, v, n);
                                q.cred_len = n;
                        }
                }
        }
        if (r >= 0) {
                q.signed_len = rd.pos;
                r = next_fixed(&rd, "sig", sighex, sizeof(sighex));
        }
        if (r >= 0 && esc_unhex(sighex, q.sig, sizeof(q.sig)) < 0)
                r = fail(ret_error, -EINVAL, "the signature is not %d lowercase hex digits", 2 * ESC_SIG_LEN);
        if (r >= 0 && rd.pos != len)
                r = fail(ret_error, -EINVAL, "%zu bytes follow the signature", len - rd.pos);
        if (r >= 0)
                r = esc_request_validate(&q, ret_error);
        if (r < 0) {
                esc_request_done(&q);
                return r;
        }
        *ret = q;
        return 0;
}

bool esc_request_verify(const char *buf, const EscRequest *r, const uint8_t pub[ESC_KEY_LEN]) {
        return ed25519_sha512_verify(pub, r->signed_len, (const uint8_t *) buf, r->sig) == 1;
}

int esc_result_parse(const char *buf, size_t len, EscResult *ret, char **ret_error) {
        Reader rd = { .buf = buf, .len = len, .error = ret_error };
        EscResult x = {};
        char outcome[16];
        const char *v;
        uint64_t status;
        int r;

        if (len > ESC_RESULT_MAX)
                return fail(ret_error, -E2BIG, "the result is larger than %d bytes", ESC_RESULT_MAX);
        r = expect_magic(&rd, RESULT_MAGIC);
        if (r >= 0)
                r = next_fixed(&rd, "id", x.id, sizeof(x.id));
        if (r >= 0 && !is_id(x.id))
                r = fail(ret_error, -EINVAL, "the request ID is not valid");
        if (r >= 0)
                r = next_fixed(&rd, "outcome", outcome, sizeof(outcome));
        if (r >= 0) {
                r = esc_outcome_from_string(outcome);
                if (r < 0)
                        r = fail(ret_error, -EINVAL, "unknown outcome \"%s\"", outcome);
                else
                        x.outcome = (EscOutcome) r;
        }
        if (r >= 0)
                r = next_u64(&rd, "status", 255, &status);
        if (r >= 0) {
                x.status = (int) status;
                r = next_str(&rd, "message", ESC_MESSAGE_MAX, &x.message);
        }
        if (r >= 0)
                r = next(&rd, "stdout", ESC_OUTPUT_MAX, &v, &x.out_len);
        if (r >= 0) {
                x.out = malloc(x.out_len + 1);
                if (!x.out)
                        r = -ENOMEM;
                else
                        memcpy(x.out, v, x.out_len);
        }
        if (r >= 0)
                r = next(&rd, "stderr", ESC_OUTPUT_MAX, &v, &x.err_len);
        if (r >= 0) {
                x.err = malloc(x.err_len + 1);
                if (!x.err)
                        r = -ENOMEM;
                else
                        memcpy(x.err, v, x.err_len);
        }
        if (r >= 0 && rd.pos != len)
                r = fail(ret_error, -EINVAL, "%zu bytes follow the last field", len - rd.pos);
        if (r < 0) {
                esc_result_done(&x);
                return r;
        }
        *ret = x;
        return 0;
}

/* ----------------------------------------------------- metacharacter rule */

bool esc_argv_has_metachar(char *const *argv, size_t *ret_index) {
        for (size_t i = 0; argv[i]; i++)
                for (const unsigned char *p = (const unsigned char *) argv[i]; *p; p++)
                        if (*p < 0x20 || *p == 0x7f || strchr(";|&`><\\", *p) || (*p == '$' && p[1] == '(')) {
                                if (ret_index)
                                        *ret_index = i;
                                return true;
                        }
        return false;
}

/* ------------------------------------------------------------- display */

/* The code point at s (*ret_n bytes), or -1 for an invalid sequence (1 byte). */
static int32_t utf8_next(const unsigned char *s, size_t *ret_n) {
        int32_t c;
        size_t n;

        if (s[0] < 0x80) {
                *ret_n = 1;
                return s[0];
        }
        if ((s[0] & 0xe0) == 0xc0)
                n = 2, c = s[0] & 0x1f;
        else if ((s[0] & 0xf0) == 0xe0)
                n = 3, c = s[0] & 0x0f;
        else if ((s[0] & 0xf8) == 0xf0)
                n = 4, c = s[0] & 0x07;
        else
                goto invalid;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        goto invalid;
                c = c << 6 | (s[i] & 0x3f);
        }
        /* Overlong forms, surrogates and what lies beyond Unicode. */
        if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) || (c >= 0xd800 && c <= 0xdfff) ||
            c > 0x10ffff)
                goto invalid;
        *ret_n = n;
        return c;
invalid:
        *ret_n = 1;
        return -1;
}

/* Characters that change how the text around them looks, or do not show. */
static bool invisible(int32_t c) {
        return c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad || c == 0x34f || c == 0x61c || c == 0x115f ||
               c == 0x1160 || c == 0x17b4 || c == 0x17b5 || c == 0x180e || (c >= 0x2000 && c <= 0x200f) ||
               (c >= 0x2028 && c <= 0x202f) || (c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0x3164 ||
               (c >= 0xfe00 && c <= 0xfe0f) || c == 0xfeff || c == 0xffa0 || (c >= 0xfff0 && c <= 0xfffb) ||
               (c >= 0xe0000 && c <= 0xe0fff);
}

static bool plain(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                      strchr("_./:=@%+,-", *s)))
                        return false;
        return true;
}

static void put_escaped(Writer *w, const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        char e[16];

        while (*p) {
                size_t n;
                int32_t c = utf8_next(p, &n);

                if (c < 0)
                        put(w, e, (size_t) snprintf(e, sizeof(e), "\\x%02x", *p));
                else if (invisible(c))
                        put(w, e, (size_t) snprintf(e, sizeof(e), "\\u{%04" PRIx32 "}", (uint32_t) c));
                else if (c == '\\' || c == '\'')
                        put(w, e, (size_t) snprintf(e, sizeof(e), "\\%c", (char) c));
                else
                        put(w, p, n);
                p += n;
        }
}

static void put_quoted(Writer *w, const char *s) {
        if (plain(s)) {
                put(w, s, strlen(s));
                return;
        }
        put(w, "'", 1);
        put_escaped(w, s);
        put(w, "'", 1);
}

char *esc_argv_to_display(char *const *argv) {
        Writer w = {};
        char *ret;
        size_t n;

        put(&w, "", 0);
        for (size_t i = 0; argv[i]; i++) {
                if (i > 0)
                        put(&w, " ", 1);
                put_quoted(&w, argv[i]);
        }
        return writer_finish(&w, &ret, &n) < 0 ? NULL : ret;
}

char *esc_string_to_display(const char *s) {
        Writer w = {};
        char *ret;
        size_t n;

        put(&w, "", 0);
        put_quoted(&w, s);
        return writer_finish(&w, &ret, &n) < 0 ? NULL : ret;
}

/* ----------------------------------------------------------- edit syntax */

static void strv_free_n(char **v) {
        if (!v)
                return;
        for (size_t i = 0; v[i]; i++)
                free(v[i]);
        free(v);
}

int esc_words_parse(const char *line, char ***ret) {
        char **words = calloc(ESC_ARGC_MAX + 1, sizeof(char *));
        size_t n = 0;
        const char *p = line;
        int r = -EINVAL;

        if (!words)
                return -ENOMEM;
        for (;;) {
                Writer w = {};
                bool any = false;
                char *word;
                size_t wl;

                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p)
                        break;
                put(&w, "", 0);
                while (*p && *p != ' ' && *p != '\t') {
                        any = true;
                        if (*p == '\'') {
                                const char *end = strchr(p + 1, '\'');
                                if (!end)
                                        goto fail_word;
                                put(&w, p + 1, (size_t) (end - p - 1));
                                p = end + 1;
                        } else if (*p == '"') {
                                for (p++; *p && *p != '"'; p++) {
                                        if (*p == '\\' && (p[1] == '"' || p[1] == '\\'))
                                                p++;
                                        put(&w, p, 1);
                                }
                                if (*p != '"')
                                        goto fail_word;
                                p++;
                        } else if (*p == '\\') {
                                if (!p[1])
                                        goto fail_word;
                                put(&w, p + 1, 1);
                                p += 2;
                        } else
                                put(&w, p++, 1);
                }
                if (!any || n == ESC_ARGC_MAX)
                        goto fail_word;
                if (writer_finish(&w, &word, &wl) < 0) {
                        r = -ENOMEM;
                        goto fail;
                }
                words[n++] = word;
                continue;
fail_word:
                free(w.buf);
                goto fail;
        }
        if (n == 0)
                goto fail;
        *ret = words;
        return 0;
fail:
        strv_free_n(words);
        return r;
}
