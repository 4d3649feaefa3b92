#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-state-owners (issue 33): inside persistent directories owners,
# modes, set-ID, sticky and setgid bits are kept as written, across
# restarts, so that a package with a system user of its own works.
#   1. The issue's commands in a persistent /var/lib and /etc: chown 105:107,
#      chmod 1777, a file chowned to 105, a 2775 directory; kept inside, and
#      on the host as the subordinate IDs (the user's own for what root
#      made); /tmp (gVisor's memory) behaves the same. A chown in the
#      workspace still changes nothing, chmod 1777 there is still refused.
#   2. A .deb built here (dpkg-deb, no network) whose postinst adds a system
#      user (useradd), gives it a data directory 0700, makes a 1777 spool
#      and a 2775 directory of its group and a config file root:group 0640,
#      installed with dpkg -i into persistent /usr, /etc and /var/lib; the
#      Domain restarts; its daemon (a static program built here) runs with
#      setpriv --reuid and writes its data directory, its spool and its
#      setgid directory, twice across a restart; another user cannot read
#      the data directory nor remove the daemon's spool file.
#   3. A layer written before owners were kept (its record removed): the
#      launch says so in one line, with the repair; state reset of a layer
#      holding subordinate IDs' 0700 directories works.
#   5. The prepared lower after all of the above is what umoci unpacks from
#      the image, plus Lazaret's own mount points made at preparation: no
#      launch changed it (its content hash).
#   4. With fuse-overlayfs (forced by a test hook), in a Domain of its own:
#      the issue's commands keep owners and modes there too; fuse-overlayfs
#      is one of the supervisor's helpers, and killing it ends the Domain
#      with one line that names it.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install --test-hooks
lt_domain_setup
command -v dpkg-deb >/dev/null || lt_skip "dpkg-deb is not installed on the host"
useradd=$(PATH=$PATH:/usr/sbin:/sbin command -v useradd) || lt_skip "useradd is not installed on the host"
command -v setpriv >/dev/null || lt_skip "setpriv is not installed on the host"
command -v gcc >/dev/null || lt_skip "gcc is not installed on the host (the test's daemon is built with it)"
img=$HOME/lt-image-owners-varlib
[[ $(command -v setpriv) == /usr/bin/setpriv ]] || lt_skip "setpriv is not /usr/bin/setpriv on the host"
# /var/lib in the image (a file in it), as in a Debian image; part 5 finds the
# lower by that file. Persistent paths the image lacks: test-state-lower.sh.
lt_build_image "$img" "$(command -v dpkg) $(command -v dpkg-deb) $(command -v dpkg-split) $(command -v tar) $useradd $(command -v setpriv)" \
        "/var/lib/lt-keep:0:0:kept"
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s",
  "persistent_dirs": [ "/usr", "/etc", "/var/lib" ] } } }\n' "$img" >"$LT_CONFIG"
ctl() { (cd "$LT_WS" && lazaretctl "$@"); }
data_root=$HOME/.local/share/lazaret
state=$data_root/domains/$LT_DOMAIN/state
if [[ -e $state ]]; then
        ctl state reset --yes >/dev/null || lt_fail "cannot reset an earlier run's state"
fi
subuid=$(awk -F: -v u="$(id -un)" '$1 == u { print $2; exit }' /etc/subuid)
subgid=$(awk -F: -v u="$(id -un)" '$1 == u { print $2; exit }' /etc/subgid)
[[ -n $subuid && -n $subgid ]] || lt_fail "no subordinate IDs for $(id -un)"
restart() {
        ctl stop >/dev/null 2>&1 || true
        lt_wait_inactive
}

