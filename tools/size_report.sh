#!/bin/sh
# size_report.sh OUT DIR TARGET=SIZE_TOOL...
#   A markdown report of what coll.h costs on each bare-metal target, from
#   the objects `make cross` left in DIR/TARGET/:
#     coll.o, coll.ci   the full library (every dtype, op and algorithm)
#     min.o             the smallest useful build, when present
#   Sizes are the Berkeley ones (.text includes read-only data). Stack is the
#   worst case of each public function over the call graph (see
#   tools/stack_depth.awk). Writes OUT and prints it.
set -eu
out=$1; dir=$2; shift 2
here=$(dirname "$0")
tmp=${TMPDIR:-/tmp}/size_report.$$
trap 'rm -f "$tmp".*' EXIT

sizes() {   # tool object -> "text data bss"
    "$1" -B "$2" | awk 'NR == 2 {print $1, $2, $3}'
}


# The stack table: one row per public function, one column per target.
cols=""
for spec in "$@"; do
    t=${spec%%=*}
    cols="$cols $t"
    awk -f "$here/stack_depth.awk" "$dir/$t/coll.ci" | sort > "$tmp.st.$t"
done
