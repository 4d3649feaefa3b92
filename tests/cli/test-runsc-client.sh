#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# lazaret-runsc against a control server of this test's own (a Python urpc
# server on a Unix socket named by a state file, as runsc's are), for what a
# real runsc does not do on demand (tests/integration/test-runsc-client.sh
# checks the real one):
#   - the call it writes: the ExecuteAsync argument (argv, envv, wd, IDs,
#     capability bits without CAP_NET_RAW, GuestFDs ascending, the files in
#     that order), the container's env, cwd and capabilities for a command
#     line; WaitPID's status back as an exit status (N, 128 + signal);
#   - with a terminal, a signal it gets goes to the foreground process
#     group inside (Signal, mode 2) while it waits;
#   - the server refusing the protocol ("unknown method", a JSON error):
#     it becomes the runsc it was given, with the same arguments, before
#     anything started; an ordinary refusal ("no such file") and a reply
#     that is no JSON object end it with 128 and no second start;
#   - the server gone while it waits: 128 and one line saying so.
set -euo pipefail
client=$1
tmp=$(mktemp -d)
trap 'kill "${srv:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

mkdir -p "$tmp/root"
cat >"$tmp/root/c1_sandbox:c1.state" <<EOF
{"id": "c1", "status": "running",
 "sandbox": {"id": "c1", "controlSocketPath": "$tmp/ctl.sock"},
 "spec": {"process": {"args": ["/bin/init"], "env": ["FROM=container"], "cwd": "/home",
          "capabilities": {"bounding": ["CAP_CHOWN", "CAP_NET_RAW", "CAP_KILL"], "effective": ["CAP_KILL"],
                           "permitted": ["CAP_KILL"], "inheritable": []}}}}
EOF
: >"$tmp/root/c1_sandbox:c1.lock"
# The fake runsc the client falls back to: it records its arguments.
cat >"$tmp/runsc" <<EOF
#!/bin/bash
printf '%s\n' "\$@" >"$tmp/runsc.args"
exit 42
EOF
chmod +x "$tmp/runsc"

cat >"$tmp/server.py" <<'EOF'
import array, json, os, socket, sys
path, log, mode_file = sys.argv[1:4]
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(8)
waiting = None          # a WaitPID connection held until a Signal comes
def mode():
    try:
        return open(mode_file).read().strip()
    except FileNotFoundError:
        return "ok"
def read_call(c):
    buf, fds = b"", []
    dec = json.JSONDecoder()
    while True:
        msg, anc, _, _ = c.recvmsg(65536, socket.CMSG_SPACE(16 * 4))
        for level, typ, data in anc:
            if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                a = array.array("i"); a.frombytes(data[:len(data) - len(data) % 4]); fds += list(a)
        if not msg:
            return None, fds
        buf += msg
        try:
            v, _ = dec.raw_decode(buf.decode()); return v, fds
        except ValueError:
            continue
def reply(c, ok, err="", result=None):
    c.sendall(json.dumps({"success": ok, "err": err, "result": result}).encode())
while True:
    c, _ = srv.accept()
    call, fds = read_call(c)
    if call is None:
        c.close(); continue
    m = mode()
    with open(log, "a") as f:
        f.write(json.dumps({"call": call, "nfds": len(fds)}) + "\n")
    meth = call["method"]
    if meth == "containerManager.ExecuteAsync":
        for i, fd in enumerate(fds):   # each file says which guest descriptor it became (/bin/echo only)
            if call["arg"]["GuestFDs"][i] in (1, 2) and call["arg"]["argv"][0] == "/bin/echo":
                os.write(fd, ("guest%d\n" % call["arg"]["GuestFDs"][i]).encode())
            os.close(fd)
        if m == "unknown":
            reply(c, False, "unknown method")
        elif m == "json":
            reply(c, False, "json: cannot unmarshal string into Go struct field ExecArgs.KUID of type auth.KUID")
        elif m == "enoent":
            reply(c, False, "failed to load /x: no such file or directory")
        elif m == "garbage":
            c.sendall(b"[1, 2, 3]")
        else:
            reply(c, True, result=42)
        c.close()
    elif meth == "containerManager.WaitPID":
        if m == "gone":
            c.close()
        elif m == "terminal":
            waiting = c
        else:
            status = (int(m[4:]) << 8) if m.startswith("exit") else (9 if m == "killed" else 0)
            reply(c, True, result=status if m != "ok" else 7 << 8)
            c.close()
    elif meth == "containerManager.Signal":
        if m == "unknown":
            reply(c, False, "unknown method"); c.close(); continue
        reply(c, True, result={})
        c.close()
        if waiting:
            reply(waiting, True, result=call["arg"]["Signo"])   # killed by that signal
            waiting.close(); waiting = None
    else:
        reply(c, False, "unknown method"); c.close()
EOF
python3 "$tmp/server.py" "$tmp/ctl.sock" "$tmp/calls" "$tmp/mode" &
srv=$!
for _ in $(seq 1 100); do
        [[ -S $tmp/ctl.sock ]] && break
        sleep 0.05
