#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-launch-isolation: inside the sandbox there is no host root authority
# and no host path outside the workspace: /proc/self/status shows a limited
# capability set and NoNewPrivs; the sandbox's processes run on the host as
# subordinate IDs without directfs, confined as the user with it (never as
# root); ~/.ssh, the configuration file
# and a secret planted beside them are nowhere to be read inside.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

secret=lazaret-secret-$RANDOM$RANDOM
mkdir -p "$HOME/.ssh"
chmod 0700 "$HOME/.ssh"
echo "$secret" >"$HOME/.ssh/id_lazaret_test"
printf '// %s\n' "$secret" >>"$LT_CONFIG"

status=$(lt_launch -- /bin/cat /proc/self/status)
capeff=$(awk '/^CapEff:/ { print $2 }' <<<"$status")
capbnd=$(awk '/^CapBnd:/ { print $2 }' <<<"$status")
nnp=$(awk '/^NoNewPrivs:/ { print $2 }' <<<"$status")
lt_log "inside: CapEff=$capeff CapBnd=$capbnd NoNewPrivs=${nnp:-?}"
for bit in 12 13 16 17 19 21 25; do   # NET_ADMIN NET_RAW SYS_MODULE SYS_RAWIO SYS_PTRACE SYS_ADMIN SYS_TIME
        (( (16#$capbnd >> bit) & 1 )) && lt_fail "capability bit $bit is in the bounding set inside"
done
(( 16#$capeff != 0 )) || lt_fail "expected the sandbox root to keep its ordinary capabilities"
[[ -z $nnp || $nnp == 1 ]] || lt_fail "NoNewPrivs is $nnp inside"

# Host paths outside the workspace are not there.
for p in "$HOME" "$HOME/.ssh" "$LT_CONFIG" /home /run/user "$XDG_RUNTIME_DIR"; do
        if lt_launch -- /bin/sh -c "test -e '$p'"; then
                lt_fail "host path $p is visible inside the sandbox"
        fi
done
# /bin is left out: the image's busybox applets are symlinks that busybox
# grep follows, 400 reads of the same binary for nothing. The Escalation
# Mailbox's results/ is left out too: it holds the session's doorbell FIFO,
# on which busybox grep -r (unlike GNU grep) would block (spec section 5.6).
found=$(lt_launch -- /bin/sh -c "for d in /* /run/* /run/lazaret/*; do case \$d in /proc|/sys|/dev|/bin|/run|/run/lazaret|/run/lazaret/mailbox) ;; *) grep -rl '$secret' \$d 2>/dev/null;; esac; done; grep -rl '$secret' /run/lazaret/mailbox/requests 2>/dev/null; ls /run/lazaret/mailbox/results | grep -v '[.]bell\$' | sed 's|^|/run/lazaret/mailbox/results/|' | xargs -r grep -l '$secret' 2>/dev/null; true")
[[ -z $found ]] || lt_fail "the secret planted outside the workspace is readable inside: $found"
lt_log "ok: no host path outside the workspace, secret not found"

# On the host: what runs the sandbox, for each directfs mode (spec §6.4).
# directfs=false: gVisor's kernel and the systrap stubs that run the
# sandbox's code run as subordinate IDs with no capabilities. directfs=true
# (the default): they run as the user, confined (NO_NEW_PRIVS, gVisor's
# seccomp filter, no system or network administration capability).
subid_start=$(awk -F: -v u="$(id -un)" '$1 == u { print $2; exit }' /etc/subuid)
scope=lazaret-$LT_DOMAIN-sandbox.scope
check_host_processes() {
        local mode=$1 pid uid st capeff capbnd seen=0 watchers=0 views=0 notifiers=0 cmd
        printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s", "directfs": %s } } }\n' \
                "$LT_IMAGE" "$mode" >"$LT_CONFIG"
        (cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 20 </dev/null >/dev/null 2>&1) &
        bg=$!
        # Published means the supervisor said READY, i.e. it has hardened itself.
        for _ in $(seq 1 100); do
                [[ $(cd "$LT_WS" && lazaretctl status --json 2>/dev/null | jq -r .State) == running ]] && break
                sleep 0.1
        done
        pids=$(lt_unit_pids "$scope")
        [[ -n $pids ]] || lt_fail "no processes in $scope"
        for pid in $pids; do
                st=$(cat "/proc/$pid/status" 2>/dev/null) || continue
                uid=$(awk '/^Uid:/ { print $3 }' <<<"$st")
                [[ -n $uid ]] || continue
                [[ $uid -ne 0 ]] || lt_fail "process $pid of the sandbox scope runs as host root"
                cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -d' ' -f1)
                # The supervisor, runsc's own clients and the gofer are Lazaret's and runsc's side;
                # slirp4netns too, in its own seccomp sandbox, and the host-edit watcher, with no
                # capabilities, NO_NEW_PRIVS and its seccomp allowlist; the set-ID filter's responder
                # likewise, with the three capabilities that applying a chown on a State Anchor takes.
                case $cmd in
                */slirp4netns)
                        [[ $(awk '/^Seccomp:/ { print $2 }' <<<"$st") == 2 ]] || lt_fail "slirp4netns runs without its seccomp filter"
                        continue ;;
                */lazaret-setid-responder)
                        # CAP_CHOWN, CAP_FOWNER and CAP_FSETID, for the State Anchor (issue 33).
                        [[ $(awk '/^Seccomp:/ { print $2 }' <<<"$st") == 2 &&
                           $(awk '/^NoNewPrivs:/ { print $2 }' <<<"$st") == 1 &&
                           $(awk '/^CapEff:/ { print $2 }' <<<"$st") == 0000000000000019 &&
                           $(awk '/^CapBnd:/ { print $2 }' <<<"$st") == 0000000000000019 ]] ||
                                lt_fail "$cmd (pid $pid) is not hardened: $(grep -E '^(Seccomp|NoNewPrivs|CapEff|CapBnd):' <<<"$st" | tr '\n' ' ')"
                        continue ;;
                */lazaret-watch)
                        [[ $(awk '/^Seccomp:/ { print $2 }' <<<"$st") == 2 &&
                           $(awk '/^NoNewPrivs:/ { print $2 }' <<<"$st") == 1 &&
                           $(awk '/^CapEff:/ { print $2 }' <<<"$st") == 0000000000000000 &&
                           $(awk '/^CapBnd:/ { print $2 }' <<<"$st") == 0000000000000000 ]] ||
                                lt_fail "$cmd (pid $pid) is not hardened: $(grep -E '^(Seccomp|NoNewPrivs|CapEff|CapBnd):' <<<"$st" | tr '\n' ' ')"
                        [[ $cmd == */lazaret-watch ]] && watchers=$((watchers + 1))
                        continue ;;
                */lazaret-view)
                        if [[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == *' --notifier '* ]]; then
                                # The view's notifier: no capabilities, NO_NEW_PRIVS, its allowlist.
                                [[ $(awk '/^Seccomp:/ { print $2 }' <<<"$st") == 2 &&
                                   $(awk '/^NoNewPrivs:/ { print $2 }' <<<"$st") == 1 &&
                                   $(awk '/^CapEff:/ { print $2 }' <<<"$st") == 0000000000000000 &&
                                   $(awk '/^CapBnd:/ { print $2 }' <<<"$st") == 0000000000000000 ]] ||
                                        lt_fail "the view's notifier (pid $pid) is not hardened: $(grep -E '^(Seccomp|NoNewPrivs|CapEff|CapBnd):' <<<"$st" | tr '\n' ' ')"
                                notifiers=$((notifiers + 1))
                                continue
                        fi
                        # The workspace view: the user's files only, with the three
                        # capabilities that serving them as the sandbox's root takes.
                        [[ $(awk '/^Seccomp:/ { print $2 }' <<<"$st") == 2 &&
                           $(awk '/^NoNewPrivs:/ { print $2 }' <<<"$st") == 1 &&
                           $(awk '/^CapEff:/ { print $2 }' <<<"$st") == 000000000000000e &&
                           $(awk '/^CapBnd:/ { print $2 }' <<<"$st") == 000000000000000e &&
                           $uid -eq $(id -u) ]] ||
                                lt_fail "lazaret-view (pid $pid) is not hardened: $(grep -E '^(Uid|Seccomp|NoNewPrivs|CapEff|CapBnd):' <<<"$st" | tr '\n' ' ')"
                        views=$((views + 1))
                        continue ;;
                */lazaret-supervisor | */runsc | runsc-gofer) continue ;;
                esac
                capeff=$(awk '/^CapEff:/ { print $2 }' <<<"$st")
                capbnd=$(awk '/^CapBnd:/ { print $2 }' <<<"$st")
                [[ $(awk '/^NoNewPrivs:/ { print $2 }' <<<"$st") == 1 ]] || lt_fail "directfs=$mode: process $pid ($cmd) lacks NO_NEW_PRIVS"
                [[ $(awk '/^Seccomp:/ { print $2 }' <<<"$st") == 2 ]] || lt_fail "directfs=$mode: process $pid ($cmd) has no seccomp filter"
                if [[ $mode == false ]]; then
                        ((uid >= subid_start && uid < subid_start + 65536)) ||
                                lt_fail "directfs=false: process $pid ($cmd) runs as host UID $uid, not a subordinate ID"
                        [[ $capeff == 0000000000000000 ]] || lt_fail "directfs=false: process $pid ($cmd) has capabilities $capeff"
                else
                        [[ $uid -eq $(id -u) ]] || lt_fail "directfs=true: process $pid ($cmd) runs as host UID $uid"
                        for bit in 12 16 17 21 25; do   # NET_ADMIN SYS_MODULE SYS_RAWIO SYS_ADMIN SYS_TIME
                                (( (16#$capbnd >> bit) & 1 )) && lt_fail "directfs=true: process $pid ($cmd) has capability bit $bit"
                        done
                fi
                seen=$((seen + 1))
        done
        ((seen >= 2)) || lt_fail "directfs=$mode: expected gVisor's kernel and its stubs in $scope, saw $seen"
        # The workspace view is the host-edit relay's source: no lazaret-watch beside it (spec 4.6).
        lt_assert_eq "directfs=$mode: lazaret-watch processes in $scope" 0 "$watchers"
        lt_assert_eq "directfs=$mode: hardened workspace views in $scope" 1 "$views"
        lt_assert_eq "directfs=$mode: hardened notifiers of the view in $scope" 1 "$notifiers"
        lt_log "ok: directfs=$mode: $seen sandbox processes as expected"
}
check_host_processes false
(cd "$LT_WS" && lazaretctl stop) >/dev/null
wait "$bg" 2>/dev/null || true
lt_wait_inactive
check_host_processes true

# The Runtime Supervisor hardened itself before it said READY: no
# capabilities, not even in its bounding set, NO_NEW_PRIVS, a seccomp filter.
# (This second check overwrote the configuration: the secret line is gone,
# which nothing below needs.)
sup=
for pid in $pids; do
        [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == */lazaret-supervisor ]] && sup=$pid
done
[[ -n $sup ]] || lt_fail "no lazaret-supervisor process in $scope"
sstatus=$(cat "/proc/$sup/status")
lt_assert_eq "supervisor CapEff" 0000000000000000 "$(awk '/^CapEff:/ { print $2 }' <<<"$sstatus")"
lt_assert_eq "supervisor CapPrm" 0000000000000000 "$(awk '/^CapPrm:/ { print $2 }' <<<"$sstatus")"
lt_assert_eq "supervisor CapBnd" 0000000000000000 "$(awk '/^CapBnd:/ { print $2 }' <<<"$sstatus")"
lt_assert_eq "supervisor NoNewPrivs" 1 "$(awk '/^NoNewPrivs:/ { print $2 }' <<<"$sstatus")"
lt_assert_eq "supervisor Seccomp (2 = filter)" 2 "$(awk '/^Seccomp:/ { print $2 }' <<<"$sstatus")"

# OR-1: a second coordinator for the running Domain refuses to start. (It
# gets a valid launch request, which the answered launch removed, so that it
# reaches the lock.)
fp=$(lazaretctl config check --json --workspace "$LT_WS" | jq -r .fingerprint)
jq -cn --arg c "$LT_CONFIG" --arg f "$fp" '{version: 1, config: $c, fingerprint: $f}' \
        >"$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN.launch"
chmod 0600 "$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN.launch"
set +e
out=$("$LT_PREFIX/libexec/lazaret-coordinator" "$LT_DOMAIN" 2>&1)
rc=$?
set -e
[[ $rc -ne 0 ]] || lt_fail "a second coordinator for a running Domain exited 0"
[[ $out == *"Another coordinator holds"* ]] || lt_fail "second coordinator: unexpected output: $out"
lt_log "ok: a second coordinator refused: $(grep -m1 'Another coordinator' <<<"$out")"
lt_assert_eq "Domain still running after the refused second coordinator" running \
        "$(cd "$LT_WS" && lazaretctl status --json | jq -r .State)"
kill "$bg" 2>/dev/null || true
wait "$bg" 2>/dev/null || true

echo "PASS: no host root authority, no host paths outside the workspace"
