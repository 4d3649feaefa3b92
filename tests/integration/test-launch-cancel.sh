#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-launch-cancel: Ctrl-C (and SIGTERM) while `lazaretctl launch` waits
# for a cold Domain cancels the launch at once: one line saying so, exit
# status 130 (143), the terminal as it was, no session. What stays is what a
# finished launch leaves too (Domain record, launch request, the listening
# socket unit). The coordinator that the cancelled launch activated still
# comes up, finds no session and stops after its idle timeout: no service or
# sandbox scope stays. A normal launch works afterwards.
#
# The cold start is held deterministically: a drop-in for this Domain's
# service only adds an ExecStartPre= that waits until the test releases it,
# so the client is surely waiting for the activation answer when the
# signal comes.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
command -v tmux >/dev/null || lt_fail "tmux is not installed (.ci/install-deps installs it)"

T="tmux -L lt-$$"
UNIT=lazaret@$LT_DOMAIN.service
SCOPE=lazaret-$LT_DOMAIN-sandbox.scope
GATE=$HOME/lt-cancel-gate
DROPIN=$LT_UNITDIR/$UNIT.d
bg_pid=

cleanup() {
        local rc=$?
        [[ -n $bg_pid ]] && kill -KILL "$bg_pid" 2>/dev/null
        $T kill-server 2>/dev/null || true
        touch "$GATE"
        if [[ -d $DROPIN ]]; then
                rm -rf -- "$DROPIN"
                systemctl --user daemon-reload || true
        fi
        lt_domain_cleanup "$rc"
}
trap cleanup EXIT

screen() { $T capture-pane -t t -p; }
# wait_for TEXT [TENTHS]: bounded wait (default 10 s) until the pane shows TEXT.
wait_for() {
        for _ in $(seq 1 "${2:-100}"); do
                screen | grep -qF -- "$1" && return 0
                sleep 0.1
        done
        screen >&2
        lt_fail "the screen never showed '$1'"
}
unit_state() { systemctl --user is-active "$1" 2>/dev/null || true; }
# wait_state UNIT SECONDS STATE...: bounded wait until UNIT is in one of STATEs.
wait_state() {
        local unit=$1 secs=$2 state
        shift 2
        for _ in $(seq 1 $((secs * 10))); do
                state=$(unit_state "$unit")
                for want; do [[ $state == "$want" ]] && return 0; done
                sleep 0.1
        done
        lt_fail "$unit still '$state' after $secs s (wanted: $*)"
}
ms() { echo $(($(date +%s%N) / 1000000)); }

DATA_ROOT=$(cd "$LT_WS" && lazaretctl config check --json | jq -r .data_root)
REQUEST=$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN.launch
RECORD=$DATA_ROOT/domains/$LT_DOMAIN/domain.json

systemctl --user reset-failed "$UNIT" 2>/dev/null || true
lt_assert_eq "state of $UNIT before the test" inactive "$(unit_state "$UNIT")"
rm -f -- "$GATE" "$REQUEST"
mkdir -p "$DROPIN"
printf '[Service]\nExecStartPre=/bin/sh -c "while [ ! -e %s ]; do sleep 0.1; done"\n' "$GATE" >"$DROPIN/50-test-gate.conf"
systemctl --user daemon-reload

# --- 1. Ctrl-C while the Domain is starting ------------------------------------

$T new-session -d -s t -x 100 -y 30 "bash --norc --noprofile"
# (The typed command shows "LAUNCH\-EXIT": only the output matches "LAUNCH-EXIT=".)
$T send-keys -t t "cd '$LT_WS'; stty -g > '$HOME/stty.before'; lazaretctl launch; echo LAUNCH\-EXIT=\$?" Enter
# The client's connection activated the service, which waits at the gate.
wait_state "$UNIT" 10 activating
sleep 0.5
grep -q LAUNCH-EXIT <<<"$(screen)" && lt_fail "launch ended before the Domain was up: $(screen)"

