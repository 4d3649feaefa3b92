#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-fsmonitor (issue 34 item 2; spec 4.6, "git asks the view"): git
# inside asks the workspace view what changed. In a real sandbox (the busybox image plus
# the host's git):
#   - git in /workspace runs Lazaret's hook (core.fsmonitor), which wins
#     over a repository's own setting (a nested one's, which the sandbox
#     wrote in Domain state), and git outside /workspace does not; the
#     hook answers "everything" for a token it did not give;
#   - randomized rounds of edits from both sides (create, modify, rename,
#     delete, mode change, directories, ignored and tracked paths, bursts,
#     host and sandbox at once): after each, `git status --porcelain`
#     inside with the fsmonitor equals the reference, taken after it by
#     `git --no-optional-locks -c core.fsmonitor= status --porcelain`,
#     which neither asks the hook nor removes the index's fsmonitor
#     extension; a repository nested in an ignored directory too;
#   - git's untracked cache is on inside (core.untrackedCache, with the
#     hook): the sandbox reads its index with its own untracked cache, which
#     git then uses (no directory read on a quiet status), while the host's
#     index never holds one (its identity names /workspace), checked after
#     every round by parsing the host's index, and the host's git status
#     never warns; once the host's index changes in place or is replaced
#     with other entries, the sandbox reads the host's file as it is, and
#     when the host's git status or commit replaced it with the same
#     entries, the host's file with the sandbox's last untracked cache and
#     token, which a quiet status then trusts (no directory read); each
#     round compares the default status (which uses the cache) and
#     --untracked-files=all with a reference that uses neither the hook nor
#     the cache; the rounds include .gitignore changes, a stage inside and
#     the host's own git add, commit, reset and status (which replace the
#     index), and count the host statuses after which the caches came back
#     (seen to fail in round 5 of seed 55555 with the entries' comparison
#     left out);
#   - the host's cached trees (TREE) survive the statuses inside;
#   - nothing in the host's git configuration names a program, after the
#     sandbox tried to set core.fsmonitor in the repository's config;
#   - a restart of the Domain (a new view) answers "everything changed" to
#     the last instance's token;
#   - the profile's git_fsmonitor = false: no hook, no configuration, git
#     inside scans as before.
# LT_FSMON_SEED picks the rounds' random choices (printed at the start), LT_FSMON_ROUNDS their
# number (10); through meson, LAZARET_TEST_FSMON_SEED and LAZARET_TEST_FSMON_ROUNDS.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image

# Through meson and the harness, which pass on only LAZARET_TEST_*: LAZARET_TEST_FSMON_SEED and _ROUNDS.
seed=${LT_FSMON_SEED:-${LAZARET_TEST_FSMON_SEED:-$((RANDOM * 32768 + RANDOM))}}
RANDOM=$seed
lt_log "random seed $seed (LT_FSMON_SEED=$seed repeats this run)"
rounds=${LT_FSMON_ROUNDS:-${LAZARET_TEST_FSMON_ROUNDS:-10}}

hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "cd /workspace && $1" </dev/null
}
igit='git -c user.name=in -c user.email=in@example.invalid'

# --- The host's repository ------------------------------------------------
printf '*.log\nbuild/\n' >"$LT_WS/.gitignore"
for d in 0 1 2 3 4 5; do
        mkdir -p "$LT_WS/d$d/sub"
        for f in 0 1 2 3 4 5 6 7; do
                echo "d$d f$f" >"$LT_WS/d$d/f$f.txt"
        done
        echo "d$d sub" >"$LT_WS/d$d/sub/s.txt"
done
mkdir -p "$LT_WS/build"
echo ignored >"$LT_WS/build/out.o"
echo ignored >"$LT_WS/top.log"
hgit add -A
hgit commit -q -m base

lt_keeper_start

# --- The configuration: inside /workspace only, Lazaret's wins --------------
out=$(inside 'git config --get core.fsmonitor; git config --get core.fsmonitorHookVersion') ||
        lt_fail "git config inside failed: $out"
