#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# lazaretctl from the outside: Domain IDs agree with an independent sha256sum,
# `config check` prints what it resolved, and every bad configuration is
# refused with a message naming the file and key, creating nothing at all.
#
# Usage: test-lazaretctl.sh PATH-TO-LAZARETCTL
set -u
ctl=$(realpath "$1")
pass=0
fail=0

top=$(mktemp -d /tmp/lazaret-cli-XXXXXX)
trap 'rm -rf "$top"' EXIT
export HOME=$top/home XDG_CONFIG_HOME=$top/home/.config XDG_DATA_HOME=$top/home/.local/share \
       XDG_RUNTIME_DIR=$top/run
unset LAZARET_CONFIG
mkdir -p "$HOME/.config/lazaret" "$top/run" "$top/proj/a/b" "$top/plain"
chmod 0700 "$top/run"
git -C "$top/proj" init -q 2>/dev/null || mkdir "$top/proj/.git"

ok()   { echo "ok - $1"; pass=$((pass + 1)); }
bad()  { echo "not ok - $1"; fail=$((fail + 1)); }

expect_id() {   # expect_id PROFILE WORKSPACE-CANONICAL ACTUAL
        local want
        want=$(printf '%s' "$1:$2" | sha256sum | cut -c1-12)
        if [ "$3" = "$want" ]; then ok "domain-id $1:$2 = $want"; else bad "domain-id $1:$2: want $want, got '$3'"; fi
}

# --- Domain IDs -----------------------------------------------------------
canon=$(cd "$top/proj" && pwd -P)
expect_id default "$canon" "$(cd "$top/proj/a/b" && "$ctl" domain-id)"
expect_id default "$(cd "$top/plain" && pwd -P)" "$(cd "$top/plain" && "$ctl" domain-id)"
ln -s "$top/proj" "$top/link"
# A workspace named through a symbolic link is refused, naming the path to use (issue 9, hole 3).
out=$("$ctl" domain-id --workspace "$top/link/a/.." 2>&1); rc=$?
want="workspace \"$top/link/a/..\" goes through a symbolic link; name its resolved path \"$canon\" instead"
if [ $rc -ne 0 ] && [ "$out" = "$want" ]; then ok "a workspace through a symlink is refused"; else bad "workspace through a symlink: rc=$rc: $out"; fi
expect_id default "$canon" "$("$ctl" domain-id --workspace "$top/proj/a/..")"
printf '{"profiles": {"my-agent": {"image": "builtin:default"}}}' > "$XDG_CONFIG_HOME/lazaret/config.json"
expect_id my-agent "$canon" "$(cd "$top/proj" && "$ctl" domain-id -p my-agent)"
json=$(cd "$top/proj" && "$ctl" domain-id --profile my-agent --json)
if [ "$(printf '%s' "$json" | jq -r .workspace)" = "$canon" ] && [ "$(printf '%s' "$json" | jq -r .profile)" = my-agent ]; then
        ok "domain-id --json"
else
        bad "domain-id --json: $json"
fi
rm "$XDG_CONFIG_HOME/lazaret/config.json"

# --- config check ---------------------------------------------------------
out=$(cd "$top/proj" && "$ctl" config check 2>&1)
if printf '%s' "$out" | grep -q "built-in" && printf '%s' "$out" | grep -Eq "Fingerprint: +[0-9a-f]{64}"; then
        ok "config check on the built-in configuration"
else
        bad "config check on the built-in configuration: $out"
fi
fp=$(cd "$top/proj" && "$ctl" config check --json | jq -r .fingerprint)
printf '// nothing but defaults\n{ }\n' > "$top/empty.json"
chmod 0600 "$top/empty.json"
fp2=$(cd "$top/proj" && "$ctl" config check --json --config "$top/empty.json" | jq -r .fingerprint)
if [ -n "$fp" ] && [ "$fp" = "$fp2" ]; then ok "an empty file has the built-in fingerprint"; else bad "fingerprints differ: $fp vs $fp2"; fi

