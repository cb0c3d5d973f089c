#!/usr/bin/env bash
# test_tune.sh - the drop-in's calibration on this machine (coll_mpi_tune)
#
#   bash mpi/test_tune.sh [build-dir] tune "MPIS" "NPS" [DIR] [ARGS...]   (make mpi-tune)
#       runs build/mpi/coll_mpi_tune.{ompi,mpich} with the drop-in preloaded,
#       for each MPI (openmpi, mpich) and rank count; each run adds its
#       rank count's lines to one file per MPI: DIR/mpi-thresholds-<mpi>,
#       or without DIR the path the library reads by default
#       ($XDG_CONFIG_HOME/coll/mpi-thresholds-<mpi>, else
#       $HOME/.config/coll/...). ARGS go to the tuner (-s lo:hi -t ms -r
#       reps -m percent -k list). Its tables: build/mpi/tune-<mpi>-np<N>.txt.
#   bash mpi/test_tune.sh [build-dir] test                                 (make test-mpi-tune)
#       2 ranks, both MPIs, 8 B to 4 KiB, 3 repetitions, in a temp dir that
#       stands for $HOME and $XDG_CONFIG_HOME (the real ones are never
#       written): the tuner's file at the default path, well formed and
#       the ranges its own table of times gives (recomputed here); a second
#       run at 1 rank keeps the 2-rank lines; the drop-in, run under
#       build/mpi/bench_drop_in with COLL_MPI_VERBOSE=2, routes every call
#       exactly where the file says (from $XDG_CONFIG_HOME, from $HOME, from
#       a hand-written file with gaps) and to MPI ("below threshold") where
#       it says not; malformed files: the error line and the compiled table's
#       roads; the tuner without the drop-in preloaded and with bad
#       arguments: exit 2 and its message. Ends "mpi-tune: N passed, N failed".
set -u
B=${1:-build}
MODE=${2:-test}
ROOT=$(pwd)
OMPI_RUN="mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader"
lib_of() { echo "$ROOT/$B/lib/libcoll_mpi_$1.so"; }
suffix_of() { [ "$1" = openmpi ] && echo ompi || echo mpich; }

# run MPI NP PRELOAD(0/1) VAR=VAL... -- PROGRAM ARGS: under mpirun, the variables to every rank
run() {
    local mpi=$1 np=$2 pre=$3 env=()
    shift 3
    while [ "$1" != -- ]; do
        if [ "$mpi" = openmpi ]; then env+=(-x "$1"); else env+=(-genv "${1%%=*}" "${1#*=}"); fi
        shift
    done
    shift
    if [ "$pre" = 1 ]; then
        if [ "$mpi" = openmpi ]; then env+=(-x LD_PRELOAD="$(lib_of "$mpi")"); else env+=(-genv LD_PRELOAD "$(lib_of "$mpi")"); fi
    fi
    if [ "$mpi" = openmpi ]; then timeout "${LIMIT:-600}" $OMPI_RUN -np "$np" "${env[@]}" "$@"
    else timeout "${LIMIT:-600}" mpirun.mpich -np "$np" "${env[@]}" "$@"; fi
}

if [ "$MODE" = tune ]; then
    MPIS=${3:-openmpi mpich} NPS=${4:-2 4} DIR=${5:-}
    shift 5 2>/dev/null || shift $#
    for mpi in $MPIS; do
        case $mpi in openmpi|mpich) ;; *) echo "mpi-tune: MPI=$mpi: openmpi or mpich"; exit 2 ;; esac
        out=(); [ -n "$DIR" ] && out=(-o "$DIR/mpi-thresholds-$mpi")
        for np in $NPS; do
            echo "# $mpi, $np ranks: coll_mpi_tune ${out[*]} $*"
            run "$mpi" "$np" 1 -- "$B/mpi/coll_mpi_tune.$(suffix_of "$mpi")" "${out[@]}" "$@" |
                tee "$B/mpi/tune-$mpi-np$np.txt"
            [ "${PIPESTATUS[0]}" = 0 ] || { echo "mpi-tune: coll_mpi_tune failed ($mpi, $np ranks)"; exit 1; }
        done
    done
    exit 0
