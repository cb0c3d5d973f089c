#!/bin/sh
# bench/goals.sh - the performance goals, each against a ceiling or a peer
# measured in the same run, every figure the median of three passes.
#
#   sh bench/goals.sh run [quick|full] [OUT]   measure (OUT: bench/results/
#                                              goals.tsv), then print the goals
#   sh bench/goals.sh TABLE...                 print the goals of tables made
#                                              before (several: medians across)
#
# THE RUN. GOALS_PASSES (3) passes, one after another, so that a noisy
# spell on a shared machine lands in one pass of a row and the median
# drops it; AUTO is timed before the forced algorithms in odd passes and
# after them in even ones. Each pass: every coll port's all-reduce with AUTO and every
# forced algorithm (full: every collective on the threads port too), Open
# MPI's own all-reduce and coll over the MPI port in the same mpirun,
# coll's persistent calls at 8 B when bench_coll has them (-P 1), the raw
# TCP loopback stream (tcpstream) and the memory bandwidth (membw) over
# arrays as large as each ceiling row's buffers, the reduce-scatter and
# all-gather over windows of the threads and shm ports at those rows' sizes
# (full: shm; the threads rows of every collective have them), and the
# memory floor (bench/floor -b, when built; -c allreduce,reduce_scatter,
# allgather where its usage lists -c) at those sizes. Once: the memory traffic
# of the algorithm AUTO runs at each ceiling row, and AUTO's picks
# (memtraffic; both are counts, not timings).
#   quick  (1-2 min) all-reduce (and over windows reduce-scatter and all-gather
#                    at 8 MiB); ranks 2 and 4; 8 B, 2 KiB, 64 KiB, 1 MiB,
#                    8 MiB; 10 ms a row
#   full   (14 min quiet, 26 loaded) all-reduce and the five other collectives (threads)
#                    8 B..64 MiB, and 256 MiB with AUTO; 20 ms a row
#
# THE GOALS (all-reduce unless said, float32 sum, call checks on unless said):
#   mem   threads and shm ports, >= 8 MiB, 2 and 4 ranks: busbw / the
#         memory ceiling of the algorithm AUTO runs          >= 0.8
#           ceiling time = C / M + R / A
#         C, R: bytes the call copies and reduces on all ranks together
#         (memtraffic: the port's deliveries, one copy each, and coll.h's
#         own copies and reductions, counted while it runs); M, A: membw's
#         memcpy and add rates (bytes per second, min(ranks, cores)
#         threads) over arrays as large as the call's buffers (ranks x
#         bytes). With one bandwidth W for both, this is
#           ceiling busbw = W / ((2C + 3R) / (busbw factor x bytes))
#         the streaming bandwidth over the bytes of memory traffic the
#         algorithm moves per byte of busbw (a copy reads and writes, a
#         reduction reads two and writes one).
#   tcp   tcp port, >= 8 MiB, 2 and 4 ranks: busbw / (L / ranks) >= 0.85
#         L: the loopback's capacity, the larger of tcpstream's exchange
#         (both ways at once) and one-way rates, bytes per second through
#         the loopback in all directions; with the port's own socket
#         settings. At busbw B every rank sends B per second: p x B in all.
#   8B    8 B, 2 ranks, time / Open MPI: threads and shm     <= 1.0
#   pers  the same with persistent calls (bench_coll -P 1)   <= 0.8
#         (the run passes -P 1 when bench_coll's usage has a line that
#         starts with "-P"; the rows it prints, whatever their impl, are
#         renamed coll-threads-persist / coll-shm-persist: -P 1 means each
#         row's calls are one coll_prepare, then coll_restart per call)
#   p4    4 ranks, worst size, time / Open MPI: tcp          <= 5
#         (and threads, shm, mpi <= 2: the earlier goal, kept)
#   auto  AUTO / the fastest forced algorithm, every (port, collective,
#         ranks, size) row with forced rows: share within 1.10 >= 95 %,
#         worst <= 1.5; every row over 1.10 is listed after the table with
#         AUTO's pick and the fastest algorithm. Two readings follow (not
#         goals): AUTO's pick timed as a forced row against the fastest
#         (the choice alone), and the noise floor, AUTO against its own
#         pick timed forced (what the machine's noise lets the goal reach),
#         both from 1 KiB (smaller calls ride in the check round).
#   win   windows (coll_window.h; rows coll-<port>-win): all-reduce at
#         >= 8 MiB / the floor below >= 0.8 at 2 ranks, >= 0.6 at 4; at
#         8 B, 2 ranks, time / Open MPI <= 0.5 (the input rides in the
#         records there: one sync, COLL_WINDOW_INLINE), beside the floor
#         at 8 B over Open MPI (a reading: one bare spin barrier); reduce-scatter and
#         all-gather, threads and shm, 2 and 4 ranks, every size >= 8 MiB:
#         floor time of the same collective / coll time >= 0.8 (a size
#         without both rows, or no rows at all: not measured, said in the
#         row; the run times shm at 4 ranks up to 32 MiB, as 64 MiB does
#         not fit a rank's part of the heap)
#   thr   the threads port without windows against the shm port, AUTO,
#         every size >= 64 KiB, 2 and 4 ranks: worst time ratio <= 1.0
#   spread  the threads port, 2 ranks, 8, 32 and 128 B: five runs back
#         to back each pass (rows coll-threads-spread), max / min of all
#         of them <= 1.5 (never bimodal)
#   floor (a reading, not a goal) threads and shm ports, 2 and 4 ranks, at
#         the ceiling rows' sizes: time / the direct all-reduce with no
#         library over shared buffers in the same run (bench/floor.c,
#         rows impl floor; reduce a 1/p share from every input, a
#         barrier, copy the other sums: the least traffic and hand-offs);
#         and the reduce-scatter and all-gather of the windows (of the
#         ports without them too, where the tables have their rows) against
#         the floor of the same collective (one bare loop, one barrier)
#   peer  where the tables have them: 8 MiB at 2 ranks, best port / Open
#         MPI >= 1; coll-mpi / Open MPI >= 1 at >= 1 MiB (worst size);
#         coll-tcp / the best Gloo algorithm >= 2 at >= 1 MiB (worst size)
# Rows measured with the call checks off (coll-<port>-c0, make bench) get
# the 8B and p4 goals again, under checks "off".
#
# Prints: checks, goal, case, value, target, met (met / not met / not
# measured); then the AUTO rows over 1.10.
B=${B:-build}
bin=$B/bench

