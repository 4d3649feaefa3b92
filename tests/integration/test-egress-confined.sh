#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The egress helper's own confinement, forgetting a live rule, and the
# reuse of synthetic addresses (spec section 4.5, "Egress by name": "The
# helper's own confinement", "Forgetting", "The synthetic pool"), with
# lazaret-egress from a -Dtest_hooks build on the tap of a "sandbox"
# namespace, as test-egress-helper runs it: both network namespaces are
# made here, in a user namespace of the test user's own inside the
# harness's namespace, the outside one fresh with only lo. The outside
# holds a DNS server (a.pool.test, b.pool.test, c.pool.test, held.test ->
# 198.18.0.10) and a server on 198.18.0.10:2222 that answers one line and
# holds each connection until its client closes it.
#   1. Confined: the running helper's status shows seccomp filter mode,
#      NO_NEW_PRIVS and no capability; its root (/proc/PID/root) is an
#      empty tmpfs holding only the run directory: no /etc/passwd, no
#      /bin; traffic still flows.
#   2. Forgetting: add_host held.test:2222 for the Domain's life, a
#      connection held open through it, then remove_host: the helper says
#      it removed the rule and closed one connection, the held connection
#      reaches EOF, held.test is NXDOMAIN again and a new connection to its
#      address is refused; remove_host of a rule never added says
#      removed false.
#   3. The pool (LAZARET_TEST_EGRESS_POOL=2, LAZARET_TEST_EGRESS_TTL=2):
#      a third name before the TTLs ran out is SERVFAIL; once they have,
#      it takes the least recently used address; an address a connection
#      holds is never taken, and a name whose answer is still within its
#      TTL neither.
#   4. A forbidden call in the running helper (the test_forbidden hook:
#      execve of /bin/true, then, in a second helper, open of /etc/passwd)
#      kills it with SIGSYS before it answers.
#   5. The next address: multi.pool.test resolves to 198.18.0.11, where
#      nothing listens, then 198.18.0.10: a connection the helper dials to
#      .11 first goes on to .10 and is carried; dead.pool.test (.11 and
#      .12, both refusing) is closed once both were tried; slow.pool.test
#      (198.18.0.13, where nothing answers, then .10) is carried after the
#      first try's 3 s.
#   6. The cap on bound names (LAZARET_TEST_EGRESS_NAMES=2,
#      LAZARET_TEST_EGRESS_TTL=2, the pool whole): a third name while two
#      are bound and within their TTL is SERVFAIL, logged with the cap;
#      once a TTL ran out it takes that binding's address, never a new one.
#   7. Out of descriptors (the helper started with 40 open files at most):
#      the sandbox holds every connection it can get and keeps asking for
#      one more, and a connection to the API socket is held too, so that
#      an accept() finds no descriptor; the helper does not spin (under a fifth of a CPU over 2 s;
#      a listener whose accept() failed stayed readable and was polled at
#      once before), and once the held connections close, a new one is
#      carried again.
set -Eeuo pipefail
. "$(dirname -- "$0")/../harness/lib.sh"

if [[ ${1:-} != --inner ]]; then
        lt_install --test-hooks
        lt_require_isolated_network
        for p in python3 jq unshare nsenter ip; do
                command -v "$p" >/dev/null || lt_fail "$p is needed on the host"
        done
        [[ -x $LT_PREFIX/libexec/lazaret-egress ]] || lt_fail "lazaret-egress is not installed in $LT_PREFIX/libexec"
        exec unshare --user --map-root-user --net --mount --fork --kill-child bash "$0" --inner
fi

# --- inside our own user, network and mount namespaces ------------------------
EGRESS=$LT_PREFIX/libexec/lazaret-egress
T=$(mktemp -d)
ADDR=198.18.0.10
POOL_RE='^10\.137\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\.[0-9]+$'
pids=()
cleanup() {
        local rc=$? p
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        if ((rc != 0)); then
                echo "--- lazaret-egress stderr ---" >&2
                cat "$T"/egress*.log >&2 2>/dev/null || true
        fi
        rm -rf "$T"
}
trap cleanup EXIT

