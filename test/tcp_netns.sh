#!/bin/sh
# tcp_netns.sh TEST_TCP - the TCP port across hosts, the hosts being network
# namespaces made here for the purpose.
#
#   switch namespace:  bridge br0, one veth end per host attached to it
#   host namespaces h0..h2: eth0 = the other veth end, 10.213.77.(1..3)/24
#
# Nothing is added to the namespace this script runs in, the namespaces have
# no route anywhere else, and every address used is one of theirs: no packet
# can leave. A job of 6 ranks, two per host (so both links between hosts and
# links inside one host are used), meets at MASTER_ADDR=10.213.77.1 as a
# torchrun job would (with one COLL_TCP_TOKEN), and runs `TEST_TCP --env` on
# every rank. A second job
# puts one rank on each host and takes h2's link down in the middle: the
# other ranks must report an error within their deadline, as with a real
# host that drops off the network.
#
# Namespaces need root (or CAP_SYS_ADMIN). Where they cannot be made this
# says so loudly and stops - a failure under CI=true, a skip elsewhere.
# Everything made is removed on exit, whatever the outcome.

bin=${1:?usage: tcp_netns.sh path/to/test_tcp}
tag="collt$$"
net=10.213.77
hosts="0 1 2"

skip() {
    if [ "${CI:-}" = true ]; then
        echo "tcp-netns: $1 (namespaces are required under CI)"
        echo "tcp-netns: 0 passed, 1 failed"
        exit 1
    fi
    echo "*********************************************************************"
    echo "*** tcp-netns: SKIPPED - $1"
    echo "*** (the cross-host TCP test needs root to create network namespaces)"
    echo "*********************************************************************"
    exit 0
}

cleanup() {
    for h in $hosts; do ip netns del "${tag}h$h" 2>/dev/null; done
    ip netns del "${tag}sw" 2>/dev/null
    [ -n "${out:-}" ] && rm -rf "$out"
}

[ "$(id -u)" = 0 ] || skip "not running as root"
command -v ip >/dev/null 2>&1 || skip "the ip command is missing (Debian package iproute2)"
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

. "$(dirname "$0")/netns_hosts.sh"
ip netns add "${tag}sw" 2>/dev/null || skip "ip netns add failed here"
netns_bridge "$tag" || { echo "tcp-netns: cannot make the bridge"; exit 1; }
for h in $hosts; do
    netns_host "$tag" "$h" "$net" || { echo "tcp-netns: cannot make host $h"; exit 1; }
done
out=$(mktemp -d)
# One job token for every rank, as a launcher would hand it out.
COLL_TCP_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
export COLL_TCP_TOKEN

# Wait until each host reaches the master's address (the bridge learns in
# a moment; a failed ping here would only mean the next step fails slowly).
for h in $hosts; do
    i=0
    while ! ip netns exec "${tag}h$h" ping -c1 -W1 "$net.1" >/dev/null 2>&1 && [ $i -lt 5 ]; do
        i=$((i + 1))
    done
done

pass=0; fail=0; nosys=0

# ---- job 1: 6 ranks, 2 per host, the full check suite -----------------------
world=6
for r in 0 1 2 3 4 5; do
    h=$((r / 2))
    ip netns exec "${tag}h$h" env MASTER_ADDR="$net.1" MASTER_PORT=29500 \
        WORLD_SIZE=$world RANK=$r LOCAL_RANK=$((r % 2)) \
        timeout 120 "$bin" --env >"$out/job1.$r" 2>&1 &
done
wait
for r in 0 1 2 3 4 5; do
    line=$(grep '^result ' "$out/job1.$r")
    if [ -n "$line" ]; then
        set -- $line
        pass=$((pass + $2)); fail=$((fail + $3))
        nosys=$((nosys + $4))
    else
        fail=$((fail + 1))
    fi
    if [ -z "$line" ] || [ "$3" != 0 ]; then
        echo "  rank $r (host h$((r / 2))) output:"; sed 's/^/    /' "$out/job1.$r"
    fi
done
echo "  6 ranks on 3 namespace hosts ($net.1-3): $pass checks ok, $fail wrong," \
     "$nosys calls answered COLL_ERR_NOSYS (not counted)"

# ---- job 2: a host drops off the network mid-job -----------------------------
# Every rank runs all-reduces in a loop (`--env-loop`) with a 1.5 s
# deadline; once all have started, h2's link goes down. No EOF or reset can
# reach the others: only their deadlines can tell them.
for r in 0 1 2; do
    ip netns exec "${tag}h$r" env MASTER_ADDR="$net.1" MASTER_PORT=29501 \
        WORLD_SIZE=3 RANK=$r timeout 60 "$bin" --env-loop >"$out/job2.$r" 2>&1 &
done
i=0
while [ $i -lt 100 ] && [ "$(cat "$out"/job2.* 2>/dev/null | grep -c '^looping')" -lt 3 ]; do
    sleep 0.1; i=$((i + 1))
done
ip -n "${tag}h2" link set eth0 down
wait
for r in 0 1; do
    line=$(grep '^loop ' "$out/job2.$r")
    # "loop RC MS": the code the all-reduce returned and how long the
    # failing call took
    set -- $line x x x
    if [ "$2" = -110 ] || [ "$2" = -5 ]; then
        if [ "$3" -le 4000 ] 2>/dev/null; then pass=$((pass + 1)); ok=yes; else fail=$((fail + 1)); ok=no; fi
    else
        fail=$((fail + 1)); ok=no
    fi
    echo "  host h2 unplugged: rank $r returned ${2:-nothing} after ${3:-?} ms (deadline 1500) - $ok"
    [ $ok = no ] && sed 's/^/    /' "$out/job2.$r"
done

echo "tcp-netns: $pass passed, $fail failed"
[ $fail -eq 0 ]
