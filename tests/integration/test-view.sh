#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view (issue 15): the workspace view. In a real sandbox (the busybox
# image plus the host's git) the attacks that made the host's own git run
# code written inside are performed, and the host's git runs nothing:
#   1. .git/commondir pointing at a copied git dir whose config carries
#      core.fsmonitor: the write is refused (EROFS);
#   2. a nested repository with core.fsmonitor, added as a gitlink and
#      committed: the commit lands, its config stays in Domain state;
#   3. a submodule's git dir (.git/modules/NAME/config, its hooks): the
#      submodule works inside, the host's copy is never written;
#   4. a bare repository made inside, a gitfile and a git dir assembled in
#      .git/logs: the host never sees a git dir there;
# and the work git does keeps working, with its effects on the host at once:
# commit, branch, stash, rebase, merge, cherry-pick, submodule update, work in the nested
# repository and in the submodule. Integration files (.envrc, .mcp.json,
# .vscode/tasks.json) are never created on the host; a branch switch that
# changes a tracked .vscode/settings.json works inside and leaves the
# host's file alone; what the sandbox wrote there is still there after a
# Domain restart. Host edits of .git/config are seen inside at once.
# Killing lazaret-view fails the Domain with one line, which the session's
# client prints; no view is left, and the next launch works.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image

# The Domain's view state from an earlier run of this test would shadow
# what the test writes anew.
lt_reset_view_state

# Markers on the host only: the sandbox has no such directory, so a command
# that creates one ran on the host.
marks=$HOME/lt-view-marks
rm -rf "$marks" "$HOME/lt-view-origin"
mkdir -p "$marks"
mark() { printf '%s/%s' "$marks" "$1"; }

hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid -c protocol.file.allow=always "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root GIT_AUTHOR_NAME=in GIT_AUTHOR_EMAIL=in@example.invalid \
                GIT_COMMITTER_NAME=in GIT_COMMITTER_EMAIL=in@example.invalid /bin/sh -c "cd /workspace && $1" </dev/null
}
expect_inside() {       # expect_inside WHAT COMMAND: must succeed (its trace names the step that failed)
        local out
        out=$(inside "set -x; $2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}
no_marks() {
        local left
        left=$(ls "$marks")
        [[ -z $left ]] || lt_fail "$1: the host ran code written inside: $left"
}
host_git_everywhere() {
        # What a developer and an editor run on the host: status at the top
        # (it recurses into the submodule), in each nested repository, in the bare one.
        hgit status >/dev/null 2>&1 || true
        hgit -C sub status >/dev/null 2>&1 || true
        hgit -C mod status >/dev/null 2>&1 || true
        hgit -C bare.git status >/dev/null 2>&1 || true
        hgit -C w status >/dev/null 2>&1 || true
        (cd "$LT_WS/.git/logs" && git status >/dev/null 2>&1) || true
        no_marks "$1"
}

# The host's repository: a tracked .vscode/settings.json that differs on
# branch "other", and a submodule.
git init -q -b main "$HOME/lt-view-origin"
git -C "$HOME/lt-view-origin" -c user.name=o -c user.email=o@example.invalid commit -q --allow-empty -m origin
git -C "$HOME/lt-view-origin" -c user.name=o -c user.email=o@example.invalid commit -q --allow-empty -m origin2
mkdir -p "$LT_WS/.vscode"
echo '{"main": true}' >"$LT_WS/.vscode/settings.json"
echo one >"$LT_WS/file.txt"
hgit checkout -q -b main
hgit add -A
hgit commit -q -m one
hgit submodule -q add "$HOME/lt-view-origin" mod
hgit commit -q -m "submodule"
hgit checkout -q -b other
echo '{"other": true}' >"$LT_WS/.vscode/settings.json"
hgit commit -q -am "other settings"
hgit checkout -q main
hgit config gc.auto 0
settings_before=$(sha256sum <"$LT_WS/.vscode/settings.json")
modcfg_before=$(sha256sum <"$LT_WS/.git/modules/mod/config")

# 1. commondir. (Its objects are not copied: a loose object's file is put
# in place only by git's rename onto its name, which the view checks.)
expect_inside "copying a git dir to .x" \
        "mkdir .x .x/objects && cp -r .git/refs .git/HEAD .x/ && printf '[core]\n\tfsmonitor = touch $(mark commondir)\n' > .x/config"
if out=$(inside 'echo ../.x > .git/commondir' 2>&1); then
        lt_fail "writing .git/commondir succeeded inside"
fi
[[ $out == *"Read-only file system"* ]] || lt_fail "writing .git/commondir: '$out', want Read-only file system"
[[ ! -e $LT_WS/.git/commondir ]] || lt_fail ".git/commondir reached the host"
[[ ! -e $LT_WS/.x/HEAD ]] || lt_fail "a HEAD written inside outside a .git directory reached the host"
host_git_everywhere "commondir"
lt_log "ok: .git/commondir refused (EROFS); .x has no HEAD on the host"

# 2. A nested repository as a gitlink, with core.fsmonitor in its config.
expect_inside "a nested repository committed as a gitlink" \
        "git init -q sub && cd sub && echo s > s.txt && git add s.txt && git commit -q -m sub &&
         git config core.fsmonitor 'touch $(mark nested)' && cd .. && git add sub && git commit -q -m gitlink"
lt_assert_eq "the gitlink commit on the host" gitlink "$(hgit log -1 --format=%s)"
lt_assert_eq "the nested repository's commit on the host" sub "$(git -C "$LT_WS/sub" log -1 --format=%s)"
if git -C "$LT_WS/sub" config --get core.fsmonitor >/dev/null; then
        lt_fail "the nested repository's core.fsmonitor reached the host"
fi
# --local: the repository's own file (Lazaret's hook, at the level of `git -c`, wins over it: spec 4.6).
lt_assert_eq "core.fsmonitor inside the nested repository" "touch $(mark nested)" \
        "$(inside 'git -C sub config --local --get core.fsmonitor')"
host_git_everywhere "nested repository"
lt_log "ok: the nested repository's config lives in Domain state"

# 3. The submodule's git dir.
expect_inside "a submodule's config and hooks written" \
        "git -C mod config core.fsmonitor 'touch $(mark submodule)' &&
         printf '#!/bin/sh\ntouch $(mark submodule-hook)\n' > .git/modules/mod/hooks/post-checkout &&
         chmod 755 .git/modules/mod/hooks/post-checkout && printf 'gitdir: ../../.x\n' > .git/modules/mod/gitdir"
lt_assert_eq "the host's submodule config" "$modcfg_before" "$(sha256sum <"$LT_WS/.git/modules/mod/config")"
[[ ! -e $LT_WS/.git/modules/mod/hooks/post-checkout ]] || lt_fail "the submodule hook reached the host"
hgit submodule -q update --checkout --force 2>/dev/null || true
hgit -C mod checkout -q HEAD~0 2>/dev/null || true
host_git_everywhere "submodule"
expect_inside "work in the submodule" "git -C mod commit -q --allow-empty -m in-mod"
lt_assert_eq "the submodule commit on the host" in-mod "$(git -C "$LT_WS/mod" log -1 --format=%s)"
lt_log "ok: the submodule's git dir keeps its config and hooks in Domain state"

# 4. A bare repository, a gitfile, a git dir assembled in .git/logs.
expect_inside "a bare repository made inside" \
        "git init -q --bare bare.git && git -C bare.git config core.fsmonitor 'touch $(mark bare)' &&
         git -C bare.git rev-parse --is-bare-repository"
[[ ! -e $LT_WS/bare.git/HEAD ]] || lt_fail "the bare repository's HEAD reached the host"
expect_inside "a gitfile and a git dir in .git/logs" \
        "mkdir -p w && printf 'gitdir: ../.x\n' > w/.git && mkdir -p .git/logs/objects &&
         printf '[core]\n\tfsmonitor = touch $(mark logs)\n' > .git/logs/config"
[[ ! -e $LT_WS/w/.git ]] || lt_fail "a gitfile written inside reached the host"
[[ ! -e $LT_WS/.git/logs/config ]] || lt_fail ".git/logs/config reached the host"
host_git_everywhere "bare repository, gitfile, logs"
lt_log "ok: no git dir made inside is one on the host"

# A file's second name (git writes each object as a temporary, links it to
# its name and removes the temporary): the object stays readable by its
# name, whichever of its names the kernel looked up last. 300 rounds.
expect_inside "300 files written, linked to a second name, the first removed" \
        'mkdir links && cd links && i=0; while [ $i -lt 300 ]; do
                printf "obj%s" $i >t$i.tmp && ln t$i.tmp o$i && ls -l t$i.tmp >/dev/null && rm t$i.tmp &&
                [ "$(cat o$i)" = "obj$i" ] || { echo "round $i"; exit 1; }; i=$((i+1)); done'
lt_assert_eq "the linked files on the host" 300 "$(find "$LT_WS/links" -type f | wc -l)"
rm -rf "$LT_WS/links"

# Git's daily work, its effects on the host at once.
expect_inside "commit, branch, stash, rebase, merge, cherry-pick" \
        "echo two >> file.txt && git commit -q -am two && git branch topic && git checkout -q topic &&
         echo t > t.txt && git add t.txt && git commit -q -m topic && git checkout -q main &&
         echo three >> file.txt && git commit -q -am three && git checkout -q topic && git rebase -q main &&
         git checkout -q main && git merge -q --no-edit topic && git checkout -q -b pick HEAD~2 &&
         git cherry-pick topic >/dev/null && git checkout -q main && echo wip >> file.txt && git stash -q"
lt_assert_eq "the branches on the host" "main other pick topic" \
        "$(hgit for-each-ref --format='%(refname:short)' refs/heads | sort | tr '\n' ' ' | sed 's/ $//')"
lt_assert_eq "the merge on the host" "topic" "$(hgit log -1 --format=%s main)"
lt_assert_eq "the stash on the host" "1" "$(hgit stash list | wc -l)"
lt_assert_eq "the cherry-pick on the host" "topic" "$(hgit log -1 --format=%s pick)"
hgit stash drop -q
host_git_everywhere "daily work"

# An initialised submodule moved off its recorded commit, then `git
# submodule update` inside: the host's checkout of it is back there. (The
# fsmonitor and hook planted above in its Domain-state config would run
# inside and fail; they are switched off for this step. A branch keeps the
# commit made there on a detached HEAD reachable, so nothing is fetched.)
recorded=$(hgit ls-tree HEAD mod | awk '{print $3}')
expect_inside "git submodule update of the initialised submodule" \
        "g() { git -c core.fsmonitor=false -c core.hooksPath=/nonexistent \"\$@\"; }
         g -C mod branch -f lt-keep && g -C mod checkout -q HEAD~1 && g submodule -q update && test \"\$(git -C mod rev-parse HEAD)\" = $recorded"
lt_assert_eq "the submodule's HEAD on the host after update inside" "$recorded" "$(git -C "$LT_WS/mod" rev-parse HEAD)"
lt_assert_eq "the host's status of the submodule's commit" "" "$(hgit status --porcelain --ignore-submodules=dirty mod)"
host_git_everywhere "submodule update"

# Integration files: created and changed inside, never on the host.
expect_inside "integration files written" \
        "echo 'echo envrc' > .envrc && echo '{}' > .mcp.json && echo '{\"tasks\":1}' > .vscode/tasks.json"
# A branch switch that would change a tracked protected file's staged
# version is refused (issue 32 item 3: the host's index never takes it from
# the sandbox); git has written the working tree by then, and a forced
# checkout of the branch it was on puts it back.
out=$(inside "git checkout -q other" 2>&1) && lt_fail "a branch switch changing the staged .vscode/settings.json succeeded: $out"
[[ $out == *"nable to write new index file"* ]] || lt_fail "the branch switch failed otherwise: $out"
expect_inside "a forced checkout of main after the refused switch" \
        "git checkout -f -q main && test -z \"\$(git status --porcelain --untracked-files=no)\""
lt_assert_eq "the host's branch" main "$(hgit rev-parse --abbrev-ref HEAD)"
for f in .envrc .mcp.json .vscode/tasks.json; do
        [[ ! -e $LT_WS/$f ]] || lt_fail "$f was created on the host from inside"
done
lt_assert_eq "the host's .vscode/settings.json" "$settings_before" "$(sha256sum <"$LT_WS/.vscode/settings.json")"
expect_inside "integration files seen inside" "grep -q envrc .envrc && grep -q tasks .vscode/tasks.json"
lt_log "ok: .envrc, .mcp.json, .vscode/ stay in Domain state; a branch switch inside that changes a tracked .vscode file is refused"

# Host edits of the repository's config: seen inside at once; writes refused.
hgit config lt.probe 42
lt_assert_eq "a host config edit seen inside" 42 "$(inside 'git config --get lt.probe')"
if inside 'git config lt.probe 43' >/dev/null 2>&1; then
        lt_fail "git config succeeded inside"
fi

# After a Domain restart, Domain state is still there.
systemctl --user stop "lazaret@$LT_DOMAIN.service"
lt_wait_inactive
lt_assert_eq "the .envrc written inside, after a restart" "echo envrc" "$(inside 'cat .envrc')"
lt_assert_eq "the nested repository's config, after a restart" "touch $(mark nested)" \
        "$(inside 'git -C sub config --local --get core.fsmonitor')"
host_git_everywhere "after a restart"

# The view's death fails the Domain with one line, which the session's
# client prints; the next launch works.
lt_keeper_start "$HOME/keeper.out"
view_pid=$(pgrep -u "$(id -u)" -f -- 'lazaret-view --workspace-fd' | head -n1) || true
[[ -n $view_pid ]] || lt_fail "no lazaret-view process while the Domain runs"
kill -9 "$view_pid"
lt_wait_inactive
rc=0
wait "$LT_KEEPER" 2>/dev/null || rc=$?
LT_KEEPER=
[[ $rc -ne 0 ]] || lt_fail "the session of a Domain whose view was killed exited 0"
grep -q "^Session failed: .*the workspace view lazaret-view (pid $view_pid)" "$HOME/keeper.out" ||
        lt_fail "the session's client does not name the view's death: $(cat "$HOME/keeper.out")"
log=$( (cd "$LT_WS" && lazaretctl log) 2>/dev/null || cat "$LT_LOGDIR/$LT_DOMAIN.log" 2>/dev/null || true)
grep -q "the workspace view lazaret-view (pid $view_pid)" <<<"$log" ||
        lt_fail "the view's death is not named in the Domain's log: $(tail -n 5 <<<"$log")"
# Neither the view nor its notifier (lazaret-view --notifier) outlives it.
pgrep -u "$(id -u)" -f -- 'lazaret-view --' >/dev/null &&
        lt_fail "a lazaret-view outlived its Domain: $(pgrep -u "$(id -u)" -af -- 'lazaret-view --' | cut -c1-120)"
lt_assert_eq "a launch after the view's death" "echo envrc" "$(inside 'cat .envrc')"
lt_log "ok: the view's death fails the Domain, names the view, and the next launch works"

echo "PASS: the host's git ran nothing written inside; git work inside lands on the host; integration files stay inside"
