#!/bin/sh
# bench_hosts.sh BENCH_HOSTS [BENCH_HOSTS_MPI] - all-reduce, broadcast,
# all-gather and reduce-scatter across two emulated hosts of two ranks each
# (network namespaces on a bridge, each host's link shaped both ways by tc
# tbf, at every rate of BENCH_HOSTS_RATES, default "1gbit 10gbit"; no delay:
# this kernel has no netem), float32, 8 B .. 64 MiB (8 B, 4 KiB, 64 KiB,
# 1 MiB, 8 MiB, 64 MiB; BENCH_HOSTS_MAX caps it, BENCH_HOSTS_COLLS picks
# collectives: see bench_hosts.c). Columns, one job each, on the same links:
#   coll ring    flat COLL_ALGO_RING over ports/coll_hosts.h (broadcast:
#                COLL_ALGO_PIPELINED_CHAIN, the chain along the ring), ranks
#                interleaved (rank r on host r % 2: every hop crosses hosts)
#   coll AUTO    flat AUTO, interleaved
#   coll_hier    coll_hier_allreduce / _broadcast / _allgather /
#                _reduce_scatter, interleaved
#   ... hm       the same three with ranks host-major (r / 2)
#   Open MPI     MPI_Allreduce, MPI_Bcast, MPI_Allgather,
#                MPI_Reduce_scatter_block, interleaved (--map-by node),
#                vader inside a host and TCP between (mpirun runs in host
#                0's namespace and starts host 1's daemon through an rsh
#                agent that enters host 1's namespace; each host also gets
#                its own UTS namespace and host name, so vader's segments -
#                named by host name, in the /dev/shm both hosts share - stay
#                apart); mpi_yield_when_idle 1, as the ranks outnumber the
#                cores here
#   Gloo         every algorithm it has for the collective (bench_hosts.c
#                lists them) over its TCP transport, interleaved, meeting
#                through a FileStore in a directory every namespace sees
#                (the binary in $BENCH_HOSTS_GLOO: bench_hosts.c built as
#                C++ with -DBENCH_HOSTS_GLOO); without it the columns are
#                left out, a failure under CI=true
#   raw TCP      before the collectives at each rate, two connections
#                exchanging at once between the hosts, no library on top
#                (bench/tcpstream -l/-c, $BENCH_HOSTS_TCPSTREAM): what the
#                link and the CPUs carry; the (a) goals are read against it
# Each figure: the median of 7 runs (below 64 KiB) or 3 of the slowest rank's time per call.
# Then the goals, PASS or MISS, with the measured figure beside each bound.
# BENCH_HOSTS_KEEP=FILE keeps the raw rows (RATE KIND BYTES VARIANT-ORDER US).
# Root only. Everything made (namespaces, veths, bridge, qdiscs, processes,
# /dev/shm segments, temporary files) is removed on exit, whatever the outcome.
bin=${1:?usage: bench_hosts.sh path/to/bench_hosts [path/to/bench_hosts_mpi]}
mpibin=${2:-}
gloobin=${BENCH_HOSTS_GLOO:-}
tcpstream=${BENCH_HOSTS_TCPSTREAM:-build/bench/tcpstream}
tag="collb$$"
net=10.213.79
rates=${BENCH_HOSTS_RATES:-1gbit 10gbit}
pids=""
start=$(date +%s)

[ "$(id -u)" = 0 ] || { echo "bench-hosts: needs root (network namespaces)"; exit 1; }
for c in ip tc unshare; do
    command -v $c >/dev/null 2>&1 || { echo "bench-hosts: $c is missing"; exit 1; }
done
for rate in $rates; do
    case $rate in
    *gbit|*mbit) ;;
    *) echo "bench-hosts: rate $rate: want NNgbit or NNmbit"; exit 1 ;;
    esac
