#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-launch-concurrent: ten launches started together on a cold Domain all
# join one coordinator and one sandbox (FR-2, OR-1): every command sees the
# marker files of all ten in the sandbox's private /tmp, reports the same
# sandbox, and at no moment do two coordinators of the Domain run.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

N=10
lt_wait_inactive
mkdir -p "$HOME/conc"
rm -f "$HOME"/conc/*

# Each session leaves a marker in /tmp (inside the sandbox, not shared with
# the host), waits until all N markers are there, and reports what it saw.
script='touch /tmp/marker.$LAZARET_SESSION_ID; i=0; while [ $(ls /tmp | grep -c "^marker\.") -lt '$N' ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; ls /tmp | grep -c "^marker\."; cat /proc/1/cmdline | tr "\0" " "'

# A watcher counts coordinator processes of this Domain while the launches
# run. A child the coordinator has forked and not yet exec'd carries the same
# command line, so a match whose parent is itself a match is not counted.
count_coordinators() {
        local -a pids
        local pid ppid n=0
        mapfile -t pids < <(pgrep -u "$(id -u)" -f "lazaret-coordinator $LT_DOMAIN")
        for pid in "${pids[@]}"; do
                ppid=$(awk '/^PPid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || continue
                [[ -n $ppid ]] || continue
                [[ " ${pids[*]} " == *" $ppid "* ]] && continue
                n=$((n + 1))
        done
        echo "$n"
}
(
        max=0
        for _ in $(seq 1 300); do
                n=$(count_coordinators)
                ((n > max)) && max=$n
                echo "$max" >"$HOME/conc/max-coordinators"
                [[ -e $HOME/conc/done ]] && break
                sleep 0.05
        done
) &
watcher=$!

pids=()
for i in $(seq 1 $N); do
        lt_launch -- /bin/sh -c "$script" >"$HOME/conc/out.$i" 2>"$HOME/conc/err.$i" &
        pids+=($!)
done
fails=0
for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || { fails=$((fails + 1)); lt_log "launch $((i + 1)) failed: $(cat "$HOME/conc/err.$((i + 1))")"; }
done
touch "$HOME/conc/done"
wait "$watcher" || true
lt_assert_eq "failed launches" 0 "$fails"

for i in $(seq 1 $N); do
        lt_assert_eq "markers seen by launch $i" "$N" "$(head -n1 "$HOME/conc/out.$i")"
done
lt_assert_eq "distinct sandbox inits seen" 1 "$(for i in $(seq 1 $N); do sed -n 2p "$HOME/conc/out.$i"; done | sort -u | wc -l)"
lt_assert_eq "most coordinators of the Domain at once" 1 "$(cat "$HOME/conc/max-coordinators")"
starts=$(grep -c "starting Domain" "$LT_LOGDIR/$LT_DOMAIN.log" 2>/dev/null) || starts=0
lt_log "coordinator starts logged so far: $starts"
lt_wait_inactive

echo "PASS: $N concurrent cold launches shared one coordinator and one sandbox"
