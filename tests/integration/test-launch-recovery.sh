#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-launch-recovery: a coordinator killed with SIGKILL in the middle of
# starting (after its sandbox scope exists) leaves nothing that stops the
# next launch (FR-7) and no workspace view running; and a client killed
# with SIGKILL ends only its own session, not the others'.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

scope=lazaret-$LT_DOMAIN-sandbox.scope
lt_wait_inactive

no_view_left() {        # WHEN: no lazaret-view of the test user runs (one Domain per test user)
        local left
        left=$(pgrep -u "$(id -u)" -af -- 'lazaret-view --' | cut -c1-120) || true
        [[ -z $left ]] || lt_fail "$1: a lazaret-view outlived its generation: $left"
}

# 1. SIGKILL the coordinator at three points of its life: as soon as it runs
#    (still activating: lock, bus name, image), once its sandbox scope exists
#    (supervisor and runsc starting), and once it has published the Domain.
#    Each time the next launch must succeed, whatever the dead one left.
for round in activating scope published; do
        (cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 5) >/dev/null 2>&1 &
        client=$!
        pid=
        for _ in $(seq 1 500); do
                pid=$(systemctl --user show -P MainPID "lazaret@$LT_DOMAIN.service")
                state=$(systemctl --user show -P ActiveState "lazaret@$LT_DOMAIN.service")
                case $round in
                activating) [[ $pid -gt 0 ]] && break ;;
                scope) [[ $pid -gt 0 && $(systemctl --user is-active "$scope" 2>/dev/null) == active ]] && break ;;
                published) [[ $pid -gt 0 && $state == active ]] && break ;;
                esac
                sleep 0.005
        done
        [[ $pid -gt 0 ]] || lt_fail "round $round: the coordinator never got there"
        kill -KILL "$pid"
        lt_log "round $round: killed coordinator $pid (service was $state)"
        wait "$client" || true
        # The dead coordinator's sandbox scope goes with its service
        # (BindsTo=), and every process of the generation with it, the
        # workspace view and its notifier included (ViewNeverOutlivesGeneration).
        for _ in $(seq 1 100); do
                state=$(systemctl --user is-active "$scope" 2>/dev/null) || true
                [[ $state == active || $state == activating || $state == deactivating ]] || break
                sleep 0.1
        done
        [[ $state != active && $state != deactivating ]] || lt_fail "round $round: the dead coordinator's sandbox scope is still $state"
        no_view_left "round $round: after SIGKILL of the coordinator"
        out=$(lt_launch -- /bin/echo recovered) || lt_fail "round $round: launch after the SIGKILL failed"
        lt_assert_eq "round $round: output after recovery" recovered "$out"
        lt_wait_inactive
        state=$(systemctl --user is-active "$scope" 2>/dev/null) || true
        [[ $state != active ]] || lt_fail "round $round: a sandbox scope is still active after teardown"
        no_view_left "round $round: after the teardown of the next generation"
done
[[ ! -e $XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN ]] || lt_fail "runtime files left after recovery"

# 2. Two sessions; SIGKILL one client; the other session keeps working.
mkfifo "$HOME/keep.fifo" 2>/dev/null || true
lt_launch -- /bin/sh -c 'read line; echo "second got $line"' <"$HOME/keep.fifo" >"$HOME/second.out" &
second=$!
exec 7>"$HOME/keep.fifo"
# Not through the lt_launch function: $! must be lazaretctl itself.
(cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 60) &
victim=$!
for _ in $(seq 1 100); do
        n=$(cd "$LT_WS" && lazaretctl status --json | jq '.Sessions | length') || n=0
        [[ $n -eq 2 ]] && break
        sleep 0.1
done
lt_assert_eq "sessions before the kill" 2 "$n"
kill -KILL "$victim"
for _ in $(seq 1 100); do
        n=$(cd "$LT_WS" && lazaretctl status --json | jq '.Sessions | length') || n=0
        [[ $n -eq 1 ]] && break
        sleep 0.1
done
lt_assert_eq "sessions after SIGKILL of one client" 1 "$n"
echo hello >&7
exec 7>&-
wait "$second" || lt_fail "the surviving session failed"
lt_assert_eq "surviving session output" "second got hello" "$(cat "$HOME/second.out")"
lt_wait_inactive

# An unpack that a dying coordinator left behind (its lock no longer held)
# is removed by the next image preparation; one whose lock is held (an
# unpack in progress elsewhere) is left alone.
data_root=$(lazaretctl config check --json --workspace "$LT_WS" | jq -r .data_root)
prepared=$data_root/images/prepared
mkdir -p "$prepared/.staging-stale/rootfs" "$prepared/.staging-busy/rootfs"
head -c 1048576 /dev/zero >"$prepared/.staging-stale/rootfs/big"
touch "$prepared/.staging-stale.lock" "$prepared/.staging-busy.lock"
flock "$prepared/.staging-busy.lock" sleep 30 &
holder=$!
sleep 0.2
lt_assert_eq "a launch after the leftovers" ok "$(lt_launch -- /bin/echo ok </dev/null)"
[[ ! -e $prepared/.staging-stale && ! -e $prepared/.staging-stale.lock ]] ||
        lt_fail "a staging directory left by a dead unpack was not removed"
[[ -d $prepared/.staging-busy ]] || lt_fail "a staging directory whose unpack holds its lock was removed"
kill "$holder"; wait "$holder" 2>/dev/null || true
rm -rf "$prepared/.staging-busy" "$prepared/.staging-busy.lock"
lt_log "ok: a dead unpack's staging directory is removed, a live one's kept"
lt_wait_inactive

# A coordinator that cannot start tells the client why, not "see its log":
# here the Domain lock is held (as by a coordinator that is still running).
lock=$data_root/domains/$LT_DOMAIN/coordinator.lock
exec {lockfd}>"$lock"
flock -n "$lockfd" || lt_fail "cannot take the Domain lock $lock for the test"
out=$(lt_launch -- /bin/true 2>&1 </dev/null {lockfd}>&-) && lt_fail "a launch succeeded while another process held the Domain lock"
exec {lockfd}>&-
grep -q "Another coordinator holds $lock; refusing to run a second one" <<<"$out" ||
        lt_fail "the client was not told why the coordinator could not start: $out"
grep -q "Details: lazaretctl log $LT_DOMAIN" <<<"$out" || lt_fail "the client was not pointed at lazaretctl log: $out"
log=$(lazaretctl log "$LT_DOMAIN") || lt_fail "lazaretctl log failed"
grep -q "Another coordinator holds $lock; refusing to run a second one" <<<"$log" ||
        lt_fail "lazaretctl log does not show the coordinator's failure: $(tail -n 3 <<<"$log")"
lt_log "ok: a coordinator that cannot start says why to the client, and lazaretctl log shows it"
lt_wait_inactive
out=$(lt_launch -- /bin/echo ok 2>&1 </dev/null) || true
lt_assert_eq "a launch once the lock is free" ok "$out"

echo "PASS: recovery after coordinator SIGKILL; a killed client ends only its session; stale unpacks removed; start-up failures named"
