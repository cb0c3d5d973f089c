#!/bin/sh
# bench/run.sh quick|full - runs every benchmark program of bench/ and prints
# ONE table (tab-separated, header first) on stdout; a copy goes to
# bench/results/latest.tsv. What is missing (a port not built, an MPI or
# Gloo not installed) is said on stderr; under CI=true a missing peer makes
# the run fail instead.
#
#   quick  (< 1 min)  all-reduce, ranks 2 and 4, 8 B / 64 KiB / 8 MiB: every
#                     coll port (AUTO), with the call checks on (the default)
#                     and off (-C 0: rows coll-<port>-c0), Open MPI, MPICH,
#                     Gloo, torch.distributed (gloo) and the torch seed's
#                     programs; memory bandwidth; coll.h's cost per call over
#                     the null port; the ceilings of bench/goals.sh: the
#                     memory traffic of AUTO's all-reduce (memtraffic), the
#                     memory bandwidth over arrays as large as its buffers,
#                     the raw TCP loopback stream (tcpstream)
#   full   (< 10 min) every collective and size 8 B..64 MiB (x4, with 64 KiB
#                     and 64 MiB), and 256 MiB for all-reduce; coll-threads
#                     with every algorithm (AUTO alone above 64 MiB), the
#                     other ports with AUTO plus every all-reduce algorithm;
#                     all-reduce with AUTO again with the checks off (-C 0);
#                     the peers likewise
#
# Each program runs under `timeout`, so a hang costs a bounded time and is
# reported, and the rest of the table still comes.
mode=${1:-quick}
B=${B:-build}
bin=$B/bench
out=bench/results/latest.tsv
tmp=$out.tmp
OMPI="mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader"
MPICH="mpirun.mpich"
flags=$out.flags        # the block below runs in a pipeline (a subshell)

case $mode in
quick) sizes=quick; T=10; colls=allreduce; ranks="2 4"; passes=2; tmo=120; big=8 ;;
full)  sizes=full;  T=20; colls=allreduce,reduce_scatter,allgather,broadcast,reduce,alltoall
       big="8 32 64 256"
       others=reduce_scatter,allgather,broadcast,reduce,alltoall
       ranks="2 4"; passes=5; tmo=600 ;;
*) echo "usage: bench/run.sh quick|full" >&2; exit 2 ;;
esac
ranks_csv=$(echo $ranks | tr ' ' ',')

say() { echo "bench: $*" >&2; }
lack() { say "MISSING: $*"; echo missing >>"$flags"; }
run() {   # run <what> <command...>: a failure is reported, never fatal
    what=$1; shift
    t0=$(date +%s)
    timeout $tmo "$@"
    rc=$?
    say "$what: $(( $(date +%s) - t0 )) s"
    if [ $rc -ne 0 ]; then
        [ $rc -eq 124 ] && say "FAILED: $what (timed out after ${tmo}s)" || say "FAILED: $what (exit $rc)"
        echo failed >>"$flags"
    fi
}

