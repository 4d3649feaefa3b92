/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The approval prompt on a developer's terminal (spec section 5.6, "The
 * prompt"): one part for every question Lazaret asks there (a host command
 * today). A prompt is a title, fields (a label and a value already escaped
 * for display), and the keys it offers. The approve key is drawn at random
 * for each drawing and printed on the line of the field the prompt is
 * about, so that a key typed before the prompt appeared, a mouse click, or
 * a copy of an older prompt the sandbox printed cannot approve.
 *
 * Pure code: no fd, no clock; the session (src/coordinator/session.c) owns
 * the terminal and the timing.
 */

/* Input is ignored until the prompt has been written whole and then no
 * byte has come for this long (a typist's key that was meant for the
 * sandbox, a late reply to a terminal query). */
#define TERM_PROMPT_QUIET_USEC (400ULL * 1000)

/* Every state a terminal keeps between writes that decides where text goes
 * or whether it can be seen, and every input mode that makes it send bytes
 * the human did not type as keys, set to a known value (spec 5.6 lists
 * each sequence and why). */
extern const char term_prompt_reset[];

typedef struct TermPromptField {
        const char *label;      /* ASCII, ours */
        const char *value;      /* escaped for display (esc_string_to_display() and friends) */
} TermPromptField;

typedef struct TermPromptKey {
        char key;               /* a fixed key: lowercase ASCII */
        const char *label;      /* "deny", "edit", ... */
} TermPromptKey;

#define TERM_PROMPT_FIELDS_MAX 16
#define TERM_PROMPT_KEYS_MAX 8

typedef struct TermPrompt {
        const char *title;
        TermPromptField fields[TERM_PROMPT_FIELDS_MAX];
        size_t n_fields;
        size_t subject;         /* the field whose line carries the approve key (the last line drawn) */
        const char *approve_label;      /* "run it" */
        TermPromptKey keys[TERM_PROMPT_KEYS_MAX];
        size_t n_keys;
        const char *too_long;   /* said instead of the approve key when the prompt does not fit the window */
} TermPrompt;

/*
 * The whole drawing: the reset, then the prompt's lines scrolled in at the
 * bottom of the screen, each erased first. approve_key is the key drawn for
 * approval, never one of the fixed keys; ret_offered is false (and no
 * approve key is printed) when the prompt needs more rows than the window
 * has (rows, cols of the client's terminal; 0 for unknown, taken as 24x80):
 * a command that cannot be seen whole is decided elsewhere
 * (lazaretctl escalations).
 */
int term_prompt_render(const TermPrompt *p, char approve_key, unsigned rows, unsigned cols, char **ret_text,
                       bool *ret_offered);

/* A random lowercase letter, none of those in taken, from the kernel's random source. */
char term_prompt_pick_key(const char *taken);

/*
 * The human's side: bytes the client's terminal sends. Keys reach the
 * prompt; everything else is parsed and dropped whole: 7-bit and 8-bit
 * (C1) control sequences (CSI, SS2, SS3, OSC, DCS, APC, PM, SOS strings up
 * to BEL or ST), legacy X10 and UTF-8 mouse reports (CSI M and three
 * characters), highlight tracking reports (CSI t, CSI T), ESC with one
 * character (Alt-key), and the text of a bracketed paste (CSI 200 ~ to
 * CSI 201 ~), which was pasted, not typed as a decision. UTF-8 text reaches the prompt whole, so that a C1
 * byte inside a character is not taken for a control.
 */
typedef struct TermInput {
        uint8_t state;
        uint8_t skip;           /* characters a mouse report still has */
        uint8_t utf8_left;      /* continuation bytes still expected */
        bool utf8_drop;         /* ... of a character whose first byte was dropped */
        uint8_t csi_len;        /* bytes between the introducer and the final byte */
        bool csi_plain;         /* nothing but the final byte so far */
        char csi[8];            /* its first parameter bytes */
        bool paste;             /* inside a bracketed paste: text is not typing */
} TermInput;

/* Returns the byte when it is typed text (or part of a UTF-8 character), -1 when it is dropped. */
int term_input_feed(TermInput *t, unsigned char c);
