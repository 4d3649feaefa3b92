#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-session-teardown: a Domain that goes down while a client uses it or
# opens a session says why in its own words, and a launch after it gets a
# new Domain. A test build's LAZARET_TEST_TEARDOWN_DELAY holds the teardown
# back after the coordinator decided it, as a loaded machine may (the race
# seen in CI, spec 5.3):
#   - a stop while a session runs: the client hears the reason and nothing
#     else. The user manager stops the sandbox scope, which is bound to the
#     service, as soon as the coordinator says STOPPING=1; said before the
#     sessions ended, the sandbox went under a session's exec client (then
#     `runsc exec`), which wrote "waiting on pid N: ...
#     containerManager.WaitPID failed: EOF" to the client first;
#   - a Domain that fails while a launch opens its session: a session that
#     runs there hears the failure, and what its exec client says of the
#     sandbox gone under it is in the Domain's log only; the launch got
#     "running", its OpenSession meets the failed Domain, and it launches
#     again (lazaretctl launch's retry). It gets a new Domain and runs its
#     command; the old Domain's failure is no answer to it.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install --test-hooks
lt_domain_setup

unit=lazaret@$LT_DOMAIN.service
scope=lazaret-$LT_DOMAIN-sandbox.scope
log=$LT_LOGDIR/$LT_DOMAIN.log
lt_cleanup_hook() {
        [[ -z ${frozen:-} ]] || kill -CONT "$frozen" 2>/dev/null || true
        systemctl --user unset-environment LAZARET_TEST_TEARDOWN_DELAY || true
}
systemctl --user set-environment LAZARET_TEST_TEARDOWN_DELAY=1500

# lines_after N: the coordinators' log from line N+1 on.
lines_after() { tail -n "+$(($1 + 1))" "$log"; }
log_lines() { wc -l <"$log" 2>/dev/null || echo 0; }

# stopped_while_session_runs HOW STOP...: a session runs `sleep 60` while
# the command STOP stops its Domain, with the teardown held back; its client
# says the teardown's reason and nothing else, and the Domain goes.
stopped_while_session_runs() {
        local how=$1 seen bg rc
        shift
        seen=$(log_lines)
        (cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 60) </dev/null >/dev/null 2>"$HOME/stopped.err" &
        bg=$!
        for _ in $(seq 1 150); do
                [[ $(cd "$LT_WS" && lazaretctl status --json 2>/dev/null | jq '.Sessions | length') == 1 ]] && break
                sleep 0.1
        done
        "$@"
        set +e
        wait "$bg"
        rc=$?
        set -e
        lines_after "$seen" | grep -q "Test fault in effect: the teardown waits 1500 ms" ||
                lt_fail "$how: the teardown was not held back: $(lines_after "$seen")"
        lt_assert_eq "what the client of a session ended by $how says" "Session failed: the Domain is stopping" \
                "$(cat "$HOME/stopped.err")"
        lt_assert_eq "exit status of a session ended by $how" 1 "$rc"
        lines_after "$seen" | grep -qi "stopped unexpectedly\|sandbox failed" &&
                lt_fail "$how: the sandbox went before the coordinator's teardown: $(lines_after "$seen")"
        lt_wait_inactive
}

# --- a stop while a session runs -------------------------------------------------
ctl_stop() {
        local out
        out=$(cd "$LT_WS" && lazaretctl stop) || lt_fail "lazaretctl stop failed"
        lt_assert_eq "what stop says" "Domain $LT_DOMAIN stopped." "$out"
}
stopped_while_session_runs "lazaretctl stop" ctl_stop

# --- the same through the user manager: systemctl --user stop ----------------------
# The scope is bound to the service, so a stop of the service stops the
# scope too; without an order between the two stop jobs the user manager
# killed the sandbox at once, under the session and under the coordinator's
# orderly teardown (held back here by the test delay). Ordered (the scope
# is Before= the service, so it stops after it), the coordinator's
# teardown runs first and the client hears only its reason.
stopped_while_session_runs "systemctl --user stop" systemctl --user stop "$unit"
[[ $(lt_unit_prop "$scope" ActiveState) != active ]] || lt_fail "$scope still active after the service stopped"

