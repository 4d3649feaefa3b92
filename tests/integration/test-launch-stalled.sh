#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-launch-stalled: a client whose terminal stops being read (its
# terminal emulator, here a tmux server, is stopped with SIGSTOP) must not
# stop anything else. Its command writes more than fits the client's
# terminal and exits with output still to deliver; meanwhile a second
# session runs to completion and the bus answers. When the terminal is read
# again, all of the first command's output arrives, then its exit status.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
command -v tmux >/dev/null || lt_fail "tmux is not installed (.ci/install-deps installs it)"

T="tmux -L lt-$$"
tmux_pid=
cleanup() {
        [[ -n $tmux_pid ]] && kill -CONT "$tmux_pid" 2>/dev/null
        $T kill-server 2>/dev/null || true
        lt_domain_cleanup
}
trap cleanup EXIT

# About 90 KB: more than the client's terminal takes (about 64 KiB), less
# than it and the coordinator's buffers hold together, so the command exits
# while its last output still waits for the stalled terminal. It says so
# in the workspace once its output is written.
flood='sleep 2; i=0; while [ $i -lt 900 ]; do echo "line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"; i=$((i+1)); done; echo FLOOD-DONE; echo written >/workspace/flood-written; exit 7'
$T new-session -d -s t -x 120 -y 40 "cd '$LT_WS' && lazaretctl launch -- /bin/sh -c '$flood'; echo LAUNCH-EXIT=\$?; sleep 120"
tmux_pid=$($T display-message -p '#{pid}')

# Once the session is open, the terminal emulator stops reading.
for _ in $(seq 1 150); do
        n=$(cd "$LT_WS" && lazaretctl status --json 2>/dev/null | jq '.Sessions | length' 2>/dev/null) || n=0
        [[ $n == 1 ]] && break
        sleep 0.1
done
[[ $n == 1 ]] || lt_fail "the first session never opened"
kill -STOP "$tmux_pid"
lt_log "tmux server $tmux_pid stopped: the first client's terminal is not read"

# The command writes everything and exits although nobody reads its output.
for _ in $(seq 1 200); do
        [[ -e $LT_WS/flood-written ]] && break
        sleep 0.1
done
[[ -e $LT_WS/flood-written ]] || lt_fail "the first command could not write its output into the buffers"
sleep 1

# Everything else goes on: a second session, and the bus.
start=$(date +%s)
out=$(timeout 30 bash -c "cd '$LT_WS' && exec lazaretctl launch -- /bin/echo second-session" </dev/null) ||
        lt_fail "a second session did not complete while the first client's terminal was stalled"
lt_assert_eq "second session output" second-session "$out"
took=$(($(date +%s) - start))
lt_log "second session took ${took}s while the first was stalled"
state=$(cd "$LT_WS" && timeout 10 lazaretctl status --json | jq -r .State) ||
        lt_fail "lazaretctl status did not answer while a client was stalled"
lt_assert_eq "Domain state while a client is stalled" running "$state"
n=$(cd "$LT_WS" && lazaretctl status --json | jq '.Sessions | length')
lt_assert_eq "the stalled session is still there" 1 "$n"

# The terminal is read again: all output, then the exit status.
kill -CONT "$tmux_pid"
tmux_pid=
for _ in $(seq 1 200); do
        $T capture-pane -t t -p | grep -q 'LAUNCH-EXIT=' && break
        sleep 0.1
done
pane=$($T capture-pane -t t -p -S -)
grep -q 'LAUNCH-EXIT=7' <<<"$pane" || { echo "$pane" | tail -5 >&2; lt_fail "the first session did not end with its status 7"; }
grep -q 'FLOOD-DONE' <<<"$pane" || lt_fail "the first session's last output was lost"
lines=$(grep -c '^line-[0-9]*-x' <<<"$pane" || true)
lt_assert_eq "every line of the first session's output arrived" 900 "$lines"
lt_wait_inactive

echo "PASS: a stalled client terminal stops only its own session"
