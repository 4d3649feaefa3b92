#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-fault-matrix (issue 18 item 8): SIGKILL of every part of a Domain, at
# cold start and mid-session, each followed by a launch that works and a
# check that nothing of the killed generation is left.
#
# Parts: the coordinator, the Runtime Supervisor, slirp4netns, the gofer
# (runsc-gofer), the sandbox's kernel (runsc-sandbox), a session's
# `runsc exec`, and the client (lazaretctl).
#   cold: the part is killed as soon as it exists while the first launch
#         starts the Domain (for `runsc exec` and the client: while the
#         first session starts);
#   mid:  the Domain runs with a keeper session and a victim session; the
#         part is killed. A part of the Domain ends both sessions; the
#         victim's `runsc exec` or client ends only the victim, whose
#         process inside must be gone while the keeper carries on.
# After each kill: the client that waited exits within 15 s (not 0, unless
# it was the one killed), saying why on standard error; the next launch
# prints what it should; then, after `lazaretctl stop`, no process of the
# Domain, no active sandbox scope, no mount naming the Domain and no
# runtime file or root overlay directory remains. One image, one
# workspace, reused by every round.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

unit=lazaret@$LT_DOMAIN.service
scope=lazaret-$LT_DOMAIN-sandbox.scope
uid=$(id -u)
data_root=$(lazaretctl config check --json --workspace "$LT_WS" | jq -r .data_root)
started=$SECONDS

# The PID of PART of this Domain, or nothing. SESSION (a sleep duration)
# selects the runsc exec or the client of that session.
find_part() {   # PART [SESSION]
        local part=$1 tag=${2:-} p cmd
        case $part in
        coordinator)
                p=$(systemctl --user show -P MainPID "$unit" 2>/dev/null) || p=0
                [[ $p -gt 0 ]] && echo "$p"
                return 0 ;;
        client)
                [[ -n ${client_pid[$tag]:-} ]] && echo "${client_pid[$tag]}"
                return 0 ;;
        esac
        for p in $(pgrep -u "$uid" 2>/dev/null); do
                cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") || continue
                case $part in
                supervisor) [[ $cmd == */lazaret-supervisor\ *" lz-$LT_DOMAIN-"* ]] ;;
                slirp4netns) [[ $cmd == */slirp4netns\ *"/lazaret/$LT_DOMAIN/netns"* ]] ;;
                gofer) [[ $cmd == runsc-gofer\ *"/lazaret/$LT_DOMAIN/"* ]] ;;
                sandbox) [[ $cmd == runsc-sandbox\ *"/lazaret/$LT_DOMAIN/"* ]] ;;
                exec) [[ $cmd == *runsc\ *" exec --process /"*"/lazaret/$LT_DOMAIN/sessions/"* &&
                        $(jq -r '.args | join(" ")' "$(sed 's/.* --process \([^ ]*\) .*/\1/' <<<"$cmd")" 2>/dev/null) == *"sleep $tag" ]] ;;
                esac && { echo "$p"; return 0; }
        done
        return 0
}

declare -A client_pid
# Starts `lazaretctl launch -- /bin/sleep TAG` in the background; its stderr to ~/fm-TAG.err.
start_client() {   # TAG
        (cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep "$1") </dev/null >/dev/null 2>"$HOME/fm-$1.err" &
        client_pid[$1]=$!
}

wait_session() {   # TAG: until status lists that session
        for _ in $(seq 1 150); do
                (cd "$LT_WS" && lazaretctl status --json 2>/dev/null) |
                        jq -e --arg t "$1" '.Sessions[] | select(.command == "/bin/sleep")' >/dev/null 2>&1 &&
                        [[ -n $(find_part exec "$1") ]] && return 0
                sleep 0.1
        done
        lt_fail "the session sleep $1 never started"
}

# Waits (15 s) for the client of TAG to end; its exit status in $crc.
client_end() {   # TAG
        local pid=${client_pid[$1]}
        for _ in $(seq 1 150); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && lt_fail "the client of sleep $1 still runs 15 s after the kill"
        crc=0
        wait "$pid" || crc=$?
}

# Nothing of the Domain remains once it is stopped.
no_leftovers() {   # ROUND
        local p cmd
        (cd "$LT_WS" && lazaretctl stop) >/dev/null 2>&1 || true
        lt_wait_inactive
        for _ in $(seq 1 50); do
                left=
                for p in $(pgrep -u "$uid" 2>/dev/null); do
                        cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") || continue
                        [[ $cmd == *"lz-$LT_DOMAIN-"* || $cmd == *"/lazaret/$LT_DOMAIN/"* || $cmd == *"lazaret-coordinator $LT_DOMAIN"* ]] &&
                                left+="$p: $cmd; "
                done
                [[ -z $left ]] && break
                sleep 0.1
        done
        [[ -z $left ]] || lt_fail "$1: processes of the Domain left after stop: $left"
        [[ $(systemctl --user is-active "$scope" 2>/dev/null) != active ]] || lt_fail "$1: $scope still active"
        ! grep -qF "$LT_DOMAIN" /proc/self/mountinfo || lt_fail "$1: a mount naming the Domain is left: $(grep -F "$LT_DOMAIN" /proc/self/mountinfo)"
        [[ ! -e $XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN ]] || lt_fail "$1: runtime files left: $(ls -la "$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN")"
        [[ ! -e $data_root/domains/$LT_DOMAIN/overlay ]] || lt_fail "$1: the root overlay directory is left"
}

