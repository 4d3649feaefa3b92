#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-git-kept (issue 29): what git writes in a git dir but a later
# host git command follows, sends to or runs stays in Domain state. In a
# real sandbox (the busybox image plus the host's git), one Domain:
#   - the host's own remotes/ and info/grafts are named on the launch line;
#   - an interactive rebase inside, stopped at a break with an exec line
#     after it: the host sees a detached HEAD and no rebase, its
#     `git rebase --continue` finds none and runs nothing; the launch line
#     (of the launch that starts the Domain and of one into it running),
#     lazaretctl status and lazaretctl changes say to finish it inside;
#     continued inside, it runs its exec line there and finishes;
#   - a cherry-pick and a git am stopped on a conflict inside: the host sees
#     neither under way, its --continue finds nothing; status says which;
#     they finish (cherry-pick) and abort (am) inside; a cherry-pick and a
#     revert of two commits each (git's sequencer/) finish inside;
#   - a remotes/ file with an ext:: URL, and a branches/ file with one (a
#     member of the class the issue did not name): a host fetch of that
#     name, with every protocol allowed, runs nothing;
#   - objects/info/alternates naming a private repository: the host's
#     cat-file does not read its blob, and a host repack -a copies nothing
#     of it into the workspace's repository; a nested repository's
#     alternates, http-alternates and info/grafts stay inside too; a new
#     nested repository made right after the host's repack works.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image
lt_reset_view_state

marks=$HOME/lt-gk-marks
private=$HOME/lt-gk-private
rm -rf "$marks" "$private"
mkdir -p "$marks"
no_marks() {
        local left
        left=$(ls "$marks")
        [[ -z $left ]] || lt_fail "$1: the host ran what the sandbox wrote: $left"
}
hg() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root GIT_AUTHOR_NAME=in GIT_AUTHOR_EMAIL=in@example.invalid \
                GIT_COMMITTER_NAME=in GIT_COMMITTER_EMAIL=in@example.invalid GIT_EDITOR=true /bin/sh -c "cd /workspace && $1" </dev/null
}
expect_inside() {       # expect_inside WHAT COMMAND: must succeed
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}
stops_inside() {        # stops_inside WHAT COMMAND: git stops half-way (fails)
        local out
        if out=$(inside "$2" 2>&1); then
                lt_fail "$1 did not stop inside: $out"
        fi
        lt_log "ok: $1 stopped inside"
}
host_none_under_way() { # host_none_under_way WHAT CONTINUE-COMMAND...: nothing for the host to continue
        local out
        if out=$(hg "${@:2}" 2>&1); then
                lt_fail "$1: the host's git ${*:2} found something to continue: $out"
        fi
        out=$(hg status 2>&1)
        if grep -Eiq "rebas|cherry-pick|am session|revert" <<<"$out"; then
                lt_fail "$1: the host's git status sees an operation under way: $out"
        fi
        for f in rebase-merge rebase-apply sequencer CHERRY_PICK_HEAD REVERT_HEAD REBASE_HEAD; do
                [[ ! -e $LT_WS/.git/$f ]] || lt_fail "$1: .git/$f reached the host"
        done
        no_marks "$1"
        lt_log "ok: $1: nothing under way on the host"
}
status_says() {         # status_says TEXT: lazaretctl status and changes both say it
        local out
        out=$(cd "$LT_WS" && lazaretctl status 2>&1) || true
        [[ $out == *"$1"* ]] || lt_fail "lazaretctl status does not say '$1': $out"
        out=$(cd "$LT_WS" && lazaretctl changes 2>&1) || true
        [[ $out == *"$1"* ]] || lt_fail "lazaretctl changes does not say '$1': $out"
        out=$(cd "$LT_WS" && lazaretctl status --json | jq -r '.View.git_in_progress[]') || true
        lt_assert_eq "lazaretctl status --json: View.git_in_progress" "$1" "$out"
        lt_log "ok: status and changes say '$1'"
}
launch_line() {         # launch_line OUTPUT: the keeper's "lazaretctl: git:" lines (it may print them after status says running)
        for _ in $(seq 1 50); do
                grep -q '^lazaretctl: git: ' "$1" && break
                sleep 0.1
        done
        grep '^lazaretctl: git: ' "$1" || true
}
restart() {             # restart OUTPUT: a new start of the Domain, its launch line in OUTPUT
        if [[ -n ${LT_KEEPER:-} ]]; then
                kill "$LT_KEEPER" 2>/dev/null || true
                wait "$LT_KEEPER" 2>/dev/null || true
        fi
        (cd "$LT_WS" && lazaretctl stop >/dev/null 2>&1) || true
        lt_wait_inactive
        lt_keeper_start "$1"
}

