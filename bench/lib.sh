# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# bench/lib.sh: what the benchmarks that compare Lazaret with bare runsc
# share. Source it after tests/harness/lib.sh, once lt_domain_setup ran.
#
#   bench_install TREE KEY [--test-hooks]
#                           lt_install of another source tree TREE (a copy
#                           the test user owns): built in a build directory
#                           of its own (KEY names it), installed where
#                           lt_install installs; sets what lt_install sets
#   bench_prepared_rootfs   launches once so that Lazaret's prepared rootfs
#                           exists; sets BENCH_ROOTFS and BENCH_RUNSC
#   bench_runsc_flags ROOT OVERLAY NETWORK [EXTRA...]
#                           sets BENCH_RUNSC_FLAGS to the supervisor's runsc
#                           flags (src/supervisor/supervisor.c runsc()),
#                           dentry cache included, and raises the soft
#                           open-files limit to the hard one as it does
#   bench_bare_bundle DIR ARGS-JSON [NETNS]
#                           writes DIR/config.json: BENCH_ROOTFS read-only,
#                           the command ARGS-JSON, private PID, IPC, UTS and
#                           mount namespaces, and the network namespace at
#                           the path NETNS if given (else runsc's own)

bench_install() {   # TREE KEY [--test-hooks]
        local tree=$1 key=$2 flavour=product opts=(-Dtests=disabled) hash
        case ${3:-} in
        "") opts+=(-Dtest_hooks=false) ;;
        --test-hooks) flavour=test-hooks opts+=(-Dtest_hooks=true) ;;
        *) lt_fail "bench_install: unknown argument '$3'" ;;
        esac
        [[ ${LAZARET_TEST_INSTALL:-home} == home ]] || lt_fail "bench_install: only for the harness's home installs"
        # What lt_install would set, but a build directory per tree and
        # flavour: switching between two trees reinstalls, and rebuilds only
        # what changed in either since it was last built.
        LT_PREFIX=$HOME/.local
        LT_UNITDIR=$LT_PREFIX/share/systemd/user
        LT_BINDIR=$LT_PREFIX/bin
        LT_BUILDDIR=$HOME/lazaret-bench-build/$key-$flavour
        export LT_PREFIX LT_BUILDDIR LT_UNITDIR LT_BINDIR
        export PATH=$LT_BINDIR:$PATH
        mkdir -p "$HOME/lazaret-bench-build"
        hash=$(lt_tree_hash "$tree")
        (
                flock 9
                # In place unless lt_install installed since (its mark is back).
                [[ $(cat "$HOME/lazaret-bench-build/installed" 2>/dev/null) == "$hash $flavour" && -x $LT_BINDIR/lazaretctl &&
                        ! -e $HOME/lazaret-build.installed && ! -e $HOME/lazaret-build-test-hooks.installed ]] && exit 0
                lt_log "installing Lazaret ($flavour build) from $tree into $LT_PREFIX"
                rm -f "$HOME/lazaret-bench-build/installed"
                # ~/.local is about to hold another tree's build than the one
                # lt_install put there: it is to install its own again.
                rm -f "$HOME/lazaret-build.installed" "$HOME/lazaret-build-test-hooks.installed"
                if [[ ! -e $LT_BUILDDIR/meson-private/coredata.dat ]]; then
                        rm -rf "$LT_BUILDDIR"
                        meson setup "$LT_BUILDDIR" "$tree" --prefix="$LT_PREFIX" "${opts[@]}" >"$LT_BUILDDIR.log" 2>&1 ||
                                { cat "$LT_BUILDDIR.log" >&2; exit 1; }
                fi
                meson install -C "$LT_BUILDDIR" --quiet >>"$LT_BUILDDIR.log" 2>&1 ||
                        { cat "$LT_BUILDDIR.log" >&2; exit 1; }
                systemctl --user daemon-reload
                echo "$hash $flavour" >"$HOME/lazaret-bench-build/installed"
        ) 9>"$HOME/lazaret-bench-build/lock" || lt_fail "installing Lazaret from $tree failed (log: $LT_BUILDDIR.log)"
}

