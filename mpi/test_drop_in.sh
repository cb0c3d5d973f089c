#!/usr/bin/env bash
# test_drop_in.sh - the MPI drop-in's suite: unchanged MPI programs under
# mpirun with the library preloaded, Open MPI and MPICH, 1 to 8 ranks.
#
#   bash mpi/test_drop_in.sh [build-dir]       (make test-mpi-drop-in)
#
# Runs build/mpi/test_drop_in.{ompi,mpich} with every call routed
# (COLL_MPI_MIN=0) and verified against PMPI (COLL_MPI_VERIFY=1); once with
# the shipped thresholds, once with routing switched off, under
# MPI_THREAD_MULTIPLE (nothing may route), once over the MPI transport; a
# run whose verify must catch a spoiled byte; and the MindSpore seed in
# plain MPI, preloaded and linked before the MPI library (plus the
# coll-based seed, which embeds its own coll.h, beside the library); fake
# hosts (COLL_MPI_TEST_HOSTS) through coll_hier; the flight recorder
# (COLL_MPI_RECORD). Each program's checks count, and so
# does each check made here on a run (exit status, counts routed, the
# seed's output). Ends with "mpi-drop-in: N passed, N failed" and the share
# of calls routed in the forced-routing runs.
set -u
B=${1:-build}
ROOT=$(pwd)
LIB_OMPI=$ROOT/$B/lib/libcoll_mpi_openmpi.so
LIB_MPICH=$ROOT/$B/lib/libcoll_mpi_mpich.so
OMPI_RUN="mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader"
MPICH_RUN="mpirun.mpich"
LOGS=$B/mpi/logs
# the compiled table, whatever the user calibrated (make mpi-tune writes
# $XDG_CONFIG_HOME/coll/... or $HOME/.config/coll/..., read when
# COLL_MPI_THRESHOLDS is unset): a config home of the suite's own
mkdir -p "$LOGS/config"
export XDG_CONFIG_HOME="$ROOT/$LOGS/config"
rm -rf "$XDG_CONFIG_HOME/coll"
mkdir -p "$LOGS"
pass=0 fail=0 routed=0 calls=0 reruns=0

ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "  FAILED: $*"; }

# launch IMPL NP LOG VAR=VAL... -- PROGRAM ARGS: under mpirun with the
# library preloaded and the variables given to every rank; the exit status.
# Output and errors both to LOG; the run is killed after $LIMIT seconds
# (300). A run with COLL_MPI_VERBOSE writes its report to LOG.rep.RANK
# (COLL_MPI_LOG): every rank writes a table, and the launcher interleaves
# the ranks' streams in one file, even inside a line.
launch() {
    local impl=$1 np=$2 log=$3 env=() verbose=0 rc
    shift 3
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        case $1 in COLL_MPI_VERBOSE=*) [ $verbose = 2 ] || verbose=1 ;; COLL_MPI_LOG=*) verbose=2 ;; esac
        if [ "$impl" = ompi ]; then env+=(-x "$1"); else env+=(-genv "${1%%=*}" "${1#*=}"); fi
        shift
    done
    shift
    rm -f "$log".rep.*
    if [ $verbose = 1 ]; then
        if [ "$impl" = ompi ]; then env+=(-x COLL_MPI_LOG="$log.rep.%r"); else env+=(-genv COLL_MPI_LOG "$log.rep.%r"); fi
    fi
    launch_log "$impl" "$np" "$log" "${env[@]}" -- "$@"
    rc=$?
    if [ "$impl" = ompi ] && [ $rc -eq 139 ] && ompi_finalize_race "$log"; then
        reruns=$((reruns + 1))
        for f in "$log" "${log%.log}".out.* "${log%.log}".err.*; do [ -f "$f" ] && mv "$f" "$f.crashed"; done
        echo "  (Open MPI's finalize crashed after the run's work was done, exit 139: run once more; $log.crashed)"
        launch_log "$impl" "$np" "$log" "${env[@]}" -- "$@"
        rc=$?
    fi
    return $rc
}
launch_log() {    # IMPL NP LOG ENV-ARGS... -- PROGRAM ARGS: one run, its output to LOG (and $ERR)
    local impl=$1 np=$2 log=$3
    shift 3
    if [ -z "${ERR:-}" ]; then launch_run "$impl" "$np" "$@" >"$log" 2>&1
    else launch_run "$impl" "$np" "$@" >"$log" 2>"$ERR"; fi
}
# ompi_finalize_race LOG: whether the Open MPI run that wrote LOG (and $ERR,
# and the per-rank LOG-less-.log.out.R and .err.R) died of Open MPI 4.1's
# race in MPI_Finalize: its progress thread's event loop calls into a
# component already unloaded while the main thread joins it
# (opal_progress_thread_finalize from orte_finalize; 3-rank runs, 2 jobs
# at a time under load: 3 in about 1150 preloaded, all three cores alike,
# docs/mpi.md). Only a
# run whose work was done (its closing line out), with Open MPI's own
# SIGSEGV message and no frame of the drop-in in what it printed.
ompi_finalize_race() {
    local files=("$1") f
    [ -n "${ERR:-}" ] && files+=("$ERR")
    for f in "${1%.log}".out.* "${1%.log}".err.*; do [ -f "$f" ] && files+=("$f"); done
    grep -qsE '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "${files[@]}" &&
        grep -qs 'Signal: Segmentation fault' "${files[@]}" && ! grep -qs 'libcoll_mpi' "${files[@]}"
}
launch_run() {    # IMPL NP ENV-ARGS... -- PROGRAM ARGS: mpirun itself
    local impl=$1 np=$2 env=()
    shift 2
    while [ "$1" != -- ]; do env+=("$1"); shift; done
    shift
    if [ "$impl" = ompi ]; then
        timeout "${LIMIT:-300}" $OMPI_RUN -np "$np" -x LD_PRELOAD="$LIB_OMPI" "${env[@]}" "$@"
    else
        timeout "${LIMIT:-300}" $MPICH_RUN -np "$np" -genv LD_PRELOAD "$LIB_MPICH" "${env[@]}" "$@"
    fi
}