# ---------------------------------------------------------------- the repository
# main: a.txt "main"; topic (from base): t1, t2; cp and amb (from base) change a.txt.
printf 'base\n' >"$LT_WS/a.txt"
hg add a.txt
hg commit -q -m base
hg config gc.auto 0
hg branch -q -M main
hg checkout -q -b topic
echo 1 >"$LT_WS/t1.txt" && hg add t1.txt && hg commit -q -m t1
echo 2 >"$LT_WS/t2.txt" && hg add t2.txt && hg commit -q -m t2
hg checkout -q -b cp main
echo cp >"$LT_WS/a.txt" && hg commit -q -a -m cp
hg checkout -q -b amb main
echo am >"$LT_WS/a.txt" && hg commit -q -a -m am
hg format-patch -q -1 amb --stdout >"$LT_WS/am.patch"
hg checkout -q -b more main
echo m1 >"$LT_WS/m1.txt" && hg add m1.txt && hg commit -q -m m1
echo m2 >"$LT_WS/m2.txt" && hg add m2.txt && hg commit -q -m m2
hg checkout -q main
echo main >"$LT_WS/a.txt" && hg commit -q -a -m main
hg checkout -q topic
# (untracked, not ignored: ignored files are the sandbox's own, never the host's)
t1=$(hg rev-parse topic~1)
t2=$(hg rev-parse topic)
printf 'pick %s t1\nbreak\nexec touch exec-ran\npick %s t2\n' "$t1" "$t2" >"$LT_WS/lt-todo"

# A private repository outside the workspace, its blob known to the test.
git init -q "$private"
echo PRIVATE-SECRET >"$private/secret.txt"
git -C "$private" add secret.txt
git -C "$private" -c user.name=p -c user.email=p@example.invalid commit -q -m secret
blob=$(git -C "$private" rev-parse HEAD:secret.txt)

# ---------------------------------------------------------------- the host's own, at launch
mkdir -p "$LT_WS/.git/remotes"
printf 'URL: /nonexistent\n' >"$LT_WS/.git/remotes/old"
: >"$LT_WS/.git/info/grafts"
restart "$HOME/lt-gk-launch1"
line=$(launch_line "$HOME/lt-gk-launch1")
[[ $line == *"the host's git dirs hold files"*".git/info/grafts, .git/remotes/;"* ]] ||
        lt_fail "the launch line does not name the host's kept files: $(cat "$HOME/lt-gk-launch1")"
[[ $(wc -l <<<"$line") == 1 ]] || lt_fail "more than one launch line for the host's kept files: $line"
lt_log "ok: the launch line names the host's .git/info/grafts and .git/remotes/"
rm -rf "$LT_WS/.git/remotes" "$LT_WS/.git/info/grafts"

# ---------------------------------------------------------------- 1. a rebase with exec, stopped inside
# A break is a stop git reports as success.
expect_inside "git rebase -i onto main, to its break" \
        "GIT_SEQUENCE_EDITOR='cp /workspace/lt-todo' git rebase -q -i main && test -d .git/rebase-merge"
[[ ! -e $LT_WS/exec-ran ]] || lt_fail "the exec line ran before the break"
if hg symbolic-ref -q HEAD >/dev/null; then
        lt_fail "the host's HEAD is not detached during the rebase inside"
