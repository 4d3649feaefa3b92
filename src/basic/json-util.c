/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "json-util.h"
#include "macro.h"
#include "parse-util.h"
#include "util.h"

/* ---- a growing byte buffer, always NUL-terminated once it holds anything ---- */

typedef struct Buf {
        char *p;
        size_t n, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
        size_t want;

        if (extra > SIZE_MAX / 2 - b->n - 1)
                return -ENOMEM;
        want = b->n + extra + 1;
        if (want <= b->cap)
                return 0;
        size_t cap = b->cap ? b->cap : 64;
        while (cap < want)
                cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
                return -ENOMEM;
        b->p = p;
        b->cap = cap;
        return 0;
}

static int buf_append(Buf *b, const char *s, size_t n) {
        int r = buf_reserve(b, n);
        if (r < 0)
                return r;
        memcpy(b->p + b->n, s, n);
        b->n += n;
        b->p[b->n] = 0;
        return 0;
}

static void buf_truncate(Buf *b, size_t n) {
        b->n = n;
        if (b->p)
                b->p[n] = 0;
}

/* ---- UTF-8 ---- */

/* The length of the valid UTF-8 sequence at p (no overlong forms, surrogates or values past U+10FFFF), or 0. */
static size_t utf8_sequence(const unsigned char *p, size_t n) {
        unsigned char lo = 0x80, hi = 0xbf;
        size_t k;

        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                k = 2;
        else if (p[0] == 0xe0) {
                k = 3;
                lo = 0xa0;
        } else if (p[0] == 0xed) {
                k = 3;
                hi = 0x9f;
        } else if (p[0] >= 0xe1 && p[0] <= 0xef)
                k = 3;
        else if (p[0] == 0xf0) {
                k = 4;
                lo = 0x90;
        } else if (p[0] == 0xf4) {
                k = 4;
                hi = 0x8f;
        } else if (p[0] >= 0xf1 && p[0] <= 0xf3)
                k = 4;
        else
                return 0;

        if (n < k || p[1] < lo || p[1] > hi)
                return 0;
        for (size_t i = 2; i < k; i++)
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
        return k;
}

bool utf8_is_valid(const char *s) {
        size_t n = strlen(s);

        for (size_t i = 0; i < n;) {
                size_t k = utf8_sequence((const unsigned char *) s + i, n - i);
                if (k == 0)
                        return false;
                i += k;
        }
        return true;
}

char *utf8_escape_invalid(const char *s) {
        size_t n = strlen(s), o = 0;
        char *r = malloc(4 * n + 1);

        if (!r)
                return NULL;
        for (size_t i = 0; i < n;) {
                const unsigned char *c = (const unsigned char *) s + i;
                size_t k = utf8_sequence(c, n - i);

                if (k == 0 || *c < 0x20 || *c == 0x7f) {
                        o += (size_t) sprintf(r + o, "\\x%02x", *c);
                        i++;
                        continue;
                }
                memcpy(r + o, c, k);
                o += k;
                i += k;
        }
        r[o] = 0;
        return r;
}

/* ---- key paths ---- */

