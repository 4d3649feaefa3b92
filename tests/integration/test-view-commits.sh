#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-commits (issue 32's leftovers): what the sandbox commits is
# shared (refs and objects), and the view's protection cannot stop a
# commit made past the index. In a real sandbox (the busybox image plus
# the host's git):
#   - commits made inside that change a protected path, one through a
#     private GIT_INDEX_FILE (git add, commit-tree, update-ref on a branch
#     of its own) and one through plumbing alone (hash-object, mktree,
#     commit-tree, update-ref of the branch the host has checked out), are
#     listed by lazaretctl changes ("commit <short> on <ref> changes
#     protected <path>", --json) and counted by lazaretctl status and the
#     next launch's line, also after the Domain restarted; a commit inside
#     that changes only ordinary paths is not;
#   - a path a host hook names that is a symbolic link: its target in the
#     workspace is protected too (listed by status, a write inside lands
#     in Domain state, the host's hook runs the host's target);
#   - a hook changed mid-session: lazaretctl status shows what the running
#     view protects and "restart to protect: ..." for what the hooks name
#     now; after a restart it is protected.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image
lt_reset_view_state

marks=$HOME/lt-commits-marks    # what the sandbox's versions would make on the host
ok=$HOME/lt-commits-ok          # what the developer's own scripts make
rm -rf "$marks" "$ok"
mkdir -p "$marks" "$ok"
hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "cd /workspace && $1" </dev/null
}
igit='git -c core.hooksPath=/dev/null -c user.name=in -c user.email=in@example.invalid'
expect_inside() {
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}
status_json() { lazaretctl --workspace "$LT_WS" status --json; }
stop_domain() {
        lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || lt_fail "lazaretctl stop failed"
        lt_wait_inactive
}

# --- The host's repository ------------------------------------------------
mkdir -p "$LT_WS/.husky" "$LT_WS/tools" "$LT_WS/scripts"
printf 'touch %s/husky\n' "$ok" >"$LT_WS/.husky/pre-push"
printf '#!/bin/sh\ntouch %s/push\n' "$ok" >"$LT_WS/tools/push.sh"
chmod +x "$LT_WS/tools/push.sh"
ln -s ../tools/push.sh "$LT_WS/scripts/push.sh"
echo base >"$LT_WS/src.txt"
hgit add -A
hgit commit -q -m base
branch=$(hgit symbolic-ref --short HEAD)
printf '#!/bin/sh\n./scripts/push.sh\n' >"$LT_WS/.git/hooks/pre-push"
chmod +x "$LT_WS/.git/hooks/pre-push"
push_sha=$(sha256sum <"$LT_WS/tools/push.sh")

# --- A hook-named path that is a symbolic link: its target too --------------
out=$(lt_launch -- /bin/true 2>&1 </dev/null) || lt_fail "the launch failed: $out"
[[ $out != *"commits made since"* && $out != *"commit made since"* ]] ||
        lt_fail "the first launch reports commits: $out"
lt_assert_eq "status --json protected_hook_paths" '["scripts/push.sh","tools/push.sh"]' \
        "$(status_json | jq -c .View.protected_hook_paths)"
expect_inside "rewriting the hook's script through its link" \
        "printf '#!/bin/sh\ntouch $marks/push\n' > scripts/push.sh"
expect_inside "rewriting the link's target" "printf '#!/bin/sh\ntouch $marks/push\n' > tools/push.sh"
lt_assert_eq "the host's tools/push.sh" "$push_sha" "$(sha256sum <"$LT_WS/tools/push.sh")"
lt_assert_eq "tools/push.sh inside" 1 "$(inside 'grep -c marks tools/push.sh')"
changes=$(lazaretctl --workspace "$LT_WS" changes 2>&1) || lt_fail "lazaretctl changes failed: $changes"
[[ $changes == *tools/push.sh* ]] || lt_fail "lazaretctl changes does not list tools/push.sh: $changes"
(cd "$LT_WS" && .git/hooks/pre-push) || lt_fail "the host's pre-push hook failed"
[[ -e $ok/push ]] || lt_fail "the host's hook did not run the host's tools/push.sh"
[[ -z $(ls "$marks") ]] || lt_fail "the host's hook ran what the sandbox wrote: $(ls "$marks")"
rm -f "$ok/push"
lt_log "ok: the link's target is protected; the host's hook runs the host's version"
lazaretctl --workspace "$LT_WS" changes discard --all >/dev/null 2>&1 || true
stop_domain
lazaretctl --workspace "$LT_WS" changes discard --all >/dev/null || lt_fail "lazaretctl changes discard failed"

# --- Commits made inside --------------------------------------------------
base=$(hgit rev-parse HEAD)
# An ordinary commit inside, on a branch of its own: not reported.
expect_inside "an ordinary commit" \
        "$igit checkout -q -b plain && echo inside > src.txt && git add src.txt && $igit commit -q -m plain &&
         $igit checkout -q $branch"
plain=$(hgit rev-parse plain)
# Through a private index: git add of a protected path, commit-tree, update-ref of a branch of its own.
expect_inside "a commit of .husky/pre-push through a private index" \
        "export GIT_INDEX_FILE=/tmp/i && git read-tree HEAD && printf 'touch $marks/husky\n' > .husky/pre-push &&
         git add .husky/pre-push && c=\$($igit commit-tree \$(git write-tree) -p HEAD -m agent) &&
         git update-ref refs/heads/agent \$c"