fi
host_none_under_way "a rebase stopped inside" rebase --continue
[[ ! -e $LT_WS/exec-ran ]] || lt_fail "the host's git rebase --continue ran the exec line written inside"
status_says "rebase in progress inside: finish or abort it inside (git rebase --continue / --abort)"
restart "$HOME/lt-gk-launch2"
line=$(launch_line "$HOME/lt-gk-launch2")
[[ $line == "lazaretctl: git: rebase in progress inside: finish or abort it inside (git rebase --continue / --abort)" ]] || lt_fail "the launch line does not say the rebase is under way: $(cat "$HOME/lt-gk-launch2")"
lt_log "ok: the launch line says the rebase is under way inside"
out=$(lt_launch -- /bin/true 2>&1) || lt_fail "a launch into the running Domain failed: $out"
[[ $out == *"lazaretctl: git: rebase in progress inside: finish or abort it inside (git rebase --continue / --abort)"* ]] ||
        lt_fail "a launch into the running Domain does not say the rebase is under way: $out"
lt_log "ok: a launch into the running Domain says it too"
expect_inside "git rebase --continue (runs the exec line inside)" "git rebase --continue && test -e exec-ran"
lt_assert_eq "topic after the rebase inside" "refs/heads/topic" "$(hg symbolic-ref HEAD)"
lt_assert_eq "topic rebased onto main" "$(hg rev-parse main)" "$(hg rev-parse topic~2)"
[[ -e $LT_WS/exec-ran ]] || lt_fail "the exec line's file is not on the host"
out=$(cd "$LT_WS" && lazaretctl status 2>&1) || true
[[ $out != *"in progress inside"* ]] || lt_fail "status still says an operation is under way: $out"
out=$(lt_launch -- /bin/true 2>&1) || lt_fail "a launch into the running Domain failed: $out"
[[ $out != *"lazaretctl: git:"* ]] || lt_fail "a launch still says an operation is under way: $out"

# ---------------------------------------------------------------- 2. a cherry-pick, stopped inside
stops_inside "git cherry-pick with a conflict" "git cherry-pick cp"
host_none_under_way "a cherry-pick stopped inside" cherry-pick --continue
status_says "cherry-pick in progress inside: finish or abort it inside (git cherry-pick --continue / --abort)"
expect_inside "git cherry-pick --continue" "echo resolved > a.txt && git add a.txt && git cherry-pick --continue"
lt_assert_eq "the cherry-pick's commit on the host" "cp" "$(hg log -1 --format=%s topic)"
lt_assert_eq "its content" "resolved" "$(hg show topic:a.txt)"

# Picks and reverts of several commits (git's sequencer/, in Domain state while they run) finish inside.
expect_inside "git cherry-pick of two commits, git revert of both" \
        "git cherry-pick main..more >/dev/null && git revert --no-edit HEAD~2..HEAD >/dev/null && test ! -e .git/sequencer"
lt_assert_eq "the picks and reverts on the host" "Revert \"m1\" Revert \"m2\" m2 m1 cp" \
        "$(hg log -5 --format=%s topic | tr '\n' ' ' | sed 's/ $//')"

# ---------------------------------------------------------------- 3. git am, stopped inside
stops_inside "git am with a conflict" "git am am.patch"
host_none_under_way "an am stopped inside" am --continue
status_says "am in progress inside: finish or abort it inside (git am --continue / --abort)"
expect_inside "git am --abort" "git am --abort && test ! -e .git/rebase-apply"
lt_assert_eq "topic after the am aborted inside" 'Revert "m1"' "$(hg log -1 --format=%s topic)"

# ---------------------------------------------------------------- 4. remotes/ and branches/ naming ext::
expect_inside "remotes/evil and branches/evil2 with ext:: URLs" \
        "mkdir -p .git/remotes .git/branches &&
         printf 'URL: ext::sh -c touch%% $marks/remotes\nPull: refs/heads/main:refs/heads/x\n' > .git/remotes/evil &&
         printf 'ext::sh -c touch%% $marks/branches\n' > .git/branches/evil2 &&
         test -s .git/remotes/evil && test -s .git/branches/evil2"