static bool is_plain_key(const char *k, size_t n) {
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = k[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

/* Appends ".key", "key" at the start, or ["odd key"] with what a terminal should not see raw escaped. */
static int path_append_key(Buf *b, const char *key, size_t keylen) {
        int r;

        if (is_plain_key(key, keylen)) {
                if (b->n > 0) {
                        r = buf_append(b, ".", 1);
                        if (r < 0)
                                return r;
                }
                return buf_append(b, key, keylen);
        }

        size_t shown = keylen > 64 ? 64 : keylen;
        r = buf_reserve(b, shown * 4 + 8);
        if (r < 0)
                return r;
        b->p[b->n++] = '[';
        b->p[b->n++] = '"';
        for (size_t i = 0; i < shown;) {
                unsigned char c = (unsigned char) key[i];
                size_t k = utf8_sequence((const unsigned char *) key + i, shown - i);
                if (c == '"' || c == '\\') {
                        b->p[b->n++] = '\\';
                        b->p[b->n++] = (char) c;
                } else if (c < 0x20 || c == 0x7f || k == 0)
                        b->n += (size_t) snprintf(b->p + b->n, 5, "\\x%02x", c);
                else {
                        memcpy(b->p + b->n, key + i, k);
                        b->n += k;
                        i += k;
                        continue;
                }
                i++;
        }
        if (shown < keylen) {
                memcpy(b->p + b->n, "...", 3);
                b->n += 3;
        }
        b->p[b->n++] = '"';
        b->p[b->n++] = ']';
        b->p[b->n] = 0;
        return 0;
}

static int path_append_index(Buf *b, size_t index) {
        char s[32];
        int k = snprintf(s, sizeof(s), "[%zu]", index);
        return buf_append(b, s, (size_t) k);
}

char *keypath_key(const char *parent, const char *key, size_t keylen) {
        Buf b = {};

        if (buf_append(&b, strempty(parent), strlen(strempty(parent))) < 0 || path_append_key(&b, key, keylen) < 0) {
                free(b.p);
                return NULL;
        }
        return b.p;
}

char *keypath_index(const char *parent, size_t index) {
        Buf b = {};

        if (buf_append(&b, strempty(parent), strlen(strempty(parent))) < 0 || path_append_index(&b, index) < 0) {
                free(b.p);
                return NULL;
        }
        return b.p;
}

/* ---- the reader ---- */

/*
 * One pass over the text, one value at a time, building json-c objects as it
 * goes. Nothing else reads the grammar: json-c's tokener is not used.
 */
typedef struct Reader {
        const char *s;
        size_t len, pos;
        Buf str;        /* the string being decoded, reused */
        Buf path;       /* the key path of the value being read */
        char *error;    /* why the document is refused */
} Reader;

static void reader_done(Reader *rd) {
        free(rd->str.p);
        free(rd->path.p);
        free(rd->error);
}

/* Line and column (in characters, both from 1) of a byte offset. */
static void position_of(const char *s, size_t pos, unsigned *ret_line, unsigned *ret_column) {
        unsigned line = 1, column = 1;

        for (size_t i = 0; i < pos; i++)
                if (s[i] == '\n') {
                        line++;
                        column = 1;
                } else if (((unsigned char) s[i] & 0xc0) != 0x80)
                        column++;
        *ret_line = line;
        *ret_column = column;
}

/* Records why the document is refused, where, and at which key path; returns r. */
_printf_(4, 5) static int refuse(Reader *rd, size_t pos, int r, const char *fmt, ...) {
        _cleanup_free_ char *what = NULL;
        unsigned line, column;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&what, fmt, ap) < 0)
                what = NULL;
        va_end(ap);
        if (!what)
                return -ENOMEM;
        position_of(rd->s, pos, &line, &column);
        free(rd->error);
        if (asprintf(&rd->error, "line %u, column %u: %s%s%s", line, column, strempty(rd->path.p),
                     rd->path.n > 0 ? ": " : "", what) < 0) {
                rd->error = NULL;
                return -ENOMEM;
        }
        return r;
}

static bool at_end(const Reader *rd) {
        return rd->pos >= rd->len;
}

static char peek(const Reader *rd) {
        return at_end(rd) ? 0 : rd->s[rd->pos];
}

/* What was found where something else was expected. */
static int unexpected(Reader *rd, const char *expected) {
        if (at_end(rd))
                return refuse(rd, rd->pos, -EINVAL, "document is empty or incomplete");
        if (rd->s[rd->pos] == 0)
                return refuse(rd, rd->pos, -EINVAL, "NUL byte in document");
        return refuse(rd, rd->pos, -EINVAL, "invalid JSON: expected %s", expected);
}

