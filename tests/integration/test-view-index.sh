#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-index (issue 32 items 2 and 3): what the host's hooks name is
# protected, and protected content stays out of the host's index. In a
# real sandbox (the busybox image plus the host's git):
#   - a host hook (.git/hooks/pre-commit) runs ./scripts/check.sh: the
#     launch that starts the Domain names the path as protected, lazaretctl
#     status lists it; the sandbox writes scripts/check.sh, which lands in
#     Domain state (lazaretctl changes lists it) and the host's next commit
#     runs the host's version;
#   - inside, `git add .husky/pre-push` and `git add .pre-commit-config.yaml`
#     fail ("Unable to write new index file"), the host's index is
#     unchanged byte for byte, the Domain's log names the path and the
#     rule; the host's `git commit` and `git checkout -- .` afterwards run
#     and write nothing of the sandbox's; an index with the host's entries
#     but a cached tree (TREE) the sandbox made lands without it, so the
#     host's next commit records its own tree;
#   - legitimate use keeps working: git add and commit of an ordinary file
#     inside, a checkout inside of a branch that differs only in
#     unprotected files, a rebase inside, the host's own git add and commit
#     of a protected file.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image
lt_reset_view_state

marks=$HOME/lt-index-marks      # what the sandbox's versions would make on the host
ok=$HOME/lt-index-ok            # what the developer's own hooks make
rm -rf "$marks" "$ok"
mkdir -p "$marks" "$ok"
no_marks() {
        local left
        left=$(ls "$marks")
        [[ -z $left ]] || lt_fail "$1: the host ran what the sandbox wrote: $left"
        lt_log "ok: $1: nothing the sandbox wrote ran on the host"
}
ran() {         # ran WHAT FILE: the developer's own script made FILE, which is then removed
        [[ -e $ok/$2 ]] || lt_fail "$1: the developer's own script did not run"
        rm -f "$ok/$2"
}
hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "cd /workspace && $1" </dev/null
}
# git inside, without the host's hooks (they are the host's programs, and their paths are host paths).
igit='git -c core.hooksPath=/dev/null -c user.name=in -c user.email=in@example.invalid'
expect_inside() {
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}
unchanged() {   # unchanged PATH SHA
        lt_assert_eq "the host's $1" "$2" "$(sha256sum <"$LT_WS/$1")"
}
log_since() { tail -n +"$1" "$LT_LOGDIR/$LT_DOMAIN.log" 2>/dev/null; }
log_mark() { echo $(($(wc -l <"$LT_LOGDIR/$LT_DOMAIN.log" 2>/dev/null || echo 0) + 1)); }

# --- The host's repository ------------------------------------------------
mkdir -p "$LT_WS/scripts" "$LT_WS/.husky"
printf '#!/bin/sh\ntouch %s/check\n' "$ok" >"$LT_WS/scripts/check.sh"
chmod +x "$LT_WS/scripts/check.sh"
printf 'touch %s/husky\n' "$ok" >"$LT_WS/.husky/pre-push"
printf 'repos: []\n' >"$LT_WS/.pre-commit-config.yaml"
echo base >"$LT_WS/src.txt"
hgit add -A
hgit commit -q -m base
hgit branch -q other
hgit checkout -q other
echo other >"$LT_WS/other.txt"
hgit add other.txt
hgit commit -q -m other
hgit checkout -q -
printf '#!/bin/sh\n# the project check\n./scripts/check.sh\n' >"$LT_WS/.git/hooks/pre-commit"
chmod +x "$LT_WS/.git/hooks/pre-commit"
hgit commit -q --allow-empty -m host-one || lt_fail "the host's first commit failed"
ran "the host's hook before the session" check
check_sha=$(sha256sum <"$LT_WS/scripts/check.sh")
husky_sha=$(sha256sum <"$LT_WS/.husky/pre-push")
pc_sha=$(sha256sum <"$LT_WS/.pre-commit-config.yaml")

# --- Item 2: the path the hook names is protected from the Domain's start ---
out=$(lt_launch -- /bin/true 2>&1 </dev/null) || lt_fail "the launch failed: $out"
[[ $out == *"workspace path that the host's hooks name (scripts/check.sh) is protected as the hooks are now; after a hook changes, restart the Domain"* ]] ||
        lt_fail "the launch does not name the path the host's hook runs: $out"
lt_log "ok: the launch says: $(grep -F 'hooks name' <<<"$out")"
status=$(lazaretctl --workspace "$LT_WS" status 2>&1) || lt_fail "lazaretctl status failed: $status"
[[ $status == *"the host's hooks name: scripts/check.sh"* ]] ||
        lt_fail "lazaretctl status does not list the path the host's hook runs: $status"
lt_assert_eq "status --json protected_hook_paths" '["scripts/check.sh"]' \
        "$(lazaretctl --workspace "$LT_WS" status --json | jq -c .View.protected_hook_paths)"

