/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "json-util.h"
#include "macro.h"
#include "util.h"

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

char *keypath_key(const char *parent, const char *key, size_t keylen) {
        char *r;

        if (is_plain_key(key, keylen)) {
                if (asprintf(&r, "%s%s%.*s", strempty(parent), isempty(parent) ? "" : ".", (int) keylen, key) < 0)
                        return NULL;
                return r;
        }

        /* Quote anything else, escaping what a terminal should not see raw. */
        size_t shown = keylen > 64 ? 64 : keylen;
        _cleanup_free_ char *q = malloc(shown * 4 + 8);
        size_t n = 0;
        if (!q)
                return NULL;
        for (size_t i = 0; i < shown; i++) {
                unsigned char c = (unsigned char) key[i];
                if (c == '"' || c == '\\') {
                        q[n++] = '\\';
                        q[n++] = (char) c;
                } else if (c < 0x20 || c == 0x7f)
                        n += (size_t) sprintf(q + n, "\\x%02x", c);
                else
                        q[n++] = (char) c;
        }
        if (shown < keylen) {
                memcpy(q + n, "...", 3);
                n += 3;
        }
        q[n] = 0;
        if (asprintf(&r, "%s[\"%s\"]", strempty(parent), q) < 0)
                return NULL;
        return r;
}

char *keypath_index(const char *parent, size_t index) {
        char *r;
        if (asprintf(&r, "%s[%zu]", strempty(parent), index) < 0)
                return NULL;
        return r;
}

/* ---- a structure-only scanner used to find duplicate keys ---- */

typedef struct Scanner {
        const char *s;
        size_t len, pos;
        char *bad_path;   /* the key path of what was refused */
        const char *bad_what;
        size_t bad_pos;
} Scanner;

/* Records why the document is refused and where; returns r. */
static int scan_refuse(Scanner *sc, int r, const char *path, size_t pos, const char *what) {
        if (!sc->bad_path) {
                sc->bad_path = strdup(path);
                if (!sc->bad_path)
                        return -ENOMEM;
                sc->bad_what = what;
                sc->bad_pos = pos;
        }
        return r;
}

static unsigned line_of(const char *s, size_t len, size_t pos) {
        unsigned line = 1;
        for (size_t i = 0; i < pos && i < len; i++)
                if (s[i] == '\n')
                        line++;
        return line;
}

static int skip_ws(Scanner *sc) {
        while (sc->pos < sc->len) {
                char c = sc->s[sc->pos];
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
                        sc->pos++;
                else if (c == '/' && sc->pos + 1 < sc->len && sc->s[sc->pos + 1] == '/') {
                        while (sc->pos < sc->len && sc->s[sc->pos] != '\n')
                                sc->pos++;
                } else if (c == '/' && sc->pos + 1 < sc->len && sc->s[sc->pos + 1] == '*') {
                        const char *e = memmem(sc->s + sc->pos + 2, sc->len - sc->pos - 2, "*/", 2);
                        if (!e)
                                return -EINVAL;
                        sc->pos = (size_t) (e - sc->s) + 2;
                } else
                        break;
        }
        return 0;
}

