/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gitignore(5) rules. A pattern is compiled once into segments (the parts
 * between its slashes); a segment is either "**" (any number of path
 * components) or a glob of tokens that match within one component. Since
 * nothing but a literal '/' and "**" can match a '/', matching a pattern is
 * matching segments against components, and each level uses the
 * single-backtrack wildcard algorithm: no recursion, at most
 * O(pattern x path) comparisons.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fs-util.h"
#include "git-ignore.h"
#include "macro.h"
#include "path-util.h"
#include "util.h"

typedef enum TokenType {
        TOKEN_LITERAL,
        TOKEN_ANY,      /* ? */
        TOKEN_CLASS,    /* [...] */
        TOKEN_STAR,     /* * (within a component) */
} TokenType;

typedef struct Token {
        uint8_t type;
        uint8_t c;              /* TOKEN_LITERAL */
        uint16_t class_index;   /* TOKEN_CLASS */
} Token;

typedef enum SegmentType {
        SEGMENT_GLOB,           /* tokens[first..first+n) against one component */
        SEGMENT_ANY_COMPONENTS, /* "**": zero or more components */
        SEGMENT_ONE_COMPONENT,  /* any one component (a trailing "**" needs one) */
} SegmentType;

typedef struct Segment {
        uint8_t type;
        uint32_t first, n;
} Segment;

/* A class as the set of bytes it accepts (negation and the '/' rule applied). */
typedef struct Class {
        uint8_t bits[32];
} Class;

enum {
        PATTERN_NEGATIVE = 1 << 0,
        PATTERN_MUST_BE_DIR = 1 << 1,
        PATTERN_BASENAME = 1 << 2,     /* no slash: matches the last component at any depth */
        PATTERN_NEVER = 1 << 3,        /* cannot match anything (as in git) */
};

typedef struct Pattern {
        unsigned flags;
        unsigned line;
        char *text;             /* the trimmed line, for IgnoreMatch */
        /*
         * git matches an anchored pattern's literal head (the bytes before
         * its first "*?[\\") separately and hands only the rest to its glob
         * matcher, where a "**" right at the start is a "**" of its own even
         * when the head does not end in '/' ("a/b**" + "/c"). Such a pattern
         * keeps that head here and compiles the rest; head_len is 0 otherwise.
         */
        size_t head_len;
        Token *tokens;
        Segment *segments;
        Class *classes;
        uint32_t n_segments;
} Pattern;

struct IgnoreList {
        char *base;
        size_t base_len;
        size_t base_depth;      /* components of base */
        char *source;
        Pattern *patterns;
        size_t n_patterns;
};

/* ------------------------------------------------------------ compiling */

static bool class_has(const Class *c, uint8_t b) {
        return c->bits[b >> 3] & (1U << (b & 7));
}

static void class_add(Class *c, uint8_t b) {
        c->bits[b >> 3] |= (uint8_t) (1U << (b & 7));
}

static const char *const posix_classes[] = {
        "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper", "xdigit",
};

static int posix_class_index(const char *name, size_t n) {
        for (size_t i = 0; i < ELEMENTSOF(posix_classes); i++)
                if (strlen(posix_classes[i]) == n && memcmp(posix_classes[i], name, n) == 0)
                        return (int) i;
        return -1;
}

/* git's classes: ASCII only, whatever the locale; its "space" is " \t\n\r". */
static bool posix_class_member(int index, int b) {
        bool lower = b >= 'a' && b <= 'z', upper = b >= 'A' && b <= 'Z', digit = b >= '0' && b <= '9';
        bool alpha = lower || upper, graph = b > 0x20 && b < 0x7f;

        switch (index) {
        case 0: return alpha || digit;
        case 1: return alpha;
        case 2: return b == ' ' || b == '\t';
        case 3: return b < 0x20 || b == 0x7f;
        case 4: return digit;
        case 5: return graph;
        case 6: return lower;
        case 7: return graph || b == ' ';
        case 8: return graph && !alpha && !digit;
        case 9: return b == ' ' || b == '\t' || b == '\n' || b == '\r';
        case 10: return upper;
        default: return digit || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
        }
}

/*
 * Parses the class that starts at p[*i] == '['. Returns false when the
 * pattern can match nothing (unterminated class, unknown class name); git
 * gives up on the whole pattern there. On success *i is past the ']'.
 */
