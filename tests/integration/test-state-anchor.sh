#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-state-anchor (issue 16): what is installed inside a persistent_dirs
# path is there after the Domain stops and starts again, on the image's own
# files, which stay unchanged on the host.
#   1. A profile persisting /usr, /etc, /root, /opt, /var/lib over an image
#      with dpkg: a .deb built here is installed with dpkg -i, a binary is
#      copied into /usr/local/bin, a file is written in /root, an image file
#      in /etc is deleted; writes to /etc/resolv.conf, /etc/hosts and
#      /etc/hostname fail.
#   2. After lazaretctl stop and a new launch: all of it is there (the
#      package known to dpkg, its file, the deleted file still gone), owned
#      by root inside and by the user in the upper layers on the host;
#      /etc/resolv.conf, /etc/hosts, /etc/hostname are Lazaret's and are not
#      in the upper layer; the prepared lower is unchanged.
#   3. lazaretctl state: list --json and inspect --json name the layers and
#      what changed (paths only), inspect's human form too; reset's question
#      names the Domain and the layers; verify and reset are refused while the
#      Domain runs (naming that it is active); without --yes and a terminal
#      reset refuses; reset of /root empties only /root; a reset whose
#      deletion was cut short leaves trash that verify reports and the next
#      reset removes; reset of everything gives back the image's own files;
#      a reset killed with SIGKILL at several points leaves a layer whole or
#      empty, verify passes and the next launch works; after the coordinator
#      is killed with SIGKILL while the Domain runs, the next launch has the
#      state mounted again and the Domain Store says the killed generation
#      was abandoned (and the next one's attested policy digest); a corrupt Domain Store fails the launch by name and is
#      left unchanged.
#      Another Domain (another workspace) never sees any of it.
#   4. An image whose layer gives a file to UID 42: the prepared lower
#      (unpacked in the mapped user namespace) keeps that owner, inside and
#      on the host (a subordinate ID). The image then changes: the installed
#      tool and a file changed inside stay, an unchanged image file follows
#      the new image.
#   5. The same with fuse-overlayfs (forced by a test hook), for the machines
#      whose kernel refuses overlayfs in a user namespace.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install --test-hooks
lt_domain_setup
lt_cleanup_hook() { systemctl --user unset-environment LAZARET_TEST_STATE_OVERLAY || true; }
systemctl --user unset-environment LAZARET_TEST_STATE_OVERLAY

command -v dpkg-deb >/dev/null || lt_skip "dpkg-deb is not installed on the host"
img=$HOME/lt-image-dpkg
# dpkg-deb runs tar (GNU tar: busybox lacks its options).
lt_build_image "$img" "$(command -v dpkg) $(command -v dpkg-deb) $(command -v dpkg-split) $(command -v tar)"
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s",
  "persistent_dirs": [ "/usr", "/etc", "/root", "/opt", "/var/lib" ] } } }\n' "$img" >"$LT_CONFIG"

# A small package: one program and one data file.
deb=$HOME/lt-deb
rm -rf "$deb"
mkdir -p "$deb/pkg/DEBIAN" "$deb/pkg/usr/bin" "$deb/pkg/usr/share/lt-hello"
printf '#!/bin/sh\necho hello from the package\n' >"$deb/pkg/usr/bin/lt-hello"
chmod 0755 "$deb/pkg/usr/bin/lt-hello"
echo data >"$deb/pkg/usr/share/lt-hello/data"
printf 'Package: lt-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: Lazaret tests <t@example.invalid>\nDescription: test package\n' \
        >"$deb/pkg/DEBIAN/control"
dpkg-deb --root-owner-group -b "$deb/pkg" "$LT_WS/lt-hello.deb" >/dev/null

