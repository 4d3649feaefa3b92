# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# lib.sh: shared helpers for the integration test scripts, which run through
# run-as-test-user as an unprivileged user under a systemd user manager.
# Source it first:  . "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"
#
#   lt_install [--test-hooks]
#                           install Lazaret as a user would (once per tree);
#                           --test-hooks: a build with -Dtest_hooks=true, for
#                           the tests that set LAZARET_TEST_NETWORK_FAULT &c.
#   lt_fail MSG             print MSG and exit 1
#   lt_skip MSG             print MSG and exit 77 (meson: SKIP)
#   lt_assert_eq WHAT EXPECTED ACTUAL
#   lt_unit_path UNIT       D-Bus object path of UNIT (LoadUnit)
#   lt_unit_prop UNIT PROP  a property of org.freedesktop.systemd1.Unit
#   lt_busctl ARGS...       busctl --user with a timeout
#   lt_unit_pids UNIT       the PIDs in UNIT's control group
#
# After lt_install: LT_PREFIX, LT_BINDIR, LT_UNITDIR, LT_BUILDDIR are set and
# LT_BINDIR leads PATH.

set -euo pipefail

lt_fail() { echo "FAIL: $*" >&2; exit 1; }
lt_skip() { echo "SKIP: $*" >&2; exit 77; }
lt_log() { echo "# $*" >&2; }

lt_assert_eq() {
        local what=$1 expected=$2 actual=$3
        [[ $expected == "$actual" ]] ||
                lt_fail "$what: expected '$expected', got '$actual'"
        lt_log "ok: $what = '$actual'"
}

# A hash of the tree's contents: every path, and the bytes of every regular
# file, leaving out top-level build*/ directories and .git.
lt_tree_hash() {
        (
                cd "$1"
                find . -mindepth 1 \( -path './build*' -o -name .git \) -prune -o -print0 | sort -z | tr '\0' '\n'
                find . -mindepth 1 \( -path './build*' -o -name .git \) -prune -o -type f -print0 |
                        sort -z | xargs -0r sha256sum --
        ) | sha256sum | cut -d' ' -f1
}

lt_busctl() { busctl --user --timeout=30 "$@"; }

lt_unit_path() {
        lt_busctl --json=short call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
                org.freedesktop.systemd1.Manager LoadUnit s "$1" | jq -r '.data[0]'
}

lt_unit_prop() {
        local path
        path=$(lt_unit_path "$1") || return 1
        lt_busctl --json=short get-property org.freedesktop.systemd1 "$path" \
                org.freedesktop.systemd1.Unit "$2" | jq -r '.data'
}

# lt_unit_pids UNIT: the PIDs in UNIT's control group and the groups below
# it, one per line, on a cgroup v2, hybrid (v2 at /sys/fs/cgroup/unified) or
# v1 (name=systemd) layout. Fails when the unit has no control group or
# none of the layouts has it. Assign its output (pids=$(lt_unit_pids U)):
# in a for list a failure would go unnoticed.
lt_unit_pids() {
        local cg dir
        cg=$(systemctl --user show -P ControlGroup "$1") || lt_fail "cannot read the ControlGroup of $1"
        [[ -n $cg ]] || lt_fail "$1 has no control group (is it active?)"
        for dir in /sys/fs/cgroup/unified /sys/fs/cgroup /sys/fs/cgroup/systemd; do
                if [[ -e $dir$cg/cgroup.procs ]]; then
                        find "$dir$cg" -name cgroup.procs -exec cat {} + | sort -un
                        return 0
                fi
        done
        lt_fail "$1: no cgroup.procs for $cg under /sys/fs/cgroup"
}

