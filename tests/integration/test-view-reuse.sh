#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-reuse: a host object the sandbox still holds is deleted on the
# host, and the host file system gives its inode number to a new object
# (ext4 hands out the lowest free inode of the group): the view must not
# take the new object for the old one. The reproduction that found it: a
# host `git repack -a -d` of the workspace deletes the old packs, which
# git inside had read (gVisor keeps their dentries, so the kernel keeps
# their nodes); the next `git init` inside made a directory with a pack's
# inode number, which the view answered with the pack's node, a file's,
# which holds no directory fd: "Invalid path '/workspace/n/.git': Bad file
# descriptor", or "unable to create temporary file: Bad file descriptor".
# First, a file held open inside on a descriptor (exec 3<), deleted on the
# host, its inode number given to a new file (made until one gets it),
# which is renamed to the deleted one's name or looked up inside under its
# own: a read through the descriptor must fail (ESTALE) or return the old
# data, never the new file's (before the view compared birth times, it
# returned the new file's data in both cases).
# Then, in one sandbox, a few rounds of:
#   - the host commits and packs (git repack -d) a few times;
#   - git inside reads every pack (and the host's files in pool/);
#   - the host repacks all (git repack -a -d) and deletes the files in pool/;
#   - inside, `git init` of nested repositories, directories and files
#     made in them and in pool/, a commit in each, and listings: all succeed.
# The inode numbers that came back are counted on the host, so the log
# says whether the case was met.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image
lt_reset_view_state

hg() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root GIT_AUTHOR_NAME=in GIT_AUTHOR_EMAIL=in@example.invalid \
                GIT_COMMITTER_NAME=in GIT_COMMITTER_EMAIL=in@example.invalid /bin/sh -c "cd /workspace && $1" </dev/null
}
expect_inside() {       # expect_inside WHAT COMMAND: must succeed
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        [[ $out != *"Bad file descriptor"* ]] || lt_fail "$1 inside: $out"
}

echo base >"$LT_WS/base.txt"
hg add base.txt
hg commit -q -m base
hg config gc.auto 0
mkdir -p "$LT_WS/pool"
lt_keeper_start

