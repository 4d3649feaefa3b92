#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-launch-terminal: an interactive session driven through tmux: a shell
# with a terminal inside, TERM and the host's terminfo entry, window resize,
# Ctrl-C interrupting the foreground job without killing the shell or the
# Domain, Ctrl-Z, the exit status, and the client's terminal restored even
# when lazaretctl is killed with SIGKILL.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
command -v tmux >/dev/null || lt_fail "tmux is not installed (.ci/install-deps installs it)"

T="tmux -L lt-$$"
cleanup_tmux() { $T kill-server 2>/dev/null || true; }
trap 'rc=$?; cleanup_tmux; lt_domain_cleanup "$rc"' EXIT

screen() { $T capture-pane -t t -p; }
# wait_for TEXT: bounded wait until the pane shows TEXT. The pane also shows
# what was typed: a marker in a typed command is split with quotes (IS-A-T''TY)
# so that only the command's output matches.
wait_for() {
        for _ in $(seq 1 100); do
                screen | grep -qF -- "$1" && return 0
                sleep 0.1
        done
        screen >&2
        lt_fail "the screen never showed '$1'"
}

$T new-session -d -s t -x 100 -y 30 "cd '$LT_WS' && TERM=xterm-256color lazaretctl launch; echo LAUNCH-EXIT=\$?; sleep 60"
wait_for ':/workspace#'

$T send-keys -t t "[ -t 0 ] && [ -t 1 ] && echo IS-A-T''TY; echo TERM=\$TERM; stty size" Enter
wait_for 'IS-A-TTY'
wait_for 'TERM=xterm-256color'
wait_for '30 100'

# The host's terminfo entry is there even though the busybox image has none.
$T send-keys -t t "ls \${TERMINFO_DIRS%%:*}/x/ && echo TERMINFO-O''K" Enter
wait_for 'TERMINFO-OK'
grep -q 'xterm-256color' <<<"$(screen)" || lt_fail "terminfo entry xterm-256color not visible inside"

$T resize-window -t t -x 120 -y 40
sleep 0.3
$T send-keys -t t 'stty size' Enter
wait_for '40 120'

# Ctrl-C reaches the foreground job inside; the shell and the Domain live on.
# (An interactive shell drops the rest of a command line that Ctrl-C
# interrupted, so the status is asked for on its own line.)
$T send-keys -t t 'sleep 100' Enter
sleep 0.5
$T send-keys -t t C-c
$T send-keys -t t 'echo SLEEP-DONE-$?' Enter
wait_for 'SLEEP-DONE-130'
lt_assert_eq "Domain state after Ctrl-C" running "$(cd "$LT_WS" && lazaretctl status --json | jq -r .State)"

# Ctrl-Z stops the foreground job; the shell reports it.
$T send-keys -t t 'sleep 100' Enter
sleep 0.5
$T send-keys -t t C-z
wait_for 'Stopped'
$T send-keys -t t "kill -9 %1 && echo JOB-KI''LLED" Enter
wait_for 'JOB-KILLED'

# The shell may learn of the killed job only when asked to exit; it then
# refuses once ("You have stopped jobs") and exits on the second request.
$T send-keys -t t 'exit 7' Enter
sleep 0.5
screen | grep -q 'You have stopped jobs' && $T send-keys -t t 'exit 7' Enter
wait_for 'LAUNCH-EXIT=7'

# A client killed with SIGKILL: its terminal gets its modes back, and its
# session ends (the Domain with it, as it was the last one).
$T kill-session -t t
$T new-session -d -s t -x 80 -y 24 "bash --norc --noprofile"
$T send-keys -t t "cd '$LT_WS'; stty -g > '$HOME/stty.before'; lazaretctl launch" Enter
wait_for ':/workspace#'
pkill -KILL -f '^lazaretctl launch$' || lt_fail "no lazaretctl launch process to kill"
sleep 0.5
$T send-keys -t t "stty -g > '$HOME/stty.after' && echo RESTO''RED" Enter
wait_for 'RESTORED'
lt_assert_eq "terminal modes after SIGKILL of the client" "$(cat "$HOME/stty.before")" "$(cat "$HOME/stty.after")"
lt_wait_inactive

echo "PASS: terminal session, resize, Ctrl-C, Ctrl-Z, exit status, terminal restored after SIGKILL"
