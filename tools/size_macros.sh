#!/bin/sh
# size_macros.sh OUT.md WORK "MAKE" SIZE_TOOL "MIN_DEFS" "CORE_ALL_DEFS"
#   What each trimming macro of coll.h is worth on Cortex-M4F, three ways:
#     on full     the library's object with only that macro set, against
#                 the object with none (what the switch saves on its own)
#     in core     the library's share of the linked core firmware with
#                 every feature (CORE_ALL_DEFS, examples/baremetal/core_calls.c)
#                 with that macro added: what a firmware that keeps the
#                 rest pays for the feature (COLL_NO_* switches only)
#     in minimal  the library's share of the linked minimal firmware with
#                 that one macro taken out of MIN_DEFS (what leaving it out
#                 of the minimal profile would cost)
#   Each variant is built by `make` itself in WORK/<variant> (the same rules
#   as `make size`, with BM_CORE_DEFS or BM_MIN_DEFS overridden). Writes the
#   markdown table to OUT.md and prints it.
set -eu
out=$1; work=$2; make=$3; size=$4; min_defs=$5; core_defs=$6
here=$(dirname "$0")
t=cortex-m4f

full_text() {   # variant defs -> .text of the object
    $make B="$work/f-$1" BM_CORE_DEFS="$2" "$work/f-$1/baremetal/cross/$t/core.o" >/dev/null
    "$size" -B "$work/f-$1/baremetal/cross/$t/core.o" | awk 'NR == 2 {print $1}'
}
lib_share() {   # dir image -> the library's .text in dir/image.elf (its map)
    awk -v lib="$1/coll.o" -f "$here/map_share.awk" "$1/$2.map" | awk '$1 == "lib" {print $2}'
}
min_text() {    # variant defs -> the library's .text in the linked image
    d=$work/m-$1/baremetal/min/$t
    $make B="$work/m-$1" BM_MIN_DEFS="$2" "$d/min_allreduce.elf" >/dev/null
    lib_share "$d" min_allreduce
}
core_text() {   # variant defs -> the library's .text in the linked core-all image
    d=$work/c-$1/baremetal/core-all/$t
    $make B="$work/c-$1" BM_CORE_ALL_DEFS="$core_defs $2" "$d/core_calls.elf" >/dev/null
    lib_share "$d" core_calls
}
without() {     # defs name -> defs without -Dname or -Dname=...
    echo "$1" | tr ' ' '\n' | grep -v -e "^-D$2\$" -e "^-D$2=" | tr '\n' ' '
}

base=$(full_text none "")
minbase=$(min_text none "$min_defs")
corebase=$(core_text none "")
{
    echo "| macro | on full: .text | saves | in core, every feature: coll's .text with it | saves | in minimal: coll's .text without it | costs |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    echo "| (none / all of minimal) | $base | | $corebase | | $minbase | |"
    for spec in COLL_NO_CHECKS COLL_NO_CRC COLL_NO_ARGCHECK COLL_NO_NONBLOCKING COLL_CRC_SMALL COLL_NO_LAYOUT COLL_NO_COST_MODEL COLL_NO_NAMES \
                COLL_NO_MEMOPS COLL_NO_REUSE COLL_NO_RECORDER COLL_NO_SHRINK COLL_NO_OBSERVER COLL_NO_PIECES COLL_NO_ZERO_COPY COLL_EAGER_BYTES=0 \
                COLL_NO_ERRSTR COLL_DTYPES=256 COLL_OPS=1 COLL_OPS=29 COLL_ALGOS=4 COLL_ALGOS=32798 \
                COLL_KINDS=1 COLL_KINDS=31 "COLL_KINDS=31 COLL_ALGOS=32798 COLL_OPS=29"; do
        name=$(echo "$spec" | tr ' =' '_-')
        defs=$(for d in $spec; do printf -- '-D%s ' "$d"; done)
        ft=$(full_text "$name" "$defs")
        # in core: the feature switches (the masks are the profile's own)
        ct=""; csave=""
        case $spec in
            COLL_NO_LAYOUT) ;;                 # (the core profile has none)
            COLL_NO_*|COLL_CRC_SMALL|COLL_EAGER_BYTES=0) ct=$(core_text "$name" "$defs"); csave=$((corebase - ct)) ;;
        esac
        # in minimal: only the macros minimal sets can be taken out of it
        mt=""; cost=""
        if [ "$(echo "$spec" | wc -w)" -eq 1 ]; then
            m=${spec%%=*}
            case " $min_defs " in
                *" -D$spec "*|*" -D$m "*)
                    mt=$(min_text "$name" "$(without "$min_defs" "$m")")
                    cost="+$((mt - minbase))" ;;
            esac
        fi
        # names for the table (no "|": it would split a markdown cell)
        label=$(for d in $spec; do case $d in
                COLL_ALGOS=32798) printf '%s' '`COLL_ALGOS` naive, ring, tree, binomial, linear' ;;
                COLL_ALGOS=4) printf '%s' '`COLL_ALGOS` ring' ;;
                COLL_KINDS=1) printf '%s' '`COLL_KINDS` allreduce' ;;
                COLL_KINDS=31) printf '%s' '`COLL_KINDS` allreduce, reduce_scatter, allgather, broadcast, reduce' ;;
                COLL_OPS=29) printf '%s' '`COLL_OPS` sum, min, max, avg' ;;
                COLL_OPS=1) printf '%s' '`COLL_OPS` sum' ;;
                COLL_DTYPES=256) printf '%s' '`COLL_DTYPES` float32' ;;
                *) printf '`%s`' "$d" ;;
            esac; printf ' + '; done | sed 's/ + $//')
        echo "| $label | $ft | $((base - ft)) | $ct | $csave | $mt | $cost |"
    done
    echo
    echo "Cortex-M4F, -Os. \"On full\": the library's object with that macro alone;"
    echo "\"saves\" against the object with none. \"In core\": the library's share of"
    echo "the linked core firmware with every feature (examples/baremetal/core_calls.c,"
    echo "the core-all profile, $corebase) with that macro added. \"In minimal\": the library's share"
    echo "of the linked minimal firmware (examples/baremetal/min_allreduce.c) with that"
    echo "one macro taken out of the minimal profile (a mask taken out means all"
    echo "dtypes, ops or algorithms); \"costs\" against the whole profile ($minbase)."
} > "$out"
cat "$out"
