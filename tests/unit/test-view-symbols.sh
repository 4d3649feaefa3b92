#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-view-symbols.sh NM ARCHIVE: fails when an object of the workspace view
# (src/view/, in ARCHIVE) defines a writable object outside a function's
# stack: nm classes D/d (data), B/b (bss), C (common) and their kin. The
# view's state lives in the View that main() makes and hands to the request
# handlers (fuse_req_userdata()), its threads and its notifier (issue 30).
# Read-only data is fine: .rodata, and .data.rel.ro, which holds constant
# tables of pointers (the ops table) and is read-only once relocated (RELRO).
# Names the compiler makes for its sanitizers are not the source's objects.
set -euo pipefail

# The one exception: state a signal handler sets, which has nowhere else to
# live. One name a line, as nm shows it without a ".N" suffix.
allowed=(
)

nm=$1
archive=$2
symbols=$("$nm" -f sysv "$archive")
bad=0
member=?
while IFS= read -r line; do
        if [[ $line =~ ^Symbols\ from\ .*\[(.*)\]:$ ]]; then
                member=${BASH_REMATCH[1]}
                continue
        fi
        [[ $line == *'|'* ]] || continue
        IFS='|' read -r name _ class _ _ _ section <<<"$line"
        name=${name// /} class=${class// /} section=${section// /}
        case $class in
        D|d|B|b|C|G|g|S|s|V|v|u) ;;
        *) continue ;;
        esac
        [[ $section == .data.rel.ro* ]] && continue
        [[ $name == __unnamed_* || $name == __asan_* || $name == __ubsan_* || $name == __sancov_* || $name == .L* ]] && continue
        base=${name%.[0-9]*}
        for a in "${allowed[@]}"; do
                [[ $base == "$a" ]] && continue 2
        done
        echo "test-view-symbols: $member: writable object '$name' ($class, $section): keep it in the View (src/view/view.h)" >&2
        bad=1
done <<<"$symbols"
if ((bad == 0)); then
        # A check that saw nothing proves nothing: the archive must hold the view.
        grep -q '^op_lookup *|' <<<"$symbols" || {
                echo "test-view-symbols: no op_lookup in $archive: not the view's objects" >&2
                exit 1
        }
        echo "test-view-symbols: no writable file-scope object in $archive"
fi
exit "$bad"
