#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-image: `lazaretctl image build-default` builds the built-in default
# image as an ordinary user with no network at all, from the local Debian
# repository that tests/harness/make-offline-repo prepared (root, before the
# tests). Checks the OCI layout (index.json, tag latest, config, one layer
# with the promised contents), that a second build without --force changes
# nothing, and that failing or interrupted builds exit 1 with a clear message,
# keep the previous image byte for byte and leave no staging directory.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

REPO=${LAZARET_TEST_DEBIAN_REPO:-/var/cache/lazaret-test/debian-repo}
[[ -f $REPO/Packages ]] ||
        lt_fail "no offline Debian repository at $REPO; run tests/harness/make-offline-repo as root first (tests/harness/prepare-machine does)"
command -v umoci >/dev/null || lt_fail "umoci is not installed (.ci/install-deps)"

lt_install
lt_require_isolated_network

top=$(mktemp -d "${TMPDIR:-/tmp}/lazaret-test-image.XXXXXX")
cleanup() {
        # an interrupted build must not be left running
        [[ -n ${bg_pid:-} ]] && kill -TERM "$bg_pid" 2>/dev/null && wait "$bg_pid" 2>/dev/null
        # Prepared lowers and persistent layers hold subordinate IDs' files.
        lazaretctl unshare -- rm -rf -- "$top" 2>/dev/null || rm -rf -- "$top"
}
trap cleanup EXIT
data=$top/data
conf=$top/config.json
printf '{ "data_root": "%s" }\n' "$data" >"$conf"
chmod 0600 "$conf"
img=$data/images/default
ctl() { lazaretctl --config "$conf" "$@"; }

# The mirror and proxy come from apt's configuration: a fake one (APT_CONFIG),
# whose names are never reached (.invalid; the packages come from $REPO).
suite=$(. /etc/os-release && [[ ${ID:-} == debian && -n ${VERSION_CODENAME:-} ]] && echo "$VERSION_CODENAME" || echo bookworm)
mkdir -p "$top/apt/conf.d" "$top/apt/sources.list.d"
cat >"$top/apt/apt.conf" <<EOF
Dir::Etc::main "$top/apt/none.conf";
Dir::Etc::parts "$top/apt/conf.d";
Dir::Etc::sourcelist "$top/apt/sources.list";
Dir::Etc::sourceparts "$top/apt/sources.list.d";
Acquire::http::Proxy "http://proxy.invalid:3142/";
EOF
printf 'deb http://mirror.invalid/debian %s main\n' "$suite" "$suite-updates" >"$top/apt/sources.list"
printf 'Types: deb\nURIs: http://security.mirror.invalid/debian-security\nSuites: %s-security\nComponents: main\n' \
        "$suite" >"$top/apt/sources.list.d/debian.sources"
export APT_CONFIG=$top/apt/apt.conf
want_sources="deb http://mirror.invalid/debian/ $suite main
deb http://mirror.invalid/debian/ $suite-updates main
deb http://security.mirror.invalid/debian-security/ $suite-security main"

# Only our own temporary files count: other users' runs may share /tmp.
own_tmp_leftovers() {
        find /tmp -maxdepth 1 -user "$(id -u)" \( -name 'lazaret-source.*' -o -name 'mmdebstrap.*' \) -newer "$conf" -print
}

assert_no_staging() {
        local what=$1 left
        left=$(find "$data/images" -mindepth 1 -maxdepth 1 ! -name default ! -name .default.lock -printf '%f ')
        [[ -z $left ]] || lt_fail "$what: left behind in $data/images: $left"
        left=$(own_tmp_leftovers)
        [[ -z $left ]] || lt_fail "$what: left behind in /tmp: $left"
        lt_log "ok: $what: no staging directory or temporary files left"
}

