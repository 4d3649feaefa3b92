#!/usr/bin/env bash
# run-model.sh -- check the Lazaret protocol model with spin.
#
#   run-model.sh [--part all|safety|liveness|mutants] [--jobs N]
#                MODEL MUTANT_LIST WORKDIR
#
# For every check: spin -a (with the check's -D defines) in its own
# directory under WORKDIR, compile pan.c with $SPEC_CC (or cc), run pan,
# and judge pan's report.
#
#   real model, safety    pass iff "errors: 0" and the search completed
#   real model, liveness  the same, with pan -a -f -N <claim>
#   real model, witness   pass iff pan finds the state the claim <claim>
#                         says is never reached (built with -DWITNESS):
#                         shows that the state is reachable
#   mutant                pass iff pan reports an error, and it is the
#                         violation the mutant list expects
#
# Prints one PASS/FAIL line per check and ends with "N passed, M failed".
# Exit status: 0 all passed, 1 something failed, 77 spin or cc missing.
# See spec/README.md for reading a failure.

set -u

part=all
jobs=1
while [ $# -gt 0 ]; do
	case "$1" in
	--part) part=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "run-model.sh: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [ $# -ne 3 ]; then
	echo "usage: run-model.sh [--part all|safety|liveness|mutants] [--jobs N] MODEL MUTANT_LIST WORKDIR" >&2
	exit 2
fi
case "$part" in all|safety|liveness|mutants) ;; *) echo "run-model.sh: bad --part $part" >&2; exit 2 ;; esac

model=$(readlink -f "$1")
mutant_list=$(readlink -f "$2")
work=$3

SPIN=${SPIN:-spin}
read -r -a CC <<< "${SPEC_CC:-cc}"
# pan.c compiled with -O2 searches about 1.8 times faster than with -O0 and
# takes 4 s more to compile: worth it for the real model's long searches,
# not for the mutants, most of which fail within a second, nor for the
# witnesses, whose states are found within a second.  PAN_CFLAGS, if set,
# is used for every check.
REAL_PAN_CFLAGS=${PAN_CFLAGS:--O2 -w}
MUTANT_PAN_CFLAGS=${PAN_CFLAGS:--O0 -w}
# The checks are batch work: spin, cc and pan run 10 nice levels below
# the caller (PAN_NICE), under the other tests of the same meson run,
# whose sandboxes wait on timers and terminals, and take the CPU those
# leave idle.
PAN_NICE=${PAN_NICE:-10}
NICE=(nice -n "$PAN_NICE")
MEMLIM=${MEMLIM:-2048}        # MiB per pan run
DEPTH=${DEPTH:-200000}        # pan -m: search depth limit

if ! command -v "$SPIN" >/dev/null 2>&1; then
	echo "SKIP spin not found (install the 'spin' package)"
	exit 77
fi
if ! command -v "${CC[0]}" >/dev/null 2>&1; then
	echo "SKIP C compiler '${CC[0]}' not found"
	exit 77
fi
[ -r "$model" ] || { echo "run-model.sh: cannot read $model" >&2; exit 2; }
[ -r "$mutant_list" ] || { echo "run-model.sh: cannot read $mutant_list" >&2; exit 2; }
mkdir -p "$work" || exit 2
work=$(readlink -f "$work")

# Bounded instances of the model (spec/README.md explains the choice).
declare -A CONFIG=(
	[lifecycle]="-DNCAND=2 -DMAXREQ=0 -DNFAULT=2"   # 2 generations, 2 faults
	[escalation]="-DNCAND=1 -DMAXREQ=2 -DNFAULT=1"  # 2 requests, 1 fault
	[mixed]="-DNCAND=2 -DMAXREQ=1 -DNFAULT=1"       # 2 generations, 1 request, 1 fault
	[calm]="-DNCAND=1 -DMAXREQ=2 -DNFAULT=0"        # 2 requests, no fault
	[names]="-DNCAND=2 -DMAXREQ=0 -DNFAULT=1 -DHOSTRULES"  # host rules: names, canaries, live rules
)

