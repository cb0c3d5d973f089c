#!/bin/sh
# bench_hosts.sh BENCH_HOSTS [BENCH_HOSTS_MPI] - all-reduce across two emulated
# hosts of two ranks each (network namespaces on a bridge, every link shaped
# both ways by tc tbf at BENCH_HOSTS_RATE, default 1gbit; no delay: this
# kernel has no netem), 8 B .. 64 MiB of float32:
#   coll ring    flat COLL_ALGO_RING over ports/coll_hosts.h, ranks
#                interleaved (rank r on host r % 2: every hop crosses hosts)
#   coll ring hm the same, ranks host-major (r / 2: two hops of four cross)
#   coll AUTO    flat AUTO, interleaved
#   coll_hier    coll_hier_allreduce, interleaved
#   Open MPI     MPI_Allreduce, interleaved (--map-by node), vader inside a
#                host and TCP between (mpirun runs in host 0's namespace and
#                starts host 1's daemon through an rsh agent that enters
#                host 1's namespace; each host also gets its own UTS
#                namespace and host name, so vader's segments - named by
#                host name, in the /dev/shm both hosts share - stay apart);
#                mpi_yield_when_idle 1, as the ranks outnumber the cores here
#   Gloo ring, Gloo chunked, Gloo hd   Gloo's AllreduceRing (the whole
#                vector round the ring), AllreduceRingChunked and
#                AllreduceHalvingDoubling
#                over its TCP transport, interleaved, meeting through a
#                FileStore in a directory every namespace sees (the binary
#                in $BENCH_HOSTS_GLOO: bench_hosts.c built as C++ with
#                -DBENCH_HOSTS_GLOO); without it the columns are left out,
#                a failure under CI=true
# Each figure: the median of 3 runs of the slowest rank's time per call.
# Root only. Everything made is removed on exit.
bin=${1:?usage: bench_hosts.sh path/to/bench_hosts [path/to/bench_hosts_mpi]}
mpibin=${2:-}
gloobin=${BENCH_HOSTS_GLOO:-}
tag="collb$$"
net=10.213.79
rate=${BENCH_HOSTS_RATE:-1gbit}
pids=""

[ "$(id -u)" = 0 ] || { echo "bench-hosts: needs root (network namespaces)"; exit 1; }
for c in ip tc unshare; do
    command -v $c >/dev/null 2>&1 || { echo "bench-hosts: $c is missing"; exit 1; }
