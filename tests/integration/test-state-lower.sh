#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-state-lower (issue 33, item 5): a launch leaves the prepared lower as
# preparation made it, also for a profile whose mount points the image
# lacks (runsc makes a missing mount point in the tree that holds it).
#   1. A profile whose destinations the image has: the root is the prepared
#      lower itself (no overlay of the supervisor's); the lower's content
#      hash is taken.
#   2. A profile with a persistent /srv/data and volumes at
#      /opt/newtool/cache and /tmp/lt-lower/vol, none of which the image has:
#      the root is an overlay of the supervisor's; what is written inside
#      lands in the persistent layer and the volumes, and is there after a
#      restart; the missing directories exist inside, owned by root.
#   3. The lower's content hash is what it was before these launches.
#   3b. A symbolic link the sandbox writes in a persistent /etc, where the
#      image has the directory a volume goes to, would lead runsc into the
#      root: the root is read-only to runsc, so the launch fails and the
#      lower is unchanged.
#   4. With fuse-overlayfs (forced by a test hook; volumes only, so that the
#      root's is the only fuse-overlayfs): the same, the hash unchanged;
#      fuse-overlayfs is one of the supervisor's helpers, and killing it
#      ends the Domain with one line that names the root's overlay.
#   5. The lower is what umoci unpacks from the image plus Lazaret's own
#      mount points made at preparation.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install --test-hooks
lt_domain_setup
lt_cleanup_hook() { systemctl --user unset-environment LAZARET_TEST_STATE_OVERLAY || true; }
systemctl --user unset-environment LAZARET_TEST_STATE_OVERLAY

# An image of this test's own (files of its own: another manifest digest,
# so another prepared lower), without /srv and /opt.
img=$HOME/lt-image-lower
lt_build_image "$img" "" "/etc/lt-lower:0:0:lower /etc/lt-dir/cache/keep:0:0:keep"
vol=$HOME/lt-lower-vol
tvol=$HOME/lt-lower-tmpvol
rm -rf "$vol" "$tvol"
mkdir -p "$vol" "$tvol"
ctl() { (cd "$LT_WS" && lazaretctl "$@"); }
data_root=$HOME/.local/share/lazaret
state=$data_root/domains/$LT_DOMAIN/state
if [[ -e $state ]]; then
        ctl state reset --yes >/dev/null || lt_fail "cannot reset an earlier run's state"
fi
restart() {
        ctl stop >/dev/null 2>&1 || true
        lt_wait_inactive
        LT_KEEPER=
}
profile() {     # profile PERSISTENT_DIRS VOLUMES (JSON arrays)
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s",
  "persistent_dirs": %s, "volumes": %s } } }\n' "$img" "$1" "$2" >"$LT_CONFIG"
}
volumes='[ { "host": "'$vol'", "container": "/opt/newtool/cache", "mode": "rw" },
           { "host": "'$tvol'", "container": "/tmp/lt-lower/vol", "mode": "rw" } ]'
# While the Domain runs: the type of the supervisor's mount of the root
# ("lazaret-root" in its mount table), empty without one.
root_mount() {
        local p
        for p in $(lt_unit_pids "lazaret-$LT_DOMAIN-sandbox.scope"); do
                [[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == */lazaret-supervisor\ * ]] || continue
                sed -n 's/.* - \([^ ]*\) lazaret-root .*/\1/p' "/proc/$p/mountinfo"
                return 0
        done
        lt_fail "no lazaret-supervisor in the sandbox scope"
}

