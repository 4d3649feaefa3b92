#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The body of bench/launch, run as the unprivileged user (see bench/launch).
# shellcheck source=../tests/harness/lib.sh
. "$LAZARET_SOURCE_ROOT/tests/harness/lib.sh"
# shellcheck source=lib.sh
. "$LAZARET_SOURCE_ROOT/bench/lib.sh"

COLD=${LAZARET_TEST_BENCH_COLD:-10}
WARM=${LAZARET_TEST_BENCH_WARM:-30}
command -v hyperfine >/dev/null || lt_fail "hyperfine is not installed (.ci/install-deps installs it)"

lt_install
lt_domain_setup bench-launch
# LAZARET_TEST_BENCH_PERSISTENT_DIRS='["/etc", "/root"]': the profile persists
# those (State Anchor overlays), to measure what they add to a launch.
if [[ -n ${LAZARET_TEST_BENCH_PERSISTENT_DIRS:-} ]]; then
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s", "persistent_dirs": %s } } }\n' \
                "$LT_IMAGE" "$LAZARET_TEST_BENCH_PERSISTENT_DIRS" >"$LT_CONFIG"
fi
work=$HOME/bench-launch
rm -rf "$work"
mkdir -p "$work"

# The prepared rootfs Lazaret itself uses.
bench_prepared_rootfs
runsc=$BENCH_RUNSC

# Bare bundles: the same rootfs, the same runsc flags as the supervisor.
bench_bare_bundle "$work/true" '["/bin/true"]'
bench_bare_bundle "$work/sleep" '["/bin/sleep", "3600"]'
mkdir -p "$work/root" "$work/overlay"
# The supervisor's flags (src/supervisor/supervisor.c), its dentry cache too.
bench_runsc_flags "$work/root" "$work/overlay" none
RUNSC_FLAGS=$BENCH_RUNSC_FLAGS
in_userns() { unshare --user --map-root-user --map-auto --mount -- "$@"; }

cat >"$work/bare-run" <<EOS
#!/bin/bash
exec unshare --user --map-root-user --map-auto --mount -- $runsc $RUNSC_FLAGS run --bundle $work/true bare-true-\$\$ </dev/null >/dev/null 2>&1
EOS
chmod +x "$work/bare-run"
"$work/bare-run" || lt_fail "bare runsc run does not work"

# Issue 34's baseline: bare runsc run with a Domain's network namespace and
# mounts: slirp4netns on a fresh namespace and --network=sandbox as the
# supervisor runs it (bench_bare_net_run, bench/lib.sh), the workspace as a
# plain bind at /workspace (the view is Lazaret's own cost) and a read-only
# bind at /run/lazaret, as a Domain's control directory is.
mkdir -p "$work/net/root" "$work/net/overlay" "$work/net/control"
bench_bare_bundle "$work/net/true" '["/bin/true"]' "$work/net/netns"
jq --arg ws "$LT_WS" --arg ctl "$work/net/control" \
        '.mounts += [{destination: "/workspace", type: "bind", source: $ws, options: ["rbind", "rw"]},
                     {destination: "/run/lazaret", type: "bind", source: $ctl, options: ["rbind", "ro"]}]' \
        "$work/net/true/config.json" >"$work/net/config.json" && mv "$work/net/config.json" "$work/net/true/config.json"
bench_runsc_flags "$work/net/root" "$work/net/overlay" sandbox --log="$work/net/runsc.log"
bench_bare_net_run "$work/net" "$BENCH_RUNSC_FLAGS"
"$work/net/bare-run" >/dev/null || lt_fail "bare runsc run with slirp4netns and the workspace does not work"

# A bare sandbox to exec into.
in_userns "$runsc" $RUNSC_FLAGS run --bundle "$work/sleep" bare-sleep </dev/null >/dev/null 2>&1 &
bare=$!
for _ in $(seq 1 100); do
        "$runsc" --root "$work/root" exec bare-sleep /bin/true 2>/dev/null && break
        sleep 0.05
done

# A warm Domain: one session holds it up.
(cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 3600) &
holder=$!
for _ in $(seq 1 100); do
        [[ $(cd "$LT_WS" && lazaretctl status --json | jq -r .State) == running ]] && break
        sleep 0.1
done

cd "$LT_WS"
hyperfine --style basic --export-json "$work/warm.json" -N --warmup 3 --runs "$WARM" \
        -n "bare runsc exec" "$runsc --root $work/root exec bare-sleep /bin/true" \
        -n "lazaret warm launch" "lazaretctl launch -- /bin/true" >&2

kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
# The container by name: killing the wrapper would leave runsc running.
"$runsc" --root "$work/root" kill bare-sleep KILL 2>/dev/null || true
wait "$bare" 2>/dev/null || true
lt_wait_inactive

hyperfine --style basic --export-json "$work/cold.json" -N --warmup 1 --runs "$COLD" \
        -n "bare runsc run" "$work/bare-run" >&2
hyperfine --style basic --export-json "$work/cold-net.json" -N --warmup 1 --runs "$COLD" \
        -n "bare runsc run, network and mounts" "$work/net/bare-run" >&2