fi

if ! command -v python3 >/dev/null; then
    if [ "${CI:-}" = true ]; then echo "test-mpi-tune: python3 not found (CI): failing"; exit 1; fi
    echo "*** SKIPPED test-mpi-tune: python3 not found ***"; exit 0
fi
T=$(mktemp -d /tmp/coll-mpi-tune.XXXXXX)
trap 'rm -rf "$T"' EXIT
LOGS=$B/mpi/logs-tune
rm -rf "$LOGS"; mkdir -p "$LOGS"
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "  FAILED: $*"; }
HOMEDIR=$T/home XDG=$T/config
mkdir -p "$HOMEDIR" "$XDG"

# check.py MODE ...: the independent reading of a tuner table, a file and the drop-in's per-call lines
cat >"$T/check.py" <<'EOF'
import re, sys
KINDS = ["allreduce", "bcast", "reduce", "allgather", "allgatherv", "gather", "gatherv", "scatter",
         "scatterv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block", "scan", "exscan", "barrier"]
LOCAL = {"gatherv", "scatterv", "alltoallv", "barrier"}
INF = 1 << 62
def parse_v2(path):     # {(kind, ranks): [(lo, hi)]}; raises on anything malformed
    lines = [l.split() for l in open(path) if l.strip() and not l.lstrip().startswith("#")]
    assert lines[0] == ["coll-mpi-thresholds", "2"], "first line %r" % lines[0]
    t = {}
    for w in lines[1:]:
        assert w[0] in KINDS and 1 <= int(w[1]) <= 8 and len(w) >= 3, "line %r" % w
        rs = []
        if w[2:] != ["never"]:
            for r in w[2:]:
                m = re.fullmatch(r"(\d+)-(\d*)", r)
                assert m, "range %r" % r
                lo, hi = int(m.group(1)), int(m.group(2)) if m.group(2) else INF
                assert lo <= hi and (not rs or lo > rs[-1][1]), "ranges %r" % w
                rs.append((lo, hi))
            assert len(rs) <= 6
        t[(w[0], int(w[1]))] = rs
    return t
def compiled(mpi):      # the compiled table as v2 ranges
    t = {}
    for k, vals in re.findall(r"/\* (\w+) +\*/ \{([^}]*)\}", open("mpi/thresholds_%s.h" % mpi).read()):
        for p, v in enumerate(vals.split(",")):
            if p: t[(k, p)] = [] if v.strip() == "DI_NEVER" else [(int(v), INF)]
    return t
def expect_from_table(table):   # the tuner's rule, from its own rows: kind ranks bytes mpi coll ratio road
    rows = {}
    for l in open(table):
        w = l.split()
        if len(w) == 7 and not l.startswith("#"): rows.setdefault((w[0], int(w[1])), []).append((int(w[2]), w[6]))
    t = {}
    for (k, p), pts in rows.items():
        fast = [road == "coll" for _, road in pts]
        if k in LOCAL: t[(k, p)] = [(0, INF)] if all(fast) else []; continue
        rs, i = [], 0
        while i < len(pts):
            if not fast[i]: i += 1; continue
            j = i
            while j + 1 < len(pts) and fast[j + 1]: j += 1
            rs.append((0 if i == 0 else pts[i][0], INF if j == len(pts) - 1 else pts[j][0]))
            i = j + 1
        t[(k, p)] = rs
    return t
def routes(t, k, p, b):
    return any(lo <= b <= hi for lo, hi in t.get((k, min(p, 8)), []))