/* White space and, as lazaret.conf(5) documents, comments. */
static int skip_ws(Reader *rd) {
        while (!at_end(rd)) {
                char c = rd->s[rd->pos];

                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                        rd->pos++;
                        continue;
                }
                if (c != '/' || rd->pos + 1 >= rd->len || (rd->s[rd->pos + 1] != '/' && rd->s[rd->pos + 1] != '*'))
                        return 0;

                bool block = rd->s[rd->pos + 1] == '*';
                size_t start = rd->pos;
                rd->pos += 2;
                for (;;) {
                        if (at_end(rd)) {
                                if (block)
                                        return refuse(rd, start, -EINVAL, "invalid JSON: unterminated comment");
                                break;
                        }
                        c = rd->s[rd->pos];
                        if (!block && c == '\n')
                                break;
                        if (block && c == '*' && rd->pos + 1 < rd->len && rd->s[rd->pos + 1] == '/') {
                                rd->pos += 2;
                                break;
                        }
                        if (c == 0)
                                return refuse(rd, rd->pos, -EINVAL, "NUL byte in document");
                        size_t k = utf8_sequence((const unsigned char *) rd->s + rd->pos, rd->len - rd->pos);
                        if (k == 0)
                                return refuse(rd, rd->pos, -EILSEQ, "invalid UTF-8 in a comment");
                        rd->pos += k;
                }
        }
        return 0;
}