static bool parse_class(const char *p, size_t len, size_t *i, Class *ret) {
        Class c = {};
        size_t k = *i + 1;
        bool negated = false;
        int prev = -1;  /* the previous single byte, which may start a range */

        if (k < len && (p[k] == '!' || p[k] == '^')) {
                negated = true;
                k++;
        }
        for (bool first = true;; first = false) {
                uint8_t ch;

                if (k >= len)
                        return false;
                ch = (uint8_t) p[k];
                if (ch == ']' && !first)
                        break;
                if (ch == '\\') {
                        if (++k >= len)
                                return false;
                        ch = (uint8_t) p[k];
                        class_add(&c, ch);
                        prev = ch;
                        k++;
                } else if (ch == '-' && prev >= 0 && k + 1 < len && p[k + 1] != ']') {
                        uint8_t hi;

                        k++;
                        if (p[k] == '\\' && ++k >= len)
                                return false;
                        hi = (uint8_t) p[k];
                        for (int b = prev; b <= hi; b++)
                                class_add(&c, (uint8_t) b);
                        prev = -1;
                        k++;
                } else if (ch == '[' && k + 1 < len && p[k + 1] == ':') {
                        size_t s = k + 2, e = s;
                        int index;

                        while (e < len && p[e] != ']')
                                e++;
                        if (e >= len)
                                return false;
                        if (e - s < 1 || p[e - 1] != ':') {
                                /* No ":]": the '[' is an ordinary member. */
                                class_add(&c, '[');
                                prev = '[';
                                k++;
                                continue;
                        }
                        index = posix_class_index(p + s, e - 1 - s);
                        if (index < 0)
                                return false;
                        for (int b = 0; b < 256; b++)
                                if (posix_class_member(index, b))
                                        class_add(&c, (uint8_t) b);
                        prev = -1;
                        k = e + 1;
                } else {
                        class_add(&c, ch);
                        prev = ch;
                        k++;
                }
        }
        if (negated)
                for (size_t b = 0; b < sizeof(c.bits); b++)
                        c.bits[b] = (uint8_t) ~c.bits[b];
        c.bits['/' >> 3] &= (uint8_t) ~(1U << ('/' & 7));
        *ret = c;
        *i = k + 1;
        return true;
}

static bool is_glob_special(char c) {
        return c == '*' || c == '?' || c == '[' || c == '\\';
}

/*
 * Compiles p[0..len) into pat's tokens and segments. in_path: the pattern
 * matches whole relative paths (it had a slash), so "**" may span
 * components; otherwise every star stays within the one component.
 */