done
out=$(mktemp -d)
ls -d /dev/shm/collh-* 2>/dev/null >"$out/shm.before"
cleanup() {
    # each $p is a `timeout` (ip netns exec and env exec into it), which
    # leads a process group of its own with the rank in it: TERM it (it
    # passes the signal on), then KILL what is left of the group
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    [ -n "$pids" ] && sleep 0.3
    for p in $pids; do kill -KILL -- "-$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    # deleting a namespace deletes its veth end (and so the pair), the
    # bridge and the qdiscs on them
    for h in 0 1; do ip netns del "${tag}h$h" 2>/dev/null; done
    ip netns del "${tag}sw" 2>/dev/null
    for f in /dev/shm/collh-*; do
        [ -e "$f" ] || continue
        grep -qxF "$f" "$out/shm.before" 2>/dev/null || rm -f "$f"
    done
    rm -f /dev/shm/vader_segment."${tag}"h* 2>/dev/null
    rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE

ip netns add "${tag}sw" && ip -n "${tag}sw" link set lo up &&
ip -n "${tag}sw" link add br0 type bridge && ip -n "${tag}sw" link set br0 up || exit 1
for h in 0 1; do
    ns="${tag}h$h"
    ip netns add "$ns" &&
    ip -n "${tag}sw" link add "p$h" type veth peer name eth0 netns "$ns" &&
    ip -n "${tag}sw" link set "p$h" master br0 up &&
    ip -n "$ns" link set lo up &&
    ip -n "$ns" addr add "$net.$((h + 1))/24" dev eth0 &&
    ip -n "$ns" link set eth0 up || exit 1
done
shape() {   # rate: each host's link, both ways (host's eth0 out, switch port out)
    for h in 0 1; do
        ip netns exec "${tag}h$h" tc qdisc replace dev eth0 root tbf rate "$1" burst 1mb latency 50ms &&
        ip netns exec "${tag}sw" tc qdisc replace dev "p$h" root tbf rate "$1" burst 1mb latency 50ms || return 1
    done
}
for h in 0 1; do ip netns exec "${tag}h$h" ping -c1 -W2 "$net.1" >/dev/null 2>&1; done
COLL_TCP_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
export COLL_TCP_TOKEN
: >"$out/rows"

keep_rows() {   # file order: rank 0's rows, as "RATE KIND BYTES VARIANT-ORDER US MIN MAX IDLE"
    grep '^row ' "$1" | awk -v r="$rate" -v o="$2" '{ print r, $2, $3, $4 "-" o, $5, $6, $7, $8 }' >>"$out/rows"
}

# Raw TCP between the hosts, both ways at once, two connections (as four
# interleaved ranks send): tcpstream's exchange with the TCP port's socket
# settings and no library on top, one pair of ends per connection (-l on
# host 0, -c on host 1). Prints the rate each way, summed over the two.
stream_job() {
    for k in 0 1; do
        ip netns exec "${tag}h0" timeout 300 "$tcpstream" -l "$net.1:$((29900 + k))" -s 8M -T 300 \
            >"$out/stream.$k" 2>&1 &
        ip netns exec "${tag}h1" timeout 300 "$tcpstream" -c "$net.1:$((29900 + k))" -s 8M \
            >/dev/null 2>&1 &
    done
    wait
    cat "$out/stream.0" "$out/stream.1" | awk -F'\t' -v r="$rate" -v raw="$out/raw" '
        $1 == "tcpstream" && $9 == "ok" { x += $7; n++ }
        END { if (n == 2) { printf "raw TCP at %s, each way, 2 connections exchanging at once: %.3f GB/s\n", r, x
                            print r ":" x * 1e9 >>raw }
              else printf "raw TCP at %s: a stream failed\n", r }'
}

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
    keep_rows "$out/$name.0" "$order"
    grep -v '^row \|^hosts ' "$out"/$name.* | head -5
}

mpi_job() {
    cat >"$out/agent.sh" <<EOF
#!/bin/sh
# mpirun's rsh agent: "HOST COMMAND..." runs COMMAND in that host's namespaces
h=\$1; shift
case "\$h" in $net.1) n=0 ;; $net.2) n=1 ;; *) echo "agent: unknown host \$h" >&2; exit 1 ;; esac
exec ip netns exec ${tag}h\$n unshare --uts sh -c "hostname ${tag}h\$n; \$*"
EOF
    chmod +x "$out/agent.sh"
    mkdir -p "$out/ompi"
    ip netns exec "${tag}h0" unshare --uts sh -c "hostname ${tag}h0; timeout 900 mpirun \
        --allow-run-as-root --oversubscribe -np 4 --host $net.1:2,$net.2:2 --map-by node \
        ${BENCH_HOSTS_MAX:+-x BENCH_HOSTS_MAX} ${BENCH_HOSTS_COLLS:+-x BENCH_HOSTS_COLLS} --mca orte_tmpdir_base $out/ompi \
        --mca plm_rsh_agent $out/agent.sh --mca btl self,vader,tcp --mca mpi_yield_when_idle 1 \
        --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 $mpibin" \
        >"$out/mpi" 2>&1
    keep_rows "$out/mpi" interleaved
    grep -q '^row ' "$out/mpi" || { echo "Open MPI run failed:"; grep -v setpgid "$out/mpi" | head -20; }
}