# routed_of LOG K: from the drop-in's report of the run that wrote LOG (its
# rank 0's, LOG.rep.0), the calls it routed (K=1) or all its calls (K=2)
routed_of() { sed -nE "s/^coll-mpi: routed ([0-9]+) of ([0-9]+) calls.*/\\$2/p" "$1.rep.0" 2>/dev/null; }
# report LOG: every rank's report of that run
report() { cat "$1".rep.* 2>/dev/null; }

# suite IMPL NP MODE WHAT VAR=VAL...: the test program; its checks, its
# exit status, and what the drop-in's report says it routed
suite() {
    local impl=$1 np=$2 mode=$3 what=$4 log line p f r n rc
    shift 4
    log=$LOGS/$impl-np$np-$what.log
    launch "$impl" "$np" "$log" COLL_MPI_VERBOSE=1 "$@" -- "$B/mpi/test_drop_in.$impl" "$what" "$mode"
    rc=$?
    line=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); p=${p:-0}
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/'); f=${f:-0}
    r=$(routed_of "$log" 1); r=${r:-0}
    n=$(routed_of "$log" 2); n=${n:-0}
    pass=$((pass + p)); fail=$((fail + f))
    printf '  %-6s np=%d %-10s %5d checks passed, %d failed; coll routed %d of %d calls\n' \
        "$impl" "$np" "$what" "$p" "$f" "$r" "$n"
    if [ "$rc" -eq 0 ] && [ -n "$line" ]; then ok; else bad "$impl np=$np $what: exit $rc (log $log)"; tail -5 "$log"; fi
    if grep -q 'coll-mpi verify' "$log"; then bad "$impl np=$np $what: verify found a difference"; else ok; fi
    case $what in
    off|threads) if [ "$r" -eq 0 ] && [ "$n" -gt 0 ]; then ok; else bad "$impl np=$np $what: routed $r"; fi ;;
    *)   if [ "$r" -gt 0 ]; then ok; else bad "$impl np=$np $what: nothing routed"; fi ;;
    esac
    case $what in forced*) routed=$((routed + r)); calls=$((calls + n)) ;; esac
}

