#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-peer-user (issue 9, hole 1): another unprivileged local user in the
# SAME network namespace as the Domain's user cannot connect to, list or
# signal anything of a running Domain. The peer ("<test user>-peer", made by
# tests/harness/prepare-machine, no subordinate IDs) is reached with
# `sudo -n -u PEER`, which keeps the harness's network namespace, as another
# user on the same host shares the developer's.
#
# Every refusal below is paired with a control that shows the same probe
# succeeding where it should (as the owner, or for a socket that is there),
# so that a refusal proves the boundary and not a wrong path or a broken
# probe. Before the fix, runsc 0.0~20221219 listened on the abstract socket
# @runsc-sandbox.<container>, and checks 1 and 2 below fail against it.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

me=$(id -un)
peer=$me-peer
if ! getent passwd "$peer" >/dev/null; then
        [[ ${LAZARET_TEST_INSTALL:-home} == runtime ]] &&
                lt_skip "no peer user $peer on this desktop (tests/harness/prepare-machine makes one as root)"
        lt_fail "the harness made no peer user $peer"
fi
# From /: the peer cannot enter our home's subdirectories, and must not need to.
as_peer() { (cd / && sudo -n -u "$peer" -- "$@"); }
as_peer true || lt_fail "sudo -n -u $peer does not work (see /etc/sudoers.d/$me from prepare-machine)"
[[ $(as_peer id -u) != "$(id -u)" ]] || lt_fail "the peer runs as our own UID"
if grep -Eq "^($peer|$(id -u "$peer")):" /etc/subuid /etc/subgid 2>/dev/null; then
        lt_fail "the peer $peer has subordinate IDs; it must have none"
fi
# Same network namespace: otherwise an abstract socket would be out of the
# peer's reach anyway and checks 1 and 2 would prove nothing.
lt_assert_eq "the peer's network namespace" "$(readlink /proc/self/ns/net)" "$(as_peer readlink /proc/self/ns/net)"

lt_install
lt_domain_setup

# The probe, in a directory the peer can read. The test's own files go away
# with it; the Domain is stopped by lt_domain_cleanup.
tools=$(mktemp -d /tmp/lt-peer.XXXXXX)
trap 'rc=$?; rm -rf "$tools"; lt_domain_cleanup "$rc"' EXIT
chmod 0755 "$tools"
cc -O1 -o "$tools/unix-connect" "$LAZARET_SOURCE_ROOT/tests/integration/unix-connect.c" ||
        lt_fail "cannot build tests/integration/unix-connect.c"
chmod 0755 "$tools/unix-connect"
connect() { "$tools/unix-connect" "$1" || true; }
peer_connect() { as_peer "$tools/unix-connect" "$1" || true; }

# Listening abstract sockets in this namespace (/proc/net/unix: flags
# 00010000 is a listening socket; an abstract name starts with "@").
listening_abstract() { awk '$4 == "00010000" && $8 ~ /^@/ { print $8 }' | sort -u; }
before=$(as_peer cat /proc/net/unix | listening_abstract)

lt_keeper_start
bg=$LT_KEEPER