done
[[ -S $tmp/ctl.sock ]] || fail "the fake control server did not start"

run() { "$client" --runsc "$tmp/runsc" --root "$tmp/root" "$@"; }
last_call() { tail -n "${2:-1}" "$tmp/calls" | head -n 1 | jq -c "$1"; }

# --- a process file -----------------------------------------------------------------
cat >"$tmp/proc.json" <<'EOF'
{"terminal": false, "user": {"uid": 0, "gid": 0}, "args": ["/bin/echo", "a b"], "env": ["PATH=/bin", "X=1"],
 "cwd": "/workspace", "noNewPrivileges": true,
 "capabilities": {"bounding": ["CAP_CHOWN", "CAP_NET_RAW", "CAP_SYS_CHROOT"], "effective": ["CAP_CHOWN"],
                  "permitted": ["CAP_CHOWN", "CAP_SYS_CHROOT"], "inheritable": [], "ambient": []}}
EOF
rc=0
run exec --process "$tmp/proc.json" --internal-pid-file "$tmp/pid" --pass-fd 5:1 --pass-fd 6:2 --pass-fd 4:0 c1 \
        4</dev/null 5>"$tmp/out5" 6>"$tmp/out6" >"$tmp/out1" 2>"$tmp/err" || rc=$?
[[ $rc == 7 ]] || fail "a process that exited 7: status $rc ($(cat "$tmp/err"))"
[[ $(cat "$tmp/pid") == 42 ]] || fail "the internal PID file holds '$(cat "$tmp/pid")', not 42"
arg=$(last_call .call.arg 2)
want='{"filename":"","argv":["/bin/echo","a b"],"envv":["PATH=/bin","X=1"],"wd":"/workspace","KUID":0,"KGID":0,"ExtraKGIDs":[],"Capabilities":{"BoundingCaps":262145,"EffectiveCaps":1,"InheritableCaps":0,"PermittedCaps":262145,"AmbientCaps":0},"StdioIsPty":false,"NoNewPrivileges":true,"SupportTTYs":true,"GuestFDs":[0,1,2],"ContainerID":"c1"}'
[[ $arg == "$want" ]] || fail "the ExecuteAsync argument: $arg, not $want"
[[ $(last_call .nfds 2) == 3 ]] || fail "ExecuteAsync carried $(last_call .nfds 2) files, not 3"
[[ $(cat "$tmp/out5") == guest1 && $(cat "$tmp/out6") == guest2 && ! -s $tmp/out1 ]] ||
        fail "the files did not travel in guest order: fd5 '$(cat "$tmp/out5")', fd6 '$(cat "$tmp/out6")', fd1 '$(cat "$tmp/out1")'"
[[ $(last_call .call) == '{"method":"containerManager.WaitPID","arg":{"PID":42,"CID":"c1"}}' ]] ||
        fail "the WaitPID call: $(last_call .call)"
ok "a process file: the ExecuteAsync argument, the files in guest order, the PID file, WaitPID, exit 7"

# --- a command line: the container's env, cwd and capabilities ------------------------
echo exit3 >"$tmp/mode"
rc=0
run exec c1 /bin/true --not-an-option </dev/null >/dev/null 2>"$tmp/err" || rc=$?
[[ $rc == 3 ]] || fail "a command line, exit 3: status $rc ($(cat "$tmp/err"))"
arg=$(last_call .call.arg 2)
[[ $(jq -c '[.argv, .envv, .wd, .Capabilities.BoundingCaps, .Capabilities.EffectiveCaps, .StdioIsPty, .NoNewPrivileges]' <<<"$arg") == \
   '[["/bin/true","--not-an-option"],["FROM=container"],"/home",33,32,false,false]' ]] ||
        fail "a command line's argument: $arg"
ok "a command line: the container's env, cwd and capabilities (CAP_NET_RAW left out), its words as the command's"

echo killed >"$tmp/mode"
rc=0
run exec c1 /bin/true </dev/null >/dev/null 2>&1 || rc=$?
[[ $rc == 137 ]] || fail "a process killed by SIGKILL: status $rc, not 137"
ok "a process killed by signal 9: 137"

# --- a terminal: signals go to the foreground group inside ---------------------------
echo terminal >"$tmp/mode"
jq -c '.terminal = true' "$tmp/proc.json" >"$tmp/tproc.json"
calls=$(wc -l <"$tmp/calls")
# Not through run(): $! of a function is a subshell, not the client.
"$client" --runsc "$tmp/runsc" --root "$tmp/root" exec --process "$tmp/tproc.json" c1 </dev/null >/dev/null 2>"$tmp/err" &
cpid=$!
for _ in $(seq 1 100); do
        (($(wc -l <"$tmp/calls") == calls + 2)) && break
        sleep 0.05
