#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-failure-messages (issue 18 item 4): failures say what failed.
#   - a workspace whose path is not UTF-8 is refused by lazaretctl in one
#     line that says so, and nothing is started;
#   - `lazaretctl list` asks every Domain at once: with two coordinators
#     stopped by SIGSTOP it ends within one bound (15 s), not one per Domain,
#     naming both as not responding and still listing the Domain that answers;
#   - image preparation on a full disk (a data_root on the harness's 512 KiB
#     tmpfs, prepare-machine) says "no space left on device" and leaves no
#     staging directory.
# (slirp4netns killed during a cold start: test-fault-matrix.)
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

# --- a workspace path that is not UTF-8 --------------------------------------------
bad=$HOME/lt-ws/$'not-utf8-\xff'
rm -rf "$bad"
mkdir -p "$bad"
git -C "$bad" init -q
data_root=$(lazaretctl config check --json --workspace "$LT_WS" | jq -r .data_root)
domains_before=$(ls "$data_root/domains" 2>/dev/null || true)
units_before=$(systemctl --user list-units --state=active,activating,failed --plain --no-legend 'lazaret@*')
set +e
out=$(cd "$bad" && lazaretctl launch -- /bin/true 2>&1 </dev/null)
rc=$?
set -e
[[ $rc -ne 0 ]] || lt_fail "a launch in a workspace whose path is not UTF-8 succeeded"
lt_log "non-UTF-8 workspace: $out"
[[ $(wc -l <<<"$out") -eq 1 ]] || lt_fail "more than one line for a non-UTF-8 workspace path: $out"
grep -q "is not valid UTF-8" <<<"$out" || lt_fail "the refusal does not say the path is not UTF-8: $out"
grep -qF 'not-utf8-\xff' <<<"$out" || lt_fail "the refusal does not show the path escaped: $out"
units=$(systemctl --user list-units --state=active,activating,failed --plain --no-legend 'lazaret@*')
[[ $units == "$units_before" ]] || lt_fail "the refused launch started a unit: $units"
[[ $(ls "$data_root/domains" 2>/dev/null) == "$domains_before" ]] ||
        lt_fail "the refused launch left a Domain directory: $(ls "$data_root/domains")"
rm -rf "$bad"
lt_log "ok: a non-UTF-8 workspace path is refused in one line"

# --- list with stuck coordinators ---------------------------------------------------
stopped=()
lt_cleanup_hook() {
        local p
        for p in "${stopped[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
        for ws in stuck-a stuck-b; do lazaretctl --workspace "$HOME/lt-ws/$ws" stop >/dev/null 2>&1 || true; done
}
keepers=()
for ws in stuck-a stuck-b; do
        rm -rf "${HOME:?}/lt-ws/$ws"
        mkdir -p "$HOME/lt-ws/$ws"
        git -C "$HOME/lt-ws/$ws" init -q
        (cd "$HOME/lt-ws/$ws" && exec lazaretctl launch -- /bin/sleep 120) </dev/null >/dev/null 2>&1 &
        keepers+=($!)
done
lt_keeper_start
for ws in stuck-a stuck-b; do
        id=$(cd "$HOME/lt-ws/$ws" && lazaretctl domain-id)
        for _ in $(seq 1 150); do
                [[ $(systemctl --user is-active "lazaret@$id.service") == active ]] && break
                sleep 0.1
        done
        main=$(systemctl --user show -P MainPID "lazaret@$id.service")
        [[ $main =~ ^[1-9][0-9]*$ ]] || lt_fail "no coordinator for $ws"
        kill -STOP "$main"
        stopped+=("$main")
        eval "id_$((${#stopped[@]}))=$id"
done
start=$SECONDS
set +e
out=$(lazaretctl list 2>"$HOME/list.err")
rc=$?
set -e
took=$((SECONDS - start))
lt_log "list took $took s (exit $rc): $(tr '\n' ' ' <"$HOME/list.err")"
((took <= 20)) || lt_fail "list took $took s with two stuck coordinators (one bound is 15 s)"
[[ $rc -eq 124 ]] || lt_fail "list exited $rc, not 124 (not responding)"
for id in "$id_1" "$id_2"; do
        grep -q "The coordinator of Domain $id is not responding" "$HOME/list.err" || lt_fail "list did not name $id as not responding"
done
grep -q "^$LT_DOMAIN " <<<"$out" || lt_fail "list did not show the Domain that answers: $out"
for p in "${stopped[@]}"; do kill -CONT "$p"; done
for k in "${keepers[@]}"; do kill "$k" 2>/dev/null || true; done
lt_log "ok: list ends within one bound with two stuck coordinators"

# --- image preparation on a full disk -------------------------------------------
small=/run/$(id -un)/small-disk
[[ -d $small ]] || lt_skip "the harness made no small disk at $small (prepare-machine on a machine whose PID 1 is not systemd)"
# The keeper's Domain has the same ID (profile and workspace): it goes first.
kill "$LT_KEEPER" 2>/dev/null || true
(cd "$LT_WS" && lazaretctl stop) >/dev/null 2>&1 || true
lt_wait_inactive
# What earlier runs left there (quarantined preparations, which hold files of
# subordinate IDs) would fill the disk before the unpack even logs.
if [[ -e $small/data ]]; then
        lazaretctl unshare -- rm -rf -- "$small/data" 2>/dev/null || rm -rf -- "$small/data" || true
fi
full_cfg=$HOME/full-disk.json
printf '{ "data_root": "%s", "default_profile": "test", "profiles": { "test": { "image": "oci:%s" } } }\n' \
        "$small/data" "$LT_IMAGE" >"$full_cfg"
chmod 0600 "$full_cfg"
set +e
out=$(cd "$LT_WS" && LAZARET_CONFIG=$full_cfg lazaretctl launch -- /bin/true 2>&1 </dev/null)
rc=$?
set -e
[[ $rc -ne 0 ]] || lt_fail "a launch whose image cannot be unpacked (disk full) succeeded"
lt_log "full disk: $out"
grep -qi "no space left on device" <<<"$out" || lt_fail "image preparation on a full disk does not say no space left: $out"
grep -q "no message" <<<"$out" && lt_fail "image preparation on a full disk says 'no message': $out"
staging=$(find "$small/data/images" -maxdepth 3 -name '.staging-*' 2>/dev/null || true)
[[ -z $staging ]] || lt_fail "a staging directory is left on the full disk: $staging"
echo "PASS: a non-UTF-8 workspace path refused in one line; list bounded with stuck coordinators; a full disk named"
