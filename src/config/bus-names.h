/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Names shared by the coordinator and its clients: the per-Domain bus name,
 * object path and interface, error names, unit names and runtime file names.
 * Pure string helpers; nothing here talks to a bus.
 */

#include "domain.h"

#define LAZARET_BUS_NAME_PREFIX "org.lazaret.Domain.d"
#define LAZARET_BUS_PATH "/org/lazaret/Domain"
#define LAZARET_BUS_INTERFACE "org.lazaret.Domain1"
/*
 * The interface's version (its InterfaceVersion property), raised when a
 * member is added; members are never changed or removed within Domain1.
 * 2: ListEscalationRequests, whose requests carry the sandbox's bytes
 * (argv, why, cwd as ay) beside their display form; PublishPort,
 * UnpublishPort and PublishedPorts.
 * 3: the Domain Store's owner answers for it (only the lock's holder opens
 * it): EscalationHistory, ApplyRetention, LeasedLowers; the "maintenance"
 * state of a coordinator that serves only those (lazaretctl(1)).
 * 4: denied names (spec 4.5, "A denied name"): AllowEgress,
 * ListDeniedEgress, the EgressDenied signal; the Domain Store's
 * KeptEgress and ForgetEgress.
 */
#define LAZARET_BUS_INTERFACE_VERSION 4
/* One denied name: rule, name, port (0 for a DNS question), kind ("dns", "port"), first and last seen (µs), count */
#define EGRESS_DENIAL_SIGNATURE "ssqsttu"
/* request_id, session_id, state, kind, argv, argv shown, why, why shown, cwd, cwd shown */
#define ESCALATION_REQUEST_V2_SIGNATURE "ssssaaysaysays"
/* One audit event: time (µs), request_id, session_id, event, by, argv as JSON, cwd, why, outcome, status, detail */
#define ESCALATION_EVENT_SIGNATURE "tsssssayaysiay"
/* The most events one EscalationHistory call returns. */
#define ESCALATION_HISTORY_MAX 1000

#define LAZARET_ERROR_INVALID_ARGS "org.lazaret.Domain1.Error.InvalidArguments"
#define LAZARET_ERROR_NOT_READY "org.lazaret.Domain1.Error.NotReady"
#define LAZARET_ERROR_STOPPING "org.lazaret.Domain1.Error.Stopping"
#define LAZARET_ERROR_NO_SUCH_SESSION "org.lazaret.Domain1.Error.NoSuchSession"
#define LAZARET_ERROR_NOT_OWNER "org.lazaret.Domain1.Error.NotSessionOwner"
#define LAZARET_ERROR_CONFIG_MISMATCH "org.lazaret.Domain1.Error.ConfigurationMismatch"
#define LAZARET_ERROR_LIMIT "org.lazaret.Domain1.Error.LimitExceeded"
#define LAZARET_ERROR_ACCESS "org.lazaret.Domain1.Error.AccessDenied"
#define LAZARET_ERROR_SPAWN "org.lazaret.Domain1.Error.SpawnFailed"
#define LAZARET_ERROR_PORT_IN_USE "org.lazaret.Domain1.Error.PortInUse"
#define LAZARET_ERROR_NETWORK_HELPER "org.lazaret.Domain1.Error.NetworkHelperFailed"
#define LAZARET_ERROR_MAINTENANCE "org.lazaret.Domain1.Error.Maintenance"
#define LAZARET_ERROR_STORE "org.lazaret.Domain1.Error.StoreFailed"

/* Limits on what a client may send in one call. */
#define SESSION_MAX_ARGV 1024
#define SESSION_MAX_ENV 1024
#define SESSION_MAX_ARG_BYTES (128 * 1024)
#define SESSION_MAX_TOTAL_BYTES (1024 * 1024)
#define DOMAIN_MAX_SESSIONS 64

/* Size of the buffers below, including the NUL. */
#define BUS_NAME_MAX (sizeof(LAZARET_BUS_NAME_PREFIX) + DOMAIN_ID_LEN)
#define UNIT_NAME_MAX 64

void domain_bus_name(const char *id, char ret[BUS_NAME_MAX]);
/* lazaret@ID.service, lazaret@ID.socket, lazaret-ID-sandbox.scope */
void domain_unit_name(const char *id, const char *suffix, char ret[UNIT_NAME_MAX]);
void domain_scope_name(const char *id, char ret[UNIT_NAME_MAX]);
/* Extracts the Domain ID from a bus name; NULL when it is not one of ours. */
const char *domain_id_from_bus_name(const char *name);

/* Launch request, written by the client, read by the coordinator. */
#define LAUNCH_REQUEST_SUFFIX ".launch"