# 1. The issue's commands.
out=$(lt_launch -- /bin/sh -c '
        for dir in /var/lib /etc /tmp; do
                cd $dir && mkdir d && chown 105:107 d && chmod 1777 d && touch d/f && chown 105 d/f &&
                        mkdir g && chmod 2775 g && mkdir g/sub || exit 1
                stat -c "%u:%g %a %n" $dir/d $dir/d/f $dir/g $dir/g/sub
        done
        cd /workspace && mkdir w && chown 105:107 w && stat -c "%u:%g %a %n" w
        chmod 1777 w; stat -c "%a %n" w') || lt_fail "the issue's commands inside: $out"
expect=""
for dir in /var/lib /etc /tmp; do
        expect+="105:107 1777 $dir/d
105:0 644 $dir/d/f
0:0 2775 $dir/g
0:0 2755 $dir/g/sub
"
done
lt_assert_eq "owners and modes inside" "${expect}0:0 755 w
755 w" "$out"
restart
out=$(lt_launch -- /bin/sh -c 'stat -c "%u:%g %a %n" /var/lib/d /var/lib/d/f /var/lib/g /etc/d /etc/g/sub') ||
        lt_fail "after a restart: $out"
lt_assert_eq "owners and modes after a restart" "105:107 1777 /var/lib/d
105:0 644 /var/lib/d/f
0:0 2775 /var/lib/g
105:107 1777 /etc/d
0:0 2755 /etc/g/sub" "$out"
lt_assert_eq "host owners and modes in the upper layer" \
        "$((subuid + 104)):$((subgid + 106)) 1777 d
$((subuid + 104)):$(id -g) 644 d/f
$(id -u):$(id -g) 2775 g" \
        "$(cd "$state/var-lib/upper" && stat -c "%u:%g %a %n" d d/f g)"
lt_log "ok: the issue's commands keep owners and modes in /var/lib and /etc, across a restart"

# 2. A package with a system user of its own.
deb=$HOME/lt-owners-deb
rm -rf "$deb"
mkdir -p "$deb/pkg/DEBIAN" "$deb/pkg/usr/sbin" "$deb/pkg/etc/lt-daemon"
cat >"$deb/daemon.c" <<'C'
/* lt-daemon: what a small daemon does with its state, as its own user. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what) { perror(what); return 1; }

int main(void) {
        char buf[64] = "0", name[64];
        FILE *f;
        int n, fd;

        f = fopen("/etc/lt-daemon/secret.conf", "r");
        if (!f || !fgets(buf, sizeof(buf), f)) return fail("/etc/lt-daemon/secret.conf");
        fclose(f);
        f = fopen("/var/lib/lt-daemon/count", "r");
        n = f && fscanf(f, "%d", &n) == 1 ? n : 0;
        if (f) fclose(f);
        f = fopen("/var/lib/lt-daemon/count.new", "w");
        if (!f || fprintf(f, "%d\n", n + 1) < 0 || fclose(f) != 0) return fail("/var/lib/lt-daemon/count.new");
        if (rename("/var/lib/lt-daemon/count.new", "/var/lib/lt-daemon/count") < 0) return fail("rename");
        snprintf(name, sizeof(name), "/var/lib/lt-daemon-spool/job.%d", n + 1);
        fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0600);
        if (fd < 0) return fail(name);
        close(fd);
        snprintf(name, sizeof(name), "/var/lib/lt-daemon-shared/run.%d", n + 1);
        if (mkdir(name, 0770) < 0) return fail(name);
        printf("lt-daemon: run %d, config %s", n + 1, buf);
        return 0;
}
C
gcc -static -O2 -o "$deb/pkg/usr/sbin/lt-daemon" "$deb/daemon.c" || lt_fail "cannot build the test's daemon"
echo "secret=1" >"$deb/pkg/etc/lt-daemon/secret.conf"
printf 'Package: lt-daemon\nVersion: 1.0\nArchitecture: all\nMaintainer: Lazaret tests <t@example.invalid>\nDescription: a daemon with a user of its own\n' \
        >"$deb/pkg/DEBIAN/control"
echo /etc/lt-daemon/secret.conf >"$deb/pkg/DEBIAN/conffiles"
cat >"$deb/pkg/DEBIAN/postinst" <<'SH'
#!/bin/sh
set -e
id lt-daemon >/dev/null 2>&1 || useradd --system --no-create-home --user-group --home-dir /var/lib/lt-daemon --shell /bin/false lt-daemon
mkdir -p /var/lib/lt-daemon /var/lib/lt-daemon-spool /var/lib/lt-daemon-shared
chown lt-daemon:lt-daemon /var/lib/lt-daemon
chmod 0700 /var/lib/lt-daemon
chmod 1777 /var/lib/lt-daemon-spool
chgrp 100 /var/lib/lt-daemon-shared
chgrp lt-daemon /etc/lt-daemon/secret.conf
chmod 2775 /var/lib/lt-daemon-shared
chmod 0640 /etc/lt-daemon/secret.conf
SH
chmod 0755 "$deb/pkg/DEBIAN/postinst"
dpkg-deb --root-owner-group -b "$deb/pkg" "$LT_WS/lt-daemon.deb" >/dev/null || lt_fail "dpkg-deb failed"

out=$(lt_launch -- /bin/sh -c '
        set -e
        mkdir -p /var/lib/dpkg/info /var/lib/dpkg/updates /var/lib/dpkg/triggers /usr/local/sbin
        touch /var/lib/dpkg/status /var/lib/dpkg/available
        ln -sf /bin/true /usr/local/sbin/ldconfig
        ln -sf /bin/true /usr/local/sbin/start-stop-daemon
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin dpkg -i /workspace/lt-daemon.deb >/dev/null
        echo installed' 2>&1) || lt_fail "installing the package failed: $out"
lt_assert_eq "dpkg -i" installed "$out"
restart

# The daemon as its own user, twice across a restart; then what it made, and what another user may do.
run_daemon() {
        lt_launch -- /bin/sh -c '
                u=$(id -u lt-daemon) g=$(id -g lt-daemon)
                /usr/bin/setpriv --reuid=$u --regid=$g --groups=100 /usr/sbin/lt-daemon'
}
out=$(run_daemon 2>&1) || lt_fail "the daemon's first run: $out"
lt_assert_eq "the daemon's first run" "lt-daemon: run 1, config secret=1" "$out"
restart
out=$(run_daemon 2>&1) || lt_fail "the daemon's run after a restart: $out"
lt_assert_eq "the daemon's run after a restart" "lt-daemon: run 2, config secret=1" "$out"
out=$(lt_launch -- /bin/sh -c '
        u=$(id -u lt-daemon) g=$(id -g lt-daemon)
        cd /var/lib
        stat -c "%u:%g %a %n" lt-daemon lt-daemon/count lt-daemon-spool lt-daemon-spool/job.1 lt-daemon-shared \
                lt-daemon-shared/run.2 /etc/lt-daemon/secret.conf
        nobody() { /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
        nobody cat lt-daemon/count 2>/dev/null && echo "another user read the data directory"
        nobody rm -f lt-daemon-spool/job.1 2>/dev/null && echo "another user removed the daemon spool file"
        nobody touch lt-daemon-spool/nobody && echo "another user wrote the spool"
        nobody cat /etc/lt-daemon/secret.conf 2>/dev/null && echo "another user read the config"
        echo "uid $u gid $g"' 2>&1) || lt_fail "the checks of what the daemon made: $out"
uid=$(sed -n 's/^uid \([0-9]*\) gid .*/\1/p' <<<"$out")
gid=$(sed -n 's/^uid [0-9]* gid \([0-9]*\)$/\1/p' <<<"$out")
# The run directory inherits the shared directory's group (100, not the
# daemon's own) and its set-group-ID bit: a setgid directory at work.
lt_assert_eq "what the daemon made, and what another user may do" "$uid:$gid 700 lt-daemon
$uid:$gid 644 lt-daemon/count
0:0 1777 lt-daemon-spool
$uid:$gid 600 lt-daemon-spool/job.1
0:100 2775 lt-daemon-shared
$uid:100 2750 lt-daemon-shared/run.2
0:$gid 640 /etc/lt-daemon/secret.conf
another user wrote the spool
uid $uid gid $gid" "$out"
[[ -n $uid && $uid != 0 ]] || lt_fail "no system user: '$out'"
lt_assert_eq "the data directory on the host" "$((subuid + uid - 1)):$((subgid + gid - 1)) 700" \
        "$(stat -c "%u:%g %a" "$state/var-lib/upper/lt-daemon")"
lt_log "ok: the package's daemon runs as its own user in its own state, across restarts"

# 3. A layer written before owners were kept: one line with the repair.
restart
rm "$state/etc/owners-kept"
out=$(lt_launch -- /bin/true 2>&1) || lt_fail "a launch over an older layer failed: $out"
[[ $out == *"persistent /etc was written before Lazaret kept owners and modes there"*"lazaretctl state reset /etc"* ]] ||
        lt_fail "no notice of the older /etc layer: '$out'"
restart
ctl state reset --yes /var/lib >/dev/null || lt_fail "state reset of /var/lib (subordinate IDs' 0700 directories) failed"
[[ ! -e $state/var-lib/upper/lt-daemon ]] || lt_fail "state reset left the data directory"
ctl state reset --yes /etc >/dev/null || lt_fail "state reset of /etc failed"
out=$(lt_launch -- /bin/sh -c 'test -e /var/lib/lt-daemon || echo gone' 2>&1) || lt_fail "a launch after the resets failed: $out"
lt_assert_eq "a launch after the resets" gone "$out"
lt_log "ok: an older layer is named at launch with its repair; state reset removes what the user cannot own"

# 5. The prepared lower is what preparation made: no launch changed it, not
# the ones above, nor one with nothing persistent (runsc then binds Lazaret's
# /etc files over the image's own /etc).
restart
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s" } } }\n' "$img" >"$LT_CONFIG"
out=$(lt_launch -- /bin/sh -c 'grep -c nameserver /etc/resolv.conf' 2>&1) || lt_fail "a launch with nothing persistent failed: $out"
restart
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s",
  "persistent_dirs": [ "/usr", "/etc", "/var/lib" ] } } }\n' "$img" >"$LT_CONFIG"