t0=$(ms)
$T send-keys -t t C-c
wait_for 'LAUNCH-EXIT=' 30
elapsed=$(($(ms) - t0))
((elapsed < 3000)) || lt_fail "the cancelled launch took ${elapsed} ms to exit"
lt_log "ok: launch exited ${elapsed} ms after Ctrl-C"
wait_for 'LAUNCH-EXIT=130'
wait_for "Launch cancelled by SIGINT: no session was opened in Domain $LT_DOMAIN."
lt_assert_eq "lines of the cancel message" 1 "$(screen | grep -c 'Launch cancelled')"

# The terminal is usable and has its modes.
$T send-keys -t t "stty -g > '$HOME/stty.after'; echo TERMINAL\-\$((6*7))" Enter
wait_for 'TERMINAL-42'
lt_assert_eq "terminal modes after the cancelled launch" "$(cat "$HOME/stty.before")" "$(cat "$HOME/stty.after")"

# What a finished launch leaves, and nothing more: no session, no bus name.
[[ -f $RECORD ]] || lt_fail "the Domain record $RECORD is missing"
[[ -f $REQUEST ]] || lt_fail "the launch request $REQUEST is missing"
# (The view's protections follow that line: they hold whether or not it runs.)
lt_assert_eq "Domain on the bus while starting" "Domain $LT_DOMAIN is not running." \
        "$(lazaretctl --workspace "$LT_WS" status | head -n 1)"

# --- 2. SIGTERM while the Domain is starting ------------------------------------

(cd "$LT_WS" && exec lazaretctl launch -- /bin/echo never) >"$HOME/term.out" 2>"$HOME/term.err" </dev/null &
bg_pid=$!
sleep 1
kill -0 "$bg_pid" 2>/dev/null || lt_fail "the second launch ended while the Domain was held: $(cat "$HOME/term.err")"
kill -TERM "$bg_pid"
rc=0
for _ in $(seq 1 30); do
        kill -0 "$bg_pid" 2>/dev/null || break
        sleep 0.1
done
kill -0 "$bg_pid" 2>/dev/null && lt_fail "the launch still runs 3 s after SIGTERM"
wait "$bg_pid" || rc=$?
bg_pid=
lt_assert_eq "exit status after SIGTERM" 143 "$rc"
lt_assert_eq "message after SIGTERM" "Launch cancelled by SIGTERM: no session was opened in Domain $LT_DOMAIN." \
        "$(cat "$HOME/term.err")"
lt_assert_eq "output of the cancelled command" "" "$(cat "$HOME/term.out")"

# --- 3. the activated coordinator goes away by itself ----------------------------

# Released, the coordinator starts, finds that every client that asked for
# it has hung up, and stops at once without starting a sandbox nobody uses.
t0=$(ms)
touch "$GATE"
wait_state "$UNIT" 30 inactive failed
lt_log "ok: $UNIT stopped by itself $((($(ms) - t0) / 1000)) s after its start was released"
lt_assert_eq "result of $UNIT" inactive "$(unit_state "$UNIT")"
grep -q "has gone; stopping" "$LT_LOGDIR/$LT_DOMAIN.log" ||
        lt_fail "the coordinator did not say why it stopped: $(tail -n 5 "$LT_LOGDIR/$LT_DOMAIN.log")"
wait_state "$SCOPE" 10 inactive failed
lt_assert_eq "Domain on the bus after the idle stop" "Domain $LT_DOMAIN is not running." \
        "$(lazaretctl --workspace "$LT_WS" status | head -n 1)"

# --- 4. a normal launch afterwards ---------------------------------------------

rm -rf -- "$DROPIN"
systemctl --user daemon-reload
out=$(lt_launch -- /bin/echo after-cancel) || lt_fail "launch after the cancelled ones exited $?"
lt_assert_eq "output of a launch after the cancelled ones" after-cancel "$out"

echo "PASS: Ctrl-C and SIGTERM cancel a cold launch at once (130, 143, one line, terminal intact); the activated coordinator stops by itself; a later launch works"