recovers() {   # ROUND
        local out
        out=$(lt_launch -- /bin/echo "recovered" </dev/null 2>&1) || lt_fail "$1: the launch after the kill failed: $out"
        lt_assert_eq "$1: the next launch" recovered "$out"
}

tag=600
n_cold=10
cold() {   # PART [EXPECTED-STDERR]
        local part=$1 want=${2:-} pid= rc
        # A command that ends by itself (3.1 s and a bit), unique per round.
        n_cold=$((n_cold + 1))
        tag=3.$n_cold
        start_client "$tag"
        for _ in $(seq 1 3000); do
                pid=$(find_part "$part" "$tag")
                [[ -n $pid ]] && break
                kill -0 "${client_pid[$tag]}" 2>/dev/null || break
                sleep 0.002
        done
        [[ -n $pid ]] || lt_fail "cold $part: it never ran ($(cat "$HOME/fm-$tag.err"))"
        kill -KILL "$pid"
        client_end "$tag"
        rc=$crc
        # A coordinator that dies before it answered is activated again by
        # the client, which then runs its command: 0 is right there.
        if [[ $part != client && ! ($part == coordinator && $rc -eq 0) ]]; then
                [[ $rc -ne 0 ]] || lt_fail "cold $part: the client exited 0"
                [[ -s $HOME/fm-$tag.err ]] || lt_fail "cold $part: the client said nothing"
                [[ -z $want ]] || grep -q -- "$want" "$HOME/fm-$tag.err" ||
                        lt_fail "cold $part: the client did not say '$want': $(cat "$HOME/fm-$tag.err")"
        fi
        lt_log "ok: cold $part: client $rc: $(head -n 1 "$HOME/fm-$tag.err")"
        recovers "cold $part"
        no_leftovers "cold $part"
}

n_mid=10
mid() {   # PART
        local part=$1 pid keeper victim rc out
        n_mid=$((n_mid + 1)); keeper=60$n_mid; start_client "$keeper"; wait_session "$keeper"
        victim=70$n_mid; start_client "$victim"; wait_session "$victim"
        pid=$(find_part "$part" "$victim")
        [[ -n $pid ]] || lt_fail "mid $part: not found"
        kill -KILL "$pid"
        client_end "$victim"
        rc=$crc
        case $part in
        client|exec)
                [[ $part == client || $rc -ne 0 ]] || lt_fail "mid $part: the victim's client exited 0"
                # The victim's process inside ends; the keeper goes on.
                for _ in $(seq 1 100); do
                        out=$(lt_launch -- /bin/ps -o args </dev/null 2>&1) || lt_fail "mid $part: the Domain stopped: $out"
                        grep -q "sleep $victim" <<<"$out" || break
                        sleep 0.1
                done
                grep -q "sleep $victim" <<<"$out" && lt_fail "mid $part: the victim's sleep still runs inside"
                grep -q "sleep $keeper" <<<"$out" || lt_fail "mid $part: the keeper's sleep is gone: $out"
                kill -0 "${client_pid[$keeper]}" 2>/dev/null || lt_fail "mid $part: the keeper's client ended" ;;
        *)
                [[ $rc -ne 0 ]] || lt_fail "mid $part: the victim's client exited 0"
                client_end "$keeper"
                [[ $crc -ne 0 ]] || lt_fail "mid $part: the keeper's client exited 0"
                [[ -s $HOME/fm-$keeper.err ]] || lt_fail "mid $part: the keeper's client said nothing" ;;
        esac
        lt_log "ok: mid $part: victim said: $(head -n 1 "$HOME/fm-$victim.err")"
        recovers "mid $part"
        no_leftovers "mid $part"
        kill "${client_pid[$keeper]}" 2>/dev/null || true
        wait "${client_pid[$keeper]}" 2>/dev/null || true
}

# Warm the image once: every round after this one starts from a prepared image.
recovers warm-up
no_leftovers warm-up

for part in coordinator supervisor slirp4netns gofer sandbox exec client; do
        case $part in
        slirp4netns) cold "$part" "slirp4netns" ;;
        *) cold "$part" ;;
        esac
        mid "$part"
done
lt_log "14 rounds in $((SECONDS - started)) s"
echo "PASS: every part killed at cold start and mid-session; each time the next launch worked and nothing was left"
