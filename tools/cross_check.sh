#!/bin/sh
# cross_check.sh OBJ NM LIBGCC...
#   Passes when every symbol OBJ leaves undefined is defined by the given
#   libgcc archive(s): the compiler's arithmetic helpers (__aeabi_fadd,
#   __udivdi3, ...) and nothing else - no memcpy, memset, malloc or printf,
#   so the object links into firmware that has no C library at all.
#   Prints the helpers it needs, or what it must not need.
set -u
obj=$1; nm=$2; shift 2
tmp=${TMPDIR:-/tmp}/cross_check.$$
trap 'rm -f "$tmp".*' EXIT
"$nm" -u "$obj" | awk '{print $NF}' | sort -u > "$tmp.need"
for lib in "$@"; do "$nm" -g --defined-only "$lib" 2>/dev/null; done |
    awk 'NF >= 3 {print $3}' | sort -u > "$tmp.have"
comm -23 "$tmp.need" "$tmp.have" > "$tmp.bad"
if [ -s "$tmp.bad" ]; then
    echo "  needs symbols outside libgcc: $(tr '\n' ' ' < "$tmp.bad")"
    exit 1
fi
echo "  libgcc helpers only ($(wc -l < "$tmp.need" | tr -d ' ')): $(tr '\n' ' ' < "$tmp.need")"
