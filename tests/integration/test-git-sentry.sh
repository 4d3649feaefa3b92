#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-git-sentry: issue 9 hole 0, the sandbox must not get code run on the
# host through the repository. In a real sandbox (an image with the host's
# git added), each attack is performed and must fail:
#   - git config core.fsmonitor CMD inside (and writing, removing or renaming
#     .git/config directly): refused, and the host's git status runs nothing;
#   - an executable .git/hooks/pre-commit written inside: kept in sandbox-local
#     state (the workspace view), never in the host's .git/hooks, and the host's git commit runs
#     nothing (while a commit inside runs it, inside);
#   - mv .git .g; cp -a .g .git: the rename fails (EBUSY, the workspace
#     view keeps the top .git in place);
#   - a core.hooksPath inside the workspace (husky's .husky/_): the same for
#     it; moving or replacing it inside leaves the host's as it was; the same for a
#     relative one that leaves the workspace and leads back in through a
#     host symlink (../link, link -> workspace/evil).
# A commit inside works and lands in the host's repository; the host's edits
# of .git/config are seen inside at once; workspaces without a .git
# directory, or with a .git file naming a git dir inside the workspace, are
# refused with a clear message.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

# An image with git: the busybox test image plus the host's git.
lt_use_git_image
lt_reset_view_state

hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
# Runs a shell command inside, in /workspace, with git on PATH.
inside() { lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "$1"; }
must_fail_inside() {
        local what=$1 cmd=$2 out
        if out=$(inside "$cmd" 2>&1); then
                lt_fail "$what succeeded inside: $out"
        fi
        lt_log "ok: $what fails inside: $(tail -n 1 <<<"$out")"
}
no_markers() {
        local left
        left=$(cd "$LT_WS" && ls -d pwned-* 2>/dev/null) || true
        [[ -z $left ]] || lt_fail "$1: code from the sandbox ran on the host (left $left)"
        lt_log "ok: $1 ran nothing planted by the sandbox"
}

echo one >"$LT_WS/a.txt"
hgit add a.txt
hgit commit -q -m "host 1"
config_before=$(sha256sum <"$LT_WS/.git/config")

# A session that stays: every launch below runs in the same sandbox.
(cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 600) >/dev/null 2>&1 &
keeper=$!
on_exit() {
        local rc=$?
        kill "$keeper" "${keeper2:-}" "${keeper4:-}" 2>/dev/null || true
        set +e
        # The extra Domains too: a sandbox left running would be reused, with
        # its old mounts, by the next run.
        [[ -z ${keeper4:-} ]] || lazaretctl --workspace "$WS4" stop >/dev/null 2>&1
        (exit "$rc")    # lt_domain_cleanup reads the status from $?
        lt_domain_cleanup
}
trap on_exit EXIT
inside 'git --version' >/dev/null || lt_fail "git does not run inside: $(inside 'git --version' 2>&1)"

# --- .git/config: read-only inside, live from the host ----------------------
must_fail_inside "git config core.fsmonitor" 'git config core.fsmonitor "touch pwned-fsmonitor"'
must_fail_inside "appending to .git/config" 'printf "[core]\n\tfsmonitor = touch pwned-fsmonitor\n" >> .git/config'
must_fail_inside "rm .git/config" 'rm -f .git/config'
must_fail_inside "mv .git/config" 'mv .git/config .git/config.old'
must_fail_inside "replacing .git/config by rename" 'printf "[core]\n\tfsmonitor = touch pwned-fsmonitor\n" > .git/c2 && mv -f .git/c2 .git/config'
rm -f "$LT_WS/.git/c2"
lt_assert_eq ".git/config on the host unchanged" "$config_before" "$(sha256sum <"$LT_WS/.git/config")"
hgit status >/dev/null
no_markers "host git status"

for v in live-1 live-2; do
        hgit config lazaret.probe "$v"  # git writes config.lock and renames it over config
        lt_assert_eq "host edit of .git/config seen inside" "$v" "$(inside 'git config lazaret.probe')"
