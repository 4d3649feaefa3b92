#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-store-owner (issue 31 item 4): one owner for the Domain Store.
#   1. Escalations (a burst of auto-approved ones, queued and written in
#      batches by the coordinator) in three generations; the Domain stops.
#   2. lazaretctl escalations history of the stopped Domain is answered by a
#      maintenance coordinator (no sandbox), which then exits by itself;
#      lazaretctl itself opens no store.sqlite (strace of its process tree).
#   3. A launch right after a maintenance call works: the maintenance
#      coordinator gives way to it.
#   4. lazaretctl state gc with a small retention in lazaret.conf applies it
#      through the Domain's coordinator; afterwards (the Domain stopped, no
#      coordinator left) the store's rows, read with the sqlite3 shell, are
#      bounded; gc opened no store.sqlite either.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
command -v sqlite3 >/dev/null || lt_skip "sqlite3 (the command) is not installed (.ci/install-deps installs it)"
command -v strace >/dev/null || lt_skip "strace is not installed (.ci/install-deps installs it)"

BURST=40        # requests, three audit events each (requested, approved, result)
conf() {        # conf [RETENTION-JSON]
        printf '{ "default_profile": "test",
  "escalation": { "timeout_s": 30, "auto_approve": [ { "argv": ["/bin/echo", "store-owner"], "trailing_args": true } ] },
  %s
  "profiles": { "test": { "image": "oci:%s" } } }\n' "${1:+\"retention\": $1,}" "$LT_IMAGE" >"$LT_CONFIG"
}
conf
store=$HOME/.local/share/lazaret/domains/$LT_DOMAIN/store.sqlite
unit=lazaret@$LT_DOMAIN.service
LOG=$LT_LOGDIR/$LT_DOMAIN.log
mark() { MARK=$(wc -l <"$LOG" 2>/dev/null || echo 0); }
since_mark() { tail -n +"$((MARK + 1))" "$LOG"; }
# A store of an earlier run of this test would blur the counts.
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
rm -f "$store" "$store-wal" "$store-shm"

# wait_gone: the Domain's coordinator has exited (bounded; the maintenance one's idle timeout is 5 s).
wait_gone() {
        local state
        for _ in $(seq 1 200); do
                state=$(systemctl --user is-active "$unit" 2>/dev/null) || true
                [[ $state == inactive || $state == failed ]] && return 0
                sleep 0.1
        done
        lt_fail "$unit is still $state after 20 s: $(tail -n 5 "$LOG")"
}

# traced FILE ARGS...: lazaretctl ARGS in the workspace, its process tree's file calls in FILE.
traced() {
        local out=$1
        shift
        (cd "$LT_WS" && exec strace -f -qq -e trace=%file -o "$out" lazaretctl "$@")
}
# no_store FILE WHAT: the trace names no Domain Store (and the trace did record file calls).
no_store() {
        grep -q 'execve(' "$1" || lt_fail "$2: the trace $1 recorded nothing"
        ! grep -q 'store\.sqlite' "$1" || lt_fail "$2 opened a Domain Store: $(grep 'store\.sqlite' "$1" | head -n 3)"
        lt_log "ok: $2 did not open a Domain Store ($(wc -l <"$1") file calls traced)"
}

# --- 1. a burst of escalations, then two more generations
out=$(lt_launch -- /bin/sh -c "i=0; while [ \$i -lt $BURST ]; do lazaret-escalate -- /bin/echo store-owner \$i >/dev/null || exit 1; i=\$((i + 1)); done; echo burst-done") ||
        lt_fail "the burst of escalations failed: $out"
lt_assert_eq "the burst's session" burst-done "$out"
for g in 2 3; do
        out=$(lt_launch -- /bin/echo "generation $g") || lt_fail "launch $g failed: $out"
done
lazaretctl --workspace "$LT_WS" stop >/dev/null || lt_fail "lazaretctl stop failed"
wait_gone

# --- 2. the history of the stopped Domain, told by a maintenance coordinator
mark
traced "$HOME/strace-history" --workspace "$LT_WS" escalations history --json >"$HOME/history.json" ||
        lt_fail "lazaretctl escalations history failed: $(cat "$HOME/history.json")"
no_store "$HOME/strace-history" "lazaretctl escalations history"
n=$(jq '[.[] | select(.Event == "result" and .Outcome == "completed" and .Argv[0] == "/bin/echo")] | length' "$HOME/history.json")
lt_assert_eq "results of the burst in the history" "$BURST" "$n"
total=$(jq length "$HOME/history.json")
((total > 100 && total < 200)) || lt_fail "expected more than 100 audit events (all of them shown), got $total"
lt_assert_eq "the history's last event" "\"$((BURST - 1))\"" "$(jq '[.[] | select(.Event == "result")] | last | .Argv[2]' "$HOME/history.json")"
since_mark | grep -q "serves Domain $LT_DOMAIN's store in maintenance" ||
        lt_fail "no maintenance coordinator answered: $(since_mark | tail -n 5)"
! since_mark | grep -q "starting Domain $LT_DOMAIN" || lt_fail "the history started the Domain's sandbox"
wait_gone
since_mark | grep -q "No maintenance call for 5 s; stopping" ||
        lt_fail "the maintenance coordinator did not end by its idle timeout: $(since_mark | tail -n 5)"
lt_log "ok: the maintenance coordinator answered the history and exited by itself"

# --- 3. a launch right after a maintenance call
mark
(cd "$LT_WS" && lazaretctl escalations history) >/dev/null || lt_fail "the second history failed"
[[ $(systemctl --user is-active "$unit") == active ]] || lt_fail "no maintenance coordinator after the history"
out=$(lt_launch -- /bin/echo after-maintenance) || lt_fail "the launch after a maintenance call failed: $out"
lt_assert_eq "the launch after a maintenance call" after-maintenance "$out"
since_mark | grep -q "leaving maintenance for the next coordinator" ||
        lt_fail "the launch did not meet the maintenance coordinator: $(since_mark | tail -n 8)"
lazaretctl --workspace "$LT_WS" stop >/dev/null || lt_fail "lazaretctl stop failed"
wait_gone

# --- 4. gc applies a small retention through the coordinator
conf '{ "audit_events": 100, "generations": 1 }'
mark
traced "$HOME/strace-gc" state gc --yes >"$HOME/gc.out" 2>&1 || lt_fail "lazaretctl state gc failed: $(cat "$HOME/gc.out")"
no_store "$HOME/strace-gc" "lazaretctl state gc"
grep -q "Domain $LT_DOMAIN: the retention removed $((total - 100)) audit events and 3 generations" "$HOME/gc.out" ||
        lt_fail "gc did not say what the retention removed: $(cat "$HOME/gc.out")"
since_mark | grep -q "serves Domain $LT_DOMAIN's store in maintenance" || lt_fail "gc did not ask a maintenance coordinator"
wait_gone
# Now nobody owns the store: the test reads it.
lt_assert_eq "audit events kept" 100 "$(sqlite3 -readonly "$store" 'SELECT count(*) FROM escalation_events')"
lt_assert_eq "the newest kept" "$((BURST - 1))" \
        "$(sqlite3 -readonly "$store" "SELECT json_extract(argv, '\$[2]') FROM escalation_events WHERE event = 'result' ORDER BY id DESC LIMIT 1")"
lt_assert_eq "generations kept" 1 "$(sqlite3 -readonly "$store" 'SELECT count(*) FROM generations')"
lt_log "ok: gc applied the retention; the store keeps 100 audit events and 1 generation"
