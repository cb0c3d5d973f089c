#!/bin/sh
# test/teach_trace.sh TRACE - make trace's own checks (every registered
# collective and algorithm at p = 5 with every rank's buffers, and at p = 37
# as a summary, each run by the library over the mailbox port against a
# plain loop, and a corrupted result caught), then its command line: more
# than 16 ranks are taken (a summary per step, checked), and a name it does
# not know is answered with the names it does know. One closing line.
trace=${1:-build/teach/trace}
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
all=$("$trace" --all --break)
printf '%s\n' "$all" | grep '^FAIL' | head -20
line=$(printf '%s\n' "$all" | tail -1)
p=$(printf '%s' "$line" | sed -n 's/^trace: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(printf '%s' "$line" | sed -n 's/^trace: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
if [ -z "$p" ]; then bad "trace --all ended without its count: $line"; else pass=$((pass + p)); fail=$((fail + f)); fi
# bad names: refused (exit 2), and the good names listed
expect_list() {   # what args words...
    what=$1; args=$2; shift 2
    out=$("$trace" $args 2>&1); rc=$?
    [ "$rc" -eq 2 ] && ok || bad "trace $args: exit $rc, 2 wanted"
    printf '%s' "$out" | grep -q "cannot read" && ok || bad "trace $args: no 'cannot read'"
    for w in "$@"; do
        printf '%s\n' "$out" | grep "$what" | grep -qw "$w" && ok || bad "trace $args: '$w' not among the $what listed"
    done
}
expect_list "algorithms:" "algo=bogus" ring tree rabenseifner recursive_doubling double_tree dissemination auto
expect_list "registered for allreduce:" "algo=bogus" ring rabenseifner reversed_bruck swing
expect_list "registered for allgather:" "coll=allgather algo=nope" ring bruck recursive_doubling swing
expect_list "collectives:" "coll=bogus" allreduce allgather alltoallv barrier exscan
expect_list "ops:" "op=nope" sum prod max bxor
expect_list "dtypes:" "dtype=int7" int32 float64
expect_list "keys:" "colour=red" coll algo p n root
# the library's refusal of a registered name names the collective's own
out=$("$trace" coll=allgather algo=naive 2>&1)
printf '%s\n' "$out" | grep "registered for allgather" | grep -qw bruck && ok || bad "a refused pair does not list the collective's algorithms"
# more than 16 ranks: a summary per step, and the library's run checked
for args in "coll=allreduce algo=ring p=64 n=100" "coll=allgather algo=bruck p=100 n=3" \
            "coll=alltoallv algo=pairwise p=40 n=50" "coll=reduce algo=double_tree p=70 n=300 root=9" \
            "coll=broadcast algo=binomial p=256 n=16 root=255" "coll=allreduce algo=swing p=100 n=300" \
            "coll=broadcast algo=bine p=70 n=20 root=33" "coll=reduce algo=bine p=129 n=40 root=128"; do
    out=$("$trace" $args 2>&1); rc=$?
    [ "$rc" -eq 0 ] && ok || bad "trace $args: exit $rc"
    printf '%s\n' "$out" | grep -q 'p must be' && bad "trace $args: still refuses the ranks" || ok
    printf '%s\n' "$out" | grep -q '^step 0: ' && ok || bad "trace $args: no per-step summary"
    printf '%s\n' "$out" | grep -q 'equals the plain loop on every rank' && ok || bad "trace $args: not checked"
done
steps=$("$trace" coll=allreduce algo=ring p=64 n=128 | grep -c '^step ')
[ "$steps" -eq 126 ] && ok || bad "ring all-reduce at p = 64 shows $steps steps, 2(p-1) = 126 wanted"
out=$("$trace" coll=allreduce algo=recursive_doubling p=4096 n=8 2>&1)
printf '%s\n' "$out" | grep -q '^12 steps' && ok || bad "recursive doubling at p = 4096: not 12 steps"
"$trace" p=0 >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "p=0 is taken"
"$trace" p=70000 >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "p=70000 is taken"
echo "trace: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