done

# --- .git/hooks: sandbox-local ----------------------------------------------
# The hook records where it ran ($WHERE is set by whoever commits).
inside 'printf "#!/bin/sh\necho \"\${WHERE:-unknown}\" >> pwned-hook-ran\n" > .git/hooks/pre-commit && chmod 755 .git/hooks/pre-commit' ||
        lt_fail "writing .git/hooks/pre-commit inside failed (the mask must be writable)"
[[ ! -e $LT_WS/.git/hooks/pre-commit ]] || lt_fail "a hook written inside appeared in the host's .git/hooks"
lt_log "ok: .git/hooks/pre-commit written inside is not in the host's .git/hooks"
must_fail_inside "mv .git/hooks" 'mv .git/hooks .git/hooks.old'

# --- a commit inside works (and runs the sandbox's own hook, inside) ---------
inside 'echo two > b.txt && git add b.txt && WHERE=inside git -c user.name=agent -c user.email=agent@example.invalid commit -q -m "inside 1"' ||
        lt_fail "a commit inside failed: $(inside 'git status' 2>&1)"
lt_assert_eq "the commit made inside, seen on the host" "inside 1" "$(hgit log -1 --format=%s)"
lt_assert_eq "the hook ran inside, in the sandbox" inside "$(cat "$LT_WS/pwned-hook-ran")"
rm -f "$LT_WS/pwned-hook-ran"
echo three >"$LT_WS/c.txt"
hgit add c.txt
WHERE=host hgit commit -q -m "host 2"
no_markers "host git commit"

# --- .git is pinned ---------------------------------------------------------
must_fail_inside "mv .git .g" 'mv .git .g'
[[ ! -e $LT_WS/.g ]] || lt_fail "mv .git .g left .g on the host"
must_fail_inside "mv .git .g; cp -a .g .git" 'mv .git .g; cp -a .g .git'
[[ ! -e $LT_WS/.g ]] || lt_fail "mv .git .g; cp -a .g .git left .g on the host"
[[ -f $LT_WS/.git/config && -f $LT_WS/.git/HEAD ]] || lt_fail "the host's .git was damaged"
lt_assert_eq "the host's history after the attempts" "host 2" "$(hgit log -1 --format=%s)"
lt_assert_eq ".git/config on the host still unchanged but for the host's edits" live-2 "$(hgit config lazaret.probe)"
hgit config --get core.fsmonitor >/dev/null && lt_fail "core.fsmonitor reached the host's config"
hgit status >/dev/null
no_markers "host git status after the attempts"