mode = sys.argv[1]
if mode == "file":          # file table ranks: well formed, every kind once at ranks, ranges = the table's rule
    t, want = parse_v2(sys.argv[2]), expect_from_table(sys.argv[3])
    p = int(sys.argv[4])
    got = {k: v for k, v in t.items() if k[1] == p}
    assert sorted(k for k, _ in got) == sorted(KINDS), "kinds at %d ranks: %s" % (p, sorted(got))
    for k in KINDS:
        assert got[(k, p)] == want[(k, p)], "%s: file %s, from the table %s" % (k, got[(k, p)], want[(k, p)])
    print("ok %d kinds" % len(got))
elif mode == "roads":       # roads source ranks logs...: each call's road as the table says
    src, p = sys.argv[2], int(sys.argv[3])
    t = compiled(src[9:]) if src.startswith("compiled:") else parse_v2(src)
    n = {True: 0, False: 0}; kinds = set()
    for log in sys.argv[4:]:
        for l in open(log):
            m = re.match(r"coll-mpi\[\d+\]: call \d+ MPI_(\w+) (\d+) B: (routed|to MPI \(([^)]*)\))", l)
            if not m: continue
            k, b = m.group(1).lower(), int(m.group(2))
            want = routes(t, k, p, 0 if k in LOCAL else b)
            got = m.group(3) == "routed"
            assert got == want, "%s: %s, want %s" % (l.strip(), m.group(3), "routed" if want else "to MPI")
            assert got or m.group(4) == "below threshold", "%s: not the threshold's reason" % l.strip()
            n[got] += 1; kinds.add(k)
    assert kinds == set(KINDS), "calls seen of %s" % sorted(kinds)
    print("ok %d routed, %d to MPI" % (n[True], n[False]))
    if src.endswith("handmade"): assert n[True] > 0 and n[False] > 0, "want both roads"
EOF
check() { python3 "$T/check.py" "$@" >"$T/check.out" 2>&1; local rc=$?; cat "$T/check.out" | tail -1; return $rc; }

# bench MPI NP LOG VAR=VAL...: bench_drop_in, every kind, 8 B to 4 KiB, its per-call lines per rank in LOG.R
bench() {
    local mpi=$1 np=$2 log=$3
    shift 3
    rm -f "$log".*
    run "$mpi" "$np" 1 COLL_MPI_VERBOSE=2 COLL_MPI_LOG="$log.%r" "$@" -- \
        "$B/mpi/bench_drop_in.$(suffix_of "$mpi")" -k all -s 8:4096 -t 0.01 -r 1 >"$log.out" 2>&1
}