FORCE="COLL_MPI_MIN=0 COLL_MPI_VERIFY=1"
echo "Open MPI, every call routed and verified"
suite ompi 1 full forced $FORCE
suite ompi 2 full forced $FORCE
suite ompi 3 quick forced $FORCE
suite ompi 4 full forced $FORCE
suite ompi 5 tiny forced $FORCE
suite ompi 8 quick forced $FORCE
echo "MPICH, every call routed and verified"
suite mpich 1 quick forced $FORCE
suite mpich 2 full forced $FORCE
suite mpich 3 quick forced $FORCE
suite mpich 4 tiny forced $FORCE
suite mpich 8 tiny forced $FORCE
echo "the MPI transport (point-to-point on a duplicate), routed and verified"
suite ompi 3 tiny forced-mpi $FORCE COLL_MPI_TRANSPORT=mpi
suite mpich 2 tiny forced-mpi $FORCE COLL_MPI_TRANSPORT=mpi
echo "AUTO told the ranks share one core (COLL_MPI_CORES=1), routed and verified"
suite ompi 5 tiny forced-cores $FORCE COLL_MPI_CORES=1
suite mpich 3 tiny forced-cores $FORCE COLL_MPI_CORES=1
echo "the same told on rank 0 only: no rank is told (as many calls routed as untold)"
cores_rank0() {   # IMPL: rank 0 alone sets COLL_MPI_CORES=1, against the suite told nobody
    local impl=$1 log=$LOGS/$1-np3-cores-rank0.log base=$LOGS/$1-np3-forced-untold.log rc r r0
    suite "$impl" 3 tiny forced-untold $FORCE
    launch "$impl" 3 "$log" $FORCE COLL_MPI_VERBOSE=1 -- sh -c \
        'if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}" = 0 ]; then export COLL_MPI_CORES=1; fi; exec "$0" "$@"' \
        "$B/mpi/test_drop_in.$impl" cores-rank0 tiny
    rc=$?
    r=$(routed_of "$log" 1); r=${r:-0}; r0=$(routed_of "$base" 1); r0=${r0:-0}
    printf '  %-6s np=3 cores on rank 0 only: exit %d, coll routed %d calls (untold: %d)\n' "$impl" "$rc" "$r" "$r0"
    if [ "$rc" -eq 0 ] && [ "$r" -gt 0 ] && [ "$r" -eq "$r0" ] && ! grep -q 'coll-mpi verify' "$log"; then ok
    else bad "$impl np=3 cores on rank 0 only: exit $rc, routed $r, untold $r0 (log $log)"; tail -5 "$log"; fi
}
cores_rank0 ompi
cores_rank0 mpich
echo "the shipped thresholds, verified; routing switched off"
suite ompi 4 quick shipped COLL_MPI_VERIFY=1 COLL_MPI_MIN_ALLREDUCE=1 COLL_MPI_MIN_BARRIER=off
suite mpich 2 quick shipped COLL_MPI_VERIFY=1 COLL_MPI_MIN_ALLREDUCE=1 COLL_MPI_MIN_BARRIER=off
suite ompi 4 tiny off COLL_MPI_ROUTE=0 COLL_MPI_MIN=0
echo "under MPI_THREAD_MULTIPLE nothing routes"
for impl in ompi mpich; do
    suite "$impl" 2 threads threads $FORCE
    if grep -q 'thread level provided: multiple' "$LOGS/$impl-np2-threads.log"; then ok; else bad "$impl: MPI_THREAD_MULTIPLE not provided"; fi
done

echo "MPI's own answer and one road for every rank (mpi/test_agree.c, every call routed, 60 s each)"
# agree IMPL NP CASE VERIFY [VAR=VAL...]: the case completes in time, its
# checks all pass
agree() {
    local impl=$1 np=$2 what=$3 v=$4 log line p f rc
    shift 4
    log=$LOGS/$impl-np$np-agree-$what-v$v.log
    LIMIT=60 launch "$impl" "$np" "$log" COLL_MPI_MIN=0 COLL_MPI_VERIFY="$v" "$@" -- "$B/mpi/test_agree.$impl" "$what"
    rc=$?
    line=$(grep -E "^$what: [0-9]+ passed, [0-9]+ failed" "$log" | tail -1)
    p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/'); p=${p:-0}
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/'); f=${f:-0}
    pass=$((pass + p)); fail=$((fail + f))
    printf '  %-6s np=%d %-6s verify=%s: %3d checks passed, %d failed, exit %d%s\n' "$impl" "$np" "$what" "$v" \
        "$p" "$f" "$rc" "$([ "$rc" -eq 124 ] && echo ' (timed out: a hang)')"
    if [ "$rc" -eq 0 ] && [ -n "$line" ] && [ "$f" -eq 0 ]; then ok; else bad "$impl np=$np agree $what verify=$v (log $log)"; tail -5 "$log"; fi
}
for impl in ompi mpich; do
    for what in alias mixed zero; do
        for v in 0 1; do agree "$impl" 3 "$what" "$v"; done
    done
    agree "$impl" 4 mixed 0
    agree "$impl" 2 zero 0
done
echo "a rank that never joins the shared memory (a test hook): every rank falls back after COLL_MPI_JOIN_MS"
for impl in ompi mpich; do
    agree "$impl" 3 mixed 0 COLL_MPI_TEST_NOJOIN=1 COLL_MPI_JOIN_MS=500 COLL_MPI_VERBOSE=1
    log=$LOGS/$impl-np3-agree-mixed-v0.log r=$(routed_of "$LOGS/$impl-np3-agree-mixed-v0.log" 1)
    if report "$log" | grep -q 'no transport' && [ "$r" = 0 ]; then ok
    else bad "$impl: no join: routed '$r', or no 'no transport' in the report (log $log)"; fi
done

