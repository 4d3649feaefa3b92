#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-hooks (issue 32 items 1 and 5): the hook managers' files are
# protected names, performed end to end with the real tools where Debian
# has them. In a real sandbox (the busybox image plus the host's git):
#   - pre-commit (Debian's): `pre-commit install` on the host; inside, the
#     sandbox adds a `repo: local`, `language: system` hook to
#     .pre-commit-config.yaml and stages it with git add; the host's next
#     `git commit` runs nothing the sandbox wrote;
#   - husky 9's layout (core.hooksPath .husky/_, whose wrappers run
#     .husky/<hook>), written as husky writes it: inside, the sandbox
#     rewrites .husky/pre-push and the wrapper; the host's `git push` to a
#     local bare remote runs nothing the sandbox wrote;
#   - lefthook (not in Debian: a stand-in that runs each `run:` line of
#     lefthook.yml, as the hook lefthook installs does): inside, the
#     sandbox writes lefthook.yml and .config/lefthook.yml; the host's
#     commit runs only the host's;
#   - the developer's own edits of those files on the host take effect;
#     git add and commit inside work.
# The sandbox's stage of those files is refused (issue 32 item 3,
# test-view-index.sh has the rest): the host's index never holds them. A
# host hook that runs project code
# (npm test) is named by the launch that starts the Domain and by
# lazaretctl status (item 4).
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

command -v pre-commit >/dev/null || lt_skip "pre-commit is not installed (Debian package pre-commit)"

lt_install
lt_domain_setup
lt_use_git_image
lt_reset_view_state

marks=$HOME/lt-hooks-marks      # what the sandbox's commands would make on the host
ok=$HOME/lt-hooks-ok            # what the developer's own hooks make
remote=$HOME/lt-hooks-remote.git
bin=$HOME/lt-hooks-bin
export PRE_COMMIT_HOME=$HOME/lt-hooks-pre-commit
rm -rf "$marks" "$ok" "$remote" "$bin" "$PRE_COMMIT_HOME"
mkdir -p "$marks" "$ok" "$bin"
no_marks() {
        local left
        left=$(ls "$marks")
        [[ -z $left ]] || lt_fail "$1: the host ran what the sandbox wrote: $left"
        lt_log "ok: $1: nothing the sandbox wrote ran on the host"
}
ran() {         # ran WHAT FILE: the developer's hook made FILE, which is then removed
        [[ -e $ok/$2 ]] || lt_fail "$1: the developer's own hook did not run"
        rm -f "$ok/$2"
}

hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "cd /workspace && $1" </dev/null
}
expect_inside() {
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}
unchanged() {   # unchanged PATH SHA
        lt_assert_eq "the host's $1" "$2" "$(sha256sum <"$LT_WS/$1")"
}

# lefthook's stand-in: `lefthook run HOOK` runs each "run:" line under HOOK
# in lefthook.yml, .lefthook.yml or .config/lefthook.yml of the working tree.
cat >"$bin/lefthook" <<'EOF'
#!/bin/sh
[ "$1" = run ] || exit 2
for f in lefthook.yml .lefthook.yml .config/lefthook.yml; do
        [ -f "$f" ] || continue
        sed -n "/^$2:/,/^[^ ]/s/^ *run: *//p" "$f" | while read -r line; do sh -c "$line" || exit 1; done
done
EOF
chmod +x "$bin/lefthook"
export PATH=$bin:$PATH

# --- The host's repository: pre-commit and lefthook in .git/hooks ---------
cat >"$LT_WS/.pre-commit-config.yaml" <<EOF
repos:
  - repo: local
    hooks:
      - id: host-check
        name: host-check
        entry: touch $ok/pre-commit
        language: system
        always_run: true
        pass_filenames: false
EOF
printf 'post-commit:\n  commands:\n    host:\n      run: touch %s/lefthook\n' "$ok" >"$LT_WS/lefthook.yml"
hgit add -A
hgit commit -q -m base
(cd "$LT_WS" && pre-commit install >/dev/null) || lt_fail "pre-commit install failed"
printf '#!/bin/sh\nexec lefthook run post-commit\n' >"$LT_WS/.git/hooks/post-commit"
chmod +x "$LT_WS/.git/hooks/post-commit"
hgit commit -q --allow-empty -m host-one || lt_fail "the host's first commit failed"
ran "pre-commit before the session" pre-commit
ran "lefthook before the session" lefthook
pc_sha=$(sha256sum <"$LT_WS/.pre-commit-config.yaml")
lh_sha=$(sha256sum <"$LT_WS/lefthook.yml")

