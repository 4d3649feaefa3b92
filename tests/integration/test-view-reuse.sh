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
# In one sandbox, a few rounds of:
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

rounds=${LT_REUSE_ROUNDS:-4}
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