data_root=$HOME/.local/share/lazaret
state=$data_root/domains/$LT_DOMAIN/state
fresh_state() { [[ ! -e $state ]] || { chmod -R u+rwx "$state" && rm -rf "$state"; }; }
fresh_state
prepared_lower() {     # the prepared rootfs of the dpkg image (the only one with dpkg)
        local r
        for r in "$data_root"/images/prepared/*/rootfs; do
                [[ -e $r/usr/bin/dpkg ]] && { echo "$r"; return; }
        done
}

install_all() {
        lt_launch -- /bin/sh -c '
                set -e
                mkdir -p /var/lib/dpkg/info /var/lib/dpkg/updates /var/lib/dpkg/triggers /usr/local/sbin /usr/local/bin
                touch /var/lib/dpkg/status /var/lib/dpkg/available
                # dpkg wants these on PATH; the busybox image has neither.
                ln -sf /bin/true /usr/local/sbin/ldconfig
                ln -sf /bin/true /usr/local/sbin/start-stop-daemon
                PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /usr/bin/dpkg -i /workspace/lt-hello.deb >/dev/null
                cp /bin/busybox /usr/local/bin/busybox-lt
                echo kept > /root/note
                mkdir -p /opt/tools && echo opt > /opt/tools/version
                rm /etc/profile
                for f in /etc/resolv.conf /etc/hosts /etc/hostname; do
                        if echo evil > $f 2>/dev/null; then echo "$f is writable"; exit 1; fi
                done
                echo installed' || lt_fail "installing inside failed"
}

check_all() {   # check_all WHAT
        local out
        out=$(lt_launch -- /bin/sh -c '
                /usr/bin/lt-hello
                grep -A3 "^Package: lt-hello" /var/lib/dpkg/status | grep "^Status:"
                /usr/local/bin/busybox-lt echo tool-runs
                cat /root/note /opt/tools/version /usr/share/lt-hello/data
                stat -c "%u:%g %n" /usr/local/bin/busybox-lt /root/note
                test -e /etc/profile && echo "/etc/profile is back"
                grep -c "^nameserver" /etc/resolv.conf
                grep -c "Written by Lazaret" /etc/hosts
                cat /etc/hostname
                stat -c %a /usr /etc /root') || lt_fail "$1: the checks inside failed: $out"
        lt_assert_eq "$1: what the sandbox sees" "hello from the package
Status: install ok installed
tool-runs
kept
opt
data
0:0 /usr/local/bin/busybox-lt
0:0 /root/note
1
1
test
755
755
700" "$out"
}

# 1, 2: kernel overlayfs (what this machine's kernel allows).
out=$(install_all)
lt_assert_eq "installing" installed "$out"
# The last session leaving stops the Domain; stop it anyway (it may be stopping already).
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
lt_wait_inactive
check_all "after a restart"
lt_wait_inactive

for d in usr etc root opt var-lib; do
        [[ -d $state/$d/upper ]] || lt_fail "no upper layer for $d in $state"
done
# No directory in the Domain Root is unreadable once the Domain stopped (overlayfs' work/work).
out=$(find "$state" -maxdepth 3 -type d ! -readable 2>&1) || true
lt_assert_eq "unreadable entries in the stopped Domain's state" "" "$out"
lt_assert_eq "format of the /usr layer" kernel-overlayfs-userxattr "$(cat "$state/usr/format")"
lt_assert_eq "host owner of an upper file" "$(id -u)" "$(stat -c %u "$state/usr/upper/local/bin/busybox-lt")"
# runsc makes an empty file where a bind's target is missing; the prepared
# lower has its own, made at preparation, which a persistent /etc shows: none
# lands in the upper layer (issue 33).
lower=$(prepared_lower)
[[ -n $lower && -e $lower/etc/profile ]] || lt_fail "the prepared lower lost /etc/profile (or is missing: '$lower')"
for f in resolv.conf hosts hostname; do
        [[ ! -e $state/etc/upper/$f ]] || lt_fail "/etc/$f is in $state/etc/upper: '$(cat "$state/etc/upper/$f")'"
        # The mount point preparation makes (issue 33): an empty file, never written.
        [[ -f $lower/etc/$f && ! -s $lower/etc/$f ]] || lt_fail "/etc/$f in the prepared lower is not the empty mount point of preparation"
done
[[ ! -e $lower/usr/local/bin/busybox-lt && ! -e $lower/root/note ]] || lt_fail "a write inside reached the prepared lower"

# 3. lazaretctl state.
ctl() { (cd "$LT_WS" && lazaretctl "$@"); }
out=$(ctl state list --json) || lt_fail "state list failed: $out"
lt_assert_eq "state list: the layers of Domain $LT_DOMAIN" "/etc /opt /root /usr /var/lib" \
        "$(jq -r --arg id "$LT_DOMAIN" '[.[] | select(.domain_id == $id) | .layers[].path] | join(" ")' <<<"$out")"
out=$(ctl state inspect --json) || lt_fail "state inspect failed: $out"
lt_assert_eq "state inspect: the Domain" "$LT_DOMAIN test $LT_WS" "$(jq -r '"\(.domain_id) \(.profile) \(.workspace)"' <<<"$out")"
lt_assert_eq "state inspect: the copied binary" written \
        "$(jq -r '.layers[] | select(.path == "/usr") | .changed[] | select(.path == "/usr/local/bin/busybox-lt") | .change' <<<"$out")"
lt_assert_eq "state inspect: the deleted image file" deleted \
        "$(jq -r '.layers[] | select(.path == "/etc") | .changed[] | select(.path == "/etc/profile") | .change' <<<"$out")"
# DX-6: the human form says the same, changed paths by name and no file's contents.
out=$(ctl state inspect) || lt_fail "state inspect (human) failed: $out"
[[ $out == "Domain $LT_DOMAIN (profile test, workspace $LT_WS)"* ]] || lt_fail "state inspect does not begin with the Domain: $out"
grep -Eq '^ +written +/usr/local/bin/busybox-lt$' <<<"$out" || lt_fail "state inspect does not list the copied binary: $out"
grep -Eq '^ +deleted +/etc/profile$' <<<"$out" || lt_fail "state inspect does not list the deleted image file: $out"
! grep -qx kept <<<"$out" || lt_fail "state inspect shows the contents of /root/note: $out"
ctl state verify >/dev/null || lt_fail "state verify of a stopped Domain failed: $(ctl state verify 2>&1)"

lt_keeper_start
for verb in verify "reset --yes"; do
        set +e
        out=$(ctl state $verb 2>&1)
        rc=$?
        set -e
        [[ $rc -ne 0 && $out == *"Domain $LT_DOMAIN is active"* ]] ||
                lt_fail "state $verb while a session runs: exit $rc, '$out'"
done
lt_log "ok: verify and reset refused while a session runs"
kill "$LT_KEEPER"
wait "$LT_KEEPER" 2>/dev/null || true
LT_KEEPER=
lt_wait_inactive

set +e
out=$(ctl state reset /root 2>&1 </dev/null)
rc=$?
set -e
[[ $rc -ne 0 && $out == *"add --yes"* ]] || lt_fail "state reset without --yes and without a terminal: exit $rc, '$out'"
# DX-6: what it would have asked names the resolved Domain and the one layer.
[[ $out == "Reset /root of Domain $LT_DOMAIN (profile test, workspace $LT_WS)? "* ]] ||
        lt_fail "state reset does not name the Domain and the layer it would reset: '$out'"
[[ -e $state/root/upper/note ]] || lt_fail "a refused reset removed /root/note"
ctl state reset --yes /root >/dev/null || lt_fail "state reset /root failed"
out=$(lt_launch -- /bin/sh -c 'cat /root/note 2>/dev/null || echo no-note; /usr/local/bin/busybox-lt echo tool-stays') ||
        lt_fail "a launch after state reset /root failed: $out"
lt_assert_eq "after state reset /root" "no-note
tool-stays" "$out"
# The README's sequence at once after the last session ended, no wait
# between: stop returns when the Domain lock is free, so reset follows.
(cd "$LT_WS" && lazaretctl stop) >"$HOME/stop.out" 2>&1 || lt_fail "stop right after the last session failed: $(cat "$HOME/stop.out")"
ctl state reset --yes /root >/dev/null 2>"$HOME/reset.err" ||
        lt_fail "state reset right after stop failed: $(cat "$HOME/reset.err")"
lt_log "ok: stop, then state reset, right after the last session ended"
# And without the stop: reset waits for a Domain going down, and says so.
lt_launch -- /bin/true || lt_fail "a launch of true failed"
ctl state reset --yes /root >/dev/null 2>"$HOME/reset.err" ||
        lt_fail "state reset right after the last session ended failed: $(cat "$HOME/reset.err")"
lt_log "ok: state reset waits for a Domain going down ($(tr '\n' ' ' <"$HOME/reset.err"))"
lt_wait_inactive

# A reset killed after its rename: what is left in the trash, verify names, the next reset removes.
mkdir -p "$data_root/domains/$LT_DOMAIN/state-trash/left/upper/d"
echo x >"$data_root/domains/$LT_DOMAIN/state-trash/left/upper/d/f"
out=$(ctl state verify) || lt_fail "state verify with trash failed: $out"
[[ $out == *"interrupted reset"* ]] || lt_fail "state verify does not report the trash: $out"
# DX-6: asked about every layer, it names each (as state list does) and where they are.
layers=$(ctl state list --json | jq -r --arg id "$LT_DOMAIN" '[.[] | select(.domain_id == $id) | .layers[].path] | join(", ")')
[[ $layers == /etc,* ]] || lt_fail "state list --json shows no layers before the reset of everything: '$layers'"
set +e
out=$(ctl state reset 2>&1 </dev/null)
set -e
[[ $out == "Reset every persistent path of Domain $LT_DOMAIN (profile test, workspace $LT_WS)? "*$'\nLayers: '"$layers ($state)"$'\n'* ]] ||
        lt_fail "state reset of everything does not name the Domain and its layers: '$out'"
ctl state reset --yes >/dev/null || lt_fail "state reset of everything failed"
[[ ! -e $data_root/domains/$LT_DOMAIN/state-trash ]] || lt_fail "state reset left $data_root/domains/$LT_DOMAIN/state-trash"
ctl state verify >/dev/null || lt_fail "state verify after a reset failed: $(ctl state verify 2>&1)"
# (/usr/local/bin holds the escalation client's mount point; what the test put there must be gone.)
out=$(lt_launch -- /bin/sh -c 'ls /usr/local/bin 2>&1 | grep -v "^lazaret-escalate$"; test -e /etc/profile && echo profile; test -x /usr/bin/dpkg && echo dpkg') ||
        lt_fail "a launch after state reset failed: $out"
lt_assert_eq "after state reset: the image's own files only" "profile
dpkg" "$out"
lt_wait_inactive

# A reset killed with SIGKILL at several points: verify passes, a launch
# works, and the layer is whole or empty, never partly there.
for delay in 0 0.05 0.2 0.5; do
        out=$(lt_launch -- /bin/sh -c 'mkdir -p /opt/many && cd /opt/many && for i in $(seq 1 2000); do echo $i > f$i; done; ls | wc -l') ||
                lt_fail "filling /opt failed: $out"
        lt_assert_eq "files in /opt/many before the killed reset" 2000 "$(echo $out)"
        lt_wait_inactive
        (cd "$LT_WS" && exec lazaretctl state reset --yes /opt) >/dev/null 2>&1 &
        pid=$!
        sleep "$delay"
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        ctl state verify >/dev/null || lt_fail "state verify after a reset killed at ${delay}s: $(ctl state verify 2>&1)"
        n=$(lt_launch -- /bin/sh -c 'ls /opt/many 2>/dev/null | wc -l') || lt_fail "a launch after a reset killed at ${delay}s failed"
        n=$(echo $n)
        [[ $n == 2000 || $n == 0 ]] || lt_fail "after a reset killed at ${delay}s /opt/many holds $n of 2000 files"
        lt_log "ok: reset killed at ${delay}s: /opt/many holds $n files"
        lt_wait_inactive
done

# A coordinator killed with SIGKILL while the Domain runs: the next launch
# mounts the state again (the overlays ended with the supervisor's namespace).
ctl state reset --yes >/dev/null
lt_launch -- /bin/sh -c 'mkdir -p /usr/local/bin && cp /bin/busybox /usr/local/bin/busybox-lt' || lt_fail "installing before the crash failed"
lt_wait_inactive
lt_keeper_start
main=$(systemctl --user show -P MainPID "lazaret@$LT_DOMAIN.service")
[[ $main -gt 0 ]] || lt_fail "no coordinator process to kill"
kill -KILL "$main"
wait "$LT_KEEPER" 2>/dev/null || true
LT_KEEPER=
lt_wait_inactive
out=$(lt_launch -- /usr/local/bin/busybox-lt echo recovered) || lt_fail "the launch after a killed coordinator failed: $out"
lt_assert_eq "after a killed coordinator" recovered "$out"
lt_wait_inactive
# The Domain Store: the killed owner's generation was closed as abandoned
# by the next one, and a stopped Domain holds no lease.
store=$data_root/domains/$LT_DOMAIN/store.sqlite
if command -v sqlite3 >/dev/null; then
        lt_assert_eq "the last two generations" "stopped abandoned" \
                "$(sqlite3 -readonly "$store" 'SELECT state FROM generations ORDER BY id DESC LIMIT 2' | tr '\n' ' ' | sed 's/ $//')"
        lt_assert_eq "open leases of a stopped Domain" 0 \
                "$(sqlite3 -readonly "$store" 'SELECT count(*) FROM leases WHERE released_usec IS NULL')"
        # The generation that ran recorded the policy digest it attested (FR-18).
        [[ $(sqlite3 -readonly "$store" 'SELECT network_fingerprint FROM generations ORDER BY id DESC LIMIT 1') =~ ^[0-9a-f]{64}$ ]] ||
                lt_fail "the last generation recorded no attested policy digest: $(sqlite3 -readonly "$store" 'SELECT * FROM generations ORDER BY id DESC LIMIT 1')"
fi
# state gc: unleased old lowers and quarantined preparations go; the lower a
# running Domain leased stays, however old, and the Domain keeps working.
lt_keeper_start
leased=$(sqlite3 -readonly "$store" 'SELECT lower_id FROM leases WHERE released_usec IS NULL' 2>/dev/null ||
        basename -- "$(dirname -- "$(prepared_lower)")")
fake=$data_root/images/prepared/$(printf 'f%.0s' $(seq 1 64))
mkdir -p "$fake/rootfs/etc" "$data_root/images/prepared/.quarantine-lt"
touch -d '2 hours ago' "$fake" "$data_root/images/prepared/$leased"
out=$(ctl state gc --yes) || lt_fail "state gc failed: $out"
[[ ! -e $fake && ! -e $data_root/images/prepared/.quarantine-lt ]] || lt_fail "state gc left an unleased lower: $out"
[[ -d $data_root/images/prepared/$leased/rootfs ]] || lt_fail "state gc removed the lower a running Domain leased"
out=$(lt_launch -- /bin/echo still-running) || lt_fail "a launch into the running Domain after gc failed"
lt_assert_eq "the running Domain after gc" still-running "$out"
kill "$LT_KEEPER"
wait "$LT_KEEPER" 2>/dev/null || true
LT_KEEPER=
lt_wait_inactive

# A corrupt store: the launch fails naming it, and the file stays as it was.
cp "$store" "$store.good"
printf 'SQLite format 3\0not a database at all' >"$store"
sum=$(sha256sum <"$store")
set +e
out=$(lt_launch -- /bin/true 2>&1)
rc=$?
set -e
[[ $rc -ne 0 && $out == *"the Domain Store $store is corrupt"* ]] || lt_fail "a launch over a corrupt store: exit $rc, '$out'"
lt_assert_eq "the corrupt store after the refused launch" "$sum" "$(sha256sum <"$store")"
lt_wait_inactive
mv "$store.good" "$store"
rm -f "$store-wal" "$store-shm"
lt_launch -- /bin/true || lt_fail "a launch with the store back failed"
lt_wait_inactive

# Another Domain has its own, empty, state.
other=$HOME/lt-ws/test-state-anchor-other
rm -rf "$other"
mkdir -p "$other"
git -C "$other" init -q
# (/usr/local/bin holds only the escalation client's mount point there.)
out=$(cd "$other" && lazaretctl launch -- /bin/sh -c 'ls /usr/local/bin 2>&1 | grep -v "^lazaret-escalate$"; cat /root/note 2>&1; test -e /etc/profile && echo profile') ||
        lt_fail "a launch in another workspace failed: $out"
lt_assert_eq "another Domain's view" "cat: can't open '/root/note': No such file or directory
profile" "$out"
lazaretctl --workspace "$other" stop >/dev/null 2>&1 || true

# 4. Owners kept in the prepared lower; an image that changes.
make_image() {  # make_image DIR VERSION
        rm -rf "$1"
        LAZARET_TEST_IMAGE_PROGRAMS="$(command -v dpkg)" \
        LAZARET_TEST_IMAGE_FILES="/var/lib/lt-owned:42:43:hello /etc/lt-version:0:0:$2 /usr/share/lt-img/a:0:0:$2 /usr/share/lt-img/b:0:0:$2 /var/lib/dpkg/status:0:0:Package:base-$2" \
                "$LAZARET_SOURCE_ROOT/tests/harness/make-test-image" "$1" >/dev/null 2>&1 || lt_fail "cannot build the test image $1"
}
use_image() {
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s",
  "persistent_dirs": [ "/usr", "/etc", "/root", "/opt", "/var/lib" ] } } }\n' "$1" >"$LT_CONFIG"
}
make_image "$HOME/lt-image-v1" v1
use_image "$HOME/lt-image-v1"
out=$(lt_launch -- /bin/sh -c 'stat -c "%u:%g" /var/lib/lt-owned; cat /var/lib/lt-owned /etc/lt-version
        mkdir -p /usr/local/bin && cp /bin/busybox /usr/local/bin/busybox-lt && echo mine > /usr/share/lt-img/a
        echo "Package: installed-inside" >> /var/lib/dpkg/status') ||
        lt_fail "a launch of image v1 failed: $out"
lt_assert_eq "image v1: owner and contents" "42:43
hello
v1" "$out"
lt_wait_inactive
subuid=$(awk -F: -v u="$(id -un)" '$1 == u { print $2; exit }' /etc/subuid)
subgid=$(awk -F: -v u="$(id -un)" '$1 == u { print $2; exit }' /etc/subgid)
# The lower of this build of v1: the record naming its manifest.
v1_digest=$(jq -r '.manifests[0].digest' "$HOME/lt-image-v1/index.json")
rec=
for f in "$data_root"/images/prepared/*/prepared.json; do
        [[ $(jq -r .manifest_digest "$f") == "$v1_digest" ]] && rec=$f
done
[[ -n $rec ]] || lt_fail "no prepared lower of image v1 with a prepared.json"
lt_assert_eq "host owner of the lower's UID-42 file" "$((subuid + 41)):$((subgid + 42))" \
        "$(stat -c %u:%g "$(dirname -- "$rec")/rootfs/var/lib/lt-owned")"
lt_assert_eq "prepared.json: the preparer" umoci-unpack-userns-2 "$(jq -r .preparer "$rec")"
[[ $(basename -- "$(dirname -- "$rec")") == "$(jq -r .artifact_id "$rec")" ]] || lt_fail "the lower is not named by its artifact ID: $rec"
lt_assert_eq "the lower after writes inside" v1 "$(cat "$(dirname -- "$rec")/rootfs/usr/share/lt-img/a")"

make_image "$HOME/lt-image-v2" v2
use_image "$HOME/lt-image-v2"
out=$(lt_launch -- /bin/sh -c '/usr/local/bin/busybox-lt echo tool-stays; cat /etc/lt-version /usr/share/lt-img/a /usr/share/lt-img/b' \
        2>"$HOME/v2.err") || lt_fail "a launch of image v2 failed: $out $(cat "$HOME/v2.err")"
lt_assert_eq "image v2 over the same state" "tool-stays
v2
mine
v2" "$out"
lt_wait_inactive
# The persisted package database no longer matches the image: said at launch and by inspect.
grep -q "^lazaretctl: warning: the image changed since packages were installed in the persistent /var/lib: dpkg's database" \
        "$HOME/v2.err" || lt_fail "no warning at launch about the stale package database: $(cat "$HOME/v2.err")"
[[ $(ctl state inspect --json | jq -r .package_database_stale) == *"no longer matches"* ]] ||
        lt_fail "state inspect does not say the package database is stale: $(ctl state inspect --json | jq -c .)"
lt_log "ok: a persisted dpkg database over a changed image is said at launch and by inspect"
ctl state reset --yes /var/lib >/dev/null
lt_launch -- /bin/true 2>"$HOME/v2b.err" || lt_fail "a launch after resetting /var/lib failed"
lt_wait_inactive
! grep -q "warning" "$HOME/v2b.err" || lt_fail "a warning after resetting /var/lib: $(cat "$HOME/v2b.err")"
[[ $(ctl state inspect --json | jq -r '.package_database_stale // "none"') == none ]] ||
        lt_fail "state inspect still says the package database is stale after a reset"
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s",
  "persistent_dirs": [ "/usr", "/etc", "/root", "/opt", "/var/lib" ] } } }\n' "$img" >"$LT_CONFIG"