echo "the verbose report: on stderr or in COLL_MPI_LOG files, stdout unchanged, its counts the calls made"
# table_check STDOUT STDERR: the program's "expect RANK COMM KIND N" lines
# against the table's rows (summed over size classes); every row's routed
# plus to-MPI is its calls; each rank's total line is the sum of its rows;
# with VERBOSE=2, as many call lines as calls. Prints the problems found.
table_check() {
    awk '
    FNR == NR { if ($1 == "expect") want[$2 " " $3 " " $4] = $5; next }
    { r = $1; sub(/^coll-mpi\[/, "", r); sub(/\]:$/, "", r) }
    $2 == "communicator" { id = $3; sub(/:$/, "", id); nm = $4; sub(/,$/, "", nm); name[r " " id] = nm; next }
    $2 ~ /^[0-9]+$/ && $3 ~ /^MPI_/ {
        if ($6 + $7 != $5) { print "row of rank " r ": " $6 " + " $7 " != " $5; bad++ }
        got[r " " name[r " " $2] " " $3] += $5; tot[r] += $5; next }
    $2 == "call" { lines[r]++; next }
    $2 == "this" { claim[r] = $(NF - 1); next }
    END {
        for (w in want) if (got[w] != want[w]) { print "rank comm kind " w ": " got[w] + 0 " calls, made " want[w]; bad++ }
        n = 0
        for (r in claim) { n++; if (claim[r] != tot[r]) { print "rank " r ": total " claim[r] ", rows " tot[r]; bad++ }
                           if ((r in lines) && lines[r] != tot[r]) { print "rank " r ": " lines[r] " call lines, " tot[r] " calls"; bad++ } }
        if (n == 0) { print "no table"; bad++ }
        if (length(want) == 0) { print "no expect lines"; bad++ }
    }' "$1" "$2"
}
# each rank's stdout and stderr to files of its own (BASE.out.RANK,
# BASE.err.RANK): the launcher would interleave the ranks' lines
PER_RANK='d=$1; shift; r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}; exec "$0" "$@" >"$d.out.$r" 2>"$d.err.$r"'
for impl in ompi mpich; do
    np=3 base=$LOGS/$impl-count
    rm -f "$base"-*.out.* "$base"-*.err.* "$base".log.*
    launch "$impl" $np "$base-v0.log" -- sh -c "$PER_RANK" "$B/mpi/test_agree.$impl" "$base-v0" count
    rc0=$?
    launch "$impl" $np "$base-v1.log" COLL_MPI_VERBOSE=1 COLL_MPI_LOG= COLL_MPI_MIN_ALLREDUCE=1024 -- \
        sh -c "$PER_RANK" "$B/mpi/test_agree.$impl" "$base-v1" count
    rc1=$?
    launch "$impl" $np "$base-v2.log" COLL_MPI_VERBOSE=2 COLL_MPI_LOG= COLL_MPI_MIN=0 -- \
        sh -c "$PER_RANK" "$B/mpi/test_agree.$impl" "$base-v2" count
    rc2=$?
    launch "$impl" $np "$base-log.log" COLL_MPI_LOG="$base.log.%r" COLL_MPI_MIN=0 -- \
        sh -c "$PER_RANK" "$B/mpi/test_agree.$impl" "$base-log" count
    rc3=$?
    if [ $rc0$rc1$rc2$rc3 = 0000 ]; then ok; else bad "$impl count: exit $rc0 $rc1 $rc2 $rc3 (logs $base-*)"; fi
    for v in v1 v2 log; do          # every rank's stdout as without the report
        same=1
        for ((r = 0; r < np; r++)); do cmp -s "$base-v0.out.$r" "$base-$v.out.$r" || same=0; done
        if [ $same = 1 ] && [ -s "$base-v0.out.0" ]; then ok
        else bad "$impl count: stdout with $v differs from without (logs $base-v0.out.*, $base-$v.out.*)"; fi
    done
    if ! cat "$base-v0.err".* "$base-log.err".* | grep -q coll-mpi; then ok; else bad "$impl count: a report on stderr where none belongs"; fi
    for v in v1 v2; do
        out=$(table_check <(cat "$base-$v.out".*) <(cat "$base-$v.err".*))
        if [ -z "$out" ]; then ok; else bad "$impl count $v: $out"; fi
    done
    out=$(table_check <(cat "$base-log.out".*) <(cat "$base".log.* 2>/dev/null))
    files=$(ls "$base".log.* 2>/dev/null | wc -l)
    if [ -z "$out" ] && [ "$files" -eq $np ] && grep -q '^coll-mpi: routed [0-9]* of [0-9]* calls' "$base.log.0"; then ok
    else bad "$impl count log: $files files; $out"; fi
    if cat "$base-v1.err".* | grep -qE ' MPI_Allreduce +1B-1KiB .* below threshold [0-9]+;' &&
       cat "$base-v2.err".* | grep -qE ' MPI_Allreduce .* op 3;'; then ok
    else bad "$impl count: the reasons (below threshold, op) not in the table"; fi
    echo "  $impl np=$np: stdout unchanged by COLL_MPI_VERBOSE=1, 2 and COLL_MPI_LOG; tables add up ($(cat "$base-v1.err".* | grep -c 'this rank') ranks, $files log files)"
