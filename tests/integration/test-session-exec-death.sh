#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-session-exec-death (issue 18, item 2): a session whose exec client
# (lazaret-runsc, in place of `runsc exec`) is killed on the host ends inside too. A keeper session holds the Domain
# up; a second session runs a shell that starts a background child and
# writes a tick to the workspace every 0.2 s. After `kill -9` of that
# session's exec client (a process of the service's control group, not of
# the sandbox scope), the client says so in one line, and neither the shell
# nor its child writes to the workspace any more; the keeper session and
# the Domain carry on. A session that its client closes (CloseSession)
# leaves no background child running either. A session whose starter the
# sandbox refuses ends with 127 and the exec client's reason.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

unit=lazaret@$LT_DOMAIN.service
scope=lazaret-$LT_DOMAIN-sandbox.scope

lt_keeper_start
keeper=$LT_KEEPER

# The shell writes "sh"; its background child (same session, same process
# group, as a non-interactive shell leaves it) writes "child".
(cd "$LT_WS" && exec lazaretctl launch -- /bin/sh -c \
        '(while :; do echo child >>/workspace/tick; sleep 0.2; done) & while :; do echo sh >>/workspace/tick; sleep 0.2; done' \
        </dev/null >"$HOME/victim.out" 2>"$HOME/victim.err") &
victim=$!

sid=
for _ in $(seq 1 100); do
        sid=$(cd "$LT_WS" && lazaretctl status --json 2>/dev/null |
                jq -r '.Sessions[] | select(.command == "/bin/sh") | .id') || true
        [[ -n $sid ]] && grep -q child "$LT_WS/tick" 2>/dev/null && break
        sleep 0.1
done
[[ -n $sid ]] || lt_fail "the second session did not show in status"
grep -q child "$LT_WS/tick" || lt_fail "the session's background child did not start writing"

# Its exec client: in the service's control group (spec 4.1), not the scope's.
pid=
pids=$(lt_unit_pids "$unit")
for p in $pids; do
        [[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == *" exec "*"/$sid.json "* ]] && pid=$p
done
[[ -n $pid ]] || lt_fail "no exec client of session $sid in the control group of $unit"
pids=$(lt_unit_pids "$scope")
for p in $pids; do
        [[ $p != "$pid" ]] || lt_fail "the exec client of session $sid is in $scope"
done
lt_log "ok: session $sid's exec client is pid $pid, in $unit's control group"

kill -KILL "$pid"
for _ in $(seq 1 100); do
        kill -0 "$victim" 2>/dev/null || break
        sleep 0.1
done
kill -0 "$victim" 2>/dev/null && lt_fail "the client still runs 10 s after its exec client was killed"
rc=0
wait "$victim" || rc=$?
lt_assert_eq "the client's exit status (128+SIGKILL)" 137 "$rc"
lt_assert_eq "lines the client printed" 1 "$(wc -l <"$HOME/victim.err")"
grep -q "exec client (lazaret-runsc, pid $pid on the host) was killed by signal 9" "$HOME/victim.err" || lt_fail "the client did not say what happened: $(cat "$HOME/victim.err")"
lt_log "ok: the client said: $(cat "$HOME/victim.err")"

# Nothing of the session writes any more: what the file holds after a
# second of grace stays the same for three more.
sleep 1
before=$(wc -l <"$LT_WS/tick")
sleep 3
after=$(wc -l <"$LT_WS/tick")
lt_assert_eq "ticks written after the session ended" "$before" "$after"

# A session closed by its client (SIGTERM: CloseSession) ends the same way:
# its background child goes with the shell.
(cd "$LT_WS" && exec lazaretctl launch -- /bin/sh -c \
        '(while :; do echo child >>/workspace/tick2; sleep 0.2; done) & while :; do echo sh >>/workspace/tick2; sleep 0.2; done' \
        </dev/null >/dev/null 2>&1) &
closed=$!
for _ in $(seq 1 100); do
        grep -q child "$LT_WS/tick2" 2>/dev/null && break
        sleep 0.1
done
grep -q child "$LT_WS/tick2" || lt_fail "the second shell's background child did not start writing"
kill -TERM "$closed"
rc=0
wait "$closed" || rc=$?
lt_assert_eq "a client ended by SIGTERM exits" 143 "$rc"
sleep 1
before=$(wc -l <"$LT_WS/tick2")
sleep 3
after=$(wc -l <"$LT_WS/tick2")
lt_assert_eq "ticks written after CloseSession" "$before" "$after"

kill -0 "$keeper" 2>/dev/null || lt_fail "the keeper session ended with the other ones"
lt_assert_eq "Domain state after the session ended" running \
        "$(cd "$LT_WS" && lazaretctl status --json | jq -r .State)"
lt_assert_eq "a session next to the keeper" ok "$(lt_launch -- /bin/echo ok </dev/null)"

# A session whose starter cannot be started at all (the sandbox refuses the
# exec client's call: here the control directory's lazaret-exec is made
# unexecutable on the host; a sandbox out of host descriptors is refused the
# same way) ends with 127 and the exec client's own words, not a guess that
# the program is missing (lazaret-exec reports that one itself).
starter=$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN/control/exec
[[ -x $starter ]] || lt_fail "no starter at $starter"
chmod 0644 "$starter"
set +e
lt_launch -- /bin/echo never </dev/null >"$HOME/refused.out" 2>"$HOME/refused.err"
rc=$?
set -e
chmod 0755 "$starter"
lt_assert_eq "exit status of a session whose starter the sandbox refused" 127 "$rc"
grep -q '^/bin/echo could not be started in the sandbox (lazaret-runsc: executing in the sandbox: .*permission denied' \
        "$HOME/refused.err" || lt_fail "a refused start does not say the sandbox's reason: $(cat "$HOME/refused.err")"
grep -q 'no such program' "$HOME/refused.err" && lt_fail "a refused start is reported as a missing program: $(cat "$HOME/refused.err")"
lt_assert_eq "what the refused session printed" "" "$(cat "$HOME/refused.out")"
lt_assert_eq "a session once the starter is back" ok "$(lt_launch -- /bin/echo ok </dev/null)"
lt_log "ok: a refused start says why: $(cat "$HOME/refused.err")"

echo "PASS: a session whose exec client was killed ends inside too, and its client says so in one line; one the sandbox refused says why"