gloo_job() {
    rm -rf "$out/store"; mkdir -p "$out/store"
    pids=""
    for r in 0 1 2 3; do
        h=$((r % 2))
        ip netns exec "${tag}h$h" env RANK=$r WORLD_SIZE=4 BENCH_HOSTS_ADDR="$net.$((h + 1))" \
            BENCH_HOSTS_STORE="$out/store" timeout 900 "$gloobin" >"$out/gloo.$r" 2>&1 &
        pids="$pids $!"
    done
    wait; pids=""
    keep_rows "$out/gloo.0" interleaved
    grep -q '^row ' "$out/gloo.0" || { echo "Gloo run failed:"; cat "$out"/gloo.* | head -20; }
    grep -h 'wrong' "$out"/gloo.[0-9] | grep -v '^row ' | sort | uniq | head -8
}

[ -n "$BENCH_HOSTS_MAX" ] && export BENCH_HOSTS_MAX
[ -n "$BENCH_HOSTS_COLLS" ] && export BENCH_HOSTS_COLLS
echo "command: make bench-hosts (bench/bench_hosts.sh; 2 hosts x 2 ranks, each host's link shaped both ways at: $rates)"
[ -n "$mpibin" ] && command -v mpirun >/dev/null 2>&1 || { mpibin=""; echo "(no Open MPI: its column is left out)"; }
if [ -z "$gloobin" ]; then
    echo "(no Gloo: its columns are left out)"
    [ "$CI" = true ] && { echo "bench-hosts: Gloo is missing (required under CI)"; exit 1; }
fi
rate_bps=""
for rate in $rates; do
    shape "$rate" || { echo "bench-hosts: tc tbf at $rate failed"; exit 1; }
    t0=$(date +%s)
    stream_job
    coll_job a interleaved ring auto hier
    coll_job b host-major ring auto hier
    [ -n "$mpibin" ] && mpi_job
    [ -n "$gloobin" ] && gloo_job
    case $rate in
    *gbit) bps=$(( ${rate%gbit} * 1000000000 )) ;;
    *mbit) bps=$(( ${rate%mbit} * 1000000 )) ;;
    esac
    rate_bps="$rate_bps $rate:$bps"
    echo "($rate: $(( $(date +%s) - t0 )) s)"
done

# the tables (one per rate and collective, us per call) and the goals
raws=$(cat "$out/raw" 2>/dev/null | tr '\n' ' ')
awk -v rates="$rate_bps" -v raws="$raws" '
function hb(b) { return b >= 1048576 ? b / 1048576 " MiB" : b >= 1024 ? b / 1024 " KiB" : b }
function has(k, v) { return ((rt, k, b, v) in t) && t[rt, k, b, v] != "wrong" }
function val(k, v) { return has(k, v) ? t[rt, k, b, v] + 0 : -1 }
function min2(x, y) { return x < 0 ? y : y < 0 ? x : x < y ? x : y }
function best_coll(o) { return min2(val(k, "auto-" o), val(k, "hier-" o)) }
function best_gloo(  i, x, m) { m = -1; gname = ""
    for (i = 1; i <= ng[k]; i++) { x = val(k, gv[k, i]); if (x >= 0 && (m < 0 || x < m)) { m = x; gname = gh[k, i] } }
    return m }
