#!/bin/bash
. "$(dirname -- "${BASH_SOURCE[0]}")/../harness/lib.sh"
lt_install
lt_domain_setup
lt_use_git_image
cd "$LT_WS"
for d in $(seq 1 100); do mkdir d$d; for f in $(seq 1 200); do echo $d$f > d$d/f$f; done; done
git add -A; git -c user.name=a -c user.email=a@a commit -qm x
lt_keeper_start
sleep 2
vp=$(pgrep -u "$(id -u)" -f lazaret-view | head -1)
echo "view pid $vp" >&2
inside() { lt_launch -- /bin/env PATH=/usr/bin:/bin HOME=/root GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.checkStat GIT_CONFIG_VALUE_0=minimal /bin/sh -c "cd /workspace && $1" </dev/null; }
inside 'time git status --porcelain | wc -l' 2>&1 | tail -4 >&2
inside 'time git status --porcelain | wc -l' 2>&1 | tail -4 >&2
echo "$vp" > $HOME/view.pid
touch $HOME/go.wait
while [[ -e $HOME/go.wait ]]; do sleep 0.2; done
inside 'time git status --porcelain | wc -l' 2>&1 | tail -4 >&2
touch $HOME/done.flag
sleep 3
exit 0
