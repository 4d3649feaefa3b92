/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <syslog.h>

#include "macro.h"

/*
 * Coordinator logging: structured journal entries carrying DOMAIN_ID= and,
 * for session events, SESSION_ID=; stderr when the journal is not there.
 */
void log_set_domain(const char *domain_id);

/*
 * Also append every line to a file (the Domain's log in its runtime
 * directory, which `lazaretctl log` shows, with or without a journal):
 * created 0600, never through a symlink; rotated once past LOG_FILE_MAX.
 */
#define LOG_FILE_MAX (256 * 1024)
int log_open_file(const char *path);
void log_session(int priority, const char *session_id, const char *fmt, ...) _printf_(3, 4);
/* The journal's MESSAGE_ID of every escalation audit event (spec 5.6). */
#define ESCALATION_AUDIT_MESSAGE_ID "7c76576dc94944de96fe545118ace266"

/* The same with a journal MESSAGE_ID= (32 hex digits) that names the kind of event. */
void log_session_id(int priority, const char *session_id, const char *message_id, const char *fmt, ...) _printf_(4, 5);
int log_errno_session(int priority, int error, const char *session_id, const char *fmt, ...) _printf_(4, 5);

#define log_info(...) log_session(LOG_INFO, NULL, __VA_ARGS__)
#define log_notice(...) log_session(LOG_NOTICE, NULL, __VA_ARGS__)
#define log_warning(...) log_session(LOG_WARNING, NULL, __VA_ARGS__)
#define log_error(...) log_session(LOG_ERR, NULL, __VA_ARGS__)
#define log_debug(...) log_session(LOG_DEBUG, NULL, __VA_ARGS__)
/* Logs with strerror(-error) appended; returns error (negative). */
#define log_error_errno(error, ...) log_errno_session(LOG_ERR, (error), NULL, __VA_ARGS__)
#define log_warning_errno(error, ...) log_errno_session(LOG_WARNING, (error), NULL, __VA_ARGS__)