# Without --test-hooks the installation is the README's: the test
# substitutions are not compiled in. Each flavour has its own build directory,
# so that switching between them (a test user runs one test at a time:
# run-as-test-user) reinstalls but does not rebuild; $base.installed names
# the tree and flavour in place.
lt_install() {   # [--test-hooks]
        local mode=${LAZARET_TEST_INSTALL:-home} opts base flavour=product hash
        : "${LAZARET_SOURCE_ROOT:?run through tests/harness/run-as-test-user}"
        case ${1:-} in
        "") ;;
        --test-hooks) flavour=test-hooks ;;
        *) lt_fail "lt_install: unknown argument '$1'" ;;
        esac
        case $mode in
        home)
                LT_PREFIX=$HOME/.local
                base=$HOME/lazaret-build
                # No -Duserunitdir: a user's ~/.local install must find the
                # unit dir by itself ($XDG_DATA_HOME/systemd/user).
                LT_UNITDIR=$LT_PREFIX/share/systemd/user
                opts=(-Dtests=disabled)
                ;;
        runtime)
                : "${XDG_RUNTIME_DIR:?}"
                LT_PREFIX=$XDG_RUNTIME_DIR/lazaret-test/prefix
                base=$XDG_RUNTIME_DIR/lazaret-test/build
                LT_UNITDIR=$XDG_RUNTIME_DIR/systemd/user
                opts=(-Duserunitdir="$LT_UNITDIR" -Dtests=disabled)
                ;;
        *) lt_fail "LAZARET_TEST_INSTALL must be home or runtime, not '$mode'" ;;
        esac
        if [[ $flavour == test-hooks ]]; then
                LT_BUILDDIR=$base-test-hooks
                opts+=(-Dtest_hooks=true)
        else
                LT_BUILDDIR=$base
                opts+=(-Dtest_hooks=false)
        fi
        LT_BINDIR=$LT_PREFIX/bin
        export LT_PREFIX LT_BUILDDIR LT_UNITDIR LT_BINDIR
        export PATH=$LT_BINDIR:$PATH

        mkdir -p "$(dirname -- "$base")"
        hash=$(lt_tree_hash "$LAZARET_SOURCE_ROOT")
        (
                flock 9
                if [[ $(cat "$base.installed" 2>/dev/null) == "$hash $flavour" && -x $LT_BINDIR/lazaretctl ]]; then
                        exit 0
                fi
                lt_log "installing Lazaret ($flavour build) from $LAZARET_SOURCE_ROOT into $LT_PREFIX"
                rm -f "$base.installed"
                if [[ -e $LT_BUILDDIR/meson-private/coredata.dat ]]; then
                        meson setup --reconfigure "$LT_BUILDDIR" "$LAZARET_SOURCE_ROOT" \
                                --prefix="$LT_PREFIX" "${opts[@]}" >"$LT_BUILDDIR.log" 2>&1 ||
                                { cat "$LT_BUILDDIR.log" >&2; exit 1; }
                else
                        rm -rf "$LT_BUILDDIR"
                        meson setup "$LT_BUILDDIR" "$LAZARET_SOURCE_ROOT" \
                                --prefix="$LT_PREFIX" "${opts[@]}" >"$LT_BUILDDIR.log" 2>&1 ||
                                { cat "$LT_BUILDDIR.log" >&2; exit 1; }
                fi
                meson install -C "$LT_BUILDDIR" --quiet >>"$LT_BUILDDIR.log" 2>&1 ||
                        { cat "$LT_BUILDDIR.log" >&2; exit 1; }
                systemctl --user daemon-reload
                echo "$hash $flavour" >"$base.installed"
        ) 9>"$base.lock" || lt_fail "installing Lazaret failed (log: $LT_BUILDDIR.log)"
}

