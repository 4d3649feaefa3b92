#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-mount-race: a mount source cannot change between Lazaret's check and
# runsc's open (spec C19). One Domain's workspace contains another's (a
# nested repository opened as a workspace of its own). The outer sandbox
# keeps swapping the inner directory for a symbolic link to another of the
# user's repositories, as fast as it can, while the inner Domain is started
# cold again and again. Each start may be refused (the check or the
# supervisor's staging saw the swap) or see the inner repository; the
# other repository must never be visible inside. Also: lazaretctl status
# --json shows the mount plan, and runsc is given staged sources only.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

OUTER=$LT_WS
INNER=$OUTER/inner
OTHER=$HOME/lt-ws/mount-race-other
rm -rf "$OTHER"
mkdir -p "$INNER" "$OTHER"
git -C "$INNER" init -q
git -C "$OTHER" init -q
echo inner >"$INNER/marker-inner"
echo other >"$OTHER/marker-other"

lt_cleanup_hook() {
        [[ -z ${SWAPPER:-} ]] || kill "$SWAPPER" 2>/dev/null || true
        lazaretctl --workspace "$INNER" stop >/dev/null 2>&1 || true
        # Whatever state the swap loop was stopped in, the inner repository comes back.
        if [[ -L $INNER || ! -e $INNER ]]; then
                rm -f "$INNER"
                mv "$OUTER/.inner-real" "$INNER" 2>/dev/null || true
        fi
}

# --- the plan, as lazaretctl status shows it and as runsc is given it ---------
lt_keeper_start
plan=$(cd "$OUTER" && lazaretctl status --json | jq -c '[.MountPlan.entries[] | select(.kind != "sandbox") | [.part, .destination]]')
lt_assert_eq "the mount plan's parts in order" \
        '[["root","/"],["workspace-view","/workspace"],["control","/run/lazaret"],["mailbox","/run/lazaret/mailbox/requests"],["mailbox","/run/lazaret/mailbox/results"],["mailbox","/run/lazaret/mailbox/trust"],["mailbox","/usr/local/bin/lazaret-escalate"],["resolver","/etc/resolv.conf"],["resolver","/etc/hosts"],["resolver","/etc/hostname"]]' \
        "$plan"
bundle=$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN/bundle
stage=$bundle/stage
unstaged=$(jq -r --arg s "$stage/" '(.root.path, (.mounts[] | select(.type == "bind") | .source)) | select(startswith($s) | not)' \
        "$bundle/config.json")
[[ -z $unstaged ]] || lt_fail "runsc was given mount sources that are not staged: $unstaged"
[[ -z $(ls -A "$stage") ]] || lt_fail "the staging directory is visible outside the supervisor's mount namespace"
lt_log "ok: status shows the plan; runsc sees staged sources only, and nobody outside sees them"

# --- the race ------------------------------------------------------------------
# The outer sandbox's swap loop: the inner repository moved aside, a symlink
# to the other repository in its place, and back, each state held for 0 to
# 300 ms, so that some starts begin with the real directory and see it
# swapped half-way (a start takes a few hundred milliseconds).
(cd "$OUTER" && exec lazaretctl launch -- /bin/sh -c "
        cd /workspace
        while :; do
                mv inner .inner-real && ln -s '$OTHER' inner
                sleep 0.\$((RANDOM % 3))
                rm -f inner && mv .inner-real inner
                sleep 0.\$((RANDOM % 4))
        done") >/dev/null 2>&1 </dev/null &
SWAPPER=$!
for _ in $(seq 1 100); do
        [[ -L $INNER || -e $OUTER/.inner-real ]] && break
        sleep 0.05
done
[[ -L $INNER || -e $OUTER/.inner-real ]] || lt_fail "the outer sandbox's swap loop did not start"

attempts=${LAZARET_TEST_RACE_ATTEMPTS:-25}
seen_inner=0 refused=0
for i in $(seq 1 "$attempts"); do
        sleep 0.$((RANDOM % 3))
        out=$(lazaretctl --workspace "$INNER" launch -- /bin/ls -a /workspace 2>&1 </dev/null) && rc=0 || rc=$?
        if grep -q marker-other <<<"$out"; then
                lt_fail "attempt $i: the inner sandbox got the other repository: $out"
        fi
        if ((rc == 0)) && grep -q marker-inner <<<"$out"; then
                seen_inner=$((seen_inner + 1))
        else
                refused=$((refused + 1))
                lt_log "attempt $i refused: $(head -n 1 <<<"$out")"
        fi
        lazaretctl --workspace "$INNER" stop >/dev/null 2>&1 || true
done
lt_log "ok: $attempts cold starts during the swap: $seen_inner saw the inner repository, $refused refused, none saw the other"

# --- a mount that would hide another is refused at launch, by name ---------------
# The swap loop ends with the outer Domain (its client's end alone closes the
# session asynchronously), then the inner repository is put back.
kill "$SWAPPER" 2>/dev/null || true
wait "$SWAPPER" 2>/dev/null || true
SWAPPER=
kill "$LT_KEEPER" 2>/dev/null || true
LT_KEEPER=
lazaretctl --workspace "$OUTER" stop >/dev/null 2>&1 || true
lt_wait_inactive
lt_cleanup_hook
[[ -d $INNER && ! -L $INNER && -e $INNER/marker-inner ]] || lt_fail "the inner repository was not put back after the swap loop"
mkdir -p "$HOME/lt-vol-run"
cp "$LT_CONFIG" "$HOME/lt-config.saved"
jq -c --arg h "$HOME/lt-vol-run" '.profiles.test.volumes = [{ "host": $h, "container": "/run" }]' \
        "$HOME/lt-config.saved" >"$LT_CONFIG"
out=$(lazaretctl --workspace "$INNER" launch -- /bin/true 2>&1 </dev/null) && lt_fail "a volume at /run, over /run/lazaret, was mounted: $out"
grep -q "mount plan: volume at /run would hide the control mount at /run/lazaret below it" <<<"$out" ||
        lt_fail "the refusal does not say which mounts collide: $out"
cp "$HOME/lt-config.saved" "$LT_CONFIG"
lt_log "ok: a volume at /run is refused: it would hide /run/lazaret"
