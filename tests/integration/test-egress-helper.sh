#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The egress helper alone (issue 35 item 2, spec section 4.5 "Egress by
# name"): lazaret-egress on the tap of a "sandbox" network namespace whose
# kernel stack stands in for gVisor's, with servers this test starts in the
# "outside" namespace. Both namespaces are made here, in a user namespace of
# the test user's own (unshare), inside the harness's namespace: the outside
# one is fresh, with only lo, so nothing can leave it. The outside holds, on
# 198.18.0.10 (RFC 2544's benchmarking range, on lo, outside the floor's
# default denies) and 127.0.0.1:
#   - a DNS server (Python) on 127.0.0.1:53, the helper's --resolver,
#     answering from a hosts file: api.allowed.test, x.wild.test, git.allowed.test,
#     denied.test, edge.cdn.test -> 198.18.0.10; alias.allowed.test a CNAME
#     of edge.cdn.test; private.allowed.test -> 192.168.77.7 (the floor must
#     drop it); every query logged;
#   - openssl s_server on 198.18.0.10:443 with one certificate for every
#     name (several names on one address), serving hello.txt;
#   - python3 http.server on 198.18.0.10:80, serving hello.txt;
#   - a banner server on 198.18.0.10:2222 (the name:port rule's service);
#   - the carried connections' server on 198.18.0.10:2223 (echo, send,
#     hold; the handover's checks);
#   - a real ssh server, Debian's dropbear, on 198.18.0.10:22, with a bare
#     git repository, logged into as this namespace's root (the test user)
#     with a key made here;
#   - a UDP listener on 198.18.0.10:9999 that logs what it gets;
#   - the name canary's responder on a Unix socket (--canary-socket), as
#     the supervisor's is during the attestation.
# The rules: api.allowed.test, alias.allowed.test, private.allowed.test,
# *.wild.test, git.allowed.test:22,2222,2223. Checked from the sandbox namespace:
#   allowed name (A synthetic from 10.137.64.0/18, HTTPS and HTTP fetched),
#   wildcard (x.wild.test yes, wild.test NXDOMAIN), CNAME (one A owned by the
#   name asked, no CNAME shown, fetch works; edge.cdn.test itself NXDOMAIN),
#   denied name (NXDOMAIN, and the resolver never asked), AAAA empty, DNS
#   over TCP, an upstream answer truncated over UDP (big.allowed.test: the
#   helper asks again over TCP), a name resolving into a denied range
#   (SERVFAIL), direct IP to
#   198.18.0.10 and to a pool address never handed out (refused at once),
#   wrong SNI and wrong Host on a synthetic address (refused, the server
#   never sees a request), UDP other than DNS (ICMP port unreachable, the
#   listener gets nothing), the port rule (2222 carried, 443 of that name and
#   2222 of another refused, a ClientHello naming another host on 2222
#   refused), checked connections handed to libslirp (a held one's socket
#   held once by the helper, no accepted Unix connection; eight echo
#   connections at once byte for byte; a server-first close; 700 short
#   connections; one ended by remove_host), ssh and git over ssh by name to git.allowed.test:22 (OpenSSH's
#   client: a command, ls-remote, clone and push), the attestation's name
#   canaries (allowed.canary.lazaret.invalid bound to 10.137.64.1 from the
#   helper's start, without asking upstream, and carried, ClientHello and all, to the canary socket; any other name
#   under .invalid NXDOMAIN, never asked upstream), a published port
#   (slirp4netns' add_hostfwd on the API socket) fetched from the outside's
#   127.0.0.1, and denied names (issue 35 item 4): a watcher on the API
#   socket gets each refused name once a second, never one with ESC or '_'
#   nor one under .invalid, add_host takes effect at once, and a once allow
#   lapses 60 s after it was used. The ssh server needs setgroups(2)
#   (dropbear's initgroups() as root), so the user namespace maps the test
#   user's subordinate IDs too.
set -Eeuo pipefail
. "$(dirname -- "$0")/../harness/lib.sh"

# dropbear lives in /usr/sbin, outside a plain user's PATH.
export PATH=$PATH:/usr/sbin:/sbin
if [[ ${1:-} != --inner ]]; then
        lt_install
        lt_require_isolated_network
        for p in curl openssl python3 jq unshare nsenter ip dropbear dropbearkey ssh ssh-keygen git; do
                command -v "$p" >/dev/null || lt_fail "$p is needed on the host"
        done
        [[ -x $LT_PREFIX/libexec/lazaret-egress ]] || lt_fail "lazaret-egress is not installed in $LT_PREFIX/libexec"
        exec unshare --user --map-root-user --map-auto --net --mount --fork --kill-child bash "$0" --inner
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
                cat "$T/egress.log" >&2 2>/dev/null || true
                echo "--- DNS server log ---" >&2
                cat "$T/dns.log" >&2 2>/dev/null || true
                echo "--- dropbear log ---" >&2
                cat "$T/dropbear.log" >&2 2>/dev/null || true
        fi
        rm -rf "$T"
}
trap cleanup EXIT

[[ -z $(ip -4 route show) ]] || lt_fail "the fresh outside namespace has routes: $(ip -4 route show)"
ip link set lo up
ip addr add "$ADDR/32" dev lo

# --- the outside's servers ---------------------------------------------------------
cat >"$T/hosts" <<EOF
$ADDR api.allowed.test
$ADDR x.wild.test
$ADDR git.allowed.test
$ADDR denied.test
$ADDR edge.cdn.test
192.168.77.7 private.allowed.test
EOF
# A DNS server of its own (dnsmasq changes its group at start, which a user
# namespace with one mapped ID refuses): A records from the hosts file, one
# CNAME, NXDOMAIN otherwise; big.allowed.test's answer (40 A records) only
# over TCP, truncated over UDP; every query logged as "query[TYPE] NAME
# from ADDR", with " over tcp" when it came over TCP.
python3 - "$T/hosts" "$T/dns.log" <<'EOF' &
import socket, struct, sys, threading
hosts = {}
for line in open(sys.argv[1]):
    addr, name = line.split()
    hosts[name] = addr
