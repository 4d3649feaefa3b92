#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The workloads of bench/workspace. The same script runs on the host, in bare
# runsc and in a Lazaret session, so that only the environment differs; it
# times each run itself (bash's $EPOCHREALTIME, no fork) and prints one line
# per timed run, in milliseconds, so that starting the sandbox process is
# never part of a figure.
#
# Usage: workspace-load.sh DIR WORKLOAD RUNS [again]
#   DIR holds what bench/workspace-run.sh generated: repo/ (a git repository),
#   small.tar, npm.tar.gz (node_modules/ of 500 packages), cproj/ (a C
#   project with a Makefile, full mode only). The rows that make files make
#   them in a new directory each run (untar/, writes/, ignored-writes/,
#   npm/), which nothing removes: the benchmark's file system is thrown
#   away at the end, and no environment spends its time unlinking what it
#   made between runs.
#   WORKLOAD is one of:
#     git-warm    git status in repo/, once untimed, then RUNS timed runs
#     git-once    one timed git status (RUNS is ignored)
#     git-diff    200 of repo/'s files changed (the same content each time,
#                 untimed), git diff once untimed, then RUNS timed git diffs
#   "again" says that this environment ran the same workload last (the
#   benchmark's later rounds): git-warm and git-diff then leave out their
#   untimed preparation, whose state is still there (nothing else works in
#   this environment's copy of the workspace in between).
#     tar         tar x of small.tar into a new directory in untar/
#     writes      5,000 small files written by a shell loop (builtins only)
#                 into a new directory in writes/
#     writes-ignored  the same in ignored-writes/, which the workspace's
#                 .gitignore names (Ignored Workspace State with the view)
#     npm         npm.tar.gz unpacked into a new npm/*/node_modules/
#                 (git-ignored: Ignored Workspace State with the view) as
#                 npm unpacks, without restoring owners, modes or times,
#                 then every file of it read (cat); prints "UNPACK READ"
#                 in ms
#     make        make -j2 of cproj/ after make clean
#     git-config  prints core.checkStat as git sees it here, who set it,
#                 and LD_PRELOAD (Lazaret's statx shim, when it is used)
#
# With LAZARET_BENCH_GIT_MINIMAL=1 and no core.checkStat visible to git, the
# script adds core.checkStat=minimal through GIT_CONFIG_COUNT (appending to a
# GIT_CONFIG_COUNT already set), the way a Lazaret session is meant to.
set -euo pipefail
# A failure inside $(...) ends the script too: a workload that failed must
# never be printed as a time (bash clears -e in command substitutions).
shopt -s inherit_errexit

dir=$1 load=$2 runs=$3 again=${4:-}

git_minimal() {
        [[ ${LAZARET_BENCH_GIT_MINIMAL:-0} == 1 ]] || return 0
        [[ -z $(git -C "$dir/repo" config --get core.checkStat || true) ]] || return 0
        local n=${GIT_CONFIG_COUNT:-0}
        export "GIT_CONFIG_KEY_$n=core.checkStat" "GIT_CONFIG_VALUE_$n=minimal"
        export GIT_CONFIG_COUNT=$((n + 1))
        LAZARET_BENCH_GIT_SET_HERE=1
}

# timed CMD...: runs CMD and prints its wall time in ms (three decimals).
# A failure of CMD ends the script (-e, inherited in $(timed ...) too).
timed() {
        local t0 t1
        t0=${EPOCHREALTIME/[.,]/}
        "$@"
        t1=${EPOCHREALTIME/[.,]/}
        printf '%d.%03d\n' $(((t1 - t0) / 1000)) $(((t1 - t0) % 1000))
}

git_status() { git -C "$dir/repo" status >/dev/null; }

git_diff() { git -C "$dir/repo" --no-pager diff >/dev/null; }

# change_files: 200 tracked files (two in each directory) differ from the
# index, with the same content whichever run wrote them.
change_files() {
        local d
        for ((d = 0; d < 100; d++)); do
                printf 'file %d/0\nchanged by the benchmark\n' "$d" >"$dir/repo/d$d/f0.txt"
                printf 'file %d/1\nchanged by the benchmark\n' "$d" >"$dir/repo/d$d/f1.txt"
        done
}

# npm (pacote) extracts with node-tar's noMtime and noChmod, and owners are
# not restored below root: neither here.
npm_unpack() { tar --no-same-owner --no-same-permissions -m -xzf "$dir/npm.tar.gz" -C "$to"; }

npm_read() { find "$to/node_modules" -type f -exec cat -- {} + >/dev/null; }

# fresh PARENT: a new, empty directory in PARENT, in $to.
fresh() { mkdir -p "$dir/$1" && to=$(mktemp -d "$dir/$1/run.XXXXXX"); }

untar() { tar -xf "$dir/small.tar" -C "$to"; }

writes() {
        local i=0
        while ((i < 5000)); do
                echo "small write $i" >"$to/f$i"
                i=$((i + 1))
        done
}

build() { make -s -C "$dir/cproj" -j2 >/dev/null; }

git_minimal
case $load in
git-config)
        v=$(git -C "$dir/repo" config --get core.checkStat || true)
        if [[ -n ${LAZARET_BENCH_GIT_SET_HERE:-} ]]; then
                echo "core.checkStat=${v:-default} (set by the benchmark: GIT_CONFIG_COUNT=$GIT_CONFIG_COUNT)"
        else
                echo "core.checkStat=${v:-default} (GIT_CONFIG_COUNT=${GIT_CONFIG_COUNT:-unset})"
        fi
        echo "LD_PRELOAD=${LD_PRELOAD:-unset}"
        ;;
git-warm)
        [[ $again == again ]] || git_status
        for ((r = 0; r < runs; r++)); do timed git_status; done
        ;;
git-once)
        timed git_status
        ;;
git-diff)
        if [[ $again != again ]]; then
                change_files
                git_diff
        fi
        for ((r = 0; r < runs; r++)); do timed git_diff; done
        ;;
npm)
        for ((r = 0; r < runs; r++)); do
                fresh npm
                u=$(timed npm_unpack)
                rd=$(timed npm_read)
                echo "$u $rd"
        done
        ;;
tar)
        for ((r = 0; r < runs; r++)); do
                fresh untar
                timed untar
        done
        ;;
writes)
        for ((r = 0; r < runs; r++)); do
                fresh writes
                timed writes
        done
        ;;
writes-ignored)
        for ((r = 0; r < runs; r++)); do
                fresh ignored-writes
                timed writes
        done
        ;;
make)
        for ((r = 0; r < runs; r++)); do
                make -s -C "$dir/cproj" clean >/dev/null
                timed build
        done
        make -s -C "$dir/cproj" clean >/dev/null
        ;;
*)
        echo "workspace-load.sh: unknown workload '$load'" >&2
        exit 2
        ;;
esac