# A rule for a program that runs the sandbox's files (make) is warned about; a fixed one is not.
printf '{ "escalation": { "auto_approve": [ { "argv": ["/usr/bin/make", "test"] }, { "argv": ["/usr/bin/touch", "/tmp/x"] } ] } }\n' >"$top/rules.json"
chmod 0600 "$top/rules.json"
out=$(cd "$top/proj" && "$ctl" config check --config "$top/rules.json" 2>&1 >/dev/null)
if printf '%s' "$out" | grep -q 'escalation.auto_approve\[0\]: "/usr/bin/make" (matches "make") runs code from files the sandbox can write' &&
   ! printf '%s' "$out" | grep -q 'auto_approve\[1\]'; then
        ok "config check warns about a build-tool auto-approve rule"
else
        bad "config check and a build-tool rule: $out"
fi

# --- bad configurations: message names file and key; nothing is created ----
snapshot() { (cd "$top" && find . -path ./cases -prune -o -print | sort); }
mkdir -p "$top/cases"
n=0
check_bad() {   # check_bad NEEDLE JSON
        local needle=$1 text=$2 f out rc before after
        n=$((n + 1))
        f=$top/cases/$n.json
        printf '%s' "$text" > "$f"
        chmod 0600 "$f"
        before=$(snapshot)
        for verb in "config check" "domain-id"; do
                out=$(cd "$top/proj" && "$ctl" --config "$f" $verb 2>&1 >/dev/null)
                rc=$?
                after=$(snapshot)
                if [ $rc -ne 1 ]; then
                        bad "case $n ($verb): exit status $rc, want 1"
                elif [[ "$out" != *"$f: "* ]] || [[ "$out" != *"$needle"* ]]; then
                        bad "case $n ($verb): message '$out' lacks file name or '$needle'"
                elif [ "$before" != "$after" ]; then
                        bad "case $n ($verb): files were created: $(diff <(echo "$before") <(echo "$after"))"
                else
                        ok "case $n ($verb): $needle"
                fi
        done
}
check_bad 'profiles.dev.imgae: unknown key' '{"profiles": {"dev": {"image": "builtin:default", "imgae": "x"}}}'
check_bad 'escalation.timeout_s: expected an integer' '{"escalation": {"timeout_s": "10"}}'
check_bad 'line 3, column 3: profiles.dev: duplicate key' '{"profiles": {
  "dev": {"image": "builtin:default"},
  "dev": {"image": "builtin:default"}}}'
check_bad 'network.deny[1]: "10.1.2.3/8" has host bits set' '{"network": {"deny": ["10.0.0.0/8", "10.1.2.3/8"]}}'
check_bad 'profiles.dev.allow_egress[0]: "fe80::/10" is an IPv6 prefix' '{"profiles": {"dev": {"image": "builtin:default", "allow_egress": ["fe80::/10"]}}}'
check_bad 'profiles.dev.volumes[0].host: unknown token "{data_root}"' '{"profiles": {"dev": {"image": "builtin:default", "volumes": [{"host": "{data_root}/x", "container": "/x"}]}}}'
check_bad 'profiles.dev.volumes[0].host: "~/a/../b" contains a ".." segment' '{"profiles": {"dev": {"image": "builtin:default", "volumes": [{"host": "~/a/../b", "container": "/x"}]}}}'
check_bad 'profiles["Dev!"]: invalid profile name' '{"profiles": {"Dev!": {"image": "builtin:default"}}}'
check_bad 'escalation.auto_approve[0].argv[0]: "/usr/bin/git" can run arbitrary commands' '{"escalation": {"auto_approve": [{"argv": ["/usr/bin/git", "status"]}]}}'
check_bad 'data_root: token "{domain_dir}" is not allowed here' '{"data_root": "{domain_dir}/x"}'
check_bad 'line 1, column 15: profiles: invalid JSON' '{"profiles": {,}}'
# json-c cuts keys at NUL: "dev\u0000b" would silently replace profile "dev".
check_bad 'line 1, column 18: profiles["dev\x00a"]: key contains a NUL character (\u0000)' '{"profiles":{"dev\u0000a":{"image":"builtin:default"},"dev\u0000b":{"image":"oci:/evil"}}}'
check_bad 'runtime.runsc: "runsc" is not an absolute path' '{"runtime": {"runsc": "runsc"}}'
check_bad 'runtime.runsc: "/tmp" is writable by group or others (mode 1777)' '{"runtime": {"runsc": "/tmp"}}'
# The configuration may not be visible to the sandbox (SR-2): a file inside
# the workspace, or a volume that contains it, is refused.
mkdir -p "$top/proj/.lazaret"
printf '{}' > "$top/proj/.lazaret/config.json"
chmod 0600 "$top/proj/.lazaret/config.json"
before=$(snapshot)
out=$(cd "$top/proj" && "$ctl" --config "$top/proj/.lazaret/config.json" config check 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 1 ] && [[ "$out" == *"workspace \"$canon\" contains the Lazaret configuration location"* ]] && [ "$before" = "$(snapshot)" ]; then
        ok "a configuration inside the workspace is refused"
