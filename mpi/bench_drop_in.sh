#!/usr/bin/env bash
# bench_drop_in.sh - the drop-in's benchmark and its tuning run
#
#   bash mpi/bench_drop_in.sh [build-dir] bench   (make bench-mpi-drop-in)
#       allreduce, bcast, allgather, 8 B to 64 MiB, Open MPI and MPICH,
#       2 and 4 ranks: plain MPI (PMPI_*) against the same calls through
#       the preloaded library with its shipped thresholds, one run each;
#       a table of the times and their ratio. $B/mpi/bench.txt keeps it.
#   bash mpi/bench_drop_in.sh [build-dir] tune    (make mpi-drop-in-tune)
#       every routed collective, plain against always routed
#       (COLL_MPI_MIN=0); rewrites mpi/thresholds_openmpi.h and
#       mpi/thresholds_mpich.h: per collective and rank count, the smallest
#       measured size from which coll was at least as fast at every larger
#       measured size (-1: never). Ranks measured: DI_TUNE_RANKS ("2 4");
#       3 takes the larger of its neighbours' thresholds, counts above the
#       largest measured never route. Rebuild the libraries afterwards, or
#       use the same table without rebuilding: it is also written to
#       $B/mpi/thresholds_openmpi.txt and thresholds_mpich.txt, for
#       COLL_MPI_THRESHOLDS=path (read at MPI_Init).
#   bash mpi/bench_drop_in.sh [build-dir] tables  the tables again from the
#       last tuning run's $B/mpi/tune.tsv
#   bash mpi/bench_drop_in.sh [build-dir] calibrated DIR
#       (make bench-mpi-drop-in-calibrated, after coll_mpi_tune wrote
#       DIR/mpi-thresholds-<mpi>): every routed collective, 8 B to 64 MiB,
#       both MPIs, 2 and 4 ranks, plain MPI against preloaded with
#       COLL_MPI_THRESHOLDS=DIR/mpi-thresholds-<mpi>; the median of 5
#       rounds whose order alternates (bench_drop_in -m); a table of the
#       ratios plain / preloaded, bold where the file routes.
#       $B/mpi/calibrated.txt keeps it.
# Keep the machine quiet; `uptime` goes into the output.
set -u
B=${1:-build}
MODE=${2:-bench}
DIR=${3:-$B/mpi/calibrated}
ROOT=$(pwd)
OMPI_RUN="mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader"
RANKS=${DI_TUNE_RANKS:-2 4}
{ [ "$MODE" = bench ] || [ "$MODE" = calibrated ]; } && RANKS="2 4"
out=$B/mpi/$([ "$MODE" = tables ] && echo tune || echo "$MODE").tsv
[ "$MODE" = tables ] || : >"$out"
echo "# $(date -u '+%F %T') UTC, $(nproc) cores, load: $(uptime | sed 's/.*load average: //')"
for impl in ompi mpich; do
    [ "$MODE" = tables ] && break
    lib=$ROOT/$B/lib/libcoll_mpi_$([ $impl = ompi ] && echo openmpi || echo mpich).so
    for np in $RANKS; do
        name=$([ $impl = ompi ] && echo openmpi || echo mpich)
        if [ "$MODE" = bench ]; then args=(-k allreduce,bcast,allgather -s 8:67108864 -t 10 -r 5); env=(COLL_MPI_THRESHOLDS=)
        elif [ "$MODE" = calibrated ]; then
            [ -f "$DIR/mpi-thresholds-$name" ] || { echo "no $DIR/mpi-thresholds-$name: run coll_mpi_tune first (make mpi-tune TUNE_DIR=$DIR)"; exit 1; }
            args=(-k all -s 8:67108864 -t 10 -r 5 -m); env=(COLL_MPI_THRESHOLDS="$DIR/mpi-thresholds-$name")
        else args=(-k all -s 8:67108864 -t 10 -r 3); env=(COLL_MPI_MIN=0); fi
        if [ $impl = ompi ]; then
            run=($OMPI_RUN -np "$np" -x LD_PRELOAD="$lib")
            for e in "${env[@]}"; do run+=(-x "$e"); done
        else
            run=(mpirun.mpich -np "$np" -genv LD_PRELOAD "$lib")
            for e in "${env[@]}"; do run+=(-genv "${e%%=*}" "${e#*=}"); done
        fi
        echo "# $impl, $np ranks: ${run[*]} $B/mpi/bench_drop_in.$impl ${args[*]}" >&2
        timeout 900 "${run[@]}" "$B/mpi/bench_drop_in.$impl" "${args[@]}" | grep -v '^#' |
            sed "s/^/$impl /" >>"$out" || { echo "bench_drop_in failed ($impl, $np ranks)"; exit 1; }
    done
