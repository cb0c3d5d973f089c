#!/bin/sh
# bench/plot.sh TABLE OUTDIR - bus bandwidth against size from a bench table
#
#   OUTDIR/allreduce_p2.png, allreduce_p4.png   every implementation's
#       all-reduce (coll ports with AUTO, the MPIs' own, each Gloo
#       algorithm), with the 2-thread memcpy rate as a dashed line: a
#       collective that copies every byte at least once cannot beat it.
#   OUTDIR/algos_allreduce_p2.png, algos_allreduce_p4.png   coll-threads,
#       one line per all-reduce algorithm.
#
# Rows whose check is not "ok" are left out of the plots.
set -e
table=${1:-bench/results/latest.tsv}
outdir=${2:-bench/results}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# series <name> <awk condition>: a data file of bytes and busbw. busbw is
# recomputed from bytes and time at full precision (the table rounds it to
# 0.001 GB/s, which is 0 for small messages on a log axis).
series() {
    awk -F'\t' -v OFS='\t' "
        function factor(c, p) {
            if (c == \"allreduce\") return 2 * (p - 1) / p
            if (c == \"reduce_scatter\" || c == \"allgather\" || c == \"alltoall\") return (p - 1) / p
            return 1
        }
        NR > 1 && \$9 == \"ok\" && \$6 > 0 && ($2) { print \$5, \$5 / (\$6 * 1e3) * factor(\$2, \$4) }" \
        "$table" | sort -n > "$tmp/$1.dat"
    [ -s "$tmp/$1.dat" ] && echo "$1" || true
}

ceiling=$(awk -F'\t' '$1 == "membw" && $2 == "memcpy" && $4 == 2 { print $7 }' "$table" | head -1)

plot() {   # plot <png> <title> <series...>
    png=$1; title=$2; shift 2
    {
        echo "set terminal pngcairo noenhanced size 900,560 font 'sans,10'"
        echo "set output '$png'"
        echo "set title '$title'"
        echo "set logscale xy"
        echo "set xlabel 'bytes'"
        echo "set ylabel 'bus bandwidth (GB/s)'"
        echo "set format y '%g'"
        echo "set format x '%.0s%cB'"
        echo "set key outside right"
        echo "set grid"
        printf "plot "
        sep=""
        for s in "$@"; do
            printf "%s'%s/%s.dat' using 1:2 with linespoints title '%s'" "$sep" "$tmp" "$s" "${s%-p[0-9]*}"
            sep=", "
        done
        if [ -n "$ceiling" ]; then
            printf "%s%s with lines dashtype 2 lc rgb 'gray40' title 'memcpy 2 threads'" "$sep" "$ceiling"
        fi
        echo
    } > "$tmp/plot.gp"
    gnuplot "$tmp/plot.gp"
    echo "bench-plot: $png" >&2
}

for p in 2 4; do
    set --
    for impl in coll-threads coll-shm coll-tcp coll-mpi; do
        s=$(series "$impl-p$p" "\$1 == \"$impl\" && \$2 == \"allreduce\" && \$3 == \"auto\" && \$4 == $p")
        [ -n "$s" ] && set -- "$@" "$s"
    done
    for impl in ompi mpich; do
        s=$(series "$impl-p$p" "\$1 == \"$impl\" && \$2 == \"allreduce\" && \$4 == $p")
        [ -n "$s" ] && set -- "$@" "$s"
    done
    for a in ring ring_chunked halving_doubling; do
        s=$(series "gloo-$a-p$p" "\$1 == \"gloo\" && \$3 == \"$a\" && \$4 == $p")
        [ -n "$s" ] && set -- "$@" "$s"
    done
    [ $# -gt 0 ] && plot "$outdir/allreduce_p$p.png" "all-reduce, $p ranks, float32 sum (coll: AUTO)" "$@"

    set --
    for a in $(awk -F'\t' -v p=$p '$1 == "coll-threads" && $2 == "allreduce" && $4 == p { print $3 }' "$table" | sort -u); do
        s=$(series "$a-p$p" "\$1 == \"coll-threads\" && \$2 == \"allreduce\" && \$3 == \"$a\" && \$4 == $p")
        [ -n "$s" ] && set -- "$@" "$s"
    done
    [ $# -gt 0 ] && plot "$outdir/algos_allreduce_p$p.png" "coll-threads all-reduce by algorithm, $p ranks" "$@"
done
exit 0