lt_assert_eq "core.fsmonitor in /workspace" "/run/lazaret/fsmonitor
2" "$out"
out=$(inside 'git config --get core.untrackedCache') || lt_fail "git config inside failed: $out"
lt_assert_eq "core.untrackedCache in /workspace" "true" "$out"
out=$(inside 'git config --get core.preloadIndex') || lt_fail "git config inside failed: $out"
lt_assert_eq "core.preloadIndex in /workspace" "false" "$out"
out=$(inside 'mkdir -p /tmp/elsewhere && cd /tmp/elsewhere && git init -q && git config --get core.fsmonitor; echo "rc=$?"')
lt_assert_eq "core.fsmonitor of a repository outside /workspace" "rc=1" "$out"
lt_log "ok: the hook is git's fsmonitor in /workspace only"

# The hook itself: a token not its own gets "everything" and a token of its own.
hook_answer() {         # hook_answer TOKEN: "<token>|<first path>" as the hook answers
        inside "/run/lazaret/fsmonitor 2 '$1' | tr '\\0' '\\n' | head -n 2 | tr '\\n' '|'"
}
out=$(hook_answer "") || lt_fail "the hook failed"
[[ $out == lazaret:*:*:*'|/|' ]] || lt_fail "the hook's answer to git's first token: $out"
token=${out%%|*}
out=$(hook_answer "$token") || lt_fail "the hook failed"
[[ $out == "lazaret:"* && $out != *'|/|' ]] || lt_fail "the hook answered its own token with everything: $out"
lt_log "ok: the hook answers its own tokens, and everything to others"

# --- Rounds of edits from both sides -----------------------------------------
# Paths as the host sees them (listing()); the sandbox's edits are made by a script of the same
# operations. Drawn in this shell, not in subshells, so that the seed repeats a run.
files=() dirs=()
listing() {
        mapfile -t files < <(cd "$LT_WS" && find . -path ./.git -prune -o -type f -print | sed 's|^\./||' | sort)
        mapfile -t dirs < <(cd "$LT_WS" && find . -path ./.git -prune -o -type d -print | sed 's|^\./||; /^\.$/d' | sort)
}
# One operation as shell text in OP (or nothing), run at the workspace's root on either side.
op() {
        local f= d= n=$RANDOM
        if ((${#files[@]} > 0)); then f=${files[RANDOM % ${#files[@]}]}; fi
        if ((${#dirs[@]} > 0)); then d=${dirs[RANDOM % ${#dirs[@]}]}; fi
        OP=
        case $((RANDOM % 15)) in
        0 | 1) [[ -z $f ]] || OP="echo '$n' >>'$f'" ;;                                   # modify
        2) OP="echo new >'${d:-.}/n$n.txt'" ;;                                            # create
        3) [[ -z $f ]] || OP="rm -f '$f'" ;;                                              # delete
        4) [[ -z $f ]] || OP="mv '$f' '${d:-.}/r$n.txt'" ;;                               # rename
        5) [[ -z $f ]] || OP="chmod $((RANDOM % 2 ? 755 : 644)) '$f'" ;;                  # mode
        6) OP="mkdir -p 'm$n/x' && for i in 1 2 3 4 5; do echo \$i >'m$n/x/'\$i.txt; done" ;; # a new tree
        7) [[ -z $d || $d == build ]] || OP="rm -rf '$d'" ;;                              # a tree gone
        8) [[ -z $d || $d == build ]] || OP="mv '$d' 'moved$n'" ;;                        # a tree moved
        9) OP="echo '$n' >>top.log; mkdir -p build/b$n && echo '$n' >build/b$n/o.o" ;;    # ignored
        10) OP="for i in \$(seq 1 20); do echo \$i >>'burst$((n % 3)).txt'; done" ;;    # a burst
        11) [[ -z $f ]] || OP="printf 'same-size\\n' >'$f.tmp' && mv '$f.tmp' '$f'" ;;  # replaced
        12) case $((n % 4)) in                                                            # .gitignore
            0) OP="echo 'n${n: -1}*.txt' >>.gitignore" ;;
            1) OP="sed -i '\$d' .gitignore" ;;
            2) [[ -z $d || $d == build ]] || OP="echo 'r*.txt' >'$d/.gitignore'" ;;
            3) [[ -z $d || $d == build ]] || OP="rm -f '$d/.gitignore'" ;;
            esac ;;
        13) OP="mkdir -p 'u$((n % 5))/deep/er' && echo '$n' >'u$((n % 5))/deep/er/f.txt' && echo '$n' >'u$((n % 5))/x.log'" ;; # untracked trees, an ignored file in one
        14) [[ -z $d || $d == build ]] || OP="touch '$d/n$n.log' '$d/n$n.txt'" ;;        # ignored and not, side by side
        esac
        return 0
}
ops() {         # ops N: N operations in OPS, one per line, each tolerant of what the other side did meanwhile
        OPS=
        listing
        for ((i = 0; i < $1; i++)); do
                op
                if [[ -n $OP ]]; then OPS+="{ $OP; } 2>/dev/null || true"$'\n'; fi
        done
}
compare() {     # compare WHAT [DIR]: git status with the fsmonitor and untracked cache first, then the reference
        local dir=${2:-.} got want mode
        # The default mode uses the untracked cache (it holds that mode's flags); all files does not.
        for mode in normal all; do
                got=$(inside "cd '$dir' && git status --porcelain --untracked-files=$mode | sort") ||
                        lt_fail "$1: git status inside failed: $got"
                want=$(inside "cd '$dir' && git --no-optional-locks -c core.fsmonitor= -c core.untrackedCache=false status --porcelain --untracked-files=$mode | sort") ||
                        lt_fail "$1: the reference git status inside failed: $want"
                if [[ $got != "$want" ]]; then
                        diff <(echo "$want") <(echo "$got") >&2 || true
                        lt_fail "$1: git status -u$mode with the fsmonitor and untracked cache differs from the reference (above: - reference, + inside; seed $seed)"
                fi
        done
}
# Twice warm: git's first status records a token of its own, the second ours.
compare "warm-up"
compare "warm-up again"
out=$(inside 'git ls-files -f | cut -c1 | sort | uniq -c | tr -s " " | tr "\n" ","')
[[ $out == *" h,"* ]] || lt_fail "no index entry is marked valid by the fsmonitor after two statuses: $out"
lt_log "ok: entries are marked valid by the fsmonitor ($out)"

