# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# bench/lib.sh: what the benchmarks that compare Lazaret with bare runsc
# share. Source it after tests/harness/lib.sh, once lt_domain_setup ran.
#
#   bench_prepared_rootfs   launches once so that Lazaret's prepared rootfs
#                           exists; sets BENCH_ROOTFS and BENCH_RUNSC
#   bench_runsc_flags ROOT OVERLAY NETWORK [EXTRA...]
#                           sets BENCH_RUNSC_FLAGS to the supervisor's runsc
#                           flags (src/supervisor/supervisor.c runsc()),
#                           dentry cache included, and raises the soft
#                           open-files limit to the hard one as it does

bench_prepared_rootfs() {
        local digest data_root
        lt_launch -- /bin/true
        lt_wait_inactive
        digest=$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == "latest") | .digest' \
                "$LT_IMAGE/index.json")
        data_root=$(lazaretctl config check --json --workspace "$LT_WS" | jq -r .data_root)
        BENCH_ROOTFS=$data_root/images/prepared/${digest#sha256:}/rootfs
        [[ -d $BENCH_ROOTFS ]] || lt_fail "no prepared rootfs at $BENCH_ROOTFS"
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
