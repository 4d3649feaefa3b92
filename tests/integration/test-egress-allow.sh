#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-egress-allow: a denied name says why and can be allowed (issue 35
# item 4, spec 4.5 "A denied name"), in a real sandbox whose profile has
# host rules, inside the harness's network namespace (no way out; the only
# name its resolver knows is probe.lazaret.test = 198.51.100.7, whose
# busybox httpd listens on 8080). The profile allows another name only, so
# probe.lazaret.test is refused until the developer allows it:
#   1. asked inside on a terminal (a tmux pane): the line on the terminal,
#      the EgressDenied signal, the desktop notification (a test server),
#      the audit event, `lazaretctl egress denied`, and the prompt;
#   2. allowed from the prompt (once), the name resolves inside at once;
#      its fetch on port 8080 is refused next (a port no rule allows), the
#      prompt asks for NAME:8080, 's' makes it "this Domain's life", and the
#      fetch succeeds;
#   3. after a restart the Domain-life allows are gone; `lazaretctl egress
#      allow --domain` brings the fetch back without a restart;
#      `lazaretctl egress forget` ends it at once, without a restart (the
#      fetch fails), and a second forget is refused;
#   4. `--keep`: kept in the Domain Store, in force after a restart before
#      anything is asked; `forget` ends it at once in the running sandbox
#      and at the next start;
#   5. the sandbox cannot allow: no user bus and no API socket inside; a
#      DNS question with a control byte in its name is refused (FORMERR),
#      logged escaped, and never becomes an event; a name with '_' is
#      refused and logged only.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
[[ ${LAZARET_TEST_INSTALL:-} != runtime ]] ||
        lt_skip "desktop session: the harness's DNS test hosts exist only on a machine prepared as root"
lt_domain_setup
command -v tmux >/dev/null || lt_fail "tmux is not installed (.ci/install-deps installs it)"

NAME=probe.lazaret.test
HOST=198.51.100.7
POOL_RE='10\.137\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\.[0-9]+'
H=$HOME/egress-allow
rm -rf "$H"
mkdir -p "$H"
cat >"$LT_CONFIG" <<JSON
{ "default_profile": "test",
  "profiles": { "test": { "image": "oci:$LT_IMAGE", "allow_hosts": ["other.lazaret.test"] } } }
JSON

T="tmux -L lt-$$"
T0=$(date +%s%6N)
# A rule kept by an earlier run that failed half-way would allow the name from the start.
(cd "$LT_WS" && lazaretctl egress forget "$NAME:8080" >/dev/null 2>&1) || true
MON= NSP=
lt_cleanup_hook() {
        $T kill-server 2>/dev/null || true
        [[ -z $MON ]] || kill "$MON" 2>/dev/null || true
        [[ -z $NSP ]] || kill "$NSP" 2>/dev/null || true
        (cd "$LT_WS" && lazaretctl egress forget "$NAME:8080" >/dev/null 2>&1) || true
}
trap 'lt_domain_cleanup "$?"' EXIT

ctl() { (cd "$LT_WS" && lazaretctl "$@"); }
# audited EVENT BY DETAIL: an audit event of this run (the store outlives runs).
audited() {
        ctl escalations history --json |
                jq -e --argjson t0 "$T0" --arg e "$1" --arg b "$2" --arg d "$3" \
                        'any(.[]; .TimeUSec > $t0 and .Event == $e and (.By // "") == $b and .Detail == $d)' >/dev/null
}
# log_since OFFSET: the Domain's log from byte OFFSET on (it outlives runs and restarts).
log_since() { tail -c +$(($1 + 1)) "$LT_LOGDIR/$LT_DOMAIN.log" 2>/dev/null; }
log_size() { stat -c %s "$LT_LOGDIR/$LT_DOMAIN.log" 2>/dev/null || echo 0; }
# fetch: the test host's page by name on 8080, in a session of its own; prints the page or nothing.
# (busybox nc, as test-egress-launch: the static busybox's wget crashes resolving a name under gVisor.)
GET="printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 $NAME 8080 | tail -n 1"
fetch() { lt_launch -- /bin/sh -c "$GET" 2>/dev/null || true; }
# wait_history TEXT: until the pane or its scrollback shows TEXT (a line above a prompt scrolls off
# the top of the screen when the prompt is drawn at its bottom). A command's end is marked by an
# echo typed as X""Y=$? and shown as XY=STATUS, so that the typed command line never matches.
wait_history() {
        for _ in $(seq 1 150); do
                $T capture-pane -t t:0 -p -S -2000 | grep -qF -- "$1" && return 0
                sleep 0.1
        done
        $T capture-pane -t t:0 -p -S -2000 >&2
        lt_fail "the terminal never showed '$1'"
}
# egress_key: the approve key of the denied-name prompt on the pane.
egress_key() { lt_screen | sed -n 's/.*<- press \(.\) to allow it.*/\1/p' | tail -n1; }