agent=$(hgit rev-parse agent)
# Through plumbing alone, on the branch the host has checked out: a new blob, new trees, a commit.
expect_inside "a commit of tools/push.sh through plumbing" \
        "blob=\$(printf '#!/bin/sh\ntouch $marks/push\n' | git hash-object -w --stdin) &&
         sub=\$(printf '100755 blob %s\tpush.sh\n' \$blob | git mktree) &&
         top=\$({ git ls-tree HEAD | grep -v 'tools\$'; printf '040000 tree %s\ttools\n' \$sub; } | git mktree) &&
         c=\$($igit commit-tree \$top -p HEAD -m plumbing) && git update-ref refs/heads/$branch \$c"
plumbing=$(hgit rev-parse "$branch")
lt_assert_eq "the plumbing commit's parent" "$base" "$(hgit rev-parse "$plumbing~1")"
hgit show "$plumbing:tools/push.sh" | grep -q "$marks" || lt_fail "the plumbing commit does not hold the sandbox's tools/push.sh"

changes=$(lazaretctl --workspace "$LT_WS" changes 2>&1) || lt_fail "lazaretctl changes failed: $changes"
[[ $changes == *"commit ${agent:0:12} on refs/heads/agent changes protected .husky/pre-push"* ]] ||
        lt_fail "lazaretctl changes does not report the commit made through a private index: $changes"
[[ $changes == *"commit ${plumbing:0:12} on refs/heads/$branch changes protected tools/push.sh"* ]] ||
        lt_fail "lazaretctl changes does not report the commit made through plumbing: $changes"
[[ $changes == *"Review: git show "* ]] || lt_fail "lazaretctl changes does not say how to review: $changes"
[[ $changes != *"${plain:0:12}"* ]] || lt_fail "lazaretctl changes reports the ordinary commit: $changes"
lt_log "ok: lazaretctl changes says: $(grep -F 'changes protected' <<<"$changes" | tr '\n' ' ')"
json=$(lazaretctl --workspace "$LT_WS" changes --json) || lt_fail "lazaretctl changes --json failed"
lt_assert_eq "changes --json protected_commits" \
        "$(jq -nc --arg a "$agent" --arg p "$plumbing" --arg b "refs/heads/$branch" \
                '[{commit: $a, ref: "refs/heads/agent", path: ".husky/pre-push"}, {commit: $p, ref: $b, path: "tools/push.sh"}] | sort_by(.commit)')" \
        "$(jq -c '.protected_commits | sort_by(.commit)' <<<"$json")"
lt_assert_eq "changes --json commits_checked.cut" false "$(jq -r .commits_checked.cut <<<"$json")"
lt_assert_eq "status --json protected_commits" 2 "$(status_json | jq -r .View.protected_commits)"

# The next launch, after the Domain stopped, says how many; so does a later one (the count is kept
# until the developer accepts it), and lazaretctl changes still lists them.
for n in 1 2; do
        stop_domain
        out=$(lt_launch -- /bin/true 2>&1 </dev/null) || lt_fail "the launch failed: $out"
        [[ $out == *"lazaretctl: git: 2 commits made since "*" change protected paths ("*"review: lazaretctl changes"* ]] ||
                lt_fail "launch $n after the commits does not report them: $out"
done
lt_log "ok: the next launch says: $(grep -F 'change protected paths' <<<"$out")"
changes=$(lazaretctl --workspace "$LT_WS" changes 2>&1) || lt_fail "lazaretctl changes failed: $changes"
[[ $changes == *"commit ${agent:0:12} on refs/heads/agent"* ]] ||
        lt_fail "after the restarts, lazaretctl changes no longer reports the commit: $changes"

# Reviewed and accepted: counted from then on.
lazaretctl --workspace "$LT_WS" changes accept-commits >/dev/null || lt_fail "lazaretctl changes accept-commits failed"
lt_assert_eq "status --json protected_commits after accept-commits" 0 "$(status_json | jq -r .View.protected_commits)"
stop_domain
out=$(lt_launch -- /bin/true 2>&1 </dev/null) || lt_fail "the launch failed: $out"
[[ $out != *"made since"* ]] || lt_fail "a launch after accept-commits reports commits: $out"
# Put the host's branch back where the host had it.
hgit update-ref "refs/heads/$branch" "$base"

# --- A hook changed mid-session -------------------------------------------
stop_domain
lt_keeper_start
printf '#!/bin/sh\n./scripts/push.sh\n./scripts/late.sh\n' >"$LT_WS/.git/hooks/pre-push"
status=$(lazaretctl --workspace "$LT_WS" status 2>&1) || lt_fail "lazaretctl status failed: $status"
[[ $status == *"restart to protect: scripts/late.sh"* ]] ||
        lt_fail "lazaretctl status does not say what a restart would protect: $status"
lt_assert_eq "status --json protected_hook_paths while the Domain runs" '["scripts/push.sh","tools/push.sh"]' \
        "$(status_json | jq -c .View.protected_hook_paths)"
lt_assert_eq "status --json hook_paths_after_restart" '["scripts/late.sh"]' \
        "$(status_json | jq -c .View.hook_paths_after_restart)"
kill "$LT_KEEPER" 2>/dev/null || true
LT_KEEPER=
stop_domain
lt_launch -- /bin/true </dev/null >/dev/null 2>&1 || lt_fail "the launch failed"
lt_assert_eq "status --json protected_hook_paths after the restart" '["scripts/push.sh","scripts/late.sh","tools/push.sh"]' \
        "$(status_json | jq -c .View.protected_hook_paths)"
lt_assert_eq "status --json hook_paths_after_restart after the restart" '[]' \
        "$(status_json | jq -c .View.hook_paths_after_restart)"
lt_log "PASS"
