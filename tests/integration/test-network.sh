#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The attested network (issue 10, spec section 4.5), in a real sandbox under
# the real user manager, inside the harness's network namespace (no way out):
#   - the attestation passes on a correct policy; status and the
#     NetworkReadiness property show the readiness fingerprint;
#   - an allow inside 10/8 (10.23.0.5) reaches that test host through
#     slirp4netns, while 10.99.0.5 stays unreachable; the public-range test
#     host 198.51.100.7 is reachable by default;
#   - /etc/resolv.conf inside names only 10.137.54.3, read-only; no IPv6;
#   - a route or address change inside is refused;
#   - slirp4netns killed mid-session fails the Domain and tells the session;
#   - a deny route gVisor does not import (LAZARET_TEST_NETWORK_FAULT=deny-on-lo
#     in the coordinator's environment: after Linux's read-back passed, the
#     deny routes move to lo) makes the in-gVisor check refuse to publish,
#     with the reason on the client and in systemctl --user status;
#   - a probe whose denied connection goes elsewhere is refused by the deny
#     path's witness (LAZARET_TEST_NETWORK_FAULT=denied-elsewhere).
# Traffic goes only to the canaries and the harness's test hosts (prepare-machine).
set -Eeuo pipefail
. "$(dirname -- "$0")/../harness/lib.sh"

lt_install --test-hooks
lt_domain_setup
command -v slirp4netns >/dev/null || lt_skip "slirp4netns is not installed"

cat >"$LT_CONFIG" <<JSON
{ "default_profile": "test",
  "network": { "allow": ["10.23.0.5/32"] },
  "profiles": { "test": { "image": "oci:$LT_IMAGE" } } }
JSON
LT_DOMAIN=$(cd "$LT_WS" && lazaretctl domain-id)

lt_cleanup_hook() {
        [[ -z ${watcher:-} ]] || kill "$watcher" 2>/dev/null || true
        systemctl --user unset-environment LAZARET_TEST_NETWORK_FAULT || true
}
lt_keeper_start "$HOME/net-keeper.out"
keeper=$LT_KEEPER

# --- the readiness fingerprint ---------------------------------------------------
json=$(cd "$LT_WS" && lazaretctl status --json)
fp=$(jq -r .NetworkReadiness.Fingerprint <<<"$json")
[[ $fp =~ ^[0-9a-f]{64}$ ]] || lt_fail "no network readiness fingerprint in status: $json"
lt_assert_eq "readiness names the Domain" "$LT_DOMAIN" "$(jq -r .NetworkReadiness.DomainId <<<"$json")"
lt_assert_eq "readiness names the generation" "$(jq -r .SandboxId <<<"$json")" "$(jq -r .NetworkReadiness.Generation <<<"$json")"
lt_assert_eq "readiness names the configuration" "$(jq -r .ConfigurationFingerprint <<<"$json")" \
        "$(jq -r .NetworkReadiness.ConfigurationFingerprint <<<"$json")"
[[ $(jq -r .NetworkReadiness.PolicyDigest <<<"$json") =~ ^[0-9a-f]{64}$ ]] || lt_fail "no policy digest: $json"
[[ $(jq -r .NetworkReadiness.HelperId <<<"$json") =~ ^slirp4netns:[0-9]+$ ]] || lt_fail "no helper ID: $json"
[[ $(jq -r .NetworkReadiness.Namespace <<<"$json") =~ ^net:\[[0-9]+\]$ ]] || lt_fail "no namespace identity: $json"
grep -q "Network: *$fp" <<<"$(cd "$LT_WS" && lazaretctl status)" || lt_fail "lazaretctl status does not show the fingerprint"
lt_log "ok: attested; fingerprint $fp"

# --- the canaries are gone after publication ----------------------------------------
# The supervisor lives in the enforcement namespace, inside a user namespace
# we own: we may look there. Before publication it set canary0 down (it
# carries nothing from then on) and handed it to the responder, which
# deletes it with its peer (15 to 20 ms of the kernel's RCU grace periods,
# no longer part of the start) and exits; the links left are then exactly
# the helper's tap, the deny link and its sink. Right after publication
# canary0 may still be there, but never up; within a second it is gone
# (spec section 4.5, step 6).
sup=$(pgrep -u "$(id -u)" -f "lazaret-supervisor .*--container $(jq -r .SandboxId <<<"$json")") ||
        lt_fail "no supervisor process for $(jq -r .SandboxId <<<"$json")"
port=$(tr '\0' '\n' </proc/"$sup"/cmdline | sed -n 's/^--canary-port=//p')
[[ $port =~ ^[0-9]+$ ]] || lt_fail "no --canary-port in the supervisor's arguments"
enforcement_links() { nsenter -t "$sup" -U -n --preserve-credentials ip -o link; }
first=$(enforcement_links)
if grep -q ': canary0[@:]' <<<"$first"; then
        grep ': canary0[@:]' <<<"$first" | grep -q '[<,]UP[,>]' && lt_fail "canary0 is up after publication: $first"
        lt_log "canary0 still there right after publication, down"
