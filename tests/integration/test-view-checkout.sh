#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-checkout (issue 31 item 2): Domain state belongs to its checkout.
# First, an older Lazaret's view/ in the Domain Root, begun after the clone,
# is adopted (seen inside, no line).
# Inside a clone: a protected file changed (.vscode/settings.json) and an
# ignored node_modules/x written. A plain restart keeps both and says
# nothing. Then the repository is deleted on the host and cloned again at
# the same path: `lazaretctl changes` shows nothing pending; the launch
# says once that the earlier checkout's state was set aside; inside, the
# protected file is the host's, node_modules/x is gone and `git checkout`
# of another branch works; `lazaretctl state list` shows the set-aside
# checkout (and an older Lazaret's ignored/, begun before the re-clone, set
# aside with it) and `state gc` removes both; the next launch says nothing.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image

ORIGIN=$HOME/lt-ws/test-view-checkout-origin
NOTICE="earlier state of another checkout at this path was set aside"
err=$HOME/lt-view-checkout.err

ogit() { git -C "$ORIGIN" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {      # inside SCRIPT: its output; the launch's standard error in $err
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "cd /workspace && $1" </dev/null 2>"$err"
}
ctl() { (cd "$LT_WS" && lazaretctl "$@"); }
stop() {
        ctl stop >/dev/null 2>&1 || true
        lt_wait_inactive
}
notices() { grep -c "$NOTICE" "$err" || true; }
checkouts() { ctl state list --json | jq -c --arg id "$LT_DOMAIN" '[.[] | select(.domain_id == $id) | .checkouts[] | .current]'; }

# The repository the test clones from: a tracked .vscode/settings.json, node_modules/ ignored, a second branch.
rm -rf "$ORIGIN"
git init -q -b main "$ORIGIN"
mkdir -p "$ORIGIN/.vscode"
echo '{"host": 1}' >"$ORIGIN/.vscode/settings.json"
echo 'node_modules/' >"$ORIGIN/.gitignore"
ogit add -A
ogit commit -q -m one
ogit checkout -q -b other
echo other >"$ORIGIN/other.txt"
ogit add other.txt
ogit commit -q -m other
ogit checkout -q main
# A clone with a local branch "other" too (a checkout inside that made it would write .git/config, read-only inside).
clone() {
        rm -rf "$LT_WS"
        git clone -q "$ORIGIN" "$LT_WS" || lt_fail "cannot clone $ORIGIN"
        git -C "$LT_WS" branch -q --no-track other origin/other || lt_fail "cannot make the branch other in the clone"
}
clone

# 0. State of a Lazaret without checkout keys (view/ in the Domain Root), begun after this clone was made: adopted.
ddir=$(ctl config check --json | jq -r .data_root)/domains/$LT_DOMAIN
out=$(inside 'echo started') || lt_fail "the first launch failed: $out $(cat "$err")"
stop
rm -rf "$ddir/checkouts"
mkdir -p "$ddir/view/.vscode"
echo '{"legacy": 1}' >"$ddir/view/.vscode/settings.json"
out=$(inside 'cat .vscode/settings.json') || lt_fail "the launch with legacy state failed: $out $(cat "$err")"
lt_assert_eq "legacy state begun after the clone, inside" '{"legacy": 1}' "$out"
lt_assert_eq "set-aside lines when legacy state is adopted" 0 "$(notices)"
[[ ! -e $ddir/view ]] || lt_fail "the legacy view/ was left in the Domain Root"
stop

# 1. The first checkout's state.
out=$(inside 'echo "{\"inside\": 1}" >.vscode/settings.json && mkdir -p node_modules && echo x >node_modules/x && echo done') ||
        lt_fail "the writes inside failed: $out $(cat "$err")"
lt_assert_eq "the writes inside" done "$out"
lt_assert_eq "set-aside lines of the first launch" 0 "$(notices)"
lt_assert_eq "the host's .vscode/settings.json" '{"host": 1}' "$(cat "$LT_WS/.vscode/settings.json")"
[[ ! -e $LT_WS/node_modules ]] || lt_fail "node_modules/ reached the host"
stop

# 2. A plain restart of the same checkout keeps its state and says nothing.
out=$(inside 'cat .vscode/settings.json node_modules/x') || lt_fail "the restart's reads failed: $out $(cat "$err")"
lt_assert_eq "the state after a restart" $'{"inside": 1}\nx' "$out"
lt_assert_eq "set-aside lines of a restart" 0 "$(notices)"
stop
lt_assert_eq "the pending change of the first checkout" changed \
        "$(ctl changes --json | jq -r '.changes[] | select(.path == ".vscode/settings.json") | .kind')"
lt_assert_eq "checkouts after a restart" '[true]' "$(checkouts)"

# 3. Deleted and cloned again at the same path (a moment later: file systems stamp times by the tick).
ino_before=$(stat -c %i "$LT_WS/.git")
# Legacy state older than the clone to come (an older Lazaret's ignored/): set aside at its launch, in the same line.
mkdir -p "$ddir/ignored/e/old"
sleep 0.1
clone
lt_log "git dir inode before $ino_before, after $(stat -c %i "$LT_WS/.git")"
lt_assert_eq "pending changes of the new clone" 0 "$(ctl changes --json | jq '.changes | length')"
out=$(inside 'cat .vscode/settings.json; [ -e node_modules/x ] && echo node_modules/x is there;
        git checkout -q other 2>&1 && cat other.txt') || lt_fail "inside the new clone: $out $(cat "$err")"
lt_assert_eq "inside the new clone" $'{"host": 1}\nother' "$out"
lt_assert_eq "set-aside lines of the first launch of the new clone" 1 "$(notices)"
lt_log "the launch said: $(grep "$NOTICE" "$err")"
grep -q "lazaretctl state list" "$err" && grep -q "lazaretctl state gc" "$err" ||
        lt_fail "the set-aside line does not say how to see and remove it: $(cat "$err")"
lt_assert_eq "the host's branch after the checkout inside" other "$(git -C "$LT_WS" branch --show-current)"
stop

# 4. state list shows the set-aside checkout; the next launch says nothing.
lt_assert_eq "checkouts after the re-clone" '[false,false,true]' "$(checkouts | jq -c 'sort')"
[[ ! -e $ddir/ignored ]] || lt_fail "the legacy ignored/ was left in the Domain Root"
ls -d "$ddir"/checkouts/legacy-*/ignored/e/old >/dev/null || lt_fail "the legacy ignored/ was not set aside"
text=$(ctl state list) || lt_fail "state list failed: $text"
[[ $text == *"(set aside)"* && $text == *"(current)"* ]] || lt_fail "state list does not show both checkouts: $text"
lt_log "state list: $text"
lt_assert_eq "status: the checkout in use" \
        "$(ctl state list --json | jq -r --arg id "$LT_DOMAIN" '.[] | select(.domain_id == $id) | .checkouts[] | select(.current) | .key')" \
        "$(ctl status --json | jq -r .View.checkout)"
lt_assert_eq "status: set-aside checkouts" 2 "$(ctl status --json | jq -r .View.set_aside_checkouts)"
out=$(inside 'cat other.txt') || lt_fail "the second launch of the new clone failed: $out $(cat "$err")"
lt_assert_eq "set-aside lines of the second launch of the new clone" 0 "$(notices)"
stop

# 5. state gc removes the set-aside checkout's state, and only that.
out=$(ctl state gc --yes 2>&1) || lt_fail "state gc failed: $out"
# (gc is the user's: other Domains' set-aside checkouts, of earlier tests, go too.)
[[ $out =~ "Removed the state of "[0-9]+" set-aside checkouts." ]] || lt_fail "state gc did not remove the checkouts: $out"
lt_assert_eq "this Domain's checkouts removed by gc" 2 "$(grep -c "^Removed: Domain $LT_DOMAIN, checkout " <<<"$out")"
lt_assert_eq "checkouts after gc" '[true]' "$(checkouts)"
lt_assert_eq "status: set-aside checkouts after gc" 0 "$(ctl status --json | jq -r .View.set_aside_checkouts)"
out=$(ctl state gc --yes 2>&1) || lt_fail "a second state gc failed: $out"
[[ $out == *"No set-aside checkout state to remove."* ]] || lt_fail "a second state gc: $out"