bench_prepared_rootfs() {
        local digest data_root
        lt_launch -- /bin/true
        lt_wait_inactive
        digest=$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == "latest") | .digest' \
                "$LT_IMAGE/index.json")
        data_root=$(lazaretctl config check --json --workspace "$LT_WS" | jq -r .data_root)
        # Named by its prepared-artifact ID; prepared.json says which manifest it holds.
        BENCH_ROOTFS=
        for rec in "$data_root"/images/prepared/*/prepared.json; do
                [[ $(jq -r .manifest_digest "$rec" 2>/dev/null) == "$digest" ]] && BENCH_ROOTFS=$(dirname -- "$rec")/rootfs
        done
        [[ -d $BENCH_ROOTFS ]] || lt_fail "no prepared rootfs of manifest $digest in $data_root/images/prepared"
        BENCH_RUNSC=$(command -v runsc)
}

bench_runsc_flags() {
        local root=$1 overlay=$2 network=$3 hard dcache=
        shift 3
        hard=$(ulimit -Hn)
        [[ $hard != unlimited ]] && ((hard >= 3000)) && dcache=--dcache=$((hard / 3 < 100000 ? hard / 3 : 100000))
        ulimit -n "$hard"
        BENCH_RUNSC_FLAGS="--root $root $* --platform=systrap --network=$network --ignore-cgroups --file-access-mounts=shared --overlay2=root:dir=$overlay --directfs=true $dcache"
}

bench_bare_bundle() {
        mkdir -p "$1"
        jq -n --arg rootfs "$BENCH_ROOTFS" --argjson args "$2" --arg netns "${3:-}" '{
          ociVersion: "1.0.2",
          process: { terminal: false, user: { uid: 0, gid: 0 }, args: $args, env: ["PATH=/bin"], cwd: "/",
                     capabilities: { bounding: ["CAP_KILL"], effective: ["CAP_KILL"], permitted: ["CAP_KILL"] },
                     noNewPrivileges: true },
          root: { path: $rootfs, readonly: true }, hostname: "bare",
          mounts: [ { destination: "/proc", type: "proc", source: "proc" },
                    { destination: "/tmp", type: "tmpfs", source: "tmpfs" } ],
          linux: { namespaces: ([ { type: "pid" }, { type: "ipc" }, { type: "uts" }, { type: "mount" } ]
                                + (if $netns == "" then [] else [ { type: "network", path: $netns } ] end)) } }' >"$1/config.json"
}

# bench_bare_net_run WORK RUNSC_FLAGS: writes WORK/bare-run, which runs one
# bare `runsc run` of the bundle it is given (default WORK/true) as a Domain's
# sandbox gets its network: as root of a new user namespace with the same ID
# map as a Domain's, in a private mount namespace: a new network namespace
# bound at WORK/netns, plain slirp4netns on it (the topology Lazaret uses;
# it stays in the harness's namespace, where the test hosts are), then,
# entered into that namespace as the supervisor is, an empty tmpfs over
# /proc/sys/net/core (this runsc's root-namespace check; /proc/sys/net shows
# the reader's namespace, see shared/PLATFORM.md) and runsc run
# ($BENCH_RUNSC: call bench_prepared_rootfs first). Bundles name WORK/netns
# as their network namespace (bench_bare_bundle's third argument).
bench_bare_net_run() {
        local work=$1 flags=$2 slirp
        slirp=$(command -v slirp4netns) || lt_fail "slirp4netns is not installed"
        : >"$work/netns"
        cat >"$work/bare-inner" <<EOS
#!/bin/bash
set -eu
unshare --net=$work/netns true
fifo=$work/ready-\$\$
rm -f "\$fifo"
mkfifo "\$fifo"
$slirp --configure --mtu=65520 --disable-host-loopback --cidr 10.137.54.0/24 --netns-type=path --ready-fd=3 \\
        $work/netns tap0 3>"\$fifo" </dev/null >/dev/null 2>$work/slirp4netns.err &
helper=\$!
ok=
read -r -n1 ok <"\$fifo" || true
rm -f "\$fifo"
if [[ \$ok != 1 ]]; then
        echo "bare run: slirp4netns did not become ready: \$(cat $work/slirp4netns.err)" >&2
        kill \$helper 2>/dev/null || true
        exit 1
fi
rm -f $work/runsc.log
rc=0
nsenter --net=$work/netns -- /bin/sh -c \\
        'mount -t tmpfs -o size=4k,mode=0555 tmpfs /proc/sys/net/core && exec "\$@"' sh \\
        $BENCH_RUNSC $flags run --bundle "\$1" bare-net-\$\$ </dev/null || rc=\$?
kill \$helper
wait \$helper 2>/dev/null || true
exit \$rc
EOS
        cat >"$work/bare-run" <<EOS
#!/bin/bash
exec unshare --user --map-root-user --map-auto --mount -- bash $work/bare-inner "\${1:-$work/true}"
EOS
        chmod +x "$work/bare-run" "$work/bare-inner"
}

# bench_result FILE NAME FIELD: FIELD (mean, stddev, median, ...) of the
# hyperfine result named NAME in the JSON export FILE, in seconds.
bench_result() { jq -r --arg n "$2" --arg f "$3" '.results[] | select(.command == $n) | .[$f]' "$1"; }
