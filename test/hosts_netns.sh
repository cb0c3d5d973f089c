#!/bin/sh
# hosts_netns.sh TEST_HOSTS - the composite port (ports/coll_hosts.h) across
# emulated hosts: network namespaces made here for the purpose.
#
#   switch namespace:  bridge br0, one veth end per host attached to it
#   host namespaces h0..h7: eth0 = the other veth end, 10.213.78.(1..8)/24
#   every link shaped both ways by tc tbf (TEST_HOSTS_RATE, default 1gbit;
#   this kernel has no netem, so no delay is emulated)
#
# The hosts share the kernel and /dev/shm but not the network, which is
# what the port's host identity tells apart. Nothing is added to the
# namespace this script runs in, the namespaces have no route anywhere
# else, and every address used is one of theirs: no packet can leave.
#
# First, anywhere (no root needed): 2x2 on 127.0.0.1, interleaved and
# host-major, the hosts made by COLL_HOST_ID, the full --env checks.
#
# Jobs (each rank a process in its host's namespace, torchrun-style
# environment, one job token):
#   - H x L = 2x2, 4x2, 2x4, 8x1, ranks interleaved (rank r on host r % H)
#     and host-major (rank r on host r / L; LOCAL_RANK and LOCAL_WORLD_SIZE
#     set, as a launcher would): `TEST_HOSTS --env` on every rank (with the
#     port checker at 2x2, 4x2 host-major and 2x4 interleaved), which
#     is told the launcher's layout (TEST_LAYOUT) only to check what the
#     port learned;
#   - 4 ranks in one namespace, two "hosts" by COLL_HOST_ID;
#   - 2x2 with a wrong LOCAL_RANK, or LOCAL_WORLD_SIZE, on one rank:
#     COLL_ERR_MISMATCH on every rank; a COLL_HOST_ID that is empty on one rank: COLL_ERR_INVAL on every
#     rank;
#   - 2x2 all-reducing in a loop with a 1.5 s deadline while one rank is
#     killed (SIGKILL), host-major and interleaved: every survivor returns
#     an error within 4 s;
#   - 2x2 all-reducing in a loop while host 1's link goes down: every rank,
#     on both hosts, returns an error within 5 s (deadline 1.5 s);
#   - after each job: no shared-memory segment of the port left in /dev/shm.
#
# Namespaces need root (or CAP_SYS_ADMIN). Where they cannot be made this
# says so loudly and stops - a failure under CI=true, a skip elsewhere.
# Everything made is removed on exit, whatever the outcome: namespaces,
# bridge (inside them), processes, segments.

bin=${1:?usage: hosts_netns.sh path/to/test_hosts}
tag="collh$$"
net=10.213.78
rate=${TEST_HOSTS_RATE:-1gbit}
allhosts="0 1 2 3 4 5 6 7"
pids=""

skip() {
    if [ "${CI:-}" = true ]; then
        echo "hosts: $1 (namespaces are required under CI)"
        echo "hosts: $pass passed, $((fail + 1)) failed"
        exit 1
    fi
    echo "*********************************************************************"
    echo "*** hosts: the namespace jobs SKIPPED - $1"
    echo "*** (the emulated-hosts test needs root to create network namespaces)"
    echo "*********************************************************************"
    echo "hosts: $pass passed, $fail failed"
    [ $fail -eq 0 ]
    exit
}

cleanup() {
    # each $p is a `timeout` (ip netns exec and env exec into it), which
    # leads a process group of its own with the rank in it: TERM it (it
    # passes the signal on), then KILL what is left of the group
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    [ -n "$pids" ] && sleep 0.3
    for p in $pids; do kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    for h in $allhosts; do ip netns del "${tag}h$h" 2>/dev/null; done
    ip netns del "${tag}sw" 2>/dev/null
    # segments of this run's jobs only (ones that were not there before)
    for f in /dev/shm/collh-*; do
        [ -e "$f" ] || continue
        grep -qxF "$f" "$out/shm.before" 2>/dev/null || rm -f "$f"
    done
    [ -n "${out:-}" ] && rm -rf "$out"
}

