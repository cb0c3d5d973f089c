#!/bin/sh
# test/teach_trace_hier.sh HIER_TRACE - make trace-hier's own checks (every
# collective coll_hier.h has, at 2x3, 3x2 and 4x2 hosts x ranks, both rank
# orders, roots first and last: each rank's result against a plain loop,
# the road, every message on its phase's level, the phases in the header's
# order; and a corrupted result reported), then its command line: each
# collective printed phase by phase and checked, the bytes it says cross
# between hosts equal to the sum of its ACROSS lines, and a name it does
# not know answered with the names it does know. One closing line.
tr=${1:-build/teach/hier_trace}
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
all=$("$tr" --all --break)
printf '%s\n' "$all" | grep '^FAIL' | head -20
line=$(printf '%s\n' "$all" | tail -1)
p=$(printf '%s' "$line" | sed -n 's/^hier_trace: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(printf '%s' "$line" | sed -n 's/^hier_trace: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
if [ -z "$p" ]; then bad "hier_trace --all ended without its count: $line"; else pass=$((pass + p)); fail=$((fail + f)); fi
# 9 collectives x 3 shapes x 2 orders (x 2 roots for the 4 rooted ones):
# 78 runs, each with its checks and the corruption's
[ "${p:-0}" -ge 600 ] && ok || bad "hier_trace --all ran only ${p:-0} checks"
# the command line: every collective, phase by phase, checked
for c in allreduce reduce_scatter allgather broadcast reduce gather scatter alltoall barrier; do
    for o in interleaved host-major; do
        args="coll=$c hosts=2 local=3 order=$o"
        out=$("$tr" $args 2>&1); rc=$?
        [ "$rc" -eq 0 ] && ok || bad "hier_trace $args: exit $rc"
        printf '%s\n' "$out" | grep -q '^phase 2: ' && ok || bad "hier_trace $args: no second phase"
        printf '%s\n' "$out" | grep -q 'equals the plain loop on every rank' && ok || bad "hier_trace $args: not checked"
        printf '%s\n' "$out" | grep -q 'ACROSS host' && ok || bad "hier_trace $args: nothing crosses between hosts"
    done
done
# the bytes across hosts it reports are those of the messages it shows crossing
for args in "coll=allreduce hosts=2 local=3 n=12 checks=0" "coll=allreduce hosts=4 local=2 n=16 checks=0" \
            "coll=broadcast hosts=3 local=2 n=6 root=5 checks=0" "coll=alltoall hosts=2 local=3 n=2" \
            "coll=allgather hosts=3 local=2 n=3 order=host-major"; do
    out=$("$tr" $args 2>&1)
    said=$(printf '%s\n' "$out" | sed -n 's/^bytes across hosts: \([0-9]*\) of data.*/\1/p')
    sum=$(printf '%s\n' "$out" | awk '/ACROSS host/ { if ($0 ~ / el /) { for (i = 1; i <= NF; i++) if ($i == "el") s += 4 * $(i - 1) }
                                                     else { for (i = 1; i <= NF; i++) if ($i == "B") s += $(i - 1) } } END { print s + 0 }')
    [ -n "$said" ] && [ "$said" -eq "$sum" ] && ok || bad "hier_trace $args: says ${said:-nothing} bytes across, its ACROSS lines carry $sum"
    [ "${said:-0}" -gt 0 ] && ok || bad "hier_trace $args: no bytes across"
done
# a broadcast sends the vector across once per host other than the root's
out=$("$tr" coll=broadcast hosts=4 local=2 n=8 root=3 checks=0)
said=$(printf '%s\n' "$out" | sed -n 's/^bytes across hosts: \([0-9]*\) of data.*/\1/p')
[ "${said:-0}" -eq $((3 * 8 * 4)) ] && ok || bad "broadcast on 4 hosts: ${said:-no} bytes across, 96 wanted"
# at 2 hosts x 3 ranks (n = 12 for the whole-vector calls, 2 a block), the
# most one rank sends across is the volume docs/hosts.md's table gives:
# all-reduce 2(H-1)/H n/L, reduce-scatter, all-gather (H-1) blocks,
# broadcast and reduce n, gather and scatter L blocks, all-to-all (H-1) L blocks
for want in allreduce:16 reduce_scatter:8 allgather:8 broadcast:48 reduce:48 gather:24 scatter:24 alltoall:24; do
    c=${want%%:*}; b=${want#*:}
    for o in interleaved host-major; do
        most=$("$tr" coll=$c hosts=2 local=3 order=$o root=1 checks=0 | sed -n 's/.*(the most one rank sends: \([0-9]*\)).*/\1/p')
        [ "${most:-x}" = "$b" ] && ok || bad "$c 2x3 $o: the most one rank sends across is ${most:-nothing}, the table's $b bytes wanted"
    done
done
# bad names: refused (exit 2), and the good names listed
expect_list() {   # what args words...
    what=$1; args=$2; shift 2
    out=$("$tr" $args 2>&1); rc=$?
    [ "$rc" -eq 2 ] && ok || bad "hier_trace $args: exit $rc, 2 wanted"
    printf '%s' "$out" | grep -q "cannot read" && ok || bad "hier_trace $args: no 'cannot read'"
    for w in "$@"; do
        printf '%s\n' "$out" | grep "$what" | grep -qw "$w" && ok || bad "hier_trace $args: '$w' not among the $what listed"
    done
}
expect_list "collectives:" "coll=bogus" allreduce reduce_scatter allgather broadcast reduce gather scatter alltoall barrier
expect_list "keys:" "colour=red" coll hosts local n root order
expect_list "orders:" "order=sideways" interleaved host-major
"$tr" hosts=5 local=4 >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "20 ranks are taken"
"$tr" hosts=0 >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "hosts=0 is taken"
"$tr" coll=reduce root=6 >/dev/null 2>&1; [ $? -eq 2 ] && ok || bad "root 6 of 6 ranks is taken"
echo "trace-hier: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
