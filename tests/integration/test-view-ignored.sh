#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-ignored (issue 15 item 5, SR-13, FR-9, DX-2): Ignored Workspace
# State through the workspace view. In a real sandbox (the busybox image
# plus the host's git):
#   - a host node_modules/ and a host *.log are invisible inside;
#   - node_modules/x, a *.log, a *.pyc next to a tracked source and a name
#     ignored only by the host user's core.excludesFile, made inside, never
#     reach the host and are still there after `lazaretctl stop` and a new
#     launch;
#   - a tracked file under an ignored pattern is shared both ways, also one
#     that a checkout inside creates before it writes the index;
#   - a rename(2) from ignored state to the shared side works (no EXDEV);
#   - after a .gitignore edit inside, new names follow the new rules and a
#     name in ignored state stays there;
#   - git inside shows the ignored paths as ignored, the excludesFile's too;
#   - `lazaretctl changes --ignored` lists the host paths that are shadowed;
#   - shared_ignored shows a host .env read-only;
#   - isolate_ignored: false makes ignored paths ordinary shared ones.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_rename_image
image=$LT_RENAME_IMAGE
rename_tool=$LT_RENAME_TOOL
lt_reset_view_state

profile() {     # profile EXTRA-KEYS: the test profile with those keys
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s"%s } } }\n' \
                "$image" "$1" >"$LT_CONFIG"
}
hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "cd /workspace && $1" </dev/null
}
expect_inside() {       # expect_inside WHAT COMMAND: must succeed
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}
restart() {     # a new Domain start for the next launch (the last session's end may already be stopping it)
        lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || systemctl --user stop "lazaret@$LT_DOMAIN.service"
        lt_wait_inactive
}

# The host user's own excludes file, which only host git would know of.
printf '*.hostonly\n' >"$HOME/lt-ignored-excludes"
git config --global core.excludesFile "$HOME/lt-ignored-excludes"

cd "$LT_WS" || lt_fail "no workspace"
printf 'node_modules/\n*.log\n*.pyc\nbuild/\n.env\n' >.gitignore
mkdir -p node_modules src build
echo host-dependency >node_modules/host-only.js
echo host-log >host.log
echo 'print(1)' >src/main.py
echo tracked >build/keep.txt
echo SECRET=1 >.env
hgit add .gitignore src
hgit add -f build/keep.txt
hgit commit -q -m one
# A branch that adds a tracked file under an ignored pattern.
hgit checkout -q -b extra
echo extra >build/extra.txt
hgit add -f build/extra.txt
hgit commit -q -m extra
hgit checkout -q -
profile ""

# Pre-existing host content in ignored paths: not there inside.
expect_inside "host node_modules/ and host.log invisible" \
        '[ ! -e node_modules ] && [ ! -e host.log ] && [ ! -e .env ] && ! ls | grep -q -e node_modules -e host.log'

# Written inside: on the ignored side only.
expect_inside "ignored paths written" \
        'mkdir -p node_modules/x && echo in >node_modules/x/keep.js && echo move-me >node_modules/x/move.js &&
         echo log >a.log && echo pyc >src/main.pyc && echo h >b.hostonly && cat node_modules/x/keep.js >/dev/null'
for f in node_modules/x a.log src/main.pyc b.hostonly; do
        [[ ! -e $LT_WS/$f ]] || lt_fail "$f, written inside an ignored path, reached the host"
done
lt_assert_eq "the host's node_modules/host-only.js" host-dependency "$(cat "$LT_WS/node_modules/host-only.js")"
lt_assert_eq "the host's host.log" host-log "$(cat "$LT_WS/host.log")"
lt_log "ok: node_modules/x, a.log, src/main.pyc and b.hostonly stay in ignored state"

# A tracked file under an ignored pattern: shared both ways.
lt_assert_eq "a tracked ignored file inside" tracked "$(inside 'cat build/keep.txt')"
expect_inside "a tracked ignored file written" 'echo inside >>build/keep.txt'
lt_assert_eq "the tracked ignored file on the host" "tracked inside" "$(tr '\n' ' ' <"$LT_WS/build/keep.txt" | sed 's/ $//')"
echo host-edit >"$LT_WS/build/keep.txt"
lt_assert_eq "a host edit of the tracked ignored file inside" host-edit "$(inside 'cat build/keep.txt')"
lt_log "ok: a tracked file under an ignored pattern is shared both ways"