else
        bad "configuration inside the workspace: rc=$rc '$out'"
fi
n=$((n + 1))
printf '{"profiles": {"dev": {"image": "builtin:default", "volumes": [{"host": "~/.config", "container": "/cfg"}]}}}' > "$top/cases/$n.json"
chmod 0600 "$top/cases/$n.json"
out=$(cd "$top/proj" && "$ctl" --config "$top/cases/$n.json" config check 2>&1 >/dev/null)
rc=$?
if [ $rc -eq 1 ] && [[ "$out" == *'profiles.dev.volumes[0].host "'*'/.config" contains the Lazaret configuration location'* ]]; then
        ok "a volume containing the configuration is refused"
else
        bad "volume containing the configuration: rc=$rc '$out'"
fi

# Issue 9, holes 3 and 4: mount sources judged by fd. Each refusal names the
# file, the key and the path to use, from `config check` and from `launch`
# (which stops before creating the data root, the Domain or anything else).
check_mounts() {        # check_mounts NAME EXPECTED-MESSAGE JSON [WORKSPACE]
        local name=$1 want=$2 text=$3 ws=${4:-$top/proj} f out rc before verb
        n=$((n + 1))
        f=$top/cases/$n.json
        printf '%s' "$text" > "$f"
        chmod 0600 "$f"
        want=${want//@CFG@/$f}
        before=$(snapshot)
        for verb in "config check" "launch"; do
                out=$(cd "$ws" && timeout 20 "$ctl" --config "$f" $verb 2>&1 >/dev/null </dev/null)
                rc=$?
                if [ $rc -ne 1 ]; then
                        bad "$name ($verb): exit status $rc, want 1: $out"
                elif [ "$out" != "$want" ]; then
                        bad "$name ($verb): message '$out', want '$want'"
                elif [ "$before" != "$(snapshot)" ]; then
                        bad "$name ($verb): files were created: $(diff <(echo "$before") <(snapshot))"
                else
                        ok "$name ($verb) refused, nothing created"
                fi
        done
}
mkdir -p "$top/vols/a/b" "$top/vols/real" "$HOME/.ssh" "$top/open/proj/.git"
ln -s "$top/vols/real" "$top/vols/link"
chmod 0777 "$top/open"
nest='; a volume may not lie inside or contain the workspace or another volume'
check_mounts "volume inside an rw volume" \
        "@CFG@: profiles.dev.volumes[1].host: \"$top/vols/a/b\" lies inside profiles.dev.volumes[0].host \"$top/vols/a\"$nest" \
        "{\"default_profile\": \"dev\", \"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"$top/vols/a\", \"container\": \"/a\", \"mode\": \"rw\"}, {\"host\": \"$top/vols/a/b\", \"container\": \"/b\"}]}}}"
check_mounts "volume inside the workspace" \
        "@CFG@: profiles.dev.volumes[0].host: \"$canon/a\" lies inside the workspace \"$canon\"$nest" \
        '{"default_profile": "dev", "profiles": {"dev": {"image": "builtin:default", "volumes": [{"host": "{workspace_dir}/a", "container": "/a"}]}}}'
check_mounts "volume through a symlink" \
        "@CFG@: profiles.dev.volumes[0].host: \"$top/vols/link\" is a symbolic link (\"$top/vols/link\"); name its resolved path \"$top/vols/real\" instead" \
        "{\"default_profile\": \"dev\", \"profiles\": {\"dev\": {\"image\": \"builtin:default\", \"volumes\": [{\"host\": \"$top/vols/link\", \"container\": \"/v\"}]}}}"
check_mounts "~/.ssh without force" \
        "@CFG@: profiles.dev.volumes[0].host: \"$HOME/.ssh\" is \"$HOME/.ssh\", which holds credentials or starts programs on the host; add \"force\": true to this volume to mount it anyway" \
        '{"default_profile": "dev", "profiles": {"dev": {"image": "builtin:default", "volumes": [{"host": "~/.ssh", "container": "/s"}]}}}'
check_mounts "workspace under a 0777 directory" \
        "workspace \"$top/open/proj\": \"$top/open\" is writable by group or others (mode 0777), who could swap what is mounted; every directory from / down to a mount source, and the source itself, must belong to root or to you and be writable by nobody else (a sticky directory such as /tmp excepted)" \
        '{}' "$top/open/proj"
# With "force": true the same volume passes `config check`, and says so.
n=$((n + 1))
printf '{"default_profile": "dev", "profiles": {"dev": {"image": "builtin:default", "volumes": [{"host": "~/.ssh", "container": "/s", "force": true}]}}}' > "$top/cases/$n.json"
chmod 0600 "$top/cases/$n.json"
out=$(cd "$top/proj" && "$ctl" --config "$top/cases/$n.json" config check 2>&1)
if [ $? -eq 0 ] && [[ "$out" == *"$HOME/.ssh -> /s (ro, forced)"* ]]; then ok "\"force\": true mounts ~/.ssh"; else bad "forced volume: $out"; fi
printf '{"profiles": {"dev": {"image": "builtin:default", "volumes": [{"host": "%s", "container": "/r", "force": true}]}}}' "$top/vols/real" > "$top/cases/$n.json"
fpf=$(cd "$top/proj" && "$ctl" --config "$top/cases/$n.json" config check --json | jq -r .fingerprint)
sed -i 's/"force": true/"force": false/' "$top/cases/$n.json"
fpn=$(cd "$top/proj" && "$ctl" --config "$top/cases/$n.json" config check --json | jq -r .fingerprint)
if [ ${#fpf} -eq 64 ] && [ ${#fpn} -eq 64 ] && [ "$fpf" != "$fpn" ]; then ok "\"force\" is part of the fingerprint"; else bad "force fingerprint: $fpf vs $fpn"; fi
chmod 0666 "$top/cases/1.json"
out=$("$ctl" --config "$top/cases/1.json" config check 2>&1 >/dev/null)
if [[ "$out" == *"writable by group or others"* ]]; then ok "a group-writable file is refused"; else bad "group-writable: '$out'"; fi

# --- a configuration others can read, holding literal secrets: a warning ---
mkdir -p "$top/secrets"
printf '{ "profiles": { "dev": { "image": "builtin:default", "env": { "GH_TOKEN": "ghp_literal", "API_KEY": "env:API_KEY", "LANG": "C" } } } }\n' >"$top/secrets/c.json"
chmod 0644 "$top/secrets/c.json"
out=$(cd "$top/proj" && "$ctl" --config "$top/secrets/c.json" config check 2>&1 >/dev/null)
want="Warning: $top/secrets/c.json is readable by other users and holds literal values for dev.GH_TOKEN; take them from your environment with \"env:NAME\", or: chmod go-r $top/secrets/c.json"
if [ "$out" = "$want" ]; then ok "literal secret in a readable configuration: warned"; else bad "secret warning: '$out'"; fi
chmod 0600 "$top/secrets/c.json"
out=$(cd "$top/proj" && "$ctl" --config "$top/secrets/c.json" config check 2>&1 >/dev/null)
if [ -z "$out" ]; then ok "no warning once the file is private"; else bad "warning for a private file: '$out'"; fi

# --- usage ----------------------------------------------------------------
"$ctl" frobnicate >/dev/null 2>&1; rc=$?
if [ $rc -eq 2 ]; then ok "unknown verb exits 2"; else bad "unknown verb exit $rc"; fi
"$ctl" --profile 'x;y' domain-id >/dev/null 2>&1; rc=$?
if [ $rc -eq 2 ]; then ok "invalid --profile exits 2"; else bad "invalid --profile exit $rc"; fi
# --source and --force belong to "image build-default": refused with every
# other verb, before or after it, with nothing created; "launch" passes them
# on untouched once its command has started (not checked here: it would run).
before=$(snapshot)
for args in "--force domain-id" "domain-id --source /tmp" "--source=/tmp status" "config check --force"; do
        # shellcheck disable=SC2086
        out=$(cd "$top/proj" && "$ctl" $args 2>&1 >/dev/null); rc=$?
        opt=$(printf '%s\n' $args | grep -m1 -o -- '--[a-z]*')
        verb=$(printf '%s\n' $args | grep -m1 -v -- '^-')
        want="$opt is an option of \"image build-default\" only, not of \"$verb\"."
        if [ $rc -eq 2 ] && [ "$out" = "$want" ]; then ok "$args: refused"; else bad "$args: rc=$rc: $out"; fi
done
"$ctl" --force launch -- /bin/true >/dev/null 2>&1; rc=$?
if [ $rc -eq 2 ]; then ok "--force launch: refused"; else bad "--force launch: exit $rc"; fi
if [ "$(snapshot)" = "$before" ]; then ok "refused image options create nothing"; else bad "refused image options created files"; fi

# Workspaces that are not a working tree are refused by lazaretctl itself,
# before any Domain Root, runtime file or unit exists (issue 18 item 5); a
# name with a newline is shown escaped, so it cannot forge a line.
mkdir -p "$top/odd/a b" "$top/odd/nl
x" "$top/odd/uni-é"
git -C "$top/odd" init -q "r" 2>/dev/null
before=$(snapshot)
check_refused() {   # WORKSPACE WANT
        local out rc
        out=$("$ctl" launch --workspace "$1" -- /bin/true 2>&1); rc=$?
        if [ $rc -eq 1 ] && [ "$out" = "$2" ]; then ok "launch in $(printf '%q' "$1"): refused"
        else bad "launch in $(printf '%q' "$1"): rc=$rc: $out"; fi
}
check_refused /proc/1 "the workspace /proc/1 is not a git repository; run 'git init' there on the host first"
check_refused "$top/odd/r/.git" "the workspace $top/odd/r/.git is a git directory, not a working tree; launch in the working tree it belongs to"
check_refused "$top/odd/a b" "the workspace $top/odd/a b is not a git repository; run 'git init' there on the host first"
check_refused "$top/odd/nl
x" "the workspace $top/odd/nl\\x0ax is not a git repository; run 'git init' there on the host first"
check_refused "$top/odd/uni-é" "the workspace $top/odd/uni-é is not a git repository; run 'git init' there on the host first"
if [ "$(snapshot)" = "$before" ]; then ok "refused workspaces create nothing"; else bad "a refused workspace created files: $(diff <(echo "$before") <(snapshot))"; fi
out=$("$ctl" image build-default extra 2>&1); rc=$?
if [ $rc -eq 2 ] && case $out in "Wrong number of arguments for \"image\"; usage: "*) true ;; *) false ;; esac; then
        ok "image with an extra argument: usage error"
else
        bad "image with an extra argument: rc=$rc: $out"
fi
# image build-default takes the Debian mirror from apt's own configuration
# (APT_CONFIG: a fake one here); with none configured it says what to
# configure, in one line, before it looks for tools or creates anything.
mkdir -p "$top/apt/conf.d" "$top/apt/sources.list.d"
cat >"$top/apt/apt.conf" <<EOF
Dir::Etc::main "$top/apt/none.conf";
Dir::Etc::parts "$top/apt/conf.d";
Dir::Etc::sourcelist "$top/apt/sources.list";
Dir::Etc::sourceparts "$top/apt/sources.list.d";
EOF
printf 'deb http://apt.invalid/debian some-other-suite main\n' >"$top/apt/sources.list"
before=$(snapshot)
out=$(APT_CONFIG=$top/apt/apt.conf "$ctl" image build-default 2>&1); rc=$?
case $out in
"Building the default image needs a Debian mirror: apt's sources list no Debian mirror for "*"Add one to apt's sources (e.g. /etc/apt/sources.list.d/debian.sources with Types: deb, URIs: <your mirror>, Suites: "*", Components: main) or name one with --source URL.")
        if [ $rc -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ]; then ok "image build-default without a mirror in apt's sources: one line"; else bad "image build-default without a mirror: rc=$rc: $out"; fi ;;
