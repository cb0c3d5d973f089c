#!/bin/sh
# size_report.sh OUT DIR TARGET=SIZE_TOOL...
#   A markdown report of what coll.h costs on each bare-metal target, from
#   the objects `make cross` left in DIR/TARGET/:
#     coll.o, coll.ci   the full library (every dtype, op and algorithm)
#     linked.o          coll.o with the libgcc helpers it needs
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
{
    echo "| target | build | .text | .data | .bss |"
    echo "|---|---|---:|---:|---:|"
    for spec in "$@"; do
        t=${spec%%=*}; size=${spec#*=}
        for build in full "full + libgcc" minimal; do
            case $build in
                full) obj=$dir/$t/coll.o ;;
                minimal) obj=$dir/$t/min.o ;;
                *) obj=$dir/$t/linked.o ;;
            esac
            [ -f "$obj" ] || continue
            echo "| $t | $build | $(sizes "$size" "$obj" | sed 's/ / | /g') |"
        done
    done
    echo
    printf '| function: stack bytes |'
    for t in $cols; do printf ' %s |' "$t"; done
    echo
    printf '|---|'
    for t in $cols; do printf -- '---:|'; done
    echo
    first=$(echo $cols | awk '{print $1}')
    for f in $(awk '{print $1}' "$tmp.st.$first"); do
        printf '| %s |' "$f"
        for t in $cols; do
            printf ' %s |' "$(awk -v f="$f" '$1 == f {print $2 $3}' "$tmp.st.$t")"
        done
        echo
    done
    echo
    echo "Sizes: \`size -B\` of the library's object (.text includes constants),"
    echo "-Os -ffreestanding; \"+ libgcc\": with the compiler's helpers that it calls"
    echo "(soft float, 64-bit division) linked in. Stack: the deepest chain of frames"
    echo "below each function, from GCC's -fcallgraph-info=su, taking the deepest"
    echo "reduction kernel at calls through the kernel table. The port's callbacks"
    echo "and a user op run on the same stack and add their own frames; the"
    echo "compiler's helpers count as 0; \"+\" marks a lower bound (recursion or a"
    echo "dynamic frame)."
} > "$out"
cat "$out"
