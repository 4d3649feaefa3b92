#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-launch-bus: the coordinator's D-Bus interface, called directly with
# busctl. Introspection and properties; every bad call gets the named error
# it is documented to get and changes nothing (no session appears); a
# session can only be touched by the connection that owns it;
# `systemctl --user status` shows the coordinator's STATUS=.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

name=org.lazaret.Domain.d$LT_DOMAIN
path=/org/lazaret/Domain
iface=org.lazaret.Domain1

lt_launch -- /bin/sleep 120 &
holder=$!
for _ in $(seq 1 100); do
        [[ $(cd "$LT_WS" && lazaretctl status --json | jq -r .State) == running ]] && break
        sleep 0.1
done

lt_busctl introspect "$name" "$path" "$iface" | grep -q '^\.OpenSession ' || lt_fail "OpenSession not in the introspection data"
lt_assert_eq "DomainId property" "\"$LT_DOMAIN\"" "$(lt_busctl get-property "$name" "$path" "$iface" DomainId | cut -d' ' -f2)"
fp=$(lt_busctl --json=short get-property "$name" "$path" "$iface" ConfigurationFingerprint | jq -r .data)

sessions() { lt_busctl --json=short get-property "$name" "$path" "$iface" Sessions | jq '.data | length'; }
lt_assert_eq "sessions before the bad calls" 1 "$(sessions)"

# expect_error ERROR-NAME BUSCTL-CALL-ARGS...
expect_error() {
        local want=$1 out
        shift
        if out=$(lt_busctl call "$name" "$path" "$iface" "$@" 2>&1); then
                lt_fail "call $* succeeded; expected $want"
        fi
        # busctl prints the message; the error name is checked through the
        # message's documented wording and, where busctl shows it, the name.
        lt_log "ok: $* -> $out"
        [[ -n $out ]] || lt_fail "no error message for $*"
        echo "$out"
}

out=$(expect_error ConfigurationMismatch OpenSession asbahqqs 1 /bin/true 0 false 3 0 1 2 0 0 0000)
[[ $out == *"runs with configuration"* ]] || lt_fail "wrong fingerprint: unexpected message: $out"
out=$(expect_error InvalidArguments OpenSession asbahqqs 1 /bin/true 0 false 1 0 0 0 "$fp")
[[ $out == *"exactly three fds"* ]] || lt_fail "one fd without terminal: unexpected message: $out"
out=$(expect_error InvalidArguments OpenSession asbahqqs 1 /bin/true 1 LAZARET_SESSION_ID=x false 3 0 1 2 0 0 "$fp")
[[ $out == *"LAZARET_"* ]] || lt_fail "reserved environment name: unexpected message: $out"
out=$(expect_error InvalidArguments OpenSession asbahqqs 1 /bin/true 1 NOEQUALS false 3 0 1 2 0 0 "$fp")
[[ $out == *"NAME=VALUE"* ]] || lt_fail "malformed environment entry: unexpected message: $out"
out=$(expect_error InvalidArguments OpenSession asbahqqs 1 /bin/true 0 true 1 0 0 0 "$fp")
[[ $out == *"terminal"* ]] || lt_fail "terminal session on a non-terminal fd: unexpected message: $out"
many=$(seq 1 1100 | tr '\n' ' ')
# shellcheck disable=SC2086
out=$(expect_error LimitExceeded OpenSession asbahqqs 1100 $many 0 false 3 0 1 2 0 0 "$fp")
[[ $out == *"more than 1024"* ]] || lt_fail "too many arguments: unexpected message: $out"
out=$(expect_error NoSuchSession ResizeSession sqq nosuchsession 10 10)
[[ $out == *"No session"* ]] || lt_fail "unknown session: unexpected message: $out"
owned=$(lt_busctl --json=short get-property "$name" "$path" "$iface" Sessions | jq -r '.data[0][0]')
out=$(expect_error NotSessionOwner CloseSession s "$owned")
[[ $out == *"belongs to another client"* ]] || lt_fail "foreign session: unexpected message: $out"
out=$(expect_error InvalidArguments SignalSession ss "$owned" explode)
[[ $out == *"not an event"* || $out == *"another client"* ]] || lt_fail "bad event: unexpected message: $out"
lt_assert_eq "sessions after the bad calls (nothing changed)" 1 "$(sessions)"

status=$(systemctl --user status "lazaret@$LT_DOMAIN.service" --no-pager 2>&1 || true)
[[ $status == *"Status: \"running: profile test, workspace $LT_WS, 1 session\""* ]] ||
        lt_fail "systemctl status does not show the coordinator's STATUS=: $status"
lt_log "ok: systemctl --user status shows the Domain's status"

kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
lt_wait_inactive
echo "PASS: bus interface: properties, named errors, ownership, STATUS="
