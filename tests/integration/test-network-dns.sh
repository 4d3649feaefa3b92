#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# DNS goes to the helper (issue 10, spec section 4.5), in a real sandbox under
# the real user manager, inside the harness's network namespace (no way out).
# prepare-machine runs two dnsmasq servers in the test hosts' namespace, each
# answering probe.lazaret.test = 198.51.100.7 and logging every query with its
# source address: 198.51.100.53, the resolver in the user manager's
# /etc/resolv.conf (so the one slirp4netns forwards to), and a canary on
# 10.99.0.5, a private address the default policy denies. This test shows:
#   - the user manager's services see only the test resolver (so the queries
#     below cannot go to the machine's own);
#   - the canary resolver answers when asked directly from the harness
#     namespace (so its silence later means something);
#   - inside, busybox nslookup of probe.lazaret.test, asking the resolver of
#     /etc/resolv.conf, gets 198.51.100.7 from 10.137.54.3 (slirp4netns's
#     forwarder), and the query arrives at 198.51.100.53 from the harness
#     namespace's side of the test hosts' veth (192.0.2.1: slirp4netns's
#     socket), never from the sandbox's 10.137.54.100;
#   - busybox nc, given the name, fetches the test host's page: the C
#     library's resolver inside works through the helper too;
#   - a query from inside straight to the canary resolver fails, and the
#     canary logs nothing.
# Traffic goes only to 198.51.100.53, 10.99.0.5 (denied from inside) and the
# test host 198.51.100.7.
set -Eeuo pipefail
. "$(dirname -- "$0")/../harness/lib.sh"

lt_install
[[ ${LAZARET_TEST_INSTALL:-} != runtime ]] ||
        lt_skip "desktop session: the harness's DNS test hosts exist only on a machine prepared as root"
command -v slirp4netns >/dev/null || lt_skip "slirp4netns is not installed"
command -v busybox >/dev/null || lt_fail "busybox is missing on the host (Debian package busybox-static)"
lt_domain_setup

NAME=probe.lazaret.test
ANSWER=198.51.100.7
RESOLVER=198.51.100.53
CANARY=10.99.0.5
HELPER_DNS=10.137.54.3
# The harness namespace's address toward the test hosts (prepare-machine).
HARNESS_SIDE=192.0.2.1
SANDBOX_ADDR=10.137.54.100
dns_log=/run/$USER/dns/$RESOLVER.log
canary_log=/run/$USER/dns/$CANARY.log
[[ -r $dns_log && -r $canary_log ]] ||
        lt_fail "the harness's DNS query logs $dns_log and $canary_log are not readable (tests/harness/prepare-machine)"

# log_since FILE OFFSET: what FILE gained past OFFSET bytes.
log_since() { tail -c "+$(($2 + 1))" -- "$1"; }
log_size() { stat -c %s -- "$1"; }
# wait_logged FILE OFFSET PATTERN: dnsmasq writes its log line after
# answering; wait a little for it.
wait_logged() {
        for _ in $(seq 1 50); do
                log_since "$1" "$2" | grep -Eq "$3" && return 0
                sleep 0.1
        done
        return 1
}

# --- the manager's services ask the test resolver ---------------------------------
lt_assert_eq "resolver seen by a service of the user manager" "nameserver $RESOLVER" \
        "$(systemd-run --user --pipe --wait --quiet grep '^nameserver' /etc/resolv.conf)"

# --- the canary resolver is alive ---------------------------------------------------
off=$(log_size "$canary_log")
out=$(busybox nslookup "$NAME" "$CANARY" 2>&1) || lt_fail "the canary resolver $CANARY does not answer from the harness namespace: $out"
grep -Eq "^Address:[[:space:]]*$ANSWER\$" <<<"$out" || lt_fail "the canary resolver gave no $ANSWER for $NAME: $out"
wait_logged "$canary_log" "$off" "query\[A\] $NAME from $HARNESS_SIDE\$" ||
        lt_fail "the canary resolver did not log the direct query: $(log_since "$canary_log" "$off")"
lt_log "ok: canary resolver $CANARY answers and logs (asked from the harness namespace)"

lt_keeper_start

# --- inside: the resolver of /etc/resolv.conf is the helper ---------------------------
off=$(log_size "$dns_log")
coff=$(log_size "$canary_log")
out=$(lt_launch -- /bin/nslookup "$NAME" 2>&1) || lt_fail "nslookup $NAME inside failed: $out"
grep -Eq "^Server:[[:space:]]*$HELPER_DNS\$" <<<"$out" || lt_fail "nslookup inside did not ask $HELPER_DNS: $out"
grep -Eq "^Address:[[:space:]]*$ANSWER\$" <<<"$out" || lt_fail "nslookup inside did not get $ANSWER: $out"
lt_log "ok: inside, $NAME = $ANSWER from $HELPER_DNS"
wait_logged "$dns_log" "$off" "query\[A\] $NAME from $HARNESS_SIDE\$" ||
        lt_fail "the test resolver $RESOLVER did not log the query from $HARNESS_SIDE: $(log_since "$dns_log" "$off")"
got=$(log_since "$dns_log" "$off")
from=$(grep -Eo ' from [0-9a-f.:]+$' <<<"$got" | sort -u | tr -d '\n')
lt_assert_eq "sources of the queries at $RESOLVER" " from $HARNESS_SIDE" "$from"
grep -q "$SANDBOX_ADDR" <<<"$got" && lt_fail "the sandbox's own address reached the resolver: $got"
lt_log "ok: $RESOLVER logged: $(grep -m1 "query\[A\] $NAME" <<<"$got")"

# --- inside: a program's own resolver (busybox nc, the C library) -------------------
off=$(log_size "$dns_log")
out=$(lt_launch -- /bin/sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 $NAME 8080 | tail -n 1" 2>&1) || true
lt_assert_eq "HTTP by name" "test host $ANSWER" "$out"
wait_logged "$dns_log" "$off" "query\[A\] $NAME from $HARNESS_SIDE\$" ||
        lt_fail "nc's lookup did not reach $RESOLVER: $(log_since "$dns_log" "$off")"
lt_log "ok: nc resolved $NAME through the helper and fetched the page"

# --- inside: the denied canary resolver stays unreached ------------------------------
set +e
out=$(lt_launch -- /bin/nslookup "$NAME" "$CANARY" 2>&1)
rc=$?
set -e
((rc != 0)) || lt_fail "nslookup against the denied resolver $CANARY succeeded inside: $out"
grep -Eq "^Address:[[:space:]]*$ANSWER\$" <<<"$out" && lt_fail "the denied resolver $CANARY answered inside: $out"
# Anything the canary got would be logged by now (it logged the direct query
# above within the same wait); give it the same time once more.
sleep 1
got=$(log_since "$canary_log" "$coff")
lt_assert_eq "queries at the denied resolver $CANARY during the sandbox's run" "" "$got"
lt_log "ok: the denied resolver $CANARY was not reached from inside ($(tail -n 1 <<<"$out"))"
lt_log "PASS"