cnames = {"alias.allowed.test": "edge.cdn.test"}
def wire(name):
    return b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
def answer(q, peer, tcp):
    qid, flags, qd = struct.unpack(">HHH", q[:6])
    off, labels = 12, []
    while q[off]:
        labels.append(q[off + 1:off + 1 + q[off]].decode())
        off += 1 + q[off]
    qtype, qclass = struct.unpack(">HH", q[off + 1:off + 5])
    name = ".".join(labels).lower()
    question = q[12:off + 5]
    with open(sys.argv[2], "a") as log:
        log.write("query[%d] %s from %s%s\n" % (qtype, name, peer[0], " over tcp" if tcp else ""))
    answers, rcode, target = [], 0, name
    if name == "big.allowed.test" and qtype == 1:
        if not tcp:
            return struct.pack(">HHHHHH", qid, 0x8380, 1, 0, 0, 0) + question
        answers = [b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 300, 4) + socket.inet_aton("198.18.0.10")] * 40
        return struct.pack(">HHHHHH", qid, 0x8180, 1, len(answers), 0, 0) + question + b"".join(answers)
    if name in cnames:
        target = cnames[name]
        answers.append(b"\xc0\x0c" + struct.pack(">HHIH", 5, 1, 300, len(wire(target))) + wire(target))
    if target in hosts:
        if qtype == 1:
            owner = b"\xc0\x0c" if target == name else wire(target)
            answers.append(owner + struct.pack(">HHIH", 1, 1, 300, 4) + socket.inet_aton(hosts[target]))
    elif name not in cnames:
        rcode = 3
    return struct.pack(">HHHHHH", qid, 0x8180 | rcode, 1, len(answers), 0, 0) + question + b"".join(answers)
def tcp_loop():
    t = socket.socket()
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind(("127.0.0.1", 53))
    t.listen(8)
    while True:
        c, peer = t.accept()
        data = b""
        while len(data) < 2 or len(data) < 2 + struct.unpack(">H", data[:2])[0]:
            chunk = c.recv(4096)
            if not chunk:
                break
            data += chunk
        if len(data) >= 2:
            r = answer(data[2:2 + struct.unpack(">H", data[:2])[0]], peer, True)
            c.sendall(struct.pack(">H", len(r)) + r)
        c.close()
threading.Thread(target=tcp_loop, daemon=True).start()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
while True:
    q, peer = s.recvfrom(4096)
    s.sendto(answer(q, peer, False), peer)
EOF
pids+=($!)

mkdir "$T/www"
echo "hello from the outside" >"$T/www/hello.txt"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=egress-test \
        -addext "subjectAltName=DNS:api.allowed.test,DNS:x.wild.test,DNS:alias.allowed.test,DNS:git.allowed.test,DNS:evil.test" \
        -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
(cd "$T/www" && exec openssl s_server -quiet -accept "$ADDR:443" -cert "$T/cert.pem" -key "$T/key.pem" -WWW \
        >"$T/tls.log" 2>&1) &
pids+=($!)
python3 -m http.server 80 --bind "$ADDR" --directory "$T/www" >"$T/http.log" 2>&1 &
pids+=($!)
python3 - "$ADDR" "$T/banner.log" <<'EOF' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 2222)); s.listen(16)
while True:
    c, _ = s.accept()
    c.sendall(b"SSH-2.0-egress-test\r\n")
    c.settimeout(5)
    try:
        data = c.recv(4096)
    except OSError:
        data = b""
    with open(sys.argv[2], "ab") as f:
        f.write(b"got:" + data.replace(b"\n", b"\\n") + b"\n")
    if data:
        c.sendall(b"echo:" + data)
    c.close()
EOF
pids+=($!)
# The carried connections' server on 2223 (the handover to libslirp, spec
# 4.5 "Carrying a checked connection"): the client's first line says what to do, nothing is sent
# before it. "echo": everything back until the client's EOF, then ours;
# "send N": N random bytes (their SHA-256 logged), then ours first; "hold":
# nothing until the connection ends, which is logged.
python3 - "$ADDR" "$T/carry.log" <<'EOF' &
import hashlib, os, socket, sys, threading
def log(line):
    with open(sys.argv[2], "a") as f:
        f.write(line + "\n")
def serve(c):
    first = b""
    while not first.endswith(b"\n"):
        d = c.recv(1)
        if not d:
            c.close()
            return
        first += d
    cmd = first.decode().split()
    if cmd[0] == "echo":
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
    elif cmd[0] == "send":
        data = os.urandom(int(cmd[1]))
        log("sent %s" % hashlib.sha256(data).hexdigest())
        c.sendall(data)
    elif cmd[0] == "hold":
        try:
            c.recv(1)
        except OSError:
            pass
        log("hold %s ended" % cmd[1])
    c.close()
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 2223)); s.listen(64)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
pids+=($!)
python3 - "$ADDR" "$T/udp.log" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 9999))
while True:
    d, a = s.recvfrom(4096)
    with open(sys.argv[2], "a") as f:
        f.write("udp from %s: %r\n" % (a, d))