# Checks of the real model: check  claim  config
REAL_CHECKS=(
	"safety   -                    lifecycle"
	"safety   -                    escalation"
	"safety   -                    mixed"
	"safety   -                    names"
	"liveness startup_progress     lifecycle"
	"liveness startup_progress     mixed"
	"liveness escalation_resolves  mixed"
	"liveness escalation_resolves  calm"
	"liveness view_death_fails_domain lifecycle"
	"liveness startup_progress     names"
	"witness  reach_running_after_view_death lifecycle"
	"witness  reach_kept_rule_used names"
)

# Run spin + cc + pan in directory $1.  Sets: pan_out (file), errors,
# truncated (0/1), reason (short text), stats (short text).
# Args: dir check claim cflags defines...
run_pan() {
	local dir=$1 check=$2 claim=$3 cflags=$4; shift 4
	local defs=("$@")
	rm -rf "$dir" && mkdir -p "$dir" || return 1
	cp "$model" "$dir/lazaret.pml"
	pan_out=$dir/pan.out
	errors=
	truncated=0
	reason=
	stats=
	if ! (cd "$dir" && "${NICE[@]}" "$SPIN" -a "${defs[@]}" lazaret.pml) > "$dir/spin.log" 2>&1; then
		reason="spin -a failed: $(head -n 3 "$dir/spin.log" | tr '\n' ' ')"
		return 1
	fi
	local mode_cflags panargs
	if [ "$check" = safety ]; then
		mode_cflags=(-DSAFETY)
		panargs=(-m"$DEPTH" -n)
	elif [ "$check" = witness ]; then
		mode_cflags=(-DSAFETY)
		panargs=(-N "$claim" -m"$DEPTH" -n)
	else
		# weak fairness needs room for every process: -DHOSTRULES adds
		# the Agent, an eleventh
		case " ${defs[*]} " in
		*" -DHOSTRULES "*) mode_cflags=(-DNFAIR=4) ;;
		*) mode_cflags=(-DNFAIR=3) ;;
		esac
		panargs=(-a -f -N "$claim" -m"$DEPTH" -n)
	fi
	# shellcheck disable=SC2086
	if ! (cd "$dir" && "${NICE[@]}" "${CC[@]}" $cflags "${mode_cflags[@]}" -DMEMLIM="$MEMLIM" -o pan pan.c) > "$dir/cc.log" 2>&1; then
		reason="compiling pan.c failed: $(head -n 3 "$dir/cc.log" | tr '\n' ' ')"
		return 1
	fi
	local t0 t1
	t0=$(date +%s.%N)
	(cd "$dir" && "${NICE[@]}" ./pan "${panargs[@]}") > "$pan_out" 2>&1
	t1=$(date +%s.%N)
	errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$pan_out" | tail -n 1)
	if grep -qE 'max search depth too small|Search not completed|reached -DMEMLIM|out of memory' "$pan_out"; then
		truncated=1
	fi
	stats="$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$pan_out" | head -n 1) states, $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
	reason=$(grep -m 1 -E '^pan:1: ' "$pan_out" | sed 's/^pan:1: //')
	return 0
}

# Name the invariant behind an assertion failure: replay the trail and
# read the "INV <name>" tag on the failing line of the model.
violated_invariant() {
	local dir=$1; shift
	local line
	line=$(cd "$dir" && "$SPIN" -t "$@" lazaret.pml 2>&1 |
		sed -n 's/^spin: lazaret\.pml:\([0-9][0-9]*\), Error: assertion violated.*/\1/p' | head -n 1)
	[ -n "$line" ] || return 1
	sed -n "${line}p" "$dir/lazaret.pml" | sed -n 's/.*INV \([A-Za-z]*\).*/\1/p'
}

