#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-mounts: issue 15, host git's paths judged by where they lie in
# their file system, not only by the path that names them (spec C17). The
# harness (prepare-machine, as root, before the user manager starts) binds
# two fixtures below /run/<test user>/mounts:
#   ws-sub, a workspace with another file system mounted at ws-sub/data:
#     the launch is refused, with one line naming the mount;
#   ws-alias/tools bound at alias: a core.hooksPath naming alias/hooks is
#     host git's hooks directory, which the sandbox reaches as
#     /workspace/tools/hooks. The attack: a pre-commit hook written there
#     inside. The host's commit must run nothing, and the file must not be
#     on the host; inside it exists (Domain state).
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

mounts=/run/$(id -un)/mounts
mountpoint -q "$mounts/ws-sub/data" && mountpoint -q "$mounts/alias" && [[ -d $mounts/ws-alias/tools ]] ||
        lt_fail "the harness did not bind the fixtures below $mounts (tests/harness/prepare-machine)"
hg() { git -c user.name=host -c user.email=host@example.invalid "$@"; }
empty_dir() {   # empty_dir DIR [KEEP]: everything in DIR gone but KEEP (a mount point or a bind's source)
        find "$1" -mindepth 1 -maxdepth 1 ${2:+! -name "$2"} -exec rm -rf {} +
}
cleanup_ws() { lazaretctl --workspace "$1" stop >/dev/null 2>&1 || true; }

# --- another file system mounted below the workspace: refused at launch
ws=$mounts/ws-sub
empty_dir "$ws" data
empty_dir "$ws/data"
hg init -q "$ws"
if out=$(cd "$ws" && lazaretctl launch -- /bin/true 2>&1); then
        cleanup_ws "$ws"
        lt_fail "a launch in a workspace with a file system mounted below it succeeded: $out"
fi
grep -q "the workspace $ws has another file system mounted at $ws/data; .*unmount it, or launch from a checkout without mounts inside" <<<"$out" ||
        lt_fail "the refusal does not name the mount: $out"
lt_assert_eq "lines of the refusal naming the mount" 1 "$(grep -c 'has another file system mounted at' <<<"$out")"
lt_log "ok: a workspace with a mount below it is refused: $(grep -o 'the workspace .*mounted at [^;]*' <<<"$out")"

# --- a bind of the workspace's own directory elsewhere, named by core.hooksPath
ws=$mounts/ws-alias
empty_dir "$ws" tools
empty_dir "$ws/tools"
hg init -q "$ws"
hg -C "$ws" commit -q --allow-empty -m base
hg -C "$ws" config core.hooksPath "$mounts/alias/hooks"
mark=$HOME/lt-mounts-mark
rm -f "$mark"
out=$(cd "$ws" && lazaretctl launch -- /bin/sh -c "mkdir -p /workspace/tools/hooks &&
        printf '#!/bin/sh\ntouch $mark\n' >/workspace/tools/hooks/pre-commit &&
        chmod 0755 /workspace/tools/hooks/pre-commit && ls /workspace/tools/hooks" 2>&1) ||
        { cleanup_ws "$ws"; lt_fail "the launch in the workspace with an aliased hooks directory failed: $out"; }
[[ $out == *pre-commit* ]] || { cleanup_ws "$ws"; lt_fail "the hook written inside is not there inside: $out"; }
cleanup_ws "$ws"
[[ ! -e $mounts/alias/hooks/pre-commit && ! -e $ws/tools/hooks/pre-commit ]] ||
        lt_fail "a hook written inside reached host git's hooks directory through the bind: $(ls -l "$mounts/alias/hooks" 2>&1)"
hg -C "$ws" commit -q --allow-empty -m host || lt_fail "the host's commit failed"
[[ ! -e $mark ]] || lt_fail "the host's commit ran a hook written inside"
lt_log "ok: core.hooksPath through a bind of the workspace's own directory is protected; the host's commit ran nothing"
empty_dir "$ws" tools
empty_dir "$ws/tools"
lt_log "ok: host git's paths are judged by their file system, whatever mount names them"
