#!/bin/sh
# bench/floor.sh - coll's shared-memory ports against the memory floor
# (bench/floor.c: the direct two-shot all-reduce, no library), measured in
# one run: ROUNDS rounds, each running the floor, coll-threads and
# coll-shm once in turns, the order rotating (bench/ab.sh); each figure
# is the median over the rounds of each program's own median run.
#
#   sh bench/floor.sh [ROUNDS [SIZES [RANKS]]]
#        (or FLOOR_ROUNDS=5 FLOOR_SIZES=8,2K,64K,2M,8M,64M FLOOR_RANKS=2,4;
#         FLOOR_T: ms of calls per row and run, 20)
#
# Prints the commands, then per (ranks, bytes): the three median times
# (us), the floor's GB/s (2n bytes per rank), and each port's time over
# the floor's (1.00: at the floor). All-reduce, float32 sum, AUTO, call
# checks on (bench_coll's default).
set -u
B=${B:-build}
bin=$B/bench
rounds=${1:-${FLOOR_ROUNDS:-5}}
sizes=${2:-${FLOOR_SIZES:-8,2K,64K,2M,8M,64M}}
ranks=${3:-${FLOOR_RANKS:-2,4}}
T=${FLOOR_T:-20}
for x in floor bench_coll; do
    [ -x "$bin/$x" ] || { echo "floor.sh: $bin/$x not built (make $bin/$x)" >&2; exit 1; }
done
F="$bin/floor -b -r 3 -n $ranks -s $sizes -T $T"
C="$bin/bench_coll -n $ranks -c allreduce -a auto -s $sizes -T $T"
echo "# sh bench/floor.sh $rounds $sizes $ranks  (FLOOR_T=$T)"
echo "#   floor:        $F"
echo "#   coll-threads: $C -p threads"
echo "#   coll-shm:     $C -p shm"
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
sh bench/ab.sh "$rounds" "floor=$F" "threads=$C -p threads" "shm=$C -p shm" 2>"$tmp.load" >"$tmp" || exit 1
sed 's/^/# /' "$tmp.load"; rm -f "$tmp.load"
grep -q FAIL "$tmp" && { echo "floor.sh: a row failed its check:" >&2; grep FAIL "$tmp" >&2; }
awk -F'\t' '
NR > 1 { k = $3 "\t" $4; t[$1, k] = $5; if (!(k in seen)) { seen[k] = 1; keys[++n] = k } }
END {
    printf "ranks\tbytes\tfloor_us\tthreads_us\tshm_us\tfloor_GBps\tthreads/floor\tshm/floor\n"
    for (i = 1; i <= n; i++) {
        k = keys[i]; split(k, f, "\t")
        fl = t["floor", k] + 0; th = t["threads", k] + 0; sh = t["shm", k] + 0
        printf "%s\t%s\t%.3f\t%.3f\t%.3f\t%.2f\t%s\t%s\n", f[1], f[2], fl, th, sh,
            (fl > 0 ? 2 * f[2] / fl / 1e3 : 0),
            (fl > 0 && th > 0 ? sprintf("%.2f", th / fl) : "-"),
            (fl > 0 && sh > 0 ? sprintf("%.2f", sh / fl) : "-")
    }
}' "$tmp" | sort -t"$(printf '\t')" -k1,1n -k2,2n
