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
        char *dup_path;   /* set when a duplicate key is found */
        size_t dup_pos;
} Scanner;

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

/* Scans a quoted string; if ret is non-NULL, returns its decoded bytes. */
static int scan_string(Scanner *sc, char **ret, size_t *ret_len) {
        char quote = sc->s[sc->pos++];
        _cleanup_free_ char *out = NULL;
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

static int scan_value(Scanner *sc, const char *path, unsigned depth);

static int scan_object(Scanner *sc, const char *path, unsigned depth) {
        Key *keys = NULL;
        size_t n_keys = 0;
        int r;

        sc->pos++; /* '{' */
        for (;;) {
                _cleanup_free_ char *key = NULL, *child = NULL;
                size_t keylen, keypos;

                r = skip_ws(sc);
                if (r < 0)
                        goto finish;
                if (sc->pos >= sc->len) {
                        r = -EINVAL;
                        goto finish;
                }
                if (sc->s[sc->pos] == '}') {
                        sc->pos++;
                        r = 0;
                        goto finish;
                }
                if (sc->s[sc->pos] != '"' && sc->s[sc->pos] != '\'') {
                        r = -EINVAL;
                        goto finish;
                }
                keypos = sc->pos;
                r = scan_string(sc, &key, &keylen);
                if (r < 0)
                        goto finish;

                child = keypath_key(path, key, keylen);
                if (!child) {
                        r = -ENOMEM;
                        goto finish;
                }
                for (size_t i = 0; i < n_keys; i++)
                        if (keys[i].n == keylen && memcmp(keys[i].s, key, keylen) == 0) {
                                sc->dup_path = TAKE_PTR(child);
                                sc->dup_pos = keypos;
                                r = -EEXIST;
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
                r = scan_value(sc, child, depth + 1);
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
                        r = 0;
                        goto finish;
                }
                r = -EINVAL;
                goto finish;
        }

finish:
        for (size_t i = 0; i < n_keys; i++)
                free(keys[i].s);
        free(keys);
        return r;
}

static int scan_array(Scanner *sc, const char *path, unsigned depth) {
        int r;

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
                        return 0;
                }
                child = keypath_index(path, idx);
                if (!child)
                        return -ENOMEM;
                r = scan_value(sc, child, depth + 1);
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
                        return 0;
                }
                return -EINVAL;
        }
}

static int scan_value(Scanner *sc, const char *path, unsigned depth) {
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
                return scan_object(sc, path, depth);
        case '[':
                return scan_array(sc, path, depth);
        case '"':
        case '\'':
                return scan_string(sc, NULL, NULL);
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
        r = scan_value(&sc, "", 0);
        if (r == -EEXIST) {
                _cleanup_free_ char *p = sc.dup_path;
                return errorf(ret_error, -EEXIST, "line %u: %s: duplicate key",
                              line_of(text, len, sc.dup_pos), p);
        }
        if (r == -E2BIG)
                return errorf(ret_error, r, "nesting deeper than %d levels", JSON_MAX_DEPTH);
        if (r < 0)
                return errorf(ret_error, r, "document could not be scanned: %s", strerror(-r));

        *ret = TAKE_PTR(obj);
        return 0;
}
