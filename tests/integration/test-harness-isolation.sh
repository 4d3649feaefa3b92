#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-harness-isolation: the harness runs tests the way later tests rely on:
# as an unprivileged user with no capabilities and no sudo, with subordinate
# IDs (runsc needs a full user-namespace map), with /dev/net/tun and /dev/fuse
# usable, and (in the prepared machine's mode) with the test and every
# service of its user manager seeing only lo (and the harness's test hosts),
# with the harness's DNS test host as its resolver, so that no test can send
# a packet off the machine. In desktop mode the network part does not apply:
# the other checks run, then the test reports itself skipped.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

uid=$(id -u)
user=$(id -un)
[[ $uid -ne 0 ]] || lt_fail "expected a non-root user, got uid 0"
lt_log "ok: running as $user (uid $uid)"
lt_assert_eq "effective capabilities" 0000000000000000 "$(awk '/^CapEff:/ { print $2 }' /proc/self/status)"
if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        lt_fail "expected no password-less sudo for $user, but 'sudo -n true' worked"
fi

for f in /etc/subuid /etc/subgid; do
        count=$(awk -F: -v u="$user" -v id="$uid" '$1 == u || $1 == id { n += $3 } END { print n + 0 }' "$f")
        ((count >= 65536)) || lt_fail "$f: expected a range of at least 65536 for $user, got $count"
        lt_log "ok: $f grants $user $count IDs"
done

exec 3<>/dev/fuse || lt_fail "cannot open /dev/fuse read-write: $(ls -l /dev/fuse)"
exec 3>&-
exec 4<>/dev/net/tun || lt_fail "cannot open /dev/net/tun read-write: $(ls -l /dev/net/tun)"
exec 4>&-
lt_log "ok: /dev/fuse and /dev/net/tun open read-write"

state=$(systemctl --user is-system-running 2>&1) || true
[[ $state == running || $state == degraded ]] ||
        lt_fail "user manager state: expected running or degraded, got '$state'"
lt_busctl status org.freedesktop.systemd1 >/dev/null ||
        lt_fail "org.freedesktop.systemd1 does not answer on the user bus $DBUS_SESSION_BUS_ADDRESS"
lt_log "ok: user manager $state, answering on the user bus"

if [[ ${LAZARET_TEST_INSTALL:-} == runtime ]]; then
        lt_skip "desktop session: tests share the host's network, isolation not checked"
fi

# lo, and the harness's own veth to its test hosts' namespace (192.0.2.1 on
# this side): the only routes lead to those hosts, no default route, so
# nothing can leave the machine.
links=$(ip -o link | awk -F': ' '{ print $2 }' | sed 's/@.*//' | sort | tr '\n' ' ')
lt_assert_eq "links seen by the test" "lo lzhosts " "$links"
links=$(systemd-run --user --pipe --wait --quiet ip -o link | awk -F': ' '{ print $2 }' | sed 's/@.*//' | sort | tr '\n' ' ')
lt_assert_eq "links seen by a service of the user manager" "lo lzhosts " "$links"
routes=$(ip -4 route show table all | grep -v -e '^local ' -e '^broadcast ' | awk '{ print $1 }' | sort | tr '\n' ' ')
lt_assert_eq "IPv4 routes of the harness namespace" "10.23.0.5 10.99.0.5 198.51.100.53 198.51.100.7 " "$routes"
# slirp4netns forwards DNS to the nameserver of its /etc/resolv.conf, which
# it sees through the user manager: the harness's DNS test host, never the
# machine's resolver (prepare-machine binds it in the manager's mount namespace).
lt_assert_eq "resolver seen by a service of the user manager" "nameserver 198.51.100.53" \
        "$(systemd-run --user --pipe --wait --quiet grep '^nameserver' /etc/resolv.conf)"
[[ -z $(ip -6 route show table main 2>/dev/null | grep -v -e '^fe80::' -e '^::1' -e '^ff00::' ) ]] ||
        lt_fail "the harness namespace has IPv6 routes beyond link-local: $(ip -6 route show)"

echo "PASS: unprivileged, subordinate IDs, devices usable, network isolated"
