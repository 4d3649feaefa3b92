#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-storage-catalog (issue 16 item 1): the Storage Catalog shared by every
# Domain under the Storage Root.
#   1. Two Domains of different workspaces and the same image, both running:
#      the catalog records their lower once, with one lease per (Domain,
#      generation); both use the same prepared tree; each has its own
#      persistent /root (a file written in one is not in the other).
#   2. state gc while both run, and while only one runs, keeps the lower
#      however old it is; once both stopped, it removes it (and the
#      catalog forgets it); the next launch prepares it again.
#   3. A changed image gives a new lower, leased in its place.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
command -v sqlite3 >/dev/null || lt_skip "sqlite3 (the command) is not installed"
img=$HOME/lt-image-catalog
make_image() {  # make_image VERSION
        rm -rf "$img"
        LAZARET_TEST_IMAGE_FILES="/etc/lt-catalog:0:0:$1" "$LAZARET_SOURCE_ROOT/tests/harness/make-test-image" "$img" \
                >/dev/null 2>&1 || lt_fail "cannot build the test image $img"
}
make_image v1
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s", "persistent_dirs": [ "/root" ] } } }\n' \
        "$img" >"$LT_CONFIG"
data_root=$HOME/.local/share/lazaret
catalog=$data_root/images/catalog.sqlite
prepared=$data_root/images/prepared
ws2=$HOME/lt-ws/test-storage-catalog-2
rm -rf "$ws2"
mkdir -p "$ws2"
git -C "$ws2" init -q
d1=$LT_DOMAIN
d2=$(cd "$ws2" && lazaretctl domain-id)
[[ $d1 != "$d2" ]] || lt_fail "two workspaces gave one Domain ID"
for d in "$d1" "$d2"; do
        [[ ! -e $data_root/domains/$d/state ]] || lazaretctl unshare -- rm -rf -- "$data_root/domains/$d/state"
done
q() { sqlite3 -readonly "$catalog" "$1"; }

keepers=()
keep() {        # keep WORKSPACE: a session that holds the Domain up
        local state
        (cd "$1" && exec lazaretctl launch -- /bin/sleep 600) >/dev/null 2>&1 &
        keepers+=($!)
        for _ in $(seq 1 150); do
                state=$(cd "$1" && lazaretctl status --json 2>/dev/null | jq -r .State) || true
                [[ $state == running ]] && return 0
                sleep 0.2
        done
        lt_fail "the Domain of $1 did not come up: $state"
}
stop() {        # stop WORKSPACE DOMAIN
        (cd "$1" && lazaretctl stop) >/dev/null 2>&1 || true
        lt_wait_inactive "$2"
}
lt_cleanup_hook() { kill "${keepers[@]}" 2>/dev/null || true; (cd "$ws2" && lazaretctl stop) >/dev/null 2>&1 || true; }

# --- 1. two Domains, one lower ------------------------------------------------
keep "$LT_WS"
keep "$ws2"
lower=$(q "SELECT lower_id FROM leases WHERE domain_id = '$d1'")
[[ $lower =~ ^[0-9a-f]{64}$ ]] || lt_fail "no lease of Domain $d1 in the catalog: '$lower'"
lt_assert_eq "lowers recorded for the image" 1 "$(q "SELECT count(*) FROM lowers WHERE id = '$lower'")"
lt_assert_eq "leases of the lower" "$(printf '%s\n' "$d1" "$d2" | sort)" \
        "$(q "SELECT domain_id FROM leases WHERE lower_id = '$lower'" | sort)"
# (Only this test's Domains: an earlier test's coordinator killed on purpose leaves its lease to the next start or gc.)
lt_assert_eq "generations with a lease per Domain" 2 \
        "$(q "SELECT count(DISTINCT domain_id || '/' || generation) FROM leases WHERE domain_id IN ('$d1', '$d2')")"
[[ -d $prepared/$lower/rootfs ]] || lt_fail "the leased lower $lower is not in $prepared"
(cd "$LT_WS" && lazaretctl launch -- /bin/sh -c 'echo one >/root/mine') || lt_fail "cannot write /root in Domain $d1"
out=$(cd "$ws2" && lazaretctl launch -- /bin/sh -c 'cat /etc/lt-catalog; ls /root') || lt_fail "a session in Domain $d2 failed"
lt_assert_eq "the other Domain's /root and the shared image file" "v1" "$out"
lt_log "ok: two Domains share lower ${lower:0:12} with a lease each, and keep their own /root"

# --- 2. state gc keeps what a lease holds --------------------------------------
touch -d '2 hours ago' "$prepared/$lower"
out=$(cd "$LT_WS" && lazaretctl state gc --yes 2>&1) || lt_fail "state gc failed: $out"
[[ -d $prepared/$lower/rootfs ]] || lt_fail "state gc removed a lower two running Domains lease: $out"
kill "${keepers[0]}" 2>/dev/null || true
stop "$LT_WS" "$d1"
lt_assert_eq "leases after Domain $d1 stopped" "$d2" "$(q "SELECT domain_id FROM leases WHERE lower_id = '$lower'")"
out=$(cd "$LT_WS" && lazaretctl state gc --yes 2>&1) || lt_fail "state gc failed: $out"
[[ -d $prepared/$lower/rootfs ]] || lt_fail "state gc removed the lower the running Domain $d2 leases: $out"
out=$(cd "$ws2" && lazaretctl launch -- /bin/cat /etc/lt-catalog) || lt_fail "Domain $d2 no longer works after gc"
lt_assert_eq "Domain $d2 after gc" v1 "$out"
kill "${keepers[1]}" 2>/dev/null || true
stop "$ws2" "$d2"
lt_assert_eq "leases once both stopped" 0 "$(q "SELECT count(*) FROM leases WHERE domain_id IN ('$d1', '$d2')")"
out=$(cd "$LT_WS" && lazaretctl state gc --yes 2>&1) || lt_fail "state gc failed: $out"
[[ ! -e $prepared/$lower ]] || lt_fail "state gc kept a lower nobody leases: $out"
lt_assert_eq "the catalog after gc" 0 "$(q "SELECT count(*) FROM lowers WHERE id = '$lower'")"
out=$(cd "$LT_WS" && lazaretctl launch -- /bin/cat /root/mine) || lt_fail "the launch after gc failed"
lt_assert_eq "Domain $d1's /root over the lower prepared again" one "$out"
stop "$LT_WS" "$d1"
lt_log "ok: state gc kept the lower while a lease held it, removed it after, and it came back"

# --- 3. a changed image, a new lower --------------------------------------------
make_image v2
out=$(cd "$LT_WS" && lazaretctl launch -- /bin/sh -c 'cat /etc/lt-catalog /root/mine') || lt_fail "the launch of the changed image failed"
lt_assert_eq "the changed image with the persisted /root" "v2
one" "$out"
stop "$LT_WS" "$d1"
new=$(q "SELECT id FROM lowers WHERE id != '$lower' ORDER BY recorded_usec DESC LIMIT 1")
[[ $new =~ ^[0-9a-f]{64}$ && $new != "$lower" && -d $prepared/$new/rootfs ]] || lt_fail "no new lower for the changed image: '$new'"
lt_log "ok: the changed image got lower ${new:0:12}"

echo "PASS: one lower per image in the Storage Catalog, a lease per (Domain, generation), gc keeps leased lowers"
