#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-runsc-client (issue 34 item 4): lazaret-runsc, the exec client every
# session starts in place of `runsc exec`, against the real runsc in a
# running Domain's sandbox:
#   - what a process it starts is (user, groups, every capability set,
#     no_new_privs, working directory, environment)
#     is exactly what `runsc exec` makes of the same arguments, both from a
#     process file (--process, as sessions use it) and from a command line
#     (as the coordinator's kill-session and forget-mailbox use it);
#   - the exit status comes back as runsc reports it (N, or 128 + signal);
#   - the internal PID file names the process inside, and `kill --pid`
#     reaches exactly that process;
#   - a launch without a terminal interrupted by Ctrl-C (SignalSession,
#     then lazaret-runsc kill --pid) runs the command's own trap;
#   - a launch's session goes through it (its command line) and never falls
#     back to runsc (no such line in the Domain's log).
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_keeper_start

client=$LT_PREFIX/libexec/lazaret-runsc
[[ -x $client ]] || lt_fail "$client is not installed"
runsc=$(command -v runsc)
root=$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN/runsc
state=$(ls "$root"/*.state)
cid=$(jq -r .id "$state")
[[ -n $cid && $cid != null ]] || lt_fail "no container in $root"
work=$(mktemp -d)
trap 'rc=$?; rm -rf "$work"; lt_domain_cleanup "$rc"' EXIT

probe='grep -E "^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):" /proc/self/status; echo "cwd=$(pwd)"; env | sort'

# --- the same process from a command line ---------------------------------------
"$runsc" --root "$root" exec "$cid" /bin/sh -c "$probe" </dev/null >"$work/runsc.cli" 2>"$work/runsc.cli.err" ||
        lt_fail "runsc exec failed: $(cat "$work/runsc.cli.err")"
"$client" --runsc "$runsc" --root "$root" exec "$cid" /bin/sh -c "$probe" </dev/null >"$work/client.cli" 2>"$work/client.cli.err" ||
        lt_fail "lazaret-runsc exec failed: $(cat "$work/client.cli.err")"
[[ -s $work/runsc.cli ]] || lt_fail "runsc exec printed nothing"
grep -q '^CapEff:' "$work/runsc.cli" || lt_fail "the probe read no capabilities: $(cat "$work/runsc.cli")"
diff -u "$work/runsc.cli" "$work/client.cli" >&2 || lt_fail "a command line: the process differs from runsc exec's"
lt_assert_eq "what lazaret-runsc said on a command line" "" "$(cat "$work/client.cli.err")"
lt_log "ok: from a command line, the process is runsc exec's ($(grep -c . "$work/client.cli") lines compared)"

# --- the same process from a process file, as a session's ------------------------
cat >"$work/process.json" <<EOF
{
  "terminal": false,
  "user": { "uid": 0, "gid": 0 },
  "args": [ "/bin/sh", "-c", $(jq -Rn --arg p "$probe" '$p') ],
  "env": [ "PATH=/usr/bin:/bin", "LAZARET_PROBE=one two", "HOME=/root" ],
  "cwd": "/tmp",
  "capabilities": {
    "bounding": [ "CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW", "CAP_SYS_CHROOT" ],
    "effective": [ "CAP_CHOWN", "CAP_KILL" ],
    "permitted": [ "CAP_CHOWN", "CAP_KILL", "CAP_SYS_CHROOT" ],
    "inheritable": [], "ambient": []
  },
  "noNewPrivileges": true
}
EOF
"$runsc" --root "$root" exec --process "$work/process.json" "$cid" </dev/null >"$work/runsc.proc" 2>"$work/runsc.proc.err" ||
        lt_fail "runsc exec --process failed: $(cat "$work/runsc.proc.err")"
"$client" --runsc "$runsc" --root "$root" exec --process "$work/process.json" "$cid" </dev/null \
        >"$work/client.proc" 2>"$work/client.proc.err" || lt_fail "lazaret-runsc exec --process failed: $(cat "$work/client.proc.err")"
grep -q '^cwd=/tmp$' "$work/runsc.proc" || lt_fail "the process file's cwd was not taken: $(cat "$work/runsc.proc")"
grep -q '^LAZARET_PROBE=one two$' "$work/runsc.proc" || lt_fail "the process file's env was not taken"
diff -u "$work/runsc.proc" "$work/client.proc" >&2 || lt_fail "a process file: the process differs from runsc exec's"
lt_log "ok: from a process file, the process is runsc exec's: $(grep '^CapBnd' "$work/client.proc" | tr -s '\t' ' ')"

# --- descriptors passed as another guest's, in their order -----------------------
"$client" --runsc "$runsc" --root "$root" exec --pass-fd 5:1 --pass-fd 6:2 "$cid" /bin/sh -c 'echo to-out; echo to-err >&2' \
        </dev/null >"$work/fd1" 5>"$work/fd5" 6>"$work/fd6" 2>"$work/fd2" || lt_fail "lazaret-runsc exec --pass-fd failed"
lt_assert_eq "guest fd 1 (host fd 5)" to-out "$(cat "$work/fd5")"
lt_assert_eq "guest fd 2 (host fd 6)" to-err "$(cat "$work/fd6")"
lt_assert_eq "the client's own standard output" "" "$(cat "$work/fd1")"
lt_log "ok: --pass-fd HOST:GUEST gives each guest descriptor its host file"

# --- exit statuses ----------------------------------------------------------------
for cmd in 'exit 0' 'exit 7' 'exit 255' 'kill -TERM $$' 'kill -KILL $$'; do
        set +e
        "$runsc" --root "$root" exec "$cid" /bin/sh -c "$cmd" </dev/null >/dev/null 2>&1
        want=$?
        "$client" --runsc "$runsc" --root "$root" exec "$cid" /bin/sh -c "$cmd" </dev/null >/dev/null 2>"$work/status.err"
        got=$?
        set -e
        lt_assert_eq "exit status of '$cmd' (runsc exec's: $want)" "$want" "$got"
done
set +e
"$client" --runsc "$runsc" --root "$root" exec "$cid" /no/such/program </dev/null >/dev/null 2>"$work/missing.err"
rc=$?
set -e
((rc >= 128)) || lt_fail "a program that does not exist: status $rc, not 128 or more"
grep -q '^lazaret-runsc: executing in the sandbox: ' "$work/missing.err" ||
        lt_fail "a program that does not exist: no reason given: $(cat "$work/missing.err")"
grep -q 'instead' "$work/missing.err" && lt_fail "a refused program made lazaret-runsc fall back to runsc"
lt_log "ok: exit statuses as runsc's; a missing program: $(head -n1 "$work/missing.err")"

# --- the internal PID file and kill --pid -----------------------------------------
"$client" --runsc "$runsc" --root "$root" exec --internal-pid-file "$work/inner.pid" "$cid" /bin/sleep 600 \
        </dev/null >/dev/null 2>"$work/sleep.err" &
sleeper=$!
for _ in $(seq 1 100); do
        [[ -s $work/inner.pid ]] && break
        sleep 0.05
done
inner=$(cat "$work/inner.pid")
[[ $inner =~ ^[0-9]+$ ]] || lt_fail "the internal PID file holds '$inner'"
"$runsc" --root "$root" ps "$cid" | awk -v p="$inner" '$2 == p' | grep -q sleep ||
        lt_fail "PID $inner inside is not the sleep: $("$runsc" --root "$root" ps "$cid")"
"$client" --runsc "$runsc" --root "$root" kill --pid "$inner" "$cid" 15 || lt_fail "lazaret-runsc kill failed"
rc=0
wait "$sleeper" || rc=$?
lt_assert_eq "the sleep's status after kill --pid PID ... 15" 143 "$rc"
lt_log "ok: the internal PID file names the process inside; kill --pid ends it (143)"

# --- Ctrl-C of a launch without a terminal: SignalSession, then kill --pid ---------
(cd "$LT_WS" && exec lazaretctl launch -- /bin/sh -c 'trap "echo got-int; exit 5" INT; echo ready; while :; do sleep 0.1; done') \
        </dev/null >"$work/int.out" 2>"$work/int.err" &
launcher=$!
for _ in $(seq 1 100); do
        grep -q ready "$work/int.out" 2>/dev/null && break
        sleep 0.1
done
grep -q ready "$work/int.out" || lt_fail "the session did not start: $(cat "$work/int.err")"
kill -INT "$launcher"
rc=0
wait "$launcher" || rc=$?
lt_assert_eq "the interrupted session's exit status (its trap's)" 5 "$rc"
lt_assert_eq "what the interrupted session printed" "ready got-int" "$(tr '\n' ' ' <"$work/int.out" | sed 's/ $//')"
lt_log "ok: Ctrl-C of a launch without a terminal reaches the command inside through lazaret-runsc kill --pid"

# --- a launch goes through it, without falling back -------------------------------
out=$(lt_launch -- /bin/sh -c 'echo via-client; exit 3') && rc=0 || rc=$?
lt_assert_eq "a launch's exit status" 3 "$rc"
lt_assert_eq "a launch's output" via-client "$out"
log=$(lazaretctl --workspace "$LT_WS" log --lines 500 2>/dev/null || true)
grep -q 'instead' <<<"$log" && lt_fail "a session fell back to runsc: $(grep instead <<<"$log")"
pids=$(lt_unit_pids "lazaret@$LT_DOMAIN.service")
n=0
for p in $pids; do
        [[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == */lazaret-runsc\ --runsc\ *" exec --process "* ]] && n=$((n + 1))
done
((n >= 1)) || lt_fail "the keeper session's process is not lazaret-runsc"
lt_log "ok: sessions run through lazaret-runsc ($n in the service now), none fell back"

echo "PASS: lazaret-runsc starts what runsc exec starts, reports what it reports, and sessions use it"