# A desktop notification server of the test's own on the user bus (as test-escalation's).
ns=$HOME/lt-notify-server
cc -o "$ns" "$LAZARET_SOURCE_ROOT/tests/integration/notify-server.c" $(pkg-config --cflags --libs libsystemd) ||
        lt_fail "cannot build the test notification server"
rm -f "$H/notify.log" "$H/notify.in"
mkfifo "$H/notify.in"
"$ns" "$H/notify.log" <"$H/notify.in" &
NSP=$!
exec 7>"$H/notify.in"
for _ in $(seq 1 50); do grep -q '^ready' "$H/notify.log" 2>/dev/null && break; sleep 0.1; done
grep -q '^ready' "$H/notify.log" || lt_fail "the test notification server did not start"

busctl --user monitor --match "type='signal',interface='org.lazaret.Domain1',member='EgressDenied'" >"$H/signals" 2>&1 &
MON=$!

# --- 1. refused inside, on a terminal ------------------------------------------------
$T new-session -d -s t -x 200 -y 40 "cd '$LT_WS' && lazaretctl launch; echo LAUNCH-EXIT=\$?; sleep 60"
lt_wait_screen ':/workspace#'
helper=$(ctl status --json | jq -r .NetworkReadiness.HelperId) || true
[[ $helper == lazaret-egress:* ]] || lt_fail "the Domain's network helper is '${helper:-?}', not lazaret-egress"

$T send-keys -t t:0 "nslookup $NAME; echo N\"\"S1=\$?" Enter
wait_history "[lazaret] Refused a DNS question for $NAME: no host rule allows it"
lt_wait_screen "<- press "
s=$(lt_screen)
grep -qF "[lazaret] The sandbox was refused a host no rule allows" <<<"$s" || { echo "$s" >&2; lt_fail "no prompt title"; }
grep -qE "Host: +$NAME +<- press . to allow it once" <<<"$s" || { echo "$s" >&2; lt_fail "the prompt's Host line"; }
lt_log "ok: the line and the prompt on the terminal"

for _ in $(seq 1 50); do grep -qF "\"$NAME\"" "$H/signals" && break; sleep 0.1; done
grep -qF "\"$NAME\"" "$H/signals" || lt_fail "no EgressDenied signal for $NAME: $(cat "$H/signals")"
grep -qF '"dns"' "$H/signals" || lt_fail "the signal does not say dns: $(cat "$H/signals")"
lt_log "ok: EgressDenied on the bus"
for _ in $(seq 1 50); do grep -q "^notify .*$NAME" "$H/notify.log" && break; sleep 0.1; done
line=$(grep "^notify .*$NAME" "$H/notify.log" | head -n1) || true
[[ -n $line ]] || lt_fail "no notification for $NAME: $(cat "$H/notify.log")"
lt_assert_eq "the notification's actions (none)" "" "$(cut -f4 <<<"$line")"
lt_log "ok: a notification without actions"
out=$(ctl egress denied --json)
jq -e --arg n "$NAME" 'any(.[]; .rule == $n and .kind == "dns" and .count >= 1)' <<<"$out" >/dev/null ||
        lt_fail "egress denied does not list $NAME: $out"
audited egress-denied "" "$NAME" || lt_fail "no egress-denied audit event: $(ctl escalations history)"
lt_log "ok: listed by lazaretctl egress denied, audited"

# --- 2. allowed from the prompt -------------------------------------------------------
k=$(egress_key)
[[ -n $k ]] || { lt_screen >&2; lt_fail "no approve key on the prompt"; }
lt_press "$k"
lt_wait_screen "[lazaret] Allowed $NAME (once)."
wait_history "NS1="
$T send-keys -t t:0 "clear; nslookup $NAME; echo N\"\"S2=\$?" Enter
wait_history "NS2="
lt_screen | grep -qE "Address:? +(1: +)?$POOL_RE" || { lt_screen >&2; lt_fail "$NAME did not resolve to a synthetic address"; }
lt_log "ok: allowed once from the prompt, $NAME resolves inside"

$T send-keys -t t:0 "clear; $GET; echo W\"\"G1=\$?" Enter
wait_history "[lazaret] Refused a connection to port 8080 for $NAME:8080"
lt_wait_screen "<- press "
lt_press s
lt_wait_screen "to allow it for this Domain's life"
k=$(egress_key)
lt_press "$k"
lt_wait_screen "[lazaret] Allowed $NAME:8080 (domain)."
wait_history "WG1="
$T send-keys -t t:0 "clear; $GET; echo W\"\"G2=\$?" Enter
wait_history "WG2="
lt_screen | grep -qF "test host $HOST" || { lt_screen >&2; lt_fail "the fetch after the allow from the prompt failed"; }
audited egress-allowed terminal "$NAME:8080" || lt_fail "no egress-allowed audit event by terminal: $(ctl escalations history)"
lt_log "ok: $NAME:8080 allowed from the prompt for the Domain's life: fetched, audited"

