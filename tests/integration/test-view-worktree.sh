#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-worktree (issue 15 item 3): a linked worktree's checkout and a
# submodule's working tree as workspaces. In a real sandbox (the busybox
# image plus the host's git):
#   worktree: a commit inside lands on the host (git -C MAIN log); `git
#     worktree prune` inside keeps the other worktree registered and this
#     one too; core.fsmonitor planted through the worktree's
#     config.worktree, the common dir's config, its hooks and the
#     registration's commondir runs nothing on the host's git status; a
#     core.hooksPath that reaches the common dir through a host symlink is
#     protected there (a hook written inside runs on no host commit);
#   submodule: a commit inside lands on the host; its git dir's config is
#     read-only and its hooks never reach the host;
#   lazaretctl changes lists the git dir view's pending changes by host
#     path, applies git control only when named with --git-control and
#     never over a host file that changed meanwhile, discards them;
#   refused at launch, with one line: a worktree whose registration names
#     another checkout;
#   refused at launch, with one line naming the path and what to do: an
#     image that holds a file at a linked workspace's host path;
#   the main checkout: `git worktree prune` inside keeps the registrations;
#   git worktree add inside (in /workspace, and outside it from a linked
#     workspace): the branch, its commits (and checkout files in /workspace)
#     on the host at once; the registration's gitdir, commondir,
#     config.worktree and the checkout's .git file kept in Domain state; the
#     host's git status and git worktree list work, list no new worktree,
#     and run nothing planted.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image

marks=$HOME/lt-wt-marks
main=$HOME/lt-wt-main
other=$HOME/lt-wt-other
origin=$HOME/lt-wt-origin
super=$HOME/lt-wt-super
rm -rf "$marks" "$main" "$other" "$origin" "$super"
mkdir -p "$marks"
mark() { printf '%s/%s' "$marks" "$1"; }
no_marks() {
        local left
        left=$(ls "$marks")
        [[ -z $left ]] || lt_fail "$1: the host ran code written inside: $left"
}
hg() { git -c user.name=host -c user.email=host@example.invalid -c protocol.file.allow=always "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root GIT_AUTHOR_NAME=in GIT_AUTHOR_EMAIL=in@example.invalid \
                GIT_COMMITTER_NAME=in GIT_COMMITTER_EMAIL=in@example.invalid /bin/sh -c "cd /workspace && $1" </dev/null
}
expect_inside() {       # expect_inside WHAT COMMAND: must succeed
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}
refused_inside() {      # refused_inside WHAT COMMAND: must fail with EROFS
        local out
        if out=$(inside "$2" 2>&1); then
                lt_fail "$1 succeeded inside: $out"
        fi
        [[ $out == *"Read-only file system"* ]] || lt_fail "$1: '$out', want Read-only file system"
        lt_log "ok: $1 refused inside (EROFS)"
}
reset_states() {        # the view's and the git dir view's Domain state of an earlier run
        local id root
        id=$(cd "$LT_WS" && lazaretctl domain-id) || lt_fail "lazaretctl domain-id failed"
        root=$(cd "$LT_WS" && lazaretctl config check --json | jq -r .data_root) || lt_fail "lazaretctl config check failed"
        rm -rf "$root/domains/$id/view" "$root/domains/$id/view-git" "$root/domains/$id/checkouts"
}

# ---------------------------------------------------------------- a linked worktree
# MAIN with two linked worktrees: the workspace ($LT_WS) and OTHER.
hg init -q -b main "$main"
hg -C "$main" commit -q --allow-empty -m base
hg -C "$main" config gc.auto 0
hg -C "$main" config extensions.worktreeConfig true
rm -rf "$LT_WS"
hg -C "$main" worktree add -q -b wt "$LT_WS"
hg -C "$main" worktree add -q -b other "$other"
name=$(basename -- "$LT_WS")
reset_states
[[ -f $LT_WS/.git ]] || lt_fail "the workspace's .git is not a gitfile"

expect_inside "a commit in the worktree" "git status --short && echo in > in.txt && git add in.txt && git commit -q -m in-wt"
lt_assert_eq "the worktree's commit on the host" in-wt "$(git -C "$main" log -1 --format=%s wt)"
lt_assert_eq "the host worktree's status after it" "" "$(git -C "$LT_WS" status --porcelain)"
expect_inside "git worktree prune" "git worktree prune && git worktree list"
for f in HEAD gitdir commondir index; do
        [[ -f $main/.git/worktrees/lt-wt-other/$f ]] ||
                lt_fail "git worktree prune inside removed the other worktree's registration ($f)"
