#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The body of bench/workspace, run as the unprivileged test user inside the
# harness's network namespace (see bench/workspace). LAZARET_TEST_BENCH_DIR
# is the directory to benchmark in (bench/workspace makes a journaled ext4
# or a tmpfs for it) and LAZARET_TEST_BENCH_FS says what it is;
# LAZARET_TEST_BENCH_MODE is quick or full, LAZARET_TEST_BENCH_SOURCE the copy
# of another tree to measure (--source).
# shellcheck source=../tests/harness/lib.sh
. "$LAZARET_SOURCE_ROOT/tests/harness/lib.sh"
# shellcheck source=lib.sh
. "$LAZARET_SOURCE_ROOT/bench/lib.sh"

[[ -z ${LAZARET_TEST_BENCH_TRACE:-} ]] || set -x
# A command that fails outside lt_fail says where, before the cleanup.
trap 'lt_log "bench/workspace: failed at line $LINENO: $BASH_COMMAND"' ERR
RUNS=${LAZARET_TEST_BENCH_RUNS:-5}
MAKE_RUNS=${LAZARET_TEST_BENCH_MAKE_RUNS:-3}
MODE=${LAZARET_TEST_BENCH_MODE:-full}
# The environments, and the workloads to measure (keys of the table; all by
# default, or those LAZARET_TEST_BENCH_LOADS names, space-separated). The
# quick mode leaves out the plain bind (a second Domain, and a test-hooks
# build) and make.
case $MODE in
quick)
        envs=(host bare fuse lazaret)
        all_loads="git-warm git-first git-diff tar writes writes-ignored npm"
        ;;
full)
        envs=(host bare fuse plain lazaret)
        all_loads="git-warm git-first git-diff tar writes writes-ignored npm make"
        ;;
*) lt_fail "LAZARET_TEST_BENCH_MODE must be quick or full, not '$MODE'" ;;
esac
SETTLE=${LAZARET_TEST_BENCH_SETTLE:-$([[ $MODE == quick ]] && echo own || echo machine)}
[[ $SETTLE == own || $SETTLE == machine ]] || lt_fail "LAZARET_TEST_BENCH_SETTLE must be own or machine, not '$SETTLE'"
LOADS=${LAZARET_TEST_BENCH_LOADS:-$all_loads}
for l in $LOADS; do
        [[ " $all_loads " == *" $l "* ]] || lt_fail "LAZARET_TEST_BENCH_LOADS: '$l' is not one of: $all_loads"
done
BENCH=${LAZARET_TEST_BENCH_DIR:-$HOME/bench-workspace}
FS=${LAZARET_TEST_BENCH_FS:-$(findmnt -no FSTYPE,SOURCE -T "$BENCH" 2>/dev/null || echo unknown)}
here=$LAZARET_SOURCE_ROOT/bench
for tool in git make gcc jq umoci dpkg-query; do
        command -v "$tool" >/dev/null || lt_fail "$tool is not installed on the host"
done

# The full mode needs a build with test hooks: its second Lazaret Domain
# serves /workspace as the plain bind the workspace view replaced
# (LAZARET_TEST_PLAIN_WORKSPACE), so that the view's own cost is measured in
# the same run. The quick mode measures the build a user installs.
t_install=$SECONDS
hooks=()
[[ $MODE == quick ]] || hooks=(--test-hooks)
if [[ -n ${LAZARET_TEST_BENCH_SOURCE:-} ]]; then
        bench_install "$LAZARET_TEST_BENCH_SOURCE" "${LAZARET_TEST_BENCH_SOURCE_KEY:?}" "${hooks[@]}"
else
        lt_install "${hooks[@]}"
fi
t_install=$((SECONDS - t_install))
# Its launches start slirp4netns: only inside the harness's network namespace.
lt_require_isolated_network
mkdir -p "$BENCH"
ws=$BENCH/ws
work=$HOME/bench-workspace-work
# A bare sandbox an interrupted run left behind.
if [[ -d $work/root ]]; then
        runsc --root "$work/root" kill bench-bare KILL 2>/dev/null || true
        runsc --root "$work/root" delete --force bench-bare 2>/dev/null || true
        runsc --root "$work/root" kill bench-fuse KILL 2>/dev/null || true
        runsc --root "$work/root" delete --force bench-fuse 2>/dev/null || true
fi
rm -rf "$ws" "$BENCH"/ws-* "$work" "$BENCH/bare-overlay" "$BENCH/fuse-overlay"
mkdir -p "$ws/.bench" "$work"
# Lazaret launches only in a workspace that is a git repository (the Git
# Sentry); the 20,000-file repository below is one of its own, nested.
git -C "$ws" init -q
# The ignored writes' directory and every node_modules/: ignored state
# through the view.
printf '%s\n' ignored-writes/ node_modules/ >"$ws/.gitignore"
cp "$here/workspace-load.sh" "$ws/.bench/load.sh"
t_start=$SECONDS
# blog MSG: lt_log with the seconds since the start, so that a run shows
# where its time went.
blog() { lt_log "[$((SECONDS - t_start)) s] $*"; }