image_digest() {
        (cd "$img" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

blob() { echo "$img/blobs/sha256/${1#sha256:}"; }
ms() { echo $(($(date +%s%N) / 1000000)); }
seconds() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }

# --- 1. the offline build ----------------------------------------------------

lt_log "building the default image from $REPO (no network in this namespace)"
t0=$(ms)
out=$(ctl image build-default --source "$REPO" 2>&1) || lt_fail "image build-default exited $?:
$out"
build_s=$(seconds $(($(ms) - t0)))
printf '%s\n' "$out" | tail -n 4 >&2
[[ $out == *"Built builtin:default at $img (tag latest)"* ]] ||
        lt_fail "no summary line naming $img in the output"
lt_log "ok: built in ${build_s}s: $(printf '%s\n' "$out" | tail -n 1)"

[[ -f $img/index.json && -f $img/oci-layout ]] || lt_fail "$img has no index.json or oci-layout"
lt_assert_eq "oci-layout version" 1.0.0 "$(jq -r .imageLayoutVersion "$img/oci-layout")"
lt_assert_eq "tags (umoci ls)" latest "$(umoci ls --layout "$img")"
lt_assert_eq "mode of $data/images" 700 "$(stat -c %a "$data/images")"

manifest=$(blob "$(jq -r '.manifests[0].digest' "$img/index.json")")
config=$(blob "$(jq -r .config.digest "$manifest")")
lt_assert_eq "layers" 1 "$(jq '.layers | length' "$manifest")"
lt_assert_eq "Cmd" '["/bin/bash","-l"]' "$(jq -c .config.Cmd "$config")"
jq -e '.config.Env | index("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")' "$config" >/dev/null ||
        lt_fail "Env has no PATH: $(jq -c .config.Env "$config")"
lt_assert_eq "label org.lazaret.image" builtin:default "$(jq -r '.config.Labels["org.lazaret.image"]' "$config")"

layer=$(blob "$(jq -r '.layers[0].digest' "$manifest")")
listing=$top/layer.list
tar -tzvf "$layer" >"$listing" || lt_fail "the layer is not a gzip tar archive"
for f in ./usr/bin/bash ./usr/bin/git ./usr/bin/curl ./usr/bin/nano ./usr/bin/less ./usr/bin/ps \
        ./usr/bin/xz ./usr/bin/apt-get ./etc/ssl/certs/ca-certificates.crt; do
        grep -q " $f\( \|$\)" "$listing" || lt_fail "$f is not in the image"
done
grep -q ' ./bin -> usr/bin$' "$listing" || lt_fail "no merged /usr (./bin -> usr/bin)"
grep -q '^d.* 0/0 .* ./dev/$' "$listing" || lt_fail "no empty /dev directory owned by 0/0"
! grep -q '^[cb]' "$listing" || lt_fail "device nodes in the layer: $(grep '^[cb]' "$listing" | head -n 3)"
! grep -q -e 'lazaret-source' -e '/var/cache/lazaret-test' "$listing" ||
        lt_fail "the local repository left traces in the image: $(grep -e lazaret-source -e lazaret-test "$listing" | head -n 3)"
! grep -q ' ./usr/share/man/man1/' "$listing" || lt_fail "manual pages are in the image"
sources=$(tar -xzOf "$layer" ./etc/apt/sources.list)
lt_assert_eq "the image's apt sources (the host's mirror, not the build's repository)" "$want_sources" "$sources"
! grep -q 'lazaret-build-proxy' "$listing" || lt_fail "the build's apt proxy settings are in the image"
lt_log "ok: layer has bash, git, curl, nano, less, ps, xz, apt, CA certificates, /dev, the host's apt sources; no devices, manuals, proxy or build traces"
assert_no_staging "successful build"
digest=$(image_digest)

# --- 2. a second build without --force is a no-op ------------------------------

t0=$(ms)
out=$(ctl image build-default --source "$REPO" 2>&1) || lt_fail "second build-default exited $?: $out"
t1=$(ms)
[[ $out == *"already exists"*"--force"* ]] || lt_fail "second build should say the image exists, said: $out"
lt_assert_eq "image after a build without --force" "$digest" "$(image_digest)"
((t1 - t0 < 5000)) || lt_fail "the no-op build took $(seconds $((t1 - t0)))s"
lt_log "ok: no-op without --force: $out"

# --- 3. failures keep the old image ----------------------------------------------

expect_failure() {   # expect_failure WHAT PATTERN ARGS...
        local what=$1 pattern=$2 rc=0
        shift 2
        out=$(ctl image build-default --force "$@" 2>&1) || rc=$?
        lt_assert_eq "exit status of $what" 1 "$rc"
        [[ $out == *$pattern* ]] || lt_fail "$what: expected a message containing '$pattern', got:
$out"
        lt_assert_eq "image after $what" "$digest" "$(image_digest)"
        assert_no_staging "$what"
}

expect_failure "a nonexistent --source" "--source $top/nonexistent: No such file or directory" \
        --source "$top/nonexistent"

mkdir "$top/no-index"
chmod 0755 "$top" "$top/no-index"
expect_failure "a --source without a Packages index" "no Packages index" --source "$top/no-index"

mkdir -m 0700 "$top/private-repo"
cp "$REPO/Packages" "$top/private-repo/"
expect_failure "a repository other users cannot read" "by other users" --source "$top/private-repo"

# A repository whose index names packages that are not there: mmdebstrap
# itself fails, after the staging directory exists.
mkdir "$top/broken-repo"
cp "$REPO/Packages" "$top/broken-repo/"
chmod -R a+rX "$top/broken-repo"
expect_failure "a repository without its .deb files" "mmdebstrap failed" --source "$top/broken-repo"

# Interrupted half-way: SIGTERM reaches mmdebstrap, which cleans its chroot;
# lazaretctl removes its staging directory.
# (not through the ctl function: $! must be lazaretctl itself, not a subshell)
lazaretctl --config "$conf" image build-default --force --source "$REPO" >"$top/interrupted.log" 2>&1 &
bg_pid=$!
for ((i = 0; i < 300; i++)); do
        compgen -G "$data/images/.default.build-*/rootfs.tar" >/dev/null && break
        kill -0 "$bg_pid" 2>/dev/null || break
        sleep 0.1
done
sleep 2
kill -TERM "$bg_pid" 2>/dev/null || lt_fail "the build ended before it could be interrupted: $(cat "$top/interrupted.log")"
rc=0
wait "$bg_pid" || rc=$?
bg_pid=
lt_assert_eq "exit status of an interrupted build" 1 "$rc"
grep -q "Interrupted by signal 15" "$top/interrupted.log" ||
        lt_fail "interrupted build: no message; log ends: $(tail -n 5 "$top/interrupted.log")"
lt_assert_eq "image after an interrupted build" "$digest" "$(image_digest)"
assert_no_staging "interrupted build"

# The built-in default profile works with it: a session runs the GNU tools
# (ls -l and stat, which once needed a statx shim under an older gVisor) and git.
ws=$top/ws
mkdir -p "$ws"
git -C "$ws" init -q
# The first launch prepares the image (umoci, some seconds): a launch whose
# standard error is a terminal shows one updating line meanwhile, cleared
# before the session; another launch waiting at the same time, without a
# terminal, shows nothing of it.
(cd "$ws" && exec lazaretctl --config "$conf" launch -- /bin/true) >"$top/plain.log" 2>&1 &
plain_pid=$!
script -qec "cd '$ws' && lazaretctl --config '$conf' launch -- /bin/true" /dev/null >"$top/tty.log" 2>&1 ||
        lt_fail "the first launch on a terminal failed: $(tr -d '\r' <"$top/tty.log")"
wait "$plain_pid" || lt_fail "the first launch without a terminal failed: $(cat "$top/plain.log")"
grep -q "Preparing image $data/images/default:latest for its first use ([0-9]* s)" "$top/tty.log" ||
        lt_fail "no progress line on the terminal while the image was prepared: $(cat -v "$top/tty.log")"
grep -q $'Preparing image .*\r\033\[K' "$top/tty.log" || lt_fail "the progress line was not cleared: $(cat -v "$top/tty.log")"
lt_assert_eq "progress shown without a terminal" "" "$(grep -a Preparing "$top/plain.log")"
lt_log "ok: the progress line: $(tr '\r' '\n' <"$top/tty.log" | grep -a Preparing | tail -n 1)"
out=$(cd "$ws" && lazaretctl --config "$conf" launch -- /bin/bash -c \
        'ls -l / >/dev/null && stat -c %F / && git --version && echo "debian $(cat /etc/debian_version)" && echo "shell $0"' 2>&1) ||
        lt_fail "a session with the default image failed: $out"
for want in "directory" "git version" "debian 12" "shell /bin/bash"; do
        [[ $out == *"$want"* ]] || lt_fail "session with the default image: expected '$want' in: $out"
done
lt_log "ok: a session in the default image: $(tr '\n' ' ' <<<"$out")"
# The built-in profile persists /usr, /etc, /var/lib, /root and /opt (SR-14):
# a package with set-user-ID programs (mount's /usr/bin/mount) installs there
# with dpkg -i, and keeps its bit there as on a normal system (issue 33: the
# State Anchor keeps modes as written), in the 0700 Domain Root only; nothing
# set-ID lands in the workspace it came from.
debs=("$REPO"/mount_*.deb)
[[ -f ${debs[0]} ]] || lt_fail "no mount package in $REPO"
cp "${debs[0]}" "$ws/mount.deb"
# A package of our own, installed with apt-get from the workspace.
pkg=$top/pkg
mkdir -p "$pkg/DEBIAN" "$pkg/usr/bin"
printf '#!/bin/sh\necho hello from lt-apt\n' >"$pkg/usr/bin/lt-apt"
chmod 0755 "$pkg/usr/bin/lt-apt"
printf 'Package: lt-apt\nVersion: 1.0\nArchitecture: all\nMaintainer: Lazaret tests <t@example.invalid>\nDescription: test package\n' \
        >"$pkg/DEBIAN/control"
dpkg-deb --root-owner-group -b "$pkg" "$ws/lt-apt.deb" >/dev/null
domain=$(lazaretctl --config "$conf" --workspace "$ws" domain-id)
out=$(cd "$ws" && lazaretctl --config "$conf" launch -- /bin/bash -c '
        set -e
        dpkg -i /workspace/mount.deb >/dev/null
        apt-get install -y -q /workspace/lt-apt.deb >/dev/null 2>&1
        cp /usr/bin/true /usr/local/bin/lt-true
        echo kept >/root/lt-file
        stat -c %a /usr/bin/mount' 2>&1) ||
        lt_fail "installing into the persistent dirs of the built-in profile failed: $out"
lt_assert_eq "mode of /usr/bin/mount after dpkg -i inside" 4755 "$(tail -n 1 <<<"$out")"
lt_assert_eq "set-ID files in the workspace after dpkg -i" "" "$(find "$ws" -perm /6000)"
state_dir=$data/domains/$domain/state
for d in usr etc var-lib root opt; do
        [[ -d $state_dir/$d/upper ]] || lt_fail "no upper layer for $d in $state_dir"
done
lt_assert_eq "set-ID files in the Domain's persistent layers" "$state_dir/usr/upper/bin/mount
$state_dir/usr/upper/bin/umount" "$(find "$state_dir" -type f -perm /6000 2>/dev/null | sort)"
lt_assert_eq "mode of the Domain Root" 700 "$(stat -c %a "$data/domains/$domain")"
(cd "$ws" && lazaretctl --config "$conf" stop) >/dev/null 2>&1 || true
lt_wait_inactive "$domain"
# After the stop, a new launch: all of it is there, and ls -l / works over
# the persistent /usr (the /bin, /lib, /sbin links: the responder answers
# gVisor's getxattr on their O_PATH fds, which the host refused with EBADF).
out=$(cd "$ws" && lazaretctl --config "$conf" launch -- /bin/bash -c '
        set -e
        ls -l / /usr/bin >/dev/null
        dpkg-query -W -f "\${Package} \${Status}\n" lt-apt mount
        lt-apt
        /usr/local/bin/lt-true && echo "tool ok"
        cat /root/lt-file
        stat -c %a /usr/bin/mount' 2>&1) ||
        lt_fail "a second launch with the built-in profile failed: $out"
for want in "lt-apt install ok installed" "mount install ok installed" "hello from lt-apt" "tool ok" "kept"; do
        [[ $out == *"$want"* ]] || lt_fail "after lazaretctl stop and a new launch: expected '$want' in: $out"
done
lt_assert_eq "mode of /usr/bin/mount after the restart" 4755 "$(tail -n 1 <<<"$out")"
lt_log "ok: dpkg -i, apt-get install, /usr/local/bin and /root persist in the built-in profile; ls -l / works"
out=$(cd "$ws" && lazaretctl --config "$conf" launch 2>&1 </dev/null) || lt_fail "the default command of the default image failed: $out"
lt_wait_inactive "$domain"

echo "PASS: default image built offline in ${build_s}s ($(du -sh "$img" | cut -f1)), no-op without --force, failures keep the old image"