done
[[ -f $main/.git/worktrees/$name/HEAD && -f $main/.git/worktrees/$name/gitdir ]] ||
        lt_fail "git worktree prune inside removed the workspace's own registration"
git -C "$main" worktree list | grep -q "$other" || lt_fail "the host no longer lists the other worktree"
lt_log "ok: prune inside kept both registrations"
status=$(lazaretctl --workspace "$LT_WS" status 2>&1) || lt_fail "lazaretctl status failed: $status"
[[ $status == *"git dir view: $main/.git"* && $status == *"git dir view protects: worktrees/lt-wt-other"* ]] ||
        lt_fail "lazaretctl status does not show the git dir view: $status"
expect_inside "git gc" "git gc -q --prune=now"
git -C "$other" status >/dev/null 2>&1 || lt_fail "the other worktree is broken after git gc inside"

# Plants, each through a file git reads on the host.
gd=$main/.git/worktrees/$name
cfg_before=$(sha256sum <"$main/.git/config")
refused_inside "writing the common dir's config" "git config core.fsmonitor 'touch $(mark common-config)'"
refused_inside "writing the common dir's commondir" "echo ../x > $main/.git/commondir"
expect_inside "config.worktree written" \
        "printf '[core]\n\tfsmonitor = touch $(mark config-worktree)\n' > $gd/config.worktree"
expect_inside "a hook written in the common dir" \
        "printf '#!/bin/sh\ntouch $(mark hook)\n' > $main/.git/hooks/post-commit && chmod 755 $main/.git/hooks/post-commit"
lt_assert_eq "the common dir's config" "$cfg_before" "$(sha256sum <"$main/.git/config")"
[[ ! -e $gd/config.worktree ]] || lt_fail "config.worktree written inside reached the host"
[[ ! -e $main/.git/hooks/post-commit ]] || lt_fail "a hook written inside reached the host"
git -C "$LT_WS" status >/dev/null 2>&1 || true
hg -C "$LT_WS" commit -q --allow-empty -m host-commit || true
git -C "$main" status >/dev/null 2>&1 || true
no_marks "worktree config, hooks"

# A core.hooksPath that reaches the common dir through a host symbolic link
# is protected there: a hook written inside never reaches the host, whose
# next commit runs nothing planted.
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
ln -sfn "$main/.git" "$HOME/lt-wt-link"
mkdir -p "$main/.git/lt-hooks"
hg -C "$main" config core.hooksPath "$HOME/lt-wt-link/lt-hooks"
expect_inside "a hook written in a core.hooksPath reached through a host symlink" \
        "printf '#!/bin/sh\ntouch $(mark linked-hooks-path)\n' > $main/.git/lt-hooks/post-commit &&
         chmod 755 $main/.git/lt-hooks/post-commit"
[[ ! -e $main/.git/lt-hooks/post-commit ]] || lt_fail "a hook written inside reached the host through the symlinked core.hooksPath"
hg -C "$LT_WS" commit -q --allow-empty -m host-commit-2 || lt_fail "a host commit in the worktree failed"
hg -C "$main" commit -q --allow-empty -m host-commit-3 || lt_fail "a host commit in the main checkout failed"
no_marks "a core.hooksPath through a host symlink into the common dir"
status=$(lazaretctl --workspace "$LT_WS" status 2>&1) || lt_fail "lazaretctl status failed: $status"
[[ $status == *"git dir view protects: lt-hooks"* ]] || lt_fail "lazaretctl status does not list lt-hooks: $status"
hg -C "$main" config --unset core.hooksPath
lt_log "ok: a core.hooksPath reached through a host symlink into the common dir is protected"

# git worktree add inside a linked workspace, outside /workspace: the branch
# and its commits are on the host at once; the new registration's
# redirections stay in the git dir view's state, so the host's worktree
# list does not show it and host git runs nothing planted there.
expect_inside "git worktree add ../wt2 and a commit in it" \
        "git worktree add -q -b feat2 ../wt2 && cd ../wt2 && echo f > f.txt && git add f.txt && git commit -q -m in-feat2 &&
         printf '[core]\n\tfsmonitor = touch $(mark wt2-config)\n' > $main/.git/worktrees/wt2/config.worktree &&
         git worktree list | grep -q /wt2"
lt_assert_eq "the new worktree's commit on the host" in-feat2 "$(git -C "$main" log -1 --format=%s feat2)"
[[ -f $main/.git/worktrees/wt2/HEAD ]] || lt_fail "the new registration's HEAD is not on the host"
for f in gitdir commondir config.worktree; do
        [[ ! -e $main/.git/worktrees/wt2/$f ]] || lt_fail "the new registration's $f reached the host"