# The host's cached trees (the TREE extension its commit wrote) survive the
# statuses inside, which wrote the index to add their token: the view keeps a
# TREE that is byte for byte the host's over the host's entries (spec 4.6),
# and the host's git then writes the tree it would have written.
index_extensions() {    # the extension signatures of the host's index, in order
        python3 - "$LT_WS/.git/index" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
assert d[:4] == b'DIRC' and struct.unpack('>I', d[4:8])[0] in (2, 3), 'index version 2 or 3 expected'
n, off, end, out = struct.unpack('>I', d[8:12])[0], 12, len(d) - 20, []
for _ in range(n):
    flags = struct.unpack('>H', d[off + 60:off + 62])[0]
    p = off + 62 + (2 if flags & 0x4000 else 0)
    off += ((p - off) + (d.index(b'\0', p) - p) + 8) & ~7
while off < end:
    out.append(d[off:off + 4].decode('ascii', 'replace'))
    off += 8 + struct.unpack('>I', d[off + 4:off + 8])[0]
print(' '.join(out))
PY
}
out=$(index_extensions) || lt_fail "cannot read the host's index"
[[ " $out " == *" FSMN "* ]] || lt_fail "the statuses inside left no fsmonitor token in the index: $out"
[[ " $out " == *" TREE "* ]] || lt_fail "the host's cached trees did not survive a status inside: $out"
lt_assert_eq "the host's git write-tree after the statuses inside" "$(hgit rev-parse HEAD^{tree})" "$(hgit write-tree)"
lt_log "ok: the host's cached trees survive the statuses inside ($out)"