done
out=$(mktemp -d)
cleanup() {
    # each $p is a `timeout` (ip netns exec and env exec into it), which
    # leads a process group of its own with the rank in it: TERM it (it
    # passes the signal on), then KILL what is left of the group
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    [ -n "$pids" ] && sleep 0.3
    for p in $pids; do kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    for h in 0 1; do ip netns del "${tag}h$h" 2>/dev/null; done
    ip netns del "${tag}sw" 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip netns add "${tag}sw" && ip -n "${tag}sw" link set lo up &&
ip -n "${tag}sw" link add br0 type bridge && ip -n "${tag}sw" link set br0 up || exit 1
for h in 0 1; do
    ns="${tag}h$h"
    ip netns add "$ns" &&
    ip -n "${tag}sw" link add "p$h" type veth peer name eth0 netns "$ns" &&
    ip -n "${tag}sw" link set "p$h" master br0 up &&
    ip -n "$ns" link set lo up &&
    ip -n "$ns" addr add "$net.$((h + 1))/24" dev eth0 &&
    ip -n "$ns" link set eth0 up &&
    ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 1mb latency 50ms &&
    ip netns exec "${tag}sw" tc qdisc add dev "p$h" root tbf rate "$rate" burst 1mb latency 50ms || exit 1
done
for h in 0 1; do ip netns exec "${tag}h$h" ping -c1 -W2 "$net.1" >/dev/null 2>&1; done
COLL_TCP_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
export COLL_TCP_TOKEN

coll_job() {    # name order variants...
    name=$1; order=$2; shift 2
    pids=""
    for r in 0 1 2 3; do
        if [ "$order" = interleaved ]; then h=$((r % 2)); else h=$((r / 2)); fi
        ip netns exec "${tag}h$h" env MASTER_ADDR="$net.1" MASTER_PORT=$((29800 + $$ % 100)) \
            WORLD_SIZE=4 RANK=$r timeout 600 "$bin" "$@" >"$out/$name.$r" 2>&1 &
        pids="$pids $!"
    done
    wait; pids=""
    grep '^row ' "$out/$name.0" | sed "s/^row \([0-9]*\) \([a-z]*\) /row \1 \2-$order /" >>"$out/rows"
    grep -v '^row \|^hosts ' "$out"/$name.* | head -5
}

echo "command: make bench-hosts (bench/bench_hosts.sh; 2 hosts x 2 ranks, links $rate)"
coll_job a interleaved ring auto hier
coll_job b host-major ring

if [ -n "$mpibin" ] && command -v mpirun >/dev/null 2>&1; then
    cat >"$out/agent.sh" <<EOF
#!/bin/sh
# mpirun's rsh agent: "HOST COMMAND..." runs COMMAND in that host's namespaces
h=\$1; shift
case "\$h" in $net.1) n=0 ;; $net.2) n=1 ;; *) echo "agent: unknown host \$h" >&2; exit 1 ;; esac
exec ip netns exec ${tag}h\$n unshare --uts sh -c "hostname ${tag}h\$n; \$*"
EOF
    chmod +x "$out/agent.sh"
    ip netns exec "${tag}h0" unshare --uts sh -c "hostname ${tag}h0; timeout 600 mpirun \
        --allow-run-as-root --oversubscribe -np 4 --host $net.1:2,$net.2:2 --map-by node \
        --mca plm_rsh_agent $out/agent.sh --mca btl self,vader,tcp --mca mpi_yield_when_idle 1 \
        --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 $mpibin" \
        >"$out/mpi" 2>&1
    grep '^row ' "$out/mpi" | sed 's/^row \([0-9]*\) mpi /row \1 mpi-interleaved /' >>"$out/rows"
    grep -q '^row ' "$out/mpi" || { echo "Open MPI run failed:"; grep -v setpgid "$out/mpi" | head -20; }
else
    echo "(no Open MPI: its column is left out)"
fi

if [ -n "$gloobin" ]; then
    mkdir -p "$out/store"
    pids=""
    for r in 0 1 2 3; do
        h=$((r % 2))
        ip netns exec "${tag}h$h" env RANK=$r WORLD_SIZE=4 BENCH_HOSTS_ADDR="$net.$((h + 1))" \
            BENCH_HOSTS_STORE="$out/store" timeout 600 "$gloobin" ring chunked hd >"$out/gloo.$r" 2>&1 &
        pids="$pids $!"
    done
    wait; pids=""
    grep '^row ' "$out/gloo.0" | sed 's/^row \([0-9]*\) \([a-z]*\) /row \1 \2-interleaved /' >>"$out/rows"
    grep -q '^row ' "$out/gloo.0" || { echo "Gloo run failed:"; cat "$out"/gloo.* | head -20; }
else
    echo "(no Gloo: its columns are left out)"
    [ "$CI" = true ] && { echo "bench-hosts: Gloo is missing (required under CI)"; exit 1; }
fi

# the table: one row per size, us per call
awk '
function col(v) { return v in seen ? v : "" }
{ b = $2; v = $3; t[b, v] = $4; if (!(b in bs)) { bs[b] = 1; order[nb++] = b } }
END {
    n = split("ring-interleaved ring-host-major auto-interleaved hier-interleaved mpi-interleaved gloo-interleaved gloochunked-interleaved gloohd-interleaved", vs, " ")
    split("coll_ring coll_ring_hm coll_AUTO coll_hier OpenMPI Gloo_ring Gloo_chunked Gloo_hd", hd, " ")
    printf "| bytes |"; for (i = 1; i <= n; i++) printf " %s (us) |", hd[i]; printf "\n"
    printf "|---:|"; for (i = 1; i <= n; i++) printf "---:|"; printf "\n"
    for (j = 0; j < nb; j++) {
        b = order[j]; printf "| %s |", b
        for (i = 1; i <= n; i++) printf " %s |", ((b, vs[i]) in t) ? t[b, vs[i]] : "-"
        printf "\n"
    }
}' "$out/rows"
