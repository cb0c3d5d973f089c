#!/bin/sh
# test/teach_trace_window.sh WINDOW_TRACE - make trace-window's own checks
# (every collective over windows at 1-8 ranks, counts 0-37, in place and
# out, roots first and last: every rank's dst against a plain loop, no
# rank touching bytes another writes within a phase, coll_window.h's own
# executor bitwise equal to the rank-order fold; and one corrupted move per
# case caught; inline too, where the inputs fit a record), then its
# command line: each kind and form printed phase by
# phase and checked, the syncs it counts, and a name it does not know
# answered with the names it knows. One closing line.
tr=${1:-build/teach/window_trace}
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
all=$("$tr" --all --break)
printf '%s\n' "$all" | grep '^FAIL' | head -20
line=$(printf '%s\n' "$all" | tail -1)
p=$(printf '%s' "$line" | sed -n 's/^window_trace: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
f=$(printf '%s' "$line" | sed -n 's/^window_trace: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
if [ -z "$p" ]; then bad "window_trace --all ended without its count: $line"; else pass=$((pass + p)); fail=$((fail + f)); fi
[ "${p:-0}" -ge 2000 ] && ok || bad "window_trace --all ran only ${p:-0} checks"
# the command line: every kind (and the all-reduce's two forms), checked
for args in "coll=allreduce form=one" "coll=allreduce form=two" "coll=reduce_scatter" "coll=allgather" \
            "coll=broadcast root=2" "coll=reduce root=3" "coll=alltoall" "coll=alltoall inplace=1" \
            "coll=allreduce form=two inplace=1 scratch=64" "coll=barrier" \
            "coll=allreduce inline=1" "coll=allreduce inplace=1 inline=1" "coll=reduce root=3 inline=1" \
            "coll=alltoall inplace=1 inline=1" "coll=broadcast root=1 inline=1"; do
    out=$("$tr" $args p=4 n=7 2>&1); rc=$?
    [ "$rc" -eq 0 ] && ok || bad "window_trace $args: exit $rc"
    printf '%s\n' "$out" | grep -q '^check: every rank' && ok || bad "window_trace $args: not checked"
    printf '%s\n' "$out" | grep -q '^FAIL' && bad "window_trace $args: a check failed" || ok
done
# the syncs: three for the two-shot all-reduce (one between its phases), two otherwise, one inline
for args in "coll=allreduce form=two:3" "coll=allreduce form=one:2" "coll=allgather:2" "coll=allgather inline=1:1" \
            "coll=reduce_scatter inline=1:1"; do
    a=${args%:*}; want=${args##*:}
    got=$("$tr" $a p=3 n=5 | sed -n 's/^syncs: \([0-9]*\).*/\1/p')
    [ "$got" = "$want" ] && ok || bad "window_trace $a: $got syncs, not $want"
done
# a name it does not know: exit 2, the names it knows
out=$("$tr" coll=bogus 2>&1); rc=$?
[ "$rc" -eq 2 ] && ok || bad "window_trace coll=bogus: exit $rc, not 2"
printf '%s\n' "$out" | grep -q 'reduce_scatter' && ok || bad "window_trace coll=bogus: the known names not listed"
echo "trace-window: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