# --- Inside: plant hooks, stage them -------------------------------------
expect_inside "planting a pre-commit hook and lefthook commands" \
        "printf '  - repo: local\n    hooks:\n      - id: planted\n        name: planted\n        entry: touch $marks/pre-commit\n        language: system\n        always_run: true\n        pass_filenames: false\n' >> .pre-commit-config.yaml &&
         printf 'post-commit:\n  commands:\n    planted:\n      run: touch $marks/lefthook\n' > lefthook.yml &&
         mkdir -p .config && cp lefthook.yml .config/lefthook.yml"
for f in .pre-commit-config.yaml lefthook.yml .config/lefthook.yml; do
        out=$(inside "git add $f" 2>&1) && lt_fail "git add $f inside succeeded: $out"
        [[ $out == *"nable to write new index file"* ]] || lt_fail "git add $f inside failed otherwise: $out"
done
lt_log "ok: git add of the planted files is refused inside"
unchanged .pre-commit-config.yaml "$pc_sha"
unchanged lefthook.yml "$lh_sha"
[[ ! -e $LT_WS/.config/lefthook.yml ]] || lt_fail ".config/lefthook.yml reached the host"
lt_assert_eq "pre-commit config inside" 1 "$(inside 'grep -c "id: planted" .pre-commit-config.yaml')"