# One check of the real model.  Writes one result line to $2.
check_real() {
	local spec=$1 result=$2
	local check claim config
	read -r check claim config <<< "$spec"
	local id="model-$check-$config" label="model $check/$config"
	if [ "$check" != safety ]; then
		id="model-$check-$claim-$config"
		label="model $check $claim/$config"
	fi
	local dir="$work/$id"
	# shellcheck disable=SC2206
	local defs=(${CONFIG[$config]})
	[ "$check" = liveness ] && defs+=(-DLIVENESS)
	[ "$check" = witness ] && defs+=(-DWITNESS)
	local cflags=$REAL_PAN_CFLAGS
	[ "$check" = witness ] && cflags=$MUTANT_PAN_CFLAGS
	if ! run_pan "$dir" "$check" "$claim" "$cflags" "${defs[@]}"; then
		echo "FAIL $label: $reason" > "$result"
		return
	fi
	if [ "$check" = witness ]; then
		case "$errors:$reason" in
		0:*) echo "FAIL $label: the state is unreachable ($stats)$([ "$truncated" = 1 ] && echo ', search not completed')" > "$result" ;;
		*"assertion violated"*|*"claim violated"*)
			# the never claim's own assertion, not one of the model's
			local inv
			inv=$(violated_invariant "$dir" "${defs[@]}")
			if [ -z "$inv" ]; then
				echo "PASS $label reached (at depth $(depth_of "$reason"))" > "$result"
			else
				echo "FAIL $label: $inv: $reason ($dir)" > "$result"
			fi ;;
		*) echo "FAIL $label: pan stopped for another reason: $reason ($dir)" > "$result" ;;
		esac
		return
	fi
	if [ -z "$errors" ]; then
		echo "FAIL $label: pan gave no verdict; see $dir/pan.out" > "$result"
	elif [ "$errors" = 0 ] && [ "$truncated" = 0 ]; then
		echo "PASS $label ($stats)" > "$result"
	elif [ "$errors" = 0 ]; then
		echo "FAIL $label: search not completed ($stats); see $dir/pan.out" > "$result"
	else
		local inv=
		[ "$check" = safety ] && inv=$(violated_invariant "$dir" "${defs[@]}")
		{
			echo "FAIL $label: ${inv:+$inv: }$reason"
			echo "     trail: $dir/lazaret.pml.trail"
			echo "     replay: (cd $dir && $SPIN -t -p -g ${defs[*]} lazaret.pml)"
		} > "$result"
	fi
}

depth_of() {
	echo "$1" | sed -n 's/.*(at depth \([0-9][0-9]*\)).*/\1/p'
}

# One mutant.  Writes one result line to $2.
check_mutant() {
	local spec=$1 result=$2
	local name check config expect
	read -r name check config expect <<< "$spec"
	local dir="$work/mutant-$name-$check"
	local label="mutant $name"
	[ "$check" = liveness ] && label="mutant $name ($expect)"
	if [ -z "${CONFIG[$config]+x}" ]; then
		echo "FAIL $label: unknown config '$config' in $mutant_list" > "$result"
		return
	fi
	# shellcheck disable=SC2206
	local defs=(${CONFIG[$config]} -DMUTANT_"$name")
	local claim=-
	if [ "$check" = liveness ]; then
		defs+=(-DLIVENESS)
		claim=$expect
	fi
	if ! run_pan "$dir" "$check" "$claim" "$MUTANT_PAN_CFLAGS" "${defs[@]}"; then
		echo "FAIL $label: $reason" > "$result"
		return
	fi
	if [ -z "$errors" ]; then
		echo "FAIL $label: pan gave no verdict; see $dir/pan.out" > "$result"
		return
	fi
	if [ "$errors" = 0 ]; then
		if [ "$truncated" = 1 ]; then
			echo "FAIL $label survived: search not completed without a violation ($stats)" > "$result"
		else
			echo "FAIL $label survived: spin found no violation ($stats)" > "$result"
		fi
		return
	fi
	local got
	if [ "$check" = safety ]; then
		case "$reason" in
		"assertion violated"*) got=$(violated_invariant "$dir" "${defs[@]}") ;;
		*) got=$reason ;;
		esac
		if [ "$got" = "$expect" ]; then
			echo "PASS $label rejected ($expect violated at depth $(depth_of "$reason"))" > "$result"
		else
			echo "FAIL $label rejected for the wrong reason: expected $expect, got '${got:-$reason}' ($dir)" > "$result"
		fi
	else
		case "$reason" in
		"acceptance cycle"*)
			echo "PASS $label rejected ($expect violated: acceptance cycle at depth $(depth_of "$reason"))" > "$result" ;;
		*)
			echo "FAIL $label rejected for the wrong reason: expected an acceptance cycle of $expect, got '$reason' ($dir)" > "$result" ;;
		esac
	fi
}

