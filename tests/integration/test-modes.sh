#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-modes: issue 15, attack 4. Inside a real sandbox, with the workspace
# and a read-write volume, the sandbox tries to make host files writable by
# other users and to give them away:
#   chmod 777 /workspace /workspace/.git, chmod o+w and g+w on files and
#   directories, chmod 1777; files and directories created under umask 0
#   (FIFOs are refused inside: test-special-files); chown of a workspace file, chown -R of a directory of the
#   volume; GNU tar xp and busybox tar x of an archive with 0777
#   directories, 0666 files and owner 1234:1234; cp -a of that tree from
#   /tmp, where it keeps its modes and owners.
# tar and cp must exit 0. On the host, stat shows no file or directory of
# the workspace or the volume writable by group or others, none owned by
# anyone but the user, and the modes of what the host made unchanged. In the
# sandbox's own /tmp and root overlay, which are not host files, chmod and
# chown work as usual. Both with directfs (the gVisor kernel writes host
# files) and without (the gofer does).
# Then what an older Lazaret let a sandbox leave: .git/config and the
# workspace chowned to a subordinate ID (with `lazaretctl unshare`), .git
# mode 0777. The launch is refused with one line naming the cause and the
# repair, and the repair it names makes the next launch work.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
# A failed earlier run may have left files owned by subordinate IDs.
for old in "$HOME/lt-ws/test-modes" "$HOME/lt-modes-vol"; do
        [[ ! -e $old ]] || (cd "$(dirname -- "$old")" && lazaretctl unshare -- rm -rf "$(basename -- "$old")") ||
                lt_fail "cannot remove $old of an earlier run"
done
lt_domain_setup

# GNU cp and tar next to busybox: they restore modes and owners their own way.
IMG=$HOME/lt-image-setid
lt_build_image "$IMG" "/usr/bin/cp /usr/bin/tar /usr/bin/install"
VOL=$HOME/lt-modes-vol
mkdir -p "$VOL"
write_config() {
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s", "directfs": %s,
  "volumes": [ { "host": "%s", "container": "/vol", "mode": "rw" } ] } } }\n' "$IMG" "$1" "$VOL" >"$LT_CONFIG"
}

# An archive as another machine would make it: open modes, other owners.
stage=$HOME/lt-modes-stage
rm -rf "$stage"
mkdir -p "$stage/t/open/sub"
echo a >"$stage/t/open/file"
echo b >"$stage/t/open/sub/file2"
chmod 0777 "$stage/t/open" "$stage/t/open/sub"
chmod 0666 "$stage/t/open/file" "$stage/t/open/sub/file2"
tar -C "$stage" --numeric-owner --owner=1234 --group=1234 -cf "$HOME/lt-modes.tar" t
rm -rf "$stage"
listing=$(tar -tvf "$HOME/lt-modes.tar")
grep -q '^drwxrwxrwx 1234/1234' <<<"$listing" || lt_fail "the archive holds no 0777 directory of 1234: $listing"
grep -q '^-rw-rw-rw- 1234/1234' <<<"$listing" || lt_fail "the archive holds no 0666 file of 1234: $listing"

me=$(id -u)
inside() { lt_launch -- /bin/sh -c "$1"; }

# mode and owner of every path under DIR, one line each, sorted.
modes_of() { (cd "$1" && find . -printf '%p %m %U:%G\n' | sort); }

# What the host holds under DIR: nothing writable by group or others, nothing
# another user owns.
host_clean() {
        local what=$1 dir=$2 found
        found=$(find "$dir" -perm /022 ! -type l -printf '%m %p\n')
        [[ -z $found ]] || lt_fail "$what: group- or other-writable on the host: $found"
        found=$(find "$dir" \( ! -user "$me" -o ! -group "$(id -g)" \) -printf '%U:%G %p\n')
        [[ -z $found ]] || lt_fail "$what: owned by another user or group on the host: $found"
        lt_log "ok: $what: nothing writable by group or others, nothing owned by another user"
}

