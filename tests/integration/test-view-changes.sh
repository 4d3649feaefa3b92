#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-changes (issue 15, items 4 and 8): the workspace view's pending
# protected changes, from a real sandbox (busybox plus the host's git) under
# the real user manager. Inside: a new .envrc, a changed tracked
# .vscode/settings.json, a deleted host .mcp.json, and a nested repository
# whose config git writes (git init sub; git -C sub config x.y 1). None of
# it reaches the host. With the Domain running, apply refuses and names
# `lazaretctl stop`; stopped, `lazaretctl changes` lists the four with their
# kinds (new, changed, deleted, git-control), `status` counts them, --diff
# shows the change; apply puts .envrc and the deletion on the host; after a
# host edit of .vscode/settings.json apply refuses and changes nothing;
# discard makes the host's version the one seen inside again; the nested
# repository's config is refused without --git-control.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image
lt_reset_view_state

hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "cd /workspace && $1" </dev/null
}
ctl() { (cd "$LT_WS" && lazaretctl "$@"); }

# The host's repository: a tracked .vscode/settings.json, a host .mcp.json.
mkdir -p "$LT_WS/.vscode"
echo '{"host": 1}' >"$LT_WS/.vscode/settings.json"
echo '{"servers": {}}' >"$LT_WS/.mcp.json"
hgit add -A
hgit commit -q -m one

lt_keeper_start
out=$(inside 'printf "export X=1\n" >.envrc && echo "{\"inside\": 1}" >.vscode/settings.json && rm .mcp.json &&
        git init -q sub && git -C sub config x.y 1 && echo done' 2>"$HOME/lt-view-changes.err") ||
        lt_fail "the writes inside failed: $out $(cat "$HOME/lt-view-changes.err")"
lt_assert_eq "the writes inside" "done" "$out"
[[ ! -e $LT_WS/.envrc ]] || lt_fail ".envrc reached the host"
lt_assert_eq "the host's .vscode/settings.json while the change is pending" '{"host": 1}' \
        "$(cat "$LT_WS/.vscode/settings.json")"
[[ -e $LT_WS/.mcp.json ]] || lt_fail "the deletion inside reached the host"
[[ ! -e $LT_WS/sub/.git/config ]] || lt_fail "the nested repository's config reached the host"

# While the Domain runs, nothing is applied.
if out=$(ctl changes apply .envrc 2>&1); then
        lt_fail "apply succeeded while the Domain runs: $out"
fi
[[ $out == *"lazaretctl stop"* ]] || lt_fail "the refusal while running does not name lazaretctl stop: $out"
[[ ! -e $LT_WS/.envrc ]] || lt_fail "apply while running wrote .envrc"

kill "$LT_KEEPER" 2>/dev/null || true
LT_KEEPER=
# The last session's end may already be stopping it: wait for the unit, whichever stops it.
systemctl --user stop "lazaret@$LT_DOMAIN.service"
lt_wait_inactive

# The listing: kinds, never contents.
json=$(ctl changes --json) || lt_fail "lazaretctl changes --json failed"
kind() { jq -r --arg p "$1" '.changes[] | select(.path == $p) | .kind' <<<"$json"; }
lt_assert_eq "kind of .envrc" new "$(kind .envrc)"
lt_assert_eq "kind of .vscode/settings.json" changed "$(kind .vscode/settings.json)"
lt_assert_eq "kind of .mcp.json" deleted "$(kind .mcp.json)"
lt_assert_eq "kind of sub/.git/config" git-control "$(kind sub/.git/config)"
lt_assert_eq "host state of .vscode/settings.json" unchanged \
        "$(jq -r '.changes[] | select(.path == ".vscode/settings.json") | .host' <<<"$json")"
text=$(ctl changes) || lt_fail "lazaretctl changes failed"
[[ $text != *inside* ]] || lt_fail "the listing shows contents: $text"
lt_log "listing: $text"
n=$(jq '.changes | length' <<<"$json")
lt_assert_eq "pending changes in status" "$n" "$(ctl status --json | jq -r .View.pending_changes)"
ctl status | grep -q "git dirs: control files protected" || lt_fail "status does not list the view's protections"
diff=$(ctl changes --diff .vscode/settings.json) || lt_fail "changes --diff failed: $diff"
[[ $diff == *'+{"inside": 1}'* && $diff == *'-{"host": 1}'* ]] || lt_fail "unexpected diff: $diff"

# Apply: .envrc and the deletion reach the host.
ctl changes apply .envrc .mcp.json >/dev/null || lt_fail "apply of .envrc and .mcp.json failed"
lt_assert_eq "the applied .envrc on the host" "export X=1" "$(cat "$LT_WS/.envrc")"
[[ ! -e $LT_WS/.mcp.json ]] || lt_fail "the applied deletion left the host's .mcp.json"

# The host edits the file meanwhile: apply refuses and changes nothing.
echo '{"host": 2}' >"$LT_WS/.vscode/settings.json"
if out=$(ctl changes apply .vscode/settings.json 2>&1); then
        lt_fail "apply over a host edit succeeded: $out"
fi
[[ $out == *"changed on the host"* ]] || lt_fail "the refusal does not say the host changed it: $out"
lt_assert_eq "the host's edit after the refused apply" '{"host": 2}' "$(cat "$LT_WS/.vscode/settings.json")"

# Discard: the host's version is the one seen inside again.
ctl changes discard .vscode/settings.json >/dev/null || lt_fail "discard failed"
lt_assert_eq "the file inside after discard" '{"host": 2}' "$(inside 'cat .vscode/settings.json')"
systemctl --user stop "lazaret@$LT_DOMAIN.service"
lt_wait_inactive

# A git dir's config is exactly what the view keeps off the host.
if out=$(ctl changes apply sub/.git/config 2>&1); then
        lt_fail "apply of sub/.git/config succeeded without --git-control: $out"
fi
[[ $out == *"--git-control"* ]] || lt_fail "the refusal does not name --git-control: $out"
[[ ! -e $LT_WS/sub/.git/config ]] || lt_fail "the refused apply wrote sub/.git/config"
if out=$(ctl changes apply --all 2>&1); then :; fi
[[ ! -e $LT_WS/sub/.git/config ]] || lt_fail "apply --all wrote sub/.git/config"

echo "PASS: pending protected changes are listed, applied only while stopped and only over the version copied, discarded on request; git control needs --git-control"