out=$(mktemp -d)
ls -d /dev/shm/collh-* 2>/dev/null >"$out/shm.before"
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
COLL_TCP_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
export COLL_TCP_TOKEN
unset COLL_HOST_ID LOCAL_RANK LOCAL_WORLD_SIZE

pass=0; fail=0; port=29700
t_start=$(date +%s)

# host of rank r in an H x L job: interleaved r % H, host-major r / L
host_of() { if [ "$4" = interleaved ]; then echo $(($1 % $2)); else echo $(($1 / $3)); fi; }

# no segment of the port left behind by the job just run
check_shm() {
    left=$(ls -d /dev/shm/collh-* 2>/dev/null | grep -vxF -f "$out/shm.before" | wc -l)
    if [ "$left" -eq 0 ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "  $1: $left shared-memory segments left in /dev/shm"; fi
}

# add up the "result P F" lines of a job's ranks; a rank without one fails
collect() {    # name world
    jp=0; jf=0
    for r in $(seq 0 $(($2 - 1))); do
        line=$(grep '^result ' "$out/$1.$r")
        if [ -n "$line" ]; then
            set -- "$1" "$2" $line
            jp=$((jp + $4)); jf=$((jf + $5))
            [ "$5" != 0 ] && { echo "  rank $r:"; sed 's/^/    /' "$out/$1.$r" | head -40; }
            set -- "$1" "$2"
        else
            jf=$((jf + 1)); echo "  rank $r gave no result:"; sed 's/^/    /' "$out/$1.$r" | head -40
        fi
    done
    pass=$((pass + jp)); fail=$((fail + jf))
}

# ---- first, without namespaces: 2 x 2 on 127.0.0.1, hosts by COLL_HOST_ID ----
# (runs anywhere, root or not; the port is told nothing else)
lport=$((41000 + $$ % 4000))
for order in interleaved host-major; do
    lport=$((lport + 1)); pids=""
    layout=""
    for r in 0 1 2 3; do layout="$layout${layout:+,}$(host_of $r 2 2 $order)"; done
    for r in 0 1 2 3; do
        env MASTER_ADDR=127.0.0.1 MASTER_PORT=$lport WORLD_SIZE=4 RANK=$r \
            COLL_HOST_ID="loopback-host-$(host_of $r 2 2 $order)" TEST_LAYOUT="$layout" \
            TEST_PORT_CHECK=1 timeout 60 "$bin" --env >"$out/lo-$order.$r" 2>&1 &
        pids="$pids $!"
    done
    wait; pids=""
    collect "lo-$order" 4; check_shm "lo-$order"
    echo "  loopback 2x2 $order ($layout), hosts by COLL_HOST_ID: $jp checks ok, $jf wrong"
done

[ "$(id -u)" = 0 ] || skip "not running as root"
command -v ip >/dev/null 2>&1 || skip "the ip command is missing (Debian package iproute2)"
shaped=yes
if ! command -v tc >/dev/null 2>&1; then
    [ "${CI:-}" = true ] && { echo "hosts: tc is missing (Debian package iproute2)"; echo "hosts: $pass passed, $((fail + 1)) failed"; exit 1; }
    echo "*** hosts: tc is missing: links are not shaped"
    shaped=no
fi

. "$(dirname "$0")/netns_hosts.sh"
ip netns add "${tag}sw" 2>/dev/null || skip "ip netns add failed here"
netns_bridge "$tag" || { echo "hosts: cannot make the bridge"; echo "hosts: $pass passed, $((fail + 1)) failed"; exit 1; }
for h in $allhosts; do
    ns="${tag}h$h"
    netns_host "$tag" "$h" "$net" || { echo "hosts: cannot make host $h"; echo "hosts: $pass passed, $((fail + 1)) failed"; exit 1; }
    if [ $shaped = yes ]; then
        # both directions of the host's link: out of the host, into it
        { ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 1mb latency 50ms &&
          ip netns exec "${tag}sw" tc qdisc add dev "p$h" root tbf rate "$rate" burst 1mb latency 50ms; } ||
            { echo "hosts: tc cannot shape host $h's link"; echo "hosts: $pass passed, $((fail + 1)) failed"; exit 1; }
    fi
done
# each host reaches host 0, where every job's rank 0 runs
for h in $allhosts; do
    i=0
    while ! ip netns exec "${tag}h$h" ping -c1 -W1 "$net.1" >/dev/null 2>&1 && [ $i -lt 5 ]; do
        i=$((i + 1))
    done
done

# ---- the collectives at each shape and order -------------------------------
for shape in 2x2 4x2 2x4 8x1; do
    H=${shape%x*}; L=${shape#*x}; W=$((H * L))
    for order in interleaved host-major; do
        [ "$L" = 1 ] && [ "$order" = host-major ] && continue   # the same job
        name="$shape-$order"; port=$((port + 1))
        layout=""
        for r in $(seq 0 $((W - 1))); do layout="$layout${layout:+,}$(host_of $r $H $L $order)"; done
        # the port checker where both children carry a ring's steps (its
        # 28-56 thousand checks a job are most of the time taken)
        case $name in 2x2-*|4x2-host-major|2x4-interleaved) check=TEST_PORT_CHECK=1 ;; *) check= ;; esac
        t0=$(date +%s%N)
        pids=""
        for r in $(seq 0 $((W - 1))); do
            h=$(host_of $r $H $L $order)
            extra=""
            [ $order = host-major ] && extra="LOCAL_RANK=$((r % L)) LOCAL_WORLD_SIZE=$L"
            ip netns exec "${tag}h$h" env MASTER_ADDR="$net.1" MASTER_PORT=$port \
                WORLD_SIZE=$W RANK=$r TEST_LAYOUT="$layout" $check $extra \
                timeout 60 "$bin" --env >"$out/$name.$r" 2>&1 &
            pids="$pids $!"
        done
        wait
        pids=""
        collect "$name" $W
        check_shm "$name"
        printf '  %-22s %2d ranks (%s): %5d checks ok, %d wrong, %.1f s\n' "$name" $W "$layout" \
            $jp $jf "$(awk "BEGIN { print ($(date +%s%N) - $t0) / 1e9 }")"
    done
