#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-special-files: issue 18 item 7, special files behave the same on both
# sides of /workspace. gVisor 20240729 cannot create a FIFO on a host-backed
# mount and kept one in the sandbox's memory (listed inside, absent on the
# host); a unix socket bound there was the same. Now, in a real sandbox:
#   - mkfifo fails with EPERM ("Operation not permitted") in /workspace and
#     in /tmp (a seccomp filter cannot tell paths apart), and nothing is
#     listed inside or created on the host;
#   - a unix socket bound in /workspace exists on the host as a socket, and
#     a host process connects to the sandbox's listener through it;
#   - a missing program is still reported as before (the sessions now start
#     through lazaret-init --exec).
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

# A static unix-connect in the workspace runs in the busybox image.
cc -static -O1 -o "$LT_WS/uc" "$LAZARET_SOURCE_ROOT/tests/integration/unix-connect.c" 2>/dev/null ||
        lt_skip "cannot link tests/integration/unix-connect.c statically (no static libc)"
lt_keeper_start

# --- FIFOs: refused inside, nowhere on either side -------------------------------
for dir in /workspace /tmp; do
        set +e
        out=$(lt_launch -- /bin/mkfifo "$dir/fifo" 2>&1)
        rc=$?
        set -e
        [[ $rc -ne 0 ]] || lt_fail "mkfifo in $dir succeeded inside"
        grep -q "Operation not permitted" <<<"$out" || lt_fail "mkfifo in $dir: unclear error: $out"
        lt_assert_eq "mkfifo in $dir: listed inside" absent "$(lt_launch -- /bin/sh -c "ls -la $dir | grep -q ' fifo\$' && echo listed || echo absent")"
        lt_log "ok: $dir: $out"
done
[[ ! -e $LT_WS/fifo ]] || lt_fail "a FIFO appeared on the host"
out=$(lt_launch -- /bin/sh -c 'mknod /workspace/p2 p 2>&1; echo "rc=$?"')
grep -q "rc=1" <<<"$out" || lt_fail "mknod p in /workspace succeeded inside: $out"
lt_log "ok: mknod p refused too: $(head -n 1 <<<"$out")"

# --- unix sockets: the same socket on both sides ------------------------------------
coproc LISTENER { cd "$LT_WS" && exec lazaretctl launch -- /workspace/uc --listen /workspace/sock 2>&1; }
read -r -t 20 line <&"${LISTENER[0]}" || lt_fail "the listener inside said nothing"
lt_assert_eq "listener inside" listening "$line"
[[ -S $LT_WS/sock ]] || lt_fail "the socket bound in /workspace is not a socket on the host: $(ls -la "$LT_WS")"
lt_assert_eq "host connects to the sandbox's listener" connected "$("$LT_WS/uc" "$LT_WS/sock" || true)"
lt_assert_eq "the socket inside" socket "$(lt_launch -- /bin/sh -c '[ -S /workspace/sock ] && echo socket')"
eval "exec ${LISTENER[1]}>&-"
wait "$LISTENER_PID" || true
rm -f "$LT_WS/sock"

# --- sessions still report a missing program ------------------------------------------
set +e
lt_launch -- /no/such/program >/dev/null 2>"$HOME/special-missing.err"
rc=$?
set -e
lt_assert_eq "exit status of a missing program" 127 "$rc"
grep -q "^/no/such/program could not be started in the sandbox" "$HOME/special-missing.err" ||
        lt_fail "a missing program is not reported in one line: $(cat "$HOME/special-missing.err")"
echo "PASS: FIFOs refused with EPERM on both sides, unix sockets exist on both sides, missing programs reported"