mkdir -p bench/results
rm -f "$flags"
{
    printf 'impl\tcollective\talgo\tranks\tbytes\ttime_us\talgbw_GBps\tbusbw_GBps\tcheck\n'

    # --- coll over its own ports -------------------------------------------
    # (full: every algorithm on the threads port; on the others AUTO, and
    # every algorithm for all-reduce)
    if [ -x $bin/bench_coll ]; then
        if [ $mode = quick ]; then
            run coll-ports $bin/bench_coll -p threads,shm,tcp -n $ranks_csv -c $colls \
                -a auto -s $sizes -T $T
        else
            run coll-threads $bin/bench_coll -p threads -n $ranks_csv -c $colls -a all \
                -s $sizes -T $T
            run coll-shm-tcp $bin/bench_coll -p shm,tcp -n $ranks_csv -c allreduce -a all \
                -s $sizes -T $T
            run coll-shm-tcp-others $bin/bench_coll -p shm,tcp -n $ranks_csv -c $others \
                -a auto -s $sizes -T $T
        fi
        # the same AUTO all-reduce with the call checks off, for the goals' second column
        run coll-ports-checks-off $bin/bench_coll -p threads,shm,tcp -n $ranks_csv -c allreduce \
            -a auto -s $sizes -T $((T / 2)) -C 0
    else
        lack "$bin/bench_coll not built: no coll-threads/shm/tcp rows"
    fi

    # --- Open MPI's collectives, and coll over the MPI port in the same job --
    if [ -x $bin/bench_mpi_ompi ] && command -v mpirun.openmpi >/dev/null; then
        for n in $ranks; do
            if [ $mode = quick ]; then
                run "ompi+coll-mpi p=$n" $OMPI -np $n $bin/bench_mpi_ompi -i ompi -c $colls \
                    -s $sizes -T $T
            else
                run "ompi p=$n" $OMPI -np $n $bin/bench_mpi_ompi -i ompi -x -c $colls \
                    -s $sizes -T $T
                run "coll-mpi p=$n" $OMPI -np $n $bin/bench_mpi_ompi -m -c allreduce -a all \
                    -s $sizes -T $T
                run "coll-mpi others p=$n" $OMPI -np $n $bin/bench_mpi_ompi -m -c $others \
                    -a auto -s $sizes -T $T
            fi
        done
    else
        lack "Open MPI (mpicc.openmpi / mpirun.openmpi, Debian openmpi-bin libopenmpi-dev): no ompi or coll-mpi rows"
    fi

    # --- MPICH ---------------------------------------------------------------
    if [ -x $bin/bench_mpi_mpich ] && command -v mpirun.mpich >/dev/null; then
        for n in $ranks; do
            run "mpich p=$n" $MPICH -np $n $bin/bench_mpi_mpich -i mpich -x -c $colls \
                -s $sizes -T $T
        done
    else
        lack "MPICH (mpicc.mpich / mpirun.mpich, Debian mpich libmpich-dev): no mpich rows"
    fi

    # --- Gloo ----------------------------------------------------------------
    if [ -x $bin/bench_gloo ]; then
        run gloo $bin/bench_gloo -n $ranks_csv -s $sizes -T $T
    else
        lack "Gloo (Debian libgloo-dev): no gloo rows"
    fi

    # --- torch.distributed (gloo) and the torch seed's naive and ring -------
    PY=${PY:-/usr/bin/python3}
    if "$PY" -c 'import torch' 2>/dev/null; then
        run torch "$PY" bench/bench_torch.py -n $ranks_csv -s $sizes
    else
        lack "python3-torch (Debian python3-torch): no torch-gloo or torch-seed rows"
    fi

    # --- coll.h's own cost per call: the null port ---------------------------
    if [ -x $bin/nullport ]; then
        run nullport $bin/nullport -N $([ $mode = quick ] && echo 200000 || echo 1000000)
    else
        lack "$bin/nullport not built: no coll-null rows"
    fi

    # --- the memory's own ceiling --------------------------------------------
    # (512 MiB: the plots' dashed line; and arrays as large as the buffers of
    # each all-reduce of >= 8 MiB at 2 and 4 ranks, for bench/goals.sh's
    # memory ceilings, with the traffic memtraffic counts for them)
    if [ -x $bin/membw ]; then
        run membw $bin/membw -M 512 -r $passes -t 1,2
        ncpu=$(nproc 2>/dev/null || echo 2)
        for f in $(for p in $ranks; do for s in $big; do
                     echo "$((s * p)):$(( p < ncpu ? p : ncpu ))"; done; done | sort -u -n); do
            run "membw ${f%:*} MiB" $bin/membw -M ${f%:*} -r $passes -t ${f#*:}
        done
    else
        lack "$bin/membw not built: no membw rows"
    fi
    if [ -x $bin/memtraffic ]; then
        run memtraffic $bin/memtraffic -p threads,shm -n $ranks_csv -c allreduce \
            -s $(for s in $big; do printf '%sM,' $s; done | sed 's/,$//')
    else
        lack "$bin/memtraffic not built: no memtraffic rows"
    fi

    # --- the TCP loopback's own ceiling --------------------------------------
    if [ -x $bin/tcpstream ]; then
        run tcpstream $bin/tcpstream -s 8M
    else
        lack "$bin/tcpstream not built: no tcpstream rows"
    fi
} | tee "$tmp"
mv "$tmp" "$out"
say "table saved to $out"
status=0
grep -q failed "$flags" 2>/dev/null && status=1
if grep -q missing "$flags" 2>/dev/null && [ "${CI:-}" = true ]; then
    say "CI: a peer is missing"; status=1
fi
rm -f "$flags"
exit $status