*)      bad "image build-default without a mirror: rc=$rc: $out" ;;
esac
if [ "$(snapshot)" = "$before" ]; then ok "image build-default without a mirror creates nothing"; else bad "image build-default without a mirror created files"; fi
printf 'deb http://apt.invalid/debian bookworm\n' >"$top/apt/sources.list"   # no component: apt refuses it
out=$(APT_CONFIG=$top/apt/apt.conf "$ctl" image build-default 2>&1); rc=$?
want="Cannot find the Debian mirror in apt's configuration: apt-get indextargets failed (exit status 100); run it to see what apt finds wrong in its sources."
if [ $rc -eq 1 ] && [ "$out" = "$want" ]; then ok "image build-default with broken apt sources: apt's failure named"; else bad "image build-default with broken apt sources: rc=$rc: $out"; fi

# lazaretctl log: the coordinator's file in the runtime directory (and its
# rotated predecessor), last 50 lines, with or without a journal.
logid=0123456789ab
out=$("$ctl" log "$logid" 2>&1); rc=$?
case $out in
"No log for Domain $logid: "*) if [ $rc -eq 1 ]; then ok "log of a Domain that never ran: named, exit 1"; else bad "log without a file: rc=$rc"; fi ;;
*) bad "log without a file: rc=$rc: $out" ;;
esac
mkdir -p "$top/run/lazaret"
seq 1 30 | sed 's/^/old /' >"$top/run/lazaret/$logid.log.1"
seq 1 40 | sed 's/^/new /' >"$top/run/lazaret/$logid.log"
out=$("$ctl" log "$logid" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 50 ] && [ "$(printf '%s\n' "$out" | head -n 1)" = "old 21" ] &&
   [ "$(printf '%s\n' "$out" | tail -n 1)" = "new 40" ]; then ok "log shows the last 50 lines across the rotated file"
