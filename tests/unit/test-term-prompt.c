/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The approval prompt's terminal side (term-prompt.c): what the human's
 * terminal sends is parsed so that no report, reply or paste is taken for a
 * key; the prompt is drawn whole from a state Lazaret chose, checked on
 * libvterm's emulation of a terminal the sandbox left in a hostile state,
 * for the parts tmux does not emulate (left/right margins, the kitty
 * keyboard protocol, DEC line attributes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <vterm.h>

#include "term-prompt.h"

/* The keys that reach the prompt when the terminal sends bytes. */
static char *keys_of(const char *bytes, size_t n) {
        TermInput t = {};
        char *out = calloc(n + 1, 1);
        size_t o = 0;

        cr_assert_not_null(out);
        for (size_t i = 0; i < n; i++) {
                int c = term_input_feed(&t, (unsigned char) bytes[i]);
                if (c >= 0)
                        out[o++] = (char) c;
        }
        return out;
}

#define assert_keys(bytes, want)                                                            \
        do {                                                                                \
                char *_k = keys_of(bytes, sizeof(bytes) - 1);                               \
                cr_assert_str_eq(_k, want, "keys of %s", #bytes);                            \
                free(_k);                                                                   \
        } while (0)

Test(term_input, plain_keys) {
        assert_keys("d", "d");
        assert_keys("ab\r\x7f", "ab\r\x7f");
}

Test(term_input, replies_and_function_keys) {
        assert_keys("\x1b[?1;2c" "d", "d");                     /* DA reply */
        assert_keys("\x1b]11;rgb:a/a/a\x07" "d", "d");          /* OSC reply, BEL */
        assert_keys("\x1b]l" "aaa" "\x1b\\" "d", "d");          /* title report with ST */
        assert_keys("\x1bP1$r0m\x1b\\" "d", "d");               /* DECRQSS reply */
        assert_keys("\x1bOP" "d", "d");                         /* F1 (SS3) */
        assert_keys("\x1b" "a" "d", "d");                       /* Alt-a */
        assert_keys("\x1b(0" "d", "d");                         /* ESC with an intermediate */
}

Test(term_input, mouse_reports) {
        /* X10: a click in column 65 ('a' = 32 + 65) of row 1. */
        assert_keys("\x1b[M a!" "d", "d");
        /* X10 in a far column: bytes past 0x7f. */
        assert_keys("\x1b[M \xe1!" "d", "d");
        /* mode 1005: the column as a UTF-8 character. */
        assert_keys("\x1b[M \xc3\xa1!" "d", "d");
        /* SGR (1006) and urxvt (1015). */
        assert_keys("\x1b[<0;65;3M\x1b[<0;65;3m" "d", "d");
        assert_keys("\x1b[32;97;3M" "d", "d");
        /* highlight tracking. */
        assert_keys("\x1b[ta!" "d", "d");
        assert_keys("\x1b[Tabcdef" "d", "d");
}

Test(term_input, eight_bit_controls) {
        /* After S8C1T a terminal replies with C1 introducers. */
        assert_keys("\x9b?1;2c" "d", "d");
        assert_keys("\x9b" "M a!" "d", "d");
        assert_keys("\x9d" "11;rgb:a/a/a\x9c" "d", "d");
        assert_keys("\x90" "1$r0m\x9c" "d", "d");
        assert_keys("\x8f" "P" "d", "d");
        /* The same bytes inside UTF-8 characters are text: U+011B is c4 9b. */
        assert_keys("\xc4\x9b", "\xc4\x9b");
        assert_keys("\xe2\x80\x9d", "\xe2\x80\x9d");
        /* A continuation byte with no character: dropped. */
        assert_keys("\xa1" "d", "d");
}

Test(term_input, paste_is_not_typing) {
        assert_keys("\x1b[200~" "rm -rf a" "\x1b[201~" "d", "d");
        assert_keys("\x9b" "200~" "a" "\x9b" "201~" "d", "d");
}

Test(term_input, abandoned_sequences) {
        /* A string that never ends is abandoned at Enter or ^C, as no reply contains them. */
        assert_keys("\x1b]abc\r" "d", "d");
        /* CAN ends a control sequence. */
        assert_keys("\x1b[12\x18" "d", "d");
}

/* ------------------------------------------------------------ rendering */

static const TermPrompt sample = {
        .title = "The sandbox asks to run a command on the host",
        .fields = {
                { "Profile:", "test" },
                { "Why:", "'needs the host'" },
                { "Command:", "/usr/bin/touch /home/u/PWNED" },
        },
        .n_fields = 3,
        .subject = 2,
        .approve_label = "run it",
        .keys = { { 'd', "deny" }, { 'e', "edit" }, { 'q', "abort the session" } },
        .n_keys = 3,
        .too_long = "The command does not fit this window.",
};

Test(term_prompt, key_on_the_command_line) {
        char *text = NULL;
        bool offered = false;

        cr_assert_eq(term_prompt_render(&sample, 'k', 30, 120, &text, &offered), 0);
        cr_assert(offered);
        cr_assert_not_null(strstr(text, "Command:   /usr/bin/touch /home/u/PWNED   <- press k to run it"));
        cr_assert_eq(strncmp(text, term_prompt_reset, strlen(term_prompt_reset)), 0);
        free(text);
        /* The approve key is never a fixed key. */
        cr_assert_eq(term_prompt_render(&sample, 'd', 30, 120, &text, &offered), -EINVAL);
}

Test(term_prompt, too_long_is_not_offered) {
        TermPrompt p = sample;
        char *cmd = malloc(5001), *text = NULL;
        bool offered = true;

        memset(cmd, 'x', 5000);
        cmd[5000] = 0;
        p.fields[2].value = cmd;
        cr_assert_eq(term_prompt_render(&p, 'k', 30, 120, &text, &offered), 0);
        cr_assert_not(offered);
        cr_assert_null(strstr(text, "press k"));
        cr_assert_not_null(strstr(text, "does not fit"));
        free(text);
        /* The same fits a larger window. */
        cr_assert_eq(term_prompt_render(&p, 'k', 100, 200, &text, &offered), 0);
        cr_assert(offered);
        free(text);
        free(cmd);
}

Test(term_prompt, pick_key) {
        bool seen[26] = {};
        unsigned distinct = 0;

        for (int i = 0; i < 2000; i++) {
                char k = term_prompt_pick_key("deqr");
                cr_assert(k >= 'a' && k <= 'z');
                cr_assert(!strchr("deqr", k), "picked a fixed key %c", k);
                if (!seen[k - 'a'])
                        distinct++;
                seen[k - 'a'] = true;
        }
        cr_assert_geq(distinct, 15, "only %u distinct keys in 2000 draws", distinct);
        cr_assert_eq(term_prompt_pick_key("abcdefghijklmnopqrstuvwxyz"), 0);
}

/* ------------------------------------------------ libvterm: the drawing */

#define ROWS 30
#define COLS 120

static void row_text(VTermScreen *s, int row, char *buf, size_t n) {
        VTermRect rect = { .start_row = row, .end_row = row + 1, .start_col = 0, .end_col = COLS };
        size_t k = vterm_screen_get_text(s, buf, n - 1, rect);

        buf[k] = 0;
        while (k > 0 && buf[k - 1] == ' ')
                buf[--k] = 0;
}

/* The sandbox's parting shots, each hiding or moving text a different way. */
static const char hostile[] =
        "\x1b[1;1H  Command:   /usr/bin/ls -la\r\n"
        "\x1b[?69h\x1b[40;60s"          /* left/right margins (DECSLRM) */
        "\x1b[8;9r"                     /* a two-row scroll region */
        "\x1b[?6h"                      /* origin mode */
        "\x1b[4h"                       /* insert mode */
        "\x1b(0\x0e\x1b)0"              /* DEC line drawing in G0 and G1, G1 shifted in */
        "\x1b[7m\x1b[?5h"               /* reverse video, and the whole screen reversed */
        "\x1b#6"                        /* a double-width line */
        "\x1b[5;5H"
        "\x1b]0;half an OSC";           /* a string left open */

Test(term_prompt, drawn_whole_on_a_hostile_terminal) {
        VTerm *vt = vterm_new(ROWS, COLS);
        VTermScreen *screen;
        VTermState *state;
        VTermPos cursor;
        char *text = NULL, line[4 * COLS + 1];
        bool offered;

        cr_assert_not_null(vt);
        vterm_set_utf8(vt, 1);
        screen = vterm_obtain_screen(vt);
        state = vterm_obtain_state(vt);
        vterm_screen_reset(screen, 1);
        vterm_input_write(vt, hostile, sizeof(hostile) - 1);

        cr_assert_eq(term_prompt_render(&sample, 'k', ROWS, COLS, &text, &offered), 0);
        cr_assert(offered);
        vterm_input_write(vt, text, strlen(text));
        free(text);

        /* The prompt's lines are the screen's last rows, whole, from column 0, in ASCII. */
        const char *want[] = {
                "[lazaret] The sandbox asks to run a command on the host",
                "  Profile:   test",
                "  Why:       'needs the host'",
                "  Command:   /usr/bin/touch /home/u/PWNED   <- press k to run it",
                "The key that approves is on the line above.  [d] deny  [e] edit  [q] abort the session:",
        };
        for (int i = 0; i < 5; i++) {
                row_text(screen, ROWS - 5 + i, line, sizeof(line));
                cr_assert_str_eq(line, want[i], "row %d", ROWS - 5 + i);
        }
        /* The cursor waits at the end of the last row. */
        vterm_state_get_cursorpos(state, &cursor);
        cr_assert_eq(cursor.row, ROWS - 1);
        /* The command's cells: single width, not reversed, default colours. */
        for (int col = 0; col < 60; col++) {
                VTermScreenCell cell;
                cr_assert(vterm_screen_get_cell(screen, (VTermPos) { .row = ROWS - 2, .col = col }, &cell));
                cr_assert_eq(cell.attrs.reverse, 0, "column %d reversed", col);
                cr_assert_eq(cell.attrs.dwl, 0, "column %d double width", col);
                cr_assert_eq(cell.width, 1);
                cr_assert(VTERM_COLOR_IS_DEFAULT_FG(&cell.fg) && VTERM_COLOR_IS_DEFAULT_BG(&cell.bg), "column %d coloured", col);
        }
        vterm_free(vt);
}

/* What libvterm parses of the reset: the control sequences it is made of, checked one by one. */
typedef struct Seen {
        bool kitty_pop, kitty_zero, other_keys, lrmm_off, stbm, mouse_off, paste_off, focus_off;
} Seen;

static bool leader_is(const char *leader, const char *want) {
        return leader && strcmp(leader, want) == 0;
}

static int on_csi(const char *leader, const long args[], int argc, const char *intermed, char command, void *user) {
        Seen *s = user;
        long a0 = argc > 0 ? CSI_ARG(args[0]) : -1;

        if (leader_is(leader, "<") && command == 'u' && a0 == 99)
                s->kitty_pop = true;
        if (leader_is(leader, "=") && command == 'u' && a0 == 0)
                s->kitty_zero = true;
        if (leader_is(leader, ">") && command == 'm' && a0 == 4)
                s->other_keys = true;
        if (leader_is(leader, "?") && command == 'l') {
                if (a0 == 69)
                        s->lrmm_off = true;
                if (a0 == 1003)
                        s->mouse_off = true;
                if (a0 == 2004)
                        s->paste_off = true;
                if (a0 == 1004)
                        s->focus_off = true;
        }
        if (!leader && command == 'r' && argc <= 1 && CSI_ARG_IS_MISSING(args[0]))
                s->stbm = true;
        return 1;
}

Test(term_prompt, reset_parses_as_meant) {
        VTerm *vt = vterm_new(ROWS, COLS);
        VTermParserCallbacks cb = { .csi = on_csi };
        Seen seen = {};

        vterm_set_utf8(vt, 1);
        vterm_parser_set_callbacks(vt, &cb, &seen);
        vterm_input_write(vt, term_prompt_reset, strlen(term_prompt_reset));
        cr_assert(seen.kitty_pop && seen.kitty_zero, "the kitty keyboard protocol is not reset");
        cr_assert(seen.other_keys, "modifyOtherKeys is not reset");
        cr_assert(seen.lrmm_off, "left/right margin mode is not turned off");
        cr_assert(seen.stbm, "the scrolling region is not reset");
        cr_assert(seen.mouse_off && seen.focus_off && seen.paste_off, "mouse, focus or paste reports stay on");
        vterm_free(vt);
}
