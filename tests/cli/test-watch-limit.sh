#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# lazaret-watch (the host side of the host-edit relay, spec section 4.6) run
# by hand with its fds as the supervisor passes them: readiness on fd 3, the
# workspace on fd 4, the channel on fd 5. With --max-watches=2 on a tree of
# three directories it still becomes ready, says once on stderr that the
# bound was reached and where, relays an edit in a watched directory and
# not one in the directory beyond the bound; .git/objects is never walked.
set -euo pipefail
watch=$1
tmp=$(mktemp -d)
trap 'kill "${pid:-}" "${rpid:-}" "${cpid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$tmp/ws/a/b" "$tmp/ws/.git/objects/aa"
mkfifo "$tmp/ready" "$tmp/channel"
cat "$tmp/ready" >"$tmp/ready.out" &
rpid=$!
cat "$tmp/channel" >"$tmp/channel.out" &
cpid=$!
"$watch" --max-watches=2 3>"$tmp/ready" 4<"$tmp/ws" 5>"$tmp/channel" 2>"$tmp/err" &
pid=$!
for _ in $(seq 1 100); do
        [[ -s $tmp/ready.out ]] && break
        sleep 0.05
done
[[ -s $tmp/ready.out ]] || fail "lazaret-watch did not become ready: $(cat "$tmp/err")"
n=$(grep -c 'the workspace has more than 2 directories' "$tmp/err" || true)
[[ $n == 1 ]] || fail "expected one line about the bound on stderr, got: $(cat "$tmp/err")"
grep -q 'README.md, "Troubleshooting"' "$tmp/err" || fail "the bound's message does not point at README: $(cat "$tmp/err")"

# Readdir order decides which two of ".", ".git" and "a" are watched: the
# root is always first. An edit in the root is relayed.
echo x >"$tmp/ws/top.txt"
echo x >"$tmp/ws/.git/objects/aa/obj"
for _ in $(seq 1 100); do
        grep -qx top.txt "$tmp/channel.out" && break
        sleep 0.02
done
grep -qx top.txt "$tmp/channel.out" || fail "an edit in the watched root was not relayed: $(cat "$tmp/channel.out")"
! grep -q objects "$tmp/channel.out" || fail "a write in .git/objects was relayed"
# b (third level) is beyond the bound whatever the order.
echo x >"$tmp/ws/a/b/deep.txt"
sleep 0.3
! grep -q deep.txt "$tmp/channel.out" || fail "an edit beyond the bound was relayed: there are more watches than allowed"
echo "ok: lazaret-watch honours --max-watches and says so once"
