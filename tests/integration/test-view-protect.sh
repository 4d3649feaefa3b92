#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-protect (issue 15 items 1 and 4): the profile's protected_paths
# and the host's own git configuration's includes. In a real sandbox (the
# busybox image plus the host's git), with protected_paths
# [".sdkmanrc", "/tools/deploy.sh", "!.vscode"] and a ~/.gitconfig that
# includes a file in the workspace (and, under an includeIf that does not
# match, a second one):
#   - .sdkmanrc (at any depth) and tools/deploy.sh are never written
#     on the host from inside, tools/other.sh is; .vscode/ is shared again,
#     .envrc still protected;
#   - the included files keep the host's version however the sandbox
#     writes them: core.fsmonitor planted there runs nothing on the host;
#   - lazaretctl status lists the protections in effect.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
lt_use_git_image
lt_reset_view_state

image=$(jq -r '.profiles.test.image' "$LT_CONFIG")
jq -n --arg image "$image" '{ default_profile: "test", profiles: { test: { image: $image,
        protected_paths: [".sdkmanrc", "/tools/deploy.sh", "/ci/run.sh", "!.vscode"] } } }' >"$LT_CONFIG"
lazaretctl --workspace "$LT_WS" config check >/dev/null || lt_fail "the configuration with protected_paths is refused"

marks=$HOME/lt-protect-marks
rm -rf "$marks"
mkdir -p "$marks"
mark() { printf '%s/%s' "$marks" "$1"; }
no_marks() {
        local left
        left=$(ls "$marks")
        [[ -z $left ]] || lt_fail "$1: the host ran code written inside: $left"
}

# The host's global configuration, restored at the end.
gitconfig=$HOME/.gitconfig
saved=$HOME/lt-protect-gitconfig.saved
rm -f "$saved"
[[ -e $gitconfig ]] && cp "$gitconfig" "$saved"
lt_cleanup_hook() { if [[ -e $saved ]]; then mv "$saved" "$gitconfig"; else rm -f "$gitconfig"; fi; }
printf '[include]\n\tpath = %s/team.gitconfig\n[includeIf "gitdir:/nowhere/"]\n\tpath = %s/conf/if.gitconfig\n' \
        "$LT_WS" "$LT_WS" >"$gitconfig"
printf '[user]\n\tname = team\n' >"$LT_WS/team.gitconfig"
team_before=$(sha256sum <"$LT_WS/team.gitconfig")
git -C "$LT_WS" -c user.email=host@example.invalid commit -q --allow-empty -m base

inside() {
        lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c "cd /workspace && $1" </dev/null
}
expect_inside() {
        local out
        out=$(inside "$2" 2>&1) || lt_fail "$1 failed inside: $out"
        lt_log "ok: $1 inside"
}

expect_inside "writes to protected and shared paths" \
        "echo planted > .sdkmanrc && mkdir -p sub tools .vscode && echo planted > sub/.sdkmanrc &&
         echo planted > tools/deploy.sh && echo shared > tools/other.sh && echo '{}' > .vscode/tasks.json &&
         echo planted > .envrc"
[[ ! -e $LT_WS/.sdkmanrc ]] || lt_fail ".sdkmanrc (protected_paths) reached the host"
[[ ! -e $LT_WS/sub/.sdkmanrc ]] || lt_fail "sub/.sdkmanrc (a protected name at depth) reached the host"
[[ ! -e $LT_WS/tools/deploy.sh ]] || lt_fail "tools/deploy.sh (a protected path) reached the host"
[[ ! -e $LT_WS/.envrc ]] || lt_fail ".envrc (built-in, kept) reached the host"
lt_assert_eq "tools/other.sh on the host (shared)" shared "$(cat "$LT_WS/tools/other.sh" 2>/dev/null)"
lt_assert_eq ".vscode/tasks.json on the host (removed from the built-ins)" "{}" "$(cat "$LT_WS/.vscode/tasks.json" 2>/dev/null)"
lt_assert_eq ".sdkmanrc inside" planted "$(inside 'cat .sdkmanrc')"

# A protected path's parents stay directories where they are: no symbolic
# link, no directory the sandbox filled, takes their place.
refused_inside() {      # refused_inside WHAT COMMAND WANT
        local out
        if out=$(inside "$2" 2>&1); then
                lt_fail "$1 succeeded inside: $out"
        fi
        [[ $out == *"$3"* ]] || lt_fail "$1: '$out', want $3"
        lt_log "ok: $1 refused inside ($3)"
}
[[ -d $LT_WS/conf ]] || lt_fail "the included file's directory was not made at launch"
refused_inside "a symbolic link in place of a protected path's parent" "ln -s /tmp ci" "not permitted"
refused_inside "a filled directory moved in place of a protected path's parent" \
        "mkdir -p y && echo planted > y/run.sh && mv y ci" "busy"
refused_inside "removing an included file's directory" "rmdir conf" "busy"
refused_inside "moving a protected path's parent away" "mv tools tools.moved" "busy"
[[ ! -e $LT_WS/ci ]] || lt_fail "ci reached the host"
[[ -d $LT_WS/conf && -d $LT_WS/tools && ! -L $LT_WS/tools ]] || lt_fail "a protected path's parent changed on the host"

expect_inside "the included files written" \
        "printf '[core]\n\tfsmonitor = touch $(mark team)\n' > team.gitconfig && mkdir -p conf &&
         printf '[core]\n\tfsmonitor = touch $(mark includeif)\n' > conf/if.gitconfig"
lt_assert_eq "the included team.gitconfig on the host" "$team_before" "$(sha256sum <"$LT_WS/team.gitconfig")"
[[ ! -e $LT_WS/conf/if.gitconfig ]] || lt_fail "the includeIf file written inside reached the host"
git -C "$LT_WS" status >/dev/null 2>&1 || true
(cd "$LT_WS" && git status >/dev/null 2>&1) || true
no_marks "included git configuration"
lt_log "ok: the host's included git configuration keeps the host's version"

status=$(lazaretctl --workspace "$LT_WS" status 2>&1) || lt_fail "lazaretctl status failed: $status"
for want in ".sdkmanrc" "protected path: tools/deploy.sh" "shared by the profile: .vscode" \
        "git configuration names: team.gitconfig" "git configuration names: conf/if.gitconfig"; do
        [[ $status == *"$want"* ]] || lt_fail "lazaretctl status lacks '$want': $status"
done
json=$(lazaretctl --workspace "$LT_WS" status --json) || lt_fail "lazaretctl status --json failed"
names=$(jq -r '.View.protected_names | join(" ")' <<<"$json")
for want in .envrc .idea .claude .pre-commit-config.yaml .husky lefthook.yml AGENTS.md .tool-versions; do
        [[ " $names " == *" $want "* ]] || lt_fail "status --json protected_names lacks the built-in $want: $names"
done
[[ " $names " != *" .vscode "* ]] || lt_fail "status --json protected_names has .vscode, which the profile shares: $names"
lt_assert_eq "status --json protected_names, the profile's last" .sdkmanrc "${names##* }"
lt_assert_eq "status --json unprotected_names" .vscode "$(jq -r '.View.unprotected_names | join(" ")' <<<"$json")"
lt_assert_eq "status --json protected_paths" "/tools/deploy.sh /ci/run.sh" "$(jq -r '.View.protected_paths | join(" ")' <<<"$json")"
lt_log "ok: lazaretctl status lists the protections in effect"
lt_log "PASS"