ip link set lo up
ip addr add "$ADDR/32" dev lo
# Where nothing listens: a connection there is refused at once.
ip addr add 198.18.0.11/32 dev lo
ip addr add 198.18.0.12/32 dev lo
# Where nothing answers: 198.18.0.13 on a veth whose peer stays down, so a SYN waits on ARP.
ip link add slow0 type veth peer name slow1
ip link set slow0 up
ip route add 198.18.0.13/32 dev slow0

# A DNS server: A records for four names, NXDOMAIN otherwise.
python3 - <<'EOF' &
import socket, struct
names = {"a.pool.test": ["198.18.0.10"], "b.pool.test": ["198.18.0.10"], "c.pool.test": ["198.18.0.10"],
         "held.test": ["198.18.0.10"], "multi.pool.test": ["198.18.0.11", "198.18.0.10"],
         "dead.pool.test": ["198.18.0.11", "198.18.0.12"], "slow.pool.test": ["198.18.0.13", "198.18.0.10"]}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
while True:
    q, peer = s.recvfrom(4096)
    qid = struct.unpack(">H", q[:2])[0]
    off, labels = 12, []
    while q[off]:
        labels.append(q[off + 1:off + 1 + q[off]].decode())
        off += 1 + q[off]
    qtype = struct.unpack(">H", q[off + 1:off + 3])[0]
    name = ".".join(labels).lower()
    question = q[12:off + 5]
    if name not in names:
        s.sendto(struct.pack(">HHHHHH", qid, 0x8183, 1, 0, 0, 0) + question, peer)
        continue
    ans = [b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 300, 4) + socket.inet_aton(a) for a in names[name]] if qtype == 1 else []
    s.sendto(struct.pack(">HHHHHH", qid, 0x8180, 1, len(ans), 0, 0) + question + b"".join(ans), peer)
EOF
pids+=($!)
# The held server: one line, then the connection stays until its client closes it.
python3 - "$ADDR" <<'EOF' &
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 2222)); s.listen(16)
def hold(c):
    c.sendall(b"held\n")
    try:
        while c.recv(4096):
            pass
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=hold, args=(c,), daemon=True).start()
EOF
pids+=($!)
for _ in $(seq 50); do timeout 1 bash -c "exec 3<>/dev/tcp/$ADDR/2222" 2>/dev/null && break; sleep 0.1; done

unshare --net sleep infinity &
guest=$!
pids+=($guest)
sleep 0.1
G=/proc/$guest/ns/net
in_guest() { nsenter --net="$G" "$@"; }

# start_helper N: lazaret-egress number N on tap0 (its pid in $egress, its API socket in $API);
# the rule *.pool.test:2222 and whatever LAZARET_TEST_EGRESS_* the caller set.
start_helper() {
        local run=$T/run$1 ready
        mkdir -m 0700 "$run"
        mkfifo "$T/ready$1" "$T/exit$1"
        exec 8<>"$T/ready$1"
        ${NOFILE:+prlimit --nofile="$NOFILE:$NOFILE" --} "$EGRESS" --run-dir="$run" --api-socket="$run/api.sock" --resolver=127.0.0.1 \
                --allow-host='*.pool.test:2222' --ready-fd=3 --exit-fd=4 "$G" tap0 \
                3<>"$T/ready$1" 4<"$T/exit$1" 2>"$T/egress$1.log" &
        egress=$!
        exec 9<>"$T/exit$1"
        ready=$(timeout 10 head -c1 <&8) || true
        exec 8>&-
        [[ $ready == 1 ]] || lt_fail "lazaret-egress did not become ready: $(cat "$T/egress$1.log")"
        API=$run/api.sock
        RUN=$run
}
api() {
        python3 - "$API" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode())