function name_coll(o) { return val(k, "hier-" o) >= 0 && (val(k, "auto-" o) < 0 || val(k, "hier-" o) <= val(k, "auto-" o)) ? "coll_hier" : "coll AUTO" }
function pf(ok) { return ok ? "PASS" : "MISS" }
function bestv(o) { return name_coll(o) == "coll_hier" ? "hier-" o : "auto-" o }
function range(v) { return ((rt, k, b, v) in rlo) ? sprintf("%s-%s us", rlo[rt, k, b, v], rhi[rt, k, b, v]) : "?" }
function apart(v, w) { return ((rt, k, b, v) in rlo) && ((rt, k, b, w) in rlo) && rlo[rt, k, b, v] + 0 > rhi[rt, k, b, w] + 0 }
function floors(need, c, peer, pn,   f, f2) {   # what the link allows at size b, against a goal that wants need us
    f = b * xf[k] / R * 1e6; f2 = (rt in raw) ? b * xf[k] / raw[rt] * 1e6 : f; if (f2 < f) f2 = f
    printf "; the link carries the %s a host sends across in no less than %.0f us (raw TCP here: %.0f us); coll %.0f us (%.2f of that), %s %.0f us (%.2f)",
        hb(b * xf[k]), f, f2, c, c / f2, pn, peer, peer / f2
    if (need < f2) printf ": the goal needs %.0f us, below what the link carries (a run under it rode the 1 MB tbf burst): bound by the link", need
    else { printf ": the goal needs %.0f us, which the link allows: not bound by the link", need; cpus(bestv("interleaved")) }
}
function cpus(v) {    # the idle CPU share over the runs of row v at size b
    if (((rt, k, b, v) in idle) && idle[rt, k, b, v] >= 0)
        printf "; the CPUs were %.0f%% idle over coll%ss runs%s", 100 * idle[rt, k, b, v], "\047",
            idle[rt, k, b, v] < 0.05 ? ": bound by the CPUs" : ""
}
{ t[$1, $2, $3, $4] = $5; if (NF >= 7) { rlo[$1, $2, $3, $4] = $6; rhi[$1, $2, $3, $4] = $7 }
  if (NF >= 8) idle[$1, $2, $3, $4] = $8
  if (!(($1, $2, $3) in seen)) { seen[$1, $2, $3] = 1; bl[$1, $2, ++nb[$1, $2]] = $3 } }
