/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "term-prompt.h"

/*
 * Before the prompt is drawn (spec 5.6 has the reason for each):
 *  CAN, then ST                 end a control sequence or a string (OSC, DCS, APC) the sandbox left open
 *  OSC 8 ;; ST                  end a hyperlink the text would otherwise belong to
 *  CSI ! p                      soft reset (DECSTR), where the terminal has it; each part follows explicitly
 *  ESC SP F                     7-bit controls in what the terminal sends (S7C1T)
 *  CSI ? 69 l                   no left/right margin mode: margins are the full width (DECLRMM, DECSLRM)
 *  CSI r                        scrolling region is the whole screen (DECSTBM)
 *  CSI ? 6 l                    cursor addressing relative to the screen, not the region (DECOM)
 *  CSI ? 7 h, CSI ? 45 l        autowrap on, reverse wrap off
 *  CSI 4 l, CSI 20 l            replace mode (IRM), LF without CR (LNM)
 *  CSI 2 l, CSI 12 h            keyboard unlocked (KAM), no local echo (SRM)
 *  CSI ? 5 l, CSI ? 25 h        normal video (DECSCNM), a visible cursor (DECTCEM)
 *  ESC ( B ESC ) B ESC * B ESC + B SI    G0..G3 ASCII, G0 shifted in: no line-drawing or national set
 *  CSI 0 m                      plain attributes: no conceal (SGR 8), no reverse, default colours
 *  OSC 104, 105, 110, 111, 112, 117, 119   the palette, special colours, default foreground and
 *                               background, cursor and highlight colours as the terminal started
 *  APC G a=d,d=a ST             delete the kitty graphics placements on the screen (images over text)
 *  CSI ? 9;1000;1001;1002;1003;1004;1005;1006;1015;1016 l   no mouse, highlight or focus reports
 *  CSI ? 2004 l                 no bracketed paste
 *  CSI ? 1 l, ESC >, CSI ? 66 l cursor and keypad keys in their normal mode
 *  CSI > 4 m                    xterm's modifyOtherKeys at its default
 *  CSI < 99 u, CSI = 0 ; 1 u    the kitty keyboard protocol's stack emptied, its flags 0
 *  CSI ? 9001 l                 no win32-input-mode
 * then the cursor to the last row (CSI 999 ; 1 H), from where each line is
 * scrolled in (CR LF), made single-width (ESC # 5) and erased (CSI 2 K).
 */
const char term_prompt_reset[] =
        "\x18\x1b\\"
        "\x1b]8;;\x1b\\"
        "\x1b[!p"
        "\x1b F"
        "\x1b[?69l"
        "\x1b[r"
        "\x1b[?6l"
        "\x1b[?7h\x1b[?45l"
        "\x1b[4l\x1b[20l"
        "\x1b[2l\x1b[12h"
        "\x1b[?5l\x1b[?25h"
        "\x1b(B\x1b)B\x1b*B\x1b+B\x0f"
        "\x1b[0m"
        "\x1b]104\x1b\\\x1b]105\x1b\\\x1b]110\x1b\\\x1b]111\x1b\\\x1b]112\x1b\\\x1b]117\x1b\\\x1b]119\x1b\\"
        "\x1b_Ga=d,d=a\x1b\\"
        "\x1b[?9l\x1b[?1000l\x1b[?1001l\x1b[?1002l\x1b[?1003l\x1b[?1004l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1016l"
        "\x1b[?2004l"
        "\x1b[?1l\x1b>\x1b[?66l"
        "\x1b[>4m"
        "\x1b[<99u\x1b[=0;1u"
        "\x1b[?9001l"
        "\x1b[999;1H";

/* Columns a line takes: anything not ASCII counted as two, so that a wide character never makes it longer than reckoned. */
static size_t text_width(const char *s) {
        size_t w = 0;

        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p < 0x80)
                        w++;
                else if ((*p & 0xc0) != 0x80)
                        w += 2;
        }
        return w;
}

typedef struct Out {
        char *buf;
        size_t len, size;
        bool oom;
        unsigned rows_used, cols;
} Out;

static void out_put(Out *o, const char *s, size_t n) {
        if (o->oom)
                return;
        if (o->len + n + 1 > o->size) {
                size_t size = (o->len + n + 1) * 2;
                char *b = realloc(o->buf, size);
                if (!b) {
                        o->oom = true;
                        return;
                }
                o->buf = b;
                o->size = size;
        }
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        o->buf[o->len] = 0;
}

static void out_str(Out *o, const char *s) {
        out_put(o, s, strlen(s));
}

