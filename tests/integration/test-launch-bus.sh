#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-launch-bus: the coordinator's D-Bus interface, called directly with
# busctl. Introspection and properties; every bad call gets the named error
# it is documented to get and changes nothing (no session appears); a
# session can only be touched by the connection that owns it;
# `systemctl --user status` shows the coordinator's STATUS=; an OpenSession
# that reaches a stopping Domain is refused (SessionsOnlyWhenPublished).
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

name=org.lazaret.Domain.d$LT_DOMAIN
path=/org/lazaret/Domain
iface=org.lazaret.Domain1

(cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 120) &
holder=$!
for _ in $(seq 1 100); do
        [[ $(cd "$LT_WS" && lazaretctl status --json | jq -r .State) == running ]] && break
        sleep 0.1
done

# Captured first: grep -q closing the pipe early would fail busctl, and
# pipefail with it.
introspection=$(lt_busctl introspect "$name" "$path" "$iface")
grep -q '^\.OpenSession ' <<<"$introspection" || lt_fail "OpenSession not in the introspection data"
lt_assert_eq "DomainId property" "\"$LT_DOMAIN\"" "$(lt_busctl get-property "$name" "$path" "$iface" DomainId | cut -d' ' -f2)"
fp=$(lt_busctl --json=short get-property "$name" "$path" "$iface" ConfigurationFingerprint | jq -r .data)

sessions() { lt_busctl --json=short get-property "$name" "$path" "$iface" Sessions | jq '.data | length'; }
lt_assert_eq "sessions before the bad calls" 1 "$(sessions)"

# busctl cannot pass file descriptors; a small client built here can.
call=$HOME/lt-bus-call
cc -o "$call" "$LAZARET_SOURCE_ROOT/tests/integration/bus-call.c" $(pkg-config --cflags --libs libsystemd) ||
        lt_fail "cannot build the bus test client"

# expect_error ERROR-NAME TEXT BUS-CALL-ARGS...: the call fails with that error
# name and a message containing TEXT.
expect_error() {
        local want=$1 text=$2 out
        shift 2
        if out=$("$call" "$@" </dev/null 2>&1); then
                lt_fail "$* succeeded ($out); expected org.lazaret.Domain1.Error.$want"
        fi
        [[ $out == "ERROR org.lazaret.Domain1.Error.$want: "* ]] || lt_fail "$*: expected error $want, got: $out"
        [[ $out == *"$text"* ]] || lt_fail "$*: the message does not say '$text': $out"
        lt_log "ok: $1 ${*:2:1}... -> $out"
}

expect_error ConfigurationMismatch "runs with configuration" open "$name" 0000 0 3 -- /bin/true
expect_error InvalidArguments "exactly three fds" open "$name" "$fp" 0 1 -- /bin/true
expect_error InvalidArguments "exactly one fd" open "$name" "$fp" 1 3 -- /bin/true
expect_error InvalidArguments "LAZARET_" open "$name" "$fp" 0 3 -e LAZARET_SESSION_ID=x -- /bin/true
expect_error InvalidArguments "NAME=VALUE" open "$name" "$fp" 0 3 -e NOEQUALS -- /bin/true
expect_error InvalidArguments "argv[0] is empty" open "$name" "$fp" 0 3 -- ""
# shellcheck disable=SC2046
expect_error LimitExceeded "more than 1024" open "$name" "$fp" 0 3 -- $(seq 1 1100)
expect_error LimitExceeded "longer than" open "$name" "$fp" 0 3 -- /bin/echo @big:140000
expect_error LimitExceeded "exceed" open "$name" "$fp" 0 3 -- /bin/echo @big:130000 @big:130000 @big:130000 @big:130000 @big:130000 @big:130000 @big:130000 @big:130000 @big:130000
expect_error NoSuchSession "No session" resize "$name" nosuchsession 10 10
owned=$(lt_busctl --json=short get-property "$name" "$path" "$iface" Sessions | jq -r '.data[0][0]')
expect_error NotSessionOwner "belongs to another client" close "$name" "$owned"
expect_error NotSessionOwner "belongs to another client" signal "$name" "$owned" interrupt
# A session of our own, to check what its owner may and may not do.
sid=$("$call" open "$name" "$fp" 0 3 -- /bin/true </dev/null | sed -n 's/^OK //p')
[[ -n $sid ]] || lt_fail "a well-formed OpenSession failed"
lt_log "ok: a well-formed OpenSession opened $sid"
# The terminal request on a file that is not a terminal fails cleanly.
out=$("$call" open "$name" "$fp" 1 1 -- /bin/true </dev/null 2>&1) && lt_fail "a terminal session on /dev/null succeeded"
[[ $out == ERROR*terminal* ]] || lt_fail "terminal session on /dev/null: unexpected message: $out"
lt_log "ok: terminal session on a non-terminal -> $out"
for _ in $(seq 1 50); do
        [[ $(sessions) -eq 1 ]] && break
        sleep 0.1
done
lt_assert_eq "sessions after the bad calls (nothing changed)" 1 "$(sessions)"

status=$(systemctl --user status "lazaret@$LT_DOMAIN.service" --no-pager 2>&1 || true)
[[ $status == *"Status: \"running: profile test, workspace $LT_WS, 1 session\""* ]] ||
        lt_fail "systemctl status does not show the coordinator's STATUS=: $status"
lt_log "ok: systemctl --user status shows the Domain's status"

# SessionsOnlyWhenPublished: an OpenSession that reaches a stopping Domain
# is refused. The coordinator is stopped (SIGSTOP) while a Stop() and then
# an OpenSession are queued for it on one connection, so it starts checking
# the OpenSession's caller before the Stop() is verified and acted on, and
# runs it only afterwards: it must get Error.Stopping, never a session (nor
# another error that only a later check gives).
main=$(systemctl --user show -P MainPID "lazaret@$LT_DOMAIN.service")
[[ $main -gt 0 ]] || lt_fail "no coordinator process"
kill -STOP "$main"
out=$("$call" stop-open "$main" "$name" "$fp" 0 3 -- /bin/true </dev/null 2>&1) && rc=0 || rc=$?
kill -CONT "$main" 2>/dev/null || true
[[ $rc -ne 0 ]] || lt_fail "an OpenSession queued right after Stop() opened a session: $out"
[[ $out == "ERROR org.lazaret.Domain1.Error.Stopping: Domain $LT_DOMAIN is stopping" ]] ||
        lt_fail "an OpenSession queued right after Stop(): expected Error.Stopping, got: $out"
lt_log "ok: OpenSession queued right after Stop() -> $out"
rc=0
wait "$holder" 2>/dev/null || rc=$?
[[ $rc -ne 0 ]] || lt_fail "the session ended by Stop() exited 0"
lt_wait_inactive
echo "PASS: bus interface: properties, named errors, ownership, STATUS=, no session while stopping"
