#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The body of bench/escalate, run as the unprivileged user (see bench/escalate).
# shellcheck source=../tests/harness/lib.sh
. "$LAZARET_SOURCE_ROOT/tests/harness/lib.sh"

N=${LAZARET_TEST_BENCH_N:-50}
REPS=${LAZARET_TEST_BENCH_REPS:-5}
command -v hyperfine >/dev/null || lt_fail "hyperfine is not installed (.ci/install-deps installs it)"

lt_install
lt_domain_setup bench-escalate
printf '{ "default_profile": "test",
  "escalation": { "auto_approve": [ { "argv": ["/usr/bin/true"] } ] },
  "profiles": { "test": { "image": "oci:%s" } } }\n' "$LT_IMAGE" >"$LT_CONFIG"

lt_keeper_start
sandbox=$(cd "$LT_WS" && lazaretctl status --json | jq -r .SandboxId)
root=$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN/runsc

loop() {   # COMMAND: N times inside one session; prints the elapsed seconds
        local t0 t1
        t0=$(date +%s.%N)
        (cd "$LT_WS" && lazaretctl launch -- /bin/sh -c "i=0; while [ \$i -lt $N ]; do $1 || exit 1; i=\$((i+1)); done") ||
                lt_fail "the loop of '$1' failed"
        t1=$(date +%s.%N)
        echo "$t1 - $t0" | bc -l
}
per=() gross=()
for _ in $(seq 1 "$REPS"); do
        with=$(loop "/usr/local/bin/lazaret-escalate -- /usr/bin/true")
        without=$(loop "/bin/true")
        per+=("$(echo "($with - $without) * 1000 / $N" | bc -l)")
        gross+=("$(echo "$with * 1000 / $N" | bc -l)")
done
median_of() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
median=$(median_of "${per[@]}")
gross_median=$(median_of "${gross[@]}")

hyperfine --style basic --export-json "$HOME/bench-escalate.json" -N --warmup 3 --runs 30 \
        -n "runsc exec true" "runsc --root $root exec $sandbox /bin/true" >&2
exec_median=$(jq -r '.results[0].median * 1000' "$HOME/bench-escalate.json")

kill "$LT_KEEPER" 2>/dev/null || true
wait "$LT_KEEPER" 2>/dev/null || true

echo
echo "bench/escalate: $REPS x $N auto-approved requests, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
printf '  per request (ms):          %s\n' "$(printf '%.1f ' "${per[@]}")"
printf '  escalation round trip:     %8.1f ms median  (goal < 20, and below runsc exec)\n' "$median"
printf '  the same with the client'"'"'s own start inside (the loop'"'"'s fork and exec of it, not subtracted):\n'
printf '                             %8.1f ms median\n' "$gross_median"
printf '  runsc exec /bin/true:      %8.1f ms median\n' "$exec_median"
printf '  ratio (escalation / exec):  %8.2f\n' "$(awk -v a="$median" -v b="$exec_median" 'BEGIN { print (b > 0) ? a / b : 0 }')"