# The sandbox's own untracked cache: in the index it reads (the view splices it in), never in the
# host's, whose git status does not warn about one it cannot use.
no_sandbox_untracked_cache() {  # WHAT
        local out
        out=$(index_extensions) || lt_fail "$1: cannot read the host's index"
        [[ " $out " != *" UNTR "* ]] || lt_fail "$1: the sandbox's untracked cache reached the host's index: $out"
        out=$(hgit --no-optional-locks status 2>&1 >/dev/null) || lt_fail "$1: the host's git status failed: $out"
        [[ $out != *"untracked cache"* ]] || lt_fail "$1: the host's git status warns: $out"
}
no_sandbox_untracked_cache "after the warm-up"
inside 'grep -q UNTR .git/index' || lt_fail "the sandbox's index has no untracked cache after two statuses"
out=$(inside 'git ls-files | wc -l') || lt_fail "git ls-files inside failed: $out"
lt_assert_eq "the index inside, read by git (its checksum verified)" "$(hgit ls-files | wc -l)" "$(echo $out)"
# A quiet status uses it: git reads no directory (opendir:0 in its trace).
inside 'git status --porcelain >/dev/null' >/dev/null
out=$(inside 'GIT_TRACE2_PERF=/tmp/perf git status --porcelain >/dev/null && grep -o "directories-visited:[0-9]*\|opendir:[0-9]*" /tmp/perf | tr "\n" " "') ||
        lt_fail "git status with a trace inside failed: $out"
[[ $out == *"directories-visited:"* ]] || lt_fail "git inside did not use its untracked cache: $out"
[[ $out == *"opendir:0 "* ]] || lt_fail "a quiet git status inside read directories despite its untracked cache: $out"
lt_log "ok: the sandbox's git keeps its untracked cache and reads no directory on a quiet status ($out)"

# What the sandbox reads is the host's file with its caches only while the host's file is the one the
# view landed: changed in place on the host (not git's way: times and ctime), or replaced by the host's
# git, it is served as it is, bytes and size, whatever the kernel had cached of it.
served_is_hosts() {     # WHAT
        local in host
        in=$(inside 'md5sum <.git/index | cut -c1-32; wc -c <.git/index') || lt_fail "$1: cannot read the index inside"
        host=$(md5sum <"$LT_WS/.git/index" | cut -c1-32; wc -c <"$LT_WS/.git/index")
        lt_assert_eq "$1: the index inside is the host's file" "$(echo $host)" "$(echo $in)"
}
hsize=$(stat -c %s "$LT_WS/.git/index")
isize=$(inside 'wc -c <.git/index') || lt_fail "cannot read the index's size inside"
((isize > hsize)) || lt_fail "the index inside ($isize bytes) is not the host's ($hsize) with the sandbox's caches"
touch "$LT_WS/.git/index"
sleep 0.2
served_is_hosts "after a touch of the host's index"
inside 'git status --porcelain >/dev/null && grep -q UNTR .git/index' ||
        lt_fail "the sandbox's next status did not keep its untracked cache again"
ino=$(stat -c %i "$LT_WS/.git/index")
hgit status --porcelain >/dev/null
[[ $(stat -c %i "$LT_WS/.git/index") != "$ino" ]] || lt_fail "the host's git status did not replace the index"
ext=$(index_extensions)
[[ " $ext " != *" FSMN "* && " $ext " != *" UNTR "* ]] || lt_fail "the host's git status left: $ext"
sleep 0.2
# The host's index has the sandbox's last entries: its untracked cache and token are put back for it.
hsize=$(stat -c %s "$LT_WS/.git/index")
isize=$(inside 'wc -c <.git/index') || lt_fail "cannot read the index's size inside"
((isize > hsize)) || lt_fail "the index inside after the host's status ($isize bytes) is the host's ($hsize)"
inside 'grep -q UNTR .git/index && grep -q FSMN .git/index' ||
        lt_fail "the sandbox's untracked cache and token were not put back onto the host's index"
out=$(inside 'GIT_TRACE2_PERF=/tmp/perf2 git status --porcelain >/dev/null && grep -o "opendir:[0-9]*" /tmp/perf2 | tr "\n" " "') ||
        lt_fail "git status with a trace inside failed: $out"
[[ $out == "opendir:0 " ]] || lt_fail "the status inside after the host's read directories: $out"
compare "after the host's git status"
no_sandbox_untracked_cache "after the host's git status"
# The host's index with other entries (a file staged on the host): the host's file as it is.
echo staged-on-host >>"$LT_WS/d5/f5.txt"
hgit add d5/f5.txt
sleep 0.2
served_is_hosts "after the host's git add"
compare "after the host's git add"
inside 'grep -q UNTR .git/index' || lt_fail "the sandbox's status after the host's add did not keep its untracked cache"
# A commit changes no entry: the sandbox's caches and token come back over the host's new file.
hgit commit -q -m "staged on the host"
sleep 0.2
inside 'grep -q UNTR .git/index && grep -q FSMN .git/index' ||
        lt_fail "the sandbox's untracked cache and token were not put back after the host's commit"