static int compile(Pattern *pat, const char *p, size_t len, bool in_path) {
        size_t n_classes = 0, i = 0;
        bool segment_open = false;

        /* Upper bounds: a token per byte, a segment per byte plus one, a class per '['. */
        for (size_t k = 0; k < len; k++)
                n_classes += p[k] == '[';
        pat->tokens = calloc(len + 1, sizeof(Token));
        pat->segments = calloc(2 * len + 2, sizeof(Segment));
        pat->classes = calloc(n_classes + 1, sizeof(Class));
        if (!pat->tokens || !pat->segments || !pat->classes)
                return -ENOMEM;

        uint32_t n_tokens = 0, n_segments = 0;
        n_classes = 0;

#define OPEN_SEGMENT()                                                                          \
        do {                                                                                    \
                if (!segment_open) {                                                            \
                        pat->segments[n_segments++] = (Segment) { SEGMENT_GLOB, n_tokens, 0 };  \
                        segment_open = true;                                                    \
                }                                                                               \
        } while (0)
#define ADD_TOKEN(...)                                                                          \
        do {                                                                                    \
                OPEN_SEGMENT();                                                                 \
                pat->tokens[n_tokens++] = (Token) { __VA_ARGS__ };                              \
                pat->segments[n_segments - 1].n++;                                              \
        } while (0)

        while (i < len) {
                char c = p[i];

                if (c == '/' || (c == '\\' && i + 1 < len && p[i + 1] == '/')) {
                        /* A separator; two in a row leave an empty glob (matches nothing real). */
                        OPEN_SEGMENT();
                        segment_open = false;
                        i += c == '/' ? 1 : 2;
                        if (i == len)
                                OPEN_SEGMENT();
                        continue;
                }
                if (c == '\\') {
                        if (i + 1 >= len) {
                                pat->flags |= PATTERN_NEVER;
                                return 0;
                        }
                        ADD_TOKEN(TOKEN_LITERAL, (uint8_t) p[i + 1], 0);
                        i += 2;
                        continue;
                }
                if (c == '?') {
                        ADD_TOKEN(TOKEN_ANY, 0, 0);
                        i++;
                        continue;
                }
                if (c == '[') {
                        if (!parse_class(p, len, &i, &pat->classes[n_classes])) {
                                pat->flags |= PATTERN_NEVER;
                                return 0;
                        }
                        ADD_TOKEN(TOKEN_CLASS, 0, (uint16_t) n_classes);
                        n_classes++;
                        continue;
                }
                if (c == '*') {
                        size_t run = 0;
                        while (i + run < len && p[i + run] == '*')
                                run++;
                        bool left = i == 0 || p[i - 1] == '/';
                        bool at_end = i + run == len;
                        bool slash = i + run < len && p[i + run] == '/';
                        bool quoted_slash = i + run + 1 < len && p[i + run] == '\\' && p[i + run + 1] == '/';
                        if (in_path && run >= 2 && left && (at_end || slash || quoted_slash)) {
                                /* "**" as a segment of its own. */
                                segment_open = false;
                                if (at_end || quoted_slash)
                                        /* At least one component: "a/" + "**" needs something
                                         * inside, and git does not let "**" + "\/" match nothing. */
                                        pat->segments[n_segments++] = (Segment) { SEGMENT_ONE_COMPONENT, 0, 0 };
                                pat->segments[n_segments++] = (Segment) { SEGMENT_ANY_COMPONENTS, 0, 0 };
                                i += run + (at_end ? 0 : slash ? 1 : 2);
                                if (!at_end && i == len)
                                        OPEN_SEGMENT(); /* "**" + "/" last: an empty component must follow */
                                continue;
                        }
                        ADD_TOKEN(TOKEN_STAR, 0, 0);
                        i += run;
                        continue;
                }
                ADD_TOKEN(TOKEN_LITERAL, (uint8_t) c, 0);
                i++;
        }
        if (n_segments == 0)
                OPEN_SEGMENT();
#undef ADD_TOKEN
#undef OPEN_SEGMENT
        pat->n_segments = n_segments;
        return 0;
}

/* git's trailing-space rule: spaces go unless a backslash quotes the first of them. */
static size_t trim_trailing_spaces(const char *s, size_t n) {
        size_t end = n, last_space = SIZE_MAX;

        for (size_t i = 0; i < n; i++) {
                if (s[i] == ' ') {
                        if (last_space == SIZE_MAX)
                                last_space = i;
                } else if (s[i] == '\\') {
                        if (++i >= n)
                                return n;
                        last_space = SIZE_MAX;
                } else
                        last_space = SIZE_MAX;
        }
        if (last_space != SIZE_MAX)
                end = last_space;
        return end;
}

static int pattern_init(Pattern *pat, const char *line, size_t n, unsigned lineno) {
        const char *p = line;
        size_t len = n;

        pat->line = lineno;
        pat->text = strndup(line, n);
        if (!pat->text)
                return -ENOMEM;
        if (len > 0 && p[0] == '!') {
                pat->flags |= PATTERN_NEGATIVE;
                p++;
                len--;
        }
        if (len > 0 && p[len - 1] == '/') {
                pat->flags |= PATTERN_MUST_BE_DIR;
                len--;
        }
        if (!memchr(p, '/', len)) {
                pat->flags |= PATTERN_BASENAME;
                return compile(pat, p, len, false);
        }
        if (p[0] == '/') {
                p++;
                len--;
        }
        /* The literal head git compares on its own (see Pattern.head_len). */
        size_t head = 0;
        while (head < len && !is_glob_special(p[head]))
                head++;
        if (head > 0 && head + 1 < len && p[head] == '*' && p[head + 1] == '*' && p[head - 1] != '/')
                pat->head_len = head;
        return compile(pat, p + pat->head_len, len - pat->head_len, true);
}

static void pattern_done(Pattern *pat) {
        free(pat->text);
        free(pat->tokens);
        free(pat->segments);
        free(pat->classes);
}