/* A new line at the bottom, single-width and empty; then the line's parts, plain text counted for its rows. */
static void out_line(Out *o, const char *sgr, const char *const *parts, size_t n) {
        size_t w = 0;

        out_str(o, "\r\n\x1b#5\x1b[2K");
        if (sgr)
                out_str(o, sgr);
        for (size_t i = 0; i < n; i++) {
                out_str(o, parts[i]);
                w += text_width(parts[i]);
        }
        if (sgr)
                out_str(o, "\x1b[0m");
        o->rows_used += w == 0 ? 1 : (unsigned) ((w + o->cols - 1) / o->cols);
}

static int render(const TermPrompt *p, char approve_key, bool offer, unsigned cols, Out *o) {
        char keyname[2] = { approve_key, 0 }, label[32], fixed[TERM_PROMPT_KEYS_MAX * 40] = "";
        size_t f = 0;

        *o = (Out) { .cols = cols };
        out_str(o, term_prompt_reset);
        out_line(o, "\x1b[1m", (const char *[]) { "[lazaret] ", p->title }, 2);
        for (size_t i = 0; i < p->n_fields; i++) {
                if (i == p->subject)
                        continue;
                snprintf(label, sizeof(label), "  %-10s ", p->fields[i].label);
                out_line(o, NULL, (const char *[]) { label, p->fields[i].value }, 2);
        }
        snprintf(label, sizeof(label), "  %-10s ", p->fields[p->subject].label);
        if (offer)
                out_line(o, NULL,
                         (const char *[]) { label, p->fields[p->subject].value, "   <- press ", keyname, " to ",
                                            p->approve_label },
                         6);
        else {
                out_line(o, NULL, (const char *[]) { label, p->fields[p->subject].value }, 2);
                out_line(o, NULL, (const char *[]) { p->too_long }, 1);
        }
        for (size_t i = 0; i < p->n_keys; i++)
                f += (size_t) snprintf(fixed + f, sizeof(fixed) - f, "%s[%c] %s", i > 0 ? "  " : "", p->keys[i].key,
                                       p->keys[i].label);
        out_line(o, NULL,
                 (const char *[]) { offer ? "The key that approves is on the line above.  " : "", fixed, ": " }, 3);
        if (o->oom) {
                free(o->buf);
                return -ENOMEM;
        }
        return 0;
}

int term_prompt_render(const TermPrompt *p, char approve_key, unsigned rows, unsigned cols, char **ret_text,
                       bool *ret_offered) {
        Out o;
        int r;

        if (!p || !p->title || p->n_fields == 0 || p->n_fields > TERM_PROMPT_FIELDS_MAX || p->subject >= p->n_fields ||
            p->n_keys > TERM_PROMPT_KEYS_MAX || !p->approve_label || !p->too_long)
                return -EINVAL;
        for (size_t i = 0; i < p->n_keys; i++)
                if (p->keys[i].key == approve_key)
                        return -EINVAL;
        if (rows == 0 || cols == 0) {
                rows = 24;
                cols = 80;
        }
        r = render(p, approve_key, true, cols, &o);
        if (r < 0)
                return r;
        if (o.rows_used <= rows) {
                *ret_text = o.buf;
                *ret_offered = true;
                return 0;
        }
        free(o.buf);
        r = render(p, approve_key, false, cols, &o);
        if (r < 0)
                return r;
        *ret_text = o.buf;
        *ret_offered = false;
        return 0;
}

char term_prompt_pick_key(const char *taken) {
        char pool[27];
        size_t n = 0;
        unsigned v = 0;

        for (char c = 'a'; c <= 'z'; c++)
                if (!taken || !strchr(taken, c))
                        pool[n++] = c;
        if (n == 0)
                return 0;
        /* getrandom() of four bytes does not fail once the pool is up; a constant is no secret, but still no fixed 'a'. */
        if (getrandom(&v, sizeof(v), 0) != (ssize_t) sizeof(v))
                v = 7;
        return pool[v % n];
}

/* ------------------------------------------------------------------ input */

static int feed_one(TermInput *t, unsigned char c);

enum {
        IN_TEXT,
        IN_ESC,         /* after ESC */
        IN_ESC_INTER,   /* ESC and intermediates, up to a final byte */
        IN_CSI,
        IN_SS,          /* SS2/SS3: one more character */
        IN_STRING,      /* OSC, DCS, APC, PM, SOS: up to BEL or ST */
        IN_STRING_ESC,
        IN_SKIP,        /* characters of a mouse or highlight report */
};

#define CSI_LEN_MAX 64

static void to_csi(TermInput *t) {
        t->state = IN_CSI;
        t->csi_len = 0;
        t->csi_plain = true;
        memset(t->csi, 0, sizeof(t->csi));
}

/* A C1 control (8-bit introducer): the same as its ESC form. */
static void c1(TermInput *t, unsigned char c) {
        switch (c) {
        case 0x9b:
                to_csi(t);
                break;
        case 0x90: case 0x98: case 0x9d: case 0x9e: case 0x9f:
                t->state = IN_STRING;
                break;
        case 0x8e: case 0x8f:
                t->state = IN_SS;
                break;
        default:
                t->state = IN_TEXT;     /* ST and the rest: nothing follows */
                break;
        }
}

