#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-launch-basic: commands without a terminal through the real stack (user
# manager, socket activation, coordinator, supervisor, runsc). Output,
# stderr and exit status round-trip; streams are binary-safe, large, and
# stdin EOF arrives; files as stdout are written at their offset; the
# Domain tears down after the last session; status/list/stop answer.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup

out=$(lt_launch -- /bin/echo hello) || lt_fail "launch echo exited $?"
lt_assert_eq "echo output" hello "$out"

set +e
lt_launch -- /bin/sh -c 'echo to-out; echo to-err >&2; exit 42' >"$HOME/o.txt" 2>"$HOME/e.txt"
rc=$?
set -e
lt_assert_eq "exit status" 42 "$rc"
lt_assert_eq "stdout" to-out "$(cat "$HOME/o.txt")"
lt_assert_eq "stderr" to-err "$(cat "$HOME/e.txt")"

set +e
lt_launch -- /bin/sh -c 'kill -TERM $$'
rc=$?
set -e
lt_assert_eq "exit status of a command killed by SIGTERM" 143 "$rc"

set +e
lt_launch -- /no/such/program >/dev/null 2>"$HOME/missing.err"
rc=$?
set -e
lt_assert_eq "exit status of a missing program" 127 "$rc"
grep -q "^/no/such/program could not be started in the sandbox" "$HOME/missing.err" ||
        lt_fail "a missing program is not reported in one line: $(cat "$HOME/missing.err")"

# Streams that cannot work are refused before anything starts, in one line.
refused() {   # WHAT EXPECTED-TEXT COMMAND...
        local what=$1 text=$2 out
        shift 2
        if out=$("$@" 2>&1); then
                lt_fail "$what was accepted: $out"
        fi
        grep -q "$text" <<<"$out" || lt_fail "$what: expected '$text', got: $out"
        lt_log "ok: $what refused: $(grep -m1 "$text" <<<"$out")"
}
echo ro >"$HOME/ro.txt"
refused "a directory as standard input" "standard input passed is a directory" \
        bash -c '(cd "$1" && exec lazaretctl launch -- /bin/cat <"$HOME")' _ "$LT_WS"
refused "a read-only standard output" "standard output passed is not open for writing" \
        bash -c '(cd "$1" && exec lazaretctl launch -- /bin/echo hi 1<"$HOME/ro.txt")' _ "$LT_WS"

# Binary-safe in both directions, 8 MiB, with stdin EOF ending cat.
head -c 8388608 /dev/urandom >"$HOME/in.bin"
want=$(sha256sum <"$HOME/in.bin" | cut -d' ' -f1)
got=$(lt_launch -- /bin/cat <"$HOME/in.bin" | sha256sum | cut -d' ' -f1)
lt_assert_eq "sha256 of 8 MiB through a pipe" "$want" "$got"
got=$(printf 'a\0b\377c' | lt_launch -- /bin/cat | od -An -tx1 | tr -d ' \n')
lt_assert_eq "bytes NUL and 0xff" 610062ff63 "$got"
lt_assert_eq "stdin EOF reaches wc" 3 "$(printf abc | lt_launch -- /bin/wc -c | tr -d ' ')"

# Regular files as standard streams: written at the file's offset.
{ printf 'before:'; lt_launch -- /bin/echo middle; printf 'after\n'; } >"$HOME/f.txt"
lt_assert_eq "stdout to a file keeps its offset" "before:middle"$'\n'"after" "$(cat "$HOME/f.txt")"
printf 'skip-this|read-this' >"$HOME/in.txt"
got=$( { dd bs=10 count=1 status=none of=/dev/null; lt_launch -- /bin/cat; } <"$HOME/in.txt")
lt_assert_eq "stdin from a file starts at its offset" "read-this" "$got"

# The workspace is shared read-write, in both directions.
echo from-host >"$LT_WS/host.txt"
lt_assert_eq "host file seen inside" from-host "$(lt_launch -- /bin/cat /workspace/host.txt)"
lt_launch -- /bin/sh -c 'echo from-sandbox > /workspace/sandbox.txt'
lt_assert_eq "sandbox file seen on the host" from-sandbox "$(cat "$LT_WS/sandbox.txt")"
lt_assert_eq "working directory" /workspace "$(lt_launch -- /bin/pwd)"

# The image is writable inside (installs work), through an in-memory overlay:
# the prepared image on the host, shared by every Domain using it, is never
# written. (Until the State Anchor exists, such changes end with the Domain.)
lt_launch -- /bin/sh -c 'echo installed > /bin/lazaret-test-tool && mkdir -p /opt/x && cat /bin/lazaret-test-tool' >"$HOME/inst.out" ||
        lt_fail "writing into the image's /bin failed: $(cat "$HOME/inst.out")"
