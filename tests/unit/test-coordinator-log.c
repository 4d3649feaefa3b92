/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The coordinator's journal entries (src/coordinator/log.c), as journald
 * would receive them: each body runs in a user and mount namespace of its
 * own (isolated.h) with a tmpfs on /run and a datagram socket bound where
 * libsystemd sends native journal records, /run/systemd/journal/socket.
 * The records are read back from that socket and their fields compared:
 * MESSAGE_ID, DOMAIN_ID, SESSION_ID and PRIORITY of an escalation audit
 * event (spec 5.6, issue 17 item 9), and nothing sent to the journal when
 * standard error is not the journal's stream.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "isolated.h"
#include "log.h"

#define JOURNAL_SOCKET "/run/systemd/journal/socket"

/* A stand-in for journald's native socket, in this mount namespace only. */
static int fake_journal(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = JOURNAL_SOCKET };
        int fd;

        CHECK(mount("tmpfs", "/run", "tmpfs", 0, "mode=0755") == 0, "mount /run: %s", strerror(errno));
        CHECK(mkdir("/run/systemd", 0755) == 0 && mkdir("/run/systemd/journal", 0755) == 0, "mkdir: %s", strerror(errno));
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0, "socket: %s", strerror(errno));
        CHECK(bind(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0, "bind: %s", strerror(errno));
        return fd;
}

/* JOURNAL_STREAM naming standard error, as systemd sets it for StandardError=journal. */
static void stderr_is_journal_stream(void) {
        struct stat st;
        char v[64];

        CHECK(fstat(STDERR_FILENO, &st) == 0, "fstat: %s", strerror(errno));
        snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
        CHECK(setenv("JOURNAL_STREAM", v, 1) == 0);
}

/* One record from the fake journal, NUL-terminated, or NULL when none is queued. */
static char *next_record(int fd, char *buf, size_t size) {
        ssize_t n = recv(fd, buf, size - 1, MSG_DONTWAIT);

        if (n < 0) {
                CHECK(errno == EAGAIN, "recv: %s", strerror(errno));
                return NULL;
        }
        buf[n] = 0;
        return buf;
}

static bool has_field(const char *record, const char *field) {
        size_t n = strlen(field);

        for (const char *p = record; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, field, n) == 0 && (p[n] == '\n' || p[n] == 0))
                        return true;
        return false;
}

static void run_isolated(void (*body)(void)) {
        pid_t pid = fork();
        int status;

        cr_assert(pid >= 0);
        if (pid == 0) {
                isolated_enter(CLONE_NEWNS);
                body();
                _exit(0);
        }
        cr_assert(waitpid(pid, &status, 0) == pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                cr_skip_test("no user and mount namespaces on this machine");
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the isolated body failed (status %d)", status);
}

static void audit_event_fields(void) {
        char buf[4096], *rec;
        int fd = fake_journal();

        stderr_is_journal_stream();
        log_set_domain("0123456789ab");
        log_session_id(LOG_INFO, "5e55105e55105e55105e55105e55105e", ESCALATION_AUDIT_MESSAGE_ID,
                       "Escalation request %s: %s", "feedfacefeedfacefeedfacefeedface", "approved by rule");
        rec = next_record(fd, buf, sizeof(buf));
        CHECK(rec, "the audit event reached no journal");
        CHECK(has_field(rec, "MESSAGE_ID=" ESCALATION_AUDIT_MESSAGE_ID), "no MESSAGE_ID in:\n%s", rec);
        CHECK(has_field(rec, "DOMAIN_ID=0123456789ab"), "no DOMAIN_ID in:\n%s", rec);
        CHECK(has_field(rec, "SESSION_ID=5e55105e55105e55105e55105e55105e"), "no SESSION_ID in:\n%s", rec);
        CHECK(has_field(rec, "PRIORITY=6"), "no PRIORITY in:\n%s", rec);
        CHECK(has_field(rec, "MESSAGE=Escalation request feedfacefeedfacefeedfacefeedface: approved by rule"),
              "no MESSAGE in:\n%s", rec);
        CHECK(!next_record(fd, buf, sizeof(buf)), "a second record for one event: %s", buf);

        /* An event of the Domain, not of a session: no SESSION_ID, no MESSAGE_ID. */
        log_session(LOG_WARNING, NULL, "Domain %s stopping", "0123456789ab");
        rec = next_record(fd, buf, sizeof(buf));
        CHECK(rec, "the Domain's line reached no journal");
        CHECK(has_field(rec, "DOMAIN_ID=0123456789ab") && has_field(rec, "PRIORITY=4"), "fields of:\n%s", rec);
        CHECK(!strstr(rec, "SESSION_ID=") && !strstr(rec, "MESSAGE_ID="), "stray fields in:\n%s", rec);
}

static void no_journal_without_stream(void) {
        char buf[4096];
        int fd = fake_journal();

        /* JOURNAL_STREAM names some other file: stderr is not the journal's. */
        CHECK(setenv("JOURNAL_STREAM", "1:1", 1) == 0);
        log_session_id(LOG_INFO, NULL, ESCALATION_AUDIT_MESSAGE_ID, "Escalation request %s: %s", "x", "requested");
        CHECK(!next_record(fd, buf, sizeof(buf)), "a record reached the journal although stderr is not its stream: %s",
              buf);
}

Test(coordinator_log, audit_event_reaches_journal_with_its_ids) {
        run_isolated(audit_event_fields);
}

Test(coordinator_log, no_journal_when_stderr_is_not_its_stream) {
        run_isolated(no_journal_without_stream);
}
