/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "cleanup.h"
#include "log.h"
#include "parse-util.h"

static char domain_id[16] = "";
static int use_journal = -1;
static int log_fd = -EBADF;
static char *log_path;
static off_t log_size;

void log_set_domain(const char *id) {
        snprintf(domain_id, sizeof(domain_id), "%s", id);
}

/* The journal when stderr is connected to it (JOURNAL_STREAM matches). */
static bool journal_wanted(void) {
        if (use_journal < 0) {
                const char *e = getenv("JOURNAL_STREAM"), *colon = e ? strchr(e, ':') : NULL;
                uint64_t dev, ino;
                struct stat st;

                /* "DEVICE:INODE", both decimal (systemd.exec(5)). */
                use_journal = colon && parse_unsigned_n(e, (size_t) (colon - e), 0, 0, UINT64_MAX, &dev) >= 0 &&
                              parse_uint64(colon + 1, 0, UINT64_MAX, &ino) >= 0 && fstat(STDERR_FILENO, &st) >= 0 &&
                              st.st_dev == dev && st.st_ino == ino;
        }
        return use_journal;
}

int log_open_file(const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        char *p;

        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
                return -EPERM;
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        free(log_path);
        log_path = p;
        safe_close(log_fd);
        log_fd = TAKE_FD(fd);
        log_size = st.st_size;
        return 0;
}

/*
 * One line in the Domain's log file: the time, the priority and the message
 * with every control byte shown as \xNN (a path from the workspace cannot
 * forge a line). Past LOG_FILE_MAX the file becomes PATH.1 and a new one is
 * begun: at most twice that is kept.
 */
static void log_file_write(int priority, const char *session_id, const char *msg) {
        _cleanup_free_ char *line = NULL;
        char stamp[32];
        struct tm tm;
        time_t now = time(NULL);
        size_t n = 0, size;

        if (log_fd < 0)
                return;
        if (!localtime_r(&now, &tm) || strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                stamp[0] = 0;
        size = strlen(stamp) + strlen(msg) * 4 + (session_id ? strlen(session_id) : 0) + 64;
        line = malloc(size);
        if (!line)
                return;
        n = (size_t) snprintf(line, size, "%s <%i> %s%s%s", stamp, priority, session_id ? "session " : "",
                              session_id ?: "", session_id ? ": " : "");
        for (const unsigned char *c = (const unsigned char *) msg; *c && n + 5 < size; c++)
                if (*c < 0x20 || *c == 0x7f)
                        n += (size_t) snprintf(line + n, size - n, "\\x%02x", *c);
                else
                        line[n++] = (char) *c;
        line[n++] = '\n';
        if (write(log_fd, line, n) == (ssize_t) n)
                log_size += (off_t) n;
        if (log_size > LOG_FILE_MAX && log_path) {
                _cleanup_free_ char *old = NULL;
                if (asprintf(&old, "%s.1", log_path) >= 0 && rename(log_path, old) >= 0)
                        (void) log_open_file(log_path);
        }
}

static void log_write(int priority, const char *session_id, const char *message_id, const char *msg) {
        if (priority > LOG_INFO && !getenv("LAZARET_DEBUG"))
                return;
        log_file_write(priority, session_id, msg);
        if (journal_wanted() &&
            (message_id ? sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%i", priority, "DOMAIN_ID=%s", domain_id,
                                          "MESSAGE_ID=%s", message_id, session_id ? "SESSION_ID=%s" : NULL, session_id,
                                          NULL)
                        : sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%i", priority, "DOMAIN_ID=%s", domain_id,
                                          session_id ? "SESSION_ID=%s" : NULL, session_id, NULL)) >= 0)
                return;
        if (session_id)
                fprintf(stderr, "<%i>[%s] session %s: %s\n", priority, domain_id, session_id, msg);
        else
                fprintf(stderr, "<%i>[%s] %s\n", priority, domain_id, msg);
}

static void log_va(int priority, const char *session_id, const char *message_id, const char *fmt, va_list ap) {
        _cleanup_free_ char *msg = NULL;
        int saved = errno;

        if (vasprintf(&msg, fmt, ap) >= 0)
                log_write(priority, session_id, message_id, msg);
        errno = saved;
}

void log_session(int priority, const char *session_id, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        log_va(priority, session_id, NULL, fmt, ap);
        va_end(ap);
}

void log_session_id(int priority, const char *session_id, const char *message_id, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        log_va(priority, session_id, message_id, fmt, ap);
        va_end(ap);
}

int log_errno_session(int priority, int error, const char *session_id, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL, *full = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) >= 0 && asprintf(&full, "%s: %s", msg, strerror(error < 0 ? -error : error)) >= 0)
                log_write(priority, session_id, NULL, full);
        va_end(ap);
        return error < 0 ? error : -error;
}