lt_assert_eq "a file written into /bin inside" installed "$(cat "$HOME/inst.out")"
data_root=$(lazaretctl config check --json --workspace "$LT_WS" | jq -r .data_root)
if compgen -G "$data_root/images/prepared/*/rootfs/bin/lazaret-test-tool" >/dev/null; then
        lt_fail "a write inside the sandbox reached the prepared image on the host"
fi
lt_log "ok: the prepared image on the host is unchanged"

# After the last session the Domain goes away, and nothing of it stays.
lt_wait_inactive
[[ ! -e $XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN ]] || lt_fail "runtime dir of $LT_DOMAIN left behind: $(ls -la "$XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN")"
scope_state=$(systemctl --user is-active "lazaret-$LT_DOMAIN-sandbox.scope" 2>/dev/null) || true
[[ $scope_state != active ]] || lt_fail "sandbox scope still active after teardown"
# The launch request went with the launch that the coordinator answered;
# the socket unit stays listening for the next launch (C8).
lt_assert_eq "socket still listening for the next launch" active "$(systemctl --user is-active "lazaret@$LT_DOMAIN.socket")"
[[ ! -e $XDG_RUNTIME_DIR/lazaret/$LT_DOMAIN.launch ]] || lt_fail "the launch request outlived its Domain"

# status, list and stop while a session runs.
(cd "$LT_WS" && exec lazaretctl launch -- /bin/sleep 30) 2>"$HOME/stopped.err" &
bg=$!
for _ in $(seq 1 100); do
        state=$(cd "$LT_WS" && lazaretctl status --json | jq -r .State)
        [[ $state == running ]] && break
        sleep 0.1
done
lt_assert_eq "status --json State" running "$state"
json=$(cd "$LT_WS" && lazaretctl status --json)
lt_assert_eq "status --json DomainId" "$LT_DOMAIN" "$(jq -r .DomainId <<<"$json")"
lt_assert_eq "status --json Workspace" "$LT_WS" "$(jq -r .Workspace <<<"$json")"
lt_assert_eq "status --json sessions" 1 "$(jq '.Sessions | length' <<<"$json")"
fp=$(lazaretctl config check --json --workspace "$LT_WS" | jq -r .fingerprint)
lt_assert_eq "status --json ConfigurationFingerprint" "$fp" "$(jq -r .ConfigurationFingerprint <<<"$json")"
lt_assert_eq "list --json has the Domain" "$LT_DOMAIN" "$(lazaretctl list --json | jq -r --arg d "$LT_DOMAIN" '.[] | select(.DomainId == $d) | .DomainId')"

# status and list read each Domain with one GetAll call. Only a Domain name
# without an owner means "not running"; a name whose owner exports no Domain
# object is "unpublished" (a coordinator starting or stopping); any other
# failure is reported with the error and a non-zero exit. Two fake owners of
# Domain names, built here: 0123456789ab exports nothing, ba9876543210 an
# org.lazaret.Domain1 object with only DomainId (a coordinator of another
# version).
fake=$HOME/lt-fake-domain
cat >"$fake.c" <<'EOF'
#include <stdio.h>
#include <systemd/sd-bus.h>
static int get_id(sd_bus *b, const char *p, const char *i, const char *n, sd_bus_message *m, void *u, sd_bus_error *e) {
        return sd_bus_message_append(m, "s", (const char *) u);
}
static const sd_bus_vtable vt[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("DomainId", "s", get_id, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END
};
int main(int argc, char *argv[]) {
        char name[64];
        sd_bus *bus;
        int r;
        if (argc != 3 || sd_bus_open_user(&bus) < 0)
                return 2;
        if (argv[2][0] == 'o' && sd_bus_add_object_vtable(bus, NULL, "/org/lazaret/Domain", "org.lazaret.Domain1", vt, argv[1]) < 0)
                return 1;
        snprintf(name, sizeof(name), "org.lazaret.Domain.d%s", argv[1]);
        if (sd_bus_request_name(bus, name, 0) < 0)
                return 1;
        printf("ready\n");
        fflush(stdout);
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return 1;
                if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
                        return 1;
        }
}
EOF
# shellcheck disable=SC2046
cc -o "$fake" "$fake.c" $(pkg-config --cflags --libs libsystemd) || lt_fail "cannot build the fake Domain owner"
# (Their output goes to files, and the EXIT trap kills them, so that a
# failure here does not leave them holding the test's output open.)
lt_cleanup_hook() { kill "${fake_bare:-}" "${fake_object:-}" 2>/dev/null || true; }
"$fake" 0123456789ab bare >"$fake.bare" 2>&1 &
fake_bare=$!
"$fake" ba9876543210 object >"$fake.object" 2>&1 &
fake_object=$!
for _ in $(seq 1 100); do
        [[ $(cat "$fake.bare" "$fake.object") == $'ready\nready' ]] && break
        sleep 0.1