compare "after the host's git commit"
lt_log "ok: the sandbox's caches are served only over the file the view landed"

put_back=0 host_status=0 host_statuses=0
for ((round = 1; round <= rounds; round++)); do
        ops $((RANDOM % 6 + 1))
        host_ops=$OPS
        ops $((RANDOM % 6 + 1))
        inside_ops=$OPS
        case $((round % 3)) in
        0)      # the host, then the sandbox
                (cd "$LT_WS" && eval "$host_ops")
                inside "$inside_ops" >/dev/null 2>&1 || true ;;
        1)      # the sandbox, then the host
                inside "$inside_ops" >/dev/null 2>&1 || true
                (cd "$LT_WS" && eval "$host_ops") ;;
        2)      # both at once
                inside "$inside_ops" >/dev/null 2>&1 &
                (cd "$LT_WS" && eval "$host_ops")
                wait $! || true ;;
        esac
        # Now and then some of it is staged or committed inside, or on the host (which replaces
        # the index the sandbox wrote: what the view kept for it goes).
        case $((RANDOM % 6)) in
        0) inside "$igit add -A d0 d1 2>/dev/null; $igit commit -q -m r$round >/dev/null 2>&1; true" >/dev/null ;;
        1) hgit add -A d2 d3 2>/dev/null || true; hgit commit -q -m h$round >/dev/null 2>&1 || true ;;
        2 | 3) hgit status --porcelain >/dev/null
           host_status=1 ;;
        4) inside "$igit add -A d4 d5 2>/dev/null; true" >/dev/null ;;          # staged inside, not committed
        5) hgit reset -q 2>/dev/null || true ;;                                  # unstaged on the host, files as they are
        esac
        # A host change is in the journal once the view's watcher read it (a few ms).
        sleep 0.2
        # After the host's status, over the same entries, git inside is given its last untracked cache and token.
        if ((host_status)); then
                host_statuses=$((host_statuses + 1))
                if inside 'grep -q FSMN .git/index' >/dev/null; then
                        put_back=$((put_back + 1))
                fi
        fi
        host_status=0
        compare "round $round"
        no_sandbox_untracked_cache "round $round"
done
lt_log "ok: $rounds rounds of edits from both sides: git status with the fsmonitor and untracked cache equals the reference ($host_statuses of them right after the host's status, $put_back of those with the sandbox's caches put back), and the host's index never held the sandbox's untracked cache"
# Turned on by hand too (git update-index --untracked-cache writes the index): still never the host's.
inside 'git update-index --untracked-cache && git status --porcelain' >/dev/null 2>&1 ||
        lt_fail "git update-index --untracked-cache inside failed"
no_sandbox_untracked_cache "after git update-index --untracked-cache inside"
compare "after git update-index --untracked-cache inside"
lt_log "ok: no untracked cache of the sandbox's reaches the host's index; the host's git status does not warn"

# A repository in an ignored directory (Domain state): its worktree's paths are answered relative to it.
inside "mkdir -p build/nested && cd build/nested && git init -q && echo a >a && echo b >b && $igit add a b &&
        $igit commit -q -m n && git status --porcelain >/dev/null && git status --porcelain >/dev/null" >/dev/null ||
        lt_fail "a repository in an ignored directory failed"
inside "cd build/nested && echo more >>a && rm b && echo c >c" >/dev/null
compare "a repository in an ignored directory" build/nested
lt_log "ok: a repository in an ignored directory"

# A nested repository whose own configuration the sandbox wrote (its .git/config is a protected
# name: Domain state, never the host's): Lazaret's hook wins, and the host never sees the setting.
inside "git init -q inner && cd inner && $igit config core.fsmonitor /tmp/not-lazaret && echo x >x &&
        $igit add x && $igit commit -q -m x" >/dev/null 2>&1 || lt_fail "a nested repository inside failed"