done

echo "COLL_MPI_THRESHOLDS: a thresholds file in place of the compiled table"
# the file's table: allreduce and allgather from 0 bytes, the rest never;
# test_agree count then routes exactly its 7 sum all-reduces and 4
# all-gathers on each rank (the 3 MPI_LAND ones fall back: op)
TH=$LOGS/thresholds.txt
{
    echo "coll-mpi-thresholds 1"
    echo "# a test table"
    for k in allreduce bcast reduce ALLGATHER allgatherv gather gatherv scatter scatterv alltoall alltoallv \
             reduce_scatter reduce_scatter_block scan exscan barrier; do
        case $k in allreduce|ALLGATHER) v="0 0 0 0 0 0 0 0" ;; *) v="never never never never never never never never" ;; esac
        echo "$k  $v"
    done
} >"$TH"
printf 'coll-mpi-thresholds 1\nallreduce 0 0 0 0 0 0 0\n' >"$LOGS/thresholds-bad.txt"     # 7 sizes
for impl in ompi mpich; do
    base=$LOGS/$impl-thr
    launch "$impl" 3 "$base.log" COLL_MPI_VERBOSE=1 COLL_MPI_THRESHOLDS="$TH" -- "$B/mpi/test_agree.$impl" count
    rc=$?
    r=$(routed_of "$base.log" 1); n=$(routed_of "$base.log" 2)
    if [ "$rc" -eq 0 ] && [ "$r" = 33 ] && [ "$n" = 66 ]; then ok; echo "  $impl: the file's table: routed $r of $n calls"
    else bad "$impl thresholds file: exit $rc, routed '$r' of '$n', want 33 of 66 (log $base.log)"; fi
    # a file that is not one: said, and the compiled table as without it
    launch "$impl" 3 "$base-none.log" COLL_MPI_VERBOSE=1 -- "$B/mpi/test_agree.$impl" count
    launch "$impl" 3 "$base-bad.log" COLL_MPI_VERBOSE=1 COLL_MPI_THRESHOLDS="$LOGS/thresholds-bad.txt" -- "$B/mpi/test_agree.$impl" count
    rc=$?
    r=$(routed_of "$base-bad.log" 1); r0=$(routed_of "$base-none.log" 1)
    if [ "$rc" -eq 0 ] && [ -n "$r" ] && [ "$r" = "$r0" ] && grep -q 'thresholds-bad.txt, line 2: not a thresholds file' "$base-bad.log"; then ok
        echo "  $impl: a malformed file: said on stderr, the compiled table kept (routed $r, as without)"
    else bad "$impl malformed thresholds: exit $rc, routed '$r', without '$r0', or no message (log $base-bad.log)"; fi
    launch "$impl" 3 "$base-missing.log" COLL_MPI_THRESHOLDS="$LOGS/no-such-file" -- "$B/mpi/test_agree.$impl" count
    rc=$?
    if [ "$rc" -eq 0 ] && grep -q 'cannot read .*no-such-file' "$base-missing.log"; then ok; else bad "$impl missing thresholds file: exit $rc (log $base-missing.log)"; fi
    # the file on rank 0 only: the ranks agree on the larger value (no hang)
    LIMIT=60 launch "$impl" 3 "$base-rank0.log" COLL_MPI_VERBOSE=1 -- sh -c \
        'if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}" = 0 ]; then export COLL_MPI_THRESHOLDS="$1"; fi; shift; exec "$0" "$@"' \
        "$B/mpi/test_agree.$impl" "$TH" count
    rc=$?
    r=$(routed_of "$base-rank0.log" 1)
    if [ "$rc" -eq 0 ] && report "$base-rank0.log" | grep -q "differ from another's" && [ -n "$r" ] && [ "$r" -le "${r0:-0}" ]; then ok
        echo "  $impl: the file on rank 0 only: agreed at MPI_Init, routed $r (the compiled table alone: $r0)"
    else bad "$impl thresholds on rank 0 only: exit $rc, routed '$r', compiled '$r0' (log $base-rank0.log)"; fi
done

echo "a setting on rank 0 only (COLL_MPI_ROUTE, _VERIFY, _TRANSPORT): agreed at MPI_Init, no hang"
for impl in ompi mpich; do
    for set in COLL_MPI_ROUTE=0 COLL_MPI_VERIFY=1 COLL_MPI_TRANSPORT=mpi; do
        log=$LOGS/$impl-rank0-${set%%=*}.log
        LIMIT=60 launch "$impl" 3 "$log" COLL_MPI_MIN=0 COLL_MPI_VERBOSE=1 -- sh -c \
            'if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}" = 0 ]; then export "$1"; fi; shift; exec "$0" "$@"' \
            "$B/mpi/test_agree.$impl" "$set" mixed
        rc=$?
        r=$(routed_of "$log" 1)
        if [ "$set" = COLL_MPI_ROUTE=0 ]; then rok=$([ "$r" = 0 ] && echo 1); else rok=$([ "${r:-0}" -gt 0 ] && echo 1); fi
        if [ "$rc" -eq 0 ] && grep -q '^mixed: [0-9]* passed, 0 failed' "$log" && report "$log" | grep -q "differ from another's" &&
           [ "$rok" = 1 ]; then ok
            echo "  $impl: $set on rank 0 only: completed, routed $r"
        else bad "$impl: $set on rank 0 only: exit $rc, routed '$r' (log $log)"; fi
    done