done
[[ $(cat "$fake.bare" "$fake.object") == $'ready\nready' ]] || lt_fail "the fake Domain owners did not start"
lt_assert_eq "status --json of a name without the Domain object" unpublished \
        "$(lazaretctl status --json 0123456789ab | jq -r .State)"
set +e
out=$(lazaretctl status ba9876543210 2>&1)
rc=$?
set -e
lt_assert_eq "exit status of status for a Domain that answers without its properties" 1 "$rc"
[[ $out == *"Cannot read the status of Domain ba9876543210: "*"lacks the property Profile"* ]] ||
        lt_fail "status of a Domain that answers without its properties: $out"
lt_log "ok: status reports: $out"
set +e
out=$(lazaretctl list --json 2>"$HOME/list.err")
rc=$?
set -e
lt_assert_eq "exit status of list with a Domain that answers without its properties" 1 "$rc"
grep -q "Cannot read the status of Domain ba9876543210: " "$HOME/list.err" ||
        lt_fail "list does not report the bad Domain: $(cat "$HOME/list.err")"
lt_assert_eq "list --json with a bad Domain: the good one, and only it" "$LT_DOMAIN" "$(jq -r '.[].DomainId' <<<"$out")"
kill "$fake_bare" "$fake_object"
wait "$fake_bare" "$fake_object" 2>/dev/null || true
unset fake_bare fake_object
lt_assert_eq "status --json of a Domain name without an owner" inactive \
        "$(lazaretctl status --json ba9876543210 | jq -r .State)"
lazaretctl list >/dev/null || lt_fail "list failed after the fake owners left"
out=$(cd "$LT_WS" && lazaretctl stop) || lt_fail "lazaretctl stop failed"
lt_assert_eq "what stop says" "Domain $LT_DOMAIN stopped." "$out"
# stop returned when the Domain lock was free: the coordinator, its sandbox
# scope and every runsc process of the Domain are gone already.
lt_assert_eq "the coordinator after stop" inactive "$(systemctl --user is-active "lazaret@$LT_DOMAIN.service" || true)"
lt_assert_eq "the sandbox scope after stop" inactive "$(systemctl --user is-active "lazaret-$LT_DOMAIN-sandbox.scope" || true)"
lt_assert_eq "runsc processes of the Domain after stop" "" "$(pgrep -u "$(id -u)" -f "lz-$LT_DOMAIN" || true)"
out=$(cd "$LT_WS" && lazaretctl stop) || lt_fail "a second lazaretctl stop failed"
lt_assert_eq "stop of a stopped Domain" "Domain $LT_DOMAIN is not running." "$out"
set +e
wait "$bg"
rc=$?
set -e
[[ $rc -ne 0 ]] || lt_fail "a session ended by stop must not exit 0"
# Its client heard why from SessionEnded, sent before the name was released
# (SessionEndAnnounced), not only that the name lost its owner.
# Nothing but the reason: the sandbox runs until every session has ended
# (spec 5.3, "One dispatch"), so the session's runsc exec never loses it
# first and says so ("waiting on pid N: ... containerManager.WaitPID
# failed: EOF"), as it did when the user manager stopped the sandbox scope
# on hearing STOPPING=1 before the sessions ended.
lt_assert_eq "what the client of a session ended by stop says" "Session failed: the Domain is stopping" \
        "$(cat "$HOME/stopped.err")"
lt_wait_inactive
lt_assert_eq "status after stop" inactive "$(cd "$LT_WS" && lazaretctl status --json | jq -r .State)"

# A coordinator killed without its teardown drops the Domain lock at once;
# the user manager stops its sandbox scope (BindsTo=) afterwards. stop, like
# every verb that needs a stopped Domain, returns only when both are gone.
lt_keeper_start
main=$(systemctl --user show -P MainPID "lazaret@$LT_DOMAIN.service")
[[ $main -gt 0 ]] || lt_fail "no coordinator to kill"
kill -KILL "$main"
(cd "$LT_WS" && lazaretctl stop) >/dev/null || lt_fail "lazaretctl stop after the coordinator was killed failed"
scope_state=$(systemctl --user is-active "lazaret-$LT_DOMAIN-sandbox.scope" || true)
[[ $scope_state == inactive || $scope_state == failed ]] ||
        lt_fail "the sandbox scope was $scope_state when stop returned after the coordinator was killed"
kill "$LT_KEEPER" 2>/dev/null || true
wait "$LT_KEEPER" 2>/dev/null || true
LT_KEEPER=
systemctl --user reset-failed "lazaret@$LT_DOMAIN.service" 2>/dev/null || true

echo "PASS: output, status, streams, workspace, teardown, status/list/stop"