done
git -C "$main" worktree list >"$HOME/lt-wt-list" || lt_fail "the host's git worktree list fails after a worktree add inside"
! grep -q wt2 "$HOME/lt-wt-list" || lt_fail "the host lists the worktree added inside: $(cat "$HOME/lt-wt-list")"
git -C "$main" status >/dev/null || lt_fail "the host's git status fails after a worktree add inside"
git -C "$LT_WS" status >/dev/null || lt_fail "the host worktree's git status fails after a worktree add inside"
no_marks "git worktree add ../wt2 inside"
lt_log "ok: git worktree add inside a linked workspace: branch and commit on the host, its registration kept inside"
# Last: the registration's commondir, which breaks git inside for the rest of this Domain.
# (The fake common dir gets an empty objects/: an object's file is put in place only by git's
# rename onto its name, which the view checks.)
expect_inside "the registration's commondir written" \
        "mkdir -p /workspace/.x/objects && cp -r $main/.git/refs $main/.git/HEAD /workspace/.x/ &&
         printf '[core]\n\tfsmonitor = touch $(mark commondir)\n' > /workspace/.x/config && echo /workspace/.x > $gd/commondir"
lt_assert_eq "the registration's commondir on the host" "../.." "$(cat "$gd/commondir")"
git -C "$LT_WS" status >/dev/null 2>&1 || true
no_marks "the registration's commondir"
lt_log "ok: nothing planted through the worktree's git files runs on the host"

# lazaretctl changes covers the git dir view's state, by host path, with the
# workspace's rules: git control is applied only when named with
# --git-control, never over a host file that changed meanwhile.
printf '#!/bin/sh\n# host\n' >"$main/.git/hooks/pre-rebase"
expect_inside "a harmless hook written in the common dir, the host's pre-rebase changed" \
        "printf '#!/bin/sh\nexit 0\n' > $main/.git/hooks/pre-push && echo 'exit 0' >> $main/.git/hooks/pre-rebase"
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
lt_wait_inactive
ctlw() { (cd "$LT_WS" && lazaretctl "$@"); }
json=$(ctlw changes --json) || lt_fail "lazaretctl changes --json failed"
gkind() { jq -r --arg p "$1" '.changes[] | select(.path == $p and .git_dir_view) | .kind' <<<"$json"; }
for p in "$main/.git/hooks/post-commit" "$main/.git/hooks/pre-push" "$gd/config.worktree" "$gd/commondir" \
        "$main/.git/worktrees/lt-wt-other"; do
        lt_assert_eq "lazaretctl changes: $p" git-control "$(gkind "$p")"
done
lt_assert_eq "the other registration's change" deleted \
        "$(jq -r --arg p "$main/.git/worktrees/lt-wt-other" '.changes[] | select(.path == $p) | .change' <<<"$json")"
text=$(ctlw changes) || lt_fail "lazaretctl changes failed"
[[ $text == *"git-control"*"$main/.git/hooks/post-commit"* ]] || lt_fail "the listing lacks the common dir's hook: $text"
diff=$(ctlw changes --diff "$main/.git/hooks/post-commit") || lt_fail "changes --diff of the hook failed: $diff"
[[ $diff == *"+touch $(mark hook)"* ]] || lt_fail "the hook's diff does not show its text: $diff"
out=$(ctlw changes apply --all 2>&1) || lt_fail "apply --all failed: $out"
[[ $out == *"Skipped git control $main/.git/hooks/post-commit"* ]] || lt_fail "apply --all did not skip the hook: $out"
[[ ! -e $main/.git/hooks/post-commit && ! -e $main/.git/hooks/pre-push && ! -e $gd/config.worktree ]] ||
        lt_fail "apply --all wrote git control on the host"
lt_assert_eq "the registration's commondir after apply --all" "../.." "$(cat "$gd/commondir")"
if out=$(ctlw changes apply "$main/.git/hooks/pre-push" 2>&1); then
        lt_fail "a hook of the common dir was applied without --git-control: $out"
fi
[[ $out == *"$main/.git/hooks/pre-push is git control"* ]] || lt_fail "the refusal does not name the host path: $out"
[[ ! -e $main/.git/hooks/pre-push ]] || lt_fail "a refused apply wrote the hook"
printf '#!/bin/sh\n# host, edited\n' >"$main/.git/hooks/pre-rebase"
if out=$(ctlw changes apply --git-control "$main/.git/hooks/pre-rebase" 2>&1); then
        lt_fail "apply over a hook the host made meanwhile succeeded: $out"
