/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "fsmonitor-proto.h"

/* What an answer named, as "path" or "path/" joined by spaces. */
typedef struct Out {
        char buf[4096];
        size_t n;
} Out;

static void emit(const char *path, size_t len, bool dir, void *userdata) {
        Out *o = userdata;
        int k = snprintf(o->buf + o->n, sizeof(o->buf) - o->n, "%s%.*s%s", o->n ? " " : "", (int) len, path,
                         dir ? "/" : "");

        cr_assert(k > 0 && (size_t) k < sizeof(o->buf) - o->n);
        o->n += (size_t) k;
}

/* A journal body of records "tpath", each NUL-terminated, from a list. */
static size_t body(char *buf, const char *const *recs) {
        size_t n = 0;

        for (; *recs; recs++) {
                size_t l = strlen(*recs) + 1;
                memcpy(buf + n, *recs, l);
                n += l;
        }
        return n;
}

static FsmonScan scan(const char *data, size_t size, uint64_t from, const char *prefix, Out *o) {
        FsmonScan s;

        memset(o, 0, sizeof(*o));
        cr_assert_eq(fsmon_scan(data, size, FSMON_HEADER_SIZE, from, prefix, emit, o, &s), 0);
        return s;
}

Test(fsmonitor_proto, header_round_trip) {
        char h[FSMON_HEADER_SIZE];
        uint64_t i;

        fsmon_header_format(0x0123456789abcdefull, h);
        cr_assert_eq(fsmon_header_parse(h, sizeof(h), &i), 0);
        cr_assert_eq(i, 0x0123456789abcdefull);
        cr_assert_eq(fsmon_header_parse(h, sizeof(h) - 1, &i), -EBADMSG);
        h[0] = 'X';
        cr_assert_eq(fsmon_header_parse(h, sizeof(h), &i), -EBADMSG);
}

Test(fsmonitor_proto, tokens) {
        char t[FSMON_TOKEN_MAX];
        uint64_t i, o, f;

        fsmon_token_format(42, 100, 80, t, sizeof(t));
        cr_assert_str_eq(t, "lazaret:000000000000002a:100:80");
        cr_assert_eq(fsmon_token_parse(t, &i, &o, &f), 0);
        cr_assert(i == 42 && o == 100 && f == 80);
        /* git's first token, another monitor's, and malformed ones are not ours. */
        static const char *const bad[] = {
                "", "1700000000000000000", "c:1700000000:1234", "lazaret:000000000000002a:100",
                "lazaret:000000000000002a:100:80:", "lazaret:000000000000002A:100:80", "lazaret:2a:100:80",
                "lazaret:000000000000002a:100:200", "lazaret:000000000000002a:10:10",
                "lazaret:000000000000002a:99999999999999999999999:80",
        };
        for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
                cr_assert_eq(fsmon_token_parse(bad[k], &i, &o, &f), -EINVAL, "\"%s\" accepted", bad[k]);
}

Test(fsmonitor_proto, changes_since_token) {
        static const char *const recs[] = { "fold.c", "fnew.c", "dsrc/lib", "fsrc/x.c", NULL };
        char buf[256];
        size_t n = body(buf, recs);
        Out o;
        FsmonScan s = scan(buf, n, FSMON_HEADER_SIZE + strlen("fold.c") + 1, "", &o);

        cr_assert_not(s.trivial);
        cr_assert_str_eq(o.buf, "new.c src/lib/ src/x.c");
        cr_assert_eq(s.end, FSMON_HEADER_SIZE + n);
        cr_assert_eq(s.unwatched_from, s.end);
}

Test(fsmonitor_proto, partial_record_waits) {
        char buf[64];
        size_t n = body(buf, (const char *const[]) { "fa", NULL });
        Out o;
        FsmonScan s;

        memcpy(buf + n, "fhalf", 5);    /* no NUL yet */
        s = scan(buf, n + 5, FSMON_HEADER_SIZE, "", &o);
        cr_assert_str_eq(o.buf, "a");
        cr_assert_eq(s.end, FSMON_HEADER_SIZE + n);
}