# Runs CMD inside and asserts exit 0 (a tar or cp that must succeed).
must_succeed() {
        local what=$1 cmd=$2 out
        out=$(inside "$cmd" 2>&1) || lt_fail "$what failed inside: $out"
        lt_log "ok: $what exited 0"
}

attack() {   # PHASE: one round in a fresh Domain
        local phase=$1 d host before after out
        lt_keeper_start
        inside 'true' || lt_fail "$phase: a plain command fails inside"
        for d in /workspace /vol; do
                host=${d/#\/workspace/$LT_WS}
                host=${host/#\/vol/$VOL}
                inside "cd $d && mkdir -p $phase/dir && echo x >$phase/f && echo y >$phase/g && chmod 0644 $phase/f $phase/g" ||
                        lt_fail "$phase: cannot create files in $d"
                cp "$HOME/lt-modes.tar" "$host/$phase/open.tar"
                before=$(modes_of "$host")

                # The chmod family: returns 0 inside (gVisor drops the host's
                # EPERM) and changes nothing.
                inside "chmod 777 $d; chmod 777 $d/$phase $d/$phase/dir; chmod o+w $d/$phase/f; chmod g+w $d/$phase/g;
                        chmod 1777 $d/$phase/dir; chmod 0666 $d/$phase/open.tar" >/dev/null 2>&1 || true
                if [[ $d == /workspace ]]; then
                        inside "chmod 777 $d/.git $d/.git/hooks; chmod 0666 $d/.git/config" >/dev/null 2>&1 || true
                fi
                after=$(modes_of "$host")
                lt_assert_eq "$phase: modes and owners in $d after chmod" "$before" "$after"
                # The owner: chown returns 0 and changes nothing.
                out=$(inside "chown 1000:1000 $d/$phase/f && chown -R 5:5 $d/$phase/dir && chown 0:1000 $d/$phase/g" 2>&1) ||
                        lt_fail "$phase: chown in $d did not return 0: $out"
                after=$(modes_of "$host")
                lt_assert_eq "$phase: modes and owners in $d after chown" "$before" "$after"

                # Creation under umask 0: the host umask (022) masks the mode.
                inside "cd $d/$phase && umask 0 && echo z >new && mkdir newdir &&
                        /usr/bin/install -m 0777 -d newdir2" || lt_fail "$phase: cannot create files under umask 0 in $d"

                # Archives and copies as root: they succeed.
                must_succeed "$phase: GNU tar xp in $d" "mkdir $d/$phase/gnutar && /usr/bin/tar -xpf $d/$phase/open.tar -C $d/$phase/gnutar"
                must_succeed "$phase: busybox tar x in $d" "mkdir $d/$phase/bbtar && tar -xf $d/$phase/open.tar -C $d/$phase/bbtar"
                must_succeed "$phase: GNU cp -a in $d" "/usr/bin/cp -a $d/$phase/gnutar $d/$phase/cp-a"
                must_succeed "$phase: GNU cp -a from /tmp into $d" \
                        "rm -rf /tmp/t && /usr/bin/tar -xpf $d/$phase/open.tar -C /tmp && mkdir $d/$phase/cp-tmp && /usr/bin/cp -a /tmp/t $d/$phase/cp-tmp/"
                must_succeed "$phase: busybox cp -a from /tmp into $d" "mkdir $d/$phase/bbcp-tmp && cp -a /tmp/t $d/$phase/bbcp-tmp/"
                for t in gnutar bbtar cp-a cp-tmp bbcp-tmp; do
                        [[ -f $host/$phase/$t/t/open/sub/file2 ]] || lt_fail "$phase: $t made no copy in $d"
                        lt_assert_eq "$phase: content of $t in $d" b "$(cat "$host/$phase/$t/t/open/sub/file2")"
                done
                host_clean "$phase: $d" "$host"
        done
        lt_log "$phase: GNU tar xp gave $(stat -c '%a' "$LT_WS/$phase/gnutar/t/open") to a 0777 directory, $(stat -c '%a' "$LT_WS/$phase/gnutar/t/open/file") to a 0666 file"
        lt_assert_eq "$phase: workspace mode" 755 "$(stat -c %a "$LT_WS")"
        lt_assert_eq "$phase: .git mode" 755 "$(stat -c %a "$LT_WS/.git")"
        lt_assert_eq "$phase: .git/config mode" 644 "$(stat -c %a "$LT_WS/.git/config")"

        # The sandbox's own files are no host files: chmod and chown work there.
        lt_assert_eq "$phase: /tmp keeps the archive's modes and owners" "777 1234:1234 666 1234:1234" \
                "$(inside 'stat -c "%a %u:%g" /tmp/t/open /tmp/t/open/file' | tr '\n' ' ' | sed 's/ $//')"
        lt_assert_eq "$phase: chmod and chown in the root overlay" "666 7:7 1777 5:5" \
                "$(inside 'touch /root/y && chown 7:7 /root/y && chmod 666 /root/y && mkdir -p /var/x && chown 5:5 /var/x &&
                           chmod 1777 /var/x && stat -c "%a %u:%g" /root/y /var/x' | tr '\n' ' ' | sed 's/ $//')"

        kill "$LT_KEEPER" 2>/dev/null || true
        wait "$LT_KEEPER" 2>/dev/null || true
        lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
        lt_wait_inactive
}

write_config true
attack directfs
write_config false
attack gofer

# --- what an older version left: refused with the cause and the repair --------
# refused_with WHAT CAUSE REPAIR: a launch fails and its one line says both.
refused_with() {
        local what=$1 cause=$2 repair=$3 out
        out=$(lt_launch -- /bin/true 2>&1) && lt_fail "$what: the launch was accepted"
        [[ $out == *"$cause"* ]] || lt_fail "$what: the message does not name the cause ('$cause'): $out"
        [[ $out == *"$repair"* ]] || lt_fail "$what: the message does not name the repair ('$repair'): $out"
        lt_log "ok: $what refused: $out"
        lt_wait_inactive
}
# launches WHAT: after the repair a launch works; the Domain is stopped again,
# so that the next launch judges the workspace anew.
launches() {
        lt_launch -- /bin/true || lt_fail "$1: the launch after the repair failed"
        lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
        lt_wait_inactive
        lt_log "ok: $1: launches again"
}
(cd "$LT_WS" && lazaretctl unshare -- chown 1000:1000 .git/config) ||
        lt_fail "cannot chown .git/config to a subordinate ID with lazaretctl unshare"
sub_uid=$(stat -c %u "$LT_WS/.git/config")
[[ $sub_uid != "$me" ]] || lt_fail "lazaretctl unshare -- chown left .git/config with the user"
refused_with ".git/config owned by UID $sub_uid" "\"$LT_WS/.git/config\" is owned by UID $sub_uid" \
        "'lazaretctl unshare -- chown -R 0:0 $LT_WS/.git/config'"
(cd "$LT_WS" && lazaretctl unshare -- chown -R 0:0 "$LT_WS/.git/config") || lt_fail "the named repair failed"
launches ".git/config given back"

chmod 0777 "$LT_WS/.git"
refused_with ".git mode 0777" "\"$LT_WS/.git\" is writable by group or others (mode 0777)" "'chmod go-w $LT_WS/.git'"
chmod go-w "$LT_WS/.git"
launches ".git no longer writable by others"

chmod 0666 "$LT_WS/.git/config"
refused_with ".git/config mode 0666" "\"$LT_WS/.git/config\" is writable by group or others (mode 0666)" \
        "'chmod go-w $LT_WS/.git/config'"
chmod go-w "$LT_WS/.git/config"
launches ".git/config no longer writable by others"

(cd "$LT_WS" && lazaretctl unshare -- chown -R 1000:1000 .) || lt_fail "cannot chown the workspace with lazaretctl unshare"
refused_with "workspace owned by a subordinate ID" "\"$LT_WS\" is owned by UID $sub_uid" \
        "'lazaretctl unshare -- chown -R 0:0 $LT_WS'"
(cd "$LT_WS" && lazaretctl unshare -- chown -R 0:0 "$LT_WS") || lt_fail "the named repair failed"
launches "workspace given back"

echo "PASS: chmod, chown, umask 0, tar and cp as root leave host modes and owners alone; refusals name the repair"