# --- the sandbox image: the host's own git, make, gcc ------------------------
#
# The busybox test image has no compiler and the default image is built from
# a Debian mirror; this one is made offline from the files of the host's
# installed packages (git, make, gcc and what they depend on, without
# documentation), so the same binaries run on the host and in both sandboxes.
image=$HOME/bench-workspace-image
closure() {
        local -A seen=()
        local queue=("$@") p deps part alt n
        while ((${#queue[@]})); do
                p=${queue[0]}
                queue=("${queue[@]:1}")
                [[ -z ${seen[$p]:-} ]] || continue
                [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null) == ii* ]] || continue
                seen[$p]=1
                deps=$(dpkg-query -W -f='${Pre-Depends}, ${Depends}' "$p")
                IFS=',' read -ra parts <<<"$deps"
                for part in "${parts[@]}"; do
                        IFS='|' read -ra alts <<<"$part"
                        for alt in "${alts[@]}"; do
                                n=$(sed 's/([^)]*)//; s/:any//; s/[[:space:]]//g' <<<"$alt")
                                [[ -n $n ]] || continue
                                if [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$n" 2>/dev/null) == ii* ]]; then
                                        queue+=("$n")
                                        break
                                fi
                        done
                done
        done
        printf '%s\n' "${!seen[@]}" | sort | grep -v -e '^git-man$' -e '^perl-modules'
}
make_image() {
        local pkgs stamp root dpkg_stamp
        # Unless dpkg's database changed since, the packages are those the
        # image was made of (working their closure out takes a while).
        dpkg_stamp=$(stat -c '%Y %s' /var/lib/dpkg/status)
        [[ $(cat "$image.dpkg" 2>/dev/null) == "$dpkg_stamp" && -e $image/index.json ]] && return 0
        pkgs=$(closure bash coreutils dash git make gcc libc6-dev tar findutils grep sed gzip)
        # shellcheck disable=SC2086
        stamp=$( (echo v1; dpkg-query -W -f='${Package} ${Version}\n' $pkgs) | sha256sum | cut -d' ' -f1)
        if [[ $(cat "$image.stamp" 2>/dev/null) == "$stamp" && -e $image/index.json ]]; then
                echo "$dpkg_stamp" >"$image.dpkg"
                return 0
        fi
        lt_log "building the benchmark image from $(wc -w <<<"$pkgs") host packages"
        rm -rf "$image" "$image.build"
        root=$image.build/rootfs
        mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,root,tmp,dev,proc,sys,run,workspace}
        ln -s usr/bin "$root/bin"
        ln -s usr/sbin "$root/sbin"
        ln -s usr/lib "$root/lib"
        ln -s usr/lib64 "$root/lib64"
        chmod 1777 "$root/tmp"
        chmod 0700 "$root/root"
        # shellcheck disable=SC2086
        dpkg -L $pkgs | sort -u | while IFS= read -r f; do
                [[ -L $f || -f $f ]] || continue
                case $f in /usr/share/doc/* | /usr/share/man/* | /usr/share/info/* | /usr/share/locale/* | /usr/share/lintian/*) continue ;; esac
                case $f in /bin/* | /sbin/* | /lib/* | /lib64/*) f=/usr$f ;; esac
                printf '%s\0' "${f#/}"
        done | tar -C / --null --no-recursion -T - -cf - | tar -C "$root" -xf - --no-same-owner
        [[ -x $root/usr/bin/gcc && -x $root/usr/bin/git && -x $root/usr/bin/make ]] || lt_fail "the benchmark image lacks gcc, git or make"
        printf 'root:x:0:0:root:/root:/bin/bash\n' >"$root/etc/passwd"
        printf 'root:x:0:\n' >"$root/etc/group"
        [[ -r /etc/ld.so.cache ]] && cp /etc/ld.so.cache "$root/etc/"
        tar -C "$root" --numeric-owner --owner=0 --group=0 -cf "$image.build/rootfs.tar" .
        (
                cd "$image.build"
                umoci init --layout layout
                umoci new --image layout:latest
                umoci raw add-layer --image layout:latest --history.created_by bench/workspace rootfs.tar
                umoci config --image layout:latest --config.env PATH=/usr/local/bin:/usr/bin:/bin \
                        --config.cmd /bin/bash --no-history
                umoci gc --layout layout
        ) >/dev/null
        mv "$image.build/layout" "$image"
        rm -rf "$image.build"
        echo "$stamp" >"$image.stamp"
        echo "$dpkg_stamp" >"$image.dpkg"
}
make_image
t_image=$((SECONDS - t_start))

# --- the workloads' data -----------------------------------------------------

blog "generating a 20,000-file git repository, 5,000 small files, 500 npm-like packages and (full mode) a 50-file C project in $ws"
repo=$ws/repo
mkdir -p "$repo"
(
        cd "$repo"
        for ((d = 0; d < 100; d++)); do
                mkdir "d$d"
                for ((f = 0; f < 200; f++)); do echo "file $d/$f" >"d$d/f$f.txt"; done
        done
        git init -q
        git add -A
        git config gc.auto 0
        git -c user.name=bench -c user.email=bench@localhost commit -q -m "20,000 files"
        git repack -adq
)
(
        cd "$work"
        mkdir small
        for ((d = 0; d < 50; d++)); do
                mkdir "small/d$d"
                for ((f = 0; f < 100; f++)); do echo "small file $d/$f" >"small/d$d/f$f"; done
        done
        tar -cf "$ws/small.tar" small
        rm -rf small
)
# What `npm install` unpacks: 500 packages of 40 files each (package.json,
# README.md, LICENSE, index.js, 28 modules in lib/, 8 in lib/internal/),
# 100 bytes to 4 KB, as a registry's small packages are; one gzipped tar of
# node_modules/ (npm unpacks a tarball per package: the same files, and
# the sandbox's work per file is the same). awk writes them, one process.
(
        cd "$work"
        mkdir node_modules
        for ((p = 0; p < 500; p++)); do printf 'node_modules/pkg%d/lib/internal\0' "$p"; done | xargs -0 mkdir -p
        awk 'BEGIN {
                text = ""
                for (i = 0; length(text) < 4200; i++)
                        text = text sprintf("module.exports.f%d = function (a, b) { return a * %d + b; };\n", i, i)
                for (p = 0; p < 500; p++) {
                        d = "node_modules/pkg" p
                        f = d "/package.json"
                        printf "{ \"name\": \"pkg%d\", \"version\": \"1.%d.0\", \"main\": \"index.js\", \"license\": \"MIT\" }\n", p, p % 7 > f
                        close(f)
                        f = d "/README.md"; printf "# pkg%d\n\n%s", p, substr(text, 1, 300 + (p * 37) % 1500) > f; close(f)
                        f = d "/LICENSE"; printf "MIT License\n\n%s", substr(text, 1, 1000) > f; close(f)
                        f = d "/index.js"; printf "module.exports = require(\"./lib/m0.js\");\n" > f; close(f)
                        for (i = 0; i < 28; i++) {
                                f = d "/lib/m" i ".js"; printf "%s", substr(text, 1, 100 + (p * 131 + i * 977) % 4000) > f; close(f)
                        }
                        for (i = 0; i < 8; i++) {
                                f = d "/lib/internal/i" i ".js"; printf "%s", substr(text, 1, 100 + (p * 71 + i * 563) % 2000) > f; close(f)
                        }
                }
        }'
        [[ $(find node_modules -type f | wc -l) == 20000 ]] || lt_fail "the npm packages are not 20,000 files"
        tar --owner=0 --group=0 --numeric-owner -czf "$ws/npm.tar.gz" node_modules
        rm -rf node_modules
)
cproj=$ws/cproj
t_data=$SECONDS
[[ $MODE != full ]] || mkdir -p "$cproj"
[[ $MODE != full ]] || (
        cd "$cproj"
        for ((i = 0; i < 50; i++)); do
                {
                        echo '#include <string.h>'
                        for ((j = 0; j < 8; j++)); do
                                echo "static int f${j}(const char *s) { int h = $j; for (size_t k = 0; k < strlen(s); k++) h = h * 31 + s[k]; return h; }"
                        done
                        echo "int unit$i(const char *s) { return 0"
                        for ((j = 0; j < 8; j++)); do echo " + f$j(s)"; done
                        echo "; }"
                } >"u$i.c"
        done
        {
                echo "int printf(const char *, ...);"
                for ((i = 0; i < 50; i++)); do echo "int unit$i(const char *);"; done
                echo "int main(int argc, char **argv) { int s = 0;"
                for ((i = 0; i < 50; i++)); do echo "s += unit$i(argv[0]);"; done
                echo 'printf("%d\n", s); return argc > 5; }'
        } >main.c
        cat >Makefile <<'EOF'
CC = gcc
CFLAGS = -O2 -Wall
OBJS = $(patsubst %.c,%.o,$(wildcard *.c))
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
clean:
	rm -f prog $(OBJS)
EOF
)

# Each environment works in a copy of its own. In one shared workspace every
# run is a host edit for the other Domain, whose watchers then work while
# the run is timed: the plain bind's lazaret-watch relays each path into
# its sandbox, the view judges and invalidates each (in one run of 2026-12-04,
# 5,000 small writes took the view 6.9 s in a tracked directory against 2.6 s
# in an ignored one, which no other Domain sees, and bare runsc 5.3 s against
# the plain bind's 3.0 s). Nothing watches across the copies.
declare -A wsof=([host]=$ws)
t_data=$((t_data - t_start - t_image))
t_copies=$SECONDS
for env in "${envs[@]:1}"; do
        wsof[$env]=$BENCH/ws-$env
        cp -a "$ws" "${wsof[$env]}"
done
t_copies=$((SECONDS - t_copies))
t_domain=$SECONDS

# --- Lazaret: a warm Domain held by a background session ----------------------

# A configuration of its own (--config), so the user's is never touched.
# Its data root (Domain state: the ignored paths' state, the root overlay's
# file store) is on the benchmark's file system too, as a home directory
# holds both a project and ~/.local/share: the ignored writes then land on
# the same kind of disk in every column.
conf=$work/lazaret.json
rm -rf "$BENCH/data"
printf '{ "default_profile": "bench", "data_root": "%s", "profiles": { "bench": { "image": "oci:%s" }, "plain": { "image": "oci:%s" } } }\n' \
        "$BENCH/data" "$image" "$image" >"$conf"
chmod 0600 "$conf"
lz() { lazaretctl --config "$conf" --workspace "${wsof[lazaret]}" "$@"; }
lzp() { lazaretctl --config "$conf" --workspace "${wsof[plain]}" --profile plain "$@"; }
LT_WS=${wsof[lazaret]} LT_DOMAIN=$(lz domain-id) || lt_fail "lazaretctl domain-id failed"
LT_LOGDIR=$HOME/lt-logs
export LT_WS LT_DOMAIN LT_LOGDIR
holder='' holder_plain='' bare='' fuse='' rs=() rf=()
cleanup() {
        local rc=$?
        systemctl --user unset-environment LAZARET_TEST_PLAIN_WORKSPACE 2>/dev/null || true
        for h in $holder $holder_plain; do
                kill "$h" 2>/dev/null || true
                wait "$h" 2>/dev/null || true
        done
        [[ -z ${wsof[plain]:-} ]] || lzp stop >/dev/null 2>&1 || true
        if [[ -n $bare ]]; then
                "${rs[@]}" kill bench-bare KILL 2>/dev/null || kill "$bare" 2>/dev/null || true
                wait "$bare" 2>/dev/null || true
        fi
        if [[ -n $fuse ]]; then
                "${rf[@]}" kill bench-fuse KILL 2>/dev/null || kill "$fuse" 2>/dev/null || true
                wait "$fuse" 2>/dev/null || true
        fi
        lz stop >/dev/null 2>&1 || true
        exit "$rc"
}
trap cleanup EXIT
lz stop >/dev/null 2>&1 || true
lt_wait_inactive

[[ -z ${wsof[plain]:-} ]] || lzp stop >/dev/null 2>&1 || true
wait_running() {   # FUNCTION HOLDER-PID
        local state=
        for _ in $(seq 1 600); do
                state=$("$1" status --json 2>/dev/null | jq -r .State) || true
                [[ $state == running ]] && return 0
                kill -0 "$2" 2>/dev/null || lt_fail "the holding session ended (Domain did not start)"
                sleep 0.1
        done
        lt_fail "the Domain is not running after 60 s (state: $state)"
}
if [[ $MODE == full ]]; then
        # First the Domain without the view: its coordinator alone starts with the switch.
        blog "preparing the image for Lazaret and starting a warm Domain without the view (plain bind)"
        systemctl --user set-environment LAZARET_TEST_PLAIN_WORKSPACE=1
        (exec lazaretctl --config "$conf" --workspace "${wsof[plain]}" --profile plain launch -- /bin/sleep 3600) &
        holder_plain=$!
        wait_running lzp "$holder_plain"
        systemctl --user unset-environment LAZARET_TEST_PLAIN_WORKSPACE
        lzp status --json | jq -e '.MountPlan.entries[] | select(.destination == "/workspace" and .kind == "bind")' >/dev/null ||
                lt_fail "the plain Domain does not serve /workspace as a bind"
fi
blog "starting a warm Domain with the workspace view"
(exec lazaretctl --config "$conf" --workspace "${wsof[lazaret]}" launch -- /bin/sleep 3600) &
holder=$!
wait_running lz "$holder"
lz status --json | jq -e '.MountPlan.entries[] | select(.destination == "/workspace" and .kind == "view")' >/dev/null ||
        lt_fail "the Domain does not serve /workspace through the view"

t_domain=$((SECONDS - t_domain))
t_sandboxes=$SECONDS
# The sandbox Lazaret started: its runsc binary, global flags and bundle.
lz_pid=
for _ in $(seq 1 100); do
        for p in $(pgrep -u "$(id -u)" -f -- ' boot ' || true); do
                grep -qaF -- "$XDG_RUNTIME_DIR" "/proc/$p/cmdline" 2>/dev/null || continue
                lz_pid=$p
        done
        [[ -n $lz_pid ]] && break
        sleep 0.1
done
[[ -n $lz_pid ]] || lt_fail "cannot find the runsc sandbox of Domain $LT_DOMAIN"
mapfile -d '' lz_argv <"/proc/$lz_pid/cmdline"
runsc=$(readlink "/proc/$lz_pid/exe")
runsc=${runsc% (deleted)}
[[ -x $runsc ]] || runsc=$(command -v runsc)
lz_bundle=
flags=()
for a in "${lz_argv[@]:1}"; do
        case $a in
        boot) break ;;
        --platform=* | --directfs=* | --file-access=* | --file-access-mounts=* | --overlay2=* | --dcache=* | \
                --network=* | --ignore-cgroups=* | --host-uds=* | --host-fifo=* | --host-settings=* | --rootless=*)
                flags+=("$a") ;;
        esac
done
for ((i = 0; i < ${#lz_argv[@]}; i++)); do
        case ${lz_argv[i]} in
        --bundle=*) lz_bundle=${lz_argv[i]#--bundle=} ;;
        --bundle) lz_bundle=${lz_argv[i + 1]} ;;
        esac
done
[[ -r $lz_bundle/config.json ]] || lt_fail "cannot read the bundle of Lazaret's sandbox (${lz_bundle:-not found})"
# A file-backed overlay gets a directory of its own; the network is left
# out (Lazaret's enforcement namespace belongs to its sandbox, and these
# workloads do not use the network).
for i in "${!flags[@]}"; do
        case ${flags[i]} in
        --overlay2=*:dir=*) mkdir -p "$BENCH/bare-overlay" && flags[i]=${flags[i]%%:dir=*}:dir=$BENCH/bare-overlay ;;
        --network=*) flags[i]=--network=none ;;
        esac
done

# --- bare runsc: the same rootfs, spec and flags, the workspace a plain bind --

mkdir -p "$work/bundle" "$work/root"
# Lazaret's config.json names staged sources, which exist only in its
# supervisor's mount namespace (spec C19): the bare sandbox gets the host
# sources they were staged from, read from the mount plan beside it.
[[ -r $lz_bundle/mounts.json ]] || lt_fail "cannot read the mount plan of Lazaret's sandbox"
jq --arg ws "${wsof[bare]}" --arg stage "$lz_bundle/stage/" --slurpfile plan "$lz_bundle/mounts.json" '
        def host: if startswith($stage) then $plan[0].entries[(ltrimstr($stage) | tonumber)].source else . end;
        .root.path |= host |
        .mounts = [.mounts[] | if .type == "bind" then .source |= host else . end] |
        .process.args = ["/bin/sleep", "3600"] | .process.terminal = false |
        .mounts = [.mounts[] | select(.destination | startswith("/run/lazaret") | not)] |
        .mounts = [.mounts[] | select(.destination != "/etc/resolv.conf")] |
        .linux.namespaces = [.linux.namespaces[] | del(.path)] |
        .mounts = [.mounts[] | if .destination == "/workspace" then .source = $ws else . end]' \
        "$lz_bundle/config.json" >"$work/bundle/config.json" || lt_fail "cannot derive the bare runsc bundle"
jq -e '.mounts[] | select(.destination == "/workspace" and .type == "bind")' "$work/bundle/config.json" >/dev/null ||
        lt_fail "Lazaret's sandbox has no /workspace bind"
# wait_started PID LOG ID RUNSC...: until the sandbox ID answers exec.
wait_started() {
        local pid=$1 log=$2 id=$3
        shift 3
        for _ in $(seq 1 100); do
                "$@" exec "$id" /bin/true 2>/dev/null && return 0
                kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; lt_fail "$id did not start"; }
                sleep 0.1
        done
        "$@" exec "$id" /bin/true || lt_fail "$id: runsc exec does not work"
}
rs=("$runsc" --root "$work/root" "${flags[@]}")
unshare --user --map-root-user --map-auto --mount -- "${rs[@]}" run --bundle "$work/bundle" bench-bare \
        </dev/null >"$work/bare.log" 2>&1 &
bare=$!
wait_started "$bare" "$work/bare.log" bench-bare "${rs[@]}"

# --- bare runsc through a reference FUSE passthrough (bench/fuse-ref.c) ------
# The same sandbox again, its /workspace a FUSE mount of the workspace that
# the smallest passthrough serves, mounted in the sandbox's own user and
# mount namespace as the view is: fuse/bare is what the FUSE hop itself
# costs, view/fuse what the view's rules, watches and locks add to it.
fuseref=$LT_BUILDDIR/bench/bench-fuse-ref
[[ -x $fuseref ]] || lt_fail "the reference FUSE server is not built ($fuseref)"
mkdir -p "$work/fuse-bundle" "$work/fuse-mnt"
jq --arg m "$work/fuse-mnt" '.mounts = [.mounts[] | if .destination == "/workspace" then .source = $m else . end]' \
        "$work/bundle/config.json" >"$work/fuse-bundle/config.json" || lt_fail "cannot derive the FUSE bundle"
rf=("$runsc" --root "$work/root" "${flags[@]}")
for i in "${!rf[@]}"; do
        [[ ${rf[i]} != --overlay2=*:dir=* ]] || { mkdir -p "$BENCH/fuse-overlay" && rf[i]=${rf[i]%%:dir=*}:dir=$BENCH/fuse-overlay; }
done
unshare --user --map-root-user --map-auto --mount -- bash -c '
        "$1" "$2" "$3" & ref=$!
        for _ in $(seq 1 100); do mountpoint -q "$3" && break; sleep 0.05; done
        mountpoint -q "$3" || { echo "fuse-ref did not mount" >&2; exit 1; }
        shift 3
        "$@"; rc=$?
        kill "$ref"; exit "$rc"' - "$fuseref" "${wsof[fuse]}" "$work/fuse-mnt" "${rf[@]}" run --bundle "$work/fuse-bundle" bench-fuse \
        </dev/null >"$work/fuse.log" 2>&1 &
fuse=$!
wait_started "$fuse" "$work/fuse.log" bench-fuse "${rf[@]}"

t_sandboxes=$((SECONDS - t_sandboxes))
# What the two sandboxes were booted with, paths left out: any difference is
# printed with the figures.
boot_flags() {   # PID
        local a
        while IFS= read -r -d '' a; do
                [[ $a == boot ]] && break
                case $a in --root=* | --log* | --debug-log* | --panic-log* | --*=/*) continue ;; esac
                [[ $a == --* ]] && printf '%s\n' "$a"
        done <"/proc/$1/cmdline" | sort
}
bare_pid=$(pgrep -u "$(id -u)" -f -- "--root=$work/root.* boot " | head -n1 || true)
flag_diff="(bare sandbox not found)"
if [[ -n $bare_pid ]]; then
        flag_diff=$(diff <(boot_flags "$lz_pid") <(boot_flags "$bare_pid") | sed -n 's/^</lazaret/p; s/^>/bare/p' | tr '\n' ' ' || true)
        flag_diff=${flag_diff:-none}
fi

git_env=(GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.checkStat GIT_CONFIG_VALUE_0=minimal)
# run_in ENV WORKLOAD RUNS [again]: the workload's timings (ms, one a line).
run_in() {
        case $1 in
        host) bash "$ws/.bench/load.sh" "$ws" "$2" "$3" ${4:-} ;;
        bare) "${rs[@]}" exec bench-bare /usr/bin/env "${git_env[@]}" bash /workspace/.bench/load.sh /workspace "$2" "$3" ${4:-} ;;
        fuse) "${rf[@]}" exec bench-fuse /usr/bin/env "${git_env[@]}" bash /workspace/.bench/load.sh /workspace "$2" "$3" ${4:-} ;;
        lazaret) lz launch -- /usr/bin/env LAZARET_BENCH_GIT_MINIMAL=1 bash /workspace/.bench/load.sh /workspace "$2" "$3" ${4:-} ;;
        plain) lzp launch -- /usr/bin/env LAZARET_BENCH_GIT_MINIMAL=1 bash /workspace/.bench/load.sh /workspace "$2" "$3" ${4:-} ;;
        esac
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# settle: waits until what the run before left to do (the host's writeback,
# gVisor's and the view's freeing of what it held, a watcher's work on what
# it heard) is done, so that the next run does not pay for it; the waits are
# summed and printed. Two ways (LAZARET_TEST_BENCH_SETTLE):
#   machine  (the full mode's) until the whole machine is quiet, under a fifth
#            of a CPU busy over 300 ms, at most 30 s: on a machine of its own
#            that is everything the benchmark left;
#   own      (the quick mode's) the benchmark's file system synced, then until
#            the test user's own processes (the Domain, the sandboxes, the
#            view, the reference) use under a fifth of a CPU over 300 ms, at
#            most 10 s: what others run on a shared machine does not stall
#            it, and what they leave to the kernel is not waited for.
settle_ms=0 settle_cut=0
cpu_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat; }
# own_busy: the clock ticks the test user's processes used, their reaped
# children's included; not this script's (whose children are this sampling).
own_busy() {
        local p files=()
        for p in $(pgrep -u "$(id -u)"); do
                [[ $p == "$$" || $p == "$BASHPID" ]] || files+=("/proc/$p/stat")
        done
        # A process may end between pgrep and cat: what cat still read counts.
        { cat "${files[@]}" 2>/dev/null || true; } | awk '{ sub(/^.*\) /, ""); s += $12 + $13 + $14 + $15 } END { print s + 0 }'
}
settle() {
        local a b n t0=${EPOCHREALTIME/[.,]/} t1 hz tries=100 busy=cpu_busy
        hz=$(getconf CLK_TCK)
        if [[ $SETTLE == own ]]; then
                sync -f "$BENCH"
                tries=33 busy=own_busy
        fi
        for ((n = 0; ; n++)); do
                ((n < tries)) || { settle_cut=$((settle_cut + 1)); break; }
                a=$($busy)
                t1=${EPOCHREALTIME/[.,]/}
                sleep 0.3
                b=$($busy)
                # busy ticks below a fifth of a CPU over the time that passed
                (((b - a) * 1000000 * 5 < hz * (${EPOCHREALTIME/[.,]/} - t1))) && break
        done
        settle_ms=$((settle_ms + (${EPOCHREALTIME/[.,]/} - t0) / 1000))
}

# One run of each environment in turn, round after round, in an order that
# rotates, so that a change in the machine's load touches all alike. Each
# row's wall time is kept, and what of it the timed runs and the settling
# were (row_times, printed with the table): the rest is starting each
# run's process in its environment and the untimed work of the workload.
declare -A row_wall=() row_settle=() row_timed=()
# The plain Domain is a test-hooks configuration kept for comparison, not the
# product: a run of it that fails (gVisor's host descriptors for a Domain
# without the view's cache, spec 6.4) leaves the plain column out of that row
# and every row after it (its sandbox may start nothing more), says so, and
# the run goes on; any other environment's failure ends the run.
plain_failed=''
plain_drop() {   # KEY WORKLOAD ROUND
        plain_failed="the $1 row, round $3"
        : >"$work/plain.$1"
        blog "the plain Domain (test-hooks, not the product) failed $2 in round $3: left out from here on"
        timeout 60 lazaretctl --config "$conf" --workspace "${wsof[plain]}" --profile plain stop >/dev/null 2>&1 || true
}
measure() {   # KEY WORKLOAD ROUNDS WHAT
        local r i env t0=${EPOCHREALTIME/[.,]/} s0=$settle_ms
        [[ " $LOADS " == *" $1 "* ]] || return 0
        blog "measuring: $4"
        for ((r = 0; r < $3; r++)); do
                for ((i = 0; i < ${#envs[@]}; i++)); do
                        env=${envs[(r + i) % ${#envs[@]}]}
                        # The reference passthrough does not watch the host: after a
                        # host git status it would serve the index it cached.
                        [[ $env != fuse || $1 != git-first ]] || continue
                        [[ $1 != git-first ]] || git -C "${wsof[$env]}/repo" status >/dev/null
                        if [[ $env == plain && -n $plain_failed ]]; then
                                : >>"$work/plain.$1"
                                continue
                        fi
                        settle
                        # From the second round on, the untimed preparation of the
                        # git rows is still in place (workspace-load.sh, "again").
                        if ! run_in "$env" "$2" 1 "$([[ $r == 0 ]] || echo again)" >>"$work/$env.$1"; then
                                [[ $env == plain ]] || lt_fail "$env: $2 failed"
                                plain_drop "$1" "$2" "$((r + 1))"
                        fi
                done
        done
        row_wall[$1]=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
        row_settle[$1]=$((settle_ms - s0))
        # Every figure the row's runs printed (the npm row's two a run), in ms.
        row_timed[$1]=$(for env in "${envs[@]}"; do cat "$work/$env.$1" 2>/dev/null || true; done |
                awk '{ for (i = 1; i <= NF; i++) s += $i } END { printf "%d", s }')
}
t_measure=$SECONDS
load_measure=$(cut -d' ' -f1 /proc/loadavg)
measure git-warm git-warm "$RUNS" "git status, warm"
measure git-first git-once "$RUNS" "git status after the host's"
measure git-diff git-diff "$RUNS" "git diff, 200 files changed"
measure tar tar "$RUNS" "tar x"
measure writes writes "$RUNS" "small writes"
measure writes-ignored writes-ignored "$RUNS" "small writes in an ignored directory"
measure npm npm "$RUNS" "npm-shaped: 20,000 files unpacked into node_modules/, read back"
measure make make "$MAKE_RUNS" "make -j2"
t_measure=$((SECONDS - t_measure))
# The npm row's runs print "UNPACK READ": three rows of medians.
keys=$LOADS
if [[ " $LOADS " == *" npm "* ]]; then
        keys+=" npm-unpack npm-read"
        for env in "${envs[@]}"; do
                awk '{ print $1 }' "$work/$env.npm" >"$work/$env.npm-unpack"
                awk '{ print $2 }' "$work/$env.npm" >"$work/$env.npm-read"
                awk '{ printf "%.3f\n", $1 + $2 }' "$work/$env.npm" >"$work/$env.npm.sum"
                mv "$work/$env.npm.sum" "$work/$env.npm"
        done
fi
declare -A ms
for env in "${envs[@]}"; do
        for key in $keys; do
                if [[ $env == fuse && $key == git-first ]]; then
                        ms[$env,$key]=
                        continue
                fi
                if [[ $env == plain && -n $plain_failed && ! -s $work/plain.$key ]]; then
                        ms[$env,$key]=
                        continue
                fi
                ms[$env,$key]=$(median <"$work/$env.$key") || lt_fail "no figures for $env, $key"
        done
done
git_bare=$(run_in bare git-config 1)
git_lz=$(run_in lazaret git-config 1)

# --- the table ------------------------------------------------------------------

ratio() { [[ -n $1 && -n $2 ]] || { echo -; return; }; awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
num() { [[ -n $1 ]] && printf '%.1f' "$1" || echo -; }
# verdict RATIO GOAL: "<= GOAL met" or "MISSED"; "-" without a figure.
verdict() {
        [[ $1 != - ]] || { echo -; return; }
        awk -v r="$1" -v g="$2" 'BEGIN { printf "<= %s %s", g, (r <= g ? "met" : "MISSED") }'
}
load_end=$(cut -d' ' -f1 /proc/loadavg)
echo
if [[ $MODE == quick ]]; then
        echo "bench/workspace --quick: medians of $RUNS runs, $(nproc) CPUs, load $load_measure at the first timed run, $load_end at the end"
else
        echo "bench/workspace: medians of $RUNS runs ($MAKE_RUNS for make), $(nproc) CPUs, load $load_measure at the first timed run, $load_end at the end"
fi
((RUNS >= 5)) || echo "  (fewer than 5 runs: a trial of the benchmark, not figures to quote)"
echo "  wall time:    $((SECONDS - t_start + t_install)) s: install $t_install s, data and sandboxes $((SECONDS - t_start - t_measure)) s, timed runs $t_measure s"
echo "  set-up:       the image $t_image s, the data $t_data s, a workspace copy per environment $t_copies s, the Domain(s) $t_domain s, the bare sandboxes $t_sandboxes s"
for key in $LOADS; do
        [[ -n ${row_wall[$key]:-} ]] || continue
        printf '  %-13s %d s: timed %d s, settling %d s, the rest %d s (each run'"'"'s start in its environment, untimed work)\n' "$key:" \
                $((row_wall[$key] / 1000)) $((row_timed[$key] / 1000)) $((row_settle[$key] / 1000)) \
                $(((row_wall[$key] - row_timed[$key] - row_settle[$key]) / 1000))
done
echo "  settling:     $((settle_ms / 1000)) s in all waiting, before each timed run, for $([[ $SETTLE == own ]] && echo "the test user's processes" || echo "the machine") to be quiet ($settle_cut waits cut short)"
echo "  lazaret:      ${LAZARET_TEST_BENCH_LAZARET:-$LAZARET_SOURCE_ROOT}, $([[ $MODE == quick ]] && echo "the product build" || echo "a test-hooks build"), $LT_BUILDDIR"
echo "  file system:  $FS (the workspaces, the data root and the overlays)"
echo "  runsc:        $runsc ($("$runsc" --version 2>/dev/null | head -n1))"
echo "  runsc flags (Lazaret's sandbox, used for bare too): ${flags[*]}"
echo "  runsc boot flag differences: $flag_diff"
echo "  git in bare:    ${git_bare//$'\n'/; }"
echo "  git in Lazaret: ${git_lz//$'\n'/; }"
echo "  image:        host packages (git, make, gcc), $image"
[[ $MODE == quick ]] || echo "  plain:        Lazaret with /workspace a plain bind (the view off; a test-hooks switch, never a product setting)"
[[ -z $plain_failed ]] || echo "  plain:        failed in $plain_failed, left out from that row on (shown as -)"
echo "  fuse:         bare runsc with /workspace served by the smallest FUSE passthrough (bench/fuse-ref.c): the view's mount and kernel settings but libfuse's own INIT reply, none of its rules"
if [[ $MODE == quick ]]; then
        echo "  goals:        issue 34's: git status warm view/host, after the host's view/bare, every other row view/fuse"
        printf '  %-30s %8s %8s %8s %8s %9s %9s %9s %9s %9s %9s  %s\n' workload "host ms" "bare ms" "fuse ms" "view ms" \
                bare/host fuse/host view/host fuse/bare view/bare view/fuse goal
else
        echo "  goals:        issue 34's as in the quick mode (last column); the view against the plain bind, the earlier issue's"
        printf '  %-30s %8s %8s %8s %8s %8s %10s %9s %9s %9s  %-22s %s\n' workload "host ms" "bare ms" "fuse ms" "plain ms" "view ms" view/plain \
                view/fuse fuse/bare plain/bare "goal (view/plain)" "issue 34's goal"
fi
row() {   # KEY NAME FULL-GOAL QUICK-GOAL-RATIO QUICK-GOAL
        local key=$1 h b f p l g g34=-
        [[ " $keys " == *" $key "* ]] || return 0
        h=${ms[host,$key]} b=${ms[bare,$key]} f=${ms[fuse,$key]} l=${ms[lazaret,$key]}
        case $4 in
        view/host) g34=$(ratio "$l" "$h") ;;
        view/bare) g34=$(ratio "$l" "$b") ;;
        view/fuse) g34=$(ratio "$l" "$f") ;;
        esac
        if [[ $MODE == quick ]]; then
                g=$g34
                printf '  %-30s %8s %8s %8s %8s %9s %9s %9s %9s %9s %9s  %s\n' "$2" "$(num "$h")" "$(num "$b")" "$(num "$f")" "$(num "$l")" \
                        "$(ratio "$b" "$h")" "$(ratio "$f" "$h")" "$(ratio "$l" "$h")" "$(ratio "$f" "$b")" "$(ratio "$l" "$b")" \
                        "$(ratio "$l" "$f")" "$4 $(verdict "$g" "$5")"
        else
                p=${ms[plain,$key]}
                g=$(ratio "$l" "$p")
                printf '  %-30s %8s %8s %8s %8s %8s %10s %9s %9s %9s  %-22s %s\n' "$2" "$(num "$h")" "$(num "$b")" "$(num "$f")" "$(num "$p")" "$(num "$l")" \
                        "$g" "$(ratio "$l" "$f")" "$(ratio "$f" "$b")" "$(ratio "$p" "$b")" "$(verdict "$g" "$3")" \
                        "$([[ $4 == - ]] && echo - || echo "$4 $(verdict "$g34" "$5")")"
        fi
}
row git-warm "git status, warm" 1.2 view/host 3
row git-first "git status, after host's" 1.2 view/bare 1
row git-diff "git diff, 200 files changed" 1.2 view/fuse 1.1
row tar "tar x, 5,000 files" 1.5 view/fuse 1.1
row writes "5,000 small writes" 1.5 view/fuse 1.1
row writes-ignored "5,000 writes, ignored dir" 1.5 view/fuse 1.1
row npm "npm-shaped, 20,000 files" 1.5 view/fuse 1.1
row npm-unpack "  unpack to node_modules/" 1.5 view/fuse 1.1
row npm-read "  read back" 1.5 view/fuse 1.1
row make "make -j2, 51 files" 1.2 view/fuse 1.1
