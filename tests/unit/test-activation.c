/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The activation socket's protocol (src/coordinator/activation.c): its two
 * lines, and waiting clients on a real socket passed the way systemd
 * passes it (LISTEN_FDS, fd 3).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <systemd/sd-daemon.h>

#include "activation.h"

Test(activation, answer_line) {
        char *line = NULL;
        char *notices[] = { (char *) "a rebase is under way", NULL };

        cr_assert_eq(activation_answer_line(&(ActivationAnswer) {
                                                    .state = "running",
                                                    .domain_id = "0123456789ab",
                                                    .bus_name = "org.lazaret.Domain.d0123456789ab",
                                                    .coordinator_id = "c0",
                                                    .unenforced_limits = "",
                                                    .git_notices = notices,
                                            }, &line), 0);
        /* One line; an empty unenforced_limits and the NULL members are left out. */
        cr_assert_str_eq(line, "{\"state\":\"running\",\"domain_id\":\"0123456789ab\",\"bus_name\":"
                               "\"org.lazaret.Domain.d0123456789ab\",\"coordinator_id\":\"c0\","
                               "\"git_notices\":[\"a rebase is under way\"]}\n");
        free(line);
}

Test(activation, answer_line_failure_not_utf8) {
        char *line = NULL;

        /* The reason quotes bytes that are not UTF-8: the clients still hear that it failed. */
        cr_assert_eq(activation_answer_line(&(ActivationAnswer) {
                                                    .state = "failed",
                                                    .domain_id = "0123456789ab",
                                                    .bus_name = "b",
                                                    .coordinator_id = "c",
                                                    .error = "bad \xff byte",
                                                    .state_notice = "s/n",
                                            }, &line), 0);
        cr_assert_str_eq(line, "{\"state\":\"failed\",\"domain_id\":\"0123456789ab\",\"bus_name\":\"b\",\"coordinator_id\":\"c\","
                               "\"error\":\"the reason is not valid UTF-8; see: lazaretctl log\",\"state_notice\":\"s/n\"}\n");
        free(line);
}

Test(activation, progress_line) {
        char *line = NULL;

        cr_assert_eq(activation_progress_line("Preparing image \"x\"", &line), 0);
        cr_assert_str_eq(line, "{\"progress\":\"Preparing image \\\"x\\\"\"}\n");
        free(line);
        cr_assert_eq(activation_progress_line(NULL, &line), 0);
        cr_assert_str_eq(line, "{\"progress\":\"\"}\n");
        free(line);
}

/* In a child of the test (fd 3 and LISTEN_* are the child's to set): fails with the line that failed. */
#define CHECK(x) do { if (!(x)) { fprintf(stderr, "line %d: %s\n", __LINE__, #x); _exit(__LINE__ % 250 + 1); } } while (0)

typedef struct Counts {
        unsigned connected, abandoned;
} Counts;

static void on_connected(Activation *a, void *userdata) {
        ((Counts *) userdata)->connected++;
}

static void on_abandoned(Activation *a, void *userdata) {
        ((Counts *) userdata)->abandoned++;
}

static int client(const struct sockaddr_un *sa) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        CHECK(fd >= 0);
        CHECK(connect(fd, (const struct sockaddr *) sa, sizeof(*sa)) == 0);
        return fd;
}

/* What a client has been sent so far (never waits once nothing more is there). */
static char *received(int fd) {
        static char buf[4096];
        ssize_t n;

        CHECK(poll(&(struct pollfd) { .fd = fd, .events = POLLIN }, 1, 2000) == 1);
        n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
        buf[n < 0 ? 0 : n] = 0;
        return buf;
}

static void run_loop(sd_event *e) {
        /* Each pending event once; nothing here waits long. */
        for (int i = 0; i < 5; i++)
                CHECK(sd_event_run(e, 50 * 1000) >= 0);
}

