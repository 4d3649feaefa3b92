#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-volume-redirect (issue 9, holes 3 and 4): a volume's host path cannot
# be redirected by a symbolic link, and a mount source whose directories
# another user can write is refused.
#   1. A profile with an rw volume A and a volume B whose source lies inside
#      A (so the sandbox could replace B's source with a symlink) is refused
#      at launch; nothing starts.
#   2. With a configuration that passes, the attack itself: B's source is
#      replaced by a symlink to ~/.ssh (done on the host here, as the sandbox
#      could have done through a writable parent). The next launch fails
#      with a message naming the symlink and the resolved path, and the
#      command that would have appended to authorized_keys never runs.
#   3. A workspace under a 0777 directory that is not sticky is refused.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

vols=$HOME/lt-vols
rm -rf "$vols" "$HOME/lt-open"
mkdir -p "$vols/a/b" "$vols/b" "$HOME/.ssh"
chmod 0700 "$HOME/.ssh"
printf 'ssh-ed25519 AAAA-the-developers-own-key\n' >"$HOME/.ssh/authorized_keys"
keys_before=$(sha256sum <"$HOME/.ssh/authorized_keys")

write_config() {        # write_config VOLUMES-JSON
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s", "volumes": [ %s ] } } }\n' \
                "$LT_IMAGE" "$1" >"$LT_CONFIG"
        chmod 0600 "$LT_CONFIG"
}

expect_refused() {      # expect_refused WHAT EXPECTED-MESSAGE [WORKSPACE] -- COMMAND...
        local what=$1 want=$2 ws=$LT_WS out rc
        shift 2
        if [[ $1 != -- ]]; then ws=$1; shift; fi
        shift
        set +e
        out=$(cd "$ws" && lazaretctl launch -- "$@" 2>&1 </dev/null)
        rc=$?
        set -e
        [[ $rc -ne 0 ]] || lt_fail "$what: launch succeeded: $out"
        [[ $out == "$want" ]] || lt_fail "$what: message '$out', want '$want'"
        lt_log "ok: $what refused: $out"
}

# 1. B inside the rw volume A.
write_config "{ \"host\": \"$vols/a\", \"container\": \"/a\", \"mode\": \"rw\" },
              { \"host\": \"$vols/a/b\", \"container\": \"/b\", \"mode\": \"rw\" }"
expect_refused "a volume inside an rw volume" \
        "$LT_CONFIG: profiles.test.volumes[1].host: \"$vols/a/b\" lies inside profiles.test.volumes[0].host \"$vols/a\"; a volume may not lie inside or contain the workspace or another volume" \
        -- /bin/true
state=$(systemctl --user is-active "lazaret@$LT_DOMAIN.service" 2>/dev/null) || true
[[ $state != active && $state != activating ]] || lt_fail "the coordinator started for a refused configuration ($state)"

# 2. Siblings pass; the sandbox writes both.
write_config "{ \"host\": \"$vols/a\", \"container\": \"/a\", \"mode\": \"rw\" },
              { \"host\": \"$vols/b\", \"container\": \"/b\", \"mode\": \"rw\" }"
lt_launch -- /bin/sh -c 'echo in-a > /a/f && echo in-b >> /b/authorized_keys' ||
        lt_fail "a launch with two sibling volumes failed"
lt_assert_eq "written through volume A" in-a "$(cat "$vols/a/f")"
lt_assert_eq "written through volume B" in-b "$(cat "$vols/b/authorized_keys")"
lt_wait_inactive

# The redirection: B's source becomes a symlink to ~/.ssh.
mv "$vols/b" "$vols/b.orig"
ln -s "$HOME/.ssh" "$vols/b"
expect_refused "a volume source replaced by a symlink" \
        "$LT_CONFIG: profiles.test.volumes[1].host: \"$vols/b\" is a symbolic link (\"$vols/b\"); name its resolved path \"$HOME/.ssh\" instead" \
        -- /bin/sh -c 'echo ssh-ed25519 AAAA-attacker >> /b/authorized_keys'
lt_assert_eq "authorized_keys untouched" "$keys_before" "$(sha256sum <"$HOME/.ssh/authorized_keys")"
# A symlink higher up is refused the same way.
rm "$vols/b"
mv "$vols/b.orig" "$vols/b"
mv "$vols" "$vols.real"
ln -s "$vols.real" "$vols"
expect_refused "a symlink above the volume sources" \
        "$LT_CONFIG: profiles.test.volumes[0].host: \"$vols/a\" goes through a symbolic link (\"$vols\"); name its resolved path \"$vols.real/a\" instead" \
        -- /bin/true
rm "$vols"
mv "$vols.real" "$vols"
# And named directly, ~/.ssh needs "force": true.
write_config "{ \"host\": \"~/.ssh\", \"container\": \"/s\", \"mode\": \"rw\" }"
expect_refused "~/.ssh as a volume" \
        "$LT_CONFIG: profiles.test.volumes[0].host: \"$HOME/.ssh\" is \"$HOME/.ssh\", which holds credentials or starts programs on the host; add \"force\": true to this volume to mount it anyway" \
        -- /bin/true
lt_assert_eq "authorized_keys still untouched" "$keys_before" "$(sha256sum <"$HOME/.ssh/authorized_keys")"

# 3. A workspace under a directory everybody can write, not sticky.
write_config ""
mkdir -p "$HOME/lt-open/proj"
git -C "$HOME/lt-open/proj" init -q
chmod 0777 "$HOME/lt-open"
expect_refused "a workspace under a 0777 directory" \
        "workspace \"$HOME/lt-open/proj\": \"$HOME/lt-open\" is writable by group or others (mode 0777), who could swap what is mounted; every directory from / down to a mount source, and the source itself, must belong to root or to you and be writable by nobody else (a sticky directory such as /tmp excepted)" \
        "$HOME/lt-open/proj" -- /bin/true
chmod 0755 "$HOME/lt-open"
out=$(cd "$HOME/lt-open/proj" && lazaretctl launch -- /bin/echo fine) || lt_fail "the same workspace at 0755 failed: $out"
lt_assert_eq "the workspace once its parent is 0755" fine "$out"
(cd "$HOME/lt-open/proj" && lazaretctl stop >/dev/null 2>&1) || true
rm -rf "$vols" "$HOME/lt-open"
lt_log "PASS"