# The mutant list must cover every mutation point in the model, and
# every invariant must have at least one mutant that breaks it.
check_coverage() {
	local result=$1
	local in_model in_list missing extra invs uncovered inv
	in_model=$(grep -o 'MUTANT_[a-z_][a-z_]*' "$model" | sed 's/^MUTANT_//' | sort -u)
	in_list=$(mutant_entries | awk '{ print $1 }' | sort -u)
	missing=$(comm -23 <(echo "$in_model") <(echo "$in_list") | tr '\n' ' ')
	extra=$(comm -13 <(echo "$in_model") <(echo "$in_list") | tr '\n' ' ')
	invs=$( { grep -o 'INV [A-Za-z]*' "$model" | sed 's/^INV //'
		  sed -n 's/^ltl \([a-z_]*\).*/\1/p' "$model" | grep -v '^reach_'; } | sort -u)
	uncovered=
	for inv in $invs; do
		mutant_entries | awk -v i="$inv" '$4 == i { f = 1 } END { exit !f }' || uncovered="$uncovered$inv "
	done
	if [ -z "$missing$extra$uncovered" ]; then
		echo "PASS mutant list covers $(echo "$in_model" | wc -l) mutation points and $(echo "$invs" | wc -l) invariants" > "$result"
	else
		echo "FAIL mutant list: ${missing:+not listed: ${missing% }; }${extra:+not in model: ${extra% }; }${uncovered:+no mutant for: ${uncovered% }}" > "$result"
	fi
}

mutant_entries() {
	sed -e 's/#.*//' "$mutant_list" | awk 'NF'
}

# ---- schedule --------------------------------------------------------
tasks=()
if [ "$part" = all ] || [ "$part" = safety ]; then
	for c in "${REAL_CHECKS[@]}"; do
		case "$c" in safety*|witness*) tasks+=("real|$c") ;; esac
	done
fi
if [ "$part" = all ] || [ "$part" = liveness ]; then
	for c in "${REAL_CHECKS[@]}"; do
		case "$c" in liveness*) tasks+=("real|$c") ;; esac
	done
fi
if [ "$part" = all ] || [ "$part" = mutants ]; then
	tasks+=("coverage|-")
	while IFS= read -r m; do
		tasks+=("mutant|$m")
	done < <(mutant_entries)
fi

results="$work/results"
rm -rf "$results" && mkdir -p "$results"

start=$(date +%s)
i=0
running=0
for t in "${tasks[@]}"; do
	i=$((i + 1))
	kind=${t%%|*}
	spec=${t#*|}
	out=$(printf '%s/%03d' "$results" "$i")
	case "$kind" in
	real) check_real "$spec" "$out" & ;;
	mutant) check_mutant "$spec" "$out" & ;;
	coverage) check_coverage "$out" & ;;
	esac
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

passed=0
failed=0
for f in "$results"/*; do
	[ -e "$f" ] || continue
	cat "$f"
	if head -n 1 "$f" | grep -q '^PASS'; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
expected=${#tasks[@]}
if [ $((passed + failed)) -ne "$expected" ]; then
	echo "FAIL only $((passed + failed)) of $expected checks reported"
	failed=$((failed + expected - passed - failed))
fi
echo "model checks took $(( $(date +%s) - start )) s"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