# --- Domains for launch tests -----------------------------------------------
#
# lt_domain_setup: after lt_install, prepares what a launch test needs and
# exports:
#   LT_IMAGE      a busybox OCI image layout (tests/harness/make-test-image)
#   LT_CONFIG     a configuration with profile "test" using it (the default)
#   LT_WS         an empty git workspace for this test
#   LT_LOGDIR     where the coordinator's output goes (no journald here):
#                 a unit drop-in appends it to $LT_LOGDIR/ID.log
#   LT_DOMAIN     the Domain ID of (test, LT_WS)
# and registers an EXIT trap that prints the coordinator log on failure and
# stops the Domain.
# lt_require_isolated_network: every launch starts slirp4netns, which must
# run with the whole stack inside the harness's network namespace, where the
# only other hosts are the harness's test hosts. As root (the prepared
# machine) a service of the user manager must see the test's own network
# namespace, and that namespace no default route (IPv4 or IPv6): otherwise the test fails
# rather than send a packet off the machine. In a desktop session there is
# no such namespace: the test is skipped.
lt_require_isolated_network() {
        local ours theirs route
        if [[ ${LAZARET_TEST_INSTALL:-home} == runtime ]]; then
                lt_skip "this test launches sandboxes, whose slirp4netns must run inside the harness's network namespace; run the tests as root on a machine without a desktop session"
        fi
        ours=$(readlink /proc/self/ns/net)
        theirs=$(systemd-run --user --pipe --wait --quiet readlink /proc/self/ns/net) ||
                lt_fail "cannot ask the user manager which network namespace its services get"
        [[ $ours == "$theirs" ]] ||
                lt_fail "the user manager's services are in network namespace $theirs, not the harness's $ours: slirp4netns would reach real networks"
        route=$(ip -4 route show default) || lt_fail "cannot read the IPv4 routes of the harness's network namespace"
        [[ -z $route ]] || lt_fail "the harness's network namespace has a default route: $route"
        # Without IPv6 in the kernel (no /proc/net/if_inet6) there is no IPv6 route to refuse.
        if [[ -e /proc/net/if_inet6 ]]; then
                route=$(ip -6 route show default) || lt_fail "cannot read the IPv6 routes of the harness's network namespace"
                [[ -z $route ]] || lt_fail "the harness's network namespace has an IPv6 default route: $route"
        fi
}

# lt_build_image DIR [PROGRAMS [FILES]]: builds (once per user, under a lock)
# the busybox test image at DIR, plus the host programs PROGRAMS (absolute
# paths, space-separated) and the files FILES (make-test-image's
# LAZARET_TEST_IMAGE_FILES) if given.
lt_build_image() {
        local dir=$1 programs=${2:-} files=${3:-}
        (
                flock 9
                [[ -e $dir/index.json ]] ||
                        LAZARET_TEST_IMAGE_PROGRAMS=$programs LAZARET_TEST_IMAGE_FILES=$files \
                                "$LAZARET_SOURCE_ROOT/tests/harness/make-test-image" "$dir" >/dev/null
        ) 9>"$dir.lock" || lt_fail "cannot build the test image $dir${programs:+ with $programs}"
}

lt_domain_setup() {
        local name=${1:-$(basename -- "$0" .sh)}
        lt_require_isolated_network
        LT_IMAGE=$HOME/lt-image
        LT_LOGDIR=$HOME/lt-logs
        LT_WS=$HOME/lt-ws/$name
        mkdir -p "$LT_LOGDIR" "$HOME/.config/lazaret" "$HOME/lt-ws"
        lt_build_image "$LT_IMAGE"
        rm -rf "$LT_WS"
        mkdir -p "$LT_WS"
        git -C "$LT_WS" init -q
        LT_CONFIG=$HOME/.config/lazaret/config.json
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s" } } }\n' "$LT_IMAGE" >"$LT_CONFIG"
        chmod 0600 "$LT_CONFIG"
        local dropin=${LT_UNITDIR:?}/lazaret@.service.d
        if [[ ! -e $dropin/50-test-log.conf ]]; then
                mkdir -p "$dropin"
                printf '[Service]\nStandardOutput=append:%s/%%i.log\nStandardError=append:%s/%%i.log\n' \
                        "$LT_LOGDIR" "$LT_LOGDIR" >"$dropin/50-test-log.conf"
                systemctl --user daemon-reload
        fi
        LT_DOMAIN=$(cd "$LT_WS" && lazaretctl domain-id) || lt_fail "lazaretctl domain-id failed"
        export LT_IMAGE LT_CONFIG LT_WS LT_LOGDIR LT_DOMAIN
        trap lt_domain_cleanup EXIT
        # The workspace is a new repository each run: an earlier run's checkout state would only be set aside.
        lt_reset_view_state
}