# 1. Every destination in the image: no overlay; the lower's hash before.
profile '[]' '[]'
lt_keeper_start
lt_assert_eq "the root's mount with every mount point in the image" "" "$(root_mount)"
restart
lower=
for r in "$data_root"/images/prepared/*/rootfs; do
        [[ -e $r/etc/lt-lower && -e $r/etc/lt-dir/cache/keep ]] && lower=$r
done
[[ -n $lower ]] || lt_fail "no prepared lower of $img"
before=$(lt_tree_hash "$lower")
listing=$(cd "$lower" && find . | sort)

# 2. Mount points the image lacks.
profile '[ "/srv/data" ]' "$volumes"
lt_keeper_start
mounted=$(root_mount)
out=$(lt_launch -- /bin/sh -c '
        echo persisted >/srv/data/f && echo vol >/opt/newtool/cache/f && echo tmp >/tmp/lt-lower/vol/f || exit 1
        stat -c "%u:%g %a %n" /srv /opt /opt/newtool') || lt_fail "writing inside: $out"
lt_assert_eq "the directories the image lacks, inside" "0:0 755 /srv
0:0 755 /opt
0:0 755 /opt/newtool" "$out"
lt_assert_eq "the volumes on the host" "vol tmp" "$(cat "$vol/f") $(cat "$tvol/f")"
restart
out=$(lt_launch -- /bin/sh -c 'cat /srv/data/f /opt/newtool/cache/f /tmp/lt-lower/vol/f') ||
        lt_fail "reading after a restart: $out"
lt_assert_eq "after a restart" "persisted
vol
tmp" "$out"
restart
lt_assert_eq "the persistent /srv/data on the host" persisted "$(cat "$state/srv-data/upper/f")"

# 3. The lower unchanged.
after=$(lt_tree_hash "$lower")
if [[ $after != "$before" ]]; then
        diff <(echo "$listing") <(cd "$lower" && find . | sort) >&2 || true
        lt_fail "the launches changed the prepared lower $lower (content hash $before before, $after after)"
fi
lt_log "ok: the prepared lower is unchanged by launches with mount points the image lacks ($after)"
lt_assert_eq "the root's mount with mount points the image lacks" overlay "$mounted"

# 3b. A symbolic link of the sandbox's on the way to a volume's destination.
profile '[ "/etc" ]' '[]'
out=$(lt_launch -- /bin/sh -c 'rm -r /etc/lt-dir && ln -s /srv/escape /etc/lt-dir && echo linked' 2>&1) ||
        lt_fail "writing the link inside: $out"
lt_assert_eq "the link inside" linked "$out"
restart
profile '[ "/etc" ]' '[ { "host": "'"$vol"'", "container": "/etc/lt-dir/cache", "mode": "rw" } ]'
if out=$(lt_launch -- /bin/true 2>&1); then
        lt_fail "a launch whose volume runsc would make through the sandbox's link into the root succeeded"
fi
[[ $out == *"/srv: read-only file system"* ]] || lt_fail "the launch through the link failed, but not on the read-only root: $out"
lt_log "ok: the launch through the sandbox's link failed on the read-only root"
restart
ctl state reset --yes /etc >/dev/null || lt_fail "state reset of /etc failed"
after=$(lt_tree_hash "$lower")
if [[ $after != "$before" ]]; then
        diff <(echo "$listing") <(cd "$lower" && find . | sort) >&2 || true
        lt_fail "a launch through the sandbox's link changed the prepared lower $lower"
fi
lt_log "ok: the root is read-only to runsc: the sandbox's link led nothing into the prepared lower"

# 4. fuse-overlayfs.
if command -v fuse-overlayfs >/dev/null; then
        systemctl --user set-environment LAZARET_TEST_STATE_OVERLAY=fuse-overlayfs
        rm -f "$vol/f" "$tvol/f"
        profile '[]' "$volumes"
        lt_keeper_start
        lt_assert_eq "the root's mount over fuse-overlayfs" fuse.fuse-overlayfs "$(root_mount)"
        out=$(lt_launch -- /bin/sh -c 'echo fuse >/opt/newtool/cache/f && cat /opt/newtool/cache/f /etc/lt-lower') ||
                lt_fail "over fuse-overlayfs: $out"
        lt_assert_eq "over fuse-overlayfs" "fuse
lower" "$out"
        pid=
        for p in $(lt_unit_pids "lazaret-$LT_DOMAIN-sandbox.scope"); do
                [[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == *fuse-overlayfs\ -f\ * ]] && { pid=$p; break; }
        done
        [[ -n $pid ]] || lt_fail "no fuse-overlayfs process in the sandbox scope"
        (cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 60 </dev/null >"$HOME/lower-death.out" 2>"$HOME/lower-death.err") &
        bg=$!
        for _ in $(seq 1 100); do
                [[ $(ctl status --json 2>/dev/null | jq '.Sessions | length') == 2 ]] && break
                sleep 0.1
        done
        kill -KILL "$pid"
        for _ in $(seq 1 100); do
                kill -0 "$bg" 2>/dev/null || break
                sleep 0.1
        done
        kill -0 "$bg" 2>/dev/null && lt_fail "the session's client still runs 10 s after fuse-overlayfs was killed"
        rc=0
        wait "$bg" || rc=$?
        [[ $rc -ne 0 ]] || lt_fail "a session whose root's fuse-overlayfs was killed exited 0"
        reason="the root file system's overlay fuse-overlayfs (pid $pid) was killed by signal 9 (SIGKILL)"
        grep -qF "$reason" "$HOME/lower-death.err" || lt_fail "the client did not say '$reason': $(cat "$HOME/lower-death.err")"
        restart
        systemctl --user unset-environment LAZARET_TEST_STATE_OVERLAY
        lt_assert_eq "the prepared lower after fuse-overlayfs" "$before" "$(lt_tree_hash "$lower")"
        lt_log "ok: fuse-overlayfs for the root: the lower unchanged; killed, the client said: $(grep -m1 -F "$reason" "$HOME/lower-death.err")"
else
        lt_log "fuse-overlayfs is not installed: its part skipped"
fi

# 5. What preparation made, and nothing else.
ref=$HOME/lt-lower-ref
rm -rf "$ref"
umoci unpack --rootless --image "$img:latest" "$ref" >/dev/null 2>&1 || lt_fail "umoci unpack of $img failed"
mkdir -p "$ref"/rootfs/{proc,dev,sys,tmp,workspace,run/lazaret,usr/local/bin}
touch "$ref"/rootfs/etc/{resolv.conf,hosts,hostname} "$ref/rootfs/usr/local/bin/lazaret-escalate"
if [[ $(lt_tree_hash "$ref/rootfs") != "$(lt_tree_hash "$lower")" ]]; then
        diff <(cd "$ref/rootfs" && find . | sort) <(cd "$lower" && find . | sort) >&2 || true
        lt_fail "the prepared lower $lower is not what umoci unpacks plus Lazaret's mount points"
fi
rm -rf "$ref"
echo "PASS: the prepared lower is unchanged by launches whose mount points the image lacks"