EOF
pids+=($!)
# The ssh server: dropbear as this namespace's root, whose home is ours for
# the test (authorized_keys there), a host key of its own, no passwords.
mkdir -m 0700 "$T/home" "$T/home/.ssh"
mount --bind "$T/home" /root
ssh-keygen -q -t ed25519 -N '' -C lazaret-egress-test -f "$T/id"
install -m 0600 "$T/id.pub" "$T/home/.ssh/authorized_keys"
dropbearkey -t ed25519 -f "$T/hostkey" >/dev/null 2>&1
echo "git.allowed.test $(dropbearkey -y -f "$T/hostkey" | awk '/^ssh-ed25519 /{print $1, $2}')" >"$T/known_hosts"
dropbear -F -E -s -j -k -p "$ADDR:22" -r "$T/hostkey" -P "$T/dropbear.pid" 2>"$T/dropbear.log" &
pids+=($!)
git init -q -b main "$T/src"
git -C "$T/src" -c user.name=test -c user.email=test@lazaret.invalid commit -q --allow-empty -m "made outside"
git clone -q --bare "$T/src" "$T/repo.git"
# The name canary's responder, as the supervisor's: one TLS record read, then the answer.
python3 - "$T/run-canary.sock" "$T/canary.log" <<'EOF' &
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(8)
while True:
    c, _ = s.accept()
    c.settimeout(5)
    data = b""
    try:
        while len(data) < 5 or len(data) < 5 + struct.unpack(">H", data[3:5])[0]:
            chunk = c.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    with open(sys.argv[2], "a") as f:
        f.write("got %d bytes, first 0x%02x\n" % (len(data), data[0] if data else 0))
    c.sendall(b"canary-answer\n")
    c.close()
EOF
pids+=($!)
for _ in $(seq 50); do
        [[ -S $T/run-canary.sock ]] && timeout 1 bash -c "exec 3<>/dev/tcp/$ADDR/22" 2>/dev/null &&
                timeout 1 bash -c "exec 3<>/dev/tcp/$ADDR/2223" 2>/dev/null && break
        sleep 0.1
done

# --- the sandbox namespace and the helper --------------------------------------------
unshare --net sleep infinity &
guest=$!
pids+=($guest)
sleep 0.1
G=/proc/$guest/ns/net
in_guest() { nsenter --net="$G" "$@"; }

mkdir -m 0700 "$T/run"
mkfifo "$T/ready" "$T/exit"
# The test holds the readiness FIFO open itself: a byte the helper writes
# and then closes its end on would otherwise be lost if no reader had it
# open yet (a FIFO's data goes with its last opener).
exec 8<>"$T/ready"
"$EGRESS" --run-dir="$T/run" --api-socket="$T/run/api.sock" --resolver=127.0.0.1 \
        --allow-host=api.allowed.test --allow-host=alias.allowed.test --allow-host=private.allowed.test \
        --allow-host=big.allowed.test \
        --allow-host='*.wild.test' --allow-host=git.allowed.test:22,2222,2223 --canary-socket="$T/run-canary.sock" \
        --ready-fd=3 --exit-fd=4 "$G" tap0 3<>"$T/ready" 4<"$T/exit" 2>"$T/egress.log" &
egress=$!
pids+=($egress)
# Read-write opens of a FIFO do not wait for the other end; the helper's
# exit fd reaches EOF when fd 9, its only writer, is closed.
exec 9<>"$T/exit"
ready=$(timeout 10 head -c1 <&8) || true
exec 8>&-
[[ $ready == 1 ]] || lt_fail "lazaret-egress did not become ready: $(cat "$T/egress.log")"
lt_log "ok: lazaret-egress ready (pid $egress)"

in_guest ip link set lo up
in_guest ip link set tap0 up mtu 65520
in_guest ip addr add 10.137.54.100/24 dev tap0
in_guest ip route add default via 10.137.54.2 dev tap0
echo "nameserver 10.137.54.3" >"$T/resolv.conf"
mount --bind "$T/resolv.conf" /etc/resolv.conf
# Names resolve through DNS only (our hosts file has none of them).
[[ -z $(grep -E 'allowed\.test|wild\.test|cdn\.test' /etc/hosts || true) ]] || lt_fail "/etc/hosts names a test name"

# --- DNS from the sandbox ------------------------------------------------------------
# dnsq [--tcp] NAME [TYPE]: "rcode=N an=COUNT types=T,.. addrs=A,.." from 10.137.54.3.
dnsq() {
        in_guest python3 - "$@" <<'EOF'
import random, socket, struct, sys
args = sys.argv[1:]
tcp = args[0] == "--tcp"
if tcp:
    args = args[1:]
name = args[0]
qtype = {"A": 1, "AAAA": 28, "HTTPS": 65, "TXT": 16}[args[1] if len(args) > 1 else "A"]
qid = random.randrange(65536)
q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
for label in name.split("."):
    q += bytes([len(label)]) + label.encode()
q += b"\0" + struct.pack(">HH", qtype, 1)
if tcp:
    s = socket.create_connection(("10.137.54.3", 53), timeout=5)
    s.sendall(struct.pack(">H", len(q)) + q)
    s.shutdown(socket.SHUT_WR)  # a half-closed client still gets its answer
    buf = b""
    while len(buf) < 2 or len(buf) < 2 + struct.unpack(">H", buf[:2])[0]:
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
    r = buf[2:]
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(q, ("10.137.54.3", 53))
    r, _ = s.recvfrom(4096)
rid, flags, qd, an, ns, ar = struct.unpack(">HHHHHH", r[:12])
assert rid == qid, "answer ID differs"
off = 12
def skip_name(off):
    while True:
        l = r[off]
        if l == 0:
            return off + 1
        if l & 0xc0 == 0xc0:
            return off + 2
        off += 1 + l
for _ in range(qd):
    off = skip_name(off) + 4
types, addrs = [], []
for _ in range(an):
    off = skip_name(off)
    t, c, ttl, rdl = struct.unpack(">HHIH", r[off:off + 10])
    off += 10
    types.append(str(t))
    if t == 1:
        addrs.append(socket.inet_ntoa(r[off:off + 4]))
    off += rdl
print("rcode=%d an=%d types=%s addrs=%s" % (flags & 0xf, an, ",".join(types), ",".join(addrs)))
EOF
}
field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2"; }
dns_logged() { grep -c "query\[[0-9]*\] $1 from" "$T/dns.log" || true; }

