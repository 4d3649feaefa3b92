#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-workspace-git: a 20,000-file repository in /workspace.
#   - git inside and on the host do not re-hash each other's index: after a
#     `git status` inside, the host's index file is the same file (git
#     rewrites it by rename whenever it refreshes stat data), and so after
#     the host's next `git status` (sessions get core.checkStat=minimal at
#     git's system level; the repository's config is untouched);
#   - a change on either side is still seen by the other, a host edit inside
#     at once (shared file access);
#   - reading every file inside does not run out of host descriptors (the
#     dentry cache is sized from RLIMIT_NOFILE);
#   - a user's own core.checkStat wins over Lazaret's.
# With the profile's git_fsmonitor off (see below).
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

lt_use_git_image
# Without git's fsmonitor (spec 4.6, "git asks the view"): with it, git inside
# writes the index once more to add the fsmonitor extension and the host's
# git once more to drop it, which this test's measure, the index file's
# identity, cannot tell from a re-hash.
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s", "git_fsmonitor": false } } }\n' \
        "$LT_GIT_IMAGE" >"$LT_CONFIG"

hgit() { git -C "$LT_WS" -c user.name=host -c user.email=host@example.invalid "$@"; }
inside() { lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "$1" </dev/null; }
index_id() { stat -c '%i %Y' "$LT_WS/.git/index"; }

# 20,000 files in 200 directories, committed; the files are older than the
# index, so no entry is "racily clean" and nothing needs re-hashing.
(
        cd "$LT_WS"
        for d in $(seq 1 200); do
                mkdir "d$d"
                for f in $(seq 1 100); do echo "$d/$f" >"d$d/f$f.txt"; done
        done
)
sleep 1.1
hgit add -A
hgit commit -q -m files
hgit config gc.auto 0
hgit status --porcelain >/dev/null
before=$(index_id)

lt_assert_eq "clean inside" "" "$(inside 'git status --porcelain')"
lt_assert_eq "the host's index untouched by git inside" "$before" "$(index_id)"
lt_assert_eq "clean on the host after git inside" "" "$(hgit status --porcelain)"
lt_assert_eq "the host's index untouched by the host's next git status" "$before" "$(index_id)"
lt_assert_eq "core.checkStat inside (system level)" "minimal" "$(inside 'git config --show-scope --get core.checkStat | tr "\t" " "' | sed 's/^system //')"
[[ -z $(hgit config --get core.checkStat) ]] || lt_fail "the repository's configuration was changed"

# Changes cross in both directions, a host edit at once.
echo host-edit >>"$LT_WS/d1/f1.txt"
lt_assert_eq "a host edit seen inside at once" " M d1/f1.txt" "$(inside 'git status --porcelain')"
inside 'echo sandbox-edit >> d2/f2.txt'
lt_assert_eq "a sandbox edit seen on the host" " M d1/f1.txt
 M d2/f2.txt" "$(hgit status --porcelain)"

# Every file read inside, in one session.
n=$(inside 'find /workspace -name "*.txt" -type f | xargs cat | wc -l')
lt_assert_eq "lines read from every file inside" 20002 "$(tr -d ' ' <<<"$n")"

# A user's own core.checkStat wins.
hgit config core.checkStat default
lt_assert_eq "the repository's core.checkStat wins inside" default "$(inside 'git config --get core.checkStat')"

echo "PASS: git shares a 20,000-file repository with the host without re-hashing; edits cross both ways"
