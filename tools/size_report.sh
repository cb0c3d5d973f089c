#!/bin/sh
# size_report.sh OUT.md OUT.tsv DIR TARGET=SIZE_TOOL...
#   What coll.h costs on each bare-metal target, in three profiles (see
#   mk/baremetal.mk for their macros), from what `make size` left in DIR:
#     cross/T/coll.o, coll.ci   full: the library alone, every feature
#     cross/T/linked.o          full, with the libgcc helpers it calls
#     cross/T/core.o, core.ci   core: the COLL_ALGOS/COLL_OPS masks only
#     min/T/min_allreduce.elf   minimal: linked into a firmware that calls
#     min/T/min_allreduce.map     coll_init and coll_allreduce, unused
#     min/T/coll.o, coll.ci       sections dropped (--gc-sections)
#   Flash is the Berkeley .text (code and constants). In the minimal image
#   the library's share is the sections the map attributes to its object
#   (tools/map_share.awk). Stack is the worst chain of frames below a
#   function (tools/stack_depth.awk).
#   Writes the markdown to OUT.md and prints it; OUT.tsv gets every figure
#   as "target metric bytes flag" for tools/size_check.sh.
set -eu
out=$1; tsv=$2; dir=$3; shift 3
here=$(dirname "$0")
tmp=${TMPDIR:-/tmp}/size_report.$$
trap 'rm -f "$tmp".*' EXIT

# The blocking collectives: each runs a whole schedule on the caller's stack.
blocking="coll_allreduce coll_reduce_scatter coll_allgather coll_broadcast coll_reduce
coll_gather coll_scatter coll_alltoall coll_barrier coll_allgatherv coll_reduce_scatterv
coll_run"

sizes() {   # tool object -> "text data bss"
    "$1" -B "$2" | awk 'NR == 2 {print $1, $2, $3}'
}
stack_of() {   # stack-file function -> "bytes flag", or "- " when absent
    awk -v f="$2" '$1 == f {print $2, $3; found = 1} END {if (!found) print "-"}' "$1"
}
worst_blocking() {   # stack-file -> "bytes flag function"
    for f in $blocking; do
        awk -v f="$f" '$1 == f {print $2, ($3 == "" ? "-" : $3), $1}' "$1"
    done | sort -s -k1,1nr | head -1
}

: > "$tsv"
put() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >> "$tsv"; }