out=$(dnsq api.allowed.test)
[[ $(field rcode "$out") == 0 && $(field an "$out") == 1 ]] || lt_fail "api.allowed.test: $out"
API=$(field addrs "$out")
[[ $API =~ $POOL_RE ]] || lt_fail "api.allowed.test was answered $API, not a synthetic address: $out"
out2=$(dnsq api.allowed.test)
lt_assert_eq "api.allowed.test asked again" "$API" "$(field addrs "$out2")"
lt_log "ok: allowed name api.allowed.test -> $API (synthetic, stable)"

out=$(dnsq x.wild.test)
WILD=$(field addrs "$out")
[[ $(field rcode "$out") == 0 && $WILD =~ $POOL_RE && $WILD != "$API" ]] || lt_fail "x.wild.test: $out"
out=$(dnsq wild.test)
lt_assert_eq "wild.test (the wildcard's own name) rcode" 3 "$(field rcode "$out")"
lt_log "ok: wildcard: x.wild.test -> $WILD, wild.test NXDOMAIN"

out=$(dnsq alias.allowed.test)
ALIAS=$(field addrs "$out")
[[ $(field rcode "$out") == 0 && $(field types "$out") == 1 && $ALIAS =~ $POOL_RE ]] ||
        lt_fail "alias.allowed.test (a CNAME of edge.cdn.test) should be one A record: $out"
grep -q "query\[1\] alias.allowed.test from" "$T/dns.log" || lt_fail "the resolver was not asked for alias.allowed.test"
out=$(dnsq edge.cdn.test)
lt_assert_eq "edge.cdn.test (the CNAME's target, no rule) rcode" 3 "$(field rcode "$out")"
lt_log "ok: CNAME: alias.allowed.test -> $ALIAS (no CNAME shown), edge.cdn.test NXDOMAIN"

n_before=$(dns_logged denied.test)
out=$(dnsq denied.test)
lt_assert_eq "denied.test rcode" 3 "$(field rcode "$out")"
lt_assert_eq "queries for denied.test that reached the resolver" "$n_before" "$(dns_logged denied.test)"
grep -q 'denied name "denied.test"' "$T/egress.log" || lt_fail "the helper did not log the denied name"
lt_log "ok: denied.test NXDOMAIN, never asked upstream"

out=$(dnsq api.allowed.test AAAA)
[[ $(field rcode "$out") == 0 && $(field an "$out") == 0 ]] || lt_fail "AAAA api.allowed.test should be empty: $out"
out=$(dnsq --tcp api.allowed.test)
lt_assert_eq "api.allowed.test over TCP" "$API" "$(field addrs "$out")"
out=$(dnsq private.allowed.test)
lt_assert_eq "private.allowed.test (192.168.77.7, under the floor) rcode" 2 "$(field rcode "$out")"
lt_log "ok: AAAA empty, DNS over TCP, a name resolving into a denied range is SERVFAIL"

# An upstream answer too long for UDP: truncated, so the helper asks again over TCP.
out=$(dnsq big.allowed.test)
BIG=$(field addrs "$out")
[[ $(field rcode "$out") == 0 && $(field an "$out") == 1 && $BIG =~ $POOL_RE ]] ||
        lt_fail "big.allowed.test (truncated upstream over UDP): $out"
grep -q "query\[1\] big.allowed.test from 127.0.0.1 over tcp" "$T/dns.log" ||
        lt_fail "the helper did not ask the resolver again over TCP: $(grep big "$T/dns.log")"
lt_log "ok: a truncated upstream answer asked again over TCP: big.allowed.test -> $BIG"

# The C library's resolver, through /etc/resolv.conf.
out=$(in_guest getent ahostsv4 api.allowed.test | awk 'NR==1{print $1}')
lt_assert_eq "getent ahostsv4 api.allowed.test" "$API" "$out"