expect_inside "rewriting scripts/check.sh" "printf '#!/bin/sh\ntouch $marks/check\n' > scripts/check.sh"
unchanged scripts/check.sh "$check_sha"
lt_assert_eq "scripts/check.sh inside" 1 "$(inside 'grep -c marks scripts/check.sh')"
changes=$(lazaretctl --workspace "$LT_WS" changes 2>&1) || lt_fail "lazaretctl changes failed: $changes"
[[ $changes == *scripts/check.sh* ]] || lt_fail "lazaretctl changes does not list scripts/check.sh: $changes"
hgit commit -q --allow-empty -m host-two || lt_fail "the host's commit failed"
ran "the host's hook" check
no_marks "the host's commit, its hook running scripts/check.sh"

# --- Item 3: protected content stays out of the host's index ---------------
index_sha=$(sha256sum <"$LT_WS/.git/index")
from=$(log_mark)
out=$(inside "printf 'touch $marks/husky\n' > .husky/pre-push && git add .husky/pre-push" 2>&1) &&
        lt_fail "git add .husky/pre-push inside succeeded: $out"
[[ $out == *"nable to write new index file"* ]] || lt_fail "git add .husky/pre-push failed otherwise: $out"
lt_log "ok: git add .husky/pre-push inside is refused: $(tr '\n' ' ' <<<"$out")"
lt_assert_eq "the host's index after the refused git add" "$index_sha" "$(sha256sum <"$LT_WS/.git/index")"
unchanged .husky/pre-push "$husky_sha"
sleep 0.5
line=$(log_since "$from" | grep -F 'lazaret-view: refused the sandbox' || true)
[[ $line == *"refused the sandbox's new .git/index: it stages .husky/pre-push, a protected path"* ]] ||
        lt_fail "the Domain's log does not name the refused path: $(log_since "$from" | tail -n 5)"
lt_log "ok: the Domain's log says: $line"