[[ ! -e $LT_WS/.git/remotes/evil && ! -e $LT_WS/.git/branches/evil2 ]] ||
        lt_fail "remotes/ or branches/ written inside reached the host"
hg -c protocol.allow=always fetch -q evil >/dev/null 2>&1 || true
hg -c protocol.allow=always fetch -q evil2 >/dev/null 2>&1 || true
no_marks "a host fetch of the remotes/ and branches/ names written inside"
lt_log "ok: a host fetch of remotes/evil and branches/evil2 ran nothing"

# ---------------------------------------------------------------- 5. alternates to a private repository
# The workspace's, and a nested repository's made inside, with its http-alternates and info/grafts.
expect_inside "objects/info/alternates naming the private repository, a nested repository's too" \
        "echo $private/.git/objects > .git/objects/info/alternates && test -s .git/objects/info/alternates &&
         git init -q nested && mkdir -p nested/.git/objects/info nested/.git/info &&
         echo $private/.git/objects > nested/.git/objects/info/alternates &&
         echo http://127.0.0.1:9/x > nested/.git/objects/info/http-alternates && : > nested/.git/info/grafts &&
         test -s nested/.git/objects/info/alternates"
[[ ! -e $LT_WS/.git/objects/info/alternates ]] || lt_fail "alternates written inside reached the host"
for f in objects/info/alternates objects/info/http-alternates info/grafts; do
        [[ ! -e $LT_WS/nested/.git/$f ]] || lt_fail "nested/.git/$f written inside reached the host"
done
[[ -e $LT_WS/nested/.git/HEAD ]] || lt_fail "the nested repository's HEAD is not on the host"
lt_log "ok: the nested repository's storage is on the host, its alternates and grafts are not"
out=$(cd "$LT_WS" && lazaretctl changes 2>&1) || true
[[ $out == *"git-control"*".git/objects/info/alternates"* ]] ||
        lt_fail "lazaretctl changes does not list the alternates as git-control: $out"
if out=$(hg cat-file -p "$blob" 2>&1); then
        lt_fail "the host's cat-file read the private repository's blob through the workspace: $out"
fi
hg repack -a -d -q || lt_fail "the host's repack -a failed"
if hg cat-file -e "$blob" 2>/dev/null; then
        lt_fail "the host's repack -a copied the private repository's blob into the workspace's repository"
fi
lt_log "ok: the host's cat-file and repack -a do not reach the private repository"
# The commit-graph and the multi-pack-index git writes inside stay inside: the
# host's git would take commits' trees and objects' places from them unchecked.
expect_inside "git commit-graph write and git multi-pack-index write" \
        "git commit-graph write --reachable && test -s .git/objects/info/commit-graph &&
         git multi-pack-index write && test -s .git/objects/pack/multi-pack-index &&
         git commit-graph verify && git log -1 --format=%H >/dev/null"
for f in objects/info/commit-graph objects/pack/multi-pack-index; do
        [[ ! -e $LT_WS/.git/$f ]] || lt_fail ".git/$f written inside reached the host"
done
hg commit-graph write --reachable || lt_fail "the host's own commit-graph write failed"
[[ -s $LT_WS/.git/objects/info/commit-graph ]] || lt_fail "the host's own commit-graph is not on the host"
lt_log "ok: the commit-graph and multi-pack-index written inside stay inside; the host writes its own"
# Right after the host's repack deleted packs git inside had read, a new .git inside (test-view-reuse).
expect_inside "a nested repository made after the host's repack" \
        "git init -q nested2 && git -C nested2 commit -q --allow-empty -m n2 && git -C nested2 log -1 --format=%s >/dev/null"
lt_assert_eq "the workspace's repository after all that" "" "$(hg status --porcelain --untracked-files=no)"