/* The head bytes of pat, as they stand in its text. */
static const char *pattern_head(const Pattern *pat) {
        const char *p = pat->text;
        if (pat->flags & PATTERN_NEGATIVE)
                p++;
        if (*p == '/')
                p++;
        return p;
}

IgnoreList *ignore_list_free(IgnoreList *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_patterns; i++)
                pattern_done(&l->patterns[i]);
        free(l->patterns);
        free(l->base);
        free(l->source);
        free(l);
        return NULL;
}

const char *ignore_list_base(const IgnoreList *l) {
        return l->base;
}

size_t ignore_list_size(const IgnoreList *l) {
        return l->n_patterns;
}

static bool relpath_valid(const char *p, size_t n, bool allow_empty) {
        if (n == 0)
                return allow_empty;
        return path_is_plain_relative(p, n) && !memchr(p, 0, n);
}

int ignore_list_parse(const char *text, size_t len, const char *base, const char *source, IgnoreList **ret,
                      char **ret_error) {
        _cleanup_ignore_list_ IgnoreList *l = NULL;
        size_t n_lines = 0, i = 0;
        unsigned lineno = 0;
        int r;

        if (!base || strlen(base) >= IGNORE_PATH_MAX || !relpath_valid(base, strlen(base), true))
                return errorf(ret_error, -EINVAL, "%s: not a directory of the work tree: '%s'",
                              source, base ? base : "(null)");
        if (len > IGNORE_FILE_MAX)
                return errorf(ret_error, -EFBIG, "%s: %zu bytes, more than the %u an ignore file may have",
                              source, len, IGNORE_FILE_MAX);
        for (size_t k = 0; k < len; k++)
                n_lines += text[k] == '\n';
        n_lines++;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->base = strdup(base);
        l->source = strdup(source ? source : "");
        if (!l->base || !l->source)
                return -ENOMEM;
        l->base_len = strlen(base);
        for (size_t k = 0; k < l->base_len; k++)
                l->base_depth += base[k] == '/';
        l->base_depth += l->base_len > 0;

        if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
                i = 3;
        while (i < len) {
                const char *line = text + i, *nl = memchr(line, '\n', len - i);
                size_t n = nl ? (size_t) (nl - line) : len - i;

                i += n + 1;
                lineno++;
                /* git skips empty lines and comments before it drops a '\r'. */
                if (n == 0 || line[0] == '#')
                        continue;
                if (line[n - 1] == '\r')
                        n--;
                /* git reads each line as a C string. */
                const char *nul = memchr(line, 0, n);
                if (nul)
                        n = (size_t) (nul - line);
                n = trim_trailing_spaces(line, n);
                if (n > IGNORE_PATTERN_MAX)
                        return errorf(ret_error, -E2BIG, "%s:%u: pattern of %zu bytes, more than the %u allowed",
                                      source, lineno, n, IGNORE_PATTERN_MAX);
                if (l->n_patterns >= IGNORE_PATTERNS_MAX)
                        return errorf(ret_error, -E2BIG, "%s: more than %u patterns", source,
                                      IGNORE_PATTERNS_MAX);
                if (!l->patterns) {
                        size_t cap = n_lines < IGNORE_PATTERNS_MAX ? n_lines : IGNORE_PATTERNS_MAX;
                        l->patterns = calloc(cap, sizeof(Pattern));
                        if (!l->patterns)
                                return -ENOMEM;
                }
                r = pattern_init(&l->patterns[l->n_patterns++], line, n, lineno);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int ignore_list_load_at(int dirfd, const char *name, const char *base, const char *source, IgnoreList **ret,
                        char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        struct stat st;
        size_t n;
        int r;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) {
                        *ret = NULL;
                        return 0;
                }
                return errorf(ret_error, -errno, "%s: cannot open: %s", source, strerror(errno));
        }
        if (fstat(fd, &st) < 0)
                return errorf(ret_error, -errno, "%s: cannot stat: %s", source, strerror(errno));
        if (!S_ISREG(st.st_mode)) {
                *ret = NULL;
                return 0;
        }
        r = read_full_fd(fd, IGNORE_FILE_MAX, &text, &n);
        if (r == -EFBIG)
                return errorf(ret_error, r, "%s: more than the %u bytes an ignore file may have", source,
                              IGNORE_FILE_MAX);
        if (r < 0)
                return errorf(ret_error, r, "%s: cannot read: %s", source, strerror(-r));
        return ignore_list_parse(text, n, base, source, ret, ret_error);
}

