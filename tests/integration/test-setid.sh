#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-setid: issue 9 hole 2, the sandbox must not plant set-user-ID or
# set-group-ID files on the host (sandbox root is the developer's UID there,
# so such a file would let any local user run code as the developer). In a
# real sandbox, with the workspace and a read-write volume, each attack is
# performed and must leave no such bit on the host:
#   chmod u+s, g+s, 6755 on a file and 2755 on a directory (the mode stays
#   as it was, on the host and inside); cp, cp -p, cp -a of a set-user-ID
#   file the host made (busybox: in a volume fails with "Operation not
#   permitted", in /workspace the view makes the copy without the bit; GNU);
#   tar x of an archive the host made holding set-ID entries (busybox tar,
#   GNU tar xp); install -m 4755 and install -m 2755 -d (GNU).
# Both with directfs (the gVisor kernel writes host files) and without it
# (the gofer does). Afterwards `find -perm /6000` over the workspace and the
# volume finds only what the host itself made, plus the one case the kernel
# makes: a directory created inside a set-group-ID directory of the host
# inherits S_ISGID.
# Ordinary modes (0755, 0600, 1755, cp -p of a 0750 file) still work inside
# and are seen on the host (write for group or others: test-modes.sh), and set-ID bits on the sandbox's own files (its
# root overlay, /tmp), which are not host files, still work.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

# GNU cp, tar and install next to busybox: they restore modes their own way.
IMG=$HOME/lt-image-setid
lt_build_image "$IMG" "/usr/bin/cp /usr/bin/tar /usr/bin/install"
VOL=$HOME/lt-setid-vol
chmod -R u+rwX "$VOL" 2>/dev/null || true
rm -rf "$VOL"
mkdir -p "$VOL"
write_config() {
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s", "directfs": %s,
  "volumes": [ { "host": "%s", "container": "/vol", "mode": "rw" } ] } } }\n' "$IMG" "$1" "$VOL" >"$LT_CONFIG"
}
write_config true

# What the host itself makes: a set-user-ID program, a set-group-ID
# directory (group-shared directories are a normal host setup) and an
# archive with set-ID entries, built outside the workspace.
cp /bin/busybox "$LT_WS/hostsuid"
chmod 4755 "$LT_WS/hostsuid"
mkdir "$LT_WS/hostsgid"
chmod 2775 "$LT_WS/hostsgid"
echo plain >"$LT_WS/plain"
chmod 0750 "$LT_WS/plain"
stage=$HOME/lt-setid-stage
rm -rf "$stage"
mkdir -p "$stage/t/sgiddir"
cp /bin/busybox "$stage/t/suid"
cp /bin/busybox "$stage/t/sgid"
cp /bin/busybox "$stage/t/sgiddir/both"
chmod 4755 "$stage/t/suid"
chmod 2755 "$stage/t/sgid" "$stage/t/sgiddir"
chmod 6755 "$stage/t/sgiddir/both"
tar -C "$stage" --numeric-owner --owner=0 --group=0 -cf "$LT_WS/evil.tar" t
rm -rf "$stage"
listing=$(tar -tvf "$LT_WS/evil.tar")
grep -q '^-rwsr-xr-x' <<<"$listing" || lt_fail "the archive holds no set-user-ID entry: $listing"
cp "$LT_WS/evil.tar" "$VOL/evil.tar"
cp -p "$LT_WS/hostsuid" "$VOL/hostsuid"

# A session that stays: every launch of one phase runs in the same sandbox.
lt_keeper_start
keeper=$LT_KEEPER

