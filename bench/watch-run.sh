#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The body of bench/watch, run as the unprivileged user (see bench/watch).
# shellcheck source=../tests/harness/lib.sh
. "$LAZARET_SOURCE_ROOT/tests/harness/lib.sh"

EDITS=${LAZARET_TEST_BENCH_EDITS:-50}

lt_install
lt_domain_setup bench-watch
lt_use_watch_image
echo 0 >"$LT_WS/f.txt"
lt_keeper_start

now_ns() { date +%s%N; }
# measure NAME EVENTS-FILE PATTERN: EDITS appends, one at a time; prints the sorted latencies in ms.
measure() {
        local events=$2 pattern=$3 from start ok
        for i in $(seq 1 "$EDITS"); do
                from=$(wc -l <"$events")
                start=$(now_ns)
                echo "$i" >>"$LT_WS/f.txt"
                ok=
                while (($(now_ns) - start < 2000000000)); do
                        if tail -n +"$((from + 1))" "$events" | grep -q -- "$pattern"; then
                                ok=1
                                break
                        fi
                        sleep 0.002
                done
                [[ -n $ok ]] || lt_fail "$1: edit $i gave no event within 2 s"
                echo $((($(now_ns) - start) / 1000000))
                # Apart enough that each edit is its own batch.
                sleep 0.05
        done | sort -n
}
stats() { awk '{ a[NR] = $1 } END { printf "median %d ms, p90 %d ms, max %d ms", a[int((NR + 1) / 2)], a[int(NR * 0.9 + 0.5)], a[NR] }'; }
median() { awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
start_watcher() {
        local events=$1
        shift
        : >"$events"
        "$@" >"$events" 2>&1 &
        for _ in $(seq 1 100); do
                grep -qx ready "$events" && return 0
                sleep 0.1
        done
        lt_fail "the watcher did not start: $(cat "$events")"
}

start_watcher "$HOME/bench-host.txt" "$LT_WATCH_TOOL" "$LT_WS"
host_pid=$!
host=$(measure host "$HOME/bench-host.txt" "$LT_WS/f.txt\$")
kill "$host_pid"

start_watcher "$HOME/bench-inside.txt" bash -c "cd '$LT_WS' && exec lazaretctl launch -- '$LT_WATCH_TOOL' /workspace"
inside_pid=$!
inside=$(measure inside "$HOME/bench-inside.txt" ' /workspace/f\.txt$')
kill "$inside_pid"

printf 'host edit -> inotify event, %d edits\n' "$EDITS"
printf '  host watcher:          %s\n' "$(stats <<<"$host")"
printf '  watcher in the sandbox: %s\n' "$(stats <<<"$inside")"
awk -v h="$(median <<<"$host")" -v s="$(median <<<"$inside")" \
        'BEGIN { printf "  ratio of medians: %.1f (goal: inside within 200 ms)\n", (h > 0 ? s / h : s) }'