static void waiting_clients(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        Activation *a = NULL;
        sd_event *e = NULL;
        Counts counts = {};
        char env[32];
        int l, c1, c2, c3;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/test-activation-%d", (int) getpid());
        (void) unlink(sa.sun_path);
        l = socket(AF_UNIX, SOCK_STREAM, 0);
        CHECK(l >= 0);
        CHECK(bind(l, (struct sockaddr *) &sa, sizeof(sa)) == 0);
        CHECK(listen(l, 16) == 0);
        CHECK(dup2(l, SD_LISTEN_FDS_START) == SD_LISTEN_FDS_START);
        close(l);
        snprintf(env, sizeof(env), "%d", (int) getpid());
        CHECK(setenv("LISTEN_PID", env, 1) == 0);
        CHECK(setenv("LISTEN_FDS", "1", 1) == 0);

        CHECK(sd_event_new(&e) >= 0);
        CHECK(activation_new(e, &(ActivationCallbacks) { .connected = on_connected, .abandoned = on_abandoned }, &counts,
                             &a, NULL) == 1);

        /* A client waits; the long work under way reaches it. */
        c1 = client(&sa);
        run_loop(e);
        CHECK(counts.connected == 1);
        CHECK(activation_n_waiting(a) == 1);
        activation_progress(a, "Preparing image");
        CHECK(strcmp(received(c1), "{\"progress\":\"Preparing image\"}\n") == 0);

        /* One that comes during that work hears it first. */
        c2 = client(&sa);
        run_loop(e);
        CHECK(activation_n_waiting(a) == 2);
        CHECK(strcmp(received(c2), "{\"progress\":\"Preparing image\"}\n") == 0);

        /* A client that hangs up is forgotten; the others still wait: nobody abandoned the start. */
        c3 = client(&sa);
        run_loop(e);
        (void) received(c3);
        close(c3);
        run_loop(e);
        CHECK(activation_n_waiting(a) == 2);
        CHECK(counts.abandoned == 0);

        /* The answer: one line each, then the connection ends. */
        CHECK(activation_answer(a, &(ActivationAnswer) { .state = "running", .domain_id = "d", .bus_name = "b",
                                                         .coordinator_id = "c" }) == 0);
        CHECK(activation_n_waiting(a) == 0);
        CHECK(strcmp(received(c1), "{\"state\":\"running\",\"domain_id\":\"d\",\"bus_name\":\"b\",\"coordinator_id\":\"c\"}\n") == 0);
        CHECK(strcmp(received(c1), "") == 0);  /* EOF */
        CHECK(strstr(received(c2), "\"running\"") != NULL);
        close(c1);
        close(c2);

        /* The progress ended with the answer: a later client hears none (the owner answers it). */
        c1 = client(&sa);
        run_loop(e);
        CHECK(counts.connected == 4);
        CHECK(poll(&(struct pollfd) { .fd = c1, .events = POLLIN }, 1, 100) == 0);
        /* It hangs up: the last waiting client gone, the owner hears it. */
        close(c1);
        run_loop(e);
        CHECK(counts.abandoned == 1);

        /* No longer listening: a connection stays queued for the next coordinator. */
        activation_stop_listening(a);
        c1 = client(&sa);
        run_loop(e);
        CHECK(counts.connected == 4);
        /* A start that failed takes the queued ones, to answer them. */
        activation_take_queued(a);
        CHECK(activation_n_waiting(a) == 1);
        CHECK(activation_answer(a, &(ActivationAnswer) { .state = "failed", .domain_id = "d", .bus_name = "b",
                                                         .coordinator_id = "c", .error = "no" }) == 0);
        CHECK(strstr(received(c1), "\"error\":\"no\"") != NULL);
        close(c1);

        activation_free(a);
        sd_event_unref(e);
        (void) unlink(sa.sun_path);
        _exit(0);
}

Test(activation, waiting_clients) {
        int status;
        pid_t pid = fork();

        cr_assert_geq(pid, 0);
        if (pid == 0)
                waiting_clients();
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "failed at the line printed above (status %d)", status);
}

Test(activation, none_passed) {
        Activation *a = NULL;
        sd_event *e = NULL;

        /* Started by hand: no socket, no clients, every call works. */
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_PID");
        cr_assert_geq(sd_event_new(&e), 0);
        cr_assert_eq(activation_new(e, &(ActivationCallbacks) {}, NULL, &a, NULL), 0);
        cr_assert_not_null(a);
        activation_progress(a, "x");
        activation_take_queued(a);
        cr_assert_eq(activation_answer(a, &(ActivationAnswer) { .state = "running", .domain_id = "d", .bus_name = "b",
                                                                .coordinator_id = "c" }), 0);
        activation_stop_listening(a);
        activation_free(a);
        /* And a NULL one too. */
        activation_progress(NULL, "x");
        cr_assert_eq(activation_n_waiting(NULL), 0u);
        sd_event_unref(e);
}