# lt_reset_view_state [WORKSPACE]: removes the workspace view's Domain state
# (protected files the sandbox wrote, whiteouts, ignored state, the git dir
# view's; of every checkout, and an older layout's) of WORKSPACE's Domain
# (default $LT_WS), left by an earlier run of the test on a workspace made anew.
lt_reset_view_state() {
        local ws=${1:-$LT_WS} id root
        id=$(cd "$ws" && lazaretctl domain-id) || lt_fail "lazaretctl domain-id failed in $ws"
        root=$(cd "$ws" && lazaretctl config check --json | jq -r .data_root) || lt_fail "lazaretctl config check failed"
        rm -rf "$root/domains/$id/view" "$root/domains/$id/view-git" "$root/domains/$id/ignored" \
                "$root/domains/$id/checkouts"
}

# lt_checkout_dir [WORKSPACE]: the Domain state directory of the checkout now
# at WORKSPACE (default $LT_WS), as lazaretctl state list names it (current).
lt_checkout_dir() {
        local ws=${1:-$LT_WS} id
        id=$(cd "$ws" && lazaretctl domain-id) || lt_fail "lazaretctl domain-id failed in $ws"
        (cd "$ws" && lazaretctl state list --json) |
                jq -r --arg id "$id" '.[] | select(.domain_id == $id) | .checkouts[] | select(.current) | .dir'
}

# lt_use_git_image: after lt_domain_setup, builds (once per user and set of
# programs) the busybox test image plus the host's git and its
# `git submodule` scripts at ~/lt-image-git-HASH, points LT_CONFIG's profile
# "test" at it and exports LT_GIT_IMAGE. Needs git on the host.
lt_use_git_image() {
        local git programs f
        git=$(command -v git) || lt_skip "git is not installed on the host"
        programs=$git
        for f in git-submodule git-sh-setup git-sh-i18n git-sh-i18n--envsubst; do
                [[ -f /usr/lib/git-core/$f ]] && programs+=" /usr/lib/git-core/$f"
        done
        LT_GIT_IMAGE=$HOME/lt-image-git-$(sha256sum <<<"$programs" | cut -c1-8)
        lt_build_image "$LT_GIT_IMAGE" "$programs"
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s" } } }\n' "$LT_GIT_IMAGE" >"$LT_CONFIG"
        export LT_GIT_IMAGE
}

# lt_use_rename_image: after lt_domain_setup, builds tests/integration/lt-rename.c
# (rename(2) alone, static) at $HOME/lt-tools and (once per build of it) the
# busybox test image plus the host's git and it at the same path; points
# LT_CONFIG's profile "test" at that image and exports LT_RENAME_TOOL and
# LT_RENAME_IMAGE. Needs git on the host.
lt_use_rename_image() {
        local git
        git=$(command -v git) || lt_skip "git is not installed on the host"
        LT_RENAME_TOOL=$HOME/lt-tools/lt-rename
        mkdir -p "$HOME/lt-tools"
        cc -O1 -static -o "$LT_RENAME_TOOL" "$LAZARET_SOURCE_ROOT/tests/integration/lt-rename.c" ||
                lt_fail "cannot build tests/integration/lt-rename.c (static)"
        LT_RENAME_IMAGE=$HOME/lt-image-git-rename-$(cat "$git" "$LT_RENAME_TOOL" | sha256sum | cut -c1-12)
        lt_build_image "$LT_RENAME_IMAGE" "$git $LT_RENAME_TOOL"
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s" } } }\n' "$LT_RENAME_IMAGE" >"$LT_CONFIG"
        export LT_RENAME_TOOL LT_RENAME_IMAGE
}

# lt_use_watch_image: after lt_domain_setup, builds the real inotify watcher
# tests/integration/inotify-watch.c (static) at $HOME/lt-tools, and (once
# per build of it) the busybox test image plus it at the same path; points
# LT_CONFIG's profile "test" at that image and exports LT_WATCH_TOOL.
lt_use_watch_image() {
        local image
        LT_WATCH_TOOL=$HOME/lt-tools/inotify-watch
        mkdir -p "$HOME/lt-tools"
        cc -O1 -static -o "$LT_WATCH_TOOL" "$LAZARET_SOURCE_ROOT/tests/integration/inotify-watch.c" ||
                lt_fail "cannot build tests/integration/inotify-watch.c (static)"
        image=$HOME/lt-image-watch-$(sha256sum <"$LT_WATCH_TOOL" | cut -c1-12)
        lt_build_image "$image" "$LT_WATCH_TOOL"
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s" } } }\n' "$image" >"$LT_CONFIG"
        export LT_WATCH_TOOL
}