cols=""
for spec in "$@"; do
    t=${spec%%=*}; size=${spec#*=}
    cols="$cols $t"
    awk -f "$here/stack_depth.awk" "$dir/cross/$t/coll.ci" | sort > "$tmp.st.$t"
    awk -f "$here/stack_depth.awk" "$dir/cross/$t/core.ci" | sort > "$tmp.core.$t"
    awk -f "$here/stack_depth.awk" "$dir/min/$t/coll.ci" | sort > "$tmp.min.$t"

    set -- $(sizes "$size" "$dir/cross/$t/coll.o");   put "$t" full.text "$1"; put "$t" full.data "$2"; put "$t" full.bss "$3"
    set -- $(sizes "$size" "$dir/cross/$t/linked.o"); put "$t" full+libgcc.text "$1"
    set -- $(sizes "$size" "$dir/cross/$t/core.o");   put "$t" core.text "$1"; put "$t" core.data "$2"; put "$t" core.bss "$3"
    awk -v lib="$dir/min/$t/coll.o" -f "$here/map_share.awk" "$dir/min/$t/min_allreduce.map" > "$tmp.map"
    while read -r o tx da bs; do
        put "$t" "min.$o.text" "$tx"; put "$t" "min.$o.data" "$da"; put "$t" "min.$o.bss" "$bs"
    done < "$tmp.map"
    for prof in core-plain core-checks core-all; do   # the core profiles, linked
        awk -v lib="$dir/$prof/$t/coll.o" -f "$here/map_share.awk" "$dir/$prof/$t/core_calls.map" > "$tmp.map"
        while read -r o tx da bs; do put "$t" "$prof.$o.text" "$tx"; done < "$tmp.map"
    done
    for prof in min-noarg min-checks; do   # the minimal image's variants
        awk -v lib="$dir/$prof/$t/coll.o" -f "$here/map_share.awk" "$dir/$prof/$t/min_allreduce.map" > "$tmp.map"
        while read -r o tx da bs; do put "$t" "$prof.$o.text" "$tx"; done < "$tmp.map"
    done
    set -- $(sizes "$size" "$dir/min/$t/min_allreduce.elf")
    put "$t" min.image.text "$1"; put "$t" min.image.data "$2"; put "$t" min.image.bss "$3"

    set -- $(worst_blocking "$tmp.st.$t")
    put "$t" stack.blocking "$1" "${2#-}"; put "$t" stack.blocking.worst "$3"
    set -- $(stack_of "$tmp.st.$t" coll_progress);       put "$t" stack.progress "$1" "${2:-}"
    set -- $(stack_of "$tmp.st.$t" coll_layout_convert); put "$t" stack.layout_convert "$1" "${2:-}"
    set -- $(worst_blocking "$tmp.core.$t")
    put "$t" core.stack.blocking "$1" "${2#-}"
    set -- $(stack_of "$tmp.min.$t" coll_allreduce);     put "$t" min.stack.allreduce "$1" "${2:-}"
done

get() {   # target metric -> value followed by its flag
    awk -F '\t' -v t="$1" -v m="$2" '$1 == t && $2 == m {print $3 $4}' "$tsv"
}
row() {   # label metric: one cell per target
    printf '| %s |' "$1"
    for t in $cols; do printf ' %s |' "$(get "$t" "$2")"; done
    echo
}
head_row() {
    printf '| %s |' "$1"
    for t in $cols; do printf ' %s |' "$t"; done
    echo
    printf '|---|'
    for t in $cols; do printf -- '---:|'; done
    echo
}

{
    echo "### Flash (bytes of .text: code and constants)"
    echo
    head_row "build"
    row "full" full.text
    row "full + libgcc helpers" full+libgcc.text
    row "core (COLL_KINDS, COLL_ALGOS, COLL_OPS masks)" core.text
    row "core, linked: coll, no call checks, blocking only" core-plain.lib.text
    row "core, linked: coll, with the call checks" core-checks.lib.text
    row "core, linked: coll, every feature" core-all.lib.text
    row "core, linked: libgcc helpers (every profile)" core-all.libgcc.text
    row "minimal, linked: coll" min.lib.text
    row "minimal, linked: coll, COLL_NO_ARGCHECK" min-noarg.lib.text
    row "minimal, linked: coll, with the call checks" min-checks.lib.text
    row "minimal, linked: libgcc helpers" min.libgcc.text
    row "minimal, linked: whole image" min.image.text
    echo
    echo "### Stack (bytes, worst chain of frames)"
    echo
    head_row "function"
    row "blocking collective, full" stack.blocking
    row "(the deepest one)" stack.blocking.worst
    row "coll_progress, full" stack.progress
    row "coll_layout_convert, full" stack.layout_convert
    row "blocking collective, core" core.stack.blocking
    row "coll_allreduce, minimal" min.stack.allreduce
    echo
    echo "Profiles: *full* is every collective, algorithm, dtype and op, with"
    echo "layouts, tuning and call checks. *core* is the masks COLL_KINDS"
    echo "(allreduce, reduce_scatter, allgather, broadcast, reduce), COLL_ALGOS"
    echo "(naive, ring, tree) and COLL_OPS (sum, min, max, avg) with every dtype."
    echo "*core, linked* is the same masks linked into"
    echo "examples/baremetal/core_calls.c (coll_init and the five collectives, the"
    echo "dtype, op and algorithm set at run time), like the minimal image: *no"
    echo "call checks* also drops the non-blocking path, the cost model, strings,"
    echo "names, small calls and pieces (mk/baremetal.mk, BM_CORE_LEAN), *with the"
    echo "call checks* adds the call checks to those (not COLL_CHECK_CRC's payload"
    echo "CRCs: COLL_NO_CRC), *every feature* keeps everything and calls the"
    echo "resumable and persistent forms too. Their libgcc helpers are float64's"
    echo "soft-double arithmetic on a single-precision FPU and 64-bit division."
    echo "*minimal* is ring all-reduce of"
    echo "float32 sums with every COLL_NO_* switch, linked into"
    echo "examples/baremetal/min_allreduce.c (coll_init + coll_allreduce only) with"
    echo "-ffunction-sections -fdata-sections -Wl,--gc-sections: \"coll\" is the"
    echo "sections the map file attributes to the library's object, \"whole image\""
    echo "adds the program, the 4-rank mailbox port, start-up and libgcc."
    echo "*with the call checks* keeps them (COLL_NO_CHECKS out, COLL_NO_CRC and"
    echo "COLL_EAGER_BYTES=0 in, as the core profile with the call checks)."
    echo "Full and core are the library's object alone (\`size -B\`, -Os"
    echo "-ffreestanding); \"+ libgcc\" links in the compiler's helpers it calls"
    echo "(soft float, 64-bit division). The library has no .data or .bss."
    echo
    echo "Stack: the deepest chain of frames below each function, from GCC's"
    echo "-fcallgraph-info=su. A call through a pointer counts as the deepest"
    echo "function it can reach: a kernel from the kernel table, a schedule or"
    echo "its hook from the executor, a cost function from the planner, a"
    echo "sub-communicator's port one level deep (tools/stack_depth.awk)."
    echo "\"Blocking collective\" is the worst of"
    echo "coll_allreduce, coll_reduce_scatter, coll_allgather, coll_broadcast,"
    echo "coll_reduce, coll_gather, coll_scatter, coll_alltoall, coll_barrier, the"
    echo "v-variants and coll_run. The port's callbacks and a user op run on the"
    echo "same stack and add their own frames; the compiler's helpers count as 0;"
    echo "\"+\" marks a lower bound (recursion or a dynamic frame)."
    echo
    echo "### Stack of every public function, full build"
    echo
    head_row "function"
    first=$(echo $cols | awk '{print $1}')
    for f in $(awk '{print $1}' "$tmp.st.$first"); do
        printf '| %s |' "$f"
        for t in $cols; do
            printf ' %s |' "$(awk -v f="$f" '$1 == f {print $2 $3}' "$tmp.st.$t")"
        done
        echo
    done
} > "$out"
cat "$out"
