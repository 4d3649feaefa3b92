#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-escalation-prompt: the approval prompt cannot be forged, hidden or
# answered by the sandbox (spec 5.6, "The prompt"). On a real terminal (a
# tmux 3.3 pane), the sandbox leaves the terminal in a hostile state and
# then asks for a host command; for each state the real command must be
# visible when the prompt waits, checked in the pane's cells (capture-pane
# -e: no conceal, no reverse, default colours, the text in ASCII as sent),
# and neither keys typed before the prompt, a stream of keys while it
# appears, a mouse click (X10 and 8-bit C1 encodings) nor a pasted text
# may decide. Then a request whose argument is not UTF-8 does not hide the
# other requests from `lazaretctl escalations` (human and --json), and the
# audit trail keeps its bytes.
# shellcheck source=../harness/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"

lt_install
lt_domain_setup
command -v tmux >/dev/null || lt_fail "tmux is not installed (.ci/install-deps installs it)"

H=$HOME/esc-prompt
rm -rf "$H"
mkdir -p "$H"
T0=$(date +%s%6N)
printf '{ "default_profile": "test", "escalation": { "timeout_s": 60 },
  "profiles": { "test": { "image": "oci:%s" } } }\n' "$LT_IMAGE" >"$LT_CONFIG"

T="tmux -L lt-$$"
cleanup_tmux() { $T kill-server 2>/dev/null || true; }
trap 'rc=$?; cleanup_tmux; lt_domain_cleanup "$rc"' EXIT

ESC=/usr/local/bin/lazaret-escalate

$T new-session -d -s t -x 120 -y 30 "cd '$LT_WS' && lazaretctl launch; echo LAUNCH-EXIT=\$?; sleep 60"
lt_wait_screen ':/workspace#'

# visible NAME: the prompt for $H/NAME waits and can be read whole: its
# title, its Why and its Command lines are on the screen, the command's
# line in plain cells (no conceal, reverse or colour in capture-pane -e),
# and the pane's default colours are the terminal's own again.
visible() {
        local name=$1 cmd line cells
        cmd="Command:   /usr/bin/touch $H/$name   <- press "
        lt_wait_screen "$cmd"
        local s
        s=$(lt_screen)
        grep -qF '[lazaret] The sandbox asks to run a command on the host' <<<"$s" ||
                { echo "$s" >&2; lt_fail "$name: the prompt's title is not visible"; }
        grep -qF "Why:       (none given)" <<<"$s" || { echo "$s" >&2; lt_fail "$name: the Why line is not visible"; }
        line=$(grep -F "$cmd" <<<"$s")
        [[ $line == "  $cmd"?" to run it" ]] || lt_fail "$name: the command's line reads '$line'"
        # The last two rows are the command's line and the keys' line.
        [[ $(tail -n2 <<<"$s" | head -n1) == "  $cmd"* ]] || { echo "$s" >&2; lt_fail "$name: the command is not on the second-last row"; }
        # With -e, tmux writes an SGR sequence where a cell's attributes or
        # colours differ from the default: the command's line has none.
        cells=$($T capture-pane -t t:0 -p -e | grep -F "/usr/bin/touch $H/$name")
        [[ $cells != *$'\e'* ]] || lt_fail "$name: the command's cells carry attributes: $(cat -v <<<"$cells")"
        lt_assert_eq "$name: the pane's colours" "default default" "$($T display -p -t t:0 '#{pane_fg} #{pane_bg}')"
}

# deny_and_check NAME: nothing ran; 'd' denies (122).
deny_and_check() {
        sleep 0.5
        [[ ! -e $H/$1 ]] || lt_fail "$1: the command ran without the human's approve key"
        lt_press d
        lt_wait_screen "RC-$1-122"
        [[ ! -e $H/$1 ]] || lt_fail "$1: a denied command ran"
        $T send-keys -t t:0 "printf '\\033c'; clear" Enter
        sleep 0.5
}