# 5. fuse-overlayfs, in a Domain of its own.
command -v fuse-overlayfs >/dev/null || lt_skip "fuse-overlayfs is not installed (kernel overlayfs passed)"
fuse_ws=$HOME/lt-ws/test-state-anchor-fuse
rm -rf "$fuse_ws"
mkdir -p "$fuse_ws"
git -C "$fuse_ws" init -q
cp "$LT_WS/lt-hello.deb" "$fuse_ws/"
main_ws=$LT_WS main_domain=$LT_DOMAIN
LT_WS=$fuse_ws
LT_DOMAIN=$(cd "$LT_WS" && lazaretctl domain-id)
state=$data_root/domains/$LT_DOMAIN/state
fresh_state
systemctl --user set-environment LAZARET_TEST_STATE_OVERLAY=fuse-overlayfs
out=$(install_all)
lt_assert_eq "installing (fuse-overlayfs)" installed "$out"
# The last session leaving stops the Domain; stop it anyway (it may be stopping already).
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
lt_wait_inactive
systemctl --user unset-environment LAZARET_TEST_STATE_OVERLAY
# The layer remembers its format: fuse-overlayfs again without the hook.
check_all "after a restart (fuse-overlayfs)"
lt_assert_eq "format of the /usr layer" fuse-overlayfs "$(cat "$state/usr/format")"
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
lt_wait_inactive
LT_WS=$main_ws LT_DOMAIN=$main_domain

echo "PASS: persistent dirs survive a restart (kernel overlayfs and fuse-overlayfs), /etc/resolv.conf, hosts, hostname are Lazaret's"