/* ------------------------------------------------------------- matching */

typedef struct Component {
        uint16_t start, len;
} Component;

/* A path cut into components; the components point into s. */
typedef struct PathView {
        const char *s;
        size_t len;
        const Component *c;
        size_t n;
} PathView;

static bool token_matches(const Pattern *pat, const Token *t, uint8_t b) {
        switch (t->type) {
        case TOKEN_LITERAL:
                return t->c == b;
        case TOKEN_ANY:
                return b != '/';
        case TOKEN_CLASS:
                return class_has(&pat->classes[t->class_index], b);
        default:
                return false;
        }
}

/* A glob against one component; '*' is the only token that spans bytes. */
static bool glob_matches(const Pattern *pat, const Segment *seg, const char *s, size_t n) {
        const Token *t = pat->tokens + seg->first;
        size_t ti = 0, si = 0, star_ti = SIZE_MAX, star_si = 0;

        while (si < n) {
                if (ti < seg->n && t[ti].type == TOKEN_STAR) {
                        star_ti = ti++;
                        star_si = si;
                        continue;
                }
                if (ti < seg->n && token_matches(pat, &t[ti], (uint8_t) s[si])) {
                        ti++;
                        si++;
                        continue;
                }
                if (star_ti == SIZE_MAX)
                        return false;
                ti = star_ti + 1;
                si = ++star_si;
        }
        while (ti < seg->n && t[ti].type == TOKEN_STAR)
                ti++;
        return ti == seg->n;
}

static bool segment_matches(const Pattern *pat, const Segment *seg, const char *s, size_t n) {
        if (seg->type == SEGMENT_ONE_COMPONENT)
                return true;
        return glob_matches(pat, seg, s, n);
}

/* Segments against components c[0..n) of s; "**" is the only segment that spans components. */
static bool segments_match(const Pattern *pat, const char *s, const Component *c, size_t n) {
        const Segment *g = pat->segments;
        size_t gi = 0, ci = 0, star_gi = SIZE_MAX, star_ci = 0;

        while (ci < n) {
                if (gi < pat->n_segments && g[gi].type == SEGMENT_ANY_COMPONENTS) {
                        star_gi = gi++;
                        star_ci = ci;
                        continue;
                }
                if (gi < pat->n_segments && segment_matches(pat, &g[gi], s + c[ci].start, c[ci].len)) {
                        gi++;
                        ci++;
                        continue;
                }
                if (star_gi == SIZE_MAX)
                        return false;
                gi = star_gi + 1;
                ci = ++star_ci;
        }
        while (gi < pat->n_segments && g[gi].type == SEGMENT_ANY_COMPONENTS)
                gi++;
        return gi == pat->n_segments;
}

static size_t split_components(const char *s, size_t len, Component *c) {
        size_t n = 0, i = 0;

        for (;;) {
                size_t e = i;
                while (e < len && s[e] != '/')
                        e++;
                c[n++] = (Component) { (uint16_t) i, (uint16_t) (e - i) };
                if (e >= len)
                        return n;
                i = e + 1;
        }
}

static bool pattern_matches(const IgnoreList *l, const Pattern *pat, const PathView *path, bool is_dir) {
        if (pat->flags & PATTERN_NEVER)
                return false;
        if ((pat->flags & PATTERN_MUST_BE_DIR) && !is_dir)
                return false;
        /* Only paths below the list's directory. */
        if (path->n <= l->base_depth)
                return false;
        if (l->base_len > 0 && (memcmp(path->s, l->base, l->base_len) != 0 || path->s[l->base_len] != '/'))
                return false;
        if (pat->flags & PATTERN_BASENAME) {
                const Component *last = &path->c[path->n - 1];
                return glob_matches(pat, &pat->segments[0], path->s + last->start, last->len);
        }
        if (pat->head_len == 0)
                return segments_match(pat, path->s, path->c + l->base_depth, path->n - l->base_depth);

        /* The literal head, then the rest from where it ends, even mid-component. */
        size_t name = l->base_len > 0 ? l->base_len + 1 : 0, rest;
        if (path->len - name < pat->head_len || memcmp(path->s + name, pattern_head(pat), pat->head_len) != 0)
                return false;
        rest = name + pat->head_len;
        Component c[IGNORE_PATH_MAX / 2 + 1];
        size_t n = split_components(path->s + rest, path->len - rest, c);
        return segments_match(pat, path->s + rest, c, n);
}