# lt_domain_cleanup [RC]: the EXIT trap; RC is the script's exit status (default
# $?). A trap that runs other commands first must save $? and pass it, or a
# failure would exit 0.
lt_domain_cleanup() {
        local rc=${1:-$?}
        # A keeper session (lt_keeper_start), and a test's own clean-up.
        [[ -z ${LT_KEEPER:-} ]] || kill "$LT_KEEPER" 2>/dev/null || true
        if declare -F lt_cleanup_hook >/dev/null; then lt_cleanup_hook || true; fi
        if ((rc != 0 && rc != 77)); then
                echo "--- coordinator log of Domain $LT_DOMAIN (last 40 lines) ---" >&2
                tail -n 40 "$LT_LOGDIR/$LT_DOMAIN.log" >&2 2>/dev/null || true
        fi
        lazaretctl --workspace "$LT_WS" stop >/dev/null 2>&1 || true
        exit "$rc"
}

# lt_keeper_start [OUTPUT]: a session that stays for the rest of the test
# (/bin/sleep 600, its output to OUTPUT or /dev/null), so that every launch
# after it shares one sandbox. Sets LT_KEEPER (its client's PID, killed by
# the EXIT trap) and waits, bounded, until the Domain is running.
lt_keeper_start() {
        local state=
        (cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 600) >"${1:-/dev/null}" 2>&1 &
        LT_KEEPER=$!
        for _ in $(seq 1 150); do
                state=$(cd "$LT_WS" && lazaretctl status --json 2>/dev/null | jq -r .State) || true
                [[ $state == running ]] && break
                sleep 0.2
        done
        lt_assert_eq "Domain state with the keeper session" running "$state"
}

# lt_launch ARGS...: lazaretctl launch in the test workspace. In the
# background, $! of a function is a subshell, not lazaretctl: to signal the
# client, start it as (cd "$LT_WS" && exec lazaretctl launch ...) & instead.
lt_launch() { (cd "$LT_WS" && exec lazaretctl launch "$@"); }

# lt_launch_with_fault FAULT: `lazaretctl launch -- /bin/echo published` with
# LAZARET_TEST_NETWORK_FAULT=FAULT in the user manager's environment (a test
# build's coordinator reads it at its start, so the Domain must be inactive
# before); sets out and rc, and leaves the Domain inactive.
lt_launch_with_fault() {
        systemctl --user set-environment LAZARET_TEST_NETWORK_FAULT="$1"
        set +e
        out=$(lt_launch -- /bin/echo published 2>&1)
        rc=$?
        set -e
        systemctl --user unset-environment LAZARET_TEST_NETWORK_FAULT
        lt_wait_inactive
}

# lt_wait_inactive [DOMAIN]: waits (bounded) until the service of DOMAIN
# (default: the test's own) is inactive or failed.
lt_wait_inactive() {
        local unit=lazaret@${1:-$LT_DOMAIN}.service state
        for _ in $(seq 1 100); do
                state=$(systemctl --user is-active "$unit" 2>/dev/null) || true
                [[ $state == inactive || $state == failed ]] && return 0
                sleep 0.1
        done
        lt_fail "$unit still $state after 10 s"
}

# --- the approval prompt on a terminal that tmux drives -------------------------
#
# For the escalation prompt's tests: the caller sets T (its tmux command,
# e.g. "tmux -L lt-$$") and runs its session in pane t:0. The prompt counts
# a key only once it was written and 400 ms passed without one (spec 5.6),
# so lt_press waits 0.6 s first; the approve key is drawn anew for each
# drawing and printed at the end of the command's line.
lt_screen() { $T capture-pane -t t:0 -p; }
lt_wait_screen() {      # TEXT: until the pane shows it (15 s)
        for _ in $(seq 1 150); do
                lt_screen | grep -qF -- "$1" && return 0
                sleep 0.1
        done
        lt_screen >&2
        lt_fail "the screen never showed '$1'"
}
lt_press() { sleep 0.6; $T send-keys -t t:0 "$@"; }
lt_approve_key() { lt_screen | sed -n 's/.*<- press \(.\) to run it.*/\1/p' | tail -n1; }