print(s.recv(4096).decode())
EOF
}
# dnsq NAME: "rcode=N addr=A" from 10.137.54.3.
dnsq() {
        in_guest python3 - "$1" <<'EOF'
import random, socket, struct, sys
qid = random.randrange(65536)
q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
for label in sys.argv[1].split("."):
    q += bytes([len(label)]) + label.encode()
q += b"\0" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
s.sendto(q, ("10.137.54.3", 53))
r, _ = s.recvfrom(4096)
an = struct.unpack(">H", r[6:8])[0]
print("rcode=%d addr=%s" % (struct.unpack(">H", r[2:4])[0] & 0xf, socket.inet_ntoa(r[-4:]) if an else "-"))
EOF
}
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
# hold ADDR TAG: a connection to ADDR:2222 from the sandbox, held open until $T/TAG.stop exists;
# its first line goes to $T/TAG.out, and "eof" when the helper closed it.
hold() {
        nsenter --net="$G" python3 - "$1" "$T/$2" <<'EOF' &
import os, socket, sys, time
s = socket.create_connection((sys.argv[1], 2222), timeout=5)
out = open(sys.argv[2] + ".out", "w", buffering=1)
out.write(s.recv(100).decode())
s.settimeout(0.1)
while not os.path.exists(sys.argv[2] + ".stop"):
    try:
        if s.recv(100) == b"":
            out.write("eof\n")
            break
    except socket.timeout:
        pass
    except OSError:
        out.write("eof\n")
        break
EOF
        pids+=($!)
        for _ in $(seq 50); do grep -q held "$T/$2.out" 2>/dev/null && return 0; sleep 0.1; done
        lt_fail "no held connection to $1:2222 ($2): $(cat "$T/$2.out" 2>/dev/null)"
}
connect_refused() {
        in_guest timeout 5 bash -c "exec 3<>/dev/tcp/$1/2222" 2>/dev/null && lt_fail "a connection to $1:2222 was carried"
        return 0
}

# The guest's side of a new helper's tap0.
guest_net() {
        in_guest ip link set tap0 up mtu 65520
        in_guest ip addr add 10.137.54.100/24 dev tap0
        in_guest ip route add default via 10.137.54.2 dev tap0
}
# stop_helper: the running helper told to go (its exit pipe closed), and gone.
stop_helper() {
        exec 9>&-
        wait "$egress" || true
}

export LAZARET_TEST_EGRESS_POOL=2 LAZARET_TEST_EGRESS_TTL=2
start_helper 1
in_guest ip link set lo up
guest_net

# --- 1. confined ------------------------------------------------------------------
st=/proc/$egress/status
lt_assert_eq "the helper's seccomp mode" 2 "$(awk '/^Seccomp:/{print $2}' "$st")"
lt_assert_eq "the helper's NoNewPrivs" 1 "$(awk '/^NoNewPrivs:/{print $2}' "$st")"
lt_assert_eq "the helper's effective capabilities" 0000000000000000 "$(awk '/^CapEff:/{print $2}' "$st")"
lt_assert_eq "the helper's bounding set" 0000000000000000 "$(awk '/^CapBnd:/{print $2}' "$st")"
root=/proc/$egress/root
[[ ! -e $root/etc/passwd && ! -e $root/bin && ! -e $root/proc/self ]] ||
        lt_fail "the helper sees the host's files: $(ls -A "$root")"
lt_assert_eq "what the helper's root holds" "$(cut -d/ -f2 <<<"$RUN")" "$(ls -A "$root")"
[[ -S $root$RUN/api.sock ]] || lt_fail "the helper's run directory is not in its root: $(cd "$root" && find . | head)"
lt_log "ok: seccomp filter, NO_NEW_PRIVS, no capabilities, a root holding only $RUN"

