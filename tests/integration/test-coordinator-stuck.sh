#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-coordinator-stuck (issue 18, item 3): clients never hang on a stuck
# coordinator. With the coordinator of a running Domain stopped by SIGSTOP:
#   - `lazaretctl launch`, `status` and `stop` each end within the bound
#     (15 s, CTL_REPLY_TIMEOUT_USEC) with "The coordinator of Domain X is not
#     responding" and what to do, exit status 124;
#   - Ctrl-C (SIGINT) still cancels a launch at once;
#   - the advice works: `systemctl --user stop lazaret@X.service` ends the
#     stopped coordinator's Domain.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

unit=lazaret@$LT_DOMAIN.service
bound_ms=15000
main=

lt_cleanup_hook() {
        [[ -z $main ]] || kill -CONT "$main" 2>/dev/null || true
}

lt_keeper_start
main=$(systemctl --user show -P MainPID "$unit")
[[ $main =~ ^[1-9][0-9]*$ ]] || lt_fail "no main PID for $unit: '$main'"
kill -STOP "$main"
lt_log "coordinator $main stopped"

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# All three at once: each waits for the bound on its own.
start=$(now_ms)
rm -f "$HOME"/stuck-*.rc "$HOME"/stuck-*.end
ctl() {   # NAME ARGS...: lazaretctl ARGS in the background; its status and end time to files
        local name=$1 rc=0
        shift
        (cd "$LT_WS" && lazaretctl "$@") </dev/null >"$HOME/stuck-$name.out" 2>"$HOME/stuck-$name.err" || rc=$?
        echo "$rc" >"$HOME/stuck-$name.rc"
        now_ms >"$HOME/stuck-$name.end"
}
ctl launch launch -- /bin/echo hi &
launch=$!
ctl status status &
status=$!
ctl stop stop &
stop=$!

# Ctrl-C meanwhile: a launch waiting for the stopped coordinator goes at once.
(cd "$LT_WS" && exec lazaretctl launch -- /bin/echo hi </dev/null >/dev/null 2>"$HOME/stuck-cancel.err") &
cancel=$!
sleep 1
sent=$(now_ms)
kill -INT "$cancel"
rc=0
wait "$cancel" || rc=$?
lt_assert_eq "a launch cancelled by SIGINT exits" 130 "$rc"
((($(now_ms) - sent) < 2000)) || lt_fail "SIGINT took $(($(now_ms) - sent)) ms to cancel the launch"
lt_log "ok: SIGINT cancelled the launch at once: $(cat "$HOME/stuck-cancel.err")"

for _ in $(seq 1 300); do
        kill -0 "$launch" 2>/dev/null || kill -0 "$status" 2>/dev/null || kill -0 "$stop" 2>/dev/null || break
        sleep 0.1
done
for what in launch status stop; do
        pid=${!what}
        if kill -0 "$pid" 2>/dev/null; then
                kill "$pid" 2>/dev/null || true
                lt_fail "lazaretctl $what still waits $(($(now_ms) - start)) ms after the coordinator stopped"
        fi
        wait "$pid" || true
        took=$(($(cat "$HOME/stuck-$what.end") - start))
        ((took < bound_ms + 8000)) || lt_fail "lazaretctl $what took $took ms (bound $bound_ms ms)"
        lt_assert_eq "exit status of lazaretctl $what" 124 "$(cat "$HOME/stuck-$what.rc")"
        grep -q "^The coordinator of Domain $LT_DOMAIN is not responding" "$HOME/stuck-$what.err" ||
                lt_fail "lazaretctl $what did not say the coordinator is not responding: $(cat "$HOME/stuck-$what.err")"
        grep -q "systemctl --user status $unit" "$HOME/stuck-$what.err" ||
                lt_fail "lazaretctl $what did not say what to do: $(cat "$HOME/stuck-$what.err")"
        lt_log "ok: lazaretctl $what ended after $took ms"
done
lt_log "it said: $(cat "$HOME/stuck-status.err")"

# What the message advises: the user manager sends SIGTERM and SIGCONT.
timeout 60 systemctl --user stop "$unit" || lt_fail "systemctl --user stop $unit failed"
main=
lt_wait_inactive
lt_assert_eq "a launch after the stuck coordinator was stopped" ok "$(lt_launch -- /bin/echo ok </dev/null)"

echo "PASS: launch, status and stop end within the bound on a stopped coordinator, and say what to do"
