#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-units: proves the harness and the install layout. Lazaret is installed
# the way a user would; the user manager, asked over D-Bus, must load the
# installed lazaret@.socket/lazaret@.service templates for a Domain ID; the
# socket unit must create and remove the activation socket with the modes it
# promises; lazaretctl must run from the install's bin directory.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install

domain=0123456789ab
for unit in "lazaret@$domain.socket" "lazaret@$domain.service"; do
        template=${unit/@$domain/@}
        lt_assert_eq "LoadState of $unit" loaded "$(lt_unit_prop "$unit" LoadState)"
        lt_assert_eq "FragmentPath of $unit" "$LT_UNITDIR/$template" "$(lt_unit_prop "$unit" FragmentPath)"
done

sock_dir=$XDG_RUNTIME_DIR/lazaret
sock=$sock_dir/$domain.sock
systemctl --user stop "lazaret@$domain.socket" 2>/dev/null || true
[[ ! -e $sock ]] || lt_fail "$sock exists before the socket unit starts"

systemctl --user start "lazaret@$domain.socket" ||
        lt_fail "systemctl --user start lazaret@$domain.socket failed"
stop_socket() { systemctl --user stop "lazaret@$domain.socket" 2>/dev/null || true; }
trap stop_socket EXIT
lt_assert_eq "ActiveState of lazaret@$domain.socket" active "$(lt_unit_prop "lazaret@$domain.socket" ActiveState)"
[[ -S $sock ]] || lt_fail "expected a socket at $sock, got: $(ls -ld -- "$sock" 2>&1)"
lt_assert_eq "mode of $sock" 600 "$(stat -c %a -- "$sock")"
lt_assert_eq "mode of $sock_dir" 700 "$(stat -c %a -- "$sock_dir")"
lt_assert_eq "owner of $sock" "$(id -u)" "$(stat -c %u -- "$sock")"

systemctl --user stop "lazaret@$domain.socket" ||
        lt_fail "systemctl --user stop lazaret@$domain.socket failed"
trap - EXIT
lt_assert_eq "ActiveState of lazaret@$domain.socket after stop" inactive "$(lt_unit_prop "lazaret@$domain.socket" ActiveState)"
[[ ! -e $sock ]] || lt_fail "expected $sock gone after stop, got: $(ls -ld -- "$sock" 2>&1)"
lt_log "ok: $sock removed on stop"

lt_assert_eq "lazaretctl on PATH" "$LT_BINDIR/lazaretctl" "$(command -v lazaretctl)"
version=$(meson introspect --projectinfo "$LT_BUILDDIR" | jq -r .version)
out=$(lazaretctl --version 2>&1) || lt_fail "lazaretctl --version exited $?: $out"
[[ $out == *"$version"* ]] || lt_fail "lazaretctl --version: expected output containing '$version', got '$out'"
lt_log "ok: lazaretctl --version = '$out'"

echo "PASS: units load from $LT_UNITDIR, activation socket behaves, lazaretctl runs"