done

echo "the flight recorder (COLL_MPI_RECORD): a file per rank, its lines the calls made"
# record_blocks FILE: per communicator block of a record file, a line
# "NAME WHY LINES FIRST LAST KINDS..." (KINDS: kind=count, sorted), and
# "gap NAME" where its call numbers are not consecutive, "notok NAME" for
# a call that did not end ok
record_blocks() {
    awk '
    function flush(   n, i, j, t, ks, s) {
        if (nm == "") return
        n = 0; for (t in kc) ks[++n] = t
        for (i = 2; i <= n; i++) for (j = i; j > 1 && ks[j - 1] > ks[j]; j--) { t = ks[j]; ks[j] = ks[j - 1]; ks[j - 1] = t }
        s = ""; for (i = 1; i <= n; i++) s = s " " ks[i] "=" kc[ks[i]]
        print nm, why, lines, first, last s
    }
    /^coll-mpi\[[0-9]+\]: communicator / { flush(); nm = $4; sub(/,$/, "", nm); why = $NF; lines = 0; split("", kc); next }
    $1 == "call" { lines++; if (lines == 1) first = $2; else if ($2 != last + 1) print "gap " nm; last = $2; kc[$3]++
                   if ($NF != "ok") print "notok " nm }
    END { flush() }' "$1"
}
for impl in ompi mpich; do
    base=$LOGS/$impl-record
    rm -f "$base".rec.* "$base"-tiny.rec.* "$base"-late.rec.*
    # test_agree count, every call routed: on each rank, MPI_COMM_WORLD's 7
    # sum all-reduces and main's reduce (the 3 MPI_LAND ones go to MPI),
    # and the duplicate's 5 broadcasts, 4 all-gathers and 2 barriers, each
    # ended ok; the lines of a rank, the calls its report says it routed
    launch "$impl" 3 "$base.log" COLL_MPI_MIN=0 COLL_MPI_VERBOSE=1 COLL_MPI_RECORD="$base.rec.%r" -- \
        "$B/mpi/test_agree.$impl" count
    rc=$?
    files=$(ls "$base".rec.* 2>/dev/null | wc -l)
    if [ "$rc" -eq 0 ] && [ "$files" -eq 3 ]; then ok; else bad "$impl record: exit $rc, $files files (log $base.log)"; fi
    for r in 0 1 2; do
        got=$(record_blocks "$base.rec.$r" | sort | tr '\n' '|')
        want="MPI_COMM_WORLD MPI_Finalize 8 1 8 allreduce=7 reduce=1|counted-dup freed 11 1 11 allgather=4 barrier=2 broadcast=5|"
        mine=$(sed -nE 's/^coll-mpi\[[0-9]+\]: this rank: routed ([0-9]+) of.*/\1/p' "$base.log.rep.$r")
        lines=$(grep -c '^call ' "$base.rec.$r" 2>/dev/null)
        if [ "$got" = "$want" ] && [ "${lines:-0}" = "${mine:-x}" ]; then ok
        else bad "$impl record rank $r: '$got', want '$want'; $lines lines, $mine routed (file $base.rec.$r)"; fi
    done
    echo "  $impl np=3 count: $files files, rank 0's: $(record_blocks "$base.rec.0" | sort | tr '\n' ';')"
    # the suite's own program, every call routed: each communicator's block
    # the last 64 calls at most (consecutive, ending with its last)
    launch "$impl" 2 "$base-tiny.log" $FORCE COLL_MPI_RECORD="$base-tiny.rec.%r" -- "$B/mpi/test_drop_in.$impl" record tiny
    rc=$?
    out=$(for r in 0 1; do record_blocks "$base-tiny.rec.$r"; done |
          awk '$1 == "gap" || $1 == "notok" { print; next }
               { n++; want = $5 < 64 ? $5 : 64; if ($3 != want || $4 != $5 - want + 1) print "block " $0; if ($3 == 64) full++ }
               END { if (!n) print "no blocks"; if (!full) print "no block of 64" }')
    if [ "$rc" -eq 0 ] && [ -z "$out" ]; then ok; echo "  $impl np=2 test_drop_in tiny: $(cat "$base"-tiny.rec.0 | grep -c '^coll-mpi') blocks on rank 0, each its last calls up to 64"
    else bad "$impl record tiny: exit $rc; $out (files $base-tiny.rec.*)"; fi
    # a call that fails: rank 1 comes 2 s late, the others time out after
    # 300 ms; their files end with the failed all-reduce after the three
    # before it, and the job aborts
    late_run() {
        rm -f "$base"-late.rec.*
        LIMIT=60 launch "$impl" 3 "$base-late.log" COLL_MPI_MIN=0 COLL_MPI_TIMEOUT_MS=300 COLL_MPI_RECORD="$base-late.rec.%r" -- \
            "$B/mpi/test_agree.$impl" late
    }
    late_run
    rc=$?
    # the launcher may lose every line of a job that MPI_Abort takes down
    # (seen once with MPICH's hydra under load: an empty log, exit 70): once more
    if [ "$rc" -ne 0 ] && [ ! -s "$base-late.log" ]; then
        reruns=$((reruns + 1))
        echo "  ($impl np=3 late: exit $rc with no output at all: run once more)"
        late_run
        rc=$?
    fi
    n=0
    for f in "$base"-late.rec.*; do
        [ -f "$f" ] || continue
        if grep -q 'a call failed$' "$f" && [ "$(grep -c '^call [123] allreduce .* ok$' "$f")" = 3 ] &&
           tail -1 "$f" | grep -q '^call 4 allreduce .* result -[0-9]* timed out'; then n=$((n + 1)); fi
    done
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$n" -ge 1 ] && grep -q 'failed in coll' "$base-late.log"; then ok
        echo "  $impl np=3 late: exit $rc, $n ranks' files end with the timed-out call: $(tail -1 "$base"-late.rec.0 2>/dev/null | cut -c1-60)..."
    else bad "$impl record late: exit $rc, $n files with the failed call (log $base-late.log)"; fi
done

echo "several hosts, faked (COLL_MPI_TEST_HOSTS): coll_hier's forms, every call routed and verified"
# phases LOG: the calls rank 0's report says ran in coll_hier's phases
phases() { sed -nE 's/^coll-mpi\[0\]: this rank: hierarchical calls: ([0-9]+) in phases.*/\1/p' "$1.rep.0" 2>/dev/null; }
hosts_case() {    # IMPL NP MODE WHAT HOSTS: the suite over fake hosts, and phases ran
    local impl=$1 np=$2 mode=$3 what=$4 hk=$5 log n
    suite "$impl" "$np" "$mode" "$what" $FORCE COLL_MPI_TEST_HOSTS="$hk"
    log=$LOGS/$impl-np$np-$what.log n=$(phases "$log")
    if [ "${n:-0}" -gt 0 ] && report "$log" | grep -q "on [0-9]* hosts: hierarchical"; then ok
        echo "  $impl np=$np COLL_MPI_TEST_HOSTS=$hk: $(report "$log" | sed -nE 's/^coll-mpi\[0\]: this rank: hierarchical calls: //p')"
    else bad "$impl np=$np hosts $hk: no call in coll_hier's phases (log $log)"; fi
}
hosts_case ompi 4 quick hosts-block 2            # 2 hosts x 2 ranks, host-major
hosts_case mpich 4 tiny hosts-block 2
hosts_case ompi 4 tiny hosts-inter %2            # the same, ranks interleaved
hosts_case mpich 4 tiny hosts-inter %2
hosts_case ompi 5 tiny hosts-uneven 2            # hosts of 2, 2 and 1
hosts_case ompi 6 tiny hosts-three %3            # 3 hosts x 2, interleaved
# the local reasons (a derived type on rank 0, holes on the odd ranks)
# agreed before coll_hier's phases, and the one-host and switched-off roads
for impl in ompi mpich; do agree "$impl" 4 mixed 0 COLL_MPI_TEST_HOSTS=2; done
suite ompi 4 tiny hosts-off $FORCE COLL_MPI_TEST_HOSTS=2 COLL_MPI_HIER=0
for log in "$LOGS/ompi-np4-hosts-off.log" "$LOGS/ompi-np4-forced.log" "$LOGS/mpich-np2-forced.log"; do
    if [ -z "$(phases "$log")" ] && ! report "$log" | grep -q hierarchical; then ok
    else bad "coll_hier where it should not be: COLL_MPI_HIER=0 or one host (log $log)"; fi
done
echo "  COLL_MPI_HIER=0 and one host: no call through coll_hier"
for impl in ompi mpich; do      # COLL_MPI_HIER=0 on rank 0 only: agreed at MPI_Init, off everywhere
    log=$LOGS/$impl-rank0-hier.log
    LIMIT=60 launch "$impl" 4 "$log" COLL_MPI_MIN=0 COLL_MPI_VERBOSE=1 COLL_MPI_TEST_HOSTS=2 -- sh -c \
        'if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}" = 0 ]; then export COLL_MPI_HIER=0; fi; exec "$0" "$@"' \
        "$B/mpi/test_agree.$impl" mixed
    rc=$?
    if [ "$rc" -eq 0 ] && grep -q '^mixed: [0-9]* passed, 0 failed' "$log" && report "$log" | grep -q "differ from another's" &&
       ! report "$log" | grep -q hierarchical; then ok; echo "  $impl: COLL_MPI_HIER=0 on rank 0 only: completed, no rank through coll_hier"
    else bad "$impl: COLL_MPI_HIER=0 on rank 0 only: exit $rc (log $log)"; fi
done

echo "verify catches a difference (one byte of a routed result spoiled)"
for impl in ompi mpich; do
    log=$LOGS/$impl-inject.log
    launch "$impl" 2 "$log" $FORCE COLL_MPI_VERIFY_INJECT=1 -- "$B/mpi/test_drop_in.$impl" inject tiny
    rc=$?
    if [ "$rc" -ne 0 ] && grep -q 'coll-mpi verify: MPI_Allreduce on rank' "$log"; then
        ok; echo "  $impl: aborted: $(grep -m1 'coll-mpi verify' "$log")"
    else bad "$impl inject: exit $rc, no verify message (log $log)"; fi
done

echo "the MindSpore seed in plain MPI, 4 ranks, preloaded"
EXPECT=$(printf '[[6.]]\n[[0.]\n [1.]\n [2.]\n [3.]]\n[[0.]]\n[[0]]')
for impl in ompi mpich; do
    for how in forced shipped; do
        log=$LOGS/$impl-seed-$how.log
        if [ $how = forced ]; then set -- $FORCE COLL_MPI_VERBOSE=1; else set -- COLL_MPI_VERIFY=1 COLL_MPI_VERBOSE=1; fi
        launch "$impl" 4 "$log" "$@" -- "$B/mpi/seed_mindspore_mpi.$impl"
        rc=$?
        res=$(grep -E '^ ?\[' "$log")
        r="$(routed_of "$log" 1) of $(routed_of "$log" 2)"
        if [ "$rc" -eq 0 ] && [ "$res" = "$EXPECT" ]; then ok; echo "  $impl $how: the seed's output; coll routed ${r:-?} calls"
        else bad "$impl seed $how: exit $rc or output (log $log)"; fi
        if [ $how = forced ]; then
            if [ "$r" = "20 of 20" ]; then ok; else bad "$impl seed: routed '$r', want 20 of 20"; fi
        fi
    done
done
echo "linked before the MPI library instead of preloaded"
for impl in ompi mpich; do
    log=$LOGS/$impl-seed-linked.log
    if [ $impl = ompi ]; then
        timeout 300 $OMPI_RUN -np 4 -x COLL_MPI_MIN=0 -x COLL_MPI_VERIFY=1 -x COLL_MPI_VERBOSE=1 -x COLL_MPI_LOG="$log.rep.%r" \
            "$B/mpi/seed_mindspore_linked.$impl" >"$log" 2>&1
    else
        timeout 300 $MPICH_RUN -np 4 -genv COLL_MPI_MIN 0 -genv COLL_MPI_VERIFY 1 -genv COLL_MPI_VERBOSE 1 -genv COLL_MPI_LOG "$log.rep.%r" \
            "$B/mpi/seed_mindspore_linked.$impl" >"$log" 2>&1
    fi
    rc=$?
    r="$(routed_of "$log" 1) of $(routed_of "$log" 2)"
    if [ "$rc" -eq 0 ] && [ "$(grep -E '^ ?\[' "$log")" = "$EXPECT" ] && [ "$r" = "20 of 20" ]; then
        ok; echo "  $impl linked: the seed's output; coll routed $r calls"
    else bad "$impl seed linked: exit $rc, routed '$r' (log $log)"; fi
done
log=$LOGS/ompi-seed-coll.log
if [ -x "$B/ports-mpi-shm/seed_mindspore.ompi" ]; then
    launch ompi 4 "$log" $FORCE -- "$B/ports-mpi-shm/seed_mindspore.ompi"
    rc=$?
    if [ "$rc" -eq 0 ] && [ "$(grep -E '^ ?\[' "$log")" = "$EXPECT" ]; then ok; echo "  ompi: the coll-based seed beside the library: same output"
    else bad "coll-based seed under the library: exit $rc (log $log)"; fi
fi

if [ "$calls" -gt 0 ]; then
    echo "mpi-drop-in: routed $routed of $calls collective calls in the forced runs ($((100 * routed / calls))%; the rest are the fallback cases)"
fi
if [ "$reruns" -gt 0 ]; then echo "mpi-drop-in: $reruns runs run once more (Open MPI's finalize crash after the work, exit 139; or a job whose output the launcher lost at MPI_Abort)"; fi
echo "mpi-drop-in: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