# --- connections ------------------------------------------------------------------------
CURL=(curl --noproxy '*' -sS --max-time 10 --cacert "$T/cert.pem")
out=$(in_guest "${CURL[@]}" https://api.allowed.test/hello.txt) || lt_fail "https://api.allowed.test failed: $out"
lt_assert_eq "https://api.allowed.test/hello.txt" "hello from the outside" "$out"
out=$(in_guest "${CURL[@]}" http://api.allowed.test/hello.txt) || lt_fail "http://api.allowed.test failed: $out"
lt_assert_eq "http://api.allowed.test/hello.txt" "hello from the outside" "$out"
out=$(in_guest "${CURL[@]}" https://x.wild.test/hello.txt) || lt_fail "https://x.wild.test failed: $out"
lt_assert_eq "https://x.wild.test/hello.txt" "hello from the outside" "$out"
out=$(in_guest "${CURL[@]}" https://alias.allowed.test/hello.txt) || lt_fail "https://alias.allowed.test failed: $out"
lt_assert_eq "https://alias.allowed.test/hello.txt (through the CNAME)" "hello from the outside" "$out"
lt_log "ok: HTTPS and HTTP to allowed names, a wildcard's name and a CNAME's name"

# refused WHAT PATTERN CMD...: CMD fails, and the helper logged PATTERN.
refused() {
        local what=$1 pattern=$2 out t0 t1
        shift 2
        t0=$(date +%s%N)
        if out=$("$@" 2>&1); then
                lt_fail "$what was carried: $out"
        fi
        t1=$(date +%s%N)
        grep -qF -- "$pattern" "$T/egress.log" || lt_fail "$what: the helper logged no '$pattern' ($out)"
        lt_log "ok: $what refused after $(((t1 - t0) / 1000000)) ms: $(tail -c 160 <<<"$out" | tr '\n' ' ')"
}
http_requests() { grep -c '"GET ' "$T/http.log" || true; }

refused "a direct connection to $ADDR:443" "connection to $ADDR:443 refused: no allowed name resolved" \
        in_guest "${CURL[@]}" --connect-timeout 5 "https://$ADDR/hello.txt"
refused "a connection to a pool address never handed out" "connection to 10.137.127.200:443 refused" \
        in_guest "${CURL[@]}" --connect-timeout 5 https://10.137.127.200/
refused "SNI evil.test on api.allowed.test's address" 'its ClientHello names "evil.test"' \
        in_guest "${CURL[@]}" --resolve "evil.test:443:$API" https://evil.test/hello.txt
refused "SNI x.wild.test (allowed, bound elsewhere) on api.allowed.test's address" \
        'connection to api.allowed.test:443 refused: its ClientHello names "x.wild.test"' \
        in_guest "${CURL[@]}" --resolve "x.wild.test:443:$API" https://x.wild.test/hello.txt
n=$(http_requests)
refused "Host: evil.test on api.allowed.test's address, port 80" 'its request names host "evil.test"' \
        in_guest "${CURL[@]}" -H "Host: evil.test" http://api.allowed.test/hello.txt
lt_assert_eq "requests the HTTP server saw for the wrong Host" "$n" "$(http_requests)"

# UDP other than DNS: an ICMP port unreachable, and nothing reaches the listener.
out=$(in_guest python3 - "$ADDR" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.connect((sys.argv[1], 9999))
s.send(b"hello udp")
try:
    s.recv(100)
    print("answered")
except ConnectionRefusedError:
    print("refused")
except socket.timeout:
    print("timeout")
EOF
)
lt_assert_eq "UDP to $ADDR:9999 from the sandbox" refused "$out"
[[ ! -s $T/udp.log ]] || lt_fail "the UDP listener got a datagram: $(cat "$T/udp.log")"
grep -qF "UDP to $ADDR:9999 refused" "$T/egress.log" || lt_fail "the helper logged no UDP refusal"
lt_log "ok: UDP to $ADDR:9999 refused with ICMP port unreachable, nothing delivered"

# The port rule: git.allowed.test:2222 only.
out=$(in_guest python3 - <<'EOF'
import socket
s = socket.create_connection(("git.allowed.test", 2222), timeout=5)
banner = s.recv(100)
s.sendall(b"SSH-2.0-client\r\n")
print(banner.decode().strip(), "|", s.recv(100).decode().strip())
EOF
) || lt_fail "git.allowed.test:2222 failed: $out"
lt_assert_eq "git.allowed.test:2222 (banner | echo)" "SSH-2.0-egress-test | echo:SSH-2.0-client" "$out"
refused "git.allowed.test:443 (the rule lists 22 and 2222)" "connection to git.allowed.test:443 refused: no host rule allows that port" \
        in_guest "${CURL[@]}" --connect-timeout 5 https://git.allowed.test/
refused "api.allowed.test:2222 (its rule has 80 and 443)" "connection to api.allowed.test:2222 refused" \
        in_guest "${CURL[@]}" --connect-timeout 5 http://api.allowed.test:2222/
n=$(grep -c . "$T/banner.log")
GIT=$(field addrs "$(dnsq git.allowed.test)")
refused "a ClientHello naming evil.test on git.allowed.test:2222" \
        'connection to git.allowed.test:2222 refused: its ClientHello names "evil.test"' \
        in_guest "${CURL[@]}" --resolve "evil.test:2222:$GIT" \
        https://evil.test:2222/
sleep 0.5
if grep -q "got:.*evil" "$T/banner.log"; then lt_fail "the ClientHello naming evil.test reached the server"; fi
lt_log "ok: port rule git.allowed.test:2222 carried, other ports and names refused ($n connections before)"

# --- checked connections carried by libslirp itself (spec 4.5 "Carrying a checked connection") --
# Once a connection's first bytes were checked and sent, the helper gives
# libslirp the upstream socket in place of its end of the Unix connection.
# What shows it: while a connection is held, the helper has one descriptor
# on its TCP socket (libslirp's) and no accepted Unix connection on the
# name's listener for the port (a relayed one has one, besides libslirp's
# end of it).
# sock_fds PID: "INODE" per line for each of PID's socket descriptors.
sock_fds() { find "/proc/$1/fd" -lname 'socket:*' -printf '%l\n' | sed 's/^socket:\[\([0-9]*\)\]$/\1/'; }
# accepted_on PID PORT: how many of them are connections accepted on a listener RUN_DIR/ADDRESS:PORT.
accepted_on() {
        local n
        # (grep -c prints nothing at all when the pattern file is empty.)
        n=$(sock_fds "$1" | grep -cxFf <(awk -v p=":$2" 'NR>1 && $6 == "03" && substr($8, length($8) - length(p) + 1) == p {print $7}' \
                /proc/net/unix)) || true
        echo "${n:-0}"
}
# to_port_fds PID PORT: PID's descriptors on TCP sockets whose remote port is PORT, one inode per line.
to_port_fds() {
        local hex
        hex=$(printf '%04X' "$2")
        sock_fds "$1" | grep -xFf <(awk -v p=":$hex" 'NR>1 && substr($3, length($3) - 4) == p {print $10}' /proc/net/tcp) || true
}
# held NAME PORT TAG SECONDS: a connection that says "hold TAG" and stays SECONDS, in the background.
held() {
        in_guest python3 - "$@" <<'EOF'
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(b"hold %s\n" % sys.argv[3].encode())
s.settimeout(float(sys.argv[4]))
try:
    print("ended" if s.recv(1) == b"" else "data")
except ConnectionResetError:
    print("ended")
except socket.timeout:
    print("held")
EOF
}
# carried PID PORT: waits until PID has one descriptor on a TCP socket to PORT and no accepted Unix connection for it.
carried() {
        local fds unix seen="no TCP socket to port $2 at all"
        for _ in $(seq 50); do
                fds=$(to_port_fds "$1" "$2")
                unix=$(accepted_on "$1" "$2")
                [[ -n $fds && $(wc -l <<<"$fds") == 1 && $unix == 0 ]] && return 0
                [[ -n $fds ]] && seen="$(wc -l <<<"$fds") descriptors on its TCP socket, $unix accepted Unix connections"
                sleep 0.1
        done
        lt_fail "the connection to port $2 was not handed to libslirp: $seen"
}
held git.allowed.test 2223 one 3 >"$T/held-one" &
held_pid=$!
carried "$egress" 2223
wait "$held_pid"
lt_assert_eq "a held connection to git.allowed.test:2223" held "$(cat "$T/held-one")"
for _ in $(seq 30); do grep -q "hold one ended" "$T/carry.log" && break; sleep 0.1; done
grep -q "hold one ended" "$T/carry.log" || lt_fail "the server did not see the held connection end"
for _ in $(seq 30); do [[ -z $(to_port_fds "$egress" 2223) ]] && break; sleep 0.1; done
[[ -z $(to_port_fds "$egress" 2223) ]] || lt_fail "the helper kept the ended connection's socket"
lt_log "ok: a checked connection is carried by libslirp (its TCP socket, no Unix socket), and let go at its end"

# fetch_sent N [half]: asks the carry server for N bytes and prints "BYTES SHA256" of
# what arrived before its EOF; with "half" the client shuts its sending side right after
# the request and waits 3 s before it reads.
fetch_sent() {
        in_guest python3 - "$@" <<'EOF'
import hashlib, socket, sys, time
s = socket.create_connection(("git.allowed.test", 2223), timeout=30)
s.sendall(b"send %d\n" % int(sys.argv[1]))
if sys.argv[2:] == ["half"]:
    s.shutdown(socket.SHUT_WR)
    time.sleep(3)
h, n = hashlib.sha256(), 0
while True:
    d = s.recv(1 << 16)
    if not d:
        break
    h.update(d)
    n += len(d)
print(n, h.hexdigest())
EOF
}
# A client that shuts its sending side right after its request, as
# `printf ... | nc` does, is carried too (it was relayed to its end, slower
# inside gVisor, whenever its FIN came with the request).
fetch_sent 8388608 half >"$T/halfclose" &
half_pid=$!
carried "$egress" 2223
wait "$half_pid"
read -r n sum <"$T/halfclose"
lt_assert_eq "bytes of the download after the client's half-close" 8388608 "$n"
grep -qx "sent $sum" "$T/carry.log" || lt_fail "the download after a half-close differs from what the server sent"
lt_log "ok: a connection whose client shut its side after the request is carried by libslirp, every byte arrives"

# Eight at once, 4 MiB each way on each, every byte compared: each carried
# connection is the one its tag named (a mix-up would cross the streams).
out=$(in_guest python3 - <<'EOF'
import os, socket, threading
N, SIZE = 8, 4 << 20
ok = [False] * N
def one(i):
    data = os.urandom(SIZE)
    s = socket.create_connection(("git.allowed.test", 2223), timeout=30)
    s.sendall(b"echo\n")
    got = bytearray()
    def reader():
        while True:
            d = s.recv(1 << 16)
            if not d:
                break
            got.extend(d)
    t = threading.Thread(target=reader)
    t.start()
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    t.join()
    ok[i] = bytes(got) == data
threads = [threading.Thread(target=one, args=(i,)) for i in range(N)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sum(ok))
EOF
) || lt_fail "the echo connections failed: $out"
lt_assert_eq "echo connections of 4 MiB each way that came back whole" 8 "$out"
# The server's end first: 16 MiB, then its EOF.
out=$(fetch_sent 16777216) || lt_fail "the send connection failed: $out"
lt_assert_eq "16 MiB from the server, then its EOF" "16777216 $(sed -n 's/^sent //p' "$T/carry.log" | tail -n1)" "$out"
lt_log "ok: eight carried connections at once echo 4 MiB each way byte for byte; 16 MiB from the server arrive whole before its EOF"
# More short connections than the relay has slots (512), each closed by the
# server first, so that libslirp holds each in its TIME_WAIT for seconds
# after: a carried connection holds no slot.
out=$(in_guest python3 - <<'EOF'
import socket
ok = 0
for i in range(700):
    s = socket.create_connection(("git.allowed.test", 2223), timeout=10)
    s.sendall(b"send 16\n")
    got = b""
    while True:
        d = s.recv(100)
        if not d:
            break
        got += d
    s.close()
    ok += len(got) == 16
print(ok)
EOF
) || lt_fail "700 short connections failed: $out"
lt_assert_eq "short connections, each answered 16 bytes" 700 "$out"
if grep -q "connections are open" "$T/egress.log"; then lt_fail "the helper ran out of connection slots"; fi
lt_log "ok: 700 short carried connections in a row, more than the relay's 512 slots"

# --- ssh and git over ssh, by name, to git.allowed.test:22 ------------------------------
SSH="ssh -F /dev/null -i $T/id -o IdentitiesOnly=yes -o BatchMode=yes -o UserKnownHostsFile=$T/known_hosts \
-o StrictHostKeyChecking=yes -o ConnectTimeout=10"
out=$(in_guest $SSH root@git.allowed.test echo over-ssh 2>&1) || lt_fail "ssh root@git.allowed.test failed: $out"
lt_assert_eq "ssh root@git.allowed.test echo over-ssh" over-ssh "$out"
grep -q "auth succeeded for 'root'" "$T/dropbear.log" || lt_fail "dropbear logged no key login: $(cat "$T/dropbear.log")"
out=$(in_guest env GIT_SSH_COMMAND="$SSH" git ls-remote "root@git.allowed.test:$T/repo.git" 2>&1) ||
        lt_fail "git ls-remote over ssh failed: $out"
[[ $out == *$'\trefs/heads/main'* ]] || lt_fail "git ls-remote over ssh listed no main: $out"
out=$(in_guest env GIT_SSH_COMMAND="$SSH" git clone -q "root@git.allowed.test:$T/repo.git" "$T/clone" 2>&1) ||
        lt_fail "git clone over ssh failed: $out"
lt_assert_eq "the clone's commit" "made outside" "$(git -C "$T/clone" log -1 --format=%s)"
git -C "$T/clone" -c user.name=test -c user.email=test@lazaret.invalid commit -q --allow-empty -m "made inside"
out=$(in_guest env GIT_SSH_COMMAND="$SSH" git -C "$T/clone" push -q origin main 2>&1) ||
        lt_fail "git push over ssh failed: $out"
lt_assert_eq "the server's main after the push" "made inside" "$(git -C "$T/repo.git" log -1 --format=%s main)"
refused "ssh to api.allowed.test:22 (its rule has 80 and 443)" "connection to api.allowed.test:22 refused" \
        in_guest $SSH root@api.allowed.test true
lt_log "ok: ssh, git ls-remote, clone and push over ssh to git.allowed.test:22 by name"

# --- the attestation's name canaries (--canary-socket) ----------------------------------
n_before=$(grep -c 'invalid from' "$T/dns.log" || true)
out=$(dnsq allowed.canary.lazaret.invalid)
CANARY=$(field addrs "$out")
[[ $(field rcode "$out") == 0 ]] || lt_fail "allowed.canary.lazaret.invalid: $out"
# Bound when the helper started, before every name above: the pool's first address, which the probe dials beforehand.
lt_assert_eq "allowed.canary.lazaret.invalid's address" 10.137.64.1 "$CANARY"
out=$(in_guest "${CURL[@]}" --connect-timeout 5 https://allowed.canary.lazaret.invalid/ 2>&1) || true
grep -q "got [0-9]* bytes, first 0x16" "$T/canary.log" ||
        lt_fail "the canary socket got no ClientHello (curl: $out; $(cat "$T/canary.log" 2>/dev/null))"
lt_assert_eq "other.lazaret.invalid rcode" 3 "$(field rcode "$(dnsq other.lazaret.invalid)")"
lt_assert_eq "queries under .invalid that reached the resolver" "$n_before" "$(grep -c 'invalid from' "$T/dns.log" || true)"
refused "allowed.canary.lazaret.invalid:80 (the canary is allowed on 443 only)" \
        "connection to allowed.canary.lazaret.invalid:80 refused" \
        in_guest "${CURL[@]}" --connect-timeout 5 http://allowed.canary.lazaret.invalid/
refused "the direct canary's address 10.137.127.254:443 (a forward behind the filter)" \
        "connection to 10.137.127.254:443 refused: no allowed name resolved to that address" \
        in_guest "${CURL[@]}" --connect-timeout 5 https://10.137.127.254/
grep -q "passed the frame filter" "$T/egress.log" && lt_fail "a connection to the unbound canary address passed the filter"
lt_log "ok: name canary: allowed.canary.lazaret.invalid = $CANARY, carried to the canary socket; .invalid never asked upstream"

# --- a published port: slirp4netns' API on the helper's socket -------------------------
mkdir "$T/guest-www"
echo "served from the sandbox" >"$T/guest-www/index.html"
# nsenter itself, not the in_guest function: $! of a function is a subshell, and killing it left the server running.
nsenter --net="$G" python3 -m http.server 8000 --bind 0.0.0.0 --directory "$T/guest-www" >/dev/null 2>&1 9>&- &
pids+=($!)
api() {
        python3 - "$T/run/api.sock" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode())
print(s.recv(4096).decode())
EOF
}
out=$(api '{"execute":"add_hostfwd","arguments":{"proto":"tcp","host_addr":"127.0.0.1","host_port":18000,"guest_port":8000}}')
[[ $out =~ ^\{\"return\":\{\"id\":([0-9]+)\}\}$ ]] || lt_fail "add_hostfwd: $out"
id=${BASH_REMATCH[1]}
for _ in $(seq 50); do
        out=$(curl --noproxy '*' -sS --max-time 5 http://127.0.0.1:18000/index.html 2>&1) && break
        sleep 0.1
done
lt_assert_eq "http://127.0.0.1:18000 (published from the sandbox's 8000)" "served from the sandbox" "$out"
out=$(api '{"execute":"add_hostfwd","arguments":{"proto":"tcp","host_addr":"0.0.0.0","host_port":18001,"guest_port":8000}}')
[[ $out == *'"error"'* ]] || lt_fail "add_hostfwd on 0.0.0.0 was accepted: $out"
lt_assert_eq "remove_hostfwd" '{"return":{}}' "$(api "{\"execute\":\"remove_hostfwd\",\"arguments\":{\"id\":$id}}")"
if curl --noproxy '*' -sS --max-time 2 http://127.0.0.1:18000/ >/dev/null 2>&1; then
        lt_fail "the forward still answers after remove_hostfwd"
fi
lt_log "ok: published port 18000 -> 8000 through the API socket, removed again; 0.0.0.0 refused"

# --- denied names to the coordinator's watch, live rules back (spec 4.5 "A denied name") --
# The coordinator's side, played by a watcher that writes each line it gets to events (not
# holding fd 9, the helper's exit FIFO's only writer).
python3 - "$T/run/api.sock" "$T/events" 9>&- <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b'{"execute":"watch_denied","arguments":{}}')
with open(sys.argv[2], "wb", buffering=0) as out:
    while True:
        b = s.recv(4096)
        if not b:
            break
        out.write(b)
EOF
pids+=($!)
for _ in $(seq 50); do grep -q '^{"return":{}}$' "$T/events" 2>/dev/null && break; sleep 0.1; done
grep -q '^{"return":{}}$' "$T/events" || lt_fail "watch_denied was not answered: $(cat "$T/events" 2>/dev/null)"
events() { tail -n +2 "$T/events"; }
out=$(dnsq denied.test)
[[ $(field rcode "$out") == 3 ]] || lt_fail "denied.test before the allow: $out"
out=$(dnsq denied.test)
for _ in $(seq 20); do [[ -n $(events) ]] && break; sleep 0.1; done
lt_assert_eq "the events of two questions for denied.test within a second" "denied dns denied.test" "$(events)"
# What no event may carry: a name with ESC (FORMERR, logged escaped) and one with '_' (logged only).
out=$(in_guest python3 - <<'EOF'
import socket, struct
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x03a\x1bb\x04test\x00" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5); s.sendto(q, ("10.137.54.3", 53))
r, _ = s.recvfrom(512)
print("rcode=%d" % (struct.unpack(">H", r[2:4])[0] & 0xf))
EOF
)
lt_assert_eq "a question whose name holds ESC" "rcode=1" "$out"
grep -F 'malformed DNS question refused (FORMERR)' "$T/egress.log" | grep -qF '\x1b' ||
        lt_fail "the malformed question was not logged escaped: $(grep -a malformed "$T/egress.log")"
! grep -q $'\e' "$T/egress.log" || lt_fail "a raw ESC reached the helper's log"
out=$(dnsq under_score.test)
[[ $(field rcode "$out") == 3 ]] || lt_fail "under_score.test: $out"
# A port no rule allows for a bound name.
in_guest curl --noproxy '*' -sS --max-time 3 "http://api.allowed.test:8443/" >/dev/null 2>&1 || true
for _ in $(seq 20); do events | grep -q 'port' && break; sleep 0.1; done
lt_assert_eq "the events after ESC, '_' and port 8443" "denied dns denied.test
denied port api.allowed.test 8443" "$(events)"
lt_log "ok: denied names reach the watcher once a second; ESC and '_' never do; a refused port does"

# add_host: judged as allow_hosts is (a URL, and a scope the helper does not hold, refused as JSON).
out=$(api '{"execute":"add_host","arguments":{"rule":"http://denied.test","scope":"once"}}')
jq -e '.error.desc | test("is a URL")' <<<"$out" >/dev/null || lt_fail "add_host of a URL: $out"
out=$(api '{"execute":"add_host","arguments":{"rule":"denied.test","scope":"keep"}}')
jq -e '.error.desc' <<<"$out" >/dev/null || lt_fail "add_host with scope keep: $out"
out=$(dnsq denied.test)
[[ $(field rcode "$out") == 3 ]] || lt_fail "denied.test after refused add_host requests: $out"
lt_assert_eq "add_host denied.test once" '{"return":{}}' \
        "$(api '{"execute":"add_host","arguments":{"rule":"denied.test","scope":"once"}}')"
out=$(dnsq denied.test)
[[ $(field rcode "$out") == 0 && $(field addrs "$out") =~ $POOL_RE ]] || lt_fail "denied.test after add_host once: $out"
out=$(in_guest "${CURL[@]}" http://denied.test/hello.txt) || lt_fail "http://denied.test after add_host: $out"
lt_assert_eq "http://denied.test/hello.txt after add_host once" "hello from the outside" "$out"
# A live rule with a port, for a name bound already: its listener is opened at once.
lt_assert_eq "add_host api.allowed.test:2222 for the Domain's life" '{"return":{}}' \
        "$(api '{"execute":"add_host","arguments":{"rule":"api.allowed.test:2222","scope":"domain"}}')"
out=$(in_guest timeout 5 bash -c 'exec 3<>/dev/tcp/api.allowed.test/2222; head -n1 <&3') || true
[[ -n $out ]] || lt_fail "api.allowed.test:2222 after add_host gave nothing"
lt_log "ok: add_host once and for the Domain's life take effect at once, for bound names too ($out)"
# A carried connection whose rule is forgotten ends at once: the helper still holds its socket.
lt_assert_eq "add_host api.allowed.test:2223 for the Domain's life" '{"return":{}}' \
        "$(api '{"execute":"add_host","arguments":{"rule":"api.allowed.test:2223","scope":"domain"}}')"
held api.allowed.test 2223 two 20 >"$T/held-two" &
held_pid=$!
carried "$egress" 2223
lt_assert_eq "remove_host api.allowed.test:2223" '{"return":{"removed":true,"closed":1}}' \
        "$(api '{"execute":"remove_host","arguments":{"rule":"api.allowed.test:2223"}}')"
t0=$(date +%s%N)
wait "$held_pid"
lt_assert_eq "the held connection after its rule was forgotten" ended "$(cat "$T/held-two")"
for _ in $(seq 30); do grep -q "hold two ended" "$T/carry.log" && break; sleep 0.1; done
grep -q "hold two ended" "$T/carry.log" || lt_fail "the server did not see the forgotten connection end"
lt_log "ok: a carried connection ends $((($(date +%s%N) - t0) / 1000000)) ms after its rule is forgotten, on both sides"
# Once means once: 60 s (the synthetic answer's TTL) after the answer it allowed, the name is denied again.
sleep 61
out=$(dnsq denied.test)
[[ $(field rcode "$out") == 3 ]] || lt_fail "denied.test 61 s after its once allow was used: $out"
lt_log "ok: the once allow of denied.test lapsed 60 s after it was used"

# --- the exit fd ends it ------------------------------------------------------------------
exec 9>&-
for _ in $(seq 50); do kill -0 "$egress" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$egress" 2>/dev/null; then lt_fail "lazaret-egress did not exit when its exit fd closed"; fi
wait "$egress" || lt_fail "lazaret-egress exited with status $? when its exit fd closed"
lt_log "ok: the helper exits when its exit fd closes"
