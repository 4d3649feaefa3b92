#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-layers: the libraries of src/ are layered as src/layers.txt says. On
# the real #include "..." lines of every file of every library: a header of
# its own folder, or of a library of a lower layer; never one of its own
# layer or above, never a component's (any folder of src/ the table does not
# name), never a header found nowhere in src/. A header's basename names one
# file (includes are by basename). A library marked pure reads no
# environment and starts no process, in code (comments and strings aside).
# Every failure is listed, then the test fails.
set -Eeuo pipefail

src=$(realpath -e -- "${1:?usage: test-layers.sh SRC-DIR}")
table=$src/layers.txt
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

declare -A level pure where
while read -r lvl lib purity _; do
        [[ -z $lvl || $lvl == \#* ]] && continue
        [[ $lvl =~ ^[0-9]+$ ]] || { bad "$table: layer '$lvl' of $lib is not a number"; continue; }
        [[ -d $src/$lib && -f $src/$lib/meson.build ]] || bad "$table: $lib is no library folder of src/"
        [[ -z ${level[$lib]+x} ]] || bad "$table: $lib named twice"
        level[$lib]=$lvl
        pure[$lib]=$purity
done <"$table"
((${#level[@]} > 0)) || bad "$table: no library"

# Which folder each header's basename is in; a library's must be unique.
for h in "$src"/*/*.h; do
        dir=$(basename -- "$(dirname -- "$h")")
        name=$(basename -- "$h")
        if [[ -n ${where[$name]+x} ]]; then
                if [[ -n ${level[$dir]+x} || -n ${level[${where[$name]}]+x} ]]; then
                        bad "$name is in both src/${where[$name]} and src/$dir: includes are by basename"
                fi
                continue
        fi
        where[$name]=$dir
done

# Code without comments and string or character literals.
code_only() {
        perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; s{'"'"'(?:\\.|[^'"'"'\\\n])*'"'"'}{0}g; s{"(?:\\.|[^"\\\n])*"}{""}g' -- "$1"
}
impure='\b(getenv|secure_getenv|putenv|setenv|unsetenv|clearenv|fork|vfork|clone|clone3|execl|execle|execlp|execv|execve|execvp|execvpe|execveat|fexecve|posix_spawn|posix_spawnp|system|popen)[[:space:]]*\(|\benviron\b|\bSYS_(fork|vfork|clone|clone3|execve|execveat)\b'

checked=0
for lib in "${!level[@]}"; do
        for f in "$src/$lib"/*.[ch]; do
                [[ -e $f ]] || continue
                checked=$((checked + 1))
                rel=${f#"$src"/}
                while IFS= read -r line; do
                        [[ $line =~ \"([^\"]*)\" ]]
                        name=${BASH_REMATCH[1]}
                        dir=${where[$name]-}
                        if [[ -z $dir ]]; then
                                bad "$rel includes \"$name\", which is in no folder of src/"
                        elif [[ $dir == "$lib" ]]; then
                                :
                        elif [[ -z ${level[$dir]+x} ]]; then
                                bad "$rel (library $lib) includes \"$name\" of the component src/$dir"
                        elif ((level[$dir] >= level[$lib])); then
                                bad "$rel (library $lib, layer ${level[$lib]}) includes \"$name\" of $dir, layer ${level[$dir]}: not below it"
                        fi
                done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' -- "$f" || true)
                if [[ ${pure[$lib]} == pure ]]; then
                        while IFS= read -r hit; do
                                bad "$rel (library $lib, pure) reads the environment or starts a process: $hit"
                        done < <(code_only "$f" | grep -nE "$impure" || true)
                fi
        done
done
((checked > 0)) || bad "no library file found under $src"

((fail == 0)) || exit 1
echo "ok: $checked files of ${#level[@]} libraries include only their own and lower layers' headers"