# ask NAME SETUP: the sandbox prints SETUP (printf's escapes), waits until
# it is on the screen, then asks to touch $H/NAME.
ask() {
        $T send-keys -t t:0 "printf '$2'; sleep 1; $ESC -- /usr/bin/touch $H/$1; echo RC-$1-\$?" Enter
}

# 1. The issue's reproduction: a forged header, a two-row scroll region with the cursor in it.
ask scroll '\033[2J\033[1;1H[lazaret] The sandbox asks to run a command on the host\r\n  Command:   /usr/bin/ls -la\r\n\033[8;9r\033[9;1H'
visible scroll
k=$(lt_approve_key)
# Approving what the prompt really shows works: the human saw the real command.
lt_press "$k"
lt_wait_screen "RC-scroll-0"
[[ -e $H/scroll ]] || lt_fail "the approved command did not run"
$T send-keys -t t:0 "clear" Enter
sleep 0.5
lt_log "ok: a scroll region: the real prompt is whole at the bottom"

# 2. Origin mode inside a region, left/right margins where the terminal has them.
ask origin '\033[5;10r\033[?6h\033[?69h\033[10;40s\033[2;2H'
visible origin
deny_and_check origin
# 3. The alternate screen.
ask altscreen '\033[?1049h\033[2J'
visible altscreen
deny_and_check altscreen
$T send-keys -t t:0 "printf '\\033[?1049l'" Enter
# 4. Colours: foreground = background through OSC 10/11, and concealed text.
ask colours '\033]10;#000000\033\\\033]11;#000000\033\\\033[8m\033[30;40m'
visible colours
deny_and_check colours
# 5. The DEC line-drawing set in G0 and G1, G1 shifted in.
ask charset '\033(0\033)0\016'
visible charset
deny_and_check charset
# 6. Insert mode, reverse video.
ask insert '\033[4h\033[7m\033[?5h'
visible insert
deny_and_check insert
lt_log "ok: origin mode, alternate screen, colours, conceal, DEC graphics, insert mode: the command is visible"

# 7. A mouse click in legacy X10 encoding after the sandbox turned tracking and
# 8-bit controls (S8C1T) on:
# ESC [ M, the button, then the column byte, which is the approve key.
ask mouse '\033 G\033[?1000h'
visible mouse
k=$(lt_approve_key)
sleep 0.6
$T send-keys -t t:0 -H 1b 5b 4d 20 "$(printf '%x' "'$k")" 21
# The same click with an 8-bit CSI (a terminal after S8C1T), and a UTF-8 (1005) one.
$T send-keys -t t:0 -H 9b 4d 20 "$(printf '%x' "'$k")" 21
$T send-keys -t t:0 -H 1b 5b 4d 20 c3 a1 "$(printf '%x' "'$k")"
# A paste that holds the key.
$T send-keys -t t:0 -H 1b 5b 32 30 30 7e "$(printf '%x' "'$k")" 1b 5b 32 30 31 7e
deny_and_check mouse
lt_log "ok: mouse reports (X10, 8-bit C1, UTF-8) and a paste did not decide"

# 8. Keys typed just before the prompt: every letter, a second before it appears.
$T send-keys -t t:0 "sleep 2; $ESC -- /usr/bin/touch $H/pretyped; echo RC-pretyped-\$?" Enter
sleep 1
$T send-keys -t t:0 -l abcfghijklmnoprstuvwxyz
visible pretyped
deny_and_check pretyped
# 9. Keys typed all along, while the prompt appears and after: none counts
# until the typing stops for the quiet period.
$T send-keys -t t:0 "$ESC -- /usr/bin/touch $H/stream; echo RC-stream-\$?" Enter
rm -f "$H/typist.stop"
( while [[ ! -e $H/typist.stop ]]; do $T send-keys -t t:0 x 2>/dev/null; sleep 0.05; done ) &
typist=$!
visible stream
k=$(lt_approve_key)
$T send-keys -t t:0 "$k"
sleep 0.3
touch "$H/typist.stop"
wait "$typist"
sleep 0.3
[[ ! -e $H/stream ]] || lt_fail "a key typed amid a stream of keys approved"
deny_and_check stream
lt_log "ok: keys typed before the prompt, or amid typing, did not decide"

