#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-objects (issue 32): what is filed under an object's name in the
# shared object store is that object. The host's git reads a loose object,
# or an object of a pack through the pack's index, by its name without
# hashing it. In a real sandbox (the busybox image plus the host's git):
#   - inside, another object's bytes renamed onto a commit's name (git's own
#     way: a temporary file, then a rename), onto a new name, copied or
#     linked there, and an object written and truncated in place: each is
#     refused, the Domain's log names the path and why, and the host's
#     cat-file and fsck see the objects as they were;
#   - inside, a pack index whose entries for two commits are swapped (their
#     CRCs too, its checksum made right) renamed onto the pack's index, and
#     a pack copied in under a pack's name: refused; the host's index is
#     unchanged byte for byte and a host checkout writes the commit's own tree;
#   - legitimate use inside: git commit, git fetch of a pack from a local
#     bare repository, git gc, git repack -ad, git clone --no-local; the
#     host's git fsck --full is clean afterwards and reads what was fetched;
#     a git clone of a local path, which copies the objects, is refused.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image
lt_reset_view_state
command -v python3 >/dev/null || lt_skip "python3 is not installed on the host"

hg() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root GIT_AUTHOR_NAME=in GIT_AUTHOR_EMAIL=in@example.invalid \
                GIT_COMMITTER_NAME=in GIT_COMMITTER_EMAIL=in@example.invalid /bin/sh -c "cd /workspace && $1" </dev/null
}
expect_inside() {       # expect_inside WHAT COMMAND: must succeed
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}
refused_inside() {      # refused_inside WHAT COMMAND: must fail
        local out
        if out=$(inside "$2" 2>&1); then
                lt_fail "$1 succeeded inside: $out"
        fi
        lt_log "ok: $1 is refused inside: $(tr '\n' ' ' <<<"$out" | cut -c1-200)"
}
log_since() { tail -n +"$1" "$LT_LOGDIR/$LT_DOMAIN.log" 2>/dev/null; }
log_mark() { echo $(($(wc -l <"$LT_LOGDIR/$LT_DOMAIN.log" 2>/dev/null || echo 0) + 1)); }
log_says() {            # log_says FROM TEXT
        local line
        for _ in $(seq 1 20); do
                line=$(log_since "$1" | grep -F "$2" || true)
                [[ -n $line ]] && break
                sleep 0.1
        done
        [[ -n $line ]] || lt_fail "the Domain's log does not say '$2': $(log_since "$1" | tail -n 5)"
        lt_log "ok: the Domain's log says: $(head -n1 <<<"$line")"
}
obj() { echo ".git/objects/${1:0:2}/${1:2}"; }
host_intact() {         # host_intact WHAT: the host's git sees the history as it was
        lt_assert_eq "$1: the host's HEAD is a commit" commit "$(hg cat-file -t "$head")"
        lt_assert_eq "$1: the host's HEAD's tree" "$tree" "$(hg rev-parse "$head^{tree}")"
        lt_assert_eq "$1: the host's HEAD~1's tree" "$tree1" "$(hg rev-parse "$head1^{tree}")"
        hg fsck --full --no-dangling >/dev/null 2>&1 || lt_fail "$1: the host's git fsck: $(hg fsck --full 2>&1 | tail -n 3)"
        lt_log "ok: $1: the host's cat-file and fsck see the objects as they were"
}

# ---------------------------------------------------------------- the repository
hg config gc.auto 0
for i in 1 2 3 4 5; do
        seq 1 $((200 * i)) >"$LT_WS/a.txt"
        echo "$i" >"$LT_WS/b.txt"
        hg add a.txt b.txt
        hg commit -q -m "c$i"
done
head=$(hg rev-parse HEAD)
head1=$(hg rev-parse HEAD~1)
tree=$(hg rev-parse HEAD^{tree})
tree1=$(hg rev-parse HEAD~1^{tree})
# A name the repository does not hold: the blob "evil\n".
new=$(echo evil | git hash-object --stdin)
# A bare repository to fetch from, with more objects than fetch.unpackLimit.
remote=$LT_WS/remote.git
git init -q --bare "$remote"
git clone -q "$remote" "$HOME/lt-obj-src" 2>/dev/null
for i in $(seq 1 60); do
        echo "$i" >"$HOME/lt-obj-src/f$i"
        git -C "$HOME/lt-obj-src" add "f$i"
        git -C "$HOME/lt-obj-src" -c user.name=r -c user.email=r@example.invalid commit -q -m "r$i"
