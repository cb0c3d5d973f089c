#!/bin/sh
# bench/ab.sh - programs compared back to back on a shared machine: every
# round runs each command once, in turns (the order rotates each round),
# and the table gives, per command and row, the median time over the
# rounds with the fastest and slowest run.
#
#   sh bench/ab.sh ROUNDS 'label1=command1' 'label2=command2' ...
#
# Each command prints rows of the bench table (bench_coll, bench_mpi,
# bench_gloo); rows are keyed by (collective, ranks, bytes). Example, the
# shm port before a change (build/old: bench_coll built from the old
# ports/coll_shm.h) and after it, and Open MPI, in one session:
#
#   M='mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1'
#   M="$M --mca btl self,vader -np 2 build/bench/bench_mpi_ompi -i ompi -x"
#   A='-p shm -n 2 -c allreduce -s 8,64K'
#   sh bench/ab.sh 7 "old=build/old/bench_coll $A" \
#       "new=build/bench/bench_coll $A" "ompi=$M -c allreduce -s 8,64K"
#
# Output: "label collective ranks bytes median_us min_us max_us runs"
# (FAIL after a row whose check failed in any run); on stderr the load
# average before and after.
set -u
[ $# -ge 2 ] || { sed -n '2,22p' "$0" >&2; exit 2; }
rounds=$1; shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
n=$#
r=0
while [ $r -lt "$rounds" ]; do
    i=0
    while [ $i -lt $n ]; do
        k=$(( (i + r) % n + 1 ))          # rotate the order every round
        eval "spec=\${$k}"
        label=${spec%%=*}
        cmd=${spec#*=}
        sh -c "$cmd" 2>/dev/null | awk -v l="$label" -F'\t' \
            'NF >= 9 && $6 ~ /^[0-9.]+$/ { print l "\t" $2 "\t" $4 "\t" $5 "\t" $6 "\t" $9 }' \
            >>"$tmp/rows"
        i=$((i + 1))
    done
    r=$((r + 1))
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)" >&2
printf 'label\tcollective\tranks\tbytes\tmedian_us\tmin_us\tmax_us\truns\n'
sort -t"$(printf '\t')" -k1,1 -k2,2 -k3,3n -k4,4n -k5,5g "$tmp/rows" | awk -F'\t' '
    function flush() {
        if (m) printf "%s\t%.3f\t%.3f\t%.3f\t%d%s\n", key,
            (m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2), v[1], v[m], m,
            (bad ? "\tFAIL" : "")
    }
    { k = $1 "\t" $2 "\t" $3 "\t" $4
      if (k != key) { flush(); key = k; m = 0; bad = 0 }
      v[++m] = $5; if ($6 != "ok") bad = 1 }
    END { flush() }'
