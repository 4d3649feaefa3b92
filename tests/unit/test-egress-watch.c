/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The coordinator's side of denied names (src/coordinator/egress-watch.c)
 * against a stand-in for the egress helper's API socket: the watch request,
 * the bounds on what is reported (per rule, per minute), lines outside the
 * grammar and overlong lines dropped without losing the ones after them,
 * and the allows sent one connection each, answered, refused or cancelled.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <systemd/sd-event.h>

#include "egress-watch.h"

typedef struct State {
        unsigned events, reports, dropped;
        unsigned last_withheld;
        char last_rule[HOST_RULE_STRING_MAX];
        bool lost;
        int allow_r;
        char allow_why[256];
        unsigned allows_done;
} State;

static char dir[] = "/tmp/lazaret-egress-watch-XXXXXX";
static char path[128];
static int listener = -1;
static sd_event *event;

static void setup(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/api", dir);
        strcpy(sa.sun_path, path);
        listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert_geq(listener, 0);
        cr_assert_eq(bind(listener, (struct sockaddr *) &sa, sizeof(sa)), 0);
        cr_assert_eq(listen(listener, 16), 0);
        cr_assert_eq(sd_event_new(&event), 0);
}

static void teardown(void) {
        close(listener);
        unlink(path);
        rmdir(dir);
        sd_event_unref(event);
}

static void on_denied(EgressDenial *d, bool report, unsigned withheld, void *userdata) {
        State *s = userdata;

        s->events++;
        if (report) {
                s->reports++;
                s->last_withheld = withheld;
        }
        snprintf(s->last_rule, sizeof(s->last_rule), "%s", d->rule);
}

static void on_dropped(uint32_t count, void *userdata) {
        ((State *) userdata)->dropped += count;
}

static void on_lost(const char *why, void *userdata) {
        ((State *) userdata)->lost = true;
}

static void on_allow_done(int r, const char *why, void *userdata) {
        State *s = userdata;

        s->allow_r = r;
        snprintf(s->allow_why, sizeof(s->allow_why), "%s", why ?: "");
        s->allows_done++;
}