done
git -C "$HOME/lt-obj-src" push -q origin HEAD:refs/heads/other
rm -rf "$HOME/lt-obj-src"
# A copy an earlier run of the view left staged (it stopped while the file was written): swept at start.
mkdir -p "$LT_WS/.git/objects/ab" && echo partial >"$LT_WS/.git/objects/ab/tmp_obj_lazaret.1.1"
lt_keeper_start "$HOME/lt-obj-launch"
for _ in $(seq 1 50); do [[ -e $LT_WS/.git/objects/ab/tmp_obj_lazaret.1.1 ]] || break; sleep 0.1; done
[[ ! -e $LT_WS/.git/objects/ab/tmp_obj_lazaret.1.1 ]] || lt_fail "a staged copy an earlier run left is still there after the start"
lt_log "ok: a staged copy an earlier run left is removed at start"

# ---------------------------------------------------------------- 1. forged loose objects
from=$(log_mark)
refused_inside "the tree's bytes renamed onto the commit's name" \
        "cp $(obj "$tree") .git/objects/${head:0:2}/tmp_obj_forged && mv -f .git/objects/${head:0:2}/tmp_obj_forged $(obj "$head")"
log_says "$from" "refused a rename onto the object $(obj "$head"): its content is object $tree"
refused_inside "the tree's bytes renamed onto a new name" \
        "mkdir -p .git/objects/${new:0:2} && cp $(obj "$tree") .git/objects/${new:0:2}/tmp_obj_forged2 &&
         mv .git/objects/${new:0:2}/tmp_obj_forged2 $(obj "$new")"
hg cat-file -e "$new" 2>/dev/null && lt_fail "the forged object $new reached the host"
# A copy under an object's name is staged until whole: the tree's bytes under another name are refused
# at the write that makes them whole.
refused_inside "the tree's file copied under a new name" "cp $(obj "$tree") $(obj "$new")"
log_says "$from" "refused a copy under the object $(obj "$new"): its content is object $tree"
[[ -z $(ls "$LT_WS/.git/objects/${new:0:2}/" | grep _lazaret.) ]] || lt_fail "a refused copy's temporary file is left on the host"
# Written slowly: the host never sees the name while it is written (it is staged under git's kind of
# temporary name), nor after it is refused.
slow_copy() {           # slow_copy FILE NAME: FILE's first 10 bytes, a pause, the rest, to NAME inside
        inside "mkdir -p $(dirname "$2") && { head -c 10 $1; sleep 3; tail -c +11 $1; } > $2" >"$HOME/lt-obj-slow.out" 2>&1
}
host_polls() {          # host_polls PID NAME [WHOLE]: NAME never on the host while PID runs (or, given the
                        # WHOLE file, never but with all its bytes: a right copy lands at its last write,
                        # which may come before the writer inside has exited); a staged temporary seen
        local staged=
        while kill -0 "$1" 2>/dev/null; do
                if [[ -e $LT_WS/$2 ]]; then
                        [[ -n ${3:-} ]] && cmp -s "$LT_WS/$2" "$3" ||
                                lt_fail "the host saw $2 while it was written inside"
                fi
                ls "$LT_WS/$(dirname "$2")" 2>/dev/null | grep -q '^tmp_.*_lazaret\.' && staged=1
                sleep 0.05
        done
        [[ -n $staged ]] || lt_fail "no staged temporary file seen on the host while $2 was written: $(cat "$HOME/lt-obj-slow.out")"
}
from=$(log_mark)
slow_copy "$(obj "$tree")" "$(obj "$new")" &
host_polls $! "$(obj "$new")"
wait $! && lt_fail "a slow copy of the tree's bytes under a new name succeeded inside: $(cat "$HOME/lt-obj-slow.out")"
[[ -e $LT_WS/$(obj "$new") ]] && lt_fail "the forged object $new reached the host after its slow copy"
log_says "$from" "refused a copy under the object $(obj "$new"): its content is object $tree"
lt_log "ok: a forged object written slowly inside is never on the host and is refused at its last write"
# The same, an object's own bytes: in place once whole, only then.
legit=$(echo legit | git hash-object --stdin)
python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(b"blob 6\0legit\n"))' >"$LT_WS/legit.obj"
slow_copy legit.obj "$(obj "$legit")" &
host_polls $! "$(obj "$legit")" "$LT_WS/legit.obj"
wait $! || lt_fail "a slow copy of an object under its name failed inside: $(cat "$HOME/lt-obj-slow.out")"
lt_assert_eq "the object copied in slowly, on the host" legit "$(hg cat-file -p "$legit")"
rm -f "$LT_WS/legit.obj" "$LT_WS/$(obj "$legit")"
lt_log "ok: an object written slowly inside is on the host once whole, checked"
refused_inside "the tree's file linked under a new name" \
        "ln .git/objects/${new:0:2}/tmp_obj_forged2 $(obj "$new")"
