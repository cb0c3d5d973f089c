#!/bin/sh
# tools/auto_measure.sh [PASSES] [OUT] - the raw table that tools/fit_auto
# fits AUTO's constants to: every forced algorithm (and AUTO) of every
# collective on the threads port, and of all-reduce on the shm, tcp and
# MPI (Open MPI) ports, ranks 2 and 4, 8 B to 64 MiB. The passes run one
# after another, each port in turn, so that a noisy spell on a shared
# machine spreads over every row; bench/auto.sh and fit_auto take the
# median of a row across the passes. AUTO is timed first in odd passes and
# last in even ones (the algorithm list from coll.h, reversed), and the
# table opens with AUTO's picks (memtraffic -x), which bench/auto.sh
# shows. make bench-goals makes the same rows in its three passes.
# Progress goes to stderr.
#
#   sh tools/auto_measure.sh 5 bench/results/auto-raw.tsv    (~3.5 min a pass)
passes=${1:-3}
out=${2:-bench/results/auto-raw.tsv}
B=${B:-build}
bin=$B/bench
T=${T:-20}
OMPI="mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader"
colls=allreduce,reduce_scatter,allgather,broadcast,reduce,alltoall
[ -x $bin/bench_coll ] || { echo "auto_measure: $bin/bench_coll not built (make bench-bins)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
tmp=$out.tmp
printf 'impl\tcollective\talgo\tranks\tbytes\ttime_us\talgbw_GBps\tbusbw_GBps\tcheck\n' >"$tmp"
[ -x $bin/memtraffic ] && $bin/memtraffic -x -n 2,4 -c $colls -s std >>"$tmp"
fwd=$(awk '/#define COLL_ALGO_LIST/,/^$/' coll.h | sed -n 's/.*X([A-Z_0-9]*, *"\([a-z_0-9]*\)").*/\1/p')
rev=$(echo "$fwd" | awk '{ a[NR] = $0 } END { for (i = NR; i >= 1; i--) printf "%s%s", a[i], (i > 1 ? "," : "") }')
case ",$rev," in *,auto,*) ;; *) rev=all ;; esac    # no list found: bench_coll's own order
skips='does not run it'      # a listed algorithm a collective lacks
i=1
while [ $i -le "$passes" ]; do
    echo "auto_measure: pass $i of $passes" >&2
    algos=$([ $((i % 2)) = 1 ] && echo all || echo $rev)
    $bin/bench_coll -p threads -n 2,4 -c $colls -a $algos -s std -T $T 2>&1 >>"$tmp" | grep -v "$skips" >&2
    $bin/bench_coll -p shm,tcp -n 2,4 -c allreduce -a $algos -s std -T $T 2>&1 >>"$tmp" | grep -v "$skips" >&2
    if [ -x $bin/bench_mpi_ompi ] && command -v mpirun.openmpi >/dev/null; then
        for n in 2 4; do
            $OMPI -np $n $bin/bench_mpi_ompi -m -c allreduce -a $algos -s std -T $T 2>&1 >>"$tmp" |
                grep -v "$skips" >&2
        done
    else
        echo "auto_measure: no Open MPI: no coll-mpi rows" >&2
    fi
    i=$((i + 1))
done
mv "$tmp" "$out"
echo "auto_measure: $(($(wc -l <"$out") - 1)) rows in $out" >&2
