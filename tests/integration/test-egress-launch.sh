#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A profile with host rules (allow_hosts, spec 4.5 "Egress by name") runs
# with lazaret-egress in slirp4netns' place, in a real sandbox under the
# real user manager, inside the harness's network namespace (no way out):
#   - the Domain starts: the derived policy (the synthetic pool via the
#     gateway, the default route denied) is installed, read back and
#     attested from inside as every policy is;
#   - the network helper is lazaret-egress (the Domain's bus property);
#   - inside, probe.lazaret.test resolves through the helper to a synthetic
#     address of 10.137.64.0/18 (the harness's resolver, asked by the
#     helper, knows it as the test host 198.51.100.7), and busybox nc fetches
#     the test host's page by that name on port 8080 (the rule
#     probe.lazaret.test:8080);
#   - the test host's own address, 198.51.100.7:8080, is not reached by
#     address, and a name no rule allows does not resolve;
#   - the attestation's name canaries ran before publication: the helper
#     refused the denied name, the direct connection to an address no name
#     resolved to and the ClientHello naming the denied name on the allowed
#     name's address (its log, in the coordinator's);
#   - a name canary that fails stops the start with one line naming it
#     (LAZARET_TEST_NETWORK_FAULT=no-name-canary: the helper is started
#     without the canary's socket, so it refuses the allowed name canary;
#     name-bound-elsewhere: the probe is told the allowed name is bound to
#     10.137.64.2, so it finds the name resolved to another address).
# Traffic goes only to the harness's resolver (from the helper), the test
# host 198.51.100.7, and the canaries (names under .invalid, carried to a
# Unix socket, and the helper's own pool).
set -Eeuo pipefail
. "$(dirname -- "$0")/../harness/lib.sh"

lt_install --test-hooks
[[ ${LAZARET_TEST_INSTALL:-} != runtime ]] ||
        lt_skip "desktop session: the harness's DNS test hosts exist only on a machine prepared as root"
lt_domain_setup

NAME=probe.lazaret.test
HOST=198.51.100.7
POOL_RE='^10\.137\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\.[0-9]+$'
cat >"$LT_CONFIG" <<JSON
{ "default_profile": "test",
  "profiles": { "test": { "image": "oci:$LT_IMAGE", "allow_hosts": ["$NAME:8080"] } } }
JSON
(cd "$LT_WS" && lazaretctl config check >/dev/null) || lt_fail "config check refused allow_hosts"
LT_DOMAIN=$(cd "$LT_WS" && lazaretctl domain-id)
lt_cleanup_hook() { systemctl --user unset-environment LAZARET_TEST_NETWORK_FAULT || true; }

lt_keeper_start
helper=$(cd "$LT_WS" && lazaretctl status --json | jq -r .NetworkReadiness.HelperId) || true
[[ $helper == lazaret-egress:* ]] || lt_fail "the Domain's network helper is '${helper:-?}', not lazaret-egress"
pgrep -u "$USER" -x lazaret-egress >/dev/null || lt_fail "no lazaret-egress process runs ($helper)"
lt_log "ok: the Domain runs, its network helper is lazaret-egress"

# The name canaries, as the helper refused them during the attestation.
for want in 'denied name "denied.canary.lazaret.invalid"' \
        'connection to 10.137.127.254:443 refused: no allowed name resolved to that address' \
        'connection to allowed.canary.lazaret.invalid:443 refused: its ClientHello names "denied.canary.lazaret.invalid"'; do
        grep -qF "$want" "$LT_LOGDIR/$LT_DOMAIN.log" ||
                lt_fail "the egress helper logged no '$want' during the attestation"
done
lt_log "ok: the attestation's name canaries were refused by the helper before publication"

out=$(lt_launch -- /bin/nslookup "$NAME" 2>&1) || lt_fail "nslookup $NAME inside failed: $out"
addr=$(sed -n 's/^Address:[[:space:]]*\([0-9.]*\)$/\1/p' <<<"$out" | grep -v '^10\.137\.54\.3$' | head -n1)
[[ $addr =~ $POOL_RE ]] || lt_fail "$NAME resolved inside to '$addr', not a synthetic address: $out"
lt_log "ok: inside, $NAME = $addr (synthetic)"

out=$(lt_launch -- /bin/sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 $NAME 8080 | tail -n 1" 2>&1) || true
lt_assert_eq "HTTP by name on the rule's port 8080" "test host $HOST" "$out"

out=$(lt_launch -- /bin/sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 $HOST 8080 | tail -n 1" 2>&1) || true
[[ $out != "test host $HOST" ]] || lt_fail "the test host was reached by its address $HOST: $out"
lt_log "ok: $HOST:8080 by address not reached (${out:-no answer})"

set +e
out=$(lt_launch -- /bin/nslookup other.lazaret.test 2>&1)
rc=$?
set -e
((rc != 0)) || lt_fail "a name no rule allows resolved inside: $out"
lt_log "ok: other.lazaret.test does not resolve inside"

# --- a failed name canary: no publication, one line naming it --------------------------
kill "$LT_KEEPER" 2>/dev/null || true
refused_start() {   # FAULT WANT: a start under the test fault FAULT fails with the line WANT
        local out rc
        (cd "$LT_WS" && lazaretctl stop >/dev/null 2>&1) || true
        lt_wait_inactive
        lt_launch_with_fault "$1"
        ((rc != 0)) || lt_fail "the Domain was published under the fault $1: $out"
        [[ $out != *published* ]] || lt_fail "the command ran under the fault $1: $out"
        grep -qF "$2" <<<"$out" || lt_fail "the client was not told which canary failed ($1): $out"
        lt_log "ok: $1: refused to publish: $2"
}
# The helper without the canary's socket refuses the allowed name canary.
refused_start no-name-canary 'network attestation failed: the allowed name canary allowed.canary.lazaret.invalid: the resolver answered rcode 3 without an address'
# The probe told another address than the one the helper bound at its start.
refused_start name-bound-elsewhere 'network attestation failed: the allowed name canary allowed.canary.lazaret.invalid: it resolved to 10.137.64.1, not to 10.137.64.2'

# And without a fault the Domain starts again (the faults left nothing behind).
(cd "$LT_WS" && lazaretctl stop >/dev/null 2>&1) || true
lt_wait_inactive
out=$(lt_launch -- /bin/echo published 2>&1) || lt_fail "the Domain did not start after the faults: $out"
[[ $out == *published* ]] || lt_fail "the command did not run after the faults: $out"
lt_log "ok: published again without a fault"
lt_log "PASS"
