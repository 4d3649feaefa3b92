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
#   - a unix socket bound in /workspace is refused with EACCES (the workspace
#     view cannot give the host the same socket) and exists on neither side;
#     one in /tmp works inside as usual;
#   - a missing program is still reported as before (the sessions now start
#     through lazaret-exec, which installs the filter).
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

# --- unix sockets: refused in /workspace, which the workspace view serves ---------
# A socket bound through FUSE would be bound to the view's inode: a host
# process would find a dead socket file. So the bind fails inside, clearly,
# and nothing appears on either side; in /tmp sockets work as usual.
out=$(lt_launch -- /workspace/uc --listen /workspace/sock 2>&1) && lt_fail "a socket bound in /workspace: $out"
grep -qi "permission denied" <<<"$out" || lt_fail "a socket bound in /workspace: unclear error: $out"
[[ ! -e $LT_WS/sock ]] || lt_fail "a socket refused inside appeared on the host"
lt_assert_eq "the refused socket inside" absent "$(lt_launch -- /bin/sh -c '[ -e /workspace/sock ] && echo present || echo absent')"
lt_log "ok: a socket bound in /workspace is refused: $(head -n 1 <<<"$out")"
coproc LISTENER { cd "$LT_WS" && exec lazaretctl launch -- /workspace/uc --listen /tmp/sock 2>&1; }
read -r -t 20 line <&"${LISTENER[0]}" || lt_fail "the listener inside said nothing"
lt_assert_eq "listener in /tmp inside" listening "$line"
lt_assert_eq "a client inside connects to it" connected "$(lt_launch -- /workspace/uc /tmp/sock || true)"
eval "exec ${LISTENER[1]}>&-"
wait "$LISTENER_PID" || true

# --- sessions still report a missing program ------------------------------------------
set +e
lt_launch -- /no/such/program >/dev/null 2>"$HOME/special-missing.err"
rc=$?
set -e
lt_assert_eq "exit status of a missing program" 127 "$rc"
grep -q "^/no/such/program could not be started in the sandbox" "$HOME/special-missing.err" ||
        lt_fail "a missing program is not reported in one line: $(cat "$HOME/special-missing.err")"
echo "PASS: FIFOs refused with EPERM, unix sockets in /workspace refused with EACCES and fine in /tmp, missing programs reported"