# 10. Text from the sandbox is data: a waiting request with a byte that is
# not UTF-8 does not hide another session's request from the listing.
lt_launch -- /bin/sh -c "$ESC --timeout 30 -- /usr/bin/touch \"\$(printf '$H/odd-\\233-\\377')\"" >/dev/null 2>&1 &
odd=$!
lt_launch -- /bin/sh -c "$ESC --timeout 30 -- /usr/bin/touch $H/plain" >/dev/null 2>&1 &
plain=$!
for _ in $(seq 1 100); do
        n=$(cd "$LT_WS" && lazaretctl escalations --json 2>/dev/null | jq length) || n=0
        [[ $n -ge 2 ]] && break
        sleep 0.1
done
json=$(cd "$LT_WS" && lazaretctl escalations --json) || lt_fail "lazaretctl escalations --json failed with a non-UTF-8 request"
lt_assert_eq "requests listed" 2 "$(jq length <<<"$json")"
jq -e --arg p "$H/plain" 'any(.[]; .Argv[1] == $p)' <<<"$json" >/dev/null || lt_fail "the plain request is not listed: $json"
# The odd argument's bytes, as an array of byte values, and its display form.
want=$(printf '%s' "$H/odd-" | od -An -tu1 | tr -s ' \n' '\n' | grep . | paste -sd, -)
jq -e --argjson b "[$want,155,45,255]" 'any(.[]; .Argv[1] == $b)' <<<"$json" >/dev/null ||
        lt_fail "the odd argument's bytes are not in the JSON: $json"
jq -e 'any(.[]; .ArgvDisplay | test("odd-\\\\x9b-\\\\xff"))' <<<"$json" >/dev/null ||
        lt_fail "the odd argument's display form is not escaped: $json"
human=$(cd "$LT_WS" && lazaretctl escalations) || lt_fail "lazaretctl escalations failed with a non-UTF-8 request"
grep -qF 'odd-\x9b-\xff' <<<"$human" || lt_fail "the odd request is not shown escaped: $human"
grep -qF "$H/plain" <<<"$human" || lt_fail "the plain request is not shown: $human"
# Version 1 of the listing answers too, with the bytes escaped.
v1=$(busctl --user --json=short call "org.lazaret.Domain.d$LT_DOMAIN" /org/lazaret/Domain org.lazaret.Domain1 ListEscalations) ||
        lt_fail "ListEscalations failed with a non-UTF-8 request"
jq -e '.data[0] | length == 2' <<<"$v1" >/dev/null || lt_fail "ListEscalations does not list both: $v1"
lt_assert_eq "InterfaceVersion" "u 4" "$(busctl --user get-property "org.lazaret.Domain.d$LT_DOMAIN" /org/lazaret/Domain org.lazaret.Domain1 InterfaceVersion)"
for id in $(jq -r '.[].RequestId' <<<"$json"); do
        (cd "$LT_WS" && lazaretctl escalations deny "$id") >/dev/null || lt_fail "cannot deny $id"
done
wait "$odd" "$plain" 2>/dev/null || true
audit=$(cd "$LT_WS" && lazaretctl escalations history --json) || lt_fail "lazaretctl escalations history --json failed"
jq -e --argjson t0 "$T0" --argjson b "[$want,155,45,255]" 'any(.[]; .TimeUSec >= $t0 and .Event == "denied" and .Argv[1] == $b)' \
        <<<"$audit" >/dev/null || lt_fail "the audit trail lost the odd argument: $(jq -c --argjson t0 "$T0" '[.[] | select(.TimeUSec >= $t0)]' <<<"$audit")"
lt_log "ok: a non-UTF-8 request is listed with the others (human, JSON, version 1) and audited with its bytes"

$T send-keys -t t:0 'exit 0' Enter
lt_wait_screen 'LAUNCH-EXIT=0'