done

# ---- two hosts in one namespace, told apart by COLL_HOST_ID ---------------
port=$((port + 1)); pids=""
for r in 0 1 2 3; do
    ip netns exec "${tag}h0" env MASTER_ADDR="$net.1" MASTER_PORT=$port WORLD_SIZE=4 RANK=$r \
        COLL_HOST_ID="job-host-$((r % 2))" TEST_LAYOUT=0,1,0,1 \
        timeout 60 "$bin" --env >"$out/hostid.$r" 2>&1 &
    pids="$pids $!"
done
wait; pids=""
collect hostid 4; check_shm hostid
echo "  COLL_HOST_ID: 2 hosts in one namespace: $jp checks ok, $jf wrong"

# ---- a launcher that is wrong about LOCAL_RANK; an empty COLL_HOST_ID -----
for bad in local_rank local_world_size host_id; do
    port=$((port + 1)); pids=""
    for r in 0 1 2 3; do
        h=$((r / 2)); extra="LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2"; expect=mismatch
        [ $bad = local_rank ] && [ $r = 3 ] && extra="LOCAL_RANK=0 LOCAL_WORLD_SIZE=2"
        [ $bad = local_world_size ] && [ $r = 0 ] && extra="LOCAL_RANK=0 LOCAL_WORLD_SIZE=4"
        if [ $bad = host_id ]; then
            expect=inval; extra=""
            [ $r = 2 ] && extra="COLL_HOST_ID="
        fi
        ip netns exec "${tag}h$h" env MASTER_ADDR="$net.1" MASTER_PORT=$port WORLD_SIZE=4 RANK=$r \
            TEST_EXPECT=$expect $extra timeout 60 "$bin" --env-init >"$out/bad-$bad.$r" 2>&1 &
        pids="$pids $!"
    done
    wait; pids=""
    collect "bad-$bad" 4; check_shm "bad-$bad"
    echo "  wrong $bad on one rank: every rank refused it: $jp checks ok, $jf wrong" \
         "($(grep -h '^init' "$out/bad-$bad.0" | head -1))"
