#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-escalation: host escalation through the real stack. lazaret-escalate
# inside the sandbox asks; the coordinator verifies, decides and runs the
# command on the host. An auto-approved command's output and status come
# back; near misses (an extra argument, a relative path, a metacharacter)
# go to a human (without a terminal: they time out); a request signed with
# another key, a tampered and a replayed request are refused with nothing
# run; on a tmux-driven terminal the prompt approves, denies and edits;
# the audit trail records it all; a test notification server gets a
# notification it can approve or deny. The host command really runs on the
# host: it creates files in $HOME, outside the workspace. Requests carrying
# another session's or another generation's credential are refused too. A
# cancel record that comes after a request's result changes nothing.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
command -v tmux >/dev/null || lt_fail "tmux is not installed (.ci/install-deps installs it)"

H=$HOME/esc
rm -rf "$H"
find "$HOME/.local/share/lazaret" -name 'escalations.jsonl*' -delete 2>/dev/null || true
T0=$(date +%s%6N)
mkdir -p "$H"
printf '{ "default_profile": "test",
  "escalation": { "timeout_s": 30, "auto_approve": [
    { "argv": ["/usr/bin/touch", "%s/auto"] },
    { "argv": ["/bin/echo", "hello"], "trailing_args": true },
    { "argv": ["/usr/bin/false"] },
    { "argv": ["/usr/bin/sleep", "77"] } ] },
  "profiles": { "test": { "image": "oci:%s" } } }\n' "$H" "$LT_IMAGE" >"$LT_CONFIG"

T="tmux -L lt-$$"
cleanup_tmux() { $T kill-server 2>/dev/null || true; }
trap 'rc=$?; cleanup_tmux; lt_domain_cleanup "$rc"' EXIT

# mark / since_mark: the Domain's log lines written after the mark (the log is appended across runs).
LOG=$LT_LOGDIR/$LT_DOMAIN.log
mark() { MARK=$(wc -l <"$LOG" 2>/dev/null || echo 0); }
since_mark() { tail -n +"$((MARK + 1))" "$LOG"; }
mark

# in_sandbox SCRIPT: runs a shell script in a session without a terminal.
in_sandbox() { lt_launch -- /bin/sh -c "$1"; }

# --- auto-approved: the file appears on the host, output and status come back
out=$(in_sandbox "lazaret-escalate -- /usr/bin/touch $H/auto; echo rc=\$?") || lt_fail "launch failed"
lt_assert_eq "auto-approved touch" "rc=0" "$out"
[[ -e $H/auto ]] || lt_fail "the auto-approved command did not run on the host"
out=$(in_sandbox "lazaret-escalate -- /bin/echo hello from the host; echo rc=\$?")
lt_assert_eq "auto-approved output with trailing arguments" $'hello from the host\nrc=0' "$out"
out=$(in_sandbox "lazaret-escalate -- /usr/bin/false; echo rc=\$?")
lt_assert_eq "auto-approved exit status" "rc=1" "$out"