else bad "log: rc=$rc: $(printf '%s\n' "$out" | head -n 2)"; fi
out=$("$ctl" log --lines=all "$logid" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 70 ] && [ "$(printf '%s\n' "$out" | head -n 1)" = "old 1" ]; then
        ok "log --lines=all shows both files whole"
else bad "log --lines=all: rc=$rc: $(printf '%s\n' "$out" | head -n 2)"; fi
out=$("$ctl" log -n 3 "$logid" 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$out" = "$(printf 'new 38\nnew 39\nnew 40')" ]; then ok "log -n 3"; else bad "log -n 3: rc=$rc: $out"; fi
# What a helper logged from the sandbox (a path, a host name) reaches the terminal escaped.
printf 'lazaret-view: refused the sandbox'"'"'s new .git/index: it stages \033]0;pwned\007x, a protected path\n' >>"$top/run/lazaret/$logid.log"
out=$("$ctl" log -n 1 "$logid" 2>&1); rc=$?
if [ $rc -eq 0 ] && [[ $out == *'\x1b]0;pwned\x07x, a protected path' ]] && [[ $out != *$'\033'* ]]; then ok "log escapes control bytes"
else bad "log with control bytes: rc=$rc: $(printf '%q' "$out")"; fi
out=$("$ctl" log --lines=0 "$logid" 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $out == '--lines: "0" is not a number of lines from 1 to 1000000, nor "all".' ]]; then ok "log --lines=0 refused by name"
else bad "log --lines=0: rc=$rc: $out"; fi
out=$("$ctl" status --lines=3 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $out == '--lines is an option of "log" only, not of "status".' ]]; then ok "--lines is refused by other commands"
else bad "status --lines: rc=$rc: $out"; fi
rm -f "$top/run/lazaret/$logid.log" "$top/run/lazaret/$logid.log.1"