done

if [ "$MODE" = calibrated ]; then
    python3 - "$out" "$DIR" <<'EOF' | tee "$B/mpi/calibrated.txt"
import sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 6]
kinds = ["allreduce", "bcast", "reduce", "allgather", "allgatherv", "gather", "gatherv", "scatter",
         "scatterv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block", "scan", "exscan", "barrier"]
local = {"gatherv", "scatterv", "alltoallv", "barrier"}
def ranges(name):       # the calibrated file, version 2: {(kind, ranks): [(lo, hi)]}
    t = {}
    for l in open("%s/mpi-thresholds-%s" % (sys.argv[2], name)):
        w = l.split()
        if len(w) < 3 or l.startswith("#") or w[0] == "coll-mpi-thresholds": continue
        t[(w[0], int(w[1]))] = [] if w[2] == "never" else [
            (int(a), int(b) if b else 1 << 62) for a, b in (r.split("-") for r in w[2:])]
    return t
thr = {"ompi": ranges("openmpi"), "mpich": ranges("mpich")}
def routed(impl, p, size, k):
    b = 0 if k in local else size
    return any(lo <= b <= hi for lo, hi in thr[impl].get((k, min(p, 8)), []))
def fmt(b):
    return "%d M" % (b >> 20) if b >= 1 << 20 else "%d K" % (b >> 10) if b >= 1024 else "%d" % b
grid, b = [], 8
while b <= 64 << 20:
    grid.append(b)
    b *= 8 if b < 256 << 10 else 4
print("| MPI | ranks | collective | " + " | ".join(fmt(g) for g in grid) + " |")
print("|---|---|---|" + "---|" * len(grid))
stat = {True: [], False: []}
for impl in ["ompi", "mpich"]:
    for p in sorted({int(r[2]) for r in rows if r[0] == impl}):
        for k in kinds:
            pts = sorted((int(r[3]), float(r[4]), float(r[5])) for r in rows if r[0] == impl and int(r[2]) == p and r[1] == k)
            if not pts: continue
            cells = []
            for size, a, d in pts:
                x = a / d if d > 0 else 0
                on = routed(impl, p, size, k)
                stat[on].append((x, impl, p, k, size))
                cells.append("**%.2f**" % x if on else "%.2f" % x)
            cells += ["-"] * (len(grid) - len(cells))
            print("| %s | %d | %s | %s |" % ("Open MPI" if impl == "ompi" else "MPICH", p, k, " | ".join(cells)))