static int hex4(const char *p, unsigned *ret) {
        unsigned v = 0;

        for (int i = 0; i < 4; i++) {
                char c = p[i];
                v <<= 4;
                if (c >= '0' && c <= '9')
                        v |= (unsigned) (c - '0');
                else if (c >= 'a' && c <= 'f')
                        v |= (unsigned) (c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        v |= (unsigned) (c - 'A' + 10);
                else
                        return -EINVAL;
        }
        *ret = v;
        return 0;
}

static int put_utf8(Buf *b, unsigned cp) {
        char u[4];
        size_t n;

        if (cp < 0x80) {
                u[0] = (char) cp;
                n = 1;
        } else if (cp < 0x800) {
                u[0] = (char) (0xc0 | (cp >> 6));
                u[1] = (char) (0x80 | (cp & 0x3f));
                n = 2;
        } else if (cp < 0x10000) {
                u[0] = (char) (0xe0 | (cp >> 12));
                u[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
                u[2] = (char) (0x80 | (cp & 0x3f));
                n = 3;
        } else {
                u[0] = (char) (0xf0 | (cp >> 18));
                u[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
                u[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
                u[3] = (char) (0x80 | (cp & 0x3f));
                n = 4;
        }
        return buf_append(b, u, n);
}

/* What a string held that no document Lazaret reads has a use for. */
typedef enum StringFlaw {
        STRING_CLEAN,
        STRING_NUL,             /* an escaped NUL: C strings (and json-c's keys) end there */
        STRING_SURROGATE,       /* an unpaired surrogate escape: no character, distinct escapes would alias */
} StringFlaw;

/*
 * Decodes the string at rd->pos into rd->str. An escaped NUL or unpaired
 * surrogate is not refused here but reported with the position of its escape,
 * so that the caller can name the whole key.
 */
static int read_string(Reader *rd, StringFlaw *ret_flaw, size_t *ret_flaw_pos) {
        StringFlaw flaw = STRING_CLEAN;
        size_t flaw_pos = 0, start = rd->pos;
        int r;

        buf_truncate(&rd->str, 0);
        r = buf_append(&rd->str, "", 0);
        if (r < 0)
                return r;

        rd->pos++; /* '"' */
        for (;;) {
                if (at_end(rd))
                        return refuse(rd, start, -EINVAL, "invalid JSON: unterminated string");

                unsigned char c = (unsigned char) rd->s[rd->pos];
                if (c == '"') {
                        rd->pos++;
                        break;
                }
                if (c == 0)
                        return refuse(rd, rd->pos, -EINVAL, "NUL byte in document");
                if (c < 0x20)
                        return refuse(rd, rd->pos, -EINVAL, "invalid JSON: control character 0x%02x in a string (write it as an escape)", c);
                if (c != '\\') {
                        size_t k = utf8_sequence((const unsigned char *) rd->s + rd->pos, rd->len - rd->pos);
                        if (k == 0)
                                return refuse(rd, rd->pos, -EILSEQ, "invalid UTF-8 in a string");
                        r = buf_append(&rd->str, rd->s + rd->pos, k);
                        if (r < 0)
                                return r;
                        rd->pos += k;
                        continue;
                }

                size_t esc = rd->pos;
                char e = rd->pos + 1 < rd->len ? rd->s[rd->pos + 1] : 0;
                const char *simple = strchr("\"\\/bfnrt", e);
                if (e != 0 && simple) {
                        static const char decoded[] = "\"\\/\b\f\n\r\t";
                        r = buf_append(&rd->str, &decoded[simple - "\"\\/bfnrt"], 1);
                        if (r < 0)
                                return r;
                        rd->pos += 2;
                        continue;
                }
                unsigned cp, lo;
                if (e != 'u' || rd->len - rd->pos < 6 || hex4(rd->s + rd->pos + 2, &cp) < 0)
                        return refuse(rd, esc, -EINVAL, "invalid JSON: invalid escape in a string");
                rd->pos += 6;

                if (cp >= 0xd800 && cp < 0xdc00 && rd->len - rd->pos >= 6 && rd->s[rd->pos] == '\\' &&
                    rd->s[rd->pos + 1] == 'u' && hex4(rd->s + rd->pos + 2, &lo) >= 0 && lo >= 0xdc00 && lo < 0xe000) {
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                        rd->pos += 6;
                }
                /* Kept as written (a surrogate as its three bytes) so that a message can show it; then refused. */
                if (flaw == STRING_CLEAN && (cp == 0 || (cp >= 0xd800 && cp < 0xe000))) {
                        flaw = cp == 0 ? STRING_NUL : STRING_SURROGATE;
                        flaw_pos = esc;
                }
                r = put_utf8(&rd->str, cp);
                if (r < 0)
                        return r;
        }

        *ret_flaw = flaw;
        *ret_flaw_pos = flaw_pos;
        return 0;
}

static int refuse_flaw(Reader *rd, StringFlaw flaw, size_t pos, bool is_key) {
        switch (flaw) {
        case STRING_NUL:
                return refuse(rd, pos, -EDOM, "%s contains a NUL character (\\u0000)", is_key ? "key" : "string");
        case STRING_SURROGATE:
                return refuse(rd, pos, -EILSEQ, "%s contains an unpaired UTF-16 surrogate escape", is_key ? "key" : "string");
        default:
                return 0;
        }
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* RFC 8259 numbers: integers become int64 (or uint64 above INT64_MAX), the rest doubles. */
static int read_number(Reader *rd, json_object **ret) {
        size_t start = rd->pos;
        bool integer = true;
        json_object *o;
        int r;

        if (peek(rd) == '-')
                rd->pos++;
        if (peek(rd) == '0')
                rd->pos++;
        else if (is_digit(peek(rd)))
                while (is_digit(peek(rd)))
                        rd->pos++;
        else
                return unexpected(rd, "a digit");
        if (peek(rd) == '.') {
                integer = false;
                rd->pos++;
                if (!is_digit(peek(rd)))
                        return unexpected(rd, "a digit after the decimal point");
                while (is_digit(peek(rd)))
                        rd->pos++;
        }
        if (peek(rd) == 'e' || peek(rd) == 'E') {
                integer = false;
                rd->pos++;
                if (peek(rd) == '+' || peek(rd) == '-')
                        rd->pos++;
                if (!is_digit(peek(rd)))
                        return unexpected(rd, "a digit in the exponent");
                while (is_digit(peek(rd)))
                        rd->pos++;
        }
        if (is_digit(peek(rd)))
                return refuse(rd, start, -EINVAL, "invalid JSON: a number with a leading zero");

        buf_truncate(&rd->str, 0);
        r = buf_append(&rd->str, rd->s + start, rd->pos - start);
        if (r < 0)
                return r;

        /* The one number parser converts what the grammar above took; "-0" is JSON's too. */
        if (integer && rd->str.p[0] == '-') {
                int64_t v;
                r = parse_signed(rd->str.p, PARSE_LEADING_ZEROS, INT64_MIN, INT64_MAX, &v);
                if (r == -ERANGE)
                        return refuse(rd, start, -ERANGE, "integer out of range");
                o = r < 0 ? NULL : json_object_new_int64(v);
        } else if (integer) {
                uint64_t v;
                r = parse_unsigned(rd->str.p, 0, 0, UINT64_MAX, &v);
                if (r == -ERANGE)
                        return refuse(rd, start, -ERANGE, "integer out of range");
                o = r < 0 ? NULL : v <= INT64_MAX ? json_object_new_int64((int64_t) v) : json_object_new_uint64(v);
        } else {
                double v;
                r = parse_double(rd->str.p, &v);
                if (r == -ERANGE)
                        return refuse(rd, start, -ERANGE, "number out of range");
                /* json-c writes it back as it was written. */
                o = r < 0 ? NULL : json_object_new_double_s(v, rd->str.p);
        }
        if (r < 0)
                return refuse(rd, start, -EINVAL, "invalid JSON: invalid number");
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* What a bare word (true, or json-c's NaN) is made of: it is compared whole. */
static bool is_word_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}

static int read_literal(Reader *rd, json_object **ret) {
        static const struct {
                const char *word;
                int value;      /* -1: null */
        } literals[] = { { "true", 1 }, { "false", 0 }, { "null", -1 } };
        size_t start = rd->pos, n = 0;

        while (rd->pos + n < rd->len && is_word_char(rd->s[rd->pos + n]))
                n++;
        for (size_t i = 0; i < ELEMENTSOF(literals); i++)
                if (strlen(literals[i].word) == n && memcmp(rd->s + start, literals[i].word, n) == 0) {
                        rd->pos += n;
                        if (literals[i].value < 0) {
                                *ret = NULL;
                                return 0;
                        }
                        *ret = json_object_new_boolean(literals[i].value);
                        return *ret ? 0 : -ENOMEM;
                }
        return unexpected(rd, "a value");
}

static int read_value(Reader *rd, unsigned depth, json_object **ret);

/* After a member of an object or array: ',' (0: another may follow) or the closing bracket (1). */
static int after_member(Reader *rd, char close) {
        int r;

        r = skip_ws(rd);
        if (r < 0)
                return r;
        if (peek(rd) == ',') {
                rd->pos++;
                return 0;
        }
        if (peek(rd) == close) {
                rd->pos++;
                return 1;
        }
        return unexpected(rd, close == '}' ? "',' or '}'" : "',' or ']'");
}

static int read_object(Reader *rd, unsigned depth, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        size_t parent = rd->path.n;
        int r;

        if (!o)
                return -ENOMEM;
        rd->pos++; /* '{' */
        for (;;) {
                _cleanup_json_ json_object *v = NULL;
                _cleanup_free_ char *key = NULL;
                size_t keypos, flaw_pos;
                StringFlaw flaw;

                r = skip_ws(rd);
                if (r < 0)
                        return r;
                /* Empty, or after a trailing comma. */
                if (peek(rd) == '}') {
                        rd->pos++;
                        break;
                }
                if (peek(rd) != '"')
                        return unexpected(rd, "a key in double quotes or '}'");

                keypos = rd->pos;
                r = read_string(rd, &flaw, &flaw_pos);
                if (r < 0)
                        return r;
                r = path_append_key(&rd->path, rd->str.p, rd->str.n);
                if (r < 0)
                        return r;
                r = refuse_flaw(rd, flaw, flaw_pos, true);
                if (r < 0)
                        return r;
                /* With NUL refused, json-c's C-string keys are the full decoded bytes. */
                if (json_object_object_get_ex(o, rd->str.p, NULL))
                        return refuse(rd, keypos, -EEXIST, "duplicate key");
                key = strndup(rd->str.p, rd->str.n);
                if (!key)
                        return -ENOMEM;

                r = skip_ws(rd);
                if (r < 0)
                        return r;
                if (peek(rd) != ':')
                        return unexpected(rd, "':' after the key");
                rd->pos++;
                r = read_value(rd, depth, &v);
                if (r < 0)
                        return r;
                if (json_object_object_add_ex(o, key, v, JSON_C_OBJECT_ADD_KEY_IS_NEW) < 0)
                        return -ENOMEM;
                TAKE_PTR(v);
                buf_truncate(&rd->path, parent);

                r = after_member(rd, '}');
                if (r < 0)
                        return r;
                if (r > 0)
                        break;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static int read_array(Reader *rd, unsigned depth, json_object **ret) {
        _cleanup_json_ json_object *a = json_object_new_array();
        size_t parent = rd->path.n;
        int r;

        if (!a)
                return -ENOMEM;
        rd->pos++; /* '[' */
        for (size_t idx = 0;; idx++) {
                _cleanup_json_ json_object *v = NULL;

                r = skip_ws(rd);
                if (r < 0)
                        return r;
                if (peek(rd) == ']') {
                        rd->pos++;
                        break;
                }
                r = path_append_index(&rd->path, idx);
                if (r < 0)
                        return r;
                r = read_value(rd, depth, &v);
                if (r < 0)
                        return r;
                if (json_object_array_add(a, v) < 0)
                        return -ENOMEM;
                TAKE_PTR(v);
                buf_truncate(&rd->path, parent);

                r = after_member(rd, ']');
                if (r < 0)
                        return r;
                if (r > 0)
                        break;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

/* depth: how many objects and arrays enclose the value. */
static int read_value(Reader *rd, unsigned depth, json_object **ret) {
        StringFlaw flaw;
        size_t flaw_pos;
        int r;

        r = skip_ws(rd);
        if (r < 0)
                return r;
        if (at_end(rd))
                return unexpected(rd, "a value");

        switch (rd->s[rd->pos]) {
        case '{':
        case '[':
                if (depth >= JSON_MAX_DEPTH)
                        return refuse(rd, rd->pos, -E2BIG, "nesting deeper than %d levels", JSON_MAX_DEPTH);
                return rd->s[rd->pos] == '{' ? read_object(rd, depth + 1, ret) : read_array(rd, depth + 1, ret);
        case '"':
                r = read_string(rd, &flaw, &flaw_pos);
                if (r < 0)
                        return r;
                r = refuse_flaw(rd, flaw, flaw_pos, false);
                if (r < 0)
                        return r;
                *ret = json_object_new_string_len(rd->str.p, (int) rd->str.n);
                return *ret ? 0 : -ENOMEM;
        case '-':
        case '0' ... '9':
                return read_number(rd, ret);
        default:
                return read_literal(rd, ret);
        }
}

int json_parse_strict(const char *text, size_t len, json_object **ret, char **ret_error) {
        _cleanup_(reader_done) Reader rd = { .s = text, .len = len };
        _cleanup_json_ json_object *o = NULL;
        int r;

        *ret_error = NULL;
        if (len > JSON_DOC_MAX_BYTES)
                return errorf(ret_error, -EFBIG, "document is larger than %d bytes", JSON_DOC_MAX_BYTES);

        r = read_value(&rd, 0, &o);
        if (r >= 0)
                r = skip_ws(&rd);
        if (r >= 0 && !at_end(&rd))
                r = rd.s[rd.pos] == 0 ? refuse(&rd, rd.pos, -EINVAL, "NUL byte in document")
                                      : refuse(&rd, rd.pos, -EINVAL, "unexpected text after the top-level value");
        /* No document Lazaret reads is a bare null, and callers need not test for it. */
        if (r >= 0 && !o)
                r = refuse(&rd, 0, -EINVAL, "the document is null");
        if (r < 0) {
                *ret_error = TAKE_PTR(rd.error);
                return r;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

/* ---- builders that fail closed ---- */

int json_add(json_object *o, const char *key, json_object *value) {
        if (!utf8_is_valid(key)) {
                json_object_put(value);
                return -EILSEQ;
        }
        if (!o || !value || json_object_object_add(o, key, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

int json_add_null(json_object *o, const char *key) {
        if (!utf8_is_valid(key))
                return -EILSEQ;
        if (!o || json_object_object_add(o, key, NULL) < 0)
                return -ENOMEM;
        return 0;
}

int json_add_string(json_object *o, const char *key, const char *s) {
        if (!utf8_is_valid(s))
                return -EILSEQ;
        return json_add(o, key, json_object_new_string(s));
}

int json_add_bool(json_object *o, const char *key, bool b) {
        return json_add(o, key, json_object_new_boolean(b));
}

int json_add_int64(json_object *o, const char *key, int64_t v) {
        return json_add(o, key, json_object_new_int64(v));
}

int json_add_uint64(json_object *o, const char *key, uint64_t v) {
        return json_add(o, key, json_object_new_uint64(v));
}

int json_append(json_object *a, json_object *value) {
        if (!a || !value || json_object_array_add(a, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

int json_append_string(json_object *a, const char *s) {
        if (!utf8_is_valid(s))
                return -EILSEQ;
        return json_append(a, json_object_new_string(s));
}

int json_new_strv(const char *const *l, json_object **ret) {
        _cleanup_json_ json_object *a = json_object_new_array();
        int r;

        if (!a)
                return -ENOMEM;
        for (; l && *l; l++) {
                r = json_append_string(a, *l);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

int json_add_strv(json_object *o, const char *key, const char *const *l) {
        json_object *a = NULL;
        int r;

        r = json_new_strv(l, &a);
        if (r < 0)
                return r;
        return json_add(o, key, a);
}

json_object *json_new_bytes(const char *s) {
        json_object *a;

        if (utf8_is_valid(s))
                return json_object_new_string(s);
        a = json_object_new_array_ext((int) strlen(s));
        for (const unsigned char *p = (const unsigned char *) s; a && *p; p++)
                if (json_append(a, json_object_new_int(*p)) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

int json_add_bytes(json_object *o, const char *key, const char *s) {
        return json_add(o, key, json_new_bytes(s));
}

int json_append_bytes(json_object *a, const char *s) {
        return json_append(a, json_new_bytes(s));
}

int json_add_bytes_strv(json_object *o, const char *key, const char *const *l) {
        _cleanup_json_ json_object *a = json_object_new_array();
        int r;

        if (!a)
                return -ENOMEM;
        for (; l && *l; l++) {
                r = json_append_bytes(a, *l);
                if (r < 0)
                        return r;
        }
        return json_add(o, key, TAKE_PTR(a));
}

int json_get_bytes(json_object *o, char **ret) {
        size_t n;
        char *s;

        if (json_object_is_type(o, json_type_string)) {
                const char *v = json_object_get_string(o);
                if ((size_t) json_object_get_string_len(o) != strlen(v))
                        return -EINVAL;         /* a NUL inside */
                s = strdup(v);
                if (!s)
                        return -ENOMEM;
                *ret = s;
                return 0;
        }
        if (!json_object_is_type(o, json_type_array))
                return -EINVAL;
        n = json_object_array_length(o);
        s = malloc(n + 1);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *b = json_object_array_get_idx(o, i);
                int64_t v;
                if (!json_object_is_type(b, json_type_int) || (v = json_object_get_int64(b)) < 1 || v > 255) {
                        free(s);
                        return -EINVAL;
                }
                s[i] = (char) v;
        }
        s[n] = 0;
        *ret = s;
        return 0;
}

int json_to_string(json_object *o, int flags, char **ret) {
        const char *s;
        char *c;

        if (!o)
                return -ENOMEM;
        s = json_object_to_json_string_ext(o, flags);
        if (!s)
                return -ENOMEM;
        c = strdup(s);
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}