# --- 3. a restart forgets; lazaretctl allows for the Domain's life -------------------------
$T send-keys -t t:0 "exit" Enter
lt_wait_screen "LAUNCH-EXIT="
ctl stop >/dev/null
lt_keeper_start
[[ -z $(fetch) ]] || lt_fail "$NAME was reached after a restart without an allow"
out=$(ctl egress allow "$NAME:8080" --domain) || lt_fail "lazaretctl egress allow --domain failed: $out"
lt_assert_eq "fetched after lazaretctl egress allow --domain" "test host $HOST" "$(fetch)"
lt_log "ok: a restart forgot the Domain-life allow; lazaretctl egress allow --domain allowed it again, no restart"
# Forgetting ends a Domain-life allow in the running helper, at once.
out=$(ctl egress forget "$NAME:8080") || lt_fail "lazaretctl egress forget of a Domain-life allow failed: $out"
[[ $out == *"no longer allowed in the running sandbox"* ]] || lt_fail "egress forget said: $out"
[[ -z $(fetch) ]] || lt_fail "$NAME:8080 was reached after its Domain-life allow was forgotten"
audited egress-forgotten bus "$NAME:8080" || lt_fail "no egress-forgotten audit event: $(ctl escalations history)"
if out=$(ctl egress forget "$NAME:8080" 2>&1); then lt_fail "a second forget of $NAME:8080 succeeded: $out"; fi
[[ $out == *"neither kept nor allowed"* ]] || lt_fail "the second forget said: $out"
lt_log "ok: forget ended the Domain-life allow in the running sandbox; a second forget is refused"

# --- 4. kept ------------------------------------------------------------------------
ctl egress allow "$NAME:8080" --keep >/dev/null || lt_fail "lazaretctl egress allow --keep failed"
lt_assert_eq "kept rules" "$NAME:8080" "$(ctl egress kept)"
audited egress-allowed bus "$NAME:8080" || lt_fail "no egress-allowed audit event by bus"
ctl stop >/dev/null
off=$(log_size)
lt_keeper_start
lt_assert_eq "fetched after a restart with the rule kept" "test host $HOST" "$(fetch)"
log_since "$off" | grep -q "Applying 1 kept egress rules" || lt_fail "the kept rule was not applied at start"
ctl egress forget "$NAME:8080" >/dev/null || lt_fail "lazaretctl egress forget failed"
lt_assert_eq "kept rules after forget" "Domain $LT_DOMAIN keeps no allowed name." "$(ctl egress kept)"
[[ -z $(fetch) ]] || lt_fail "$NAME was reached after its kept rule was forgotten, without a restart"
ctl stop >/dev/null
lt_keeper_start
[[ -z $(fetch) ]] || lt_fail "$NAME was reached after its kept rule was forgotten and the Domain restarted"
lt_log "ok: kept across a restart; forgotten at once in the running sandbox and at the next start"

# --- 5. the sandbox cannot allow ------------------------------------------------------------
api=$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN
out=$(lt_launch -- /bin/sh -c "ls -d /run/user/*/bus '$api' $XDG_RUNTIME_DIR/bus 2>/dev/null; echo done")
lt_assert_eq "the user bus and the helper's socket inside" "done" "$out"
# A name with ESC in a label, over DNS over TCP (busybox has no UDP client): FORMERR, logged escaped.
off=$(log_size)
lt_launch -- /bin/sh -c \
        "printf '\\000\\042\\022\\064\\001\\000\\000\\001\\000\\000\\000\\000\\000\\000\\003a\\033b\\007lazaret\\004test\\000\\000\\001\\000\\001' | timeout 5 nc 10.137.54.3 53 >/dev/null" || true
lt_launch -- /bin/nslookup _x.lazaret.test >/dev/null 2>&1 || true
for _ in $(seq 1 50); do log_since "$off" | grep -q "malformed DNS question refused" && break; sleep 0.1; done
log_since "$off" | grep "malformed DNS question refused" | grep -qF '\x1b' ||
        lt_fail "the malformed question was not logged with its byte escaped: $(log_since "$off" | grep -a 'malformed')"
! log_since "$off" | grep -q $'\e' || lt_fail "a raw ESC reached the Domain's log"
log_since "$off" | grep -qF 'denied name "_x.lazaret.test"' || lt_fail "the name with '_' was not logged"
sleep 1
! grep -qE '_x\.lazaret|a.b\.lazaret' "$H/signals" || lt_fail "a name no event may carry was signalled: $(cat "$H/signals")"
out=$(ctl egress denied --json)
lt_assert_eq "denials after the malformed names" "[]" "$(jq -c '[.[] | select(.name != "'$NAME'")]' <<<"$out")"
lt_log "ok: the sandbox has no way to allow; malformed names refused, logged escaped, never events"
lt_log "PASS"