# --- 2. forgetting a live rule -------------------------------------------------------
lt_assert_eq "held.test before add_host" 3 "$(field rcode "$(dnsq held.test)")"
lt_assert_eq "add_host held.test:2222" '{"return":{}}' \
        "$(api '{"execute":"add_host","arguments":{"rule":"held.test:2222","scope":"domain"}}')"
out=$(dnsq held.test)
HELD=$(field addr "$out")
[[ $(field rcode "$out") == 0 && $HELD =~ $POOL_RE ]] || lt_fail "held.test after add_host: $out"
hold "$HELD" h1
out=$(api '{"execute":"remove_host","arguments":{"rule":"HELD.test:2222"}}')
lt_assert_eq "remove_host held.test:2222" '{"return":{"removed":true,"closed":1}}' "$out"
for _ in $(seq 30); do grep -q eof "$T/h1.out" && break; sleep 0.1; done
grep -q eof "$T/h1.out" || lt_fail "the held connection to held.test stayed open after remove_host"
lt_assert_eq "held.test after remove_host" 3 "$(field rcode "$(dnsq held.test)")"
connect_refused "$HELD"
grep -q "connection to held.test:2222 refused" "$T/egress1.log" || lt_fail "the helper logged no refusal for held.test"
lt_assert_eq "remove_host of a rule never added" '{"return":{"removed":false,"closed":0}}' \
        "$(api '{"execute":"remove_host","arguments":{"rule":"never.test"}}')"
out=$(api '{"execute":"remove_host","arguments":{"rule":"http://x.test"}}')
jq -e '.error.desc' <<<"$out" >/dev/null || lt_fail "remove_host of a URL: $out"
lt_log "ok: remove_host ends the rule, closes its connection, and the name is denied again"

# --- 3. the pool of two addresses -------------------------------------------------------
# held.test took one; wait out its TTL, then a and b take both.
sleep 2.2
A=$(field addr "$(dnsq a.pool.test)")
B=$(field addr "$(dnsq b.pool.test)")
[[ $A =~ $POOL_RE && $B =~ $POOL_RE && $A != "$B" ]] || lt_fail "a.pool.test=$A b.pool.test=$B"
[[ $A == "$HELD" || $B == "$HELD" ]] || lt_fail "neither a nor b reused held.test's address $HELD"
lt_assert_eq "c.pool.test while a and b are within their TTL" 2 "$(field rcode "$(dnsq c.pool.test)")"
hold "$B" hb
sleep 2.2
# a: no connection, TTL over; b: a connection holds it.
out=$(dnsq c.pool.test)
lt_assert_eq "c.pool.test once a's TTL ran out (a's address, b's is held)" "rcode=0 addr=$A" "$out"
grep -q "now stands for c.pool.test (was a.pool.test)" "$T/egress1.log" || lt_fail "the helper did not log the reuse"
# c is within its TTL and b is held: a again has no address.
lt_assert_eq "a.pool.test while b is held and c within its TTL" 2 "$(field rcode "$(dnsq a.pool.test)")"
out=$(in_guest timeout 5 bash -c "exec 3<>/dev/tcp/$A/2222; head -n1 <&3") || lt_fail "c.pool.test:2222 at $A failed"
lt_assert_eq "c.pool.test:2222 at the reused address" held "$out"
touch "$T/hb.stop"
sleep 2.2
# b's connection is gone and both TTLs are over: a takes the least recently used, b's.
lt_assert_eq "a.pool.test after b's connection closed" "rcode=0 addr=$B" "$(dnsq a.pool.test)"
lt_log "ok: a pool of two: reused least recently used first, never while held or within its TTL"

# --- 4. a forbidden call kills the helper -----------------------------------------------
kill_check() {
        local what=$1 status=0
        api "{\"execute\":\"test_forbidden\",\"arguments\":{\"call\":\"$what\"}}" >"$T/forbidden.out" 2>/dev/null || true
        wait "$egress" || status=$?
        lt_assert_eq "the helper's status after $what (128 + SIGSYS)" 159 "$status"
        [[ -z $(tr -d '[:space:]' <"$T/forbidden.out") ]] || lt_fail "the helper answered after $what: $(cat "$T/forbidden.out")"
}
kill_check execve
exec 9>&-
unset LAZARET_TEST_EGRESS_POOL LAZARET_TEST_EGRESS_TTL
start_helper 2
kill_check open
exec 9>&-
lt_log "ok: execve and open of /etc/passwd in the running helper kill it with SIGSYS"

