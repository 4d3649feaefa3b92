#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-unshare (issue 9, hole 6): a directory chowned to a subordinate ID
# and closed (chmod 700), as a sandbox of an older Lazaret could leave it,
# cannot be removed on the host, and `lazaretctl unshare -- rm -rf DIR`
# removes it. (This version's sandbox cannot chown host files, see
# test-modes.sh; the directory is made so with `lazaretctl unshare` itself.) unshare runs as root of a
# user namespace mapped exactly like the Domain's (the sandbox's 1000 is
# 1000 there too), in the current directory; a bad invocation exits 2 with
# a clear message, an unknown command 127, a user without subordinate IDs
# gets the fix named.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

cd "$LT_WS"
mkdir d && touch d/f
lazaretctl unshare -- sh -c 'chown -R 1000:1000 d && chmod 700 d' ||
        lt_fail "preparing the directory with lazaretctl unshare failed"
subid_start=$(awk -F: -v u="$(id -un)" '$1 == u { print $2; exit }' /etc/subuid)
lt_assert_eq "host owner of the sandbox's 1000" "$((subid_start + 999))" "$(stat -c %u d)"

# The problem: the developer cannot remove it.
if rm -rf d 2>/dev/null; then
        lt_fail "rm -rf of the chowned directory succeeded on the host: nothing to test"
fi
[[ -e d/f || -d d ]] || lt_fail "d vanished"
lt_log "ok: rm -rf d fails on the host"

# The way out: the same IDs as inside, and root over them.
lt_assert_eq "unshare -- id -u" 0 "$(lazaretctl unshare -- id -u)"
lt_assert_eq "unshare -- pwd" "$LT_WS" "$(lazaretctl unshare -- pwd)"
lt_assert_eq "owner of d in unshare (as in the sandbox)" 1000:1000 "$(lazaretctl unshare -- stat -c %u:%g d)"
lazaretctl unshare -- rm -rf d || lt_fail "lazaretctl unshare -- rm -rf d failed"
[[ ! -e d ]] || lt_fail "d is still there after lazaretctl unshare -- rm -rf d"
lt_log "ok: lazaretctl unshare -- rm -rf d removed it"
lt_assert_eq "exit status passed through" 7 "$(lazaretctl unshare -- sh -c 'exit 7' || echo $?)"

# Bad invocations: a clear one-line error, nothing run.
for args in "" "--"; do
        set +e
        # shellcheck disable=SC2086
        out=$(lazaretctl unshare $args 2>&1)
        rc=$?
        set -e
        lt_assert_eq "exit status of 'lazaretctl unshare $args'" 2 "$rc"
        [[ $out == *"No command given to \"unshare\""* ]] || lt_fail "unclear error for 'lazaretctl unshare $args': $out"
done
set +e
out=$(lazaretctl unshare -- lazaret-no-such-command 2>&1)
rc=$?
set -e
lt_assert_eq "exit status for an unknown command" 127 "$rc"
lt_assert_eq "message for an unknown command" "lazaretctl unshare: lazaret-no-such-command: command not found" "$out"

# A user without subordinate IDs (the harness's peer, when there is one):
# refused with the fix named, exit 1.
peer=$(id -un)-peer
if getent passwd "$peer" >/dev/null && (cd / && sudo -n -u "$peer" true) 2>/dev/null; then
        tools=$(mktemp -d /tmp/lt-unshare.XXXXXX)
        trap 'rc=$?; rm -rf "$tools"; lt_domain_cleanup "$rc"' EXIT
        cp "$(command -v lazaretctl)" "$tools/"
        chmod 0755 "$tools" "$tools/lazaretctl"
        set +e
        out=$(cd / && sudo -n -u "$peer" "$tools/lazaretctl" unshare -- true 2>&1)
        rc=$?
        set -e
        lt_assert_eq "exit status without subordinate IDs" 1 "$rc"
        [[ $out == *"no range of 65536 subordinate IDs for $peer"*"usermod --add-subuids"* ]] ||
                lt_fail "unclear error without subordinate IDs: $out"
        lt_log "ok: without subordinate IDs: $out"
fi

echo "PASS: lazaretctl unshare removes what the sandbox chowned, as root of the Domain's mapping"