END {
    p = 4; H = 2
    nk = split("allreduce broadcast allgather reduce_scatter", ks, " ")
    bf["allreduce"] = 2 * (p - 1) / p; bf["broadcast"] = 1; bf["allgather"] = (p - 1) / p; bf["reduce_scatter"] = (p - 1) / p
    xf["allreduce"] = 2 * (H - 1) / H; xf["broadcast"] = 1; xf["allgather"] = (H - 1) / H; xf["reduce_scatter"] = (H - 1) / H
    ng["allreduce"] = 3; split("gloo_ring gloo_chunked gloo_hd", x1, " "); split("Gloo_ring Gloo_chunked Gloo_hd", y1, " ")
    ng["broadcast"] = 2; split("gloo_onetoall gloo_bcast", x2, " "); split("Gloo_one_to_all Gloo_broadcast()", y2, " ")
    ng["allgather"] = 2; split("gloo_ring gloo_ag", x3, " "); split("Gloo_ring Gloo_allgather()", y3, " ")
    ng["reduce_scatter"] = 1; split("gloo_hd", x4, " "); split("Gloo_hd", y4, " ")
    for (i = 1; i <= 3; i++) { gv["allreduce", i] = x1[i] "-interleaved"; gh["allreduce", i] = y1[i] }
    for (i = 1; i <= 2; i++) { gv["broadcast", i] = x2[i] "-interleaved"; gh["broadcast", i] = y2[i] }
    for (i = 1; i <= 2; i++) { gv["allgather", i] = x3[i] "-interleaved"; gh["allgather", i] = y3[i] }
    gv["reduce_scatter", 1] = x4[1] "-interleaved"; gh["reduce_scatter", 1] = y4[1]
    nc = split("ring-interleaved ring-host-major auto-interleaved auto-host-major hier-interleaved hier-host-major mpi-interleaved", cv, " ")
    split("coll_ring|coll_ring_hm|coll_AUTO|coll_AUTO_hm|coll_hier|coll_hier_hm|Open_MPI", ch, "|")
    nr = split(rates, rl, " ")
    for (ri = 1; ri <= nr; ri++) {
        split(rl[ri], rr, ":"); rt = rr[1]; R = rr[2] / 8
        for (ki = 1; ki <= nk; ki++) {
            k = ks[ki]; if (!nb[rt, k]) continue
            printf "\n%s, %s, us per call (busbw: coll AUTO or coll_hier, whichever is faster, GB/s)\n", k, rt
            printf "| bytes |"
            for (i = 1; i <= nc; i++) { h = ch[i]; if (k == "broadcast") sub(/ring/, "chain", h); gsub(/_/, " ", h); sub(/coll hier/, "coll_hier", h); printf " %s |", h }
            for (i = 1; i <= ng[k]; i++) { h = gh[k, i]; gsub(/_/, " ", h); printf " %s |", h }
            printf " busbw |\n|---:|"
            for (i = 1; i <= nc + ng[k] + 1; i++) printf "---:|"
            printf "\n"
            for (j = 1; j <= nb[rt, k]; j++) {
                b = bl[rt, k, j]; printf "| %s |", hb(b)
                for (i = 1; i <= nc; i++) printf " %s |", ((rt, k, b, cv[i]) in t) ? t[rt, k, b, cv[i]] : "-"
                for (i = 1; i <= ng[k]; i++) printf " %s |", ((rt, k, b, gv[k, i]) in t) ? t[rt, k, b, gv[k, i]] : "-"
                c = best_coll("interleaved")
                printf " %s |\n", (c > 0 ? sprintf("%.3f", b / (c * 1e-6) * bf[k] / 1e9) : "-")
            }
        }
    }
    nraw = split(raws, rw, " "); for (i = 1; i <= nraw; i++) { split(rw[i], q, ":"); raw[q[1]] = q[2] + 0 }
    printf "\nGOALS (from the tables above; coll = the faster of coll AUTO and coll_hier, interleaved, unless said)\n"
    printf "(a) busbw = bytes / time x bus factor (nccl-tests; factor: all-reduce 2(p-1)/p = 1.5, broadcast 1,\n"
    printf "    all-gather and reduce-scatter (p-1)/p = 0.75). The tbf shapes each HOST link (2 ranks share it), R\n"
    printf "    each way; of every byte of the vector a host must send (and receive) at least x across: all-reduce\n"
    printf "    2(H-1)/H = 1, broadcast 1 (the root host), all-gather and reduce-scatter (H-1)/H = 0.5, so algbw <= R / x\n"
    printf "    and bound = 0.9 x R / x x factor: 0.9 x R x 1.5 (all-reduce), x 1 (broadcast), x 1.5 (all-gather, reduce-scatter)\n"
    printf "    Beside it, the same busbw against the raw TCP this machine carries over the shaped link (two\n"
    printf "    connections exchanging at once, no library): what the CPUs leave of R.\n"
    for (ri = 1; ri <= nr; ri++) {
        split(rl[ri], rr, ":"); rt = rr[1]; R = rr[2] / 8
        for (ki = 1; ki <= nk; ki++) {
            k = ks[ki]
            for (j = 1; j <= nb[rt, k]; j++) {
                b = bl[rt, k, j]; if (b < 8388608) continue
                c = best_coll("interleaved"); bound = 0.9 * R / xf[k] * bf[k]
                if (c < 0) { printf "(a) %s %s %s: no coll figure: MISS\n", rt, k, hb(b); continue }
                bus = b / (c * 1e-6) * bf[k]
                printf "(a) %s %-14s %6s: busbw %.3f GB/s (%s) vs bound %.3f GB/s (R %.3f GB/s; %.2f of R/x x factor): %s", rt, k, hb(b),
                    bus / 1e9, name_coll("interleaved"), bound / 1e9, R / 1e9, bus / (bound / 0.9), pf(bus >= bound)
                if (rt in raw) printf "; raw TCP here %.3f GB/s: %.2f of it / x x factor", raw[rt] / 1e9, bus / (raw[rt] / xf[k] * bf[k])
                v = bestv("interleaved")
                if (bus < bound && ((rt, k, b, v) in idle) && idle[rt, k, b, v] >= 0)
                    printf "; the CPUs were %.0f%% idle over those runs%s", 100 * idle[rt, k, b, v],
                        idle[rt, k, b, v] < 0.05 ? ": bound by the CPUs" : ""
                printf "\n"
            }
        }
    }
    for (ri = 1; ri <= nr; ri++) {
        split(rl[ri], rr, ":"); rt = rr[1]; R = rr[2] / 8
        for (ki = 1; ki <= nk; ki++) {
            k = ks[ki]; wg = -1; wm = -1; ng_ = 0; nm_ = 0
            for (j = 1; j <= nb[rt, k]; j++) {
                b = bl[rt, k, j]; if (b < 65536) continue
                c = best_coll("interleaved"); if (c <= 0) continue
                g = best_gloo(); m = val(k, "mpi-interleaved")
                if (g > 0) { ng_++; r = g / c; if (wg < 0 || r < wg) { wg = r; wgb = b; wgn = gname; wgg = g; wgc = c } }
                if (m > 0) { nm_++; r = m / c; if (wm < 0 || r < wm) { wm = r; wmb = b; wmm = m; wmc = c } }
            }
            if (ng_) {
                printf "(b) %s %-14s vs Gloo (its best algorithm at each size), >= 64 KiB: worst %.2fx at %s (%s), bound 2x: %s", rt, k, wg, hb(wgb), wgn, pf(wg >= 2)
                if (wg < 2) { b = wgb; floors(wgg / 2, wgc, wgg, "Gloo") }
                printf "\n"
            } else printf "(b) %s %-14s vs Gloo: no Gloo figure at >= 64 KiB: MISS\n", rt, k
            if (nm_) {
                printf "(b) %s %-14s vs Open MPI, >= 64 KiB: worst %.2fx at %s, bound 1x: %s", rt, k, wm, hb(wmb), pf(wm >= 1)
                if (wm < 1) { b = wmb; floors(wmm, wmc, wmm, "Open MPI") }
                printf "\n"
            } else printf "(b) %s %-14s vs Open MPI: no Open MPI figure at >= 64 KiB: MISS\n", rt, k
        }
    }
    for (ri = 1; ri <= nr; ri++) {
        split(rl[ri], rr, ":"); rt = rr[1]
        for (ki = 1; ki <= nk; ki++) {
            k = ks[ki]; w = -1; ws = -1
            for (j = 1; j <= nb[rt, k]; j++) {
                b = bl[rt, k, j]; ci = best_coll("interleaved"); chm = best_coll("host-major")
                if (ci <= 0 || chm <= 0) continue
                r = ci / chm
                if (b >= 65536) { if (w < 0 || r > w) { w = r; wb = b; wvi = bestv("interleaved"); wvh = bestv("host-major") } }
                else if (ws < 0 || r > ws) { ws = r; wsb = b }
            }
            if (w < 0) { printf "(c) %s %s: no figures: MISS\n", rt, k; continue }
            printf "(c) %s %-14s interleaved / host-major (coll), >= 64 KiB: worst %.2f at %s, bound 1.1: %s", rt, k, w, hb(wb), pf(w <= 1.1)
            if (w > 1.1) { b = wb; printf "; the runs there: interleaved %s, host-major %s (%s)", range(wvi), range(wvh),
                           apart(wvi, wvh) ? "apart" : "they overlap: within the run-to-run spread"; cpus(wvi) }
            if (ws >= 0) printf " (below 64 KiB, not judged: worst %.2f at %s)", ws, hb(wsb)
            printf "\n"
        }
    }
    for (ri = 1; ri <= nr; ri++) {
        split(rl[ri], rr, ":"); rt = rr[1]
        for (ki = 1; ki <= nk; ki++) {
            k = ks[ki]; if (!nb[rt, k]) continue
            b = bl[rt, k, 1]; hi = val(k, "hier-interleaved"); f = min2(val(k, "auto-interleaved"), val(k, "ring-interleaved"))
            if (hi <= 0 || f <= 0) { printf "(d) %s %s: no figures: MISS\n", rt, k; continue }
            fn = f == val(k, "auto-interleaved") ? "AUTO" : (k == "broadcast" ? "chain" : "ring")
            printf "(d) %s %-14s at %s: coll_hier %.1f us / best flat (%s) %.1f us = %.2f, bound 1.2: %s", rt, k, hb(b), hi, fn, f, hi / f, pf(hi / f <= 1.2)
            fv = fn == "AUTO" ? "auto-interleaved" : "ring-interleaved"
            if (hi / f > 1.2) printf "; the runs: coll_hier %s, flat %s (%s)", range("hier-interleaved"), range(fv),
                                     apart("hier-interleaved", fv) ? "apart" : "they overlap: within the run-to-run spread"
            printf "\n"
        }
    }
}' "$out/rows"
[ -n "$BENCH_HOSTS_KEEP" ] && cp "$out/rows" "$BENCH_HOSTS_KEEP"
echo
echo "bench-hosts: $(( $(date +%s) - start )) s"