out=$(inside "printf '  - repo: local\n    hooks: [{id: x, name: x, entry: touch $marks/pc, language: system}]\n' >> .pre-commit-config.yaml &&
              git add .pre-commit-config.yaml" 2>&1) &&
        lt_fail "git add .pre-commit-config.yaml inside succeeded: $out"
lt_assert_eq "the host's index after the refused git add of .pre-commit-config.yaml" "$index_sha" \
        "$(sha256sum <"$LT_WS/.git/index")"
unchanged .pre-commit-config.yaml "$pc_sha"
lt_assert_eq "what the host's index stages" "" "$(hgit diff --cached --name-only)"

# The host's commit and checkout afterwards: nothing of the sandbox's.
hgit commit -q --allow-empty -m host-three || lt_fail "the host's commit after the refused stages failed"
ran "the host's hook after the refused stages" check
(cd "$LT_WS" && hgit checkout -- .) || lt_fail "the host's git checkout -- . failed"
unchanged .husky/pre-push "$husky_sha"
unchanged .pre-commit-config.yaml "$pc_sha"
unchanged scripts/check.sh "$check_sha"
for f in .husky/pre-push .pre-commit-config.yaml; do
        hgit show "HEAD:$f" | grep -q "$marks" && lt_fail "the host's commit holds the sandbox's $f"
done
no_marks "the host's git commit and git checkout -- ."

# What lands is the file judged, as judged: one with a second name (which
# could be written after the judging) is refused, and a descriptor held
# open on it writes nothing once it is the index.
index_sha=$(sha256sum <"$LT_WS/.git/index")
out=$(inside "cp .git/index .git/two.lock && ln .git/two.lock .git/two-name && mv .git/two.lock .git/index" 2>&1) &&
        lt_fail "an index with a second name was taken: $out"
lt_assert_eq "the host's index after the rename of a linked file" "$index_sha" "$(sha256sum <"$LT_WS/.git/index")"
inside 'rm -f .git/two.lock .git/two-name' || true
out=$(inside "cp .git/index .git/held.lock && exec 3>>.git/held.lock && mv .git/held.lock .git/index &&
              { printf junk >&3 && echo wrote-through-the-held-descriptor; }; exec 3>&-; true" 2>&1)
[[ $out != *wrote-through-the-held-descriptor* ]] || lt_fail "a descriptor held on the new index wrote to it: $out"
[[ $(tail -c 4 "$LT_WS/.git/index") != junk ]] || lt_fail "the host's index ends with what the held descriptor wrote"
hgit status --porcelain >/dev/null || lt_fail "the host's git no longer reads its index"
lt_log "ok: a linked file is refused as the index; a held descriptor writes nothing to the index it became"

# A crafted index whose entries are the host's but whose cached tree (the TREE
# extension) is one the sandbox made, with its own .husky/pre-push: git's
# commit takes a valid cached tree as it is. The view judges the entries and
# drops the cached trees from what lands.
tree=$(inside "export GIT_INDEX_FILE=/tmp/private-index && git read-tree HEAD &&
               blob=\$(printf 'touch $marks/tree\n' | git hash-object -w --stdin) &&
               git update-index --cacheinfo 100644,\$blob,.husky/pre-push && git write-tree" 2>/dev/null | tail -n 1) ||
        lt_fail "a tree made inside through a private index failed: $tree"
python3 - "$LT_WS/.git/index" "$tree" "$LT_WS/crafted-index" <<'PY' || lt_fail "cannot craft the index"
import hashlib, struct, sys
d = open(sys.argv[1], 'rb').read()
n = struct.unpack('>I', d[8:12])[0]
off = 12
for _ in range(n):
    flags = struct.unpack('>H', d[off + 60:off + 62])[0]
    p = off + 62 + (2 if flags & 0x4000 else 0)
    off += ((p - off) + (d.index(b'\0', p) - p) + 8) & ~7
t = b'\0' + b'%d 0\n' % n + bytes.fromhex(sys.argv[2])
body = d[:off] + b'TREE' + struct.pack('>I', len(t)) + t
open(sys.argv[3], 'wb').write(body + hashlib.sha1(body).digest())
PY
expect_inside "replacing the index with one whose cached tree is the sandbox's" \
        "cp crafted-index .git/index.lock && mv .git/index.lock .git/index"
rm -f "$LT_WS/crafted-index"
hgit commit -q --allow-empty -m host-after-crafted || lt_fail "the host's commit after the crafted index failed"
ran "the host's hook after the crafted index" check
hgit show HEAD:.husky/pre-push | grep -q "$marks" && lt_fail "the host's commit recorded the sandbox's cached tree"
lt_assert_eq "the host's commit's tree" "$(hgit rev-parse HEAD~1^{tree})" "$(hgit rev-parse HEAD^{tree})"
no_marks "the host's commit after a crafted cached tree"

# --- A split index on the host: nothing to compare with, so nothing lands ----
# The reader cannot read a split index's entries (they live in a
# sharedindex file): an index the sandbox writes then cannot be judged
# against the host's, and is refused (fail closed) with the repair named.
hgit update-index --split-index || lt_fail "the host's git update-index --split-index failed"
index_sha=$(sha256sum <"$LT_WS/.git/index")
from=$(log_mark)
out=$(inside "printf 'touch $marks/split\n' > .husky/pre-push && git add .husky/pre-push" 2>&1) &&
        lt_fail "git add .husky/pre-push inside succeeded over the host's split index: $out"
lt_assert_eq "the host's split index after the refused git add" "$index_sha" "$(sha256sum <"$LT_WS/.git/index")"
hgit ls-files -s .husky/pre-push | grep -q "$(hgit rev-parse HEAD:.husky/pre-push)" ||
        lt_fail "the host's index stages another .husky/pre-push: $(hgit ls-files -s .husky/pre-push)"
out=$(inside "echo split > src.txt && git add src.txt" 2>&1) &&
        lt_fail "git add of an ordinary file succeeded over the host's split index: $out"
sleep 0.5
line=$(log_since "$from" | grep -F "the host's index cannot be read" | head -n 1 || true)
[[ $line == *"git update-index --no-split-index"* ]] ||
        lt_fail "the Domain's log does not name the split index and its repair: $(log_since "$from" | tail -n 5)"
lt_log "ok: over the host's split index, index writes inside are refused: $line"
hgit update-index --no-split-index || lt_fail "the host's git update-index --no-split-index failed"
expect_inside "git checkout -- of the files the sandbox changed, after the host's index is whole again" \
        "$igit checkout -- .husky/pre-push && rm -f src.txt"
no_marks "the split index"

# --- Legitimate use --------------------------------------------------------
expect_inside "git add and commit of an ordinary file" \
        "echo inside > src.txt && git add src.txt && $igit commit -q -m inside"
lt_assert_eq "the commit made inside, on the host" inside "$(hgit show HEAD:src.txt)"
expect_inside "a checkout of a branch that differs only in unprotected files, and back" \
        "$igit checkout -q other && test -f other.txt && $igit checkout -q - && test ! -e other.txt"
# The sandbox's own versions of the protected files go back to the index's (a checkout that rewrites the index
# with the same entries), so that git sees a clean tree for the rebase.
expect_inside "git checkout -- of the protected files the sandbox changed" \
        "$igit checkout -- .husky/pre-push .pre-commit-config.yaml scripts/check.sh && test -z \"\$($igit status --porcelain)\""
expect_inside "a rebase of a branch onto another" \
        "$igit checkout -q other && $igit rebase -q - && test \"\$(cat src.txt)\" = inside && $igit checkout -q -"
lt_assert_eq "the rebased branch, on the host" inside "$(hgit show other:src.txt)"
# The developer stages a protected file on the host; the sandbox's git goes on working with that index.
printf 'touch %s/husky-edited\n' "$ok" >"$LT_WS/.husky/pre-push"
hgit add .husky/pre-push
hgit commit -q -m host-edit || lt_fail "the host's commit of its own hook edit failed"
ran "the host's hook at its own commit" check
expect_inside "git add and commit after the host's own stage" \
        "echo again > src.txt && git add src.txt && $igit commit -q -m inside-two"
lt_assert_eq "the host's .husky/pre-push in HEAD" "touch $ok/husky-edited" "$(hgit show HEAD:.husky/pre-push)"
no_marks "the end"
lt_log "PASS"
