/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-journal.h>

#include "cleanup.h"
#include "log.h"
#include "parse-util.h"

static char domain_id[16] = "";
static int use_journal = -1;

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

static void log_write(int priority, const char *session_id, const char *msg) {
        if (priority > LOG_INFO && !getenv("LAZARET_DEBUG"))
                return;
        if (journal_wanted() &&
            sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%i", priority, "DOMAIN_ID=%s", domain_id,
                            session_id ? "SESSION_ID=%s" : NULL, session_id, NULL) >= 0)
                return;
        if (session_id)
                fprintf(stderr, "<%i>[%s] session %s: %s\n", priority, domain_id, session_id, msg);
        else
                fprintf(stderr, "<%i>[%s] %s\n", priority, domain_id, msg);
}

void log_session(int priority, const char *session_id, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        int saved = errno;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) >= 0)
                log_write(priority, session_id, msg);
        va_end(ap);
        errno = saved;
}

int log_errno_session(int priority, int error, const char *session_id, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL, *full = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) >= 0 && asprintf(&full, "%s: %s", msg, strerror(error < 0 ? -error : error)) >= 0)
                log_write(priority, session_id, full);
        va_end(ap);
        return error < 0 ? error : -error;
}