# --- changes (the workspace view's pending protected changes) --------------
cid=$(cd "$top/proj" && "$ctl" domain-id)
out=$(cd "$top/proj" && "$ctl" changes 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$out" = "No pending protected changes in Domain $cid." ]; then ok "changes without view state"
else bad "changes without view state: rc=$rc: $out"; fi
vs=$XDG_DATA_HOME/lazaret/domains/$cid/view
mkdir -p "$vs/.vscode" "$top/proj/.vscode"
printf 'x\n' > "$vs/.vscode/$(printf 'a\033[31mb')"
printf 'export A=1\n' > "$vs/.envrc"
out=$(cd "$top/proj" && "$ctl" changes 2>&1); rc=$?
if [ $rc -eq 0 ] && [[ $out == *'.vscode/a\x1b[31mb'* ]] && [[ $out != *$'\033'* ]] && [[ $out == *"new "*".envrc"* ]]; then
        ok "changes lists names with control bytes escaped"
else bad "changes listing: rc=$rc: $out"; fi
if [ "$(cd "$top/proj" && "$ctl" changes --json | jq -r '[.changes[].kind] | join(",")')" = "new,new" ]; then ok "changes --json"
else bad "changes --json: $(cd "$top/proj" && "$ctl" changes --json 2>&1)"; fi
out=$(cd "$top/proj" && "$ctl" status --diff .envrc 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $out == *'--diff is an option of "changes" only'* ]]; then ok "--diff is refused by other commands"
else bad "status --diff: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" changes apply 2>&1); rc=$?
if [ $rc -eq 1 ] && [[ $out == *"Name the paths to apply, or --all."* ]]; then ok "changes apply needs paths"
else bad "changes apply without paths: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" changes apply nothing-here 2>&1); rc=$?
if [ $rc -eq 1 ] && [[ $out == *"No pending change at nothing-here"* ]] && [ -e "$vs/.envrc" ]; then ok "changes apply of an unknown path changes nothing"
else bad "changes apply of an unknown path: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" changes --diff .envrc 2>&1); rc=$?
if [ $rc -eq 0 ] && [[ $out == *"+export A=1"* ]]; then ok "changes --diff of a new file"
else bad "changes --diff: rc=$rc: $out"; fi
printf 'a\0b' > "$vs/.mcp.json"
out=$(cd "$top/proj" && "$ctl" changes --diff .mcp.json 2>&1); rc=$?
if [ $rc -eq 1 ] && [[ $out == *"is binary"* ]]; then ok "changes --diff refuses a binary file"
else bad "changes --diff of a binary file: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" changes discard --all 2>&1); rc=$?
if [ $rc -eq 0 ] && [ "$(cd "$top/proj" && "$ctl" changes --json | jq '.changes | length')" = 0 ]; then ok "changes discard --all"
else bad "changes discard --all: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" changes accept-commits extra 2>&1); rc=$?
if [ $rc -ne 0 ] && [[ $out == *'"changes accept-commits" takes no argument.'* ]]; then ok "changes accept-commits takes no argument"
else bad "changes accept-commits extra: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" changes accept-commits 2>&1); rc=$?
if [ $rc -ne 0 ] && [[ $out == *"has no state of this checkout yet"* ]] && [ ! -e "$XDG_DATA_HOME/lazaret/domains/$cid/refs.json" ]; then
        ok "changes accept-commits needs the checkout's own state"
