#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The body of bench/state-anchor, run as the test user by the harness.
. "$LAZARET_SOURCE_ROOT/tests/harness/lib.sh"
# shellcheck source=lib.sh
. "$LAZARET_SOURCE_ROOT/bench/lib.sh"

COLD=${LAZARET_TEST_BENCH_COLD:-8}
RUNS=${LAZARET_TEST_BENCH_INSTALL:-8}
command -v hyperfine >/dev/null || lt_fail "hyperfine is not installed (.ci/install-deps installs it)"
command -v dpkg-deb >/dev/null || lt_fail "dpkg-deb is not installed on the host"

lt_install
lt_domain_setup bench-state-anchor
img=$HOME/bench-anchor-image
# dpkg-deb runs tar (GNU tar: busybox lacks its options).
lt_build_image "$img" "$(command -v dpkg) $(command -v dpkg-deb) $(command -v dpkg-split) $(command -v tar)"
printf '{ "default_profile": "persist", "profiles": {
  "persist": { "image": "oci:%s", "persistent_dirs": [ "/usr", "/etc", "/var/lib", "/root", "/opt" ] },
  "plain": { "image": "oci:%s" } } }\n' "$img" "$img" >"$LT_CONFIG"

# A package of 300 small files below /opt.
work=$HOME/bench-anchor
rm -rf "$work"
mkdir -p "$work/pkg/DEBIAN"
for d in $(seq 1 10); do
        mkdir -p "$work/pkg/opt/lt-bench/d$d"
        for f in $(seq 1 30); do printf 'file %s %s\n' "$d" "$f" >"$work/pkg/opt/lt-bench/d$d/f$f"; done
done
printf 'Package: lt-bench\nVersion: 1.0\nArchitecture: all\nMaintainer: Lazaret bench <b@example.invalid>\nDescription: 300 files\n' \
        >"$work/pkg/DEBIAN/control"
dpkg-deb --root-owner-group -b "$work/pkg" "$LT_WS/lt-bench.deb" >/dev/null

cd "$LT_WS"
dpkg_env='PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
setup='mkdir -p /var/lib/dpkg/info /var/lib/dpkg/updates /var/lib/dpkg/triggers /usr/local/sbin &&
        touch /var/lib/dpkg/status /var/lib/dpkg/available &&
        ln -sf /bin/true /usr/local/sbin/ldconfig && ln -sf /bin/true /usr/local/sbin/start-stop-daemon'
wait_inactive() {       # PROFILE
        LT_DOMAIN=$(lazaretctl -p "$1" domain-id) lt_wait_inactive
}
export -f wait_inactive
for p in persist plain; do lazaretctl -p "$p" launch -- /bin/true >/dev/null; wait_inactive "$p"; done

# Cold launches, alternating profiles run by run.
hyperfine --style basic --export-json "$work/cold.json" -N --warmup 1 --runs "$COLD" \
        --prepare "bash -c '. $LAZARET_SOURCE_ROOT/tests/harness/lib.sh; for p in persist plain; do LT_DOMAIN=\$(lazaretctl -p \$p domain-id) lt_wait_inactive; done'" \
        -n "cold, persistent dirs" "lazaretctl -p persist launch -- /bin/true" \
        -n "cold, root overlay only" "lazaretctl -p plain launch -- /bin/true" >&2

# Installs in warm Domains.
holders=()
for p in persist plain; do
        lazaretctl -p "$p" launch -- /bin/sleep 3600 &
        holders+=($!)
done
lt_cleanup_hook() { kill "${holders[@]}" 2>/dev/null || true; }
for p in persist plain; do
        for _ in $(seq 1 100); do
                [[ $(lazaretctl -p "$p" status --json 2>/dev/null | jq -r .State) == running ]] && break
                sleep 0.1
        done
done
# dpkg's own directories (the image has none): in the warm Domains, so that
# the root overlay of "plain" keeps them for the runs.
for p in persist plain; do
        lazaretctl -p "$p" launch -- /bin/sh -c "$setup" || lt_fail "preparing dpkg in profile $p failed"
done

# Each run: the package purged (prepare), then installed; as scripts, so that
# hyperfine runs no shell of its own around the timed command.
cat >"$work/purge" <<EOS
#!/bin/sh
cd "$LT_WS" && exec lazaretctl -p "\$1" launch -- /bin/env $dpkg_env /usr/bin/dpkg --purge lt-bench >/dev/null 2>&1
EOS
chmod +x "$work/purge"
for p in persist plain; do
        hyperfine --style basic --export-json "$work/install-$p.json" -N --warmup 1 --runs "$RUNS" \
                --prepare "$work/purge $p" -n "dpkg -i, $p" \
                "lazaretctl -p $p launch -- /bin/env $dpkg_env /usr/bin/dpkg -i /workspace/lt-bench.deb" >&2
done
lazaretctl -p persist launch -- /bin/sh -c 'test -f /opt/lt-bench/d10/f30' || lt_fail "the package is not installed in /opt"
kill "${holders[@]}" 2>/dev/null || true

mean() { bench_result "$1" "$2" mean; }
cp=$(mean "$work/cold.json" "cold, persistent dirs")
cn=$(mean "$work/cold.json" "cold, root overlay only")
ip=$(mean "$work/install-persist.json" "dpkg -i, persist")
ir=$(mean "$work/install-plain.json" "dpkg -i, plain")
echo
echo "bench/state-anchor: $COLD cold and $RUNS install runs, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
printf '  %-28s %8.1f ms\n' "cold, persistent dirs" "$(jq -n "$cp*1000")" "cold, root overlay only" "$(jq -n "$cn*1000")" \
        "dpkg -i, persistent /opt" "$(jq -n "$ip*1000")" "dpkg -i, root overlay /opt" "$(jq -n "$ir*1000")"
printf '  cold ratio (persistent / root overlay only):    %.2f  (goal <= 1.10)\n' "$(jq -n "$cp/$cn")"
printf '  install ratio (persistent / root overlay):      %.2f  (goal <= 1.5)\n' "$(jq -n "$ip/$ir")"