# A checkout inside creates build/extra.txt before its index names it: once
# the index does, the file is the host's like every tracked file.
expect_inside "a checkout adding a tracked ignored file" 'git checkout -q extra && [ "$(cat build/extra.txt)" = extra ]'
lt_assert_eq "build/extra.txt on the host after the checkout inside" extra "$(cat "$LT_WS/build/extra.txt" 2>&1)"
lt_assert_eq "host git status of build/extra.txt after the checkout inside" "" "$(hgit status --porcelain build/extra.txt)"
expect_inside "the checkout back" 'git checkout -q - && [ ! -e build/extra.txt ]'
[[ ! -e $LT_WS/build/extra.txt ]] || lt_fail "build/extra.txt is still on the host after the checkout back inside"
lt_log "ok: a tracked file a checkout inside creates under an ignored pattern lands on the host"

# A rename from the ignored side to the shared side.
expect_inside "renames out of ignored state" "$rename_tool node_modules/x/move.js src/moved.js &&
        $rename_tool a.log src/was-log.txt && [ ! -e a.log ] && [ ! -e node_modules/x/move.js ]"
lt_assert_eq "a file renamed out of node_modules/ on the host" move-me "$(cat "$LT_WS/src/moved.js")"
lt_assert_eq "a file renamed out of a.log on the host" log "$(cat "$LT_WS/src/was-log.txt")"
expect_inside "directories renamed across the sides" "mkdir -p node_modules/pkg/lib && echo p >node_modules/pkg/lib/a.js &&
        cat node_modules/pkg/lib/a.js >/dev/null && $rename_tool node_modules/pkg vendor-pkg &&
        [ \"\$(cat vendor-pkg/lib/a.js)\" = p ] && mkdir -p src/scratch && echo q >src/scratch/q &&
        $rename_tool src/scratch node_modules/scratch && [ \"\$(cat node_modules/scratch/q)\" = q ] && [ ! -e src/scratch ]"
lt_assert_eq "a directory renamed out of node_modules/ on the host" p "$(cat "$LT_WS/vendor-pkg/lib/a.js")"
[[ ! -e $LT_WS/src/scratch && ! -e $LT_WS/node_modules/scratch ]] ||
        lt_fail "a directory renamed into node_modules/ is still on the host"
lt_log "ok: renames from ignored state to the shared side land on the host, and back"

# git inside agrees with the view about what is ignored.
status=$(inside 'echo c >c.log && git status --porcelain --ignored') || lt_fail "git status inside failed"
for p in node_modules/ c.log src/main.pyc b.hostonly; do
        grep -qxF "!! $p" <<<"$status" || lt_fail "git status inside does not show $p as ignored: $status"
done
if grep -q '^?? .*hostonly' <<<"$status"; then lt_fail "git inside does not see the host's core.excludesFile: $status"; fi
lt_log "ok: git status inside shows the ignored paths as ignored (core.excludesFile included)"

# What ignored state shadows on the host: names and sizes.
shadow=$(cd "$LT_WS" && lazaretctl changes --ignored --json) || lt_fail "lazaretctl changes --ignored failed"
for p in node_modules host.log .env; do
        jq -e --arg p "$p" '.ignored | map(.path) | index($p) != null' <<<"$shadow" >/dev/null ||
                lt_fail "lazaretctl changes --ignored does not list $p: $shadow"
done
if jq -e '.ignored | map(.path) | index("build/keep.txt") != null' <<<"$shadow" >/dev/null; then
        lt_fail "lazaretctl changes --ignored lists a tracked file: $shadow"
fi
lt_log "ok: lazaretctl changes --ignored lists node_modules, host.log, .env"

# DX-2: after a Domain restart, what the sandbox wrote there is still there.
restart
expect_inside "ignored state after a restart" \
        '[ "$(cat node_modules/x/keep.js)" = in ] && [ "$(cat c.log)" = c ] && [ -e src/main.pyc ] && [ ! -e host.log ]'
lt_log "ok: ignored state persists across a Domain restart"

# A .gitignore edit during a session: new names follow the rules as they
# are now; a name in ignored state stays there (sed -i renames its copy
# onto .gitignore).
expect_inside "a .gitignore edit" "sed -i 's/^\\*\\.log\$/*.tmp/' .gitignore && echo t >x.tmp && echo l >new.log &&
        [ \"\$(cat c.log)\" = c ]"
grep -qxF '*.tmp' "$LT_WS/.gitignore" || lt_fail "the .gitignore edit did not reach the host: $(cat "$LT_WS/.gitignore")"
[[ ! -e $LT_WS/x.tmp ]] || lt_fail "x.tmp, ignored by the edited .gitignore, reached the host"
lt_assert_eq "new.log, no longer ignored, on the host" l "$(cat "$LT_WS/new.log" 2>&1)"
[[ ! -e $LT_WS/c.log ]] || lt_fail "c.log left ignored state when *.log was no longer ignored"
lt_log "ok: after a .gitignore edit new names follow the new rules; ignored state keeps its names"

# lazaretctl state reset /workspace/PATH resets one git-ignored path's
# state, /workspace all of it; the host's own files there stay.
restart
ctl_reset() { (cd "$LT_WS" && lazaretctl state reset --yes "$1") 2>&1; }
out=$(ctl_reset /workspace/node_modules/x) || lt_fail "state reset of /workspace/node_modules/x failed: $out"
[[ $out == *"Reset the ignored workspace state /workspace/node_modules/x"* ]] || lt_fail "state reset of node_modules/x said: $out"
lt_assert_eq "the host's node_modules/host-only.js after the reset" host-dependency "$(cat "$LT_WS/node_modules/host-only.js")"
expect_inside "after a reset of node_modules/x" '[ ! -e node_modules/x ] && [ "$(cat c.log)" = c ] && [ -e src/main.pyc ]'
out=$(ctl_reset /workspace/node_modules/none) || lt_fail "state reset of a path without ignored state failed: $out"
[[ $out == *"nothing to reset"* ]] || lt_fail "state reset of a path without ignored state said: $out"
if out=$(ctl_reset /workspace/../etc); then lt_fail "state reset of /workspace/../etc succeeded: $out"; fi
# A host directory: the ignored entries below it.
out=$(ctl_reset /workspace/src) || lt_fail "state reset of /workspace/src failed: $out"
expect_inside "after a reset of src's ignored state" '[ ! -e src/main.pyc ] && [ "$(cat c.log)" = c ]'
[[ -e $LT_WS/src/moved.js ]] || lt_fail "the reset of src's ignored state touched the host's src"
out=$(ctl_reset /workspace) || lt_fail "state reset of /workspace failed: $out"
expect_inside "after a reset of all ignored state" '[ ! -e c.log ] && [ ! -e src/main.pyc ] && [ ! -e x.tmp ] && [ ! -e node_modules ]'
lt_assert_eq "the host's node_modules/host-only.js after the reset of all" host-dependency "$(cat "$LT_WS/node_modules/host-only.js")"
lt_log "ok: state reset of one ignored path, then of all ignored state; the host's files stay"

# shared_ignored: the host's .env, read-only.
restart
profile ', "shared_ignored": [".env"]'
lt_assert_eq "a shared_ignored .env inside" SECRET=1 "$(inside 'cat .env')"
if inside 'echo SECRET=2 >.env' >/dev/null 2>&1; then lt_fail "a shared_ignored .env was writable inside"; fi
lt_assert_eq "the host's .env" SECRET=1 "$(cat "$LT_WS/.env")"
lt_log "ok: shared_ignored shows the host's .env read-only"

# FR-9: isolate_ignored: false makes them ordinary shared paths.
restart
profile ', "isolate_ignored": false'
lt_assert_eq "lazaretctl status without isolation" no \
        "$(cd "$LT_WS" && lazaretctl status --json | jq -r '.View.isolate_ignored | if . then "yes" else "no" end')"
expect_inside "ignored paths shared" \
        '[ "$(cat node_modules/host-only.js)" = host-dependency ] && [ "$(cat host.log)" = host-log ] &&
         [ ! -e c.log ] && mkdir -p node_modules/y && echo out >node_modules/y/a.js'
lt_assert_eq "node_modules/y/a.js written inside, on the host" out "$(cat "$LT_WS/node_modules/y/a.js")"
lt_log "ok: isolate_ignored: false shares ignored paths both ways"