/* The list's verdict: its last matching line. */
static IgnoreVerdict list_match(const IgnoreList *l, const PathView *path, bool is_dir, IgnoreMatch *ret) {
        for (size_t i = l->n_patterns; i > 0; i--) {
                const Pattern *pat = &l->patterns[i - 1];
                if (!pattern_matches(l, pat, path, is_dir))
                        continue;
                if (ret)
                        *ret = (IgnoreMatch) { l, l->source, pat->line, pat->text };
                return pat->flags & PATTERN_NEGATIVE ? IGNORE_INCLUDED : IGNORE_EXCLUDED;
        }
        return IGNORE_NO_MATCH;
}

static IgnoreVerdict lists_match(const IgnoreList *const *lists, size_t n, const PathView *path, bool is_dir,
                                 IgnoreMatch *ret) {
        for (size_t i = 0; i < n; i++) {
                IgnoreVerdict v;
                if (!lists[i])
                        continue;
                v = list_match(lists[i], path, is_dir, ret);
                if (v != IGNORE_NO_MATCH)
                        return v;
        }
        return IGNORE_NO_MATCH;
}

static int path_view(const char *relpath, Component *c, PathView *ret) {
        size_t len = strnlen(relpath, IGNORE_PATH_MAX + 1);

        if (len > IGNORE_PATH_MAX)
                return -ENAMETOOLONG;
        if (!relpath_valid(relpath, len, false))
                return -EINVAL;
        *ret = (PathView) { relpath, len, c, split_components(relpath, len, c) };
        return 0;
}

int ignore_lists_match(const IgnoreList *const *lists, size_t n_lists, const char *relpath, bool is_dir,
                       IgnoreMatch *ret_match) {
        Component c[IGNORE_PATH_MAX / 2 + 1];
        PathView path;
        int r;

        r = path_view(relpath, c, &path);
        if (r < 0)
                return r;
        return (int) lists_match(lists, n_lists, &path, is_dir, ret_match);
}

int ignore_match(const IgnoreSet *set, const char *relpath, bool is_dir, IgnoreMatch *ret_match,
                 char **ret_error) {
        Component c[IGNORE_PATH_MAX / 2 + 1];
        /* Deepest first: chain[0] is the list of the path's own directory. */
        const IgnoreList *chain[IGNORE_PATH_MAX / 2 + 3];
        size_t depth = 0;
        PathView path;
        int r;

        r = path_view(relpath, c, &path);
        if (r < 0)
                return r;

        /* chain holds, from slot `top` on: the lists of the directories 0..k-1, then the two files. */
        size_t top = ELEMENTSOF(chain) - 2;
        chain[top] = set->info_exclude;
        chain[top + 1] = set->excludes_file;

        for (depth = 0; depth < path.n; depth++) {
                const IgnoreList *l = NULL;
                /* The directory of the first `depth` components. */
                size_t dlen = depth == 0 ? 0 : (size_t) c[depth - 1].start + c[depth - 1].len;

                if (depth > 0) {
                        PathView dir = { relpath, dlen, c, depth };
                        IgnoreMatch m;
                        if (lists_match(chain + top, ELEMENTSOF(chain) - top, &dir, true, &m) == IGNORE_EXCLUDED) {
                                if (ret_match)
                                        *ret_match = m;
                                return IGNORE_EXCLUDED;
                        }
                }
                if (set->load_dir) {
                        char dir[IGNORE_PATH_MAX + 1];
                        memcpy(dir, relpath, dlen);
                        dir[dlen] = 0;
                        r = set->load_dir(set->userdata, dir, &l, ret_error);
                        if (r < 0)
                                return r;
                }
                chain[--top] = l;
        }
        return (int) lists_match(chain + top, ELEMENTSOF(chain) - top, &path, is_dir, ret_match);
}

/* ---------------------------------------------------------------- cache */