inside() { lt_launch -- /bin/sh -c "$1"; }
# Runs CMD (which tries to set a set-ID bit on FILE, a path below /workspace
# or /vol) inside: FILE's mode must be WANT (default: unchanged) on the host
# and inside. gVisor's chmod is an fchmod on the host, whose set-ID bits the
# set-ID filter's responder strips (the rest of the mode applies, C22); gVisor
# 0.0~20240729 drops a host EPERM for chmod (the call returns 0).
must_refuse() {
        local what=$1 file=$2 cmd=$3 want=${4:-} host before after inner out rc=0
        host=${file/#\/workspace/$LT_WS}
        host=${host/#\/vol/$VOL}
        before=$(stat -c %a "$host")
        want=${want:-$before}
        out=$(inside "$cmd" 2>&1) || rc=$?
        after=$(stat -c %a "$host")
        inner=$(inside "stat -c %a $file")
        lt_assert_eq "$what: mode on the host" "$want" "$after"
        lt_assert_eq "$what: mode inside" "$want" "$inner"
        if ((rc != 0)); then
                grep -q "Operation not permitted" <<<"$out" || lt_fail "$what failed, but not with EPERM: $out"
                lt_log "ok: $what refused: $(tail -n 1 <<<"$out")"
        else
                lt_log "ok: $what changed nothing (exit 0: gVisor dropped the host's EPERM)"
        fi
}
# Whatever a command's status: it must leave no set-ID file under DIR, outside
# the State Anchor's layers, which keep modes as written inside (issue 33;
# another test's Domain of the same test user may hold set-ID files there).
no_setid_under() {
        local what=$1 dir=$2 found
        found=$(find "$dir" \( -path "*/domains/*/state" -o -path "*/domains/*/state-trash" \) -prune -o -perm /6000 -printf '%m %p\n')
        [[ -z $found ]] || lt_fail "$what left set-ID files on the host: $found"
        lt_log "ok: $what left no set-ID file on the host"
}

inside 'true' || lt_fail "a plain command fails inside"

for d in /workspace /vol; do
        # --- the chmod family ---------------------------------------------
        inside "cd $d && echo x >f && mkdir dir && chmod 0644 f" || lt_fail "cannot create files in $d"
        must_refuse "chmod u+s in $d" "$d/f" "chmod u+s $d/f"
        must_refuse "chmod g+s in $d" "$d/f" "chmod g+s $d/f"
        must_refuse "chmod 6755 in $d" "$d/f" "chmod 6755 $d/f" 755
        inside "chmod 0644 $d/f" || lt_fail "chmod 0644 fails in $d"
        must_refuse "chmod 2755 on a directory in $d" "$d/dir" "chmod 2755 $d/dir"
        # Creating a file with the bits (busybox cp keeps the source's mode,
        # with or without -p): the error reaches the program.
        # In /workspace the workspace view makes the copy without the bit (the
        # file is created as under umask, its set-ID chmod refused); in a
        # volume the set-ID filter refuses the create itself.
        for cp in "cp -p" "cp -a" cp; do
                if [[ $d == /workspace ]]; then
                        inside "cd $d && rm -f copy && $cp hostsuid copy" >/dev/null 2>&1 || true
                        m=$(stat -c %a "$LT_WS/copy" 2>/dev/null || echo none)
                        [[ $m == none || $((8#$m & 8#6000)) -eq 0 ]] || lt_fail "$cp of a set-user-ID file in $d left mode $m on the host"
                        lt_log "ok: busybox $cp of a set-user-ID file in $d: host mode $m"
                        continue
                fi
                if out=$(inside "cd $d && $cp hostsuid copy" 2>&1); then
                        lt_fail "$cp of a set-user-ID file succeeded in $d"
                fi
                grep -q "Operation not permitted" <<<"$out" || lt_fail "$cp in $d failed, but not with EPERM: $out"
                lt_log "ok: busybox $cp of a set-user-ID file refused in $d: $out"
        done
        # --- copies and archives: their status does not matter, the bits do --
        inside "cd $d && mkdir bbtar && tar -xf evil.tar -C bbtar" >/dev/null 2>&1 || true
        inside "cd $d && mkdir gnutar && /usr/bin/tar -xpf evil.tar -C gnutar" >/dev/null 2>&1 || true
        inside "cd $d && /usr/bin/install -m 4755 f inst-suid" >/dev/null 2>&1 || true
        inside "cd $d && /usr/bin/install -m 2755 -d inst-sgid" >/dev/null 2>&1 || true
done
for t in bbtar gnutar; do
        for top in "$LT_WS" "$VOL"; do
                [[ -d $top/$t/t ]] || lt_fail "$t extracted nothing into $top"
                lt_log "$t extracted into $top: $(cd "$top/$t/t" && find . -mindepth 1 -printf '%p %m, ' 2>/dev/null)"
        done
done
# GNU tar goes on after a refusal, so every entry is there, without the bits.
[[ -f $LT_WS/gnutar/t/suid && -f $LT_WS/gnutar/t/sgiddir/both ]] || lt_fail "GNU tar did not extract the set-ID entries"
inside 'cd /workspace && /usr/bin/cp -p hostsuid gnucp-p' >/dev/null 2>&1 || true
inside 'cd /workspace && /usr/bin/cp -a hostsuid gnucp-a' >/dev/null 2>&1 || true
inside 'cd /workspace && /usr/bin/cp hostsuid gnucp' >/dev/null 2>&1 || true
inside 'cd /workspace && cp -p hostsuid /vol/cross-copy' >/dev/null 2>&1 || true
for c in gnucp-p gnucp-a gnucp; do
        [[ -e $LT_WS/$c ]] || lt_fail "GNU cp ($c) created no copy at all"
        lt_log "GNU cp ($c) made a copy without set-ID bits: $(stat -c '%A' "$LT_WS/$c")"
done

# --- the kernel's own case: inheritance from a set-group-ID directory ---
inside 'cd /workspace/hostsgid && mkdir sub && echo y >file && mkdir -p deep/er' ||
        lt_fail "mkdir inside the host's set-group-ID directory fails"
for p in sub deep deep/er; do
        [[ $(stat -c %A "$LT_WS/hostsgid/$p") == drwxr-sr-x ]] ||
                lt_fail "hostsgid/$p: expected an inherited S_ISGID directory, got $(stat -c %A "$LT_WS/hostsgid/$p")"
done
[[ $(stat -c %a "$LT_WS/hostsgid/file") == 644 ]] || lt_fail "a file in the set-group-ID directory got $(stat -c %a "$LT_WS/hostsgid/file")"
lt_assert_eq "group of an inherited directory" "$(stat -c %g "$LT_WS/hostsgid")" "$(stat -c %g "$LT_WS/hostsgid/sub")"
lt_log "ok: directories made in a set-group-ID directory inherit S_ISGID (the kernel's rule), files do not"

# --- what the host holds now ------------------------------------------------
found=$(cd "$LT_WS" && find . -path ./hostsgid -prune -o -perm /6000 -print)
lt_assert_eq "set-ID files in the workspace (outside hostsgid)" "./hostsuid" "$found"
found=$(cd "$VOL" && find . -perm /6000 -print)
lt_assert_eq "set-ID files in the volume" "./hostsuid" "$found"
found=$(cd "$LT_WS/hostsgid" && find . \( -perm /4000 -o \! -type d -perm /2000 \) -print)
lt_assert_eq "set-user-ID or set-group-ID non-directories in hostsgid" "" "$found"
# Outside the State Anchor's layers, which keep modes as written inside
# (issue 33, test-state-owners.sh) below the 0700 Domain Root.
data=${XDG_DATA_HOME:-$HOME/.local/share}/lazaret
found=$(find "$data" \( -path "$data/domains/*/state" -o -path "$data/domains/*/state-trash" \) -prune -o -perm /6000 -printf '%m %p\n')
[[ -z $found ]] || lt_fail "the Domain's own storage left set-ID files on the host outside its State Anchor: $found"
lt_log "ok: the Domain's own storage left no set-ID file on the host outside its State Anchor"

# --- no false positives -----------------------------------------------------

inside 'cd /workspace && echo z >f2 && chmod 0755 f && chmod 0600 f2 && chmod 1755 dir && chmod a-x,u+x f && cp -p plain plain-copy' ||
        lt_fail "ordinary chmod or cp -p fails inside"
lt_assert_eq "chmod 0755 then a-x,u+x seen on the host" 744 "$(stat -c %a "$LT_WS/f")"
lt_assert_eq "chmod 0600 seen on the host" 600 "$(stat -c %a "$LT_WS/f2")"
lt_assert_eq "chmod 1755 on a directory seen on the host" 1755 "$(stat -c %a "$LT_WS/dir")"
lt_assert_eq "cp -p of a 0750 file" 750 "$(stat -c %a "$LT_WS/plain-copy")"
lt_assert_eq "install -m 0755" 755 "$(inside 'cd /workspace && /usr/bin/install -m 0755 f inst-plain && stat -c %a inst-plain')"
# The sandbox's own files are no host files: set-ID works there as usual.
lt_assert_eq "chmod u+s on a file of the sandbox's root overlay" 4755 \
        "$(inside 'cp /bin/busybox /root/own && chmod 4755 /root/own && stat -c %a /root/own')"
lt_assert_eq "chmod g+s in the sandbox's /tmp" 2755 \
        "$(inside 'cp /bin/busybox /tmp/own && chmod 2755 /tmp/own && stat -c %a /tmp/own')"
no_setid_under "set-ID files of the sandbox's own root" "${XDG_DATA_HOME:-$HOME/.local/share}/lazaret"
out=$(inside 'echo still; id -u') || lt_fail "the session no longer works"
lt_assert_eq "the Domain still serves sessions" "still 0" "$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"

# --- the same without directfs: the gofer writes the files ------------------
kill "$keeper" 2>/dev/null || true
wait "$keeper" 2>/dev/null || true
lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
lt_wait_inactive
write_config false
lt_keeper_start
keeper=$LT_KEEPER
for d in /workspace /vol; do
        inside "cd $d && mkdir nd && echo x >nd/f && chmod 0644 nd/f" || lt_fail "directfs=false: cannot create files in $d"
        must_refuse "directfs=false: chmod u+s in $d" "$d/nd/f" "chmod u+s $d/nd/f"
        must_refuse "directfs=false: chmod 2755 on a directory in $d" "$d/nd" "chmod 2755 $d/nd"
        if [[ $d == /workspace ]]; then
                inside "cd $d && cp -p hostsuid nd/copy" >/dev/null 2>&1 || true
                m=$(stat -c %a "$LT_WS/nd/copy" 2>/dev/null || echo none)
                [[ $m == none || $((8#$m & 8#6000)) -eq 0 ]] || lt_fail "directfs=false: cp -p in $d left mode $m on the host"
        else
                if out=$(inside "cd $d && cp -p hostsuid nd/copy" 2>&1); then
                        lt_fail "directfs=false: cp -p of a set-user-ID file succeeded in $d"
                fi
                grep -q "Operation not permitted" <<<"$out" || lt_fail "directfs=false: cp -p in $d failed, but not with EPERM: $out"
        fi
        inside "cd $d/nd && /usr/bin/tar -xpf ../evil.tar" >/dev/null 2>&1 || true
        [[ -f ${d/#\/workspace/$LT_WS}/nd/t/suid || $d == /vol ]] || lt_fail "directfs=false: GNU tar extracted nothing"
done
[[ -f $VOL/nd/t/suid ]] || lt_fail "directfs=false: GNU tar extracted nothing into /vol"
found=$(cd "$LT_WS" && find . -path ./hostsgid -prune -o -perm /6000 -print)
lt_assert_eq "directfs=false: set-ID files in the workspace" "./hostsuid" "$found"
found=$(cd "$VOL" && find . -perm /6000 -print)
lt_assert_eq "directfs=false: set-ID files in the volume" "./hostsuid" "$found"
