#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-sandbox-death: when a part of the sandbox on the host dies, every
# session and `systemctl --user status` say so in one line, and the next
# launch works:
#   - gVisor's kernel (runsc-sandbox) killed with SIGKILL;
#   - the gofer (runsc-gofer) killed with SIGKILL.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

scope=lazaret-$LT_DOMAIN-sandbox.scope
unit=lazaret@$LT_DOMAIN.service

kill_part() {   # PROCESS-NAME EXPECTED-REASON
        local name=$1 reason=$2 bg rc pid pids out
        (cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 60 </dev/null >"$HOME/death.out" 2>"$HOME/death.err") &
        bg=$!
        for _ in $(seq 1 100); do
                [[ $(cd "$LT_WS" && lazaretctl status --json 2>/dev/null | jq '.Sessions | length') == 1 ]] && break
                sleep 0.1
        done
        pids=$(lt_unit_pids "$scope")
        pid=
        for p in $pids; do
                [[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == "$name "* ]] && pid=$p
        done
        [[ -n $pid ]] || lt_fail "no $name process in $scope"
        kill -KILL "$pid"
        rc=0
        for _ in $(seq 1 100); do
                kill -0 "$bg" 2>/dev/null || break
                sleep 0.1
        done
        kill -0 "$bg" 2>/dev/null && lt_fail "the session's client still runs 10 s after $name was killed"
        wait "$bg" || rc=$?
        [[ $rc -ne 0 ]] || lt_fail "a session whose $name was killed exited 0"
        grep -q "$reason" "$HOME/death.err" || lt_fail "the client did not say '$reason': $(cat "$HOME/death.err")"
        # Its reason only: what runsc exec says of the sandbox gone under it
        # ("waiting on pid N: ... EOF") goes to the Domain's log.
        lt_assert_eq "lines the client of a session whose $name was killed wrote" 1 "$(grep -c '' "$HOME/death.err")"
        lt_log "ok: $name killed: the client exited $rc and said: $(grep -m1 "$reason" "$HOME/death.err")"
        lt_wait_inactive
        out=$(systemctl --user status "$unit" --no-pager 2>&1 || true)
        grep -q "$reason" <<<"$out" || { echo "$out" >&2; lt_fail "systemctl --user status does not say '$reason'"; }
        lt_assert_eq "a launch after $name was killed" ok "$(lt_launch -- /bin/echo ok </dev/null)"
        lt_wait_inactive
}

kill_part runsc-sandbox "the sandbox's kernel (runsc-sandbox) stopped unexpectedly"
kill_part runsc-gofer "the sandbox stopped: its init exited with status"

echo "PASS: a dead sandbox kernel or gofer is reported in one line, and the next launch works"