else bad "changes accept-commits without checkout state: rc=$rc: $out"; fi
rm -rf "$XDG_DATA_HOME/lazaret/domains/$cid" "$top/proj/.vscode"

if "$ctl" --help | grep -q "domain-id" && "$ctl" --version | grep -q "^lazaretctl "; then ok "--help and --version"; else bad "--help/--version"; fi

# --- egress (spec 4.5, "A denied name"): judged here before anything is asked -----
out=$(cd "$top/proj" && "$ctl" egress allow "http://a.example" 2>&1); rc=$?
if [ $rc -eq 1 ] && [[ $out == *"is a URL"* ]]; then ok "egress allow refuses a URL, naming why"; else bad "egress allow of a URL: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" status --keep 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $out == *'--keep is an option of "egress allow" only'* ]]; then ok "--keep belongs to egress allow"
else bad "--keep on status: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" egress allow a.example --once --keep 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $out == *"--once and --keep cannot be given together"* ]]; then ok "one scope at a time"
else bad "--once --keep: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" egress denied --domain 2>&1); rc=$?
if [ $rc -eq 1 ] && [[ $out == *'--domain is an option of "egress allow" only'* ]]; then ok "a scope only with egress allow"
else bad "egress denied --domain: rc=$rc: $out"; fi
out=$(cd "$top/proj" && "$ctl" egress bogus 2>&1); rc=$?
if [ $rc -eq 1 ] && [[ $out == *'Unknown egress action "bogus"'* ]]; then ok "egress refuses an unknown action"
else bad "egress bogus: rc=$rc: $out"; fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