typedef struct CacheEntry {
        struct CacheEntry *next;
        IgnoreList *list;
        char dir[];
} CacheEntry;

struct IgnoreCache {
        IgnoreReadDir read_dir;
        void *userdata;
        CacheEntry **buckets;
        size_t n_buckets, n_entries;
};

static size_t hash_dir(const char *s) {
        uint64_t h = 0xcbf29ce484222325ULL;
        for (; *s; s++)
                h = (h ^ (uint8_t) *s) * 0x100000001b3ULL;
        return (size_t) h;
}

int ignore_cache_new(IgnoreReadDir read_dir, void *userdata, IgnoreCache **ret) {
        IgnoreCache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->n_buckets = 64;
        c->buckets = calloc(c->n_buckets, sizeof(CacheEntry *));
        if (!c->buckets) {
                free(c);
                return -ENOMEM;
        }
        c->read_dir = read_dir;
        c->userdata = userdata;
        *ret = c;
        return 0;
}

IgnoreCache *ignore_cache_free(IgnoreCache *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_buckets; i++)
                for (CacheEntry *e = c->buckets[i], *next; e; e = next) {
                        next = e->next;
                        ignore_list_free(e->list);
                        free(e);
                }
        free(c->buckets);
        free(c);
        return NULL;
}

static CacheEntry **cache_slot(IgnoreCache *c, const char *dir) {
        CacheEntry **p = &c->buckets[hash_dir(dir) & (c->n_buckets - 1)];
        while (*p && strcmp((*p)->dir, dir) != 0)
                p = &(*p)->next;
        return p;
}

static void cache_grow(IgnoreCache *c) {
        size_t n = c->n_buckets * 2;
        CacheEntry **b = calloc(n, sizeof(CacheEntry *));
        if (!b)
                return; /* longer chains, still correct */
        for (size_t i = 0; i < c->n_buckets; i++)
                for (CacheEntry *e = c->buckets[i], *next; e; e = next) {
                        next = e->next;
                        size_t h = hash_dir(e->dir) & (n - 1);
                        e->next = b[h];
                        b[h] = e;
                }
        free(c->buckets);
        c->buckets = b;
        c->n_buckets = n;
}

int ignore_cache_put(IgnoreCache *c, const char *dir, IgnoreList *l) {
        CacheEntry **p = cache_slot(c, dir), *e;
        size_t n = strlen(dir);

        if (*p) {
                ignore_list_free((*p)->list);
                (*p)->list = l;
                return 0;
        }
        e = malloc(sizeof(*e) + n + 1);
        if (!e) {
                ignore_list_free(l);
                return -ENOMEM;
        }
        memcpy(e->dir, dir, n + 1);
        e->list = l;
        e->next = NULL;
        *p = e;
        if (++c->n_entries > c->n_buckets)
                cache_grow(c);
        return 0;
}

void ignore_cache_forget(IgnoreCache *c, const char *dir) {
        CacheEntry **p = cache_slot(c, dir), *e = *p;
        if (!e)
                return;
        *p = e->next;
        ignore_list_free(e->list);
        free(e);
        c->n_entries--;
}

int ignore_cache_load(void *userdata, const char *dir, const IgnoreList **ret, char **ret_error) {
        IgnoreCache *c = userdata;
        CacheEntry **p = cache_slot(c, dir);
        IgnoreList *l = NULL;
        int r;

        if (*p) {
                *ret = (*p)->list;
                return 0;
        }
        if (!c->read_dir) {
                *ret = NULL;
                return 0;
        }
        r = c->read_dir(c->userdata, dir, &l, ret_error);
        if (r < 0)
                return r;
        r = ignore_cache_put(c, dir, l);
        if (r < 0)
                return r;
        *ret = l;
        return 0;
}

/* ------------------------------------------------------ core.excludesFile */

int ignore_default_excludes_file(const char *xdg_config_home, const char *home, char **ret) {
        char *p = NULL;

        if (xdg_config_home && *xdg_config_home) {
                if (asprintf(&p, "%s/git/ignore", xdg_config_home) < 0)
                        return -ENOMEM;
        } else if (home && *home) {
                if (asprintf(&p, "%s/.config/git/ignore", home) < 0)
                        return -ENOMEM;
        }
        *ret = p;
        return 0;
}