# --- 5. the next address ------------------------------------------------------------------
start_helper 3
guest_net
M=$(field addr "$(dnsq multi.pool.test)")
[[ $M =~ $POOL_RE ]] || lt_fail "multi.pool.test resolved to '$M'"
# The first connection starts at the first address (.11, refused), the second at .10.
for n in 1 2; do
        out=$(in_guest timeout 5 bash -c "exec 3<>/dev/tcp/$M/2222; head -n1 <&3") || true
        lt_assert_eq "multi.pool.test:2222, connection $n" held "$out"
done
grep -qF "connection to multi.pool.test:2222 (198.18.0.11) failed: Connection refused; trying the next address" \
        "$T/egress3.log" || lt_fail "the helper did not log going on from 198.18.0.11"
D=$(field addr "$(dnsq dead.pool.test)")
out=$(in_guest timeout 5 bash -c "exec 3<>/dev/tcp/$D/2222; head -n1 <&3") || true
lt_assert_eq "dead.pool.test:2222 (both addresses refuse)" "" "$out"
for want in "(198.18.0.11) failed: Connection refused; trying the next address" \
        "(198.18.0.12) failed: Connection refused"; do
        grep -qF "connection to dead.pool.test:2222 $want" "$T/egress3.log" ||
                lt_fail "the helper did not log 'connection to dead.pool.test:2222 $want'"
done
grep -q "dead.pool.test:2222 (198.18.0.12) failed: Connection refused; trying" "$T/egress3.log" &&
        lt_fail "the helper went on past the last of dead.pool.test's addresses"
S=$(field addr "$(dnsq slow.pool.test)")
t0=$(date +%s%N)
out=$(in_guest timeout 8 bash -c "exec 3<>/dev/tcp/$S/2222; head -n1 <&3") || true
t1=$(date +%s%N)
lt_assert_eq "slow.pool.test:2222 (its first address never answers)" held "$out"
(((t1 - t0) / 1000000 >= 2500)) || lt_fail "slow.pool.test was carried after $(((t1 - t0) / 1000000)) ms, before the first try's 3 s"
grep -qF "connection to slow.pool.test:2222 (198.18.0.13) failed: " "$T/egress3.log" ||
        lt_fail "the helper did not log going on from 198.18.0.13"
stop_helper
lt_log "ok: a refused dial goes on to the name's next address; the last one's failure closes the connection"

# --- 6. the cap on bound names --------------------------------------------------------------
export LAZARET_TEST_EGRESS_NAMES=2 LAZARET_TEST_EGRESS_TTL=2
start_helper 4
guest_net
A=$(field addr "$(dnsq a.pool.test)")
B=$(field addr "$(dnsq b.pool.test)")
[[ $A =~ $POOL_RE && $B =~ $POOL_RE && $A != "$B" ]] || lt_fail "a.pool.test=$A b.pool.test=$B"
lt_assert_eq "c.pool.test while two names are bound within their TTL" 2 "$(field rcode "$(dnsq c.pool.test)")"
grep -qF "cannot bind c.pool.test: 2 names are bound (the most a sandbox may bind)" "$T/egress4.log" ||
        lt_fail "the helper did not log the cap"
sleep 2.2
lt_assert_eq "c.pool.test once the TTLs ran out (a's address, not a third)" "rcode=0 addr=$A" "$(dnsq c.pool.test)"
grep -qF "the most names a sandbox may bind are bound: $A now stands for c.pool.test (was a.pool.test)" \
        "$T/egress4.log" || lt_fail "the helper did not log the takeover at the cap"