# held_case K HOW: inside, a file held open on descriptor 3 (exec 3<) and
# not read yet; on the host, the file deleted and new files made until one
# gets its inode number (ext4 hands out the lowest free one, so at once,
# unless another process on the machine frees a lower one or takes it: up
# to 2000 files, in up to 3 attempts, and the test fails if it never comes
# back); then inside, a read through descriptor 3 must not return the new
# file's data: an error (ESTALE, EIO) or the old data. HOW: "same", the
# new file renamed on the host to the deleted one's name (the view
# reaches a file by name), then also opened by that name inside, where
# gVisor still knows the deleted file's: it must read the new data; or
# "other", the new file under its own name, looked up inside (ls -l)
# before the read. Without the birth-time check both read the new file's
# data through descriptor 3; without the view's own inode number for the
# new file, "same" could not open it by name (ESTALE).
held_case() {
        local k=$1 how=$2 a
        for a in 1 2 3; do
                held_try "$k" "$how" "$k-$a" && return 0
        done
        lt_fail "held file $k: in 3 attempts, the host's file system gave the deleted file's inode number to none of 2000 new files"
}
# held_try K HOW NAME: one attempt of held_case in held-NAME/; 1: the number did not come back.
held_try() {
        local k=$1 how=$2 d=held-$3 out=$HOME/held-$3.out dir old ino i found= client lookup= by_name= fd3 named
        dir=$LT_WS/$d
        mkdir -p "$dir"
        echo "old data $k" >"$dir/victim"
        [[ $how == other ]] && lookup="ls -l /workspace/$d >/dev/null;"
        [[ $how == same ]] && by_name="echo by-name; cat /workspace/$d/victim; "'echo "name-status=$?"'
        : >"$out"
        (cd "$LT_WS" && exec lazaretctl launch -- /bin/sh -c "exec 3</workspace/$d/victim || exit 9; echo opened
                i=0; while [ ! -e /workspace/$d/go ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
                $lookup cat <&3; echo \"read-status=\$?\"; $by_name") >"$out" 2>&1 </dev/null &
        client=$!
        for _ in $(seq 1 150); do
                grep -qx opened "$out" && break
                sleep 0.1
        done
        grep -qx opened "$out" || lt_fail "held file $k: the process inside did not open it: $(cat "$out")"
        old=$(stat -c %i "$dir/victim")
        rm "$dir/victim"
        for i in $(seq 1 2000); do
                echo "NEW data $k.$i, never opened inside" >"$dir/c$i"
                ino=$(stat -c %i "$dir/c$i")
                if [[ $ino == "$old" ]]; then
                        found=$i
                        break
                fi
        done
        if [[ -z $found ]]; then
                : >"$dir/go"
                wait "$client" || true
                lt_log "held file $k ($how): inode number $old did not come back in 2000 new files"
                return 1
        fi
        [[ $how == same ]] && mv "$dir/c$found" "$dir/victim"
        : >"$dir/go"
        wait "$client" || true
        lt_log "held file $k ($how): inode $old back at new file $found; read inside: $(tr '\n' ';' <"$out")"
        fd3=$(sed '/^by-name$/,$d' "$out")
        named=$(sed -n '/^by-name$/,$p' "$out")
        [[ $fd3 == *read-status=* ]] || lt_fail "held file $k ($how): the process inside did not finish: $(cat "$out")"
        [[ $fd3 != *"NEW data"* ]] ||
                lt_fail "held file $k ($how): a read through a descriptor on the deleted file returned the new file's data: $(cat "$out")"
        [[ $fd3 == *"old data $k"* || $fd3 != *read-status=0* ]] ||
                lt_fail "held file $k ($how): the read succeeded with neither the old data nor an error: $(cat "$out")"
        if [[ $how == same ]]; then
                [[ $named == *name-status=0* && $named == *"NEW data $k"* ]] ||
                        lt_fail "held file $k ($how): the new file at the old name, opened by name inside, is not read: $(cat "$out")"
        fi
        return 0
}
held_case 1 same
held_case 2 other
lt_log "ok: reads through descriptors on deleted files whose inode numbers went to new files never returned the new files' data"

rounds=${LAZARET_TEST_REUSE_ROUNDS:-${LT_REUSE_ROUNDS:-4}}
met_dirs=0 met_all=0
for r in $(seq 1 "$rounds"); do
        # Packs and plain files of the host's, all read inside.
        for c in 1 2 3 4; do
                echo "$r.$c" >"$LT_WS/f$c.txt"
                hg add "f$c.txt"
                hg commit -q -m "round $r commit $c"
                hg repack -d -q
        done
        for p in $(seq 1 24); do echo "$r.$p" >"$LT_WS/pool/p$p"; done
        old=$(find "$LT_WS/.git/objects/pack" "$LT_WS/pool" -type f -printf '%i\n' | sort -u)
        expect_inside "round $r: git reads every pack, cat the pool" \
                "git log -p --all >/dev/null && git count-objects -v >/dev/null &&
                 cat .git/objects/pack/* pool/p* >/dev/null && ls -l .git/objects/pack pool >/dev/null"

        # The host deletes them; inside, new directories and files take their numbers.
        hg repack -a -d -q
        rm -f "$LT_WS"/pool/p*
        expect_inside "round $r: git init of nested repositories, directories and files after the host's repack" \
                "for k in 1 2 3 4 5 6; do
                        n=n$r-\$k
                        git init -q \$n && mkdir -p \$n/d/e pool/d$r-\$k/x && echo \$k > \$n/d/e/f &&
                        echo \$k > pool/d$r-\$k/x/f && echo \$k > pool/q$r-\$k &&
                        git -C \$n add -A && git -C \$n commit -q -m \$k && ls -la \$n/.git/refs/heads \$n/d/e >/dev/null &&
                        cat \$n/d/e/f pool/d$r-\$k/x/f pool/q$r-\$k >/dev/null || exit 1
                 done
                 git status --porcelain >/dev/null && git -C n$r-1 log --oneline >/dev/null"
        new_dirs=$(find "$LT_WS"/n"$r"-* "$LT_WS"/pool -type d -printf '%i\n' | sort -u)
        new_all=$(find "$LT_WS"/n"$r"-* "$LT_WS"/pool -printf '%i\n' | sort -u)
        d=$(comm -12 <(echo "$old") <(echo "$new_dirs") | grep -c . || true)
        a=$(comm -12 <(echo "$old") <(echo "$new_all") | grep -c . || true)
        met_dirs=$((met_dirs + d))
        met_all=$((met_all + a))
        lt_log "ok: round $r ($a of the deleted files' inode numbers came back, $d as directories)"
done
lt_log "over $rounds rounds, $met_all inode numbers of deleted files came back inside, $met_dirs as directories"
((met_all > 0)) || lt_log "note: the host's file system gave no deleted inode number back: the case was not met"

echo "PASS: new objects with the inode numbers of deleted ones the sandbox still held are new objects inside"