out=$(inside 'cd inner && git config --get-all core.fsmonitor | tail -n 1') || lt_fail "git config in inner failed"
lt_assert_eq "core.fsmonitor over the repository's own" "/run/lazaret/fsmonitor" "$out"
inside "cd inner && echo y >>x && echo z >z" >/dev/null
compare "a nested repository with its own core.fsmonitor" inner
[[ ! -e $LT_WS/inner/.git/config ]] || ! grep -qi fsmonitor "$LT_WS/inner/.git/config" ||
        lt_fail "the sandbox's core.fsmonitor reached the host: $(cat "$LT_WS/inner/.git/config")"
lt_log "ok: Lazaret's hook wins over a repository's own core.fsmonitor, which stays in the Domain"

# --- The host's configuration names no program -------------------------------
# By key (an fsmonitor, an include) and by value (a path of the sandbox's): the
# test user's own paths (/home/lazaret-test-N/...) are no finding.
hcfg=$(hgit config --show-origin --list 2>/dev/null |
        grep -iE '	(core\.fsmonitor|include\.|includeif\.)|=.*(/run/lazaret|fsmonitor)' || true)
[[ -z $hcfg ]] || lt_fail "the host's git configuration of the workspace names: $hcfg"
grep -qi fsmonitor "$LT_WS/.git/config" && lt_fail "the host's .git/config names an fsmonitor: $(cat "$LT_WS/.git/config")"
for scope in --global --system; do
        hcfg=$(git config "$scope" --list 2>/dev/null |
                grep -iE '^(core\.fsmonitor|include\.|includeif\.)|=.*(/run/lazaret|fsmonitor)' || true)
        [[ -z $hcfg ]] || lt_fail "the host's $scope git configuration names: $hcfg"
done
# The host's git with the index the sandbox wrote (our token in its fsmonitor extension) runs nothing.
trace=$(GIT_TRACE=1 hgit status --porcelain 2>&1 >/dev/null | grep -E 'run_command|exec' || true)
[[ -z $trace ]] || lt_fail "the host's git status ran a program: $trace"
lt_log "ok: nothing in the host's git configuration names a program; the host's git status runs none"

# --- A restart: the last instance's tokens get "everything" --------------------
out=$(hook_answer "") || lt_fail "the hook failed"
token=${out%%|*}
kill "$LT_KEEPER" 2>/dev/null || true
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || lt_fail "lazaretctl stop failed"
lt_wait_inactive
echo "while stopped" >>"$LT_WS/top.log"
echo "while stopped" >"$LT_WS/stopped.txt"
lt_keeper_start
out=$(hook_answer "$token") || lt_fail "the hook failed after the restart"
[[ $out == *'|/|' && ${out%%|*} != "$token" ]] || lt_fail "the hook answered the last instance's token with: $out"
compare "after a restart"
compare "after a restart, again"
lt_log "ok: after a restart the last instance's token gets everything, and git status stays right"

# --- The off switch ---------------------------------------------------------
kill "$LT_KEEPER" 2>/dev/null || true
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || lt_fail "lazaretctl stop failed"
lt_wait_inactive
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s", "git_fsmonitor": false } } }\n' \
        "$LT_GIT_IMAGE" >"$LT_CONFIG"
lt_keeper_start
out=$(inside 'git config --get core.fsmonitor; echo "rc=$?"; for f in /run/lazaret/fsmonitor /run/lazaret/fsmonitor.gitconfig; do
        if [ -e $f ] || [ -L $f ]; then echo "present: $f"; fi; done')
lt_assert_eq "core.fsmonitor with git_fsmonitor false" "rc=1" "$out"
out=$(inside 'git config --get core.untrackedCache; echo "rc=$?"')
lt_assert_eq "core.untrackedCache with git_fsmonitor false" "rc=1" "$out"
out=$(inside 'git config --get core.preloadIndex; echo "rc=$?"')
lt_assert_eq "core.preloadIndex with git_fsmonitor false" "rc=1" "$out"
f=off.txt
echo "on" >"$LT_WS/$f"
hgit add "$f"
hgit commit -q -m "$f"
inside 'git status --porcelain >/dev/null' || lt_fail "git status with git_fsmonitor false failed"
echo "off" >>"$LT_WS/$f"
out=$(inside 'git status --porcelain --untracked-files=no') || lt_fail "git status with git_fsmonitor false failed"
[[ $out == *"$f"* ]] || lt_fail "git status with git_fsmonitor false missed a host edit of $f: $out"
lt_log "ok: git_fsmonitor false: no hook, git inside scans"