done
[[ $(last_call .call.method) == '"containerManager.WaitPID"' ]] || fail "with a terminal, the client is not waiting: $(last_call .call.method)"
kill -INT "$cpid"
rc=0
wait "$cpid" || rc=$?
[[ $(last_call .call) == '{"method":"containerManager.Signal","arg":{"CID":"c1","Signo":2,"PID":42,"Mode":2}}' ]] ||
        fail "SIGINT was not forwarded to the foreground group: $(last_call .call)"
[[ $rc == 130 ]] || fail "with a terminal, after SIGINT: status $rc, not 130 ($(cat "$tmp/err"))"
[[ $(jq -c .StdioIsPty <<<"$(grep ExecuteAsync "$tmp/calls" | tail -n1 | jq -c .call.arg)") == true ]] || fail "StdioIsPty was not set"
ok "with a terminal, SIGINT to the client reached the foreground group inside (Signal mode 2), status 130"

# --- kill --pid ---------------------------------------------------------------------
echo ok >"$tmp/mode"
run kill --pid 42 c1 15 || fail "kill --pid failed"
[[ $(last_call .call) == '{"method":"containerManager.Signal","arg":{"CID":"c1","Signo":15,"PID":42,"Mode":0}}' ]] ||
        fail "kill --pid 42 c1 15: $(last_call .call)"
ok "kill --pid: Signal to that process (mode 0)"

# --- the protocol refused: runsc itself, with the same arguments ----------------------
for m in unknown json; do
        echo "$m" >"$tmp/mode"
        rm -f "$tmp/runsc.args"
        rc=0
        run exec --process "$tmp/proc.json" --pass-fd 0:0 c1 </dev/null >/dev/null 2>"$tmp/err" || rc=$?
        [[ $rc == 42 ]] || fail "$m: status $rc, not the fake runsc's 42 ($(cat "$tmp/err"))"
        [[ $(tr '\n' ' ' <"$tmp/runsc.args") == "--root $tmp/root exec --process $tmp/proc.json --pass-fd 0:0 c1 " ]] ||
                fail "$m: runsc was run with: $(tr '\n' ' ' <"$tmp/runsc.args")"
        grep -q "^lazaret-runsc: .*; running $tmp/runsc instead$" "$tmp/err" || fail "$m: no line says why: $(cat "$tmp/err")"
done
ok "a refused protocol (unknown method, a JSON error): runsc with the same arguments, and one line why"

echo unknown >"$tmp/mode"
rm -f "$tmp/runsc.args"
run kill --pid 42 c1 15 2>"$tmp/err" && fail "kill through the fake runsc should have exited 42"
[[ $(tr '\n' ' ' <"$tmp/runsc.args") == "--root $tmp/root kill --pid 42 c1 15 " ]] || fail "kill fell back with: $(cat "$tmp/runsc.args")"
ok "kill --pid falls back the same way"

# --- an ordinary refusal, a reply that is not one, the server gone ---------------------
for m in enoent garbage gone; do
        echo "$m" >"$tmp/mode"
        rm -f "$tmp/runsc.args"
        rc=0
        run exec c1 /x </dev/null >/dev/null 2>"$tmp/err" || rc=$?
        [[ $rc == 128 ]] || fail "$m: status $rc, not 128 ($(cat "$tmp/err"))"
        [[ ! -e $tmp/runsc.args ]] || fail "$m: lazaret-runsc ran runsc, which would start the process a second time"
        [[ $(wc -l <"$tmp/err") == 1 ]] || fail "$m: not one line: $(cat "$tmp/err")"
        case $m in
        enoent) grep -q '^lazaret-runsc: executing in the sandbox: failed to load /x: no such file or directory$' "$tmp/err" ;;
        garbage) grep -q '^lazaret-runsc: executing c1 in the sandbox: the reply is not a JSON object$' "$tmp/err" ;;
        gone) grep -q "^lazaret-runsc: waiting for pid 42 in the sandbox: the sandbox's control socket closed" "$tmp/err" ;;
        esac || fail "$m: $(cat "$tmp/err")"
done
ok "an ordinary refusal, a reply that is not one and a server gone: 128, one line, no second start"

# --- bad arguments and a missing container -------------------------------------------
for args in "exec" "exec c1" "exec --process $tmp/proc.json c1 extra" "exec --pass-fd 3 c1 /x" "exec --pass-fd 9:1 c1 /x" \
        "exec --bogus c1 /x" "exec nosuch /x" "kill --pid x c1 15" "frob"; do
        rc=0
        # shellcheck disable=SC2086
        run $args </dev/null >/dev/null 2>"$tmp/err" || rc=$?
        [[ $rc == 128 ]] || fail "'$args': status $rc, not 128"
        grep -q '^lazaret-runsc: ' "$tmp/err" || fail "'$args': no reason: $(cat "$tmp/err")"
done
ok "bad arguments, a descriptor not open, a container that does not exist: 128 and a reason"

echo "PASS: lazaret-runsc speaks runsc's control protocol, forwards signals, and falls back only before a start"
