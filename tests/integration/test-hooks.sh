#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-hooks: the test substitutions exist only in a build configured with
# -Dtest_hooks=true (issue 14, item 7).
#   - A test build obeys each of them, set in the user manager's environment:
#     LAZARET_SUPERVISOR runs another program as the supervisor, LAZARET_INIT
#     installs another file as the sandbox's init, LAZARET_TEST_NETWORK_FAULT
#     outside its two values is refused by name, LAZARET_TEST_MAILBOX_NAMES
#     that is no number of names likewise, LAZARET_TEST_TEARDOWN_DELAY that
#     is no number of milliseconds is named in the log. This half shows that the
#     variables do reach the coordinator, so that the next half cannot pass
#     only because they never did.
#   - The README's build (no option): none of the names is in an installed
#     executable, and with all of them set (the fault to deny-on-lo, which a
#     test build turns into a refused attestation, the mailbox to one name,
#     which refuses every session there, the teardown delay to 1 ms, which a
#     test build logs as a test fault) a launch is a normal, attested one,
#     runs no substitute and stops without a test fault.
set -Eeuo pipefail
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

hooks=(LAZARET_SUPERVISOR LAZARET_INIT LAZARET_TEST_NETWORK_FAULT LAZARET_TEST_MAILBOX_NAMES LAZARET_TEST_TEARDOWN_DELAY)
lt_cleanup_hook() { systemctl --user unset-environment "${hooks[@]}" || true; }

# launch_with NAME=VALUE...: one launch of /bin/echo published with these in
# the coordinator's environment; sets out and rc, leaves the Domain inactive.
launch_with() {
        systemctl --user set-environment "$@"
        set +e
        out=$(lt_launch -- /bin/echo published 2>&1)
        rc=$?
        set -e
        systemctl --user unset-environment "${hooks[@]}"
        lt_wait_inactive
}

# --- a test build: each hook takes effect ---------------------------------------
lt_install --test-hooks
lt_domain_setup
marker=$HOME/hook-supervisor.ran
substitute=$HOME/hook-supervisor
printf '#!/bin/sh\necho "$@" >%s\nexit 3\n' "$marker" >"$substitute"
chmod 0755 "$substitute"
rm -f "$marker"

launch_with LAZARET_SUPERVISOR="$substitute"
((rc != 0)) || lt_fail "test build: the launch succeeded with LAZARET_SUPERVISOR=$substitute: $out"
grep -q -- "--control-fd=3" "$marker" 2>/dev/null ||
        lt_fail "test build: LAZARET_SUPERVISOR was not run as the supervisor: $out"
lt_log "ok: test build: LAZARET_SUPERVISOR ran instead of the supervisor: $(grep -m1 . <<<"$out")"

launch_with LAZARET_INIT="$HOME/no-such-init"
((rc != 0)) || lt_fail "test build: the launch succeeded with LAZARET_INIT naming no file: $out"
grep -q "cannot install .* into the sandbox" <<<"$out" ||
        lt_fail "test build: LAZARET_INIT naming no file failed for another reason: $out"
lt_log "ok: test build: LAZARET_INIT was read: $(grep -m1 'cannot install' <<<"$out")"

launch_with LAZARET_TEST_NETWORK_FAULT=no-such-fault
((rc != 0)) || lt_fail "test build: the launch succeeded with an unknown network fault: $out"
grep -q "LAZARET_TEST_NETWORK_FAULT is set to something other than" <<<"$out" ||
        lt_fail "test build: an unknown network fault failed for another reason: $out"
lt_log "ok: test build: LAZARET_TEST_NETWORK_FAULT was read"

launch_with LAZARET_TEST_MAILBOX_NAMES=many
((rc != 0)) || lt_fail "test build: the launch succeeded with a mailbox of 'many' names: $out"
grep -q "LAZARET_TEST_MAILBOX_NAMES is not a number of names" <<<"$out" ||
        lt_fail "test build: a mailbox of 'many' names failed for another reason: $out"
lt_log "ok: test build: LAZARET_TEST_MAILBOX_NAMES was read"

seen=$(wc -l <"$LT_LOGDIR/$LT_DOMAIN.log" 2>/dev/null || echo 0)
launch_with LAZARET_TEST_TEARDOWN_DELAY=soon
((rc == 0)) || lt_fail "test build: a launch with a teardown delay of 'soon' failed: $out"
tail -n "+$((seen + 1))" "$LT_LOGDIR/$LT_DOMAIN.log" |
        grep -q "LAZARET_TEST_TEARDOWN_DELAY is not a number of milliseconds" ||
        lt_fail "test build: a teardown delay of 'soon' was not named in the log"
lt_log "ok: test build: LAZARET_TEST_TEARDOWN_DELAY was read"

# --- the README's build: nothing of them is left ----------------------------------
lt_install
option=$(meson introspect --buildoptions "$LT_BUILDDIR" | jq -r '.[] | select(.name == "test_hooks") | .value')
lt_assert_eq "test_hooks of the installed build" false "$option"

n=0
while IFS= read -r f; do
        [[ -f $f && -x $f ]] || continue
        n=$((n + 1))
        for name in "${hooks[@]}" --test-fault; do
                if grep -qaF -- "$name" "$f"; then
                        lt_fail "$f, built without test hooks, contains '$name'"
                fi
        done
done < <(meson introspect --installed "$LT_BUILDDIR" | jq -r '.[]')
((n >= 4)) || lt_fail "only $n installed executables found (lazaretctl, coordinator, supervisor, init at least)"
lt_log "ok: no hook names in the $n installed executables"

rm -f "$marker"
log=$LT_LOGDIR/$LT_DOMAIN.log
seen=$(wc -l <"$log" 2>/dev/null || echo 0)
systemctl --user set-environment LAZARET_SUPERVISOR="$substitute" LAZARET_INIT="$HOME/no-such-init" \
        LAZARET_TEST_NETWORK_FAULT=deny-on-lo LAZARET_TEST_MAILBOX_NAMES=1 LAZARET_TEST_TEARDOWN_DELAY=1
lt_keeper_start
json=$(cd "$LT_WS" && lazaretctl status --json)
[[ $(jq -r .NetworkReadiness.Fingerprint <<<"$json") =~ ^[0-9a-f]{64}$ ]] ||
        lt_fail "the Domain started with the hooks set is not attested: $json"
out=$(lt_launch -- /bin/echo published) || lt_fail "a launch with the hooks set failed: $out"
lt_assert_eq "output of a launch with the hooks set" published "$out"
[[ ! -e $marker ]] || lt_fail "LAZARET_SUPERVISOR was run by a build without test hooks"
# The teardown too (a test build says "Test fault in effect" of its delay).
(cd "$LT_WS" && lazaretctl stop) >/dev/null || lt_fail "lazaretctl stop failed"
if tail -n "+$((seen + 1))" "$log" | grep -q "Test fault"; then
        lt_fail "a build without test hooks put a test fault in effect"
fi
lt_log "ok: without test hooks, LAZARET_SUPERVISOR, LAZARET_INIT, LAZARET_TEST_NETWORK_FAULT, LAZARET_TEST_MAILBOX_NAMES and LAZARET_TEST_TEARDOWN_DELAY change nothing"