fi
deadline=$(( ${EPOCHREALTIME/./} + 1000000 ))
while :; do
        links=$(enforcement_links | awk -F': ' '{ print $2 }' | sed 's/@.*//' | sort | tr '\n' ' ')
        [[ $links == "deny0 lo sink tap0 " ]] && break
        (( ${EPOCHREALTIME/./} < deadline )) || break
        sleep 0.01
done
lt_assert_eq "links of the enforcement namespace within a second of publication" "deny0 lo sink tap0 " "$links"
out=$(lt_launch -- /bin/sh -c "nc -w 2 10.137.55.2 $port; nc -w 2 10.137.55.3 $port" 2>&1) || true
[[ $out != *"$(jq -r .SandboxId <<<"$json")"* ]] || lt_fail "a canary still answers its challenge after publication: $out"
lt_log "ok: canaries torn down (links: $links; inside: ${out:-no answer})"

# --- egress through the policy ---------------------------------------------------
# (busybox nc, not wget: this static wget crashes under gVisor)
fetch() { lt_launch -- /bin/sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 $1 8080 | tail -n 1"; }
lt_assert_eq "allowed 10.23.0.5" "test host 10.23.0.5" "$(fetch 10.23.0.5 2>&1)"
lt_assert_eq "public 198.51.100.7" "test host 198.51.100.7" "$(fetch 198.51.100.7 2>&1)"
# Denied: the sandbox runs (the marker after nc is printed) and nc fails;
# a launch that failed for another reason does not count.
set +e
out=$(lt_launch -- /bin/sh -c "printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 10.99.0.5 8080; echo NC-EXIT=\$?" 2>&1)
rc=$?
set -e
((rc == 0)) || lt_fail "the launch for the denied fetch failed (exit $rc): $out"
[[ $out =~ NC-EXIT=([0-9]+) ]] || lt_fail "the sandbox did not run the denied fetch: $out"
((BASH_REMATCH[1] != 0)) || lt_fail "nc connected to denied 10.99.0.5: $out"
[[ $out != *"test host"* ]] || lt_fail "denied 10.99.0.5 answered: $out"
lt_log "ok: 10.23.0.5 and 198.51.100.7 reachable, 10.99.0.5 not ($(tr '\n' ' ' <<<"$out"))"

# --- DNS, IPv6 --------------------------------------------------------------------
lt_assert_eq "resolv.conf nameservers" "nameserver 10.137.54.3" "$(lt_launch -- /bin/grep -v '^#' /etc/resolv.conf)"
set +e
out=$(lt_launch -- /bin/sh -c 'echo "nameserver 192.0.2.53" >/etc/resolv.conf' 2>&1)
rc=$?
set -e
((rc != 0)) || lt_fail "/etc/resolv.conf was writable inside"
lt_assert_eq "resolv.conf unchanged" "nameserver 10.137.54.3" "$(lt_launch -- /bin/grep -v '^#' /etc/resolv.conf)"
lt_assert_eq "IPv6 addresses inside" "" "$(lt_launch -- /bin/cat /proc/net/if_inet6)"
lt_assert_eq "IPv6 routes inside" "" "$(lt_launch -- /bin/cat /proc/net/ipv6_route)"
lt_log "ok: resolver 10.137.54.3 read-only; no IPv6"

# --- no network administration inside ----------------------------------------------
set +e
out=$(lt_launch -- /bin/ip route add 10.99.0.0/24 dev tap0 2>&1)
rc=$?
out2=$(lt_launch -- /bin/ip addr add 10.99.0.9/32 dev tap0 2>&1)
rc2=$?
set -e
# Refused for want of permission, not for any other error.
refused='(Permission denied|Operation not permitted)'
((rc != 0)) || lt_fail "a route was added inside: $out"
grep -Eq "$refused" <<<"$out" || lt_fail "the route change failed, but not as refused: $out"
((rc2 != 0)) || lt_fail "an address was added inside: $out2"
grep -Eq "$refused" <<<"$out2" || lt_fail "the address change failed, but not as refused: $out2"
routes=$(lt_launch -- /bin/ip route) || lt_fail "ip route failed inside: $routes"
grep -q 'dev tap0' <<<"$routes" || lt_fail "control: ip route inside does not list tap0's routes: $routes"
grep -q 10.99.0.0 <<<"$routes" && lt_fail "the route is there after all: $routes"
lt_log "ok: route and address changes refused ($out / $out2)"

# --- the helper dies: the Domain fails, the session is told -------------------------
helper=$(jq -r .NetworkReadiness.HelperId <<<"$json")
pid=$(pgrep -u "$(id -u)" -x slirp4netns | head -n 1)
[[ -n $pid ]] || lt_fail "no slirp4netns process of this user"
kill -KILL "$pid"
for _ in $(seq 1 100); do kill -0 "$keeper" 2>/dev/null || break; sleep 0.1; done
kill -0 "$keeper" 2>/dev/null && lt_fail "the session survived the network helper's death"
set +e
wait "$keeper"
set -e
grep -q "slirp4netns" "$HOME/net-keeper.out" || lt_fail "the session was not told why: $(cat "$HOME/net-keeper.out")"
lt_wait_inactive
grep -q "network readiness withdrawn" <<<"$(systemctl --user status "lazaret@$LT_DOMAIN.service" 2>&1)" ||
        grep -q "network readiness withdrawn" "$LT_LOGDIR/$LT_DOMAIN.log" || lt_fail "the failure does not name the helper"
lt_log "ok: helper $helper killed: $(grep -m1 slirp4netns "$HOME/net-keeper.out")"

# --- a deny route gVisor does not import: no publication -----------------------------
# The hook lets Linux install and read back the correct policy, then moves
# every deny0 route to lo: Linux still denies, this gVisor drops routes on lo.
# Only the comparison of gVisor's own route table can refuse that.
# A watcher records, while the launch runs, whether the Domain object ever
# appeared on the bus and what the unit showed (the Status: line lives only
# while the unit is loaded).
unit=lazaret@$LT_DOMAIN.service
watch_dir=$HOME/net-fault-watch
rm -rf "$watch_dir"
mkdir -p "$watch_dir"
(
        while [[ ! -e $watch_dir/stop ]]; do
                busctl --user --timeout=2 introspect "org.lazaret.Domain.d$LT_DOMAIN" /org/lazaret/Domain \
                        org.lazaret.Domain1 >/dev/null 2>&1 && touch "$watch_dir/published"
                st=$(systemctl --user status "$unit" 2>&1) || true
                [[ $st == *"Status: \"failed:"* ]] && printf '%s\n' "$st" >"$watch_dir/status"
                txt=$(systemctl --user show -p StatusText --value "$unit" 2>&1) || true
                [[ $txt == failed:* ]] && printf '%s\n' "$txt" >"$watch_dir/statustext"
                sleep 0.05
        done
) &
watcher=$!
lt_launch_with_fault deny-on-lo
sleep 0.3
touch "$watch_dir/stop"
wait "$watcher" || true
((rc != 0)) || lt_fail "the Domain was published with a policy gVisor did not import: $out"
[[ $out != *published* ]] || lt_fail "the command ran: $out"
# The in-gVisor comparison, not Linux's read-back, refused: it names the route.
want='network attestation failed: gVisor has no route for [0-9./]+ \(the policy denies it via 10\.137\.55\.10 dev deny0\)'
grep -Eq "$want" <<<"$out" || lt_fail "the client was not told the in-gVisor check's reason: $out"
grep -q "the installed network policy differs" <<<"$out" && lt_fail "Linux's read-back refused, not gVisor's: $out"
[[ ! -e $watch_dir/published ]] || lt_fail "the Domain object appeared on the bus despite the failed attestation"
state=$(cd "$LT_WS" && lazaretctl status --json 2>/dev/null | jq -r .State) || true
[[ $state != running ]] || lt_fail "the Domain is running after the failed attestation"
# systemctl --user: the coordinator's STATUS=failed: <reason>.
if [[ -e $watch_dir/status ]]; then
        grep -Eq "Status: \"failed: .*$want" "$watch_dir/status" ||
                lt_fail "systemctl --user status shows another reason: $(cat "$watch_dir/status")"
        lt_log "ok: systemctl --user status: $(grep -m1 'Status:' "$watch_dir/status")"
else
        lt_fail "systemctl --user status never showed the failure (StatusText: $(cat "$watch_dir/statustext" 2>/dev/null))"
fi
grep -Eq "$want" "$LT_LOGDIR/$LT_DOMAIN.log" || lt_fail "the coordinator's log does not show the attestation failure"
lt_log "ok: refused to publish: $(grep -Eo "$want.*" <<<"$out" | head -n 1)"

# The deny path's witness: with the route table intact, the probe's
# "denied" connection sent to the helper's gateway instead never reaches the
# deny link, and the supervisor refuses for that reason alone.
lt_launch_with_fault denied-elsewhere
((rc != 0)) || lt_fail "the Domain was published though the denied probe never reached the deny link: $out"
[[ $out != *published* ]] || lt_fail "the command ran: $out"
want='network attestation failed: the probe.s connection to the denied canary 10\.137\.55\.3 never reached the deny link'
grep -Eq "$want" <<<"$out" || lt_fail "the client was not told the witness's reason: $out"
grep -Eq "$want" "$LT_LOGDIR/$LT_DOMAIN.log" || lt_fail "the coordinator's log does not show the witness's refusal"
lt_log "ok: refused to publish: $(grep -Eo "$want.*" <<<"$out" | head -n 1)"

# And a correct policy publishes again.
lt_assert_eq "after the fault" ok "$(lt_launch -- /bin/echo ok)"
lt_log "PASS"