done

# ---- a rank killed mid-call ------------------------------------------------
for order in host-major interleaved; do
    port=$((port + 1)); pids=""
    victim=3; [ $order = interleaved ] && victim=2
    for r in 0 1 2 3; do
        h=$(host_of $r 2 2 $order)
        ip netns exec "${tag}h$h" env MASTER_ADDR="$net.1" MASTER_PORT=$port WORLD_SIZE=4 RANK=$r \
            timeout 60 "$bin" --env-loop >"$out/kill-$order.$r" 2>&1 &
        pids="$pids $!"
    done
    i=0
    while [ $i -lt 200 ] && [ "$(cat "$out"/kill-$order.* 2>/dev/null | grep -c '^looping')" -lt 4 ]; do
        sleep 0.1; i=$((i + 1))
    done
    sleep 0.3
    vpid=$(sed -n 's/^looping //p' "$out/kill-$order.$victim")
    [ -n "$vpid" ] && kill -9 "$vpid"
    wait; pids=""
    for r in 0 1 2 3; do
        [ $r = $victim ] && continue
        set -- $(grep '^loop ' "$out/kill-$order.$r") x x x
        ok=no
        # any error will do (the port's, or the call check's COLL_ERR_PEER),
        # but within the deadline and a margin
        case "$2" in -[0-9]*) [ "$3" -le 4000 ] 2>/dev/null && ok=yes ;; esac
        if [ $ok = yes ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
        echo "  $order, rank $victim killed: rank $r (host $(host_of $r 2 2 $order)) returned" \
             "${2:-nothing} after ${3:-?} ms (deadline 1500) - $ok"
        [ $ok = no ] && sed 's/^/    /' "$out/kill-$order.$r"
    done
    check_shm "kill-$order"
done

# ---- a host drops off the network mid-call ----------------------------------
# No EOF or reset reaches anyone: only the deadline can tell, on both hosts,
# and on host 1 its second rank waits in shared memory for a peer that
# waits on TCP.
port=$((port + 1)); pids=""
for r in 0 1 2 3; do
    ip netns exec "${tag}h$((r / 2))" env MASTER_ADDR="$net.1" MASTER_PORT=$port WORLD_SIZE=4 \
        RANK=$r timeout 60 "$bin" --env-loop >"$out/unplug.$r" 2>&1 &
    pids="$pids $!"
done
i=0
while [ $i -lt 200 ] && [ "$(cat "$out"/unplug.* 2>/dev/null | grep -c '^looping')" -lt 4 ]; do
    sleep 0.1; i=$((i + 1))
done
sleep 0.3
ip -n "${tag}h1" link set eth0 down
wait; pids=""
for r in 0 1 2 3; do
    set -- $(grep '^loop ' "$out/unplug.$r") x x x
    ok=no
    case "$2" in -[0-9]*) [ "$3" -le 5000 ] 2>/dev/null && ok=yes ;; esac
    if [ $ok = yes ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    echo "  host 1 unplugged: rank $r (host $((r / 2))) returned ${2:-nothing} after ${3:-?} ms" \
         "(deadline 1500) - $ok"
    [ $ok = no ] && sed 's/^/    /' "$out/unplug.$r"
done
check_shm unplug

echo "  links shaped: $shaped ($rate); $(($(date +%s) - t_start)) s"
echo "hosts: $pass passed, $fail failed"
[ $fail -eq 0 ]