# ---- the run ---------------------------------------------------------------
if [ "${1:-}" = run ]; then
    mode=${2:-full}
    out=${3:-bench/results/goals.tsv}
    passes=${GOALS_PASSES:-3}
    OMPI="mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader"
    case $mode in
    quick) T=10; colls=allreduce; sizes=8,2K,64K,1M,8M; big=8M; tmo=300; wports=threads,shm; wsizes=8M; wsizes4=8M ;;
    full)  T=20; colls=allreduce,reduce_scatter,allgather,broadcast,reduce,alltoall
           sizes=std; big=8M,32M,64M,256M; tmo=900; wports=shm
           wsizes=8M,32M,64M; wsizes4=8M,32M ;;
    *) echo "usage: bench/goals.sh run [quick|full] [OUT] | bench/goals.sh TABLE..." >&2; exit 2 ;;
    esac
    for x in bench_coll membw memtraffic tcpstream; do
        [ -x $bin/$x ] || { echo "goals: $bin/$x not built (make bench-bins)" >&2; exit 1; }
    done
    say() { echo "goals: $*" >&2; }
    failed=0
    errf=$(mktemp)
    trap 'rm -f "$errf"' EXIT
    run() {   # run <what> <command...>: a failure is said, never fatal
        what=$1; shift
        t0=$(date +%s)
        timeout $tmo "$@" 2>"$errf"
        rc=$?
        grep -v 'does not run it' "$errf" >&2    # a listed algorithm a collective lacks
        say "$what: $(( $(date +%s) - t0 )) s"
        [ $rc -eq 0 ] || { say "FAILED: $what (exit $rc)"; failed=1; }
    }
    # Every algorithm, AUTO first in odd passes and last in even ones: a
    # row's AUTO and forced cells are timed seconds apart, so a slow spell
    # would otherwise always fall on the same side.
    fwd=$(awk '/#define COLL_ALGO_LIST/,/^$/' coll.h | sed -n 's/.*X([A-Z_0-9]*, *"\([a-z_0-9]*\)").*/\1/p')
    rev=$(echo "$fwd" | awk '{ a[NR] = $0 } END { for (i = NR; i >= 1; i--) printf "%s%s", a[i], (i > 1 ? "," : "") }')
    fwd=$(echo "$fwd" | tr '\n' ',' | sed 's/,$//')
    case ",$fwd," in *,auto,*) ;; *) fwd=all; rev=all ;; esac    # no list found: bench_coll's own order
    have_ompi=0
    [ -x $bin/bench_mpi_ompi ] && command -v mpirun.openmpi >/dev/null && have_ompi=1
    [ $have_ompi = 1 ] || say "MISSING: Open MPI (Debian openmpi-bin libopenmpi-dev): no ompi or coll-mpi rows"
    # what bench_coll knows says its usage: -P (persistent calls), -K (coll_set_cores)
    usage=$($bin/bench_coll -h 2>&1)
    have_pers=0
    echo "$usage" | grep -q -- '^ *-P ' && have_pers=1
    ncpu=$(nproc 2>/dev/null || echo 2)
    # the floor's collectives: reduce-scatter and all-gather too where its usage lists -c
    fcolls=""
    if [ -x $bin/floor ]; then
        if $bin/floor -h 2>&1 | grep -q -- '^ *-c '; then fcolls="-c allreduce,reduce_scatter,allgather"
        else say "MISSING: $bin/floor has no -c: no reduce-scatter or all-gather floor rows"; fi
    fi
    crowded=""                  # the rank counts of the run that outnumber the cores
    if echo "$usage" | grep -q -- '^ *-K '; then
        for p in 2 4; do [ $p -gt $ncpu ] && crowded=${crowded:+$crowded,}$p; done
    fi
    # membw's arrays: one per (ranks x size of a ceiling row, threads)
    footprints=$(for p in 2 4; do for s in $(echo $big | tr ',' ' '); do
        echo "$(( $(echo $s | tr -d M) * p )):$(( p < ncpu ? p : ncpu ))"
    done; done | sort -u -n)
    mkdir -p "$(dirname "$out")"
    tmp=$out.tmp
    t_start=$(date +%s)
    say "$mode run, $passes passes, load: $(cut -d' ' -f1-3 /proc/loadavg)"
    {
        printf 'impl\tcollective\talgo\tranks\tbytes\ttime_us\talgbw_GBps\tbusbw_GBps\tcheck\n'
        # counts, once: what each ceiling row's algorithm copies and reduces, and AUTO's picks
        run memtraffic $bin/memtraffic -p threads,shm -n 2,4 -c allreduce -s $big
        run picks $bin/memtraffic -x -n 2,4 -c $colls -s $sizes
        i=1
        while [ $i -le $passes ]; do
            say "pass $i of $passes"
            algos=$([ $((i % 2)) = 1 ] && echo $fwd || echo $rev)
            run "coll-threads" $bin/bench_coll -p threads -n 2,4 -c $colls -a $algos -s $sizes -T $T
            run "coll-threads-win" $bin/bench_coll -p threads -n 2,4 -c $colls -a auto -s $sizes -T $T -W 1
            run "coll-shm-win" $bin/bench_coll -p shm -n 2,4 -c allreduce -a auto -s $sizes -T $T -W 1
            # reduce-scatter and all-gather over windows at the ceiling rows'
            # sizes up to 64 MiB (bench_coll runs them no larger), for their
            # floor goal (full: the threads rows above have them); 4 ranks
            # up to 32 MiB: at 64 MiB a rank's src and dst do not fit its
            # part of the shm heap (512 MiB / 4), and bench_coll would time
            # coll.h's own calls in rows that say coll-shm-win
            for p in 2 4; do
                ws=$wsizes; [ $p = 4 ] && ws=$wsizes4
                run "rs,ag -W 1 -p $wports -n $p" $bin/bench_coll -p $wports -n $p -c reduce_scatter,allgather \
                    -a auto -s $ws -T $T -W 1
            done
            run "coll-shm-tcp" $bin/bench_coll -p shm,tcp -n 2,4 -c allreduce -a $algos -s $sizes -T $T
            if [ -n "$crowded" ]; then   # AUTO told the cores, where ranks outnumber them (rows coll-<port>-k<n>)
                run "coll-threads -K" $bin/bench_coll -p threads -n $crowded -c $colls -a auto -s $sizes -T $T -K $ncpu
                run "coll-shm-tcp -K" $bin/bench_coll -p shm,tcp -n $crowded -c allreduce -a auto -s $sizes -T $T -K $ncpu
            fi
            [ $mode = full ] && run "coll 256 MiB" $bin/bench_coll -p threads,shm,tcp -n 2,4 \
                -c allreduce -a auto -s 256M -T $T
            if [ $have_ompi = 1 ]; then
                for n in 2 4; do
                    run "ompi+coll-mpi p=$n" $OMPI -np $n $bin/bench_mpi_ompi -i ompi -c allreduce \
                        -a $algos -s $sizes -T $T
                done
            fi
            if [ $have_pers = 1 ]; then
                $bin/bench_coll -p threads,shm -n 2 -c allreduce -a auto -s 8 -T $T -P 1 |
                    awk -F'\t' -v OFS='\t' '$1 ~ /^coll-(threads|shm)/ { split($1, f, "-"); $1 = "coll-" f[2] "-persist" } { print }'
            fi
            # five runs back to back of the small all-reduce over threads
            # without windows: the bimodal goal compares their spread
            for k in 1 2 3 4 5; do
                $bin/bench_coll -p threads -n 2 -c allreduce -a auto -s 8,32,128 -T $T |
                    awk -F'\t' -v OFS='\t' '$1 == "coll-threads" { $1 = "coll-threads-spread" } { print }'
            done
            run tcpstream $bin/tcpstream -s 8M -T 200
            for f in $footprints; do
                run "membw ${f%:*} MiB" $bin/membw -M ${f%:*} -r 5 -t ${f#*:}
            done
            if [ -x $bin/floor ]; then   # the direct collectives with no library (bench/floor.c)
                run floor $bin/floor -b -n 2,4 -s $big -r 3 -T $T $fcolls
                run "floor 8 B" $bin/floor -b -n 2 -s 8 -r 3 -T $T   # what one sync costs with no library
            elif [ $i = 1 ]; then
                say "MISSING: $bin/floor (make $bin/floor): no floor rows"
            fi
            i=$((i + 1))
        done
    } >"$tmp"
    mv "$tmp" "$out"
    say "$(($(wc -l <"$out") - 1)) rows in $out, $(( $(date +%s) - t_start )) s, load: $(cut -d' ' -f1-3 /proc/loadavg)"
    sh "$0" "$out"
    rc=$?
    [ $failed = 0 ] || exit 1
    exit $rc
fi

# ---- the goals from tables -------------------------------------------------
[ $# -ge 1 ] || { echo "usage: bench/goals.sh run [quick|full] [OUT] | bench/goals.sh TABLE..." >&2; exit 2; }
awk -F'\t' '
FNR == 1 { next }
$9 == "ok" {
    k = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
    n[k]++; v[k, n[k]] = $6 + 0; seen[k] = 1; impls[$1] = 1; ic[$1, $2] = 1
    nb[k]++; vb[k, nb[k]] = $7 + 0; vc[k, nb[k]] = $8 + 0     # the rate columns, for membw/tcpstream
    if ($1 ~ /^memtraffic-/) { tc_algo[$1, $2, $4, $5] = $3; tc_c[$1, $2, $4, $5] = $7 + 0; tc_r[$1, $2, $4, $5] = $8 + 0 }
    if ($1 == "pick") pick[$2, $4, $5] = $3
}
$9 != "ok" && NF >= 9 { bad[$1 " " $2 " " $3 " p=" $4 " " $5 " B"] = 1 }
function sortmed(a, m,    i, j, t) {
    for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function med(k,    i, m, a) {
    m = n[k]; if (m == 0) return -1
    for (i = 1; i <= m; i++) a[i] = v[k, i]
    return sortmed(a, m)
}
function medcol(k, col,    i, m, a) {     # median of column 7 (col 7) or 8 (col 8)
    m = nb[k]; if (m == 0) return -1
    for (i = 1; i <= m; i++) a[i] = col == 7 ? vb[k, i] : vc[k, i]
    return sortmed(a, m)
}
function tc(impl, coll, algo, p, b) { return med(impl SUBSEP coll SUBSEP algo SUBSEP p SUBSEP b) }
function t(impl, algo, p, b) { return tc(impl, "allreduce", algo, p, b) }
function factor(p) { return 2 * (p - 1) / p }
function mib(b) { return b >= 1048576 ? (b / 1048576) " MiB" : b >= 1024 ? (b / 1024) " KiB" : b " B" }
function gloo(p, b,    best, x, i, al) {
    split("ring ring_chunked halving_doubling", al, " ")
    best = -1
    for (i = 1; i <= 3; i++) { x = t("gloo", al[i], p, b); if (x > 0 && (best < 0 || x < best)) best = x }
    return best
}
function row(goal, what, val, target, ok, fmt) {
    if (val < 0) printf "%s\t%s\t%s\t-\t%s\tnot measured\n", CH, goal, what, target
    else printf "%s\t%s\t%s\t" (fmt ? fmt : "%.2f") "\t%s\t%s\n", CH, goal, what, val, target, ok ? "met" : "not met"
    if (val >= 0) { ngoal++; if (ok) nmet++ }
}
function ratio(a, b) { return (a > 0 && b > 0) ? a / b : -1 }
function sizes_of(impl, p, lo,    k, f) {       # the sizes >= lo with an AUTO all-reduce row
    delete SZ
    for (k in seen) {
        split(k, f, SUBSEP)
        if (f[1] == impl && f[2] == "allreduce" && f[3] == "auto" && f[4] == p && f[5] >= lo) SZ[f[5]] = 1
    }
}
function worst_vs(impl, algo, peer, palgo, p, lo,    k, f, r, w, wb) {   # largest time ratio over sizes >= lo
    w = -1; wb = ""
    for (k in seen) {
        split(k, f, SUBSEP)
        if (f[1] != impl || f[2] != "allreduce" || f[3] != algo || f[4] != p || f[5] < lo) continue
        r = ratio(t(impl, algo, p, f[5]), t(peer, palgo, p, f[5]))
        if (r > w) { w = r; wb = f[5] }
    }
    WB = wb
    return w
}
# memory ceiling rows
function mem_goal(port, p,    b, x, key, C, R, thr, M, A, tmin, r, al) {
    sizes_of("coll-" port, p, 8388608)
    for (b = 8388608; b <= 1073741824; b *= 2) if (b in SZ) {
        x = t("coll-" port, "auto", p, b) * 1e-6
        key = "memtraffic-" port SUBSEP "allreduce" SUBSEP p SUBSEP b
        thr = p < NCPU ? p : NCPU
        M = medcol("membw" SUBSEP "memcpy" SUBSEP "threads" SUBSEP thr SUBSEP (p * b), 7)
        A = medcol("membw" SUBSEP "add" SUBSEP "threads" SUBSEP thr SUBSEP (p * b), 7)
        if (!(key in tc_c) || M <= 0 || A <= 0) {
            row("mem", "p=" p " " mib(b) " coll-" port ": no memtraffic or membw row", -1, ">= 0.8")
            continue
        }
        C = tc_c[key] * b; R = tc_r[key] * b; al = tc_algo[key]
        tmin = C / (M * 1e9) + R / (A * 1e9)
        r = ratio(tmin, x)
        row("mem", sprintf("p=%d %s coll-%s, %s: %.2f B traffic / busbw B, ceiling %.2f GB/s, busbw %.2f", p, mib(b), port, al,
            (2 * C + 3 * R) / (factor(p) * b), factor(p) * b / tmin / 1e9, factor(p) * b / x / 1e9), r, ">= 0.8", r >= 0.8)
    }
}
function tcp_goal(p,    b, x, L, Lx, Lo, r) {
    Lx = medcol("tcpstream" SUBSEP "exchange" SUBSEP "loopback" SUBSEP 2 SUBSEP 8388608, 8)
    Lo = medcol("tcpstream" SUBSEP "oneway" SUBSEP "loopback" SUBSEP 2 SUBSEP 8388608, 8)
    L = Lx > Lo ? Lx : Lo
    sizes_of("coll-tcp", p, 8388608)
    for (b = 8388608; b <= 1073741824; b *= 2) if (b in SZ) {
        x = factor(p) * b / t("coll-tcp", "auto", p, b) / 1e3      # busbw, GB/s
        r = L > 0 ? x / (L / p) : -1
        row("tcp", sprintf("p=%d %s coll-tcp: busbw %.2f GB/s, ceiling %.2f (loopback %.2f: exchange %.2f, one-way %.2f)",
            p, mib(b), x, L / p, L, Lx, Lo), r, ">= 0.85", r >= 0.85)
    }
}
# The median time of the fastest forced algorithm on one row (-1: none timed);
# its name in FASTEST.
function fastest(impl, coll, p, b,    rowk, al, x, best) {
    best = -1; FASTEST = ""
    for (rowk in seen) {
        split(rowk, al, SUBSEP)
        if (al[1] != impl || al[2] != coll || al[4] != p || al[5] != b || al[3] == "auto") continue
        x = med(rowk)
        if (best < 0 || x < best) { best = x; FASTEST = al[3] }
    }
    return best
}
function auto_goal(S,    k, f, best, who, x, rowk, al, ta, r, total, over, worst, wrow, share, pk, tp, npk, pkover, nfl, flover) {
    total = 0; over = 0; worst = -1; wrow = ""; nslow = 0
    npk = 0; pkover = 0; nfl = 0; flover = 0
    for (k in seen) {
        split(k, f, SUBSEP)
        if (f[3] != "auto" || substr(f[1], 1, 5) != "coll-" || f[1] ~ /^coll-null/ || f[1] ~ /-persist$/) continue
        if (S == "" && f[1] ~ /-(c0|crc)$/) continue
        if (S != "" && substr(f[1], length(f[1]) - length(S) + 1) != S) continue
        best = fastest(f[1], f[2], f[4], f[5]); who = FASTEST
        if (best < 0) continue
        ta = med(k); r = ta / best; total++
        pk = ((f[2], f[4], f[5]) in pick) ? pick[f[2], f[4], f[5]] : "?"
        tp = (pk != "?" && ((f[1], f[2], pk, f[4], f[5]) in seen)) ? med(f[1] SUBSEP f[2] SUBSEP pk SUBSEP f[4] SUBSEP f[5]) : -1
        if (tp > 0 && f[5] >= 1024) {   # the pick timed as a forced row: the same code as AUTO runs
                                        # (from 1 KiB: below, a small call rides in the check round)
            npk++; if (tp / best > 1.10) pkover++
            nfl++; if (ta / tp > 1.10 || tp / ta > 1.10) flover++
        }
        if (r > 1.10) {
            over++
            slow[++nslow] = sprintf("%s\t%s\t%d\t%d\t%.3f\t%s\t%s\t%.3f\t%.2f", f[1], f[2], f[4], f[5], ta, pk, who, best, r)
            slowkey[nslow] = sprintf("%-16s%-16s%04d%016d", f[1], f[2], f[4], f[5])
        }
        if (r > worst) { worst = r; wrow = f[1] " " f[2] " p=" f[4] " " mib(f[5]) ", fastest " who }
    }
    if (!total) {
        row("auto", "AUTO / fastest forced (no forced rows)", -1, ">= 95 % within 1.10")
        return
    }
    share = 100 * (total - over) / total
    row("auto", sprintf("AUTO within 1.10 of the fastest forced algorithm: %d of %d rows", total - over, total), share, ">= 95 %", share >= 95, "%.1f %%")
    row("auto", "AUTO / fastest forced, worst: " wrow, worst, "<= 1.5", worst <= 1.5)
    # Two readings that tell the choice from the noise (not goals): the
    # AUTO pick timed as a forced row against the fastest (the choice alone,
    # both sides one measurement), and AUTO against its own pick timed
    # forced (the same algorithm twice: the share within 1.10 either way
    # is what the noise of this machine lets the goal above reach). Rows
    # from 1 KiB on: smaller calls ride in the check round, which no
    # forced row runs.
    if (npk) {
        printf "%s\tauto\tthe AUTO pick, timed forced, within 1.10 of the fastest (>= 1 KiB): %d of %d rows\t%.1f %%\t(the choice alone)\t-\n", CH, npk - pkover, npk, 100 * (npk - pkover) / npk
        printf "%s\tauto\tnoise floor: AUTO within 1.10 of its own pick timed forced (>= 1 KiB): %d of %d rows\t%.1f %%\t(what the goal can reach here)\t-\n", CH, nfl - flover, nfl, 100 * (nfl - flover) / nfl
    }
}
# A reading (not a goal): the AUTO call of a port, one collective, against
# the memory floor of the same collective measured in the same run
# (bench/floor.c, impl floor, algo direct: ranks as threads over shared
# buffers, with no library), at the sizes it was run at (those of the
# ceiling rows): the time of the port over that of the floor (1.00: at
# it), and both GB/s of what each rank must read and write once (the
# all-reduce 2n, the reduce-scatter and all-gather n + n/p).
function floor_reading(port, coll, p,    b, fl, x, n, per, name) {
    per = coll == "allreduce" ? "2n" : "n + n/p"
    name = coll == "allreduce" ? "" : " " coll
    for (b = 8; b <= 1073741824; b *= 2) {
        fl = tc("floor", coll, "direct", p, b)
        if (fl <= 0) continue
        n = coll == "allreduce" ? 2 * b : b + b / p
        x = tc("coll-" port, coll, "auto", p, b)
        if (x <= 0) printf "%s\tfloor\tp=%d %s coll-%s%s time / floor: no coll-%s%s row\t-\t(a reading)\t-\n", CH, p, mib(b), port, name, port, name
        else printf "%s\tfloor\tp=%d %s coll-%s%s time / floor (floor %.2f GB/s of %s per rank, coll-%s %.2f)\t%.2f\t(a reading)\t-\n",
            CH, p, mib(b), port, name, n / fl / 1e3, per, port, n / x / 1e3, x / fl
    }
}
# A reading (not a goal): AUTO told the cores (coll_set_cores; bench_coll
# -K, rows coll-<port>-k<n>) against the fastest forced algorithm of the
# same port, on the rows where ranks outnumber the cores, beside plain
# AUTO on the same rows.
function crowded_reading(    k, f, base, best, tk, tp, n, okk, okp, wk, wp) {
    n = okk = okp = 0; wk = wp = -1
    for (k in seen) {
        split(k, f, SUBSEP)
        if (f[3] != "auto" || f[1] !~ /^coll-[a-z]+-k[0-9]+$/) continue
        base = f[1]; sub(/-k[0-9]+$/, "", base)
        best = fastest(base, f[2], f[4], f[5])
        tp = tc(base, f[2], "auto", f[4], f[5])
        if (best <= 0 || tp <= 0) continue
        tk = med(k); n++
        if (tk / best <= 1.10) okk++
        if (tp / best <= 1.10) okp++
        if (tk / best > wk) wk = tk / best
        if (tp / best > wp) wp = tp / best
    }
    if (!n) return
    printf "%s\tauto\tAUTO told the cores (coll_set_cores), rows where ranks outnumber them: within 1.10 on %d of %d (plain AUTO %d), worst %.2f (plain %.2f)\t%.1f %%\t(a reading)\t-\n", CH, okk, n, okp, wk, wp, 100 * okk / n
}
# windows against the floor (>= 8 MiB) and Open MPI (8 B)
function win_goal(port, p,    b, fl, x, r, lim) {
    lim = p == 2 ? 0.8 : 0.6
    for (b = 8388608; b <= 1073741824; b *= 2) {
        fl = t("floor", "direct", p, b); x = t("coll-" port, "auto", p, b)
        if (fl <= 0 || x <= 0) continue
        r = fl / x
        row("win", sprintf("p=%d %s floor / coll-%s time", p, mib(b), port), r, ">= " lim, r >= lim)
    }
    if (p == 2) {
        r = ratio(t("coll-" port, "auto", 2, 8), t("ompi", "default", 2, 8))
        if (r >= 0) row("win", "8 B p=2 time coll-" port " / ompi (inline: one sync)", r, "<= 0.5", r <= 0.5)
    }
}
# Reduce-scatter and all-gather over windows against their own floors
# (bench/floor.c -c: impl floor, algo direct, the row of the collective) at
# every size >= 8 MiB that either has: floor time / coll time >= 0.8 at 2
# and 4 ranks. A size with one of the two rows missing, or no such row at
# all, is said in its row and counted as not measured.
function wcoll_goal(port, coll, p,    k, f, b, fl, x, r, what, any) {
    delete WS
    for (k in seen) {
        split(k, f, SUBSEP)
        if (f[2] == coll && f[4] == p && f[5] >= 8388608 &&
            ((f[1] == "floor" && f[3] == "direct") || (f[1] == "coll-" port && f[3] == "auto"))) WS[f[5]] = 1
    }
    any = 0
    for (b = 8388608; b <= 1073741824; b *= 2) if (b in WS) {
        any = 1
        fl = tc("floor", coll, "direct", p, b); x = tc("coll-" port, coll, "auto", p, b)
        what = sprintf("p=%d %s %s floor / coll-%s time", p, mib(b), coll, port)
        if (fl <= 0) row("win", what ": no floor " coll " row", -1, ">= 0.8")
        else if (x <= 0) row("win", what ": no coll-" port " " coll " row", -1, ">= 0.8")
        else { r = fl / x; row("win", what, r, ">= 0.8", r >= 0.8) }
    }
    if (!any) row("win", sprintf("p=%d >= 8 MiB %s floor / coll-%s time: no floor or coll-%s %s rows", p, coll, port, port, coll), -1, ">= 0.8")
}
# the spread of five back-to-back runs of each small size, all passes
function spread_goal(    k, f, i, lo, hi, r) {
    for (k in seen) {
        split(k, f, SUBSEP)
        if (f[1] != "coll-threads-spread" || f[3] != "auto") continue
        lo = hi = v[k, 1]
        for (i = 2; i <= n[k]; i++) { if (v[k, i] < lo) lo = v[k, i]; if (v[k, i] > hi) hi = v[k, i] }
        r = lo > 0 ? hi / lo : -1
        row("spread", sprintf("p=%d %s coll-threads max / min of %d runs (%.2f / %.2f us)", f[4], mib(f[5]), n[k], hi, lo),
            r, "<= 1.5", r >= 0 && r <= 1.5)
    }
}
function goals(S,    i, j, p, b, x, o, r, best, who, ports, lim, port, wc, mp) {
    split("coll-threads coll-shm coll-tcp coll-mpi", ports, " ")
    split("threads shm threads-win shm-win", mp, " ")     # the in-memory ports, without windows and with
    if (S == "") {
        for (i = 1; i <= 2; i++) for (p = 2; p <= 4; p += 2) mem_goal(mp[i], p)
        for (p = 2; p <= 4; p += 2) tcp_goal(p)
        for (i = 1; i <= 4; i++) for (p = 2; p <= 4; p += 2) floor_reading(mp[i], "allreduce", p)
        # reduce-scatter and all-gather: the windows always, the ports without them where the tables have their rows
        split("reduce_scatter allgather", wc, " ")
        for (j = 1; j <= 2; j++) for (i = 1; i <= 4; i++) {
            if (i <= 2 && !(("coll-" mp[i], wc[j]) in ic)) continue
            for (p = 2; p <= 4; p += 2) floor_reading(mp[i], wc[j], p)
        }
        for (p = 2; p <= 4; p += 2) {
            win_goal("threads-win", p)
            if ("coll-shm-win" in impls) win_goal("shm-win", p)
            r = ratio(t("floor", "direct", 2, 8), t("ompi", "default", 2, 8))
            if (p == 2 && r >= 0) printf "%s\twin\t8 B p=2 time floor / ompi (a bare loop, one spin barrier, no library: the least one sync costs here)\t%.2f\t(a reading)\t-\n", CH, r
            r = worst_vs("coll-threads", "auto", "coll-shm", "auto", p, 65536)
            if (r >= 0) row("thr", "p=" p " >= 64 KiB worst time coll-threads / coll-shm (at " mib(WB) ")", r, "<= 1.0", r <= 1.0)
        }
        for (j = 1; j <= 2; j++) for (i = 3; i <= 4; i++) for (p = 2; p <= 4; p += 2)
            wcoll_goal(mp[i], wc[j], p)
        spread_goal()
    }
    for (i = 1; i <= 2; i++) {
        r = ratio(t(ports[i] S, "auto", 2, 8), t("ompi", "default", 2, 8))
        row("8B", "8 B p=2 time " ports[i] S " / ompi", r, "<= 1.0", r >= 0 && r <= 1.0)
    }
    if (S == "")
        for (i = 1; i <= 2; i++) {
            port = ports[i] "-persist"
            r = ratio(t(port, "auto", 2, 8), t("ompi", "default", 2, 8))
            if (r < 0 && PERS_ABSENT) printf "%s\tpers\t8 B p=2 time %s / ompi\t-\t<= 0.8\tnot measured: %s\n", CH, port,
                PERS_API ? "bench_coll has no -P (coll.h has coll_prepare/coll_restart)" : "no persistent API"
            else row("pers", "8 B p=2 time " port " / ompi", r, "<= 0.8", r >= 0 && r <= 0.8)
        }
    for (i = 1; i <= 4; i++) {
        if (i == 4 && S != "") continue
        lim = ports[i] == "coll-tcp" ? 5 : 2
        r = worst_vs(ports[i] S, "auto", "ompi", "default", 4, 0)
        row("p4", "p=4 worst time " ports[i] S " / ompi (at " mib(WB) ")", r, "<= " lim, r >= 0 && r <= lim)
    }
    if (S == "") {
        auto_goal("")
        crowded_reading()
        # the peers, where the tables have them
        o = t("ompi", "default", 2, 8388608); best = -1; who = ""
        for (i = 1; i <= 4; i++) { x = t(ports[i], "auto", 2, 8388608); if (x > 0 && (best < 0 || x < best)) { best = x; who = ports[i] } }
        r = ratio(o, best)
        if (r >= 0) row("peer", "8 MiB p=2 busbw " who " / ompi", r, ">= 1.0", r >= 1)
        for (p = 2; p <= 4; p += 2) {
            r = worst_vs("coll-mpi", "auto", "ompi", "default", p, 1048576)
            if (r >= 0) row("peer", "p=" p " >= 1 MiB busbw coll-mpi / ompi, worst (" mib(WB) ")", 1 / r, ">= 1.0", 1 / r >= 1)
            worst = -1; wb = ""
            sizes_of("coll-tcp", p, 1048576)
            for (b in SZ) { x = ratio(gloo(p, b), t("coll-tcp", "auto", p, b)); if (x >= 0 && (worst < 0 || x < worst)) { worst = x; wb = b } }
            if (worst >= 0) row("peer", "p=" p " >= 1 MiB busbw coll-tcp / best gloo, worst (" mib(wb) ")", worst, ">= 2", worst >= 2)
        }
        x = t("coll-null", "auto", 2, 8)
        if (x > 0) printf "%s\t-\tns per 8 B all-reduce, null port, p=2 (coll-null)\t%.0f\t-\t-\n", CH, x * 1e3
    }
}
END {
    printf "checks\tgoal\tcase\tvalue\ttarget\tmet\n"
    CH = "on"; goals("")
    if (("coll-threads-c0" in impls) || ("coll-shm-c0" in impls) || ("coll-tcp-c0" in impls)) { CH = "off"; goals("-c0") }
    for (k in bad) printf "-\tcheck\t%s\tFAIL\tok\tnot met\n", k
    printf "# %d of %d goal rows met\n", nmet, ngoal
    if (nslow) {
        for (i = 2; i <= nslow; i++) {
            x = slow[i]; y = slowkey[i]
            for (j = i - 1; j >= 1 && slowkey[j] > y; j--) { slow[j + 1] = slow[j]; slowkey[j + 1] = slowkey[j] }
            slow[j + 1] = x; slowkey[j + 1] = y
        }
        printf "# AUTO rows over 1.10 (medians across passes)\n"
        printf "impl\tcollective\tranks\tbytes\tauto_us\tauto_picks\tfastest\tfastest_us\tauto/fastest\n"
        for (i = 1; i <= nslow; i++) print slow[i]
    }
}' NCPU="$(nproc 2>/dev/null || echo 2)" PERS_ABSENT="$($bin/bench_coll -h 2>&1 | grep -q -- '^ *-P ' || echo 1)" \
    PERS_API="$(grep -q '^COLL_API int coll_restart' coll.h 2>/dev/null && echo 1)" "$@"