fi
[[ $out == *"changed on the host"* ]] || lt_fail "the stale refusal is unclear: $out"
lt_assert_eq "the host's own hook after the refusal" "# host, edited" "$(sed -n 2p "$main/.git/hooks/pre-rebase")"
rm -f "$main/.git/hooks/pre-rebase"
ctlw changes apply --git-control "$main/.git/hooks/pre-push" >/dev/null || lt_fail "apply --git-control of pre-push failed"
lt_assert_eq "the applied hook on the host" "exit 0" "$(sed -n 2p "$main/.git/hooks/pre-push")"
rm -f "$main/.git/hooks/pre-push"
ctlw changes discard "$main/.git" >/dev/null || lt_fail "discard of the git dir view's changes failed"
json=$(ctlw changes --json) || lt_fail "lazaretctl changes --json failed"
lt_assert_eq "the git dir view's changes after discard" 0 "$(jq '[.changes[] | select(.git_dir_view)] | length' <<<"$json")"
git -C "$LT_WS" status >/dev/null 2>&1 || lt_fail "the host worktree's git status fails after the discard"
no_marks "lazaretctl changes of the git dir view"
lt_log "ok: lazaretctl changes lists, diffs, applies and discards the git dir view's state by host path"

# A registration that names another checkout is refused at launch, in one line.
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
cp "$gd/gitdir" "$HOME/lt-wt-gitdir.saved"
echo "$other/.git" >"$gd/gitdir"
if out=$(inside true 2>&1); then
        lt_fail "a launch with a registration naming another checkout succeeded"
fi
[[ $out == *"git worktree repair"* ]] || lt_fail "the refusal does not say how to repair: $out"
cp "$HOME/lt-wt-gitdir.saved" "$gd/gitdir"
lt_log "ok: a registration naming another checkout is refused: ${out##*$'\n'}"
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true

# ---------------------------------------------------------------- the main checkout
# Launched in MAIN, whose linked worktrees' checkouts are not inside: a prune
# there must not drop their registrations either.
wt_ws=$LT_WS
LT_WS=$main
LT_DOMAIN=$(cd "$LT_WS" && lazaretctl domain-id) || lt_fail "lazaretctl domain-id failed in $LT_WS"
reset_states
expect_inside "git worktree prune in the main checkout" "git worktree prune && git worktree list"
for f in HEAD gitdir commondir index; do
        [[ -f $main/.git/worktrees/lt-wt-other/$f && -f $main/.git/worktrees/$name/$f ]] ||
                lt_fail "git worktree prune in the main checkout removed a registration's $f"
done
git -C "$other" status >/dev/null || lt_fail "the other worktree is broken after a prune in the main checkout"
lt_assert_eq "the host's worktree list after it" 3 "$(git -C "$main" worktree list | wc -l)"

# git worktree add inside the main checkout, in /workspace: the checkout's
# files, the branch and its commits are on the host at once; the
# registration's gitdir, commondir and config.worktree and the checkout's
# .git file stay in Domain state (they redirect git), so host git sees a
# plain directory and no new worktree, and runs nothing planted there.
expect_inside "git worktree add wt and a commit in it" \
        "git worktree add -q -b feat wt && cd wt && echo f > f.txt && git add f.txt && git commit -q -m in-feat &&
         printf '[core]\n\tfsmonitor = touch $(mark wt-config)\n' > /workspace/.git/worktrees/wt/config.worktree &&
         git status --short && git worktree list | grep -q /workspace/wt"
lt_assert_eq "the commit in the worktree added inside, on the host" in-feat "$(git -C "$main" log -1 --format=%s feat)"
lt_assert_eq "its file on the host" f "$(cat "$main/wt/f.txt")"
[[ -f $main/.git/worktrees/wt/HEAD ]] || lt_fail "the registration's HEAD is not on the host"
[[ ! -e $main/wt/.git ]] || lt_fail "the added worktree's .git file reached the host"
for f in gitdir commondir config.worktree; do
        [[ ! -e $main/.git/worktrees/wt/$f ]] || lt_fail "the added worktree's registration $f reached the host"
