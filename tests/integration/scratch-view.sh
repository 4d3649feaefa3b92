#!/bin/bash
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"
lt_install
lt_domain_setup
lt_use_git_image
cd "$LT_WS"
git config user.email t@t; git config user.name t
echo a > a.txt; git add a.txt; git commit -qm init
set +e
out=$(lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root /bin/sh -c '
cd /workspace; git init -q sub; ls -la sub/.git; cd sub && echo s > s.txt && git add s.txt && git -c user.name=x -c user.email=x@x commit -q -m sub; git log --oneline
' 2>&1 </dev/null)
echo "rc=$? out=$out" >&2
set -e
echo "--- host:" >&2
ls -la sub/.git >&2; git -C sub log --oneline >&2; find ~/.local/share/lazaret/domains/*/view >&2
exit 0