static void put_utf8(char *out, size_t *n, unsigned cp) {
        if (cp < 0x80)
                out[(*n)++] = (char) cp;
        else if (cp < 0x800) {
                out[(*n)++] = (char) (0xc0 | (cp >> 6));
                out[(*n)++] = (char) (0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
                out[(*n)++] = (char) (0xe0 | (cp >> 12));
                out[(*n)++] = (char) (0x80 | ((cp >> 6) & 0x3f));
                out[(*n)++] = (char) (0x80 | (cp & 0x3f));
        } else {
                out[(*n)++] = (char) (0xf0 | (cp >> 18));
                out[(*n)++] = (char) (0x80 | ((cp >> 12) & 0x3f));
                out[(*n)++] = (char) (0x80 | ((cp >> 6) & 0x3f));
                out[(*n)++] = (char) (0x80 | (cp & 0x3f));
        }
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

/* What a string held that json-c would not keep as written. */
typedef enum StringFlags {
        STRING_NUL = 1 << 0,            /* an escaped NUL: json-c cuts keys there */
        STRING_SURROGATE = 1 << 1,      /* an unpaired surrogate: json-c makes each one U+FFFD */
} StringFlags;

/* Scans a quoted string; if ret is non-NULL, returns its decoded bytes. */
static int scan_string(Scanner *sc, char **ret, size_t *ret_len, StringFlags *ret_flags) {
        char quote = sc->s[sc->pos++];
        _cleanup_free_ char *out = NULL;
        StringFlags flags = 0;
        size_t n = 0;

        if (ret) {
                out = malloc(sc->len - sc->pos + 1);
                if (!out)
                        return -ENOMEM;
        }

        while (sc->pos < sc->len) {
                char c = sc->s[sc->pos++];
                if (c == quote) {
                        if (ret) {
                                out[n] = 0;
                                *ret = TAKE_PTR(out);
                                *ret_len = n;
                        }
                        *ret_flags = flags;
                        return 0;
                }
                if (c != '\\') {
                        if (out)
                                out[n++] = c;
                        continue;
                }
                if (sc->pos >= sc->len)
                        return -EINVAL;
                c = sc->s[sc->pos++];
                if (c == 'u') {
                        unsigned cp, lo;
                        if (sc->len - sc->pos < 4 || hex4(sc->s + sc->pos, &cp) < 0)
                                return -EINVAL;
                        sc->pos += 4;
                        if (cp >= 0xd800 && cp < 0xdc00 && sc->len - sc->pos >= 6 &&
                            sc->s[sc->pos] == '\\' && sc->s[sc->pos + 1] == 'u' &&
                            hex4(sc->s + sc->pos + 2, &lo) >= 0 && lo >= 0xdc00 && lo < 0xe000) {
                                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                                sc->pos += 6;
                        }
                        if (cp == 0)
                                flags |= STRING_NUL;
                        else if (cp >= 0xd800 && cp < 0xe000)
                                flags |= STRING_SURROGATE;
                        /* An escape never produces more bytes than it spans. */
                        if (out)
                                put_utf8(out, &n, cp);
                        continue;
                }
                if (out) {
                        switch (c) {
                        case 'b': c = '\b'; break;
                        case 'f': c = '\f'; break;
                        case 'n': c = '\n'; break;
                        case 'r': c = '\r'; break;
                        case 't': c = '\t'; break;
                        default: break;
                        }
                        out[n++] = c;
                }
        }
        return -EINVAL;
}

typedef struct Key {
        char *s;
        size_t n;
} Key;

static int scan_value(Scanner *sc, json_object *o, const char *path, unsigned depth);

/*
 * Refuses what the configuration and every other document Lazaret reads has
 * no use for and json-c would not keep as written. path names the key (with
 * a NUL shown as \x00) or the value.
 */
static int check_string_flags(Scanner *sc, StringFlags flags, const char *path, size_t pos, bool is_key) {
        if (flags & STRING_NUL)
                return scan_refuse(sc, -EDOM, path, pos,
                                   is_key ? "key contains a NUL character (\\u0000)" : "string contains a NUL character (\\u0000)");
        if (flags & STRING_SURROGATE)
                return scan_refuse(sc, -EILSEQ, path, pos,
                                   is_key ? "key contains an unpaired UTF-16 surrogate escape"
                                          : "string contains an unpaired UTF-16 surrogate escape");
        return 0;
}

/*
 * The scanner walks the document alongside the tree json-c built, and is the
 * one place that decides which keys are distinct: by their full decoded
 * bytes. Anything json-c would read differently (an escaped NUL, an unpaired
 * surrogate) is refused above; if the two still disagree on the shape, the
 * document is refused rather than trusted.
 */
static int scan_object(Scanner *sc, json_object *o, const char *path, unsigned depth) {
        Key *keys = NULL;
        size_t n_keys = 0, start = sc->pos;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return scan_refuse(sc, -EBADMSG, path, start, "object read differently by json-c");

        sc->pos++; /* '{' */
        for (;;) {
                _cleanup_free_ char *key = NULL, *child = NULL;
                json_object *cv = NULL;
                size_t keylen, keypos;
                StringFlags flags;

                r = skip_ws(sc);
                if (r < 0)
                        goto finish;
                if (sc->pos >= sc->len) {
                        r = -EINVAL;
                        goto finish;
                }
                if (sc->s[sc->pos] == '}') {
                        sc->pos++;
                        break;
                }
                if (sc->s[sc->pos] != '"' && sc->s[sc->pos] != '\'') {
                        r = -EINVAL;
                        goto finish;
                }
                keypos = sc->pos;
                r = scan_string(sc, &key, &keylen, &flags);
                if (r < 0)
                        goto finish;
                child = keypath_key(path, key, keylen);
                if (!child) {
                        r = -ENOMEM;
                        goto finish;
                }
                r = check_string_flags(sc, flags, child, keypos, true);
                if (r < 0)
                        goto finish;
                for (size_t i = 0; i < n_keys; i++)
                        if (keys[i].n == keylen && memcmp(keys[i].s, key, keylen) == 0) {
                                r = scan_refuse(sc, -EEXIST, child, keypos, "duplicate key");
                                goto finish;
                        }
                if (!json_object_object_get_ex(o, key, &cv)) {
                        r = scan_refuse(sc, -EBADMSG, child, keypos, "key read differently by json-c");
                        goto finish;
                }
                Key *k = reallocarray(keys, n_keys + 1, sizeof(Key));
                if (!k) {
                        r = -ENOMEM;
                        goto finish;
                }
                keys = k;
                keys[n_keys++] = (Key) { .s = TAKE_PTR(key), .n = keylen };

                r = skip_ws(sc);
                if (r < 0)
                        goto finish;
                if (sc->pos >= sc->len || sc->s[sc->pos] != ':') {
                        r = -EINVAL;
                        goto finish;
                }
                sc->pos++;
                r = scan_value(sc, cv, child, depth + 1);
                if (r < 0)
                        goto finish;
                r = skip_ws(sc);
                if (r < 0)
                        goto finish;
                if (sc->pos < sc->len && sc->s[sc->pos] == ',') {
                        sc->pos++;
                        continue;
                }
                if (sc->pos < sc->len && sc->s[sc->pos] == '}') {
                        sc->pos++;
                        break;
                }
                r = -EINVAL;
                goto finish;
        }

        r = n_keys == (size_t) json_object_object_length(o) ? 0 :
                scan_refuse(sc, -EBADMSG, path, start, "object read differently by json-c");
finish:
        for (size_t i = 0; i < n_keys; i++)
                free(keys[i].s);
        free(keys);
        return r;
}

static int scan_array(Scanner *sc, json_object *o, const char *path, unsigned depth) {
        size_t start = sc->pos;
        int r;

        if (!json_object_is_type(o, json_type_array))
                return scan_refuse(sc, -EBADMSG, path, start, "array read differently by json-c");

        sc->pos++; /* '[' */
        for (size_t idx = 0;; idx++) {
                _cleanup_free_ char *child = NULL;

                r = skip_ws(sc);
                if (r < 0)
                        return r;
                if (sc->pos >= sc->len)
                        return -EINVAL;
                if (sc->s[sc->pos] == ']') {
                        sc->pos++;
                        if (idx != json_object_array_length(o))
                                return scan_refuse(sc, -EBADMSG, path, start, "array read differently by json-c");
                        return 0;
                }
                if (idx >= json_object_array_length(o))
                        return scan_refuse(sc, -EBADMSG, path, start, "array read differently by json-c");
                child = keypath_index(path, idx);
                if (!child)
                        return -ENOMEM;
                r = scan_value(sc, json_object_array_get_idx(o, idx), child, depth + 1);
                if (r < 0)
                        return r;
                r = skip_ws(sc);
                if (r < 0)
                        return r;
                if (sc->pos < sc->len && sc->s[sc->pos] == ',') {
                        sc->pos++;
                        continue;
                }
                if (sc->pos < sc->len && sc->s[sc->pos] == ']') {
                        sc->pos++;
                        idx++;
                        if (idx != json_object_array_length(o))
                                return scan_refuse(sc, -EBADMSG, path, start, "array read differently by json-c");
                        return 0;
                }
                return -EINVAL;
        }
}

static int scan_value(Scanner *sc, json_object *o, const char *path, unsigned depth) {
        int r;

        if (depth > JSON_MAX_DEPTH)
                return -E2BIG;
        r = skip_ws(sc);
        if (r < 0)
                return r;
        if (sc->pos >= sc->len)
                return -EINVAL;

        switch (sc->s[sc->pos]) {
        case '{':
                return scan_object(sc, o, path, depth);
        case '[':
                return scan_array(sc, o, path, depth);
        case '"':
        case '\'': {
                size_t pos = sc->pos;
                StringFlags flags;
                r = scan_string(sc, NULL, NULL, &flags);
                if (r < 0)
                        return r;
                return check_string_flags(sc, flags, path, pos, false);
        }
        default: {
                size_t start = sc->pos;
                /* A number or literal: runs until a delimiter. */
                while (sc->pos < sc->len && !strchr(",:]}[{ \t\r\n/\"'", sc->s[sc->pos]))
                        sc->pos++;
                return sc->pos > start ? 0 : -EINVAL;
        }
        }
}


int json_parse_strict(const char *text, size_t len, json_object **ret, char **ret_error) {
        _cleanup_json_ json_object *obj = NULL;
        struct json_tokener *tok;
        enum json_tokener_error jerr;
        size_t end;
        int r;

        *ret_error = NULL;
        if (len > JSON_DOC_MAX_BYTES)
                return errorf(ret_error, -EFBIG, "document is larger than %d bytes", JSON_DOC_MAX_BYTES);
        if (memchr(text, 0, len))
                return errorf(ret_error, -EINVAL, "line %u: NUL byte in document",
                              line_of(text, len, (size_t) ((const char *) memchr(text, 0, len) - text)));

        tok = json_tokener_new_ex(JSON_MAX_DEPTH);
        if (!tok)
                return -ENOMEM;
        /* Including the terminating NUL tells the tokener the input ends. */
        obj = json_tokener_parse_ex(tok, text, (int) len + 1);
        jerr = json_tokener_get_error(tok);
        end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);

        if (jerr != json_tokener_success || !obj) {
                if (jerr == json_tokener_success || jerr == json_tokener_continue || jerr == json_tokener_error_parse_eof)
                        return errorf(ret_error, -EINVAL, "line %u: document is empty or incomplete",
                                      line_of(text, len, end));
                return errorf(ret_error, -EINVAL, "line %u: invalid JSON: %s",
                              line_of(text, len, end), json_tokener_error_desc(jerr));
        }

        /* json-c stops after the first value; insist that nothing follows. */
        Scanner tail = { .s = text, .len = len, .pos = end > len ? len : end };
        if (skip_ws(&tail) < 0 || tail.pos < len)
                return errorf(ret_error, -EINVAL, "line %u: unexpected text after the top-level value",
                              line_of(text, len, tail.pos));

        Scanner sc = { .s = text, .len = len };
        r = scan_value(&sc, obj, "", 0);
        if (sc.bad_path) {
                _cleanup_free_ char *p = sc.bad_path;
                return errorf(ret_error, r, "line %u: %s%s%s", line_of(text, len, sc.bad_pos),
                              p, isempty(p) ? "" : ": ", sc.bad_what);
        }
        if (r == -E2BIG)
                return errorf(ret_error, r, "nesting deeper than %d levels", JSON_MAX_DEPTH);
        if (r < 0)
                return errorf(ret_error, r, "document could not be scanned: %s", strerror(-r));

        *ret = TAKE_PTR(obj);
        return 0;
}