print()
for on in (True, False):
    v = sorted(stat[on])
    if not v:
        print("%s: no cells" % ("routed" if on else "not routed"))
        continue
    slow = [c for c in v if c[0] < 0.95]
    print("%s: %d cells, ratio min %.2f (%s, %d ranks, %s, %d B), median %.2f, max %.2f; below 0.95: %d" %
          ("routed" if on else "not routed (the MPI library both ways)", len(v), v[0][0], v[0][1], v[0][2], v[0][3],
           v[0][4], v[len(v) // 2][0], v[-1][0], len(slow)))
EOF
    exit 0
fi

if [ "$MODE" = bench ]; then
    python3 - "$out" <<'EOF' | tee "$B/mpi/bench.txt"
import re, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 6]
t = {}
for impl, kind, p, size, plain, drop in rows:
    t[(impl, int(p), int(size), kind)] = (float(plain), float(drop))
def table(name):      # the shipped thresholds: which cells the library routed
    m = {}
    for k, vals in re.findall(r"/\* (\w+) +\*/ \{([^}]*)\}", open("mpi/thresholds_%s.h" % name).read()):
        m[k] = [-1 if v.strip() == "DI_NEVER" else int(v) for v in vals.split(",")]
    return m
thr = {"ompi": table("openmpi"), "mpich": table("mpich")}
def routed(impl, p, size, k):
    v = thr[impl][k][min(p, 8)]
    return v >= 0 and size >= v
def fmt(b):
    return "%d MiB" % (b >> 20) if b >= 1 << 20 else "%d KiB" % (b >> 10) if b >= 1024 else "%d B" % b
kinds = ["allreduce", "bcast", "allgather"]
print("| MPI | ranks | bytes | " + " | ".join("%s plain / drop-in us (x)" % k for k in kinds) + " |")
print("|---|---|---|" + "---|" * len(kinds))
worst = {True: 9e9, False: 9e9}
big = []
for impl in ["ompi", "mpich"]:
    for p in sorted({k[1] for k in t if k[0] == impl}):
        for size in sorted({k[2] for k in t if k[0] == impl and k[1] == p}):
            cells = []
            for k in kinds:
                if (impl, p, size, k) not in t: cells.append("-"); continue
                a, b = t[(impl, p, size, k)]
                r = a / b if b > 0 else 0
                on = routed(impl, p, size, k)
                worst[on] = min(worst[on], r)
                if size >= 8 << 20 and on: big.append(r)
                c = "%.1f / %.1f (%.2f)" % (a, b, r)
                cells.append("**%s**" % c if on else c)
            print("| %s | %d | %s | %s |" % ("Open MPI" if impl == "ompi" else "MPICH", p, fmt(size), " | ".join(cells)))
print()
print("Bold: routed through coll by the shipped thresholds; the other cells run the MPI")
print("library both ways (their ratio is the wrapper's cost plus the machine's noise).")
print("Worst ratio plain/drop-in: routed %.2f, not routed %.2f; routed at >= 8 MiB: %s." %
      (worst[True], worst[False], "min %.2f, max %.2f (%d cells)" % (min(big), max(big), len(big)) if big else "none"))
EOF
    exit 0
fi

# tune: the threshold tables
python3 - "$out" "$RANKS" "$B" <<'EOF'
import sys, time
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 6]
measured = [int(x) for x in sys.argv[2].split()]
kinds = ["allreduce", "bcast", "reduce", "allgather", "allgatherv", "gather", "gatherv", "scatter",
         "scatterv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block", "scan", "exscan",
         "barrier"]
local = {"gatherv", "scatterv", "alltoallv", "barrier"}   # sizes no rank knows whole: all or nothing
NEVER = -1
for impl, name in [("ompi", "openmpi"), ("mpich", "mpich")]:
    thr = {}
    for k in kinds:
        for p in measured:
            pts = sorted((int(s), float(a), float(b)) for i, kk, pp, s, a, b in rows
                         if i == impl and kk == k and int(pp) == p)
            best = NEVER
            for j in range(len(pts) - 1, -1, -1):      # from the largest size down
                if pts[j][2] <= pts[j][1]: best = pts[j][0]
                else: break
            if k in local: best = 0 if pts and best == pts[0][0] else NEVER
            elif pts and best == pts[0][0]: best = 0   # faster everywhere measured
            thr[(k, p)] = best
    def at(k, p):
        if p in measured: return thr[(k, p)]
        lo = [m for m in measured if m < p]; hi = [m for m in measured if m > p]
        if not lo or not hi: return NEVER
        a, b = thr[(k, max(lo))], thr[(k, min(hi))]
        return NEVER if a == NEVER or b == NEVER else max(a, b)
    lines = ["/* thresholds_%s.h - from `make mpi-drop-in-tune`, %s UTC: the smallest" % (name, time.strftime("%Y-%m-%d %H:%M", time.gmtime())),
             "   size (bytes of the call's largest buffer) routed through coll, per",
             "   collective, indexed by rank count 1..8 (8: 8 and more; 0 unused);",
             "   DI_NEVER: never.",
             "   Measured at %s ranks; see mpi/bench_drop_in.sh for the rule. */" % ", ".join(map(str, measured)),
             "static const long long di_min_%s[DI_KINDS][9] = {" % name]
    body = []
    for k in kinds:
        vals = [at(k, p) if p > 0 else NEVER for p in range(0, 9)]   # index 0 unused
        body.append("    /* %-20s */ { %s }" % (k, ", ".join("%d" % v if v != NEVER else "DI_NEVER" for v in vals)))
    lines.append(",\n".join(body))
    lines.append("};")
    open("mpi/thresholds_%s.h" % name, "w").write("\n".join(lines) + "\n")
    # the same table as a file for COLL_MPI_THRESHOLDS (read at MPI_Init)
    txt = ["coll-mpi-thresholds 1",
           "# from `make mpi-drop-in-tune`, %s UTC, %s; measured at %s ranks" %
           (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), name, ", ".join(map(str, measured))),
           "# collective, then the smallest size routed (bytes, or never) at 1 2 3 4 5 6 7 8+ ranks"]
    for k in kinds:
        txt.append("%-22s %s" % (k, " ".join("%d" % at(k, p) if at(k, p) != NEVER else "never" for p in range(1, 9))))
    open("%s/mpi/thresholds_%s.txt" % (sys.argv[3], name), "w").write("\n".join(txt) + "\n")
    print("mpi/thresholds_%s.h, %s/mpi/thresholds_%s.txt:" % (name, sys.argv[3], name))
    for k in kinds:
        print("  %-22s %s" % (k, "  ".join("%d:%s" % (p, thr[(k, p)]) for p in measured)))
EOF