Test(fsmonitor_proto, prefix) {
        static const char *const recs[] = { "fsub/repo/a.c", "fother/b.c", "fsub/repository/c", "fsub/repo", NULL };
        char buf[256];
        size_t n = body(buf, recs);
        Out o;
        FsmonScan s = scan(buf, n, FSMON_HEADER_SIZE, "sub/repo/", &o);

        /* The worktree's own metadata ('f' of "sub/repo") says nothing of its files. */
        cr_assert_not(s.trivial);
        cr_assert_str_eq(o.buf, "a.c");
}

Test(fsmonitor_proto, ancestor_directory_is_everything) {
        static const char *const parents[] = { "dsub", "dsub/repo", "d", "Dsub", NULL };

        for (size_t k = 0; parents[k]; k++) {
                char buf[64];
                size_t n = body(buf, (const char *const[]) { parents[k], NULL });
                Out o;
                FsmonScan s = scan(buf, n, FSMON_HEADER_SIZE, "sub/repo/", &o);
                cr_assert(s.trivial, "%s", parents[k]);
        }
        /* The workspace root as a directory, for the root's worktree. */
        {
                char buf[8] = { 'd', 0 };
                Out o;
                cr_assert(scan(buf, 2, FSMON_HEADER_SIZE, "", &o).trivial);
        }
}

Test(fsmonitor_proto, unwatched_directories) {
        /* a/ dropped before the token, b/ dropped and watched again before it, c/ after it. */
        static const char *const recs[] = { "Da", "Db", "Wb", "fx", "Dc", NULL };
        char buf[256];
        size_t n = body(buf, recs), token = FSMON_HEADER_SIZE + 3 + 3 + 3 + 3;
        Out o;
        FsmonScan s = scan(buf, n, token, "", &o);

        cr_assert_not(s.trivial);
        cr_assert_str_eq(o.buf, "a/ c/");
        cr_assert_eq(s.n_unwatched, 2);
        /* The next token reads from a's record on. */
        cr_assert_eq(s.unwatched_from, FSMON_HEADER_SIZE);

        /* a/ watched again: nothing is unwatched any more. */
        {
                static const char *const more[] = { "Da", "Wa", NULL };
                size_t m = body(buf, more);
                s = scan(buf, m, FSMON_HEADER_SIZE + m, "", &o);
                cr_assert_eq(s.n_unwatched, 0);
                cr_assert_eq(s.unwatched_from, FSMON_HEADER_SIZE + m);
                cr_assert_str_eq(o.buf, "");
        }
}

Test(fsmonitor_proto, too_many_unwatched) {
        size_t size = (FSMON_UNWATCHED_MAX + 1) * 8, n = 0;
        char *buf = malloc(size);
        Out o;

        cr_assert_not_null(buf);
        for (unsigned k = 0; k <= FSMON_UNWATCHED_MAX; k++)
                n += (size_t) sprintf(buf + n, "D%05u", k) + 1;
        cr_assert(scan(buf, n, FSMON_HEADER_SIZE + n, "", &o).trivial);
        free(buf);
}

Test(fsmonitor_proto, garbage_is_everything) {
        char buf[8] = { 'x', 'a', 0 };
        Out o;

        cr_assert(scan(buf, 3, FSMON_HEADER_SIZE, "", &o).trivial);
        buf[0] = 0;
        cr_assert(scan(buf, 1, FSMON_HEADER_SIZE, "", &o).trivial);
        cr_assert_eq(fsmon_scan(buf, 1, FSMON_HEADER_SIZE, FSMON_HEADER_SIZE, "sub", emit, &o, &(FsmonScan) {}), -EINVAL);
        cr_assert_eq(fsmon_scan(buf, 1, 0, FSMON_HEADER_SIZE, "", emit, &o, &(FsmonScan) {}), -EINVAL);
}
