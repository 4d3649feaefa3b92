#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-move (issue 15 item 5, SR-13): a rename(2) between Ignored
# Workspace State and the host's side, both ways the view makes it
# (spec 4.6, "Renames between the sides"):
#   - Domain state on the workspace's file system: one rename there. The
#     host file is the very inode that was in Domain state (no copy), its
#     mode is what the view made it, and nothing of it stays behind;
#   - Domain state on another file system (data_root on a tmpfs): a copy
#     under a temporary name, renamed into place, then the source removed.
#     The content arrives whole, no temporary name is left, a directory
#     moved into ignored state stays there across a Domain restart, and no
#     append below a moving directory that succeeded inside is lost (it
#     lands in what is copied, or the kernel is told to fail it).
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_rename_image
image=$LT_RENAME_IMAGE
rn=$LT_RENAME_TOOL
shm=/dev/shm/lt-move-$(id -un)

config() {      # config [DATA-ROOT]
        printf '{ "default_profile": "test", %s"profiles": { "test": { "image": "oci:%s" } } }\n' \
                "${1:+\"data_root\": \"$1\", }" "$image" >"$LT_CONFIG"
}
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "cd /workspace && $1" </dev/null
}
hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
expect_inside() {       # expect_inside WHAT COMMAND: must succeed
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}
restart() {
        lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || systemctl --user stop "lazaret@$LT_DOMAIN.service"
        lt_wait_inactive
}
state_of() {    # state_of NAME: the one path of that name in the Domain's ignored state
        local hits
        hits=$(find "$(lt_checkout_dir)/ignored" -name "$1")
        [[ -n $hits && $hits != *$'\n'* ]] || lt_fail "expected one $1 in ignored state, found: ${hits:-none}"
        printf '%s\n' "$hits"
}
no_temporary() {
        local left
        left=$(find "$LT_WS" -name '.lazaret-rename.*' | head -3)
        [[ -z $left ]] || lt_fail "the view's temporary names are left on the host: $left"
}

config
lt_reset_view_state
cd "$LT_WS" || lt_fail "no workspace"
printf 'node_modules/\n' >.gitignore
mkdir -p src
git add .gitignore
git -c user.name=host -c user.email=host@example.invalid commit -q -m ignore

# --- Domain state on the workspace's file system: one rename there.
[[ $(stat -c %d "$LT_WS") == $(stat -c %d "$(lazaretctl config check --json | jq -r .data_root)") ]] ||
        lt_fail "the default data root is not on the workspace's file system here"
expect_inside "files and a directory made in node_modules/" \
        'mkdir -p node_modules/pkg/lib && echo p >node_modules/pkg/lib/a.js &&
         dd if=/dev/zero of=node_modules/big bs=1M count=64 2>/dev/null'
big_ino=$(stat -c %i "$(state_of big)")
pkg_ino=$(stat -c %i "$(state_of pkg)")
expect_inside "renames out of node_modules/ on one file system" \
        "$rn node_modules/big src/big && $rn node_modules/pkg vendor-pkg && [ \"\$(cat vendor-pkg/lib/a.js)\" = p ] &&
         [ ! -e node_modules/big ] && [ ! -e node_modules/pkg ]"
lt_assert_eq "the inode of src/big on the host (the one it had in Domain state)" "$big_ino" "$(stat -c %i "$LT_WS/src/big")"
lt_assert_eq "the inode of vendor-pkg on the host (the one it had in Domain state)" "$pkg_ino" \
        "$(stat -c %i "$LT_WS/vendor-pkg")"