# --- a core.hooksPath inside the workspace ----------------------------------
# A second workspace (its own Domain), with core.hooksPath set before launch.
WS2=$HOME/lt-ws/git-sentry-husky
rm -rf "$WS2"
mkdir -p "$WS2/.husky/_"
git -C "$WS2" init -q
lt_reset_view_state "$WS2"
echo "keep" >"$WS2/.husky/README"
git -C "$WS2" config core.hooksPath .husky/_
h2git() { git -C "$WS2" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside2() { (cd "$WS2" && exec lazaretctl launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "$1"); }
(cd "$WS2" && exec lazaretctl launch -- /bin/sleep 600) >/dev/null 2>&1 &
keeper2=$!
inside2 'printf "#!/bin/sh\necho \"\${WHERE:-unknown}\" >> pwned-husky-ran\n" > .husky/_/pre-commit && chmod 755 .husky/_/pre-commit' ||
        lt_fail "writing the core.hooksPath directory inside failed (the mask must be writable): $(inside2 true 2>&1)"
[[ ! -e $WS2/.husky/_/pre-commit ]] || lt_fail "a hook written inside appeared in the host's core.hooksPath"
lt_log "ok: a hook written inside is not in the host's core.hooksPath .husky/_"
# Moving the hooks directory away, or replacing it, changes nothing on the
# host: it is protected by the workspace view (the move fails, a
# replacement lives in Domain state).
lt_assert_eq ".husky's own files stay visible inside" keep "$(inside2 'cat .husky/README')"
husky_before=$(cd "$WS2/.husky/_" && find . | sort | sha256sum)
for attack in 'mv .husky/_ .husky/old' 'mv .husky .husky-old' 'rm -rf .husky/_ && mkdir .husky/_ && printf "#!/bin/sh
echo planted >> pwned-husky-ran
" > .husky/_/pre-commit && chmod 755 .husky/_/pre-commit'; do
        out=$(inside2 "$attack" 2>&1) || true
        lt_assert_eq "the host's .husky/_ after '$attack'" "$husky_before" "$(cd "$WS2/.husky/_" && find . | sort | sha256sum)"
        [[ ! -e $WS2/.husky/_/pre-commit ]] || lt_fail "'$attack' put a hook into the host's core.hooksPath"
        lt_log "ok: $attack inside leaves the host's core.hooksPath as it was ($(tail -n 1 <<<"$out"))"
done
rm -rf "$WS2/.husky-old"     # what mv copied; it is no hooks directory of the host's
echo four >"$WS2/d.txt"
h2git add d.txt
WHERE=host h2git commit -q -m "host 1"
left=$(cd "$WS2" && ls -d pwned-* 2>/dev/null) || true
[[ -z $left ]] || lt_fail "host git commit with core.hooksPath: code from the sandbox ran on the host (left $left)"
lt_log "ok: host git commit with core.hooksPath ran nothing planted by the sandbox"
kill "$keeper2" 2>/dev/null || true
lazaretctl --workspace "$WS2" stop >/dev/null 2>&1 || true

# A relative core.hooksPath that leaves the workspace lexically but leads
# back in through the host's own (dangling) symlink: ../link -> ws/evil.
WS4=$HOME/lt-ws/git-sentry-rel
link4=$HOME/lt-ws/git-sentry-rel-link
lazaretctl --workspace "$WS4" stop >/dev/null 2>&1 || true   # a sandbox left by an aborted run
rm -rf "$WS4" "$link4"
mkdir -p "$WS4"
git -C "$WS4" init -q
lt_reset_view_state "$WS4"
ln -s git-sentry-rel/evil "$link4"
git -C "$WS4" config core.hooksPath ../git-sentry-rel-link
inside4() { (cd "$WS4" && exec lazaretctl launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "$1"); }
(cd "$WS4" && exec lazaretctl launch -- /bin/sleep 600) >/dev/null 2>&1 &
keeper4=$!
inside4 'mkdir -p evil && printf "#!/bin/sh\necho planted >> pwned-rel-ran\n" > evil/pre-commit && chmod 755 evil/pre-commit' ||
        lt_fail "writing the relative core.hooksPath directory inside failed: $(inside4 true 2>&1)"
[[ ! -e $WS4/evil/pre-commit ]] || lt_fail "a hook written inside reached the host's ../link -> evil core.hooksPath"
echo five >"$WS4/e.txt"
git -C "$WS4" add e.txt
git -C "$WS4" -c user.name=host -c user.email=host@example.invalid commit -q -m "host 1"
[[ ! -e $WS4/pwned-rel-ran ]] || lt_fail "host git commit with core.hooksPath ../link: code from the sandbox ran on the host"
lt_log "ok: a relative core.hooksPath through a host symlink into the workspace is masked"
kill "$keeper4" 2>/dev/null || true
lazaretctl --workspace "$WS4" stop >/dev/null 2>&1 || true
rm -f "$link4"

# A core.hooksPath that goes through a symlink in the workspace is refused.
WS3=$HOME/lt-ws/git-sentry-symlink
rm -rf "$WS3"
mkdir -p "$WS3/hooks-real"
git -C "$WS3" init -q
ln -s hooks-real "$WS3/.husky"
git -C "$WS3" config core.hooksPath .husky/_
out=$(cd "$WS3" && lazaretctl launch -- /bin/true 2>&1) && lt_fail "a core.hooksPath through a symlink was accepted"
[[ $out == *"symlink"* ]] || lt_fail "core.hooksPath through a symlink: unclear message: $out"
lt_log "ok: core.hooksPath through a symlink refused: $out"

# A refusal that quotes the repository's own configuration cannot forge a
# line of the client's output (issue 18 item 4): a newline in the value is
# shown as \x0a.
WS5=$HOME/lt-ws/git-sentry-newline
rm -rf "$WS5"
mkdir -p "$WS5/a"
git -C "$WS5" init -q
printf '[core]\n\thooksPath = "a/../x\\nFAKE: injected line"\n' >>"$WS5/.git/config"
out=$(cd "$WS5" && lazaretctl launch -- /bin/true 2>&1) && lt_fail "a core.hooksPath with '..' was accepted"
grep -q '^FAKE' <<<"$out" && lt_fail "a value from the repository's configuration began a line of its own: $out"
grep -qF 'a/../x\x0aFAKE: injected line' <<<"$out" || lt_fail "the refusal does not show the value escaped: $out"
lt_log "ok: a newline in a refused value is shown escaped: $(head -n 1 <<<"$out")"

# --- workspaces the Git Sentry cannot protect are refused -------------------
plain=$HOME/lt-ws/git-sentry-plain
rm -rf "$plain" && mkdir -p "$plain"
plain_id=$(cd "$plain" && lazaretctl domain-id)
plain_root=$(lazaretctl config check --json --workspace "$plain" | jq -r .data_root)/domains/$plain_id
rm -rf "$plain_root"    # left by an earlier run
systemctl --user reset-failed "lazaret@$plain_id.service" 2>/dev/null || true
started_before=$(systemctl --user show -p ExecMainStartTimestampMonotonic --value "lazaret@$plain_id.service")
out=$(cd "$plain" && lazaretctl launch -- /bin/true 2>&1) && lt_fail "a workspace without .git was accepted"
[[ $out == *"git init"* ]] || lt_fail "workspace without .git: the message does not say what to do: $out"
[[ ! -e $plain/.git ]] || lt_fail "the refused launch created $plain/.git"
# Refused by lazaretctl itself: no Domain Root, no unit started (issue 18 item 5).
[[ ! -e $plain_root ]] || lt_fail "the refused launch created the Domain Root $plain_root"
plain_state=$(systemctl --user show -p ActiveState --value "lazaret@$plain_id.service")
[[ $plain_state == inactive ]] || lt_fail "the refused launch left lazaret@$plain_id.service $plain_state"
[[ $(systemctl --user show -p ExecMainStartTimestampMonotonic --value "lazaret@$plain_id.service") == "$started_before" ]] ||
        lt_fail "the refused launch started lazaret@$plain_id.service"
lt_log "ok: no .git refused by lazaretctl, nothing created or started: $out"
wt=$HOME/lt-ws/git-sentry-worktree
rm -rf "$wt"
hgit worktree add -q "$wt"
# A worktree works (test-view-worktree.sh); a .git file naming a git dir inside
# the workspace, which the sandbox could rewrite, is refused in one line.
mkdir -p "$wt/inner"
cp "$LT_WS/.git/HEAD" "$wt/inner/HEAD"
echo "gitdir: inner" >"$wt/.git"
out=$(cd "$wt" && lazaretctl launch -- /bin/true 2>&1) && lt_fail "a .git file naming a git dir inside the workspace was accepted"
[[ $out == *"lies inside the workspace"* ]] || lt_fail "a git dir inside the workspace: unclear message: $out"
lt_log "ok: a .git file naming a git dir inside the workspace refused: ${out%%$'\n'*}"
(cd "$wt" && lazaretctl stop >/dev/null 2>&1) || true
rm -rf "$wt"
hgit worktree prune

echo "PASS: git config/fsmonitor, hooks, .git pin, core.hooksPath, commit inside, live config, refusals"
