#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-ci-skip: the integration wrapper's rule (tests/harness/ci-skip.sh)
# that a skip (exit 77) is a skip outside CI and a failure naming what was
# missing under CI=true, while every other exit code and both streams pass
# through unchanged.
set -Eeuo pipefail

policy=$(realpath -e -- "$1")
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf 'echo "SKIP: frobnicator is not installed" >&2\nexit 77\n' >"$tmp/skips.sh"
printf 'exit 77\n' >"$tmp/mute.sh"
printf 'echo to-out\necho to-err >&2\nexit 3\n' >"$tmp/fails.sh"
printf 'echo to-out\nexit 0\n' >"$tmp/passes.sh"

# wrap CI SCRIPT: runs SCRIPT through ci_run as run-as-test-user does; sets
# rc, out and err.
wrap() {
        rc=0
        (set -Eeuo pipefail; export CI=$1; . "$policy"; ci_run "test-x" bash "$tmp/$2") \
                >"$tmp/out" 2>"$tmp/err" || rc=$?
        out=$(cat "$tmp/out")
        err=$(cat "$tmp/err")
}
expect() {   # WHAT WANT-RC
        ((rc == $2)) || fail "$1: exit $rc, not $2 (stdout: $out; stderr: $err)"
        echo "ok: $1: exit $rc"
}

wrap "" skips.sh
expect "a skip outside CI" 77
wrap false skips.sh
expect "a skip with CI=false" 77
wrap true skips.sh
expect "a skip under CI=true" 1
grep -qx "run-as-test-user: error: CI=true: test-x was skipped, which fails under CI: frobnicator is not installed" <<<"$err" ||
        fail "the failed skip does not name what was missing: $err"
wrap true mute.sh
expect "a skip without a reason under CI=true" 1
grep -q "CI=true: test-x was skipped, which fails under CI: the test exited 77 without saying why" <<<"$err" ||
        fail "the failed skip without a reason says: $err"

for ci in "" true; do
        wrap "$ci" fails.sh
        expect "a failure (CI='$ci')" 3
        [[ $out == to-out && $err == to-err ]] || fail "CI='$ci': the streams changed: stdout '$out', stderr '$err'"
        wrap "$ci" passes.sh
        expect "a pass (CI='$ci')" 0
        [[ $out == to-out ]] || fail "CI='$ci': stdout changed: '$out'"
done

# The wrapper's own skip (no user manager to run under).
rc=0
(export CI=true; . "$policy"; ci_skip "test-x" "no systemd user manager") 2>"$tmp/err" || rc=$?
err=$(cat "$tmp/err")
expect "the wrapper's own skip under CI=true" 1
grep -q "test-x was skipped, which fails under CI: no systemd user manager" <<<"$err" || fail "the wrapper's skip says: $err"