# Nothing of the sandbox's is staged in the host's index (issue 32 item 3).
lt_assert_eq "what the host's index stages" "" "$(hgit diff --cached --name-only)"
hgit commit -q --allow-empty -m host-two || lt_fail "the host's commit failed"
no_marks "the host's git commit after the sandbox's refused stages"
hgit show HEAD:.pre-commit-config.yaml | grep -q planted && lt_fail "the sandbox's .pre-commit-config.yaml is in the host's commit"
rm -f "$ok"/*

# The developer takes the host's version back into the index and commits.
hgit reset -q HEAD -- .pre-commit-config.yaml lefthook.yml .config/lefthook.yml 2>/dev/null || true
hgit checkout -q HEAD -- .pre-commit-config.yaml lefthook.yml 2>/dev/null || true
[[ $(hgit diff HEAD --name-only -- .pre-commit-config.yaml lefthook.yml) == "" ]] ||
        lt_fail "the host's files differ from HEAD after the reset"
hgit commit -q --allow-empty -m host-three || lt_fail "the host's commit after restoring the index failed"
no_marks "the host's git commit"
ran "pre-commit after the session" pre-commit
ran "lefthook after the session" lefthook

# The developer's own edit on the host takes effect.
sed -i "s|touch $ok/pre-commit|touch $ok/pre-commit-edited|" "$LT_WS/.pre-commit-config.yaml"
hgit add .pre-commit-config.yaml
hgit commit -q -m host-edit || lt_fail "the host's commit of its own hook edit failed"
ran "the developer's edited pre-commit hook" pre-commit-edited
no_marks "the host's commit of its own edit"

# --- husky 9: core.hooksPath .husky/_, its wrappers run .husky/<hook> -----
mkdir -p "$LT_WS/.husky/_"
cat >"$LT_WS/.husky/_/h" <<'EOF'
#!/usr/bin/env sh
[ "$HUSKY" = "2" ] && set -x
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n

[ ! -f "$s" ] && exit 0

i="${XDG_CONFIG_HOME:-$HOME/.config}/husky/init.sh"
[ -f "$i" ] && . "$i"

[ "${HUSKY-}" = "0" ] && exit 0

export PATH="node_modules/.bin:$PATH"
sh -e "$s" "$@"
c=$?

[ $c != 0 ] && echo "husky - $n script failed (code $c)"
[ $c = 127 ] && echo "husky - command not found in PATH=$PATH"
exit $c
EOF
for h in pre-commit pre-push; do
        printf '#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n' >"$LT_WS/.husky/_/$h"
        chmod +x "$LT_WS/.husky/_/$h"
done
echo '*' >"$LT_WS/.husky/_/.gitignore"
printf 'touch %s/husky\n' "$ok" >"$LT_WS/.husky/pre-push"
hgit add .husky/pre-push
hgit commit -q --no-verify -m husky
hgit config core.hooksPath .husky/_
git init -q --bare "$remote"
hgit remote add origin "$remote"
hgit push -q origin HEAD:main || lt_fail "the host's first push failed"
ran "husky's pre-push before the session" husky
husky_sha=$(sha256sum <"$LT_WS/.husky/pre-push")
wrapper_sha=$(sha256sum <"$LT_WS/.husky/_/h")

expect_inside "rewriting .husky/pre-push and its wrapper" \
        "printf 'touch $marks/husky\n' > .husky/pre-push && printf '#!/bin/sh\ntouch $marks/husky-wrapper\n' > .husky/_/h"
out=$(inside "git add .husky/pre-push" 2>&1) && lt_fail "git add .husky/pre-push inside succeeded: $out"
unchanged .husky/pre-push "$husky_sha"
unchanged .husky/_/h "$wrapper_sha"
# The host's commit holds nothing of the sandbox's (item 3).
hgit commit -q --allow-empty --no-verify -m host-staged || lt_fail "the host's commit failed"
hgit show HEAD:.husky/pre-push | grep -q "$marks" && lt_fail "the host's commit holds the sandbox's .husky/pre-push"
no_marks "the host's commit after the sandbox's refused stage of .husky/pre-push"
hgit reset -q HEAD -- .husky/pre-push
hgit commit -q --allow-empty --no-verify -m host-four
hgit push -q origin HEAD:main || lt_fail "the host's push after the session failed"
no_marks "the host's git push"
ran "husky's pre-push after the session" husky

# The developer's own edit of the husky hook takes effect.
printf 'touch %s/husky-edited\n' "$ok" >"$LT_WS/.husky/pre-push"
hgit commit -q --allow-empty --no-verify -m host-five
hgit push -q origin HEAD:main || lt_fail "the host's push after its own hook edit failed"
ran "the developer's edited husky hook" husky-edited
no_marks "the host's push after its own edit"

# --- git add and commit inside still work ---------------------------------
# The hooks are the host's programs (pre-commit is not in the image): inside
# they are skipped with core.hooksPath=/dev/null, as a developer would.
expect_inside "git add and commit of a source file" \
        "echo inside > src.txt && git add src.txt &&
         git -c core.hooksPath=/dev/null -c user.name=in -c user.email=in@example.invalid commit -q -m inside"
lt_assert_eq "the commit made inside, on the host" inside "$(hgit show HEAD:src.txt)"
out=$(inside "echo '# inside' >> .husky/pre-commit && git add .husky/pre-commit" 2>&1) &&
        lt_fail "git add of a new .husky/pre-commit inside succeeded: $out"
[[ ! -e $LT_WS/.husky/pre-commit ]] || lt_fail ".husky/pre-commit reached the host's working tree"
lt_assert_eq "the host's index holds .husky/pre-commit" "" "$(hgit ls-files .husky/pre-commit)"
lt_log "ok: the hook manager's file written inside is held in Domain state and not staged (issue 32 item 3)"
no_marks "the end"

# Item 4: a host hook that runs project code is named at launch and in status.
printf 'npm test\n' >"$LT_WS/.husky/pre-push"
want="your host's pre-push hook (.husky/pre-push) runs \`npm test\`: a push made on the host runs what the sandbox wrote"
systemctl --user stop "lazaret@$LT_DOMAIN.service"
lt_wait_inactive
out=$(lt_launch -- /bin/true 2>&1 </dev/null) || lt_fail "the launch failed: $out"
[[ $out == *"lazaretctl: git: $want"* ]] || lt_fail "the launch does not name the host's hook: $out"
lt_log "ok: the launch says: $(grep -F 'pre-push hook' <<<"$out")"
status=$(lazaretctl --workspace "$LT_WS" status 2>&1) || lt_fail "lazaretctl status failed: $status"
[[ $status == *"Hooks:          $want"* ]] || lt_fail "lazaretctl status does not name the host's hook: $status"
lt_assert_eq "status --json host_hooks_run_project" 1 \
        "$(lazaretctl --workspace "$LT_WS" status --json | jq '.View.host_hooks_run_project | length')"
for want in .pre-commit-config.yaml .husky lefthook.yml AGENTS.md; do
        [[ $status == *"$want"* ]] || lt_fail "lazaretctl status lacks '$want': $status"
done
lt_log "PASS"
