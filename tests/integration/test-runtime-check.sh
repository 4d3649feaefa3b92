#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-runtime-check: the runtime is checked by what it does, not by its
# version string. The runsc Debian 12 ships (0.0~20221219, unpacked by the
# harness, never installed) is named in the configuration's runtime.runsc:
# the launch is refused with one line that names the missing capability and
# the fix, on the client and in `systemctl --user status`. The same
# configuration naming the supported runsc launches; and sessions use the
# systrap platform with a file-backed root overlay in the Domain's own
# directory.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

old=/var/cache/lazaret-test/old-runsc/usr/bin/runsc
[[ -x $old ]] || lt_fail "$old is missing (tests/harness/fetch-old-runsc unpacks it as root)"
new=$(command -v runsc)
new=$(realpath "$new")

use_runsc() {
        printf '{ "default_profile": "test", "runtime": { "runsc": "%s" }, "profiles": { "test": { "image": "oci:%s" } } }\n' \
                "$1" "$LT_IMAGE" >"$LT_CONFIG"
}

use_runsc "$old"
set +e
out=$(lt_launch -- /bin/echo should-not-run 2>&1 </dev/null)
rc=$?
set -e
[[ $rc -ne 0 ]] || lt_fail "a launch with runsc 0.0~20221219 succeeded: $out"
grep -q 'should-not-run' <<<"$out" && lt_fail "the command ran under the old runsc"
grep -q "0.0~20240729 or newer" <<<"$out" || lt_fail "the refusal does not name the fix: $out"
grep -Eq "does not support --|abstract control socket" <<<"$out" ||
        lt_fail "the refusal does not name the missing capability: $out"
reason=$(grep -o "$old[^\"]*newer[^\"]*" <<<"$out" | head -n1)
[[ -n $reason ]] || lt_fail "the refusal does not name the binary: $out"
lt_log "refused: $reason"
lt_wait_inactive
status=$(systemctl --user status "lazaret@$LT_DOMAIN.service" --no-pager 2>&1 || true)
grep -q "0.0~20240729 or newer" <<<"$status" || { echo "$status" >&2; lt_fail "systemctl --user status does not show the reason"; }
lt_log "ok: systemctl --user status shows the reason"

use_runsc "$new"
lt_assert_eq "the supported runsc, named in runtime.runsc, runs the command" ok "$(lt_launch -- /bin/echo ok </dev/null)"

# While a session runs: the platform and the root overlay's store.
(cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 20 </dev/null >/dev/null 2>&1) &
bg=$!
for _ in $(seq 1 100); do
        state=$(cd "$LT_WS" && lazaretctl status --json 2>/dev/null | jq -r .State) || true
        [[ $state == running ]] && break
        sleep 0.1
done
cmdline=$(for p in $(pgrep -u "$(id -u)" -f 'runsc-sandbox' || true); do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)
grep -q -- "--platform=systrap" <<<"$cmdline" || lt_fail "the sandbox does not run on systrap: $cmdline"
data_root=$(lazaretctl config check --json --workspace "$LT_WS" | jq -r .data_root)
grep -q -- "--overlay2=root:dir=$data_root/domains/$LT_DOMAIN/overlay" <<<"$cmdline" ||
        lt_fail "the root overlay is not file-backed in the Domain's directory: $cmdline"
lt_log "ok: systrap, root overlay in $data_root/domains/$LT_DOMAIN/overlay"
(cd "$LT_WS" && lazaretctl stop) >/dev/null
wait "$bg" || true
lt_wait_inactive
[[ -z $(ls -A "$data_root/domains/$LT_DOMAIN/overlay" 2>/dev/null) ]] || lt_fail "the overlay store outlived its Domain"

echo "PASS: an old runsc is refused by behaviour with one line; the supported one runs on systrap with a disk-backed overlay"