for mpi in openmpi mpich; do
    s=$(suffix_of "$mpi")
    echo "$mpi"
    rm -rf "$XDG/coll" "$HOMEDIR/.config"
    file=$XDG/coll/mpi-thresholds-$mpi
    E=(HOME="$HOMEDIR" XDG_CONFIG_HOME="$XDG")

    # the tuner, 2 ranks, default path
    run "$mpi" 2 1 "${E[@]}" -- "$B/mpi/coll_mpi_tune.$s" -s 8:4096 -t 2 -r 3 >"$LOGS/$mpi-tune2.txt" 2>&1
    rc=$?
    if [ $rc = 0 ] && [ -f "$file" ] && grep -q "^# wrote $file (2 ranks)" "$LOGS/$mpi-tune2.txt"; then ok
    else bad "$mpi tuner at 2 ranks: exit $rc, file '$file' $( [ -f "$file" ] || echo missing) (log $LOGS/$mpi-tune2.txt)"; fi
    [ -z "$(ls -A "$HOMEDIR")" ] && ok || bad "$mpi tuner wrote under \$HOME with XDG_CONFIG_HOME set: $(ls -A "$HOMEDIR")"
    cp "$file" "$LOGS/$mpi-file2" 2>/dev/null
    if check file "$file" "$LOGS/$mpi-tune2.txt" 2; then ok; else bad "$mpi file vs the tuner's table: $(cat "$T/check.out")"; fi

    # a second run at 1 rank, one collective: its line added, the 2-rank lines kept
    run "$mpi" 1 1 "${E[@]}" -- "$B/mpi/coll_mpi_tune.$s" -k allreduce -s 8:64 -t 1 -r 1 >"$LOGS/$mpi-tune1.txt" 2>&1
    rc=$?
    if [ $rc = 0 ] && diff <(grep -v '^#' "$LOGS/$mpi-file2") <(grep -v '^#' "$file" | grep -v '^allreduce 1 ') >/dev/null &&
       [ "$(grep -c '^allreduce 1 ' "$file")" = 1 ] && [ "$(grep -c '^# at 2 ranks' "$file")" = 1 ]; then ok
    else bad "$mpi tuner at 1 rank: exit $rc, or the file did not keep the 2-rank lines and add one (log $LOGS/$mpi-tune1.txt)"; fi
    cp "$file" "$LOGS/$mpi-file"

    # the drop-in reads it at MPI_Init (COLL_MPI_THRESHOLDS unset) and routes as it says
    bench "$mpi" 2 "$LOGS/$mpi-default" "${E[@]}"
    rc=$?
    if [ $rc = 0 ] && grep -q "^coll-mpi: thresholds from $file (version 2)" "$LOGS/$mpi-default.0"; then ok
    else bad "$mpi drop-in with the calibrated file: exit $rc, or no 'thresholds from $file' (log $LOGS/$mpi-default.*)"; fi
    if check roads "$file" 2 "$LOGS/$mpi-default".[01]; then ok; else bad "$mpi roads vs the calibrated file: $(cat "$T/check.out")"; fi

    # from $HOME/.config where XDG_CONFIG_HOME is unset: a hand-written file with gaps, one end each way
    hm=$HOMEDIR/.config/coll/mpi-thresholds-$mpi
    mkdir -p "${hm%/*}"
    { echo "coll-mpi-thresholds 2"; echo "# by hand"
      echo "allreduce 2 64-512 4096-"; echo "bcast 2 0-8 4096-4096"; echo "allgather 2 16-16 512-"
      echo "reduce_scatter_block 2 0-"; echo "gatherv 2 0-"; echo "alltoallv 2 never"; echo "barrier 2 0-"
      echo "scan 1 0-"; echo "reduce 4 0-"; } >"$hm"
    cp "$hm" "$T/handmade"
    bench "$mpi" 2 "$LOGS/$mpi-home" HOME="$HOMEDIR" XDG_CONFIG_HOME=
    rc=$?
    if [ $rc = 0 ] && grep -q "^coll-mpi: thresholds from $hm (version 2)" "$LOGS/$mpi-home.0"; then ok
    else bad "$mpi drop-in with \$HOME's file: exit $rc, or no 'thresholds from $hm' (log $LOGS/$mpi-home.*)"; fi
    if check roads "$T/handmade" 2 "$LOGS/$mpi-home".[01]; then ok; else bad "$mpi roads vs the hand-written file: $(cat "$T/check.out")"; fi
    rm -rf "$HOMEDIR/.config"

    # malformed at the default path: the error line, and the compiled table's roads
    h=$([ "$mpi" = openmpi ] && echo openmpi || echo mpich)
    printf 'coll-mpi-thresholds 2\nallreduce 2 4096-64\n' >"$file"          # an end below its start
    bench "$mpi" 2 "$LOGS/$mpi-bad" "${E[@]}"
    rc=$?
    if [ $rc = 0 ] && grep -q "^coll-mpi: calibrated thresholds: $file, line 2: not a thresholds file" "$LOGS/$mpi-bad.out" &&
       grep -q "^coll-mpi: thresholds from the compiled table" "$LOGS/$mpi-bad.0"; then ok
    else bad "$mpi malformed default file: exit $rc, or no error line / not the compiled table (log $LOGS/$mpi-bad.*)"; fi
    if check roads "compiled:$h" 2 "$LOGS/$mpi-bad".[01]; then ok; else bad "$mpi roads with a malformed file vs the compiled table: $(cat "$T/check.out")"; fi
    # COLL_MPI_THRESHOLDS="" : the compiled table even with a good default file there
    cp "$LOGS/$mpi-file" "$file"
    bench "$mpi" 2 "$LOGS/$mpi-empty" "${E[@]}" COLL_MPI_THRESHOLDS=
    rc=$?
    if [ $rc = 0 ] && grep -q "^coll-mpi: thresholds from the compiled table" "$LOGS/$mpi-empty.0" &&
       check roads "compiled:$h" 2 "$LOGS/$mpi-empty".[01] >/dev/null; then ok
    else bad "$mpi COLL_MPI_THRESHOLDS empty: exit $rc, or not the compiled table: $(cat "$T/check.out") (log $LOGS/$mpi-empty.*)"; fi
    # more malformed files, named by COLL_MPI_THRESHOLDS, 1 rank: each its line
    i=0
    for body in 'coll-mpi-thresholds 3\n' 'coll-mpi-thresholds 2\nallreduce 9 0-\n' 'coll-mpi-thresholds 2\nallreduce 2\n' \
                'coll-mpi-thresholds 2\nallreduce 2 1-2 3-4 5-6 7-8 9-10 11-12 13-14\n' 'coll-mpi-thresholds 2\nallreduce 2 8-x\n' \
                'coll-mpi-thresholds 2\nbcast 2 0-\nnosuch 2 0-\n' 'coll-mpi-thresholds 2\nallreduce 2 never 0-\n'; do
        i=$((i + 1))
        printf "$body" >"$T/bad$i"
        line=$(printf "$body" | wc -l)
        run "$mpi" 1 1 "${E[@]}" COLL_MPI_THRESHOLDS="$T/bad$i" COLL_MPI_VERBOSE=1 -- \
            "$B/mpi/bench_drop_in.$s" -k allreduce -s 8:8 -t 0.01 -r 1 >"$LOGS/$mpi-bad$i.log" 2>&1
        rc=$?
        if [ $rc = 0 ] && grep -q "^coll-mpi: COLL_MPI_THRESHOLDS: $T/bad$i, line $line: not a thresholds file" "$LOGS/$mpi-bad$i.log" &&
           grep -q "thresholds from the compiled table" "$LOGS/$mpi-bad$i.log"; then ok
        else bad "$mpi malformed file $i ($(printf "$body" | tr '\n' '|')): exit $rc, or no error line for line $line (log $LOGS/$mpi-bad$i.log)"; fi
    done

    # the tuner without the drop-in, and with bad arguments: exit 2 and why
    run "$mpi" 1 0 "${E[@]}" -- "$B/mpi/coll_mpi_tune.$s" -o "$T/never" >"$LOGS/$mpi-nolib.log" 2>&1
    rc=$?
    if [ $rc != 0 ] && [ ! -e "$T/never" ] && grep -q "coll_mpi_tune: the drop-in is not preloaded" "$LOGS/$mpi-nolib.log"; then ok
    else bad "$mpi tuner without the drop-in: exit $rc (log $LOGS/$mpi-nolib.log)"; fi
    run "$mpi" 1 1 "${E[@]}" -- "$B/mpi/coll_mpi_tune.$s" -o "$T/never" -r 0 >"$LOGS/$mpi-args.log" 2>&1
    rc=$?
    if [ $rc != 0 ] && [ ! -e "$T/never" ] && grep -q "coll_mpi_tune: usage" "$LOGS/$mpi-args.log"; then ok
    else bad "$mpi tuner with -r 0: exit $rc (log $LOGS/$mpi-args.log)"; fi
done
echo "mpi-tune: $pass passed, $fail failed"
[ "$fail" = 0 ]