/* Runs the loop until cond holds (at most 2 s). */
#define RUN_UNTIL(cond)                                                         \
        do {                                                                    \
                for (int _i = 0; _i < 200 && !(cond); _i++)                     \
                        cr_assert_geq(sd_event_run(event, 10 * 1000), 0);       \
                cr_assert(cond, "never: %s", #cond);                            \
        } while (0)

static void put(int fd, const char *s) {
        cr_assert_eq(write(fd, s, strlen(s)), (ssize_t) strlen(s));
}

static char *take_request(int fd) {
        static char buf[1024];
        ssize_t k = read(fd, buf, sizeof(buf) - 1);

        cr_assert_gt(k, 0);
        buf[k] = 0;
        return buf;
}

static const EgressWatchCallbacks callbacks = { .denied = on_denied, .dropped = on_dropped, .lost = on_lost };

Test(egress_watch, events_and_bounds, .init = setup, .fini = teardown) {
        State st = {};
        EgressWatch *w = NULL;
        const EgressDenial *d;
        char line[64], huge[5000];
        int helper;

        cr_assert_eq(egress_watch_new(event, path, &callbacks, &st, &w), 0);
        helper = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        cr_assert_geq(helper, 0);
        cr_assert_str_eq(take_request(helper), "{\"execute\":\"watch_denied\",\"arguments\":{}}");

        /* Before the helper's answer, nothing counts as an event. */
        put(helper, "denied dns early.example\n{\"return\":{}}\n");
        /* The same denial three times: reported once. */
        put(helper, "denied dns a.example\ndenied dns a.example\ndenied dns a.example\n");
        RUN_UNTIL(st.events == 3);
        cr_assert_eq(st.reports, 1);
        cr_assert_str_eq(st.last_rule, "a.example");
        /* A port denial is its own rule. */
        put(helper, "denied port a.example 8080\n");
        RUN_UNTIL(st.events == 4);
        cr_assert_eq(st.reports, 2);
        cr_assert_str_eq(st.last_rule, "a.example:8080");
        /* Ten reports a minute in all: b..i make ten, j and k are held back. */
        for (char c = 'b'; c <= 'k'; c++) {
                snprintf(line, sizeof(line), "denied dns %c.example\n", c);
                put(helper, line);
        }
        RUN_UNTIL(st.events == 14);
        cr_assert_eq(st.reports, 10);
        /* Lines outside the grammar are dropped; an overlong one to its newline; what follows still counts. */
        put(helper, "denied dns \x1b[2J.example\ndenied dns UPPER.example\nallowed dns a.example\n");
        memset(huge, 'x', sizeof(huge));
        cr_assert_eq(write(helper, huge, sizeof(huge)), (ssize_t) sizeof(huge));
        put(helper, "\ndropped 5\ndenied dns z.example\n");
        RUN_UNTIL(st.events == 15 && st.dropped == 5);
        cr_assert_str_eq(st.last_rule, "z.example");
        cr_assert_eq(st.reports, 10, "the eleventh distinct report in a minute was not held back");
        cr_assert_eq(egress_watch_denials(w, &d), 13);
        cr_assert_eq(d[0].count, 3);
        cr_assert_null(egress_watch_find(w, "early.example"));
        cr_assert_not_null(egress_watch_find(w, "z.example"));
        cr_assert(!st.lost);

        /* The helper's end is said once. */
        close(helper);
        RUN_UNTIL(st.lost);
        egress_watch_free(w);
}

Test(egress_watch, allows, .init = setup, .fini = teardown) {
        State st = {};
        EgressWatch *w = NULL;
        int helper, c;

        cr_assert_eq(egress_watch_new(event, path, &callbacks, &st, &w), 0);
        helper = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        cr_assert_geq(helper, 0);
        (void) take_request(helper);

        /* Sent as the helper reads it: the canonical rule; keep goes as domain (the store is the owner's). */
        cr_assert_eq(egress_watch_allow(w, "A.Example:8080", EGRESS_SCOPE_KEEP, on_allow_done, &st), 0);
        c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        cr_assert_geq(c, 0);
        cr_assert_str_eq(take_request(c),
                         "{\"execute\":\"add_host\",\"arguments\":{\"rule\":\"a.example:8080\",\"scope\":\"domain\"}}");
        cr_assert_eq(st.allows_done, 0, "done() before the answer");
        put(c, "{\"return\":{}}");
        close(c);
        RUN_UNTIL(st.allows_done == 1);
        cr_assert_eq(st.allow_r, 0);

        /* A refusal, its reason shown escaped. */
        cr_assert_eq(egress_watch_allow(w, "b.example", EGRESS_SCOPE_ONCE, on_allow_done, &st), 0);
        c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        (void) take_request(c);
        put(c, "{\"error\":{\"desc\":\"no \\u001b room\"}}");
        close(c);
        RUN_UNTIL(st.allows_done == 2);
        cr_assert_lt(st.allow_r, 0);
        cr_assert_str_eq(st.allow_why, "no \\x1b room");

        /* A rule the grammar refuses is not sent. */
        cr_assert_lt(egress_watch_allow(w, "http://c.example", EGRESS_SCOPE_ONCE, on_allow_done, &st), 0);

        /* Unanswered when the watch goes: cancelled. */
        cr_assert_eq(egress_watch_allow(w, "d.example", EGRESS_SCOPE_DOMAIN, on_allow_done, &st), 0);
        c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        egress_watch_free(w);
        cr_assert_eq(st.allows_done, 3);
        cr_assert_eq(st.allow_r, -ECANCELED);
        close(c);
        close(helper);
}

/* remove_host: the canonical rule sent; the helper's "removed" read as 1, any other return as 0. */
Test(egress_watch, forget, .init = setup, .fini = teardown) {
        State st = {};
        EgressWatch *w = NULL;
        int helper, c;

        cr_assert_eq(egress_watch_new(event, path, &callbacks, &st, &w), 0);
        helper = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        cr_assert_geq(helper, 0);
        (void) take_request(helper);

        cr_assert_eq(egress_watch_forget(w, "A.Example:8080", on_allow_done, &st), 0);
        c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        cr_assert_geq(c, 0);
        cr_assert_str_eq(take_request(c), "{\"execute\":\"remove_host\",\"arguments\":{\"rule\":\"a.example:8080\"}}");
        put(c, "{\"return\":{\"removed\":true,\"closed\":2}}");
        close(c);
        RUN_UNTIL(st.allows_done == 1);
        cr_assert_eq(st.allow_r, 1);

        cr_assert_eq(egress_watch_forget(w, "b.example", on_allow_done, &st), 0);
        c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        (void) take_request(c);
        put(c, "{\"return\":{\"removed\":false,\"closed\":0}}");
        close(c);
        RUN_UNTIL(st.allows_done == 2);
        cr_assert_eq(st.allow_r, 0);

        /* Not an answer of the protocol: refused, not read as "not held". */
        cr_assert_eq(egress_watch_forget(w, "b.example", on_allow_done, &st), 0);
        c = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        (void) take_request(c);
        put(c, "[\"removed\"]");
        close(c);
        RUN_UNTIL(st.allows_done == 3);
        cr_assert_eq(st.allow_r, -EBADMSG);

        cr_assert_lt(egress_watch_forget(w, "http://c.example", on_allow_done, &st), 0);
        egress_watch_free(w);
        close(helper);
}