# --- a Domain that fails while a launch opens its session -------------------------
# The launch is held (SIGSTOP) between reading "running" and its
# OpenSession: the coordinator answers it while the client is stopped, then
# the sandbox's kernel is killed. The Domain fails, and its teardown waits:
# its bus name and object are still there, and so was, before the fix, its
# activation socket. Then the client goes on.
systemctl --user set-environment LAZARET_TEST_TEARDOWN_DELAY=3000
lt_keeper_start "$HOME/keeper.out"
for _ in $(seq 1 150); do
        [[ $(cd "$LT_WS" && lazaretctl status --json 2>/dev/null | jq '.Sessions | length') == 1 ]] && break
        sleep 0.1
done
[[ ! -e $XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN.launch ]] || lt_fail "the keeper's launch request outlived its answer"
main=$(systemctl --user show -P MainPID "$unit")
[[ $main -gt 0 ]] || lt_fail "no coordinator"
frozen=$main
kill -STOP "$main"
(cd "$LT_WS" && exec lazaretctl launch -- /bin/echo again) </dev/null >"$HOME/again.out" 2>"$HOME/again.err" &
client=$!
# Until the client waits for its answer on the activation socket (the
# coordinator, stopped, cannot accept it yet): it connects right after it
# wrote its launch request (the keeper's went with the keeper's answer).
request=$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN.launch
for _ in $(seq 1 100); do
        [[ -e $request ]] && break
        sleep 0.05
done
[[ -e $request ]] || lt_fail "the launch wrote no launch request"
sleep 0.5
kill -STOP "$client"
seen=$(log_lines)
frozen=
kill -CONT "$main"
frozen=$client
pid=
for p in $(lt_unit_pids "$scope"); do
        [[ $(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" || true) == "runsc-sandbox "* ]] && pid=$p
done
[[ -n $pid ]] || lt_fail "no runsc-sandbox process in $scope"
kill -KILL "$pid"
for _ in $(seq 1 100); do
        lines_after "$seen" | grep -q "Domain $LT_DOMAIN failed:" && break
        sleep 0.05
done
lines_after "$seen" | grep -q "Domain $LT_DOMAIN failed:" || lt_fail "the Domain did not fail: $(lines_after "$seen")"
lines_after "$seen" | grep -q "Session opened" && lt_fail "a session opened before the client went on"
frozen=
kill -CONT "$client"
set +e
wait "$client"
rc=$?
set -e
lt_log "the launch after the failure exited $rc; it said: $(cat "$HOME/again.err")"
lt_assert_eq "exit status of the launch whose Domain failed under its OpenSession" 0 "$rc"
lt_assert_eq "its output" again "$(cat "$HOME/again.out")"
lt_assert_eq "what it said on standard error" "" "$(cat "$HOME/again.err")"
new=$(lines_after "$seen" | grep -c "starting Domain $LT_DOMAIN" || true)
lt_assert_eq "coordinators started for it" 1 "$new"
wait "$LT_KEEPER" 2>/dev/null || true
LT_KEEPER=
# Its exec client lost the sandbox long before the teardown: the client hears
# the Domain's failure, and the exec client's own words go to the Domain's log only.
lt_assert_eq "what the keeper session's client said" "Session failed: the sandbox's kernel (runsc-sandbox) stopped unexpectedly" \
        "$(cat "$HOME/keeper.out")"
lines_after "$seen" | grep -q "lazaret-runsc: waiting for pid [0-9]* in the sandbox: the sandbox's control socket closed" ||
        lt_fail "the exec client's own words are not in the Domain's log: $(lines_after "$seen")"
lt_wait_inactive

echo "PASS: a stop and a failure say only why, and a launch after a failure gets a new Domain"
