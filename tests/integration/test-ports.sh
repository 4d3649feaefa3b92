#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Published ports (issue 35, spec section 4.5), in a real sandbox under the
# real user manager, inside the harness's network namespace (no way out: the
# only traffic is to 127.0.0.1 of that namespace and, through slirp4netns'
# forwards, to the sandbox's own address):
#   - publish_ports in the profile is checked by `config check` (below 1024,
#     not a port, twice) and applied at the Domain's start;
#   - a server inside on 0.0.0.0 is fetched from the host's 127.0.0.1, through
#     the profile's forward and one `lazaretctl ports publish` added;
#   - `status` and `ports list` (human and --json) show the forwards;
#   - refused with a clear error, changing nothing: a host port below 1024,
#     one in use on 127.0.0.1, one published already, an unpublish of a port
#     not published, bad PublishPort calls on the bus;
#   - a server inside bound to 127.0.0.1 is not reached (the documented limit);
#   - unpublish ends a forward; stop ends them all;
#   - a profile port in use on the host fails the start, with the reason.
set -Eeuo pipefail
. "$(dirname -- "$0")/../harness/lib.sh"

lt_install
lt_domain_setup
command -v curl >/dev/null || lt_fail "curl is needed on the host to fetch the published ports"

name=org.lazaret.Domain.d$LT_DOMAIN
path=/org/lazaret/Domain
iface=org.lazaret.Domain1
export DBUS_SESSION_BUS_ADDRESS=${DBUS_SESSION_BUS_ADDRESS:-unix:path=$XDG_RUNTIME_DIR/bus}

config() {      # config PUBLISH_PORTS_JSON
        cat >"$LT_CONFIG" <<JSON
{ "default_profile": "test",
  "profiles": { "test": { "image": "oci:$LT_IMAGE", "publish_ports": $1 } } }
JSON
}
ctl() { (cd "$LT_WS" && exec lazaretctl "$@"); }
# fetch PORT: the page at 127.0.0.1:PORT; curl's exit status on failure.
fetch() { curl --noproxy '*' -sS --max-time 5 "http://127.0.0.1:$1/index.html"; }
# refused WHAT EXPECTED-TEXT CMD...: CMD fails and says EXPECTED-TEXT.
refused() {
        local what=$1 text=$2 out rc
        shift 2
        set +e
        out=$("$@" 2>&1)
        rc=$?
        set -e
        ((rc != 0)) || lt_fail "$what was accepted: $out"
        [[ $out == *"$text"* ]] || lt_fail "$what: expected the error to say '$text', got: $out"
        lt_log "ok: $what refused: $out"
}

lt_cleanup_hook() {
        local p
        for p in ${servers:-} ${taker:-}; do kill "$p" 2>/dev/null || true; done
}

# --- the profile key ---------------------------------------------------------------
config '["80"]'
refused "publish_ports [\"80\"]" 'profiles.test.publish_ports[0]: host port 80 is below 1024' ctl config check
config '["18081:http"]'
refused "publish_ports [\"18081:http\"]" 'is not PORT or HOST_PORT:PORT' ctl config check
config '["18081:0"]'
refused "publish_ports [\"18081:0\"]" 'is not PORT or HOST_PORT:PORT' ctl config check
config '["18081:8081", "18081"]'
refused "publish_ports with a host port twice" 'host port 18081 is published twice' ctl config check
config '"18081"'
refused "publish_ports as a string" 'profiles.test.publish_ports' ctl config check
config '["18081:8081"]'
out=$(ctl config check 2>&1) || lt_fail "a valid publish_ports was refused: $out"
grep -q 'Published ports: *127.0.0.1:18081 -> sandbox port 8081' <<<"$out" || lt_fail "config check does not show the port: $out"

# --- published at the start; fetched from the host --------------------------------
mkdir -p "$LT_WS/www"
echo "hello from the sandbox" >"$LT_WS/www/index.html"
lt_keeper_start "$HOME/ports-keeper.out"
t0=$(date +%s%N)
servers=
for listen in 8081 8080 127.0.0.1:8082; do
        (cd "$LT_WS" && exec lazaretctl launch -- /bin/httpd -f -p "$listen" -h /workspace/www) >/dev/null 2>&1 &
        servers+=" $!"
done
page=
for _ in $(seq 1 50); do
        page=$(fetch 18081 2>/dev/null) && break
        sleep 0.2
done
lt_assert_eq "the page of sandbox port 8081 (profile's forward) at 127.0.0.1:18081" "hello from the sandbox" "$page"
lt_log "ok: first fetch $((($(date +%s%N) - t0) / 1000000)) ms after the servers were started"

json=$(ctl status --json)
lt_assert_eq "status --json PublishedPorts" '[{"host_address":"127.0.0.1","host_port":18081,"port":8081}]' \
        "$(jq -c .PublishedPorts <<<"$json")"
grep -q '127.0.0.1:18081 -> sandbox port 8081' <<<"$(ctl status)" || lt_fail "status does not show the published port: $(ctl status)"

# --- lazaretctl ports publish ----------------------------------------------------------
lt_assert_eq "ports publish 18080:8080 --json" '{"host_address":"127.0.0.1","host_port":18080,"port":8080,"published":true}' \
        "$(ctl ports publish 18080:8080 --json | jq -c .)"
