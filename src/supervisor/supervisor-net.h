/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hash.h"
#include "helper.h"
#include "net-policy.h"

/*
 * The Runtime Supervisor's network (spec section 4.5), in its start order:
 *
 *   supnet_prepare()   the enforcement namespace (bind-mounted at
 *                      netns_path, the supervisor now lives in it), IPv6 off,
 *                      slirp4netns (or lazaret-egress, for a policy with
 *                      host rules) started outside it as a supervised
 *                      helper (helper.h) of the set it is given, the canary peer
 *                      namespace with its responder (and, with host rules,
 *                      the name canary's Unix socket, which the egress
 *                      helper carries the allowed name canary to),
 *                      deny0/sink, tap0, the policy installed and read
 *                      back exactly, the denied canary seen live;
 *   (runsc run with --network=sandbox; the init's probe reports on a pipe)
 *   supnet_judge()     the probe's report against the policy: the allowed
 *                      canary answered with this generation's challenge,
 *                      the denied one did not, gVisor's own route table is
 *                      exactly the policy's, no IPv6; with host rules, the
 *                      four name canaries too (the allowed name answered,
 *                      the denied name NXDOMAIN, a direct connection to an
 *                      address no name resolved to refused, a ClientHello
 *                      naming the denied name on the allowed name's
 *                      address closed unanswered);
 *   supnet_witness_denied()  the probe's packets for the denied canary
 *                      arrived at the deny link's sink: gVisor asked there
 *                      for the dead-end next hop (positive proof, no wait);
 *   supnet_teardown_canary()  the name canary's socket removed; the canary link
 *                      set down and handed to the responder, which deletes it
 *                      and exits after READY (or, when it cannot be told, the
 *                      responder killed and the link deleted here).
 *
 * Every failure is one line in err (for FAILED).
 */
/* The steps of supnet_prepare(), timed for the start's report (supnet_step_name()). */
typedef enum SupNetStep {
        SUPNET_STEP_NAMESPACE,          /* the enforcement namespace */
        SUPNET_STEP_HELPER,             /* slirp4netns or lazaret-egress, until ready */
        SUPNET_STEP_ENTER,              /* the supervisor into the namespace, lo up */
        SUPNET_STEP_LINKS,              /* tap0, deny0 and sink, the canary namespace and its responder */
        SUPNET_STEP_LIVENESS,           /* the denied canary answers before the policy */
        SUPNET_STEP_POLICY,             /* the routes installed and read back, no IPv6 */
        SUPNET_STEP_WITNESS,            /* the deny link's witness */
        _SUPNET_STEP_MAX,
} SupNetStep;

const char *supnet_step_name(SupNetStep step);

typedef struct SupNet {
        int enforcement_fd;
        int canary_fd;
        int witness_fd;                 /* ARP frames arriving on sink, the deny link's far end */
        pid_t slirp_pid;                /* its pidfd is in the supervisor's Helpers */
        int slirp_exit_fd;              /* write end of --exit-fd: closing it ends slirp4netns */
        pid_t responder_pid;
        int responder_ctl;              /* the supervisor's end of the responder's word socket (RESPONDER_DELETE) */
        int port;
        char challenge[80];
        char canary_socket[108];        /* the name canary's Unix socket (sun_path); "" without host rules */
        unsigned long long netns_ino;
        NetPolicy *policy;
        char digest_hex[SHA256_HEX_LEN + 1];
        uint64_t step_usec[_SUPNET_STEP_MAX]; /* what each step of supnet_prepare() took, for the start's report */
} SupNet;

#define SUPNET_INIT { .enforcement_fd = -1, .canary_fd = -1, .witness_fd = -1, .slirp_exit_fd = -1, .responder_ctl = -1 }

typedef struct SupNetParams {
        const char *netns_path;         /* an empty file to bind the namespace onto */
        const char *slirp4netns;
        const char *api_socket;         /* slirp4netns --api-socket: the coordinator's path, for published ports */
        const char *egress;             /* lazaret-egress, started instead of slirp4netns when the policy has host rules */
        const char *policy_path;        /* canonical bytes, written by the coordinator */
        const char *policy_digest;      /* what the coordinator derived */
        const char *generation;         /* the container ID: binds the challenge */
        int canary_port;                /* the canaries listen there; the sandbox's init probes it */
#if ENABLE_TEST_HOOKS
        bool fault_deny_on_lo;          /* test hook: after the read-back, move deny routes to lo */
        bool fault_no_name_canary;      /* test hook: lazaret-egress without --canary-socket */
#endif
} SupNetParams;

int supnet_prepare(SupNet *n, const SupNetParams *p, Helpers *helpers, char **ret_error);
int supnet_judge(SupNet *n, const char *report, char **ret_error);
int supnet_witness_denied(SupNet *n, int timeout_ms, char **ret_error);
/* Whether the report's text buf[0..n) is complete: it has a whole line "end"
 * (what follows it is supnet_judge()'s to refuse). */
bool supnet_report_complete(const char *buf, size_t n);
int supnet_teardown_canary(SupNet *n, int *ret_responder_pidfd, char **ret_error);
/* The namespaces' fds and the canary's remains; the witness stays open. */
void supnet_done(SupNet *n);
/* Closing a packet socket waits for an RCU grace period (about 10 ms
 * here): the supervisor does it after READY. */
void supnet_close_witness(SupNet *n);