# --- a cancel record that comes after the result finds nothing: the request
# keeps its one result (ResultDeliveryStateConsistent). Written in the same
# session, whose end would drop a request still held anyway.
mark
out=$(in_sandbox "
lazaret-escalate -- /bin/echo hello cancel-late >/dev/null || exit 1
id=\$(sed -n 's/^id 32://p' /run/lazaret/mailbox/results/\$LAZARET_SESSION_ID.result)
R=/run/lazaret/mailbox/requests
: > \$R/.c && mv \$R/.c \$R/\$id.cancel
sleep 1
echo \$id") || lt_fail "the late cancel script failed: $out"
[[ $out =~ ^[0-9a-f]{32}$ ]] || lt_fail "no request ID from the result file: $out"
late=$out
since_mark | grep -q "Escalation request $late: completed" || lt_fail "the request $late did not complete: $(since_mark | tail -n 5)"
! since_mark | grep -q "Escalation request $late: cancelled" || lt_fail "a cancel after the result gave request $late a second result"
lt_assert_eq "results of request $late in the audit trail" 1 \
        "$(cd "$LT_WS" && lazaretctl escalations history --json | jq --arg id "$late" '[.[] | select(.RequestId == $id and .Event == "result")] | length')"

# --- near misses go to a human; without a terminal they time out (124), nothing runs
near_miss() {   # WHAT ARGV...
        local what=$1 out
        shift
        out=$(in_sandbox "lazaret-escalate --timeout 2 -- $*; echo rc=\$?" 2>&1)
        grep -q 'rc=124' <<<"$out" || lt_fail "$what was not held for a human: $out"
        grep -q 'lazaret-escalate: timed out' <<<"$out" || lt_fail "$what: no timeout line: $out"
        lt_log "ok: $what went to a human (timed out without a terminal)"
}
near_miss "an extra argument" /usr/bin/touch "$H/auto" "$H/extra"
[[ ! -e $H/extra ]] || lt_fail "the near miss with an extra argument ran"
near_miss "a relative program" touch "$H/relative"
[[ ! -e $H/relative ]] || lt_fail "the near miss with a relative program ran"
near_miss "a shell metacharacter" /bin/echo hello "'a;b'"
near_miss "a backslash" /bin/echo hello "'a\\b'"

# --- forged, tampered and replayed requests: refused, nothing runs
mark
out=$(in_sandbox "LAZARET_SESSION_KEY=$(printf '22%.0s' $(seq 32)) lazaret-escalate --timeout 2 -- /usr/bin/touch $H/auto; echo rc=\$?" 2>&1)
grep -q 'rc=124' <<<"$out" || lt_fail "a request signed with another key was answered: $out"
since_mark | grep -q "refused: its signature is not the session's" ||
        lt_fail "the forged request was not logged as refused"

# A request written into a mailbox of its own (a regular file as the
# doorbell), then copied into the real one: once accepted, again refused
# as a replay; with one byte changed, refused for its signature.
rm -f "$H/auto"
mark
out=$(in_sandbox "
set -e
mkdir -p /tmp/mb/requests /tmp/mb/results /tmp/mb/trust
: > /tmp/mb/results/\$LAZARET_SESSION_ID.bell
cp /run/lazaret/mailbox/trust/\$LAZARET_SESSION_ID.cred /tmp/mb/trust/
LAZARET_MAILBOX=/tmp/mb timeout 1 lazaret-escalate --timeout 1 -- /usr/bin/touch $H/auto 2>/dev/null || true
req=\$(ls /tmp/mb/requests | grep -v cancel | grep -v '^\\.')
R=/run/lazaret/mailbox/requests
cp /tmp/mb/requests/\$req \$R/.a && mv \$R/.a \$R/\$req
sleep 1
echo first
cp /tmp/mb/requests/\$req \$R/.b && mv \$R/.b \$R/\$req
sleep 1
echo second
") || lt_fail "the replay script failed: $out"
[[ -e $H/auto ]] || lt_fail "the copied request was not accepted the first time"
since_mark | grep -q 'refused: replayed' || lt_fail "the replayed request was not refused as a replay"
rm -f "$H/auto"
mark
out=$(in_sandbox "
set -e
mkdir -p /tmp/mb/requests /tmp/mb/results /tmp/mb/trust
: > /tmp/mb/results/\$LAZARET_SESSION_ID.bell
cp /run/lazaret/mailbox/trust/\$LAZARET_SESSION_ID.cred /tmp/mb/trust/
LAZARET_MAILBOX=/tmp/mb timeout 1 lazaret-escalate --timeout 1 -- /usr/bin/touch $H/auto 2>/dev/null || true
req=\$(ls /tmp/mb/requests | grep -v cancel | grep -v '^\\.')
R=/run/lazaret/mailbox/requests
sed 's/timeout 1:1/timeout 1:2/' /tmp/mb/requests/\$req > \$R/.a && mv \$R/.a \$R/\$req
sleep 1
") || lt_fail "the tamper script failed: $out"
[[ ! -e $H/auto ]] || lt_fail "a tampered request ran"
since_mark | grep -q "refused: its signature is not the session's" ||
        lt_fail "the tampered request was not refused for its signature"

# --- the Trust Anchor (SR-9): a request whose credential is another
# session's, or another generation's, is refused with nothing run, though
# it is signed by the session's own key. A private mailbox (as above) makes
# the request with the credential swapped; it is then copied into the real one.
# forge_with CRED: the script that does so with the file CRED as the credential.
forge_with() {
        printf '%s\n' "set -e
mkdir -p /tmp/mb/requests /tmp/mb/results /tmp/mb/trust
: > /tmp/mb/results/\$LAZARET_SESSION_ID.bell
cp $1 /tmp/mb/trust/\$LAZARET_SESSION_ID.cred
LAZARET_MAILBOX=/tmp/mb timeout 1 lazaret-escalate --timeout 1 -- /usr/bin/touch $H/auto 2>/dev/null || true
req=\$(ls /tmp/mb/requests | grep -v cancel | grep -v '^\\.')
R=/run/lazaret/mailbox/requests
cp /tmp/mb/requests/\$req \$R/.a && mv \$R/.a \$R/\$req
sleep 1"
}
rm -f "$H/auto"
lt_keeper_start
mark
out=$(in_sandbox "other=\$(ls /run/lazaret/mailbox/trust | grep -v \"^\$LAZARET_SESSION_ID\" | grep '[.]cred\$' | head -n1)
[ -n \"\$other\" ] || { echo no other credential; exit 1; }
$(forge_with '/run/lazaret/mailbox/trust/$other')") || lt_fail "the other-session script failed: $out"
[[ ! -e $H/auto ]] || lt_fail "a request with another session's credential ran"
since_mark | grep -q "refused: the credential is for another role, profile, Domain, generation or session" ||
        lt_fail "the request with another session's credential was not refused for its binding"
# A credential kept from this generation, for the next one.
in_sandbox "cp /run/lazaret/mailbox/trust/\$LAZARET_SESSION_ID.cred /workspace/.esc-old-cred" ||
        lt_fail "cannot keep a credential"
kill "$LT_KEEPER"
wait "$LT_KEEPER" 2>/dev/null || true
lt_wait_inactive
mark
out=$(in_sandbox "$(forge_with /workspace/.esc-old-cred)") || lt_fail "the other-generation script failed: $out"
rm -f "$LT_WS/.esc-old-cred"
[[ ! -e $H/auto ]] || lt_fail "a request with another generation's credential ran"
since_mark | grep -q "refused: the credential was not issued by this generation's Trust Anchor" ||
        lt_fail "the request with another generation's credential was not refused"
lt_log "ok: credentials of another session and of another generation refused"

# --- decided from the host: lazaretctl escalations (a session without a terminal)
pending_id() {   # waits until one request is pending; prints its ID
        local ids
        for _ in $(seq 1 100); do
                ids=$(cd "$LT_WS" && lazaretctl escalations --json 2>/dev/null | jq -r '.[].RequestId') || true
                [[ -n $ids ]] && { echo "$ids"; return 0; }
                sleep 0.1
        done
        lt_fail "no escalation request became pending"
}
in_sandbox "lazaret-escalate --why 'from ctl' -- /usr/bin/touch $H/ctl-approved; echo rc=\$?" >"$H/ctl.out" 2>&1 &
bg=$!
id=$(pending_id)
(cd "$LT_WS" && lazaretctl escalations) | grep -q "touch $H/ctl-approved" || lt_fail "lazaretctl escalations does not show the command"
[[ ! -e $H/ctl-approved ]] || lt_fail "the pending command ran before it was approved"
for _ in $(seq 1 50); do
        grep -q "lazaretctl escalations approve|deny $id decides" "$H/ctl.out" && break
        sleep 0.1
done
grep -q "lazaretctl escalations approve|deny $id decides" "$H/ctl.out" ||
        lt_fail "the client of a session without a terminal did not say how to decide: $(cat "$H/ctl.out")"
(cd "$LT_WS" && lazaretctl escalations approve "$id") || lt_fail "lazaretctl escalations approve failed"
wait "$bg" || true
lt_assert_eq "approved with lazaretctl" "rc=0" "$(grep -v '^lazaret: ' "$H/ctl.out")"
[[ -e $H/ctl-approved ]] || lt_fail "the command approved with lazaretctl did not run"
in_sandbox "lazaret-escalate -- /usr/bin/touch $H/ctl-denied; echo rc=\$?" >"$H/ctl.out" 2>&1 &
bg=$!
id=$(pending_id)
(cd "$LT_WS" && lazaretctl escalations deny "$id") || lt_fail "lazaretctl escalations deny failed"
wait "$bg" || true
grep -q 'rc=122' "$H/ctl.out" || lt_fail "denied with lazaretctl: $(cat "$H/ctl.out")"
[[ ! -e $H/ctl-denied ]] || lt_fail "the command denied with lazaretctl ran"
if (cd "$LT_WS" && lazaretctl escalations approve "$id" 2>/dev/null); then
        lt_fail "a decided request could be decided again"
fi

# --- a desktop notification, from a test notification server on the test
# user's bus: Approve and Deny; the text escaped for the server's markup;
# an ActionInvoked from anyone but the server ignored; withdrawn when
# decided elsewhere; no Approve for a command too long to show whole.
ns=$HOME/lt-notify-server
cc -o "$ns" "$LAZARET_SOURCE_ROOT/tests/integration/notify-server.c" $(pkg-config --cflags --libs libsystemd) ||
        lt_fail "cannot build the test notification server"
nlog=$H/notify.log
rm -f "$nlog" "$H/notify.in"
mkfifo "$H/notify.in"
"$ns" "$nlog" <"$H/notify.in" &
nsp=$!
exec 7>"$H/notify.in"
notify_line() {   # N: waits for the Nth notification; prints its line
        for _ in $(seq 1 100); do
                [[ $(grep -c '^notify ' "$nlog" 2>/dev/null) -ge $1 ]] && { grep '^notify ' "$nlog" | sed -n "${1}p"; return 0; }
                sleep 0.1
        done
        lt_fail "no notification number $1: $(cat "$nlog" 2>/dev/null)"
}
for _ in $(seq 1 50); do grep -q '^ready' "$nlog" 2>/dev/null && break; sleep 0.1; done
grep -q '^ready' "$nlog" || lt_fail "the test notification server did not start"
in_sandbox "lazaret-escalate --why '<b>bold</b> & more' -- /usr/bin/touch $H/notified; echo rc=\$?" >"$H/n.out" 2>&1 &
bg=$!
id=$(pending_id)
line=$(notify_line 1)
nid=$(cut -f1 <<<"$line" | cut -d' ' -f2)
grep -qF '&lt;b&gt;bold&lt;/b&gt; &amp; more' <<<"$line" || lt_fail "the justification is not escaped for markup: $line"
grep -qF "touch $H/notified" <<<"$line" || lt_fail "the notification does not show the command: $line"
lt_assert_eq "the notification's actions" "approve,deny" "$(cut -f4 <<<"$line")"
# The same signal from another connection than the server's: ignored.
busctl --user emit /org/freedesktop/Notifications org.freedesktop.Notifications ActionInvoked us "$nid" approve ||
        lt_fail "cannot emit a forged ActionInvoked"
sleep 1
[[ ! -e $H/notified ]] || lt_fail "an ActionInvoked from another sender than the notification server approved"
(cd "$LT_WS" && lazaretctl escalations --json) | jq -e --arg id "$id" 'any(.[]; .RequestId == $id)' >/dev/null ||
        lt_fail "the request is no longer pending after a forged action"
echo "invoke $nid approve" >&7
wait "$bg" || true
lt_assert_eq "approved from the notification" "rc=0" "$(grep -v '^lazaret: ' "$H/n.out")"
[[ -e $H/notified ]] || lt_fail "the command approved from the notification did not run"
# Decided elsewhere: the notification is withdrawn.
in_sandbox "lazaret-escalate -- /usr/bin/touch $H/notified-2; echo rc=\$?" >"$H/n.out" 2>&1 &
bg=$!
id=$(pending_id)
nid=$(notify_line 2 | cut -f1 | cut -d' ' -f2)
(cd "$LT_WS" && lazaretctl escalations deny "$id") || lt_fail "lazaretctl escalations deny failed"
wait "$bg" || true
for _ in $(seq 1 50); do grep -q "^close $nid\$" "$nlog" && break; sleep 0.1; done
grep -q "^close $nid\$" "$nlog" || lt_fail "the notification of a request denied with lazaretctl was not withdrawn: $(cat "$nlog")"
# A command too long to show whole: Deny only.
long=$(printf 'x%.0s' $(seq 1 450))
in_sandbox "lazaret-escalate -- /usr/bin/touch $H/$long; echo rc=\$?" >"$H/n.out" 2>&1 &
bg=$!
id=$(pending_id)
line=$(notify_line 3)
nid=$(cut -f1 <<<"$line" | cut -d' ' -f2)
lt_assert_eq "the actions for a command too long to show" "deny" "$(cut -f4 <<<"$line")"
echo "invoke $nid approve" >&7
sleep 1
[[ ! -e $H/$long ]] || lt_fail "an Approve the notification did not offer was taken"
echo "invoke $nid deny" >&7
wait "$bg" || true
grep -q 'rc=122' "$H/n.out" || lt_fail "denied from the notification: $(cat "$H/n.out")"
exec 7>&-
wait "$nsp" 2>/dev/null || true
lt_log "ok: desktop notification: approve, forged action ignored, withdrawn, no Approve for a long command"

# --- a session that ends while its host command runs: the command, in a
# transient scope of its own, is killed and its scope stopped (OR-3),
# while another session keeps the Domain (and its mailbox) alive
lt_keeper_start
(cd "$LT_WS" && exec lazaretctl launch -- /bin/sh -c "lazaret-escalate -- /usr/bin/sleep 77") >/dev/null 2>&1 &
bg=$!
for _ in $(seq 1 100); do
        pgrep -u "$(id -u)" -fx '/usr/bin/sleep 77' >/dev/null && break
        sleep 0.1
done
pgrep -u "$(id -u)" -fx '/usr/bin/sleep 77' >/dev/null || lt_fail "the auto-approved host command never started"
# It runs in a transient scope of its own, which shows it and holds it: the
# scope of the Domain's spare, made before the request came, which the
# command became by execve.
pid=$(pgrep -u "$(id -u)" -fx '/usr/bin/sleep 77' | head -n1)
scope=$(sed -n "s|^.*/\(lazaret-$LT_DOMAIN-esc-[0-9a-f]*[.]scope\)\$|\1|p" "/proc/$pid/cgroup" | head -n1)
[[ -n $scope ]] || lt_fail "the host command is not in a scope of its own: $(cat "/proc/$pid/cgroup")"
lt_assert_eq "the host command's scope" active "$(systemctl --user show -P ActiveState "$scope")"
pids=$(lt_unit_pids "$scope")
lt_assert_eq "what the host command's scope holds" "$pid" "$pids"
# A new spare waits for the next request, in a scope of its own, and runs nothing.
spares() { pgrep -u "$(id -u)" -x lazaret-spare || true; }
for _ in $(seq 1 50); do
        [[ -n $(spares) ]] && grep -q -- "-esc-[0-9a-f]*[.]scope\$" "/proc/$(spares | head -n1)/cgroup" && break
        sleep 0.1
done
lt_assert_eq "spares waiting while the command runs" 1 "$(spares | wc -l)"
spare=$(spares)
spare_scope=$(sed -n "s|^.*/\(lazaret-$LT_DOMAIN-esc-[0-9a-f]*[.]scope\)\$|\1|p" "/proc/$spare/cgroup" | head -n1)
[[ -n $spare_scope && $spare_scope != "$scope" ]] ||
        lt_fail "the spare is not in a scope of its own: $(cat "/proc/$spare/cgroup")"
pids=$(lt_unit_pids "$spare_scope")
lt_assert_eq "what the spare's scope holds" "$spare" "$pids"
[[ $(readlink "/proc/$spare/exe") == */lazaret-spare ]] || lt_fail "the spare runs something: $(readlink "/proc/$spare/exe")"
lt_assert_eq "the spare's command line" "lazaret-spare $LT_DOMAIN" "$(tr '\0' ' ' <"/proc/$spare/cmdline" | sed 's|^.*/||; s/ $//')"
[[ -z $(pgrep -P "$spare") ]] || lt_fail "the spare started a process: $(pgrep -a -P "$spare")"
# It holds nothing of the coordinator's: its socket and /dev/null, no blocked
# signal, the command environment.
lt_assert_eq "the spare's fds" "0 1 2 3" "$(ls "/proc/$spare/fd" | sort -n | tr '\n' ' ' | sed 's/ $//')"
[[ $(readlink "/proc/$spare/fd/3") == socket:* && $(readlink "/proc/$spare/fd/1") == /dev/null ]] ||
        lt_fail "the spare's fds are not its socket and /dev/null: $(ls -l "/proc/$spare/fd")"
lt_assert_eq "the spare's blocked signals" 0000000000000000 "$(awk '/^SigBlk:/ { print $2 }' "/proc/$spare/status")"
lt_assert_eq "the spare's environment" "HOME LOGNAME PATH USER XDG_RUNTIME_DIR" \
        "$(tr '\0' '\n' <"/proc/$spare/environ" | cut -d= -f1 | grep -vx 'LANG\|LC_ALL' | sort | tr '\n' ' ' | sed 's/ $//')"
kill -KILL "$bg"
wait "$bg" 2>/dev/null || true
for _ in $(seq 1 100); do
        pgrep -u "$(id -u)" -fx '/usr/bin/sleep 77' >/dev/null || break
        sleep 0.1
done
if pgrep -u "$(id -u)" -fx '/usr/bin/sleep 77' >/dev/null; then
        lt_fail "the host command outlived its session"
fi
for _ in $(seq 1 50); do
        [[ $(systemctl --user show -P ActiveState "$scope") != active ]] && break
        sleep 0.1
done
[[ $(systemctl --user show -P ActiveState "$scope") != active ]] || lt_fail "the host command's scope outlived its session"
lt_log "ok: the host command was killed with its session, and its scope stopped"
lt_assert_eq "the spare, while another session is open" "$spare" "$(spares)"
# A spare that dies is replaced by the next request, which still runs in a scope of its own.
kill -KILL "$spare"
out=$(in_sandbox "lazaret-escalate -- /usr/bin/false; echo rc=\$?")
lt_assert_eq "a request after the spare died" "rc=1" "$out"
for _ in $(seq 1 50); do
        [[ -n $(spares) ]] && break
        sleep 0.1
done
[[ -n $(spares) && $(spares) != "$spare" ]] || lt_fail "no new spare after the old one died"
spare=$(spares)
spare_scope=$(sed -n "s|^.*/\(lazaret-$LT_DOMAIN-esc-[0-9a-f]*[.]scope\)\$|\1|p" "/proc/$spare/cgroup" | head -n1)
lt_assert_eq "Domain state after the session ended" running "$(cd "$LT_WS" && lazaretctl status --json | jq -r .State)"
kill "$LT_KEEPER"
wait "$LT_KEEPER" 2>/dev/null || true
lt_wait_inactive
# No session, no spare: it went, and its scope with it.
for _ in $(seq 1 50); do
        [[ -z $(spares) && $(systemctl --user show -P ActiveState "$spare_scope") != active ]] && break
        sleep 0.1
done
lt_assert_eq "spares without a session" "" "$(spares)"
[[ $(systemctl --user show -P ActiveState "$spare_scope") != active ]] || lt_fail "the spare's scope outlived the Domain"
lt_log "ok: one spare waited in a scope of its own, running nothing, and went with the last session"

# --- the prompt on the asking session's terminal
# fresh: clears the first terminal, and waits until it is clear, so that the
# clear's output is not still on its way when the next request's prompt goes up
# (it would be held and shown after the prompt, erasing it).
fresh() {
        $T send-keys -t t:0 clear Enter
        for _ in $(seq 1 50); do
                lt_screen | grep -q 'RC-' || return 0
                sleep 0.1
        done
        lt_fail "the terminal was not cleared"
}
approve() {
        local k
        k=$(lt_approve_key)
        [[ $k =~ ^[a-z]$ ]] || { lt_screen >&2; lt_fail "no approve key on the prompt"; }
        lt_press "$k"
}
$T new-session -d -s t -x 160 -y 40 "cd '$LT_WS' && lazaretctl launch; echo LAUNCH-EXIT=\$?; sleep 60"
lt_wait_screen ':/workspace#'
# The test image's /etc/profile sets PATH=/bin; images with the usual PATH find it by name.
$T send-keys -t t:0 "/usr/local/bin/lazaret-escalate --why 'needs the host' -- /usr/bin/touch $H/approved; echo RC-\$?" Enter
lt_wait_screen 'to run it'
lt_wait_screen "Why:       'needs the host'"
lt_wait_screen "Command:   /usr/bin/touch $H/approved"
[[ ! -e $H/approved ]] || lt_fail "the command ran before it was approved"
# 'a' approves nothing unless it was drawn.
[[ $(lt_approve_key) == a ]] || { lt_press a; sleep 0.5; [[ ! -e $H/approved ]] || lt_fail "'a' approved though the key drawn was $(lt_approve_key)"; }
approve
lt_wait_screen 'RC-0'
[[ -e $H/approved ]] || lt_fail "the approved command did not run on the host"

fresh
$T send-keys -t t:0 "/usr/local/bin/lazaret-escalate -- /usr/bin/touch $H/denied; echo RC-\$?" Enter
lt_wait_screen "Command:   /usr/bin/touch $H/denied"
lt_press d
lt_wait_screen 'RC-122'
lt_wait_screen 'lazaret-escalate: denied'
[[ ! -e $H/denied ]] || lt_fail "the denied command ran"

# Edit: the developer's argv runs, shown again and confirmed first.
fresh
$T send-keys -t t:0 "/usr/local/bin/lazaret-escalate -- /usr/bin/touch $H/asked; echo RC-\$?" Enter
lt_wait_screen "Command:   /usr/bin/touch $H/asked"
lt_press e
lt_wait_screen 'New command'
$T send-keys -t t:0 -l "/usr/bin/touch '$H/edited'"
$T send-keys -t t:0 Enter
lt_wait_screen '(as edited)'
approve
lt_wait_screen 'RC-0'
[[ -e $H/edited && ! -e $H/asked ]] || lt_fail "the edited command did not replace the request"

# Keys typed as escape sequences (a terminal's reply) never count: only the real 'd' decides.
fresh
$T send-keys -t t:0 "/usr/local/bin/lazaret-escalate -- /usr/bin/touch $H/escseq; echo RC-\$?" Enter
lt_wait_screen "Command:   /usr/bin/touch $H/escseq"
$T send-keys -t t:0 -l $'\e[?1;2c\e]11;rgb:a/a/a\a'
sleep 0.5
[[ ! -e $H/escseq ]] || lt_fail "an escape sequence approved the request"
lt_press d
lt_wait_screen 'RC-122'

# What the sandbox prints while the prompt is up is held, and shown after it.
fresh
$T send-keys -t t:0 "(sleep 1; echo HELD-OUT''PUT) & /usr/local/bin/lazaret-escalate -- /usr/bin/touch $H/held; echo RC-\$?" Enter
lt_wait_screen "Command:   /usr/bin/touch $H/held"
sleep 2
if lt_screen | grep -q 'HELD-OUTPUT'; then
        lt_fail "the sandbox's output reached the terminal while the prompt was up"
fi
lt_press d
lt_wait_screen 'RC-122'
lt_wait_screen 'HELD-OUTPUT'

# A decision from lazaretctl withdraws the prompt: the first decision wins.
fresh
$T send-keys -t t:0 "/usr/local/bin/lazaret-escalate -- /usr/bin/touch $H/ctl-prompted; echo RC-\$?" Enter
lt_wait_screen "Command:   /usr/bin/touch $H/ctl-prompted"
(cd "$LT_WS" && lazaretctl escalations approve "$(pending_id)") || lt_fail "approving a prompted request failed"
lt_wait_screen 'was approved from bus'
lt_wait_screen 'RC-0'
[[ -e $H/ctl-prompted ]] || lt_fail "the prompted request approved with lazaretctl did not run"

# The deadline withdraws the prompt: timed out (124), nothing runs.
fresh
$T send-keys -t t:0 "/usr/local/bin/lazaret-escalate --timeout 2 -- /usr/bin/touch $H/late; echo RC-\$?" Enter
lt_wait_screen "Command:   /usr/bin/touch $H/late"
lt_wait_screen 'RC-124'
lt_wait_screen 'no decision in time'
[[ ! -e $H/late ]] || lt_fail "a request that timed out ran"

# A second session's terminal is never touched while the first is prompted.
$T new-window -t t -n two "cd '$LT_WS' && lazaretctl launch; sleep 60"
for _ in $(seq 1 100); do
        $T capture-pane -t t:two -p | grep -qF ':/workspace#' && break
        sleep 0.1
done
fresh
$T send-keys -t t:0 "/usr/local/bin/lazaret-escalate -- /usr/bin/touch $H/first; echo RC-\$?" Enter
lt_wait_screen "Command:   /usr/bin/touch $H/first"
$T send-keys -t t:two "echo SECOND-AL''IVE" Enter
sleep 1
$T capture-pane -t t:two -p | grep -q 'SECOND-ALIVE' || lt_fail "the second session's terminal did not work while the first was prompted"
if $T capture-pane -t t:two -p | grep -q 'to run it'; then
        lt_fail "the prompt appeared on the second session's terminal"
fi
lt_press d
lt_wait_screen 'RC-122'
$T send-keys -t t:two 'exit 0' Enter
$T kill-window -t t:two

# Abort: the request is denied and the session ends.
fresh
$T send-keys -t t:0 "/usr/local/bin/lazaret-escalate -- /usr/bin/touch $H/aborted; echo RC-\$?" Enter
lt_wait_screen "Command:   /usr/bin/touch $H/aborted"
lt_press q
lt_wait_screen 'LAUNCH-EXIT='
[[ ! -e $H/aborted ]] || lt_fail "the aborted request ran"

# --- a timeout from the host's deadline, and the audit trail
# The audit trail is the Domain Store's (lazaretctl escalations history), which the sandbox cannot reach.
audit=$(cd "$LT_WS" && lazaretctl escalations history --json) || lt_fail "lazaretctl escalations history failed"
audit=$(jq --argjson t0 "$T0" '[.[] | select(.TimeUSec >= $t0)]' <<<"$audit")   # this run's only
for ev in requested approved denied refused result session-ended; do
        jq -e --arg ev "$ev" 'any(.[]; .Event == $ev)' <<<"$audit" >/dev/null || lt_fail "the audit trail has no '$ev' event"
done
jq -e 'any(.[]; .By == "rule")' <<<"$audit" >/dev/null || lt_fail "the audit trail does not say a rule approved"
jq -e 'any(.[]; .By == "terminal")' <<<"$audit" >/dev/null || lt_fail "the audit trail does not say the terminal decided"
jq -e 'any(.[]; .By == "notification" and .Event == "approved")' <<<"$audit" >/dev/null ||
        lt_fail "the audit trail does not say a notification approved"
jq -e 'any(.[]; .Outcome == "timeout")' <<<"$audit" >/dev/null || lt_fail "the audit trail has no timeout"
jq -e --arg f "$H/ctl-approved" 'any(.[]; .Event == "result" and .Argv[1] == $f and .Outcome == "completed")' \
        <<<"$audit" >/dev/null || lt_fail "the audit trail has no result of the request approved with lazaretctl"
history=$(cd "$LT_WS" && lazaretctl escalations history) || lt_fail "lazaretctl escalations history failed"
grep -q "result .*touch $H/ctl-approved  -> completed" <<<"$history" ||
        lt_fail "lazaretctl escalations history does not show the command: $history"
[[ -z $(find "$HOME/.local/share/lazaret" -name 'escalations.jsonl*') ]] || lt_fail "an audit file beside the store"
lt_log "audit trail: $(jq length <<<"$audit") events in the Domain Store"

# --- the coordinator killed (SIGKILL, no teardown) while an approved command
# with children runs on the host: the command's scope is bound to the
# coordinator's service, so the whole process tree goes with it (OR-3).
lt_keeper_start
in_sandbox "lazaret-escalate --timeout 60 -- /bin/sh -c 'sleep 311 & sleep 312 & wait'" >/dev/null 2>&1 &
bg=$!
id=$(pending_id)
(cd "$LT_WS" && lazaretctl escalations approve "$id") >/dev/null || lt_fail "approving the command with children failed"
for _ in $(seq 1 100); do
        pgrep -u "$(id -u)" -fx 'sleep 311' >/dev/null && pgrep -u "$(id -u)" -fx 'sleep 312' >/dev/null && break
        sleep 0.1
done
pgrep -u "$(id -u)" -fx 'sleep 312' >/dev/null || lt_fail "the approved command's children never started"
main=$(systemctl --user show -P MainPID "lazaret@$LT_DOMAIN.service")
[[ $main -gt 0 ]] || lt_fail "no coordinator to kill"
kill -KILL "$main"
for _ in $(seq 1 100); do
        pgrep -u "$(id -u)" -f '^sleep 31[12]$' >/dev/null || break
        sleep 0.1
done
if pgrep -u "$(id -u)" -fa '^sleep 31[12]$'; then
        lt_fail "processes of the approved command outlived the killed coordinator"
fi
wait "$bg" 2>/dev/null || true
lt_log "ok: killing the coordinator ended the approved command's whole process tree"
