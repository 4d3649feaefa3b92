# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# ci-skip.sh: the rule that a CI run cannot skip, sourced by run-as-test-user
# (and tests/cli/test-ci-skip.sh). A test skips by exiting 77 (lib.sh's
# lt_skip prints "SKIP: REASON" first); under CI=true that is a failure, with
# one line naming the test and what was missing.
#
#   ci_skip NAME REASON...    exit 77; under CI=true, say why and exit 1
#   ci_run NAME COMMAND...    run the test COMMAND and exit with its code
#                             (exec, outside CI); under CI=true its 77 goes
#                             through ci_skip with the reason of its last
#                             "SKIP: " line on stderr

ci_skip() {   # NAME REASON...
        local name=$1
        shift
        if [[ ${CI:-} == true ]]; then
                echo "run-as-test-user: error: CI=true: $name was skipped, which fails under CI: $*" >&2
                exit 1
        fi
        echo "run-as-test-user: $*" >&2
        exit 77
}

ci_run() {   # NAME COMMAND...
        local name=$1 errlog rc=0 reason
        shift
        [[ ${CI:-} == true ]] || exec "$@"
        errlog=$(mktemp)
        # stderr through tee, in a pipeline so that both are waited for; with
        # pipefail the pipeline fails with the test's code.
        { "$@" 2>&1 1>&3 3>&- | tee -- "$errlog" >&2; } 3>&1 || rc=$?
        reason=$(grep '^SKIP: ' "$errlog" | tail -n 1) || true
        rm -f -- "$errlog"
        if ((rc == 77)); then
                [[ -n $reason ]] || reason="SKIP: the test exited 77 without saying why"
                ci_skip "$name" "${reason#SKIP: }"
        fi
        exit "$rc"
}