lower=
for r in "$data_root"/images/prepared/*/rootfs; do
        [[ -e $r/usr/bin/setpriv && -e $r/var/lib/lt-keep ]] && lower=$r
done
[[ -n $lower ]] || lt_fail "no prepared lower of $img"
ref=$HOME/lt-owners-ref
rm -rf "$ref"
umoci unpack --rootless --image "$img:latest" "$ref" >/dev/null 2>&1 || lt_fail "umoci unpack of $img failed"
mkdir -p "$ref"/rootfs/{proc,dev,sys,tmp,workspace,run/lazaret,usr/local/bin}
touch "$ref"/rootfs/etc/{resolv.conf,hosts,hostname} "$ref/rootfs/usr/local/bin/lazaret-escalate"
if [[ $(lt_tree_hash "$ref/rootfs") != "$(lt_tree_hash "$lower")" ]]; then
        diff <(cd "$ref/rootfs" && find . | sort) <(cd "$lower" && find . | sort) >&2 || true
        lt_fail "the prepared lower $lower is not what umoci unpacks plus Lazaret's mount points"
fi
lt_log "ok: the prepared lower is unchanged by the launches ($(lt_tree_hash "$lower"))"

# 4. fuse-overlayfs: owners kept; its death is the Domain's failure.
if ! command -v fuse-overlayfs >/dev/null; then
        lt_log "fuse-overlayfs is not installed: its part skipped"
        exit 0
fi
lt_cleanup_hook() { systemctl --user unset-environment LAZARET_TEST_STATE_OVERLAY || true; }
systemctl --user set-environment LAZARET_TEST_STATE_OVERLAY=fuse-overlayfs
LT_WS=$HOME/lt-ws/test-state-owners-fuse
rm -rf "$LT_WS"
mkdir -p "$LT_WS"
git -C "$LT_WS" init -q
lt_reset_view_state
LT_DOMAIN=$(cd "$LT_WS" && lazaretctl domain-id) || lt_fail "lazaretctl domain-id failed"
state=$data_root/domains/$LT_DOMAIN/state
if [[ -e $state ]]; then
        ctl state reset --yes >/dev/null || lt_fail "cannot reset an earlier run's fuse-overlayfs state"
fi
out=$(lt_launch -- /bin/sh -c '
        cd /var/lib && mkdir d && chown 105:107 d && chmod 1777 d && mkdir g && chmod 2775 g && stat -c "%u:%g %a %n" d g') ||
        lt_fail "the issue's commands over fuse-overlayfs: $out"
lt_assert_eq "owners and modes over fuse-overlayfs" "105:107 1777 d
0:0 2775 g" "$out"
lt_assert_eq "format of the /var/lib layer" fuse-overlayfs "$(cat "$state/var-lib/format")"
restart

(cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 60 </dev/null >"$HOME/fuse-death.out" 2>"$HOME/fuse-death.err") &
bg=$!
for _ in $(seq 1 100); do
        [[ $(cd "$LT_WS" && lazaretctl status --json 2>/dev/null | jq '.Sessions | length') == 1 ]] && break
        sleep 0.1
done
pid=
for p in $(lt_unit_pids "lazaret-$LT_DOMAIN-sandbox.scope"); do
        [[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == *fuse-overlayfs\ -f\ * ]] && { pid=$p; break; }
done
[[ -n $pid ]] || lt_fail "no fuse-overlayfs process in the sandbox scope"
kill -KILL "$pid"
for _ in $(seq 1 100); do
        kill -0 "$bg" 2>/dev/null || break
        sleep 0.1
done
kill -0 "$bg" 2>/dev/null && lt_fail "the session's client still runs 10 s after fuse-overlayfs was killed"
rc=0
wait "$bg" || rc=$?
[[ $rc -ne 0 ]] || lt_fail "a session whose fuse-overlayfs was killed exited 0"
reason="the persistent directories' overlay fuse-overlayfs (pid $pid) was killed by signal 9 (SIGKILL): the persistent directories are gone"
grep -qF "$reason" "$HOME/fuse-death.err" || lt_fail "the client did not say '$reason': $(cat "$HOME/fuse-death.err")"
lt_wait_inactive
lt_log "ok: fuse-overlayfs killed: the client exited $rc and said: $(grep -m1 -F "$reason" "$HOME/fuse-death.err")"