hyperfine --style basic --export-json "$work/cold-lz.json" -N --warmup 1 --runs "$COLD" \
        --prepare "bash -c '. $LAZARET_SOURCE_ROOT/tests/harness/lib.sh; LT_DOMAIN=$LT_DOMAIN lt_wait_inactive'" \
        -n "lazaret cold launch" "lazaretctl launch -- /bin/true" >&2

mean() { bench_result "$1" "$2" mean; }
sd() { bench_result "$1" "$2" stddev; }
br=$(mean "$work/cold.json" "bare runsc run")
bn=$(mean "$work/cold-net.json" "bare runsc run, network and mounts")
lc=$(mean "$work/cold-lz.json" "lazaret cold launch")
be=$(mean "$work/warm.json" "bare runsc exec")
lw=$(mean "$work/warm.json" "lazaret warm launch")

echo
echo "bench/launch: $COLD cold and $WARM warm runs, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)${LAZARET_TEST_BENCH_PERSISTENT_DIRS:+, persistent dirs $LAZARET_TEST_BENCH_PERSISTENT_DIRS}"
printf '  %-22s %8.1f ms  (± %.1f)\n' "bare runsc run" "$(jq -n "$br*1000")" "$(jq -n "$(sd "$work/cold.json" "bare runsc run")*1000")"
printf '  %-22s %8.1f ms  (± %.1f)\n' "bare, net and mounts" "$(jq -n "$bn*1000")" "$(jq -n "$(sd "$work/cold-net.json" "bare runsc run, network and mounts")*1000")"
printf '  %-22s %8.1f ms  (± %.1f)\n' "lazaret cold launch" "$(jq -n "$lc*1000")" "$(jq -n "$(sd "$work/cold-lz.json" "lazaret cold launch")*1000")"
printf '  %-22s %8.1f ms  (± %.1f)\n' "bare runsc exec" "$(jq -n "$be*1000")" "$(jq -n "$(sd "$work/warm.json" "bare runsc exec")*1000")"
printf '  %-22s %8.1f ms  (± %.1f)\n' "lazaret warm launch" "$(jq -n "$lw*1000")" "$(jq -n "$(sd "$work/warm.json" "lazaret warm launch")*1000")"
printf '  cold ratio (lazaret cold / bare runsc run with the same network namespace and mounts): %.2f  (goal <= 1.3, issue 34)\n' "$(jq -n "$lc/$bn")"
printf '  cold ratio (lazaret cold / bare runsc run, no network):  %.2f  (the strictest baseline)\n' "$(jq -n "$lc/$br")"
printf '  warm ratio (lazaret warm / bare runsc exec): %.2f  (goal <= 1.1, issue 34; 1.2 before)\n' "$(jq -n "$lw/$be")"

# Where a cold start spends its time (issue 34 item 4): the supervisor's
# report per start (run_start_steps() in src/supervisor/supervisor.c, which
# the coordinator logs) and the coordinator's "published" line, medians over
# the cold runs just made.
log=$(lazaretctl log --lines 2000 2>/dev/null || true)
steps=$(grep -o 'Runtime Supervisor: sandbox started in .*' <<<"$log" | tail -n "$COLD" || true)
if [[ -n $steps ]]; then
        median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
        echo "  cold start by step (medians of $(wc -l <<<"$steps") starts, ms):"
        pub=$(grep -o 'published [0-9]* ms after' <<<"$log" | tail -n "$COLD" | awk '{ print $2 }' | median)
        printf '    %-24s %8s\n' "coordinator to published" "${pub:-?}"
        printf '    %-24s %8s\n' "supervisor, all steps" "$(sed 's/.*started in \([0-9]*\) ms.*/\1/' <<<"$steps" | median)"
        IFS=, read -ra names <<<"$(sed 's/;.*//; s/.*ms: //; s/ [0-9.]*\( ms\)\{0,1\}\(,\|$\)/,/g; s/,$//; s/^ //' <<<"$(head -n1 <<<"$steps")")"
        for n in "${names[@]}"; do
                n=${n# }
                printf '    %-24s %8s\n' "  $n" "$(sed 's/;.*//' <<<"$steps" | grep -o "[ :]$n [0-9.]*" | awk '{ print $NF }' | median)"
        done
        # The network's own steps, named by the report as above.
        net=$(grep -o "; in network:.*" <<<"$steps" | sed 's/^; in network://' || true)
        IFS=, read -ra names <<<"$(sed 's/ [0-9.]*\( ms\)\{0,1\}\(,\|$\)/,/g; s/,$//; s/^ //' <<<"$(head -n1 <<<"$net")")"
        for n in "${names[@]}"; do
                n=${n# }
                [[ -n $n ]] || continue
                printf '    %-24s %8s\n' "    network: $n" "$(grep -o "[ :]$n [0-9.]*" <<<"$net" | awk '{ print $NF }' | median)"
        done
        # The rare slow start (issue 34 item 4: a network step of 1.0 s): how many.
        printf '    %-24s %8s\n' "network >= 500 ms" "$(sed 's/;.*//' <<<"$steps" | grep -o ' network [0-9.]*' | awk '$2 >= 500 { n++ } END { print n + 0 }') of $(wc -l <<<"$steps")"
        # "Runtime Supervisor: sandbox started in N ms: ...": N is the sixth field.
        printf '    slowest start: %s\n' "$(sort -t' ' -k6,6n <<<"$steps" | tail -n 1 | sed 's/^Runtime Supervisor: //')"
fi