lt_assert_eq "the page of sandbox port 8080 at 127.0.0.1:18080" "hello from the sandbox" "$(fetch 18080)"
lt_assert_eq "ports list --json" \
        '[{"host_address":"127.0.0.1","host_port":18081,"port":8081},{"host_address":"127.0.0.1","host_port":18080,"port":8080}]' \
        "$(ctl ports list --json | jq -c .)"
lt_assert_eq "ports list" "127.0.0.1:18081 -> sandbox port 8081
127.0.0.1:18080 -> sandbox port 8080" "$(ctl ports list)"

# --- refusals, which change nothing ----------------------------------------------------
before=$(ctl ports list --json | jq -c .)
refused "ports publish 80" "host port 80 is below 1024" ctl ports publish 80
refused "ports publish 443:8080" "host port 443 is below 1024" ctl ports publish 443:8080
refused "ports publish 18080:8081 (published already)" "host port 18080 is published already (to sandbox port 8080)" \
        ctl ports publish 18080:8081
refused "ports publish 70000" "is not PORT or HOST_PORT:PORT" ctl ports publish 70000
refused "ports unpublish 18099 (not published)" "host port 18099 is not published" ctl ports unpublish 18099
# A host port someone else holds on 127.0.0.1 (a server of the test's own, in its namespace).
/bin/busybox httpd -f -p 127.0.0.1:18090 -h "$LT_WS/www" &
taker=$!
for _ in $(seq 1 50); do fetch 18090 >/dev/null 2>&1 && break; sleep 0.1; done
refused "ports publish 18090:8080 (in use on the host)" "host port 18090 on 127.0.0.1 is in use" ctl ports publish 18090:8080
# The bus itself: the same rules, named errors (dbus-send prints the error's name).
bus() { dbus-send --session --print-reply --reply-timeout=30000 --dest="$name" "$path" "$iface.$1" "${@:2}"; }
refused "PublishPort(80, 80)" "org.lazaret.Domain1.Error.InvalidArguments: host port 80 is below 1024" \
        bus PublishPort uint16:80 uint16:80
refused "PublishPort(18095, 0)" "org.lazaret.Domain1.Error.InvalidArguments: port 0 is not a TCP port" \
        bus PublishPort uint16:18095 uint16:0
refused "PublishPort(18090, 8080) in use" "org.lazaret.Domain1.Error.PortInUse: host port 18090 on 127.0.0.1 is in use" \
        bus PublishPort uint16:18090 uint16:8080
refused "PublishPort(18081, 9000) published already" "org.lazaret.Domain1.Error.PortInUse: host port 18081 is published already" \
        bus PublishPort uint16:18081 uint16:9000
refused "UnpublishPort(0)" "org.lazaret.Domain1.Error.InvalidArguments: host port 0 is not a TCP port" bus UnpublishPort uint16:0
refused "PublishPort with a wrong signature" "org.freedesktop.DBus.Error.InvalidArgs" bus PublishPort uint32:18095 uint32:8080
lt_assert_eq "the forwards after the refusals" "$before" "$(ctl ports list --json | jq -c .)"
lt_assert_eq "the host's own server on 18090 still answers" "hello from the sandbox" "$(fetch 18090)"

# --- a server inside bound to 127.0.0.1: not reached (the documented limit) -----------
lt_assert_eq "ports publish 18082:8082" "Published sandbox port 8082 on 127.0.0.1:18082." "$(ctl ports publish 18082:8082)"
set +e
out=$(fetch 18082 2>&1)
rc=$?
set -e
((rc != 0)) || lt_fail "a server bound to 127.0.0.1 inside answered through the forward: $out"
# Control: the server runs and answers inside.
inside=$(lt_launch -- /bin/sh -c "printf 'GET /index.html HTTP/1.0\r\n\r\n' | nc 127.0.0.1 8082 | tail -n 1")
lt_assert_eq "the 127.0.0.1-bound server inside, asked inside" "hello from the sandbox" "$inside"
lt_log "ok: a server bound to 127.0.0.1 inside is not reached through its forward (curl exit $rc: $out)"
lt_assert_eq "ports unpublish 18082" "Unpublished host port 18082." "$(ctl ports unpublish 18082)"

# --- unpublish; stop ---------------------------------------------------------------
lt_assert_eq "ports unpublish 18080 --json" '{"host_address":"127.0.0.1","host_port":18080,"published":false}' \
        "$(ctl ports unpublish 18080 --json | jq -c .)"
set +e
fetch 18080 >/dev/null 2>&1
rc=$?
set -e
lt_assert_eq "curl's exit status for 18080 after unpublish (7: connection refused)" 7 "$rc"
lt_assert_eq "ports list --json after unpublish" '[{"host_address":"127.0.0.1","host_port":18081,"port":8081}]' \
        "$(ctl ports list --json | jq -c .)"

ctl stop >/dev/null
lt_wait_inactive
set +e
fetch 18081 >/dev/null 2>&1
rc=$?
set -e
lt_assert_eq "curl's exit status for the profile's 18081 after stop (7: connection refused)" 7 "$rc"
lt_assert_eq "ports list of a stopped Domain" "Domain $LT_DOMAIN is not running." "$(ctl ports list)"
refused "ports publish on a stopped Domain" "is not running" ctl ports publish 18080:8080

# --- a profile port in use on the host fails the start ------------------------------
config '["18090:8081"]'
refused "a launch whose profile publishes 18090 (in use)" 'publish_ports "18090:8081": host port 18090 on 127.0.0.1 is in use' \
        lt_launch -- /bin/true
lt_wait_inactive
lt_log "ok: published ports"
