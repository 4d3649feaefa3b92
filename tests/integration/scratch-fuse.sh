#!/bin/bash
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"
lt_install
lt_domain_setup
fo=$HOME/fo; rm -rf $HOME/fo-*; mkdir -p $fo $HOME/fo-l $HOME/fo-u $HOME/fo-w
fusermount3 -u $fo 2>/dev/null || true
echo lower > $HOME/fo-l/a
fuse-overlayfs -o lowerdir=$HOME/fo-l,upperdir=$HOME/fo-u,workdir=$HOME/fo-w $fo
grep fuse /proc/self/mountinfo >&2
printf '{ "default_profile": "test", "profiles": { "test": { "image": "oci:%s", "volumes": [ { "host": "%s", "container": "/v", "mode": "rw" } ] } } }\n' "$LT_IMAGE" "$fo" >"$LT_CONFIG"
chmod 0600 "$LT_CONFIG"
set +e
out=$(cd "$LT_WS" && lazaretctl launch -- /bin/sh -c 'ls -la /v; cat /v/a; echo in > /v/b; cat /v/b; mkfifo /v/f; ls -la /v' 2>&1 </dev/null)
echo "rc=$? out=$out" >&2
ls -la $fo $HOME/fo-u >&2
fusermount3 -u $fo
exit 0