stop_helper
unset LAZARET_TEST_EGRESS_NAMES LAZARET_TEST_EGRESS_TTL
lt_log "ok: at the cap of bound names a new name is SERVFAIL, or takes over the least recently used binding"

# --- 7. out of descriptors ------------------------------------------------------------------
NOFILE=40 start_helper 5
guest_net
A=$(field addr "$(dnsq a.pool.test)")
[[ $A =~ $POOL_RE ]] || lt_fail "a.pool.test resolved to '$A'"
nsenter --net="$G" python3 - "$A" "$T/fill" <<'EOF' &
import os, socket, sys, time
addr, tag = sys.argv[1], sys.argv[2]
held = []
for _ in range(40):
    try:
        s = socket.create_connection((addr, 2222), timeout=1)
        s.settimeout(0.3)
        if s.recv(10).startswith(b"held"):
            held.append(s)
            continue
        s.close()
    except OSError:
        pass
open(tag + ".n", "w").write("%d\n" % len(held))
while not os.path.exists(tag + ".stop"):
    try:
        s = socket.create_connection((addr, 2222), timeout=0.3)
        s.settimeout(0.3)
        s.recv(10)
        s.close()
    except OSError:
        pass
    time.sleep(0.05)
EOF
filler=$!
pids+=($filler)
for _ in $(seq 300); do [[ -s $T/fill.n ]] && break; sleep 0.1; done
[[ -s $T/fill.n ]] || lt_fail "the sandbox's connections did not settle in 30 s"
n=$(cat "$T/fill.n")
((n > 0 && n < 40)) || lt_fail "the sandbox held $n connections: the helper's table was not filled"
# A connection to the API socket held open as well: once the sandbox's
# attempts rest, at most two descriptors are free (an attempt that gets two
# fails its dial and gives both back), so this one, or the sandbox's next
# attempt after it, finds libslirp's end made and no descriptor for the
# helper's accept().
python3 - "$API" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
time.sleep(8)
EOF
apiholder=$!
pids+=($apiholder)
sleep 0.5
ticks() { awk '{ print $14 + $15 }' "/proc/$egress/stat"; }
t0=$(ticks)
sleep 2
t1=$(ticks)
lt_log "the helper carried $n connections with 40 open files, then used $((t1 - t0)) ticks in 2 s while asked for more"
((t1 - t0 < 40)) || lt_fail "the helper used $((t1 - t0)) ticks of CPU in 2 s with its descriptors used up (it spins)"
kill -0 "$egress" 2>/dev/null || lt_fail "the helper died with its descriptors used up: $(tail -n 3 "$T/egress5.log")"
grep -q "cannot take new connections: Too many open files" "$T/egress5.log" ||
        lt_fail "the helper did not say that it could not take new connections: $(grep -v 'Too many' "$T/egress5.log" | tail -n 5)"
lt_log "the helper said: $(grep -m1 'cannot take new' "$T/egress5.log"); libslirp's own lines: $(grep -c '^lazaret-egress: Slirp' "$T/egress5.log" || true), the first: $(grep -m1 '^lazaret-egress: Slirp' "$T/egress5.log" || true)"
touch "$T/fill.stop"
wait "$filler" 2>/dev/null || true
kill "$apiholder" 2>/dev/null || true
wait "$apiholder" 2>/dev/null || true
out=
for _ in $(seq 20); do
        out=$(in_guest timeout 3 bash -c "exec 3<>/dev/tcp/$A/2222; head -n1 <&3") || true
        [[ $out == held ]] && break
        sleep 0.25
done
lt_assert_eq "a connection once the held ones closed" held "$out"
grep -q "taking new connections again" "$T/egress5.log" || lt_fail "the helper did not say it takes connections again"
stop_helper
unset NOFILE
lt_log "ok: with its descriptors used up the helper waits instead of spinning, and carries again once they are free"
lt_log "PASS"