refused_inside "a loose object's file linked elsewhere" "ln $(obj "$head") head-link"
refused_inside "a byte appended to the commit's file" "echo x >> $(obj "$head")"
log_says "$from" "refused a write in place to $(obj "$head")"
sum=$(sha256sum <"$LT_WS/$(obj "$head")")
# gVisor reports busybox truncate's refused ftruncate as done (its own size, not the host's): what counts is the host's file.
out=$(inside "truncate -s 0 $(obj "$head"); : > $(obj "$head")" 2>&1) || true
log_says "$from" "refused a truncation of $(obj "$head")"
lt_assert_eq "the commit's file on the host after truncate and an open with O_TRUNC inside ($out)" "$sum" \
        "$(sha256sum <"$LT_WS/$(obj "$head")")"
hg cat-file -e "$new" 2>/dev/null && lt_fail "the forged object $new reached the host"
rm -f "$LT_WS/.git/objects/${new:0:2}/tmp_obj_forged2"
host_intact "the forged loose objects"

# ---------------------------------------------------------------- 2. legitimate use: commit, fetch, gc, repack
expect_inside "git commit, git fetch of a pack from a local bare repository, git gc, git repack -ad" \
        "echo inside > c.txt && git add c.txt && git commit -q -m inside &&
         git -c fetch.unpackLimit=1 fetch -q --upload-pack='git upload-pack' /workspace/remote.git other:refs/remotes/r/other &&
         ls .git/objects/pack/*.idx >/dev/null && git gc -q &&
         git -c pack.writeReverseIndex=true -c repack.writeBitmaps=true repack -adq && ls .git/objects/pack/*.rev >/dev/null &&
         git fsck --no-dangling"
lt_assert_eq "the commit made inside, on the host" inside "$(hg log -1 --format=%s)"
lt_assert_eq "what was fetched inside, on the host" r60 "$(hg log -1 --format=%s r/other)"
hg fsck --full --no-dangling >/dev/null 2>&1 || lt_fail "the host's git fsck after the work inside: $(hg fsck --full 2>&1 | tail -n 3)"
[[ -z $(ls "$LT_WS"/.git/objects/pack/*.rev "$LT_WS"/.git/objects/pack/*.bitmap 2>/dev/null) ]] ||
        lt_fail "a reverse index or bitmap written inside reached the host"
lt_log "ok: the host's git fsck --full is clean and reads what was fetched inside"
# A clone of a local path links its objects, and copies them when that is refused: both are refused.
expect_inside "git clone --no-local of the local bare repository" \
        "git clone -q --no-local --upload-pack='git upload-pack' /workspace/remote.git cloned &&
         git -C cloned log -1 --format=%s origin/other >/dev/null"
git -C "$LT_WS/cloned" fsck --no-dangling >/dev/null 2>&1 || lt_fail "the host's git fsck of the clone made inside"
# A clone of a local path links its objects, and copies them when that is refused: the copies are
# staged and checked. So is a repository copied in with cp -r (its pack's index may come before the
# pack: it waits for it; its .git/index is refused, as a creation of an index in place is) and one
# from outside the workspace (a local clone in the sandbox's /tmp).
expect_inside "git clone of a local path, cp -r of a repository, git clone from outside the workspace" \
        "git clone -q --upload-pack='git upload-pack' /workspace/remote.git cloned-local &&
         git clone -q --no-local --upload-pack='git upload-pack' /workspace/remote.git /tmp/lt-src &&
         echo more > /tmp/lt-src/more && git -C /tmp/lt-src add more && git -C /tmp/lt-src commit -q -m more &&
         { cp -r /tmp/lt-src copied 2>/tmp/lt-cp.err || ! grep -v 'copied/.git/index' /tmp/lt-cp.err; } &&
         git clone -q --upload-pack='git upload-pack' /tmp/lt-src cloned-outside && rm -rf /tmp/lt-src &&
         git -C copied log -1 --format=%s >/dev/null && git -C cloned-outside log -1 --format=%s >/dev/null"
for r in cloned-local copied cloned-outside; do
        git -C "$LT_WS/$r" fsck --full --no-dangling >/dev/null 2>&1 ||
                lt_fail "the host's git fsck --full of $r: $(git -C "$LT_WS/$r" fsck --full 2>&1 | tail -n 3)"
        git -C "$LT_WS/$r" log --all --format=%s >/dev/null 2>&1 || lt_fail "the host's git log of $r"
        [[ -z $(find "$LT_WS/$r/.git/objects" -name 'tmp_*_lazaret.*') ]] || lt_fail "staged temporaries left in $r"
done
lt_assert_eq "the commit copied in by cp -r, on the host" more "$(git -C "$LT_WS/copied" log -1 --format=%s)"
lt_assert_eq "the clone from outside, on the host" more "$(git -C "$LT_WS/cloned-outside" log -1 --format=%s)"
lt_assert_eq "the local clone, on the host" r60 "$(git -C "$LT_WS/cloned-local" log -1 --format=%s origin/other)"
lt_log "ok: repositories copied in by git clone of a local path and cp -r: the host's fsck --full and log are clean"
rm -rf "$LT_WS/cloned" "$LT_WS/cloned-local" "$LT_WS/copied" "$LT_WS/cloned-outside"
head=$(hg rev-parse HEAD~1)     # the tests below: the host's history, now in one pack
head1=$(hg rev-parse HEAD~2)
tree=$(hg rev-parse HEAD~1^{tree})
tree1=$(hg rev-parse HEAD~2^{tree})
hg checkout -q HEAD~1 -- . && hg checkout -q HEAD -- .

# ---------------------------------------------------------------- 3. a forged pack index
pack=$(ls "$LT_WS"/.git/objects/pack/pack-*.pack)
[[ $(wc -l <<<"$pack") == 1 ]] || lt_fail "not one pack after git repack -ad: $pack"
idx=${pack%.pack}.idx
idx_sha=$(sha256sum <"$idx")
# The index with the entries of HEAD~1's and HEAD~2's a.txt swapped (offsets and CRCs), its checksum
# made right. (git hashes the commit and the top tree a command names, parse_object(), but not the
# blobs and subtrees it reads below them: a checkout writes what the index files under a blob's name.)
blob=$(hg rev-parse "$head:a.txt")
blob1=$(hg rev-parse "$head1:a.txt")
python3 - "$idx" "$LT_WS/forged.idx" "$blob" "$blob1" <<'PY'
import hashlib, struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
n = struct.unpack('>I', d[8 + 1020:8 + 1024])[0]
names = [bytes(d[8 + 1024 + 20 * i:8 + 1024 + 20 * (i + 1)]) for i in range(n)]
a, b = names.index(bytes.fromhex(sys.argv[3])), names.index(bytes.fromhex(sys.argv[4]))
for t in (8 + 1024 + 20 * n, 8 + 1024 + 24 * n):
    x, y = t + 4 * a, t + 4 * b
    d[x:x + 4], d[y:y + 4] = d[y:y + 4], d[x:x + 4]
d[-20:] = hashlib.sha1(bytes(d[:-20])).digest()
open(sys.argv[2], 'wb').write(d)
PY
# The forgery works on git that trusts it: a checkout of HEAD~1 from a copy of the repository with it
# writes HEAD~2's a.txt.
rm -rf "$HOME/lt-obj-copy" "$HOME/lt-obj-wt" && cp -a "$LT_WS/.git" "$HOME/lt-obj-copy" && mkdir "$HOME/lt-obj-wt"
cp -f "$LT_WS/forged.idx" "$HOME/lt-obj-copy/objects/pack/$(basename "$idx")"
git --git-dir="$HOME/lt-obj-copy" --work-tree="$HOME/lt-obj-wt" checkout -q -f "$head" -- a.txt 2>/dev/null || true
[[ $(sha256sum <"$HOME/lt-obj-wt/a.txt" 2>/dev/null) == "$(hg show "$head1:a.txt" | sha256sum)" ]] ||
        lt_fail "the forged index does not make git check out another a.txt (the test's forgery is wrong)"
rm -rf "$HOME/lt-obj-copy" "$HOME/lt-obj-wt"
lt_log "ok: the forged index makes a git that trusts it check out HEAD~2's a.txt for HEAD~1"
from=$(log_mark)
refused_inside "the forged index renamed onto the pack's index" \
        "cp forged.idx .git/objects/pack/tmp_idx_forged && mv -f .git/objects/pack/tmp_idx_forged .git/objects/pack/$(basename "$idx")"
log_says "$from" "refused a rename onto the pack index .git/objects/pack/$(basename "$idx"): the index files object"
refused_inside "the forged index copied over the pack's index" "cp forged.idx .git/objects/pack/$(basename "$idx")"
refused_inside "a pack copied in under a pack's name" \
        "cp .git/objects/pack/$(basename "$pack") .git/objects/pack/pack-$head.pack"
refused_inside "a pack renamed onto a name that is not its checksum" \
        "cp .git/objects/pack/$(basename "$pack") .git/objects/pack/tmp_pack_x && mv .git/objects/pack/tmp_pack_x .git/objects/pack/pack-$head.pack"
# Copied in: a pack lands once whole; the forged index under its index's name is refused at its last
# write, the pack's own index then lands; an index copied before its pack waits for it.
from=$(log_mark)
refused_inside "the forged index copied in next to a copy of its pack" \
        "mkdir -p fk/objects/pack && cp .git/objects/pack/$(basename "$pack") fk/objects/pack/ &&
         cp forged.idx fk/objects/pack/$(basename "$idx")"
log_says "$from" "refused a copy under the pack index fk/objects/pack/$(basename "$idx"): the index files object"
[[ -e $LT_WS/fk/objects/pack/$(basename "$idx") ]] && lt_fail "the forged index copied in reached the host"
lt_assert_eq "the pack copied in, on the host" "$(sha256sum <"$pack")" "$(sha256sum <"$LT_WS/fk/objects/pack/$(basename "$pack")")"
expect_inside "the pack's own index copied in; an index copied before its pack" \
        "cp .git/objects/pack/$(basename "$idx") fk/objects/pack/ && mkdir -p fk2/objects/pack &&
         cp .git/objects/pack/$(basename "$idx") fk2/objects/pack/ && cp .git/objects/pack/$(basename "$pack") fk2/objects/pack/"
for d in fk fk2; do
        lt_assert_eq "the index copied into $d, on the host" "$idx_sha" "$(sha256sum <"$LT_WS/$d/objects/pack/$(basename "$idx")")"
done
rm -rf "$LT_WS/fk" "$LT_WS/fk2"
lt_log "ok: a forged index copied in is refused; a pack and its index copied in land, in either order"
# The temporary name of a staged index can be looked up inside: a forged index renamed onto it while the
# index waits for its pack is not what lands when the pack comes (the check read the file staged).
from=$(log_mark)
rm -f "$LT_WS/lt-staged-name"
(
        for _ in $(seq 1 400); do
                t=$(ls "$LT_WS/fk3/objects/pack" 2>/dev/null | grep '^tmp_idx_lazaret\.' | head -n1 || true)
                if [[ -n $t ]]; then
                        echo "$t" >"$LT_WS/lt-staged-name.new" && mv "$LT_WS/lt-staged-name.new" "$LT_WS/lt-staged-name"
                        break
                fi
                sleep 0.05
        done
) &
poller=$!
out=$(inside "mkdir -p fk3/objects/pack && cp .git/objects/pack/$(basename "$idx") fk3/objects/pack/ &&
              for i in \$(seq 1 200); do [ -s lt-staged-name ] && break; sleep 0.1; done &&
              cp forged.idx fk3/objects/pack/x && mv -f fk3/objects/pack/x fk3/objects/pack/\$(cat lt-staged-name) &&
              cp .git/objects/pack/$(basename "$pack") fk3/objects/pack/" 2>&1) ||
        lt_fail "the forged index's rename onto a staged index's temporary name failed inside: $out"
wait "$poller"
[[ -s $LT_WS/lt-staged-name ]] || lt_fail "no staged temporary file of the index seen on the host"
if [[ -e $LT_WS/fk3/objects/pack/$(basename "$idx") ]]; then
        lt_assert_eq "the index copied into fk3, on the host" "$idx_sha" "$(sha256sum <"$LT_WS/fk3/objects/pack/$(basename "$idx")")"
fi
log_says "$from" "refused a copy under the pack index fk3/objects/pack/$(basename "$idx"): its temporary name leads to another file"
rm -rf "$LT_WS/fk3" "$LT_WS/lt-staged-name"
lt_log "ok: a forged index renamed onto a staged index's temporary name does not land"
rm -f "$LT_WS/.git/objects/pack/tmp_idx_forged" "$LT_WS/.git/objects/pack/tmp_pack_x" "$LT_WS/forged.idx"
lt_assert_eq "the host's pack index after the forgeries" "$idx_sha" "$(sha256sum <"$idx")"
host_intact "the forged pack index"
branch=$(hg symbolic-ref --short HEAD)
hg checkout -q --detach "$head" || lt_fail "the host's checkout of HEAD~1 failed"
lt_assert_eq "the tree a host checkout of HEAD~1 writes" "$tree" "$(hg write-tree)"
lt_assert_eq "a.txt a host checkout of HEAD~1 writes" "$(hg show "$head:a.txt" | sha256sum)" "$(sha256sum <"$LT_WS/a.txt")"
hg checkout -q "$branch"
lt_assert_eq "the workspace's repository after all that" "" "$(hg status --porcelain --untracked-files=no)"