root=$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN/runsc
ctl_sock=$(find "$root" -maxdepth 1 -type s -name "*lz-$LT_DOMAIN-*" | head -n1)
[[ -S $ctl_sock ]] || lt_fail "no runsc control socket file in $root: $(ls -la "$root")"
container=$(basename -- "$ctl_sock")
container=lz-${container#*lz-}
container=${container%.sock}
lt_log "container $container, control socket $ctl_sock"

# 1. No abstract socket names the container, and none appeared with the
#    Domain. Control: the peer does see the Domain's own sockets in
#    /proc/net/unix (the path socket names the container), so an empty
#    result is not a view of some other namespace. Fails against runsc
#    0.0~20221219 (@runsc-sandbox.<container>) or any part of the stack that
#    starts listening on an abstract name, which the peer could connect to.
unix=$(as_peer cat /proc/net/unix)
grep -qF "$container" <<<"$unix" || lt_fail "control: the peer does not see the Domain's control socket in /proc/net/unix"
if grep -F "$container" <<<"$unix" | awk '$8 ~ /^@/' | grep -q .; then
        lt_fail "an abstract socket names the container: $(grep -F "$container" <<<"$unix" | awk '$8 ~ /^@/ { print $8 }')"
fi
new=$(comm -13 <(echo "$before") <(listening_abstract <<<"$unix"))
[[ -z $new ]] || lt_fail "abstract sockets appeared with the Domain, reachable by every user of the namespace: $new"
lt_log "ok: no abstract socket of the Domain in /proc/net/unix (the peer sees its path socket)"

# 2. The abstract name the old runsc used, tried directly: nothing listens.
#    Fails (connected) whenever a runsc with an abstract control socket runs.
#    Control: an abstract socket we listen on ourselves is reached by the
#    peer, the reach the old runsc's control socket had (file permissions
#    do not apply to abstract names).
probe=@lazaret-peer-probe-$$-$RANDOM
coproc LISTENER { exec "$tools/unix-connect" --listen "$probe"; }
listener_pid=$LISTENER_PID
read -r line <&"${LISTENER[0]}" || true
lt_assert_eq "control: our abstract listener" listening "$line"
lt_assert_eq "control: peer connects to our abstract socket" connected "$(peer_connect "$probe")"
eval "exec ${LISTENER[1]}>&-"
wait "$listener_pid" || true
lt_assert_eq "peer connects to @runsc-sandbox.$container" ECONNREFUSED \
        "$(peer_connect "@runsc-sandbox.$container" | cut -d' ' -f1)"

# 3. The control socket file: the owner connects (the probe and the path are
#    right); the peer gets EACCES. It would connect if the runtime directory
#    and the runsc root were 0755 and the socket file writable by others:
#    runsc itself checks no credentials that keep a host UID out.
lt_assert_eq "owner connects to the control socket" connected "$(connect "$ctl_sock")"
lt_assert_eq "peer connects to the control socket" EACCES "$(peer_connect "$ctl_sock" | cut -d' ' -f1)"

# 4. runsc as the peer, pointed at the Domain's runsc root: list shows
#    nothing of it, exec runs nothing, kill signals nothing. Control: the
#    owner's `runsc list` names the container. With a readable root (0755)
#    the peer's list would name it and its exec would go through check 3's
#    socket.
runsc=$(command -v runsc)
out=$(runsc --root "$root" list 2>&1) || lt_fail "control: the owner's runsc list failed: $out"
grep -qF "$container" <<<"$out" || lt_fail "control: the owner's runsc list does not name $container: $out"
# (runsc lists a root it cannot read as empty, exit 0: what counts is that
# the container is not in it.)
out=$(as_peer "$runsc" --root "$root" list 2>&1) || true
grep -qF "$container" <<<"$out" && lt_fail "the peer's runsc list names the container: $out"
lt_log "ok: the peer's runsc list shows nothing of the Domain: $(tr '\n' ' ' <<<"$out")"
set +e
out=$(as_peer "$runsc" --root "$root" exec "$container" /bin/sh -c 'id > /workspace/PWNED' 2>&1)
rc=$?
set -e
((rc != 0)) || lt_fail "the peer's runsc exec succeeded: $out"
[[ ! -e $LT_WS/PWNED ]] || lt_fail "the peer ran a command in the sandbox: $(cat "$LT_WS/PWNED")"
lt_log "ok: the peer's runsc exec fails ($rc) and wrote nothing"
set +e
out=$(as_peer "$runsc" --root "$root" kill "$container" KILL 2>&1)
rc=$?
set -e
((rc != 0)) || lt_fail "the peer's runsc kill succeeded: $out"
lt_log "ok: the peer's runsc kill fails ($rc)"

# 5. Every process of the sandbox scope refuses the peer's signal 0 with
#    EPERM (the kernel's check: the peer's UID is neither the process's real
#    nor saved UID). Control: the owner may signal the ones running as the
#    owner (the supervisor at least). It would fail if any of them ran as a
#    UID the peer holds, e.g. nobody/65534 or a subordinate range shared
#    with the peer.
scope=lazaret-$LT_DOMAIN-sandbox.scope
pids=$(lt_unit_pids "$scope")
[[ -n $pids ]] || lt_fail "no processes in $scope"
checked=0 owned=0
for pid in $pids; do
        [[ -d /proc/$pid ]] || continue
        out=$(as_peer /bin/bash -c 'kill -0 "$1"' kill "$pid" 2>&1) && lt_fail "the peer may signal process $pid of the sandbox ($(cat "/proc/$pid/comm"))"
        if [[ $out == *"Operation not permitted"* ]]; then
                checked=$((checked + 1))
        elif [[ -d /proc/$pid ]]; then
                lt_fail "the peer's kill -0 $pid failed for another reason: $out"
        fi
        if [[ $(stat -c %u "/proc/$pid") == "$(id -u)" ]] && kill -0 "$pid" 2>/dev/null; then
                owned=$((owned + 1))
        fi
done
((checked >= 3)) || lt_fail "expected the supervisor, gVisor's kernel and its gofer in $scope; the peer was refused by $checked"
((owned >= 1)) || lt_fail "control: the owner may signal none of the sandbox's processes"
lt_log "ok: the peer may signal none of $checked sandbox processes (the owner may signal $owned)"

# 6. The user bus and the Domain's bus name, and the Domain's activation
#    socket: connect() refused to the peer (0700 runtime directory). Control:
#    the owner connects to the bus and finds the Domain's name there. With a
#    0755 runtime directory the peer would reach the bus socket (0666), and
#    only the bus daemon's EXTERNAL authentication (our UID only) would stop
#    it: the busctl call below checks that layer too.
bus=$XDG_RUNTIME_DIR/bus
name=org.lazaret.Domain.d$LT_DOMAIN
lt_assert_eq "owner connects to the user bus" connected "$(connect "$bus")"
lt_busctl status "$name" >/dev/null || lt_fail "control: the owner does not find $name on the user bus"
lt_assert_eq "peer connects to the user bus" EACCES "$(peer_connect "$bus" | cut -d' ' -f1)"
set +e
out=$(as_peer busctl --address="unix:path=$bus" --timeout=5 call "$name" /org/lazaret/Domain \
        org.freedesktop.DBus.Peer Ping 2>&1)
rc=$?
set -e
((rc != 0)) || lt_fail "the peer reached $name on the owner's bus: $out"
lt_log "ok: the peer's bus call fails: $out"
act=$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN.sock
[[ -S $act ]] || lt_fail "control: no activation socket $act"
lt_assert_eq "peer connects to the activation socket" EACCES "$(peer_connect "$act" | cut -d' ' -f1)"

# 7. The Domain is unaffected: the session still runs, a new one works.
kill -0 "$bg" 2>/dev/null || lt_fail "the running session ended during the attacks"
lt_assert_eq "Domain state after the attacks" running "$(cd "$LT_WS" && lazaretctl status --json | jq -r .State)"
lt_assert_eq "a new session after the attacks" still-here "$(lt_launch -- /bin/echo still-here </dev/null)"
(cd "$LT_WS" && lazaretctl stop) >/dev/null
wait "$bg" 2>/dev/null || true
lt_wait_inactive

echo "PASS: a second user in the same network namespace cannot connect to, list or signal anything of the Domain"