/* One character of a report being skipped: a UTF-8 sequence counts once (mode 1005). */
static void skip_one(TermInput *t, unsigned char c) {
        if (t->utf8_left > 0) {
                if ((c & 0xc0) == 0x80) {
                        if (--t->utf8_left == 0 && --t->skip == 0)
                                t->state = IN_TEXT;
                        return;
                }
                /* What looked like a UTF-8 lead was a character of its own (X10 past column 95). */
                t->utf8_left = 0;
                if (--t->skip == 0) {
                        /* This byte is past the report: read as text, but dropped, with the rest of its character. */
                        t->state = IN_TEXT;
                        if (feed_one(t, c) >= 0 && t->utf8_left > 0)
                                t->utf8_drop = true;
                        return;
                }
        }
        if (c >= 0xc2 && c <= 0xf4) {
                t->utf8_left = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
                return;
        }
        if (--t->skip == 0)
                t->state = IN_TEXT;
}

int feed_one(TermInput *t, unsigned char c) {
        switch (t->state) {
        case IN_SKIP:
                skip_one(t, c);
                return -1;
        case IN_ESC:
                if (c == '[')
                        to_csi(t);
                else if (strchr("]P_^X", c) && c)
                        t->state = IN_STRING;
                else if (c == 'N' || c == 'O')
                        t->state = IN_SS;
                else if (c >= 0x20 && c <= 0x2f)
                        t->state = IN_ESC_INTER;
                else if (c != 0x1b)
                        t->state = IN_TEXT;     /* ESC and one character: an Alt-key, dropped whole */
                return -1;
        case IN_ESC_INTER:
                if (c == 0x1b)
                        t->state = IN_ESC;
                else if (c < 0x20 || c > 0x2f)
                        t->state = IN_TEXT;
                return -1;
        case IN_SS:
                t->state = IN_TEXT;
                return -1;
        case IN_CSI:
                if (c >= 0x40 && c <= 0x7e) {
                        t->state = IN_TEXT;
                        if (c == '~' && strcmp(t->csi, "200") == 0)
                                t->paste = true;
                        else if (c == '~' && strcmp(t->csi, "201") == 0)
                                t->paste = false;
                        if (t->csi_plain && (c == 'M' || c == 't' || c == 'T')) {
                                /* X10/1005 mouse (CSI M Cb Cx Cy), highlight tracking (CSI t x y, CSI T and six). */
                                t->state = IN_SKIP;
                                t->skip = c == 'M' ? 3 : c == 't' ? 2 : 6;
                                t->utf8_left = 0;
                        }
                } else if (c >= 0x20 && c <= 0x3f) {
                        t->csi_plain = false;
                        if (t->csi_len < sizeof(t->csi) - 1)
                                t->csi[t->csi_len] = (char) c;
                        if (++t->csi_len > CSI_LEN_MAX)
                                t->state = IN_TEXT;
                } else if (c == 0x1b)
                        t->state = IN_ESC;
                else if (c == 0x18 || c == 0x1a || c >= 0x80)
                        t->state = IN_TEXT;
                /* other C0 controls inside a sequence: dropped */
                return -1;
        case IN_STRING:
                if (c == 0x1b)
                        t->state = IN_STRING_ESC;
                else if (c == 0x07 || c == 0x9c || (c < 0x20 && c != 0x1b))
                        t->state = IN_TEXT;     /* BEL or ST ends it; another control (Enter, ^C) abandons it */
                return -1;
        case IN_STRING_ESC:
                t->state = c == '\\' ? IN_TEXT : IN_STRING;
                if (c == 0x1b)
                        t->state = IN_STRING_ESC;
                return -1;
        default:
                break;
        }

        /* Text; in a paste, parsed the same way but not typing. */
        if (c == 0x1b) {
                t->utf8_left = 0;
                t->state = IN_ESC;
                return -1;
        }
        if (c < 0x80) {
                t->utf8_left = 0;
                t->utf8_drop = false;
                return c;
        }
        if ((c & 0xc0) == 0x80) {
                if (t->utf8_left > 0) {
                        t->utf8_left--;
                        return t->utf8_drop ? -1 : c;
                }
                if (c <= 0x9f)
                        c1(t, c);
                return -1;      /* a C1 control, or a continuation byte with no character */
        }
        t->utf8_drop = false;
        if (c >= 0xc2 && c <= 0xf4) {
                t->utf8_left = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
                return c;
        }
        t->utf8_left = 0;
        return -1;              /* 0xc0, 0xc1, 0xf5..0xff: never in UTF-8 */
}

int term_input_feed(TermInput *t, unsigned char c) {
        int k = feed_one(t, c);

        return t->paste ? -1 : k;
}