done
git -C "$main" worktree list >"$HOME/lt-wt-list" || lt_fail "the host's git worktree list fails after a worktree add inside"
lt_assert_eq "the host's worktree list after a worktree add inside" 3 "$(wc -l <"$HOME/lt-wt-list")"
lt_assert_eq "the host's status of the added checkout" "?? wt/" "$(git -C "$main" status --porcelain)"
git -C "$main/wt" status >/dev/null || lt_fail "host git status in the added checkout fails"
hg -C "$main" commit -q --allow-empty -m host-after-worktree-add || lt_fail "a host commit after a worktree add inside failed"
no_marks "git worktree add wt inside"
json=$( (cd "$LT_WS" && lazaretctl changes --json)) || lt_fail "lazaretctl changes --json failed"
for p in .git/worktrees/wt/gitdir .git/worktrees/wt/commondir .git/worktrees/wt/config.worktree wt/.git; do
        lt_assert_eq "the pending change $p" git-control \
                "$(jq -r --arg p "$p" '.changes[] | select(.path == $p) | .kind' <<<"$json")"
done
expect_inside "the added worktree after a restart" "git -C wt log -1 --format=%s | grep -qx in-feat && git worktree list | grep -q /workspace/wt"
lt_log "ok: git worktree add inside the main checkout: files, branch and commit on the host, its redirections kept inside"
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
LT_WS=$wt_ws

# ---------------------------------------------------------------- a submodule's working tree
hg init -q -b main "$origin"
hg -C "$origin" commit -q --allow-empty -m origin
hg init -q -b main "$super"
hg -C "$super" submodule -q add "$origin" sub
hg -C "$super" commit -q -m "the submodule"
hg -C "$super/sub" config gc.auto 0
[[ $(cat "$super/sub/.git") == "gitdir: ../.git/modules/sub" ]] || lt_fail "the submodule's gitfile is not relative"
LT_WS=$super/sub
LT_DOMAIN=$(cd "$LT_WS" && lazaretctl domain-id) || lt_fail "lazaretctl domain-id failed in $LT_WS"
reset_states
sgd=$super/.git/modules/sub
scfg_before=$(sha256sum <"$sgd/config")

expect_inside "a commit in the submodule" "git status --short && echo s > s.txt && git add s.txt && git commit -q -m in-sub"
lt_assert_eq "the submodule's commit on the host" in-sub "$(git -C "$super/sub" log -1 --format=%s)"
lt_assert_eq "the host submodule's status after it" "" "$(git -C "$super/sub" status --porcelain)"
refused_inside "writing the submodule's config" "git config core.fsmonitor 'touch $(mark sub-config)'"
refused_inside "writing the submodule git dir's commondir" "echo ../x > $sgd/commondir"
expect_inside "a hook written in the submodule's git dir" \
        "printf '#!/bin/sh\ntouch $(mark sub-hook)\n' > $sgd/hooks/post-commit && chmod 755 $sgd/hooks/post-commit"
lt_assert_eq "the submodule's config" "$scfg_before" "$(sha256sum <"$sgd/config")"
[[ ! -e $sgd/hooks/post-commit ]] || lt_fail "a hook written inside reached the host"
[[ ! -e $sgd/commondir ]] || lt_fail "commondir written inside reached the host"
lt_assert_eq "the host's gitfile" "gitdir: ../.git/modules/sub" "$(cat "$super/sub/.git")"
git -C "$super" status >/dev/null 2>&1 || true
hg -C "$super/sub" commit -q --allow-empty -m host-sub || true
no_marks "submodule"
lt_log "ok: the submodule works inside, its config and hooks never reach the host"
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true

# ---------------------------------------------------------------- the image holds the workspace's host path
# A linked workspace's host path must become a link to /workspace inside:
# an image with a file there makes the launch fail, in one line that names
# the path and what to do, before anything runs inside.
clash=$HOME/lt-wt-clash
rm -rf "$clash"
hg -C "$main" worktree add -q -b clash "$clash"
clash_image=$HOME/lt-image-git-clash
lt_build_image "$clash_image" "$(command -v git)" "$clash:0:0:clash"
config_saved=$(cat "$LT_CONFIG")
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s" } } }\n' "$clash_image" >"$LT_CONFIG"
LT_WS=$clash
LT_DOMAIN=$(cd "$LT_WS" && lazaretctl domain-id) || lt_fail "lazaretctl domain-id failed in $LT_WS"
reset_states
if out=$(inside true 2>&1); then
        lt_fail "a launch whose image holds a file at the workspace's host path succeeded: $out"
fi
[[ $out == *"already has a file at $clash, the workspace's host path"* && $out == *"remove it from the image"* ]] ||
        lt_fail "the refusal does not name the path and what to do: $out"
lt_log "ok: an image holding the workspace's host path is refused: ${out%%$'\n'*}"
printf '%s\n' "$config_saved" >"$LT_CONFIG"
expect_inside "the same checkout with the usual image" "git status --short"
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
lt_log "PASS"