lt_assert_eq "the mode of src/big on the host" 644 "$(stat -c %a "$LT_WS/src/big")"
lt_assert_eq "vendor-pkg/lib/a.js on the host" p "$(cat "$LT_WS/vendor-pkg/lib/a.js")"
expect_inside "a rename into node_modules/ on one file system" "$rn vendor-pkg node_modules/back && [ ! -e vendor-pkg ] &&
        [ \"\$(cat node_modules/back/lib/a.js)\" = p ] && $rn node_modules/back/lib/a.js src/a.js && [ \"\$(cat src/a.js)\" = p ]"
[[ ! -e $LT_WS/vendor-pkg ]] || lt_fail "vendor-pkg, renamed into node_modules/ inside, is still on the host"
lt_assert_eq "the inode of node_modules/back in ignored state (vendor-pkg's)" "$pkg_ino" "$(stat -c %i "$(state_of back)")"
lt_assert_eq "src/a.js on the host, renamed out of a directory that went into node_modules/" p "$(cat "$LT_WS/src/a.js")"
no_temporary
lt_log "ok: on one file system a move between the sides is one rename: the same inodes, nothing copied"

# A host directory that something protected lies below (in the view's
# Domain state) stays where it is on a rename into ignored state, as on its
# own side (EXDEV): moved whole, its protected state would stay behind and
# show again in a new directory of its name. mv copies it through the view.
expect_inside "a protected file below a host directory" \
        'mkdir -p src/scratch2/.vscode && echo "{}" >src/scratch2/.vscode/settings.json && echo k >src/scratch2/keep'
out=$(inside "$rn src/scratch2 node_modules/scratch2" 2>&1) &&
        lt_fail "rename(2) moved a host directory with protected state below it into ignored state"
grep -q "cross-device" <<<"$out" || lt_fail "rename(2) of a host directory with protected state below it: expected EXDEV, got: $out"
expect_inside "mv of it into node_modules/, and a new directory of its name" \
        'mv src/scratch2 node_modules/scratch2 && [ "$(cat node_modules/scratch2/.vscode/settings.json)" = "{}" ] &&
         [ "$(cat node_modules/scratch2/keep)" = k ] && mkdir src/scratch2 && [ ! -e src/scratch2/.vscode ] &&
         [ ! -e src/scratch2/keep ] && rmdir src/scratch2'
[[ ! -e $LT_WS/src/scratch2 ]] || lt_fail "src/scratch2 is still on the host after its mv into node_modules/ and rmdir"
lt_log "ok: a host directory with protected state below it moves into ignored state by mv's copy, leaving nothing behind"

# What the rule keeps off the host does not reach it by a move out of
# ignored state: a nested repository made in node_modules/ with a
# core.fsmonitor, moved to the shared side and added as a gitlink (the
# issue's second attack), and a .vscode/tasks.json in a moved directory.
# rename(2) answers EXDEV for such a tree; mv then copies it entry by
# entry through the view, which puts each on its side.
pwned=$HOME/lt-move-pwned
rm -f "$pwned"
expect_inside "a nested repository and a .vscode/ made in node_modules/" \
        "mkdir -p node_modules/evil node_modules/tools/.vscode && cd node_modules/evil && git init -q &&
         echo x >x && git add x && git -c user.name=a -c user.email=a@example.invalid commit -q -m x &&
         git config core.fsmonitor 'touch $pwned' && echo '{}' >../tools/.vscode/tasks.json && echo t >../tools/t"
out=$(inside "$rn node_modules/evil vendor-evil" 2>&1) && lt_fail "rename(2) moved a tree holding a git dir's config out of ignored state"
grep -q "cross-device" <<<"$out" || lt_fail "rename(2) of a tree holding a git dir's config: expected EXDEV, got: $out"
out=$(inside "$rn node_modules/tools vendor-tools" 2>&1) && lt_fail "rename(2) moved a tree holding .vscode/ out of ignored state"
grep -q "cross-device" <<<"$out" || lt_fail "rename(2) of a tree holding .vscode/: expected EXDEV, got: $out"
# mv's copy would write the nested repository's index and its objects in
# place, which the view refuses (issue 32: an index changes only by git's
# rename of index.lock, which is judged; an object's file only by git's
# rename onto its name, which is checked); so it goes without its index
# and objects, git repack brings the objects in by its renames, and git
# reset makes the index again where it landed.
out=$(inside "mv node_modules/evil vendor-evil" 2>&1) && lt_fail "mv of a repository with its index succeeded: $out"
[[ $out == *"vendor-evil/.git/"*"not permitted"* ]] || lt_fail "mv of a repository with its index failed otherwise: $out"
expect_inside "mv of both trees (the repository without its index and objects), and the repository added as a gitlink" \
        "rm -rf vendor-evil /tmp/evil-objects && rm node_modules/evil/.git/index &&
         mv node_modules/evil/.git/objects /tmp/evil-objects && mv node_modules/evil vendor-evil &&
         mkdir vendor-evil/.git/objects && GIT_ALTERNATE_OBJECT_DIRECTORIES=/tmp/evil-objects git -C vendor-evil repack -adq &&
         git -C vendor-evil reset -q && mv node_modules/tools vendor-tools && [ -f vendor-tools/.vscode/tasks.json ] &&
         [ \"\$(git -C vendor-evil config --local core.fsmonitor)\" = 'touch $pwned' ] && git add vendor-evil"
[[ ! -e $LT_WS/vendor-evil/.git/config ]] || lt_fail "the moved repository's config is on the host: $(cat "$LT_WS/vendor-evil/.git/config")"
[[ ! -e $LT_WS/vendor-tools/.vscode/tasks.json ]] || lt_fail "the moved .vscode/tasks.json is on the host"
lt_assert_eq "vendor-tools/t on the host" t "$(cat "$LT_WS/vendor-tools/t")"
hgit status >/dev/null 2>&1 || true
hgit -C vendor-evil status >/dev/null 2>&1 || true
[[ ! -e $pwned ]] || lt_fail "host git ran the core.fsmonitor of a repository moved out of ignored state"
hgit rm -q --cached vendor-evil >/dev/null 2>&1 || true
rm -rf "$LT_WS/vendor-evil" "$LT_WS/vendor-tools"
lt_log "ok: a git dir's config and a .vscode/ in a tree moved out of ignored state stay in Domain state; host git ran nothing"
rm -f "$LT_WS/src/big" "$LT_WS/src/a.js"

# --- Domain state on another file system: copied, renamed into place, the source removed.
restart
rm -rf "$shm"
mkdir -m 0700 "$shm" || lt_fail "cannot make $shm"
[[ $(stat -c %d "$shm") != $(stat -c %d "$LT_WS") ]] || lt_fail "$shm is on the workspace's file system"
config "$shm"
sum=$(inside 'mkdir -p node_modules && i=0; while [ $i -lt 2000 ]; do echo "line $i of the file"; i=$((i + 1)); done >node_modules/big &&
        dd if=/dev/zero bs=1M count=32 2>/dev/null >>node_modules/big && sha256sum node_modules/big | cut -d" " -f1') ||
        lt_fail "cannot write node_modules/big inside: $sum"
expect_inside "a file renamed out of node_modules/ across file systems" "$rn node_modules/big src/big && [ ! -e node_modules/big ]"
lt_assert_eq "the content of src/big on the host" "$sum" "$(sha256sum <"$LT_WS/src/big" | cut -d' ' -f1)"
lt_assert_eq "the mode of src/big on the host" 644 "$(stat -c %a "$LT_WS/src/big")"
no_temporary

# A directory moving across file systems, with appends below it meanwhile.
inside "mkdir -p node_modules/tree || exit 1
        for k in 1 2 3 4; do dd if=/dev/zero of=node_modules/tree/big\$k bs=1M count=32 2>/dev/null || exit 1; done
        : >node_modules/tree/log; : >/tmp/ok
        $rn node_modules/tree vendor-tree & p=\$!
        i=0; while kill -0 \$p 2>/dev/null; do
                i=\$((i + 1)); echo \$i 2>/dev/null >>node_modules/tree/log && echo \$i >>/tmp/ok
        done
        wait \$p && [ ! -e node_modules/tree ] && cat /tmp/ok" >"$HOME/lt-move-ok" 2>"$HOME/lt-move-err" ||
        lt_fail "the directory move inside failed: $(cat "$HOME/lt-move-err")"
for k in 1 2 3 4; do
        lt_assert_eq "the size of vendor-tree/big$k on the host" 33554432 "$(stat -c %s "$LT_WS/vendor-tree/big$k")"
done
lost=$(grep -vxF -f "$LT_WS/vendor-tree/log" "$HOME/lt-move-ok" | head -3 | tr '\n' ' ') || true
[[ -z $lost ]] || lt_fail "appends below a moving directory that succeeded inside are not in the moved file on the host: $lost"
lt_log "ok: a directory moved across file systems keeps each of the $(wc -l <"$HOME/lt-move-ok") appends below it that succeeded"

# A stop in the middle of a long copy, while the host changes the target
# directory: the view's notification of that change waits for the
# directory's lock, which the rename holds until the view answers it. The
# stop kills the view; the kernel must then end the rename, so that the
# scope stops and the next launch can make it again. (With notifications
# from a thread of the view, both waited for good.)
rm -f "$LT_WS/src/host-during"
inside "dd if=/dev/zero of=node_modules/huge bs=1M count=1024 2>/dev/null && sync" >/dev/null 2>&1 ||
        lt_fail "cannot write node_modules/huge inside"
inside "$rn node_modules/huge src/huge" >"$HOME/lt-move-stopped" 2>&1 &
launch=$!
for _ in $(seq 1 600); do
        compgen -G "$LT_WS/src/.lazaret-rename.*" >/dev/null && break
        sleep 0.01
done
compgen -G "$LT_WS/src/.lazaret-rename.*" >/dev/null || lt_fail "the copy of node_modules/huge never began in src/"
echo host >"$LT_WS/src/host-during"
sleep 0.3
compgen -G "$LT_WS/src/.lazaret-rename.*" >/dev/null || lt_fail "the copy of node_modules/huge ended before the stop"
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
lt_wait_inactive
wait "$launch" || true
scope=lazaret-$LT_DOMAIN-sandbox.scope
for _ in $(seq 1 100); do
        [[ $(systemctl --user is-active "$scope" 2>/dev/null) == active ]] || break
        sleep 0.1
done
[[ $(systemctl --user is-active "$scope" 2>/dev/null) != active ]] ||
        lt_fail "$scope is still active 10 s after the Domain stopped in the middle of a copy: $(systemctl --user status "$scope" 2>&1 | tail -5)"
expect_inside "a launch after a stop in the middle of a copy" '[ -s node_modules/huge ] && [ "$(cat src/host-during)" = host ]'
find "$LT_WS/src" -name '.lazaret-rename.*' -delete
lt_log "ok: a stop in the middle of a long copy stops the scope, and the next launch starts"

# Back into ignored state: off the host, kept across a restart.
expect_inside "a directory renamed into node_modules/ across file systems" \
        "$rn vendor-tree node_modules/tree2 && [ -s node_modules/tree2/big4 ] && [ ! -e vendor-tree ]"
[[ ! -e $LT_WS/vendor-tree && ! -e $LT_WS/node_modules/tree2 ]] ||
        lt_fail "vendor-tree, renamed into node_modules/ inside, is still on the host"
no_temporary
restart
expect_inside "node_modules/tree2 after a Domain restart" '[ -s node_modules/tree2/big4 ] && [ -f node_modules/tree2/log ]'
lt_log "ok: across file systems a move between the sides is a whole copy, renamed into place, the source removed"

restart
config
rm -rf "$shm" "$LT_WS/src/big"
lt_log "ok: renames between the sides, on one file system and across two"
